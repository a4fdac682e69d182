/* Matmul for x86-64 CPUs with AVX-512 VNNI (and BW and VL, so the 256-bit
 * vpdpbusd exists), compiled with those flags only here: the int8 and
 * float paths of x86_matmul_tiles.h and x86_matmul_loops.h, each unsigned-
 * by-signed byte dot one instruction instead of two, without int16
 * intermediates; a lone token's chunks in 512-bit registers; 512-bit float
 * tiles. */
#include <immintrin.h>
#include <stdbool.h>
#include <stdint.h>

/* Q8_0 levels go in as unsigned bytes (level + 128): VNNI multiplies them
 * without saturating. */
#define Q8_0_UNSIGNED 1
/* Token groups take two rows at once (x86_matmul_pairs.h). */
#define ROW_PAIRS 1

/* Unsigned bytes times signed bytes, summed in fours into 8 int32 lanes. */
static inline __m256i dot_u8_i8(__m256i u, __m256i s) { return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s); }

static inline __m256i dot_u8_i8_acc(__m256i acc, __m256i u, __m256i s) { return _mm256_dpbusd_epi32(acc, u, s); }

/* One vpdpbusd each whatever the levels' bits, in two chains (half the latency). */
static inline __attribute__((always_inline)) __m256i dots_u8_i8_acc(__m256i acc, const __m256i u[], const __m256i *s, const int n,
                                                                    const int bits) {
    (void)bits;
    __m256i part[2] = {acc, _mm256_setzero_si256()};
    for (int m = 0; m < n; m++) part[m & 1] = _mm256_dpbusd_epi32(part[m & 1], u[m], _mm256_loadu_si256(s + m));
    return _mm256_add_epi32(part[0], part[1]);
}

#include "kernels/x86_matmul_tiles.h"

/* The eight scales of a whole Q8_0 chunk (word 17 j: blocks 0-3 in its
 * first 128 bytes, 4-7 in the next). */
static inline __attribute__((always_inline)) __m256 q8_0_chunk_scales(const uint8_t *chunk) {
    static const uint16_t first[32] __attribute__((aligned(64))) = {0, 17, 34, 51};
    static const uint16_t second[32] __attribute__((aligned(64))) = {[4] = 4, [5] = 21, [6] = 38, [7] = 55};
    const __m512i a = _mm512_maskz_permutex2var_epi16(0x0F, _mm512_loadu_si512(chunk), _mm512_load_si512(first), _mm512_loadu_si512(chunk + 64));
    const __m512i b =
        _mm512_maskz_permutex2var_epi16(0xF0, _mm512_loadu_si512(chunk + 128), _mm512_load_si512(second), _mm512_loadu_si512(chunk + 192));
    return _mm256_cvtph_ps(_mm512_castsi512_si128(_mm512_or_si512(a, b)));
}

/* The scales (each block's first half) of blocks [b, b + nv) of a row
 * (nv <= 8; zero past nv). */
static inline __attribute__((always_inline)) __m256 block_scales8(sprout_type type, const uint8_t *row, int64_t b, int nv) {
    const size_t block_bytes = layout_of(type).bytes;
    if ((type == SPROUT_TYPE_Q4_0 || type == SPROUT_TYPE_IQ4_NL) && nv == 8) {
        /* a whole Q4_0 (IQ4_NL) chunk's scales lie in its first 128 bytes, at words
         * 9j: one two-source word permute of two loads gathers them */
        static const uint16_t at_9j[32] __attribute__((aligned(64))) = {0, 9, 18, 27, 36, 45, 54, 63};
        const uint8_t *chunk = row + (size_t)b * block_bytes;
        const __m512i words = _mm512_permutex2var_epi16(_mm512_loadu_si512(chunk), _mm512_load_si512(at_9j), _mm512_loadu_si512(chunk + 64));
        return _mm256_cvtph_ps(_mm512_castsi512_si128(words));
    }
    if (type == SPROUT_TYPE_Q8_0 && nv == 8) return q8_0_chunk_scales(row + (size_t)b * block_bytes);
    return gathered_block_scales8(type, row, b, nv);
}

/* --- one token: whole chunks in 512-bit registers ------------------------------------------- */

/* v's two 256-bit halves added: lane j, lanes j and j + 8 of v (the
 * one-token lane kernels' partial sums of dwords m and m + 1, or of a
 * block's two halves). */
static inline __m256i add_halves(__m512i v) { return _mm256_add_epi32(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1)); }

/* A whole chunk of eight Q4_0 (IQ4_NL) blocks' packed levels, transposed:
 * packed[h] holds dword 2 h of each block in lanes 0-7 (lane j, block j)
 * and dword 2 h + 1 in lanes 8-15, so that the transposed activations of
 * both are one load. Block j's dword m is at byte 18 j + 2 + 4 m, always
 * on a word boundary, so one two-source word permute of two 64-byte
 * windows, one holding blocks 0-3's bytes and one 4-7's, gathers each
 * half (the windows at bytes 2 and 74 for dwords 0-1, 10 and 80 for
 * dwords 2-3; the last ends at byte 143, the chunk's last). Dword
 * permutes, which need two windows per block parity and four permutes and
 * two ors a chunk, took a third more time (bench/RESULTS.md). */
static inline __attribute__((always_inline)) void packed_chunk_gather(const uint8_t *chunk, __m512i packed[2]) {
    /* word w of lane j + 8 k in permute h (dword 2 h + k of block j), from
     * window A_h (words 0-31, blocks 0-3) or B_h (32-63, blocks 4-7) */
#define WORD(j, k, h) ((j) < 4 ? 9 * (j) + 2 * (k) : 32 + 9 * ((j) - 4) + (h) + 2 * (k))
#define LANE(j, k, h) WORD(j, k, h), WORD(j, k, h) + 1
#define LANES(k, h) LANE(0, k, h), LANE(1, k, h), LANE(2, k, h), LANE(3, k, h), LANE(4, k, h), LANE(5, k, h), LANE(6, k, h), LANE(7, k, h)
    static const uint16_t gather[2][32] __attribute__((aligned(64))) = {{LANES(0, 0), LANES(1, 0)}, {LANES(0, 1), LANES(1, 1)}};
#undef LANES
#undef LANE
#undef WORD
    packed[0] = _mm512_permutex2var_epi16(_mm512_loadu_si512(chunk + 2), _mm512_load_si512(gather[0]), _mm512_loadu_si512(chunk + 74));
    packed[1] = _mm512_permutex2var_epi16(_mm512_loadu_si512(chunk + 10), _mm512_load_si512(gather[1]), _mm512_loadu_si512(chunk + 80));
}

/* One token against a whole chunk of eight Q4_0 (IQ4_NL) blocks, in 512-bit
 * registers: the exact block sums, as accumulate_blocks8 forms them
 * (lane j, block j, the offset's sum first), in fewer instructions than
 * its 256-bit transposes. */
static inline __attribute__((always_inline)) __m256i packed_chunk_sums(sprout_type type, const uint8_t *chunk, const act_chunk *c) {
    __m512i packed[2];
    packed_chunk_gather(chunk, packed);
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    __m512i part[2];
    for (int h = 0; h < 2; h++) {
        /* dwords m, m + 1 (m = 2h): levels 4m.. in the low nibbles, 16 + 4m.. in the high ones */
        __m512i lo = _mm512_and_si512(packed[h], low4), hi = _mm512_and_si512(_mm512_srli_epi16(packed[h], 4), low4);
        if (type == SPROUT_TYPE_IQ4_NL) {
            const __m512i levels = _mm512_broadcast_i32x4(_mm256_castsi256_si128(iq4_levels()));
            lo = _mm512_shuffle_epi8(levels, lo), hi = _mm512_shuffle_epi8(levels, hi);
        }
        const __m512i start = h == 0 ? _mm512_zextsi256_si512(_mm256_loadu_si256((const __m256i *)c->sum)) : _mm512_setzero_si512();
        part[h] = _mm512_dpbusd_epi32(start, lo, _mm512_load_si512(c->qs_t + 2 * h));
        part[h] = _mm512_dpbusd_epi32(part[h], hi, _mm512_load_si512(c->qs_t + 4 + 2 * h));
    }
    const __m512i both = _mm512_add_epi32(part[0], part[1]);
    return add_halves(both);
}

/* One token against a whole chunk of eight Q8_0 blocks in 512-bit
 * registers: block j's levels (made unsigned) beside block j + 4's meet
 * the paired activations (ACT_PAIRED) in one vpdpbusd, and shuffles
 * and adds within 128-bit lanes gather each block's eight partial sums
 * into lane j: the exact sums accumulate_blocks8 forms (the offset's sum
 * added last), in about 50 instructions a chunk instead of about 80
 * (its horizontal adds and a scale gathered a word at a time). The scales
 * come from word permutes of the chunk: block j's is word 17 j. */
static inline __attribute__((always_inline)) __m256i q8_0_chunk_sums(const uint8_t *chunk, const act_chunk *c) {
    const __m512i unsigned_bit = _mm512_set1_epi8((char)0x80);
    __m512i s[4];
    for (int j = 0; j < 4; j++) {
        const __m256i lo = _mm256_loadu_si256((const __m256i *)(chunk + 34 * j + 2));
        const __m512i w = _mm512_inserti64x4(_mm512_castsi256_si512(lo), _mm256_loadu_si256((const __m256i *)(chunk + 34 * (j + 4) + 2)), 1);
        s[j] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_xor_si512(w, unsigned_bit), _mm512_loadu_si512(c->qs_t + 2 * j));
    }
    /* per 128-bit lane q: s[0]'s four partial sums added in pairs beside s[1]'s, then all four s[j] summed in lane j */
    const __m512i u01 = _mm512_add_epi32(_mm512_unpacklo_epi32(s[0], s[1]), _mm512_unpackhi_epi32(s[0], s[1]));
    const __m512i u23 = _mm512_add_epi32(_mm512_unpacklo_epi32(s[2], s[3]), _mm512_unpackhi_epi32(s[2], s[3]));
    const __m512i v = _mm512_add_epi32(_mm512_unpacklo_epi64(u01, u23), _mm512_unpackhi_epi64(u01, u23));
    /* 128-bit lanes 0 and 1 hold blocks 0-3's halves, 2 and 3 blocks 4-7's */
    const __m512i w = _mm512_add_epi32(v, _mm512_shuffle_i32x4(v, v, _MM_SHUFFLE(2, 3, 0, 1)));
    const __m256i sums = _mm512_castsi512_si256(_mm512_shuffle_i32x4(w, w, _MM_SHUFFLE(2, 0, 2, 0)));
    return _mm256_add_epi32(sums, _mm256_loadu_si256((const __m256i *)c->sum));
}

/* One token against a whole chunk of Q4_0 (IQ4_NL) or Q8_0 (paired
 * activations) blocks: true where it took the chunk. */
static inline __attribute__((always_inline)) bool one_token_chunk8(sprout_type type, const uint8_t *row, const act_tile *at, int64_t t0,
                                                                   int64_t b, __m256 *acc) {
    const bool packed = type == SPROUT_TYPE_Q4_0 || type == SPROUT_TYPE_IQ4_NL, paired_q8_0 = one_token_order(type) == ACT_PAIRED;
    if (!(packed || paired_q8_0) || at->nb - b < 8) return false;
    const uint8_t *chunk = row + (size_t)b * layout_of(type).bytes;
    const act_chunk *ac = act_chunk_of(at, t0, b);
    const __m256i sums = packed ? packed_chunk_sums(type, chunk, ac) : q8_0_chunk_sums(chunk, ac);
    const __m256 scales = packed ? block_scales8(type, row, b, 8) : q8_0_chunk_scales(chunk);
    *acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums), _mm256_mul_ps(scales, _mm256_loadu_ps(ac->d)), *acc);
    return true;
}

/* Permute h of a Q4_K (Q5_K) super-block's 128 bytes of packed levels:
 * lane j takes dword 2 h of sub-block j's run (from qs dword 8 (j / 2)
 * on), lane j + 8 dword 2 h + 1 (affine_k_lane_parts, q4_K_levels_gather). */
#define PAIRS(m) (m), (m), 8 + (m), 8 + (m), 16 + (m), 16 + (m), 24 + (m), 24 + (m)
static const int32_t affine_k_gather[4][16] __attribute__((aligned(64))) = {
    {PAIRS(0), PAIRS(1)}, {PAIRS(2), PAIRS(3)}, {PAIRS(4), PAIRS(5)}, {PAIRS(6), PAIRS(7)}};
#undef PAIRS

/* One token against a Q4_K (Q5_K) super-block in 512-bit registers, its
 * sub-blocks in lanes against the transposed activations, as
 * packed_chunk_sums does Q4_0: dword permutes gather dword m of every
 * sub-block's levels into lane j (lanes 8-15: dword m + 1), sub-block j's
 * being nibble j % 2 of qs dword 8 (j / 2) + m, which a per-lane shift
 * takes to the low nibble; Q5_K's fifth bit of byte k is bit j of qh
 * byte k, a dword rotate by 4 - j (modulo 32, as 32 is a multiple of 8)
 * takes it to bit 4. Sub-block j's exact sum is lane j plus lane j + 8
 * (add_halves; affine_k_row_pair adds two rows' at once), without
 * horizontal adds. */
static inline __attribute__((always_inline)) __m512i affine_k_lane_parts(const uint8_t *qs, const uint8_t *qh, const act_chunk *c) {
    const __m512i nibble_shift = _mm512_set_epi32(4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0);
    const __m512i fifth_bit_turn = _mm512_set_epi32(29, 30, 31, 0, 1, 2, 3, 4, 29, 30, 31, 0, 1, 2, 3, 4);
    const __m512i low4 = _mm512_set1_epi8(0x0F), bit4 = _mm512_set1_epi8(0x10);
    const __m512i nibble_mask = _mm512_sllv_epi32(low4, nibble_shift); /* each lane's nibbles where they lie */
    const __m512i lo = _mm512_loadu_si512(qs), hi = _mm512_loadu_si512(qs + 64);
    const __m512i hb = qh ? _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)qh)) : _mm512_setzero_si512();
    __m512i part[2] = {_mm512_setzero_si512(), _mm512_setzero_si512()};
    for (int h = 0; h < 4; h++) {
        const __m512i dwords = _mm512_permutex2var_epi32(lo, _mm512_load_si512(affine_k_gather[h]), hi);
        /* Q4_K: the high nibbles stay in place, sixteen times their level
         * (at most 240 by 127, four to a dword: no overflow), and their
         * exact sums come down by a shift after; Q5_K's fifth bit would not
         * fit above them */
        __m512i levels = qh ? _mm512_and_si512(_mm512_srlv_epi32(dwords, nibble_shift), low4) : _mm512_and_si512(dwords, nibble_mask);
        if (qh) { /* lanes 0-7: qh dword 2h, 8-15: 2h + 1; levels | (turned & bit4) */
            const __m512i bits = _mm512_permutexvar_epi32(_mm512_set_epi32(2 * h + 1, 2 * h + 1, 2 * h + 1, 2 * h + 1, 2 * h + 1, 2 * h + 1,
                                                                           2 * h + 1, 2 * h + 1, 2 * h, 2 * h, 2 * h, 2 * h, 2 * h, 2 * h, 2 * h, 2 * h),
                                                          hb);
            levels = _mm512_ternarylogic_epi32(levels, _mm512_rolv_epi32(bits, fifth_bit_turn), bit4, 0xF8);
        }
        part[h & 1] = _mm512_dpbusd_epi32(part[h & 1], levels, _mm512_load_si512(c->qs_t + 2 * h));
    }
    const __m512i both = _mm512_add_epi32(part[0], part[1]);
    return qh ? both : _mm512_srav_epi32(both, nibble_shift);
}

/* A Q4_K super-block's levels in affine_k_lane_parts' lanes, each a level
 * itself (levels[h]: dword 2 h of sub-block j in lane j, 2 h + 1 in lane
 * j + 8), for the row pairs (x86_matmul_pairs.h). */
static inline __attribute__((always_inline)) void q4_K_levels_gather(const uint8_t *qs, __m512i levels[4]) {
    const __m512i nibble_shift = _mm512_set_epi32(4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0), low4 = _mm512_set1_epi8(0x0F);
    const __m512i lo = _mm512_loadu_si512(qs), hi = _mm512_loadu_si512(qs + 64);
    for (int h = 0; h < 4; h++)
        levels[h] = _mm512_and_si512(_mm512_srlv_epi32(_mm512_permutex2var_epi32(lo, _mm512_load_si512(affine_k_gather[h]), hi), nibble_shift), low4);
}

/* One token against a Q4_K (Q5_K) super-block, its lanes summed as
 * affine_k_chunk's scales (dsc) and mins (dm) want them. */
static inline __attribute__((always_inline)) bool one_token_affine_k(const uint8_t *qs, const uint8_t *qh, const act_chunk *c, __m256 dsc,
                                                                     __m256 dm, __m256 *acc, __m256 *macc) {
    const __m256i sums = add_halves(affine_k_lane_parts(qs, qh, c));
    *acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums), _mm256_mul_ps(dsc, _mm256_loadu_ps(c->d)), *acc);
    *macc = _mm256_fmadd_ps(dm, _mm256_loadu_ps(c->dsum), *macc);
    return true;
}

/* One token against super-block b of two Q4_K (Q5_K) rows, each row's
 * lanes affine_k_chunk's for G == 1 with the same float operations, the
 * two rows in the halves of 512-bit vectors: a row's scales and mins, its
 * d and dmin, the products and accumulators take half the instructions
 * they took one row at a time, and were as many as the lane sums'. */
static inline __attribute__((always_inline)) void affine_k_row_pair(sprout_type type, const uint8_t *row_a, const uint8_t *row_b,
                                                                    const act_tile *at, int64_t b, __m512 *acc, __m512 *macc) {
    const bool q5 = type == SPROUT_TYPE_Q5_K;
    const size_t block_bytes = q5 ? sizeof(sp_block_q5_K) : sizeof(sp_block_q4_K);
    decode_prefetch(row_a + (size_t)b * block_bytes, block_bytes);
    decode_prefetch(row_b + (size_t)b * block_bytes, block_bytes);
    const sp_affine_k_block ka = sp_affine_k_block_at(q5, row_a, b), kb = sp_affine_k_block_at(q5, row_b, b);
    const act_chunk *c = act_chunk_of(at, 0, 8 * b);
    const __m512i parts_a = affine_k_lane_parts(ka.qs, ka.qh, c), parts_b = affine_k_lane_parts(kb.qs, kb.qh, c);
    /* [a's halves added | b's] */
    const __m512i sums = _mm512_add_epi32(_mm512_shuffle_i64x2(parts_a, parts_b, _MM_SHUFFLE(1, 0, 1, 0)),
                                          _mm512_shuffle_i64x2(parts_a, parts_b, _MM_SHUFFLE(3, 2, 3, 2)));
    const __m256i sm = k_scales_mins2(_mm256_setr_m128i(_mm_loadu_si128((const __m128i *)ka.scales), _mm_loadu_si128((const __m128i *)kb.scales)));
    /* [a's scales, b's scales, a's mins, b's mins] */
    const __m256i by_kind = _mm256_permute4x64_epi64(sm, _MM_SHUFFLE(3, 1, 2, 0));
    const __m512 d_dmin = _mm512_cvtph_ps(_mm256_setr_m128i(_mm_set1_epi32((int)((uint32_t)ka.d | (uint32_t)ka.dmin << 16)),
                                                            _mm_set1_epi32((int)((uint32_t)kb.d | (uint32_t)kb.dmin << 16))));
    const __m512 dsc = _mm512_mul_ps(_mm512_moveldup_ps(d_dmin), _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm256_castsi256_si128(by_kind))));
    const __m512 dm = _mm512_mul_ps(_mm512_movehdup_ps(d_dmin), _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm256_extracti128_si256(by_kind, 1))));
    const __m512 ad = _mm512_castpd_ps(_mm512_broadcast_f64x4(_mm256_castps_pd(_mm256_loadu_ps(c->d))));
    const __m512 dsum = _mm512_castpd_ps(_mm512_broadcast_f64x4(_mm256_castps_pd(_mm256_loadu_ps(c->dsum))));
    *acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums), _mm512_mul_ps(dsc, ad), *acc);
    *macc = _mm512_fmadd_ps(dm, dsum, *macc);
}

/* One token against R (even) Q4_K or Q5_K rows, two at a time
 * (affine_k_row_pair): true where it took them. */
static inline __attribute__((always_inline)) bool rows_in_pairs(sprout_type type, const uint8_t *const rows[], const int R, const act_tile *at,
                                                                float *out) {
    if (!((type == SPROUT_TYPE_Q4_K || type == SPROUT_TYPE_Q5_K) && R % 2 == 0)) return false;
    __m512 acc2[SP_DECODE_STREAMS / 2], macc2[SP_DECODE_STREAMS / 2];
    UNROLL_GROUP
    for (int p = 0; p < R / 2; p++) acc2[p] = macc2[p] = _mm512_setzero_ps();
    for (int64_t c = 0; c < at->nb8 / 8; c++) {
        UNROLL_GROUP
        for (int p = 0; p < R / 2; p++) affine_k_row_pair(type, rows[2 * p], rows[2 * p + 1], at, c, acc2 + p, macc2 + p);
    }
    UNROLL_GROUP
    for (int p = 0; p < R / 2; p++)
        for (int h = 0; h < 2; h++)
            out[2 * p + h] = row_output(type, half512_ps(acc2[p], h), half512_ps(macc2[p], h));
    return true;
}

/* One token against a Q6_K super-block in 512-bit registers, the levels in
 * element order: ql's 64 bytes of a 128-element half hold elements 0-63 in
 * their low nibbles and 64-127 in their high ones, and qh (its 32 bytes in
 * both 256-bit halves) gives their top two bits by a shift per half, so
 * nothing is permuted before the dot products (the activations come in
 * element order, ACT_IN_ORDER). Each dword of a dot product sums four
 * elements, so the lanes are summed after: the exact sums fit 16 bits two
 * levels deep (four products of levels under 64 by activations of at
 * most 127 in magnitude, then pairs of those, less the offset), so signed
 * packs and vpmaddwd do the adds, the second vpmaddwd taking each group of
 * 16's scale; two dword permutes pair the groups of each block. The exact
 * integers of split_k_chunk, lane j block j. */
static inline __attribute__((always_inline)) __m256i q6_K_in_order_sums(const sp_block_q6_K *w, const act_chunk *c) {
    const __m512i low4 = _mm512_set1_epi8(0x0F), bits45 = _mm512_set1_epi8(0x30), ones = _mm512_set1_epi16(1);
    /* bits 0-1 (2-3) of qh to bits 4-5 for elements 0-31 (32-63) of a half; bits 4-5 (6-7) for 64-95 (96-127) */
    const __m512i low_turn = _mm512_set_epi64(2, 2, 2, 2, 4, 4, 4, 4), high_turn = _mm512_set_epi64(2, 2, 2, 2, 0, 0, 0, 0);
    __m512i pairs[2];
    for (int h = 0; h < 2; h++) {
        const __m512i ql = _mm512_loadu_si512(w->ql + 64 * h);
        const __m512i qh = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(w->qh + 32 * h)));
        const __m512i low_top = _mm512_and_si512(_mm512_sllv_epi64(qh, low_turn), bits45);
        const __m512i high_top = _mm512_and_si512(_mm512_srlv_epi64(qh, high_turn), bits45);
        const __m512i low = _mm512_ternarylogic_epi32(ql, low4, low_top, 0xEA); /* (ql & low4) | low_top */
        const __m512i high = _mm512_ternarylogic_epi32(_mm512_srli_epi16(ql, 4), low4, high_top, 0xEA);
        const __m512i dot_low = _mm512_dpbusd_epi32(_mm512_setzero_si512(), low, _mm512_load_si512(c->qs_t + 4 * h));
        const __m512i dot_high = _mm512_dpbusd_epi32(_mm512_setzero_si512(), high, _mm512_load_si512(c->qs_t + 4 * h + 2));
        /* 128-bit lane m: pairs of group m of each, the offset's share taken off */
        pairs[h] = _mm512_add_epi32(_mm512_madd_epi16(_mm512_packs_epi32(dot_low, dot_high), ones), _mm512_load_si512(c->sum8 + 16 * h));
    }
    /* lane m, dword 4m + k: group 4k + m, times its scale: scale 4k + m in
     * the top byte of words 2k and 2k + 1 of lane m, shifted down with its sign */
#define SCALE_WORDS(m) -1, (m), -1, (m), -1, 4 + (m), -1, 4 + (m), -1, 8 + (m), -1, 8 + (m), -1, 12 + (m), -1, 12 + (m)
    static const int8_t scale_bytes[64] __attribute__((aligned(64))) = {SCALE_WORDS(0), SCALE_WORDS(1), SCALE_WORDS(2), SCALE_WORDS(3)};
#undef SCALE_WORDS
    const __m512i scale_words =
        _mm512_srai_epi16(_mm512_shuffle_epi8(_mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)w->scales)), _mm512_load_si512(scale_bytes)), 8);
    const __m512i groups = _mm512_madd_epi16(_mm512_packs_epi32(pairs[0], pairs[1]), scale_words);
    /* block j: groups 2j and 2j + 1 */
    const __m512i first = _mm512_permutexvar_epi32(_mm512_set_epi32(0, 0, 0, 0, 0, 0, 0, 0, 11, 3, 10, 2, 9, 1, 8, 0), groups);
    const __m512i second = _mm512_permutexvar_epi32(_mm512_set_epi32(0, 0, 0, 0, 0, 0, 0, 0, 15, 7, 14, 6, 13, 5, 12, 4), groups);
    return _mm256_add_epi32(_mm512_castsi512_si256(first), _mm512_castsi512_si256(second));
}

/* One token against a Q6_K super-block (q6_K_in_order_sums). */
static inline __attribute__((always_inline)) bool one_token_q6_K(const sp_block_q6_K *w, const act_chunk *c, __m256 *acc) {
    const __m256i sums = q6_K_in_order_sums(w, c);
    *acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums), _mm256_mul_ps(_mm256_set1_ps(_cvtsh_ss(w->d)), _mm256_loadu_ps(c->d)), *acc);
    return true;
}

/* --- float rows: 512-bit tiles -------------------------------------------------------------- */

/* Sixteen 16-bit values of a format at p, widened (exactly). */
static inline __m512 widen16(float_format f, const void *p) {
    const __m256i h = _mm256_loadu_si256((const __m256i *)p);
    return f == FLOAT_F16 ? _mm512_cvtph_ps(h) : _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

/* AVX-512: one 16-lane accumulator per (row, token) pair; 32 registers
 * hold a tile of 4 rows by 6 tokens. One token takes such tiles too: a
 * lone row's one chain of FMAs, 4 cycles each, bounded it below the
 * memory's pace, and four rows are four streams (as AVX2's tiles are),
 * which one token reads faster than one. */
#define FLOAT_TILE_ROWS 4
#define FLOAT_TILE_TOKENS 6
static inline __attribute__((always_inline)) void float_tile(float_format f, const void *const rows[], const int R,
                                                             const float *const xs[], const int T, int64_t n, ptrdiff_t ahead, bool into_l1,
                                                             float *out) {
    __m512 acc[FLOAT_TILE_ROWS][FLOAT_TILE_TOKENS];
    for (int r = 0; r < R; r++)
        for (int t = 0; t < T; t++) acc[r][t] = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        prefetch_ahead(f, rows, R, ahead, into_l1, i);
        __m512 wv[FLOAT_TILE_ROWS];
        for (int r = 0; r < R; r++)
            wv[r] = f == FLOAT_F32 ? _mm512_loadu_ps((const float *)rows[r] + i) : widen16(f, (const uint16_t *)rows[r] + i);
        for (int t = 0; t < T; t++) {
            const __m512 xv = _mm512_loadu_ps(xs[t] + i);
            for (int r = 0; r < R; r++) acc[r][t] = _mm512_fmadd_ps(wv[r], xv, acc[r][t]);
        }
    }
    for (int r = 0; r < R; r++)
        for (int t = 0; t < T; t++) {
            out[r * T + t] = float_row_tail(f, rows[r], xs[t], i, n, hsum512(acc[r][t]));
        }
}

/* The tile shapes used: four rows by up to six tokens, and single rows at
 * the edges and for one token. */
#define FLOAT_TILE_SHAPES                                                                  \
    SHAPE(4, 1) SHAPE(4, 2) SHAPE(4, 3) SHAPE(4, 4) SHAPE(4, 5) SHAPE(4, 6)                \
    SHAPE(1, 1) SHAPE(1, 2) SHAPE(1, 3) SHAPE(1, 4) SHAPE(1, 5) SHAPE(1, 6)

#include "kernels/x86_matmul_loops.h"

void sp_matmul_avx512vnni(const sp_weight *w, const float *x, int64_t x_stride, const void *xq, int64_t n_tokens, float *y, int64_t y_stride,
                          int64_t o0, int64_t o1, float *scratch) {
    matmul_x86(w, x, x_stride, xq, n_tokens, y, y_stride, o0, o1, scratch, false);
}

void sp_matmul_avx512vnni_halves(const sp_weight *w, const float *x, int64_t x_stride, const void *xq, int64_t n_tokens, float *y,
                                 int64_t y_stride, int64_t o0, int64_t o1, float *scratch) {
    matmul_x86(w, x, x_stride, xq, n_tokens, y, y_stride, o0, o1, scratch, true);
}
