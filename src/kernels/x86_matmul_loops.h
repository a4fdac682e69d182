/* The loops of the x86 int8 and float matmuls, over chunks of a row, rows,
 * token groups and tiles (x86_matmul_tiles.h describes the whole), shared
 * by matmul_avx2.c and matmul_avx512vnni.c. Included last by each, after
 * what its level defines (besides x86_matmul_tiles.h's three):
 *   block_scales8(type, row, b, nv)   blocks [b, b + nv)'s scales;
 *   one_token_chunk8, one_token_affine_k, one_token_q6_K, rows_in_pairs:
 *       a lone token's faster path for a chunk (a Q4_0, IQ4_NL or Q8_0
 *       chunk, a Q4_K or Q5_K super-block, a Q6_K one) or for rows side by
 *       side, each true where it took the work (never, at AVX2);
 *   float_tile, FLOAT_TILE_ROWS, FLOAT_TILE_TOKENS, FLOAT_TILE_SHAPES:
 *       the float rows' register tile and the shapes it is used in
 *       (among them SP_DECODE_STREAMS rows by one token, and one row by
 *       each token count, for one token's rows side by side);
 *   packed_chunk_gather, q4_K_levels_gather (ROW_PAIRS levels): a whole
 *       Q4_0 or IQ4_NL chunk's packed levels, a Q4_K super-block's levels,
 *       transposed, for the row pairs too. */
#ifndef SPROUT_KERNELS_X86_MATMUL_LOOPS_H
#define SPROUT_KERNELS_X86_MATMUL_LOOPS_H

#include "kernels/x86_matmul_tiles.h"

/* Whether the level pairs rows in 512-bit registers (x86_matmul_pairs.h). */
#ifndef ROW_PAIRS
#define ROW_PAIRS 0
#endif

/* Blocks [b, b + nv) of a row (nv <= 8), levels as unsigned bytes
 * transposed into v[0..8) (zero past nv; Q8_0 may leave them as they are),
 * their eight scales returned and (Q4_1, Q5_1) their mins in *mw.
 * Shuffles are the scarce resource here: Q4_0's packed halves are
 * transposed before the nibbles are split, a 4x4 transpose per 128-bit
 * lane instead of an 8x8 one. */
static inline __attribute__((always_inline)) __m256 load_blocks8(sprout_type type, const uint8_t *row, int64_t b, int nv, bool transpose,
                                                                 __m256i v[8], __m256 *mw) {
    const block_layout L = layout_of(type);
    const size_t block_bytes = L.bytes;
    uint16_t m16[8] = {0};
    uint32_t qh[8] = {0};
    for (int j = 0; j < 8; j++)
        if (j < nv) {
            const uint8_t *blk = row + (size_t)(b + j) * block_bytes;
            if (L.m >= 0) memcpy(&m16[j], blk + L.m, sizeof m16[j]);
            if (L.qh >= 0) memcpy(&qh[j], blk + L.qh, sizeof qh[j]);
        }
    if (L.m >= 0) *mw = gather_halves8(m16);
    if (type != SPROUT_TYPE_Q8_0 && !transpose) {
        for (int j = 0; j < 8; j++) {
            const uint8_t *blk = row + (size_t)(b + j) * block_bytes;
            v[j] = j < nv ? unpack_packed_levels(blk + L.qs, L.qh >= 0 ? blk + L.qh : NULL) : _mm256_setzero_si256();
        }
    } else if (type != SPROUT_TYPE_Q8_0) {
        /* a[j] = [packed block j | packed block j + 4] */
        __m256i a[4];
        for (int j = 0; j < 4; j++) {
            const __m128i lo = j < nv ? _mm_loadu_si128((const __m128i *)(row + (size_t)(b + j) * block_bytes + L.qs)) : _mm_setzero_si128();
            const __m128i hi =
                j + 4 < nv ? _mm_loadu_si128((const __m128i *)(row + (size_t)(b + j + 4) * block_bytes + L.qs)) : _mm_setzero_si128();
            a[j] = _mm256_set_m128i(hi, lo);
        }
        const __m256i t0 = _mm256_unpacklo_epi32(a[0], a[1]), t1 = _mm256_unpackhi_epi32(a[0], a[1]);
        const __m256i t2 = _mm256_unpacklo_epi32(a[2], a[3]), t3 = _mm256_unpackhi_epi32(a[2], a[3]);
        const __m256i p[4] = {_mm256_unpacklo_epi64(t0, t2), _mm256_unpackhi_epi64(t0, t2), _mm256_unpacklo_epi64(t1, t3),
                              _mm256_unpackhi_epi64(t1, t3)};
        const __m256i low4 = _mm256_set1_epi8(0x0F);
        for (int m = 0; m < 4; m++) { /* packed dword m: elements 4m.. in its low nibbles, 16 + 4m.. in its high ones */
            v[m] = _mm256_and_si256(p[m], low4);
            v[m + 4] = _mm256_and_si256(_mm256_srli_epi16(p[m], 4), low4);
        }
        if (nibble_table(type)) /* the nibbles index the format's levels */
            for (int m = 0; m < 8; m++) v[m] = _mm256_shuffle_epi8(byte_levels_of(nibble_table(type)), v[m]);
        if (L.qh >= 0) {
            /* vector m holds elements 4m..4m+3 of each block (in both halves):
             * their fifth bits are bits 4m..4m+3 of the block's qh, spread
             * one to a byte by a multiply whose partial products never meet */
            const __m256i bits = _mm256_loadu_si256((const __m256i *)qh);
            for (int m = 0; m < 8; m++) {
                const __m256i nibble = _mm256_and_si256(_mm256_srli_epi32(bits, 4 * m), _mm256_set1_epi32(0xF));
                const __m256i spread = _mm256_and_si256(_mm256_mullo_epi32(nibble, _mm256_set1_epi32(0x00204081)), _mm256_set1_epi32(0x01010101));
                v[m] = _mm256_or_si256(v[m], _mm256_slli_epi32(spread, 4));
            }
        }
    } else {
        __m256i w[8];
        for (int j = 0; j < 8; j++) {
            w[j] = j < nv ? _mm256_loadu_si256((const __m256i *)(row + (size_t)(b + j) * block_bytes + L.qs)) : _mm256_setzero_si256();
            if (Q8_0_UNSIGNED && j < nv) w[j] = _mm256_xor_si256(w[j], _mm256_set1_epi8((char)0x80));
        }
        if (transpose) transpose8x8_epi32(w, v);
        else memcpy(v, w, sizeof w);
    }
    return block_scales8(type, row, b, nv);
}

/* acc += the eight blocks' dots with token t, each times its two scales.
 * The block sums come from transposed levels, or (transposed false) from
 * whole blocks and horizontal adds: fewer shuffles for a single token. The
 * sums are exact integers either way, so the result is the same. */
static inline __attribute__((always_inline)) __m256 accumulate_blocks8(sprout_type type, const int G, const __m256i v[8], __m256 dw, __m256 mw,
                                                                       const act_tile *at, int64_t t, int64_t b, bool transposed,
                                                                       __m256 acc, __m256 *macc) {
    const act_chunk *c = act_chunk_of(at, t, b);
    const __m256i *y = c->qs_t;
    const bool byte_levels = type == SPROUT_TYPE_Q8_0 || nibble_table(type); /* 8-bit: signed without VNNI */
    const bool has_min = layout_of(type).m >= 0, has_offset = !has_min && (!byte_levels || Q8_0_UNSIGNED);
    /* with an offset, c->sum is minus the offset times the activations' sums: the correction starts the sum */
    const __m256i asum = _mm256_loadu_si256((const __m256i *)c->sum);
    __m256i sums;
    if (transposed) {
        if (byte_levels) {
            __m256i part[2] = {has_offset ? asum : _mm256_setzero_si256(), _mm256_setzero_si256()}; /* two chains: half the latency */
            for (int m = 0; m < 8; m++) part[m & 1] = byte_level_dot_acc(part[m & 1], v[m], _mm256_loadu_si256(y + m));
            sums = _mm256_add_epi32(part[0], part[1]);
        } else sums = dots_u8_i8_acc(has_offset ? asum : _mm256_setzero_si256(), v, y, 8, unsigned_level_bits(type));
    } else {
        __m256i p[8];
        for (int j = 0; j < 8; j++) {
            /* padding blocks have zero levels; their activations may be anything but are finite */
            const __m256i yj = b + j < at->nb ? block_levels(type, G, at, t, b, j) : _mm256_setzero_si256();
            p[j] = byte_levels ? byte_level_dot_acc(_mm256_setzero_si256(), v[j], yj) : dot_u8_i8(v[j], yj);
        }
        sums = sum_lanes8(p, byte_levels ? 0 : 2);
        if (has_offset) sums = _mm256_add_epi32(sums, asum);
    }
    const __m256 ad = _mm256_loadu_ps(c->d);
    if (has_min) /* x = d*q + m: the mins meet the activations' sums */
        *macc = _mm256_fmadd_ps(mw, _mm256_loadu_ps(c->dsum), *macc);
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums), _mm256_mul_ps(dw, ad), acc);
}

/* Chunk c (blocks 8c to 8c + 7) of one row against G tokens from t0 (G
 * constant in each copy, so the accumulators stay in registers). */
static inline __attribute__((always_inline)) void blocks8_chunk(sprout_type type, const uint8_t *row, const act_tile *at, int64_t t0,
                                                                const int G, int64_t c, __m256 acc[], __m256 macc[]) {
    const int64_t nb = at->nb, b = 8 * c;
    /* for one token the transposes cost more shuffles than they save,
     * except Q4_0's, whose is cheap (the block sums are the same integers
     * either way); from two tokens on they save more than they cost, at
     * both x86 levels (bench/RESULTS.md) */
    const bool transpose = type == SPROUT_TYPE_Q4_0 || nibble_table(type) || G > 1;
    if (G == 1) decode_prefetch(row + (size_t)b * layout_of(type).bytes, 8 * layout_of(type).bytes);
    if (G == 1 && one_token_chunk8(type, row, at, t0, b, acc)) return;
    __m256i v[8];
    __m256 mw = _mm256_setzero_ps();
    /* whole chunks with a constant count, so that its per-block checks fold away */
    const __m256 dw = nb - b >= 8 ? load_blocks8(type, row, b, 8, transpose, v, &mw) : load_blocks8(type, row, b, (int)(nb - b), transpose, v, &mw);
    UNROLL_GROUP
    for (int k = 0; k < G; k++) acc[k] = accumulate_blocks8(type, G, v, dw, mw, at, t0 + k, b, transpose, acc[k], &macc[k]);
}

/* Q4_K and Q5_K in the same layout: a super-block's eight sub-blocks of 32
 * are the eight lanes (sub-block 2i is the low nibbles of qs[32i..], 2i+1
 * the high ones, Q5_K's fifth bits from qh), so after one 8x8 transpose of
 * the levels (one token: affine_k_lane_parts with VNNI, horizontal sums
 * without), eight vpdpbusd give every sub-block's sum; scales and mins
 * then apply as vectors: sum(x*a) = d*sc*ad*sum(q*qa) - dmin*m*ad*sum(qa). */
/* A Q4_K or Q5_K super-block's scale and min vectors: lane j sub-block
 * j's d * scale and dmin * min. */
static inline __attribute__((always_inline)) sp_affine_k_block affine_k_scales(sprout_type type, const uint8_t *row, int64_t b, __m256 *dsc,
                                                                                __m256 *dm) {
    const sp_affine_k_block blk = sp_affine_k_block_at(type == SPROUT_TYPE_Q5_K, row, b);
    const __m128i sm = k_scales_mins(blk.scales);
    /* d and dmin side by side, widened once: [d, dmin] in every pair of lanes */
    const __m256 d_dmin = _mm256_cvtph_ps(_mm_set1_epi32((int)((uint32_t)blk.d | (uint32_t)blk.dmin << 16)));
    *dsc = _mm256_mul_ps(_mm256_moveldup_ps(d_dmin), _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(sm)));
    *dm = _mm256_mul_ps(_mm256_movehdup_ps(d_dmin), _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(sm, 8))));
    return blk;
}

/* Its unsigned levels, sub-block j in lv[j] in element order (sub-block
 * 2i the low nibbles of qs[32i..], 2i+1 the high ones, Q5_K's fifth bits
 * from qh). */
static inline __attribute__((always_inline)) void affine_k_levels(const uint8_t *qs, const uint8_t *qh, __m256i lv[8]) {
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    const __m256i hb = qh ? _mm256_loadu_si256((const __m256i *)qh) : _mm256_setzero_si256();
    for (int i = 0; i < 4; i++) {
        const __m256i q = _mm256_loadu_si256((const __m256i *)(qs + 32 * i));
        lv[2 * i] = _mm256_and_si256(q, low4);
        lv[2 * i + 1] = _mm256_and_si256(_mm256_srli_epi16(q, 4), low4);
        if (qh) /* sub-block j's bit (bit j of hb) to bit 4: one 16-bit shift and a per-byte mask */
            for (int h = 0; h < 2; h++) lv[2 * i + h] = _mm256_or_si256(lv[2 * i + h], bit_to(hb, 2 * i + h, 4));
    }
}

static inline __attribute__((always_inline)) void affine_k_chunk(sprout_type type, const uint8_t *row, const act_tile *at, int64_t t0,
                                                                 const int G, int64_t b, __m256 acc[], __m256 macc[]) {
    const size_t block_bytes = type == SPROUT_TYPE_Q5_K ? sizeof(sp_block_q5_K) : sizeof(sp_block_q4_K);
    if (G == 1) decode_prefetch(row + (size_t)b * block_bytes, block_bytes);
    __m256 dsc, dm;
    const sp_affine_k_block blk = affine_k_scales(type, row, b, &dsc, &dm);
    if (G == 1 && one_token_affine_k(blk.qs, blk.qh, act_chunk_of(at, t0, 8 * b), dsc, dm, acc, macc)) return;
    __m256i lv[8], v[8];
    affine_k_levels(blk.qs, blk.qh, lv);
    /* one token: the sub-blocks in element order and their sums by one
     * horizontal tree, fewer shuffles than the transpose for the same
     * exact integers */
    const bool transposed = G > 1;
    if (transposed) transpose8x8_epi32(lv, v);
    UNROLL_GROUP
    for (int k = 0; k < G; k++) {
        const act_chunk *c = act_chunk_of(at, t0 + k, 8 * b);
        __m256i sums;
        if (transposed) {
            const __m256i *y = c->qs_t;
            sums = dots_u8_i8_acc(_mm256_setzero_si256(), v, y, 8, unsigned_level_bits(type));
        } else {
            __m256i p[8];
            super_block_dots(type, lv, at, t0 + k, b, p);
            sums = sum_lanes8(p, 2);
        }
        const __m256 ad = _mm256_loadu_ps(c->d);
        acc[k] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums), _mm256_mul_ps(dsc, ad), acc[k]);
        macc[k] = _mm256_fmadd_ps(dm, _mm256_loadu_ps(c->dsum), macc[k]);
    }
}

/* Eight sub-blocks' 8-bit levels lv (as byte_level_dot_acc takes them;
 * lane j sub-block j, in element order), each with its float scale in
 * lane j of dsc, against G tokens: the lanes of IQ4_XS and of the grid
 * formats (x86_matmul_grids.h). */
static inline __attribute__((always_inline)) void byte_lanes_dots(sprout_type type, const __m256i lv[8], __m256 dsc, const act_tile *at,
                                                                  int64_t t0, const int G, int64_t b, __m256 acc[]) {
    __m256i v[8];
    const bool transposed = G > 1;
    if (transposed) transpose8x8_epi32(lv, v);
    UNROLL_GROUP
    for (int k = 0; k < G; k++) {
        const act_chunk *c = act_chunk_of(at, t0 + k, 8 * b);
        const __m256i offset = Q8_0_UNSIGNED ? _mm256_loadu_si256((const __m256i *)c->sum) : _mm256_setzero_si256();
        __m256i sums;
        if (transposed) {
            const __m256i *y = c->qs_t;
            __m256i part[2] = {offset, _mm256_setzero_si256()};
            for (int m = 0; m < 8; m++) part[m & 1] = byte_level_dot_acc(part[m & 1], v[m], _mm256_loadu_si256(y + m));
            sums = _mm256_add_epi32(part[0], part[1]);
        } else {
            __m256i p[8];
            for (int j = 0; j < 8; j++) p[j] = byte_level_dot_acc(_mm256_setzero_si256(), lv[j], block_levels(type, 1, at, t0 + k, 8 * b, j));
            sums = _mm256_add_epi32(sum_lanes8(p, 0), offset);
        }
        const __m256 ad = _mm256_loadu_ps(c->d);
        acc[k] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums), _mm256_mul_ps(dsc, ad), acc[k]);
    }
}

/* IQ4_XS as Q4_K's lanes without mins: sub-block j (the nibbles of
 * qs[16 j..], as an IQ4_NL block's) is lane j, its levels looked up in the
 * format's table; the integer scales (ls - 32) times d apply as a vector.
 * One token: the sub-blocks in element order and their sums by horizontal
 * adds in 32 bits (8-bit levels' sums do not fit 16-bit pairs). Where VNNI multiplies unsigned
 * levels (plus 128) the offset starts each sum through the activations'
 * block sums; without, the signs move onto the activations (as Q8_0's). */
static inline __attribute__((always_inline)) void iq4_xs_chunk(const uint8_t *row, const act_tile *at, int64_t t0, const int G, int64_t b,
                                                               __m256 acc[]) {
    const __m256i low4 = _mm256_set1_epi8(0x0F), levels = iq4_levels();
    if (G == 1) decode_prefetch(row + (size_t)b * sizeof(sp_block_iq4_xs), sizeof(sp_block_iq4_xs));
    const sp_block_iq4_xs *blk = (const sp_block_iq4_xs *)row + b;
    __m256i lv[8];
    for (int j = 0; j < 8; j++) {
        const __m128i q = _mm_loadu_si128((const __m128i *)(blk->qs + 16 * j));
        const __m256i nibbles = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(q, 4), q), low4);
        lv[j] = _mm256_shuffle_epi8(levels, nibbles);
    }
    const __m256 dsc = _mm256_mul_ps(_mm256_set1_ps(_cvtsh_ss(blk->d)), _mm256_cvtepi32_ps(iq4_xs_scales(blk)));
    byte_lanes_dots(SPROUT_TYPE_IQ4_XS, lv, dsc, at, t0, G, b, acc);
}

#include "kernels/x86_matmul_grids.h"
#include "kernels/x86_matmul_grids2.h"

/* The trits (0..2) of 32 TQ1_0 bytes b: the top byte of 3 b (blocks.h),
 * 1 from b = 86 on and 2 from 171 on. */
static inline __m256i tq1_0_trits(__m256i b) {
    const __m256i from86 = _mm256_cmpeq_epi8(_mm256_max_epu8(b, _mm256_set1_epi8(86)), b);
    const __m256i from171 = _mm256_cmpeq_epi8(_mm256_max_epu8(b, _mm256_set1_epi8((char)171)), b);
    return _mm256_sub_epi8(_mm256_setzero_si256(), _mm256_add_epi8(from86, from171));
}

/* Bytes times 3, modulo 256: the next trit to the top. */
static inline __m256i times3(__m256i b) { return _mm256_add_epi8(b, _mm256_add_epi8(b, b)); }

/* A TQ1_0 super-block's eight runs of 32 trits in element order:
 * runs 0-4 trit n of qs[0..31]; runs 5-7 trits 0-4 of qs[32..47], 16 at a
 * time, then qh's 16 (element 240 + 4 n + j: trit n of qh[j], each group of
 * four bytes qh times 3^n). */
static inline __attribute__((always_inline)) void tq1_0_levels(const sp_block_tq1_0 *blk, __m256i lv[8]) {
    __m256i b = _mm256_loadu_si256((const __m256i *)blk->qs);
    for (int n = 0; n < 5; n++, b = times3(b)) lv[n] = tq1_0_trits(b);
    uint32_t qh;
    memcpy(&qh, blk->qh, sizeof qh);
    const __m128i h1 = _mm_set1_epi32((int)qh), h3 = _mm256_castsi256_si128(times3(_mm256_castsi128_si256(h1)));
    const __m128i h9 = _mm256_castsi256_si128(times3(_mm256_castsi128_si256(h3)));
    const __m128i h27 = _mm256_castsi256_si128(times3(_mm256_castsi128_si256(h9)));
    const __m128i tail = _mm_blend_epi32(_mm_blend_epi32(h1, h3, 0x2), _mm_blend_epi32(h9, h27, 0x8), 0xC);
    /* [trit 0 | trit 1], [2 | 3], [4 | qh's] of the 16 bytes, each half a run */
    const __m128i q = _mm_loadu_si128((const __m128i *)(blk->qs + 32));
    __m256i p = _mm256_set_m128i(_mm256_castsi256_si128(times3(_mm256_castsi128_si256(q))), q);
    lv[5] = tq1_0_trits(p);
    p = times3(times3(p)); /* trits 2 and 3 */
    lv[6] = tq1_0_trits(p);
    p = times3(times3(p)); /* trit 4 in the low half */
    lv[7] = tq1_0_trits(_mm256_set_m128i(tail, _mm256_castsi256_si128(p)));
}

/* TQ2_0 and TQ1_0 as IQ4_XS's lanes with one scale: sub-block j (TQ2_0:
 * 4c + l, elements 128 c + 32 l.., bits 2l of qs[32 c..]; TQ1_0:
 * tq1_0_levels) is lane j, unsigned trits 0..2 whose offset (-1) starts
 * each sum through the activations' block sums (type_sum_factor); sums of
 * levels this small fit 16-bit pairs. */
static inline __attribute__((always_inline)) void ternary_chunk(sprout_type type, const uint8_t *row, const act_tile *at, int64_t t0, const int G,
                                                                int64_t b, __m256 acc[]) {
    const size_t block_bytes = type == SPROUT_TYPE_TQ2_0 ? sizeof(sp_block_tq2_0) : sizeof(sp_block_tq1_0);
    if (G == 1) decode_prefetch(row + (size_t)b * block_bytes, block_bytes);
    __m256i lv[8], v[8];
    uint16_t d16;
    if (type == SPROUT_TYPE_TQ2_0) {
        const sp_block_tq2_0 *blk = (const sp_block_tq2_0 *)row + b;
        const __m256i two_bits = _mm256_set1_epi8(0x03);
        for (int c = 0; c < 2; c++) {
            const __m256i q = _mm256_loadu_si256((const __m256i *)(blk->qs + 32 * c));
            for (int l = 0; l < 4; l++) lv[4 * c + l] = _mm256_and_si256(_mm256_srli_epi16(q, 2 * l), two_bits);
        }
        d16 = blk->d;
    } else {
        const sp_block_tq1_0 *blk = (const sp_block_tq1_0 *)row + b;
        tq1_0_levels(blk, lv);
        d16 = blk->d;
    }
    const bool transposed = G > 1;
    if (transposed) transpose8x8_epi32(lv, v);
    const __m256 d = _mm256_set1_ps(_cvtsh_ss(d16));
    UNROLL_GROUP
    for (int k = 0; k < G; k++) {
        const act_chunk *c = act_chunk_of(at, t0 + k, 8 * b);
        const __m256i offset = _mm256_loadu_si256((const __m256i *)c->sum);
        __m256i sums;
        if (transposed) {
            const __m256i *y = c->qs_t;
            sums = dots_u8_i8_acc(offset, v, y, 8, unsigned_level_bits(type));
        } else {
            __m256i p[8];
            super_block_dots(type, lv, at, t0 + k, b, p);
            sums = _mm256_add_epi32(sum_lanes8(p, 2), offset);
        }
        acc[k] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums), _mm256_mul_ps(d, _mm256_loadu_ps(c->d)), acc[k]);
    }
}

/* Q6_K, Q3_K and Q2_K in lanes: the eight activation blocks of a
 * super-block are the lanes; their first and last 16 elements have a scale
 * each, so the level sums are kept per half (vectors 0-3 hold elements
 * 0..15 of every block, 4-7 elements 16..31), scaled in integer, with the
 * offset (Q6_K -32, Q3_K -4) taken off through the activations' half sums:
 * sum(x*a) = d*ad*sum(sc*(q-offset)*qa); Q2_K's mins meet those half sums
 * in integer too: - dmin*ad*sum(m*sum(qa)). The grid formats with a scale
 * per 16 (IQ2_XS, IQ2_S, IQ1_M; x86_matmul_grids2.h) take the same halves
 * with 8-bit levels (byte_level_dot_acc; with VNNI plus 128, the offset
 * taken off alike). */
static inline __attribute__((always_inline)) void split_k_chunk(sprout_type type, const uint8_t *row, const act_tile *at, int64_t t0,
                                                                const int G, int64_t b, __m256 acc[], __m256 macc[]) {
    const bool with_mins = type == SPROUT_TYPE_Q2_K, byte_levels = grid2_type(type);
    const size_t block_bytes = type == SPROUT_TYPE_Q6_K   ? sizeof(sp_block_q6_K)
                               : type == SPROUT_TYPE_Q3_K ? sizeof(sp_block_q3_K)
                               : byte_levels              ? grid2_block_bytes(type)
                                                          : sizeof(sp_block_q2_K);
    if (G == 1) decode_prefetch(row + (size_t)b * block_bytes, block_bytes);
    if (G == 1 && type == SPROUT_TYPE_Q6_K && one_token_q6_K((const sp_block_q6_K *)row + b, act_chunk_of(at, t0, 8 * b), acc)) return;
    split_k_block k;
    if (byte_levels) grid2_unpack(type, row, b, &k);
    else split_k_unpack(type, row, b, &k);
    __m256i v[8];
    const bool transposed = G > 1; /* one token: horizontal sums instead, as in affine_k_chunk */
    if (transposed) transpose8x8_epi32(k.lv, v);
    UNROLL_GROUP
    for (int t = 0; t < G; t++) {
        const act_chunk *c = act_chunk_of(at, t0 + t, 8 * b);
        const __m256i *y = c->qs_t;
        /* the offset, times the halves' sums, starts each sum (Q2_K has none: its sums are the plain ones) */
        const __m256i half_sum = _mm256_loadu_si256((const __m256i *)c->sum), half_sum_hi = _mm256_loadu_si256((const __m256i *)c->sum_hi);
        __m256i lo = with_mins ? _mm256_setzero_si256() : half_sum, hi = with_mins ? _mm256_setzero_si256() : half_sum_hi;
        if (transposed) {
            if (byte_levels)
                for (int m = 0; m < 4; m++) {
                    lo = byte_level_dot_acc(lo, v[m], _mm256_loadu_si256(y + m));
                    hi = byte_level_dot_acc(hi, v[m + 4], _mm256_loadu_si256(y + m + 4));
                }
            else {
                lo = dots_u8_i8_acc(lo, v, y, 4, unsigned_level_bits(type));
                hi = dots_u8_i8_acc(hi, v + 4, y + 4, 4, unsigned_level_bits(type));
            }
        } else {
            /* lanes 0-3 of block j's dot hold its first 16 elements, 4-7 its last:
             * two levels of pairwise adds leave [first halves | last halves] of
             * four blocks per vector */
            __m256i p[8];
            if (byte_levels)
                for (int j = 0; j < 8; j++) p[j] = byte_level_dot_acc(_mm256_setzero_si256(), k.lv[j], block_levels(type, 1, at, t0 + t, 8 * b, j));
            else super_block_dots(type, k.lv, at, t0 + t, b, p);
            /* unsigned 8-bit levels' fours do not fit 16 bits */
            const bool in_int16 = !(byte_levels && Q8_0_UNSIGNED);
            const __m256i h0 = _mm256_hadd_epi32(pair_sums(p[0], p[1], in_int16), pair_sums(p[2], p[3], in_int16));
            const __m256i h1 = _mm256_hadd_epi32(pair_sums(p[4], p[5], in_int16), pair_sums(p[6], p[7], in_int16));
            lo = _mm256_add_epi32(lo, _mm256_permute2x128_si256(h0, h1, 0x20));
            hi = _mm256_add_epi32(hi, _mm256_permute2x128_si256(h0, h1, 0x31));
        }
        const __m256i sums = _mm256_add_epi32(_mm256_mullo_epi32(lo, k.sc_lo), _mm256_mullo_epi32(hi, k.sc_hi));
        const __m256 ad = _mm256_loadu_ps(c->d);
        acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums), _mm256_mul_ps(k.d, ad), acc[t]);
        if (with_mins) {
            const __m256i mins = _mm256_add_epi32(_mm256_mullo_epi32(half_sum, k.min_lo), _mm256_mullo_epi32(half_sum_hi, k.min_hi));
            macc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(mins), _mm256_mul_ps(k.dmin, ad), macc[t]);
        }
    }
}

/* Chunk c of a row (eight blocks, or one K-quant super-block) against G
 * tokens from t0: the scales' terms into acc, the mins' into macc. */
static inline __attribute__((always_inline)) void type_chunk(sprout_type type, const uint8_t *row, const act_tile *at, int64_t t0,
                                                             const int G, int64_t c, __m256 acc[], __m256 macc[]) {
    switch (type) {
    case SPROUT_TYPE_Q4_K:
    case SPROUT_TYPE_Q5_K: affine_k_chunk(type, row, at, t0, G, c, acc, macc); break;
    case SPROUT_TYPE_IQ4_XS: iq4_xs_chunk(row, at, t0, G, c, acc); break;
    case SPROUT_TYPE_IQ3_XXS:
    case SPROUT_TYPE_IQ3_S: iq3_chunk(type, row, at, t0, G, c, acc); break;
    case SPROUT_TYPE_TQ1_0:
    case SPROUT_TYPE_TQ2_0: ternary_chunk(type, row, at, t0, G, c, acc); break;
    case SPROUT_TYPE_IQ2_XXS:
    case SPROUT_TYPE_IQ1_S: grid2_lanes_chunk(type, row, at, t0, G, c, acc); break;
    case SPROUT_TYPE_IQ2_XS:
    case SPROUT_TYPE_IQ2_S:
    case SPROUT_TYPE_IQ1_M:
    case SPROUT_TYPE_Q6_K:
    case SPROUT_TYPE_Q3_K:
    case SPROUT_TYPE_Q2_K: split_k_chunk(type, row, at, t0, G, c, acc, macc); break;
    default: blocks8_chunk(type, row, at, t0, G, c, acc, macc); break;
    }
}

/* One row's span sp against G tokens (G constant in each copy, so the
 * accumulators stay in registers). */
static inline __attribute__((always_inline)) void span_group(sprout_type type, const uint8_t *row, const act_tile *at, const int G,
                                                             const k_span *sp, size_t chunk_bytes, ptrdiff_t ahead, float *out) {
    const bool with_mins = type_mins_sign(type) != 0.f;
    __m256 acc[TOKEN_GROUP], macc[TOKEN_GROUP];
    UNROLL_GROUP
    for (int k = 0; k < G; k++) {
        acc[k] = sp->first ? _mm256_setzero_ps() : sp->state[k];
        macc[k] = sp->first || !with_mins ? _mm256_setzero_ps() : sp->state[TOKEN_GROUP + k];
    }
    for (int64_t c = sp->c0; c < sp->c1; c++) {
        prefetch_chunk_ahead(row, c, chunk_bytes, ahead);
        type_chunk(type, row, at, 0, G, c, acc, macc);
    }
    UNROLL_GROUP
    for (int k = 0; k < G; k++) {
        if (!sp->last) {
            sp->state[k] = acc[k];
            if (with_mins) sp->state[TOKEN_GROUP + k] = macc[k];
        } else out[k] = row_output(type, acc[k], macc[k]);
    }
}

/* One token against R whole rows side by side, a chunk of each in turn:
 * R streams of weights in flight at once (the hardware prefetcher and
 * decode_prefetch follow each), where one row at a time left the core
 * waiting on the next row's first lines. Each row's arithmetic is
 * span_group's for one token in one span, so its output is the same
 * bits. */
static inline __attribute__((always_inline)) void rows_side_by_side(sprout_type type, const uint8_t *const rows[], const int R,
                                                                    const act_tile *at, float *out) {
    if (rows_in_pairs(type, rows, R, at, out)) return;
    __m256 acc[SP_DECODE_STREAMS], macc[SP_DECODE_STREAMS];
    UNROLL_GROUP
    for (int r = 0; r < R; r++) acc[r] = macc[r] = _mm256_setzero_ps();
    for (int64_t c = 0; c < at->nb8 / 8; c++) {
        UNROLL_GROUP
        for (int r = 0; r < R; r++) type_chunk(type, rows[r], at, 0, 1, c, acc + r, macc + r);
    }
    UNROLL_GROUP
    for (int r = 0; r < R; r++) out[r] = row_output(type, acc[r], macc[r]);
}

/* Where rows side by side pay: not for IQ4_XS, whose one-token chunks
 * are the longest per byte. Q4_K and Q5_K lost with their 256-bit chunks
 * of horizontal sums and win with their lanes (affine_k_lane_parts). */
static inline bool rows_go_side_by_side(sprout_type type) { return type != SPROUT_TYPE_IQ4_XS; }

/* The rows of rs against G tokens of at (G and type constant in each copy,
 * so the chunk kernels inline and their accumulators stay in registers). */
static inline __attribute__((always_inline)) void group_rows(sprout_type type, const act_tile *at, const int G, const row_span *rs) {
    const sp_weight *w = rs->w;
    if (G == 1 && rs->c0 == 0 && rs->c1 == rs->n_chunks && rows_go_side_by_side(type)) {
        /* one token, whole rows: SP_DECODE_STREAMS stretches of rows
         * (kernels.h), a row of each side by side */
        const int64_t stretch = sp_decode_stretch(rs->o0, rs->o1);
        for (int64_t i = 0; i < stretch; i++) {
            const uint8_t *rows[SP_DECODE_STREAMS];
            int64_t os[SP_DECODE_STREAMS];
            const int n = sp_decode_rows(w, rs->o0, rs->o1, stretch, i, rows, os);
            float dots[SP_DECODE_STREAMS];
            if (n == SP_DECODE_STREAMS) rows_side_by_side(type, rows, SP_DECODE_STREAMS, at, dots);
            else
                for (int k = 0; k < n; k++) rows_side_by_side(type, rows + k, 1, at, dots + k);
            for (int k = 0; k < n; k++) rs->y[os[k]] = dots[k];
        }
        return;
    }
    /* a row at a time; one token's (rows in spans, or of the types above)
     * from each stretch in turn */
    const int64_t stretch = G == 1 ? sp_decode_stretch(rs->o0, rs->o1) : rs->o1 - rs->o0;
    const int64_t visits = G == 1 ? stretch * SP_DECODE_STREAMS : stretch;
    for (int64_t k = 0; k < visits; k++) {
        const int64_t o = G == 1 ? sp_decode_row(rs->o0, rs->o1, stretch, k) : rs->o0 + k;
        if (o < 0) continue;
        const uint8_t *row = w->data + (size_t)o * w->row_bytes;
        const ptrdiff_t ahead = rs->prefetch && o + GROUP_AHEAD_ROWS < rs->o_end ? GROUP_AHEAD_ROWS * (ptrdiff_t)w->row_bytes : 0;
        const k_span sp = {rs->c0, rs->c1, rs->c0 == 0, rs->c1 == rs->n_chunks, rs->state ? rs->state[o - rs->o0] : NULL};
        float dots[TOKEN_GROUP];
        span_group(type, row, at, G, &sp, rs->chunk_bytes, ahead, dots);
        if (sp.last)
            for (int t = 0; t < G; t++) rs->y[t * rs->y_stride + o] = dots[t];
    }
}

static inline __attribute__((always_inline)) void type_rows(sprout_type type, const act_tile *at, int G, const row_span *rs) {
    switch (G) {
    case 1: group_rows(type, at, 1, rs); break;
    case 2: group_rows(type, at, 2, rs); break;
    case 3: group_rows(type, at, 3, rs); break;
    case 4: group_rows(type, at, 4, rs); break;
    case 5: group_rows(type, at, 5, rs); break;
    case 6: group_rows(type, at, 6, rs); break;
    case 7: group_rows(type, at, 7, rs); break;
    default: group_rows(type, at, TOKEN_GROUP, rs); break;
    }
}

/* A copy per type and group size: one dispatch per span of a row block
 * (a call per row, with its spills, cost a tenth of one-token decode). */
static void span_rows_alone(sprout_type type, const act_tile *at, int G, const row_span *rs) {
    switch (type) {
    case SPROUT_TYPE_Q4_0: type_rows(SPROUT_TYPE_Q4_0, at, G, rs); break;
    case SPROUT_TYPE_IQ4_NL: type_rows(SPROUT_TYPE_IQ4_NL, at, G, rs); break;
    case SPROUT_TYPE_MXFP4: type_rows(SPROUT_TYPE_MXFP4, at, G, rs); break;
    case SPROUT_TYPE_TQ2_0: type_rows(SPROUT_TYPE_TQ2_0, at, G, rs); break;
    case SPROUT_TYPE_TQ1_0: type_rows(SPROUT_TYPE_TQ1_0, at, G, rs); break;
    case SPROUT_TYPE_IQ3_XXS: type_rows(SPROUT_TYPE_IQ3_XXS, at, G, rs); break;
    case SPROUT_TYPE_IQ3_S: type_rows(SPROUT_TYPE_IQ3_S, at, G, rs); break;
    case SPROUT_TYPE_IQ2_XXS: type_rows(SPROUT_TYPE_IQ2_XXS, at, G, rs); break;
    case SPROUT_TYPE_IQ2_XS: type_rows(SPROUT_TYPE_IQ2_XS, at, G, rs); break;
    case SPROUT_TYPE_IQ2_S: type_rows(SPROUT_TYPE_IQ2_S, at, G, rs); break;
    case SPROUT_TYPE_IQ1_S: type_rows(SPROUT_TYPE_IQ1_S, at, G, rs); break;
    case SPROUT_TYPE_IQ1_M: type_rows(SPROUT_TYPE_IQ1_M, at, G, rs); break;
    case SPROUT_TYPE_IQ4_XS: type_rows(SPROUT_TYPE_IQ4_XS, at, G, rs); break;
    case SPROUT_TYPE_Q4_1: type_rows(SPROUT_TYPE_Q4_1, at, G, rs); break;
    case SPROUT_TYPE_Q5_0: type_rows(SPROUT_TYPE_Q5_0, at, G, rs); break;
    case SPROUT_TYPE_Q5_1: type_rows(SPROUT_TYPE_Q5_1, at, G, rs); break;
    case SPROUT_TYPE_Q4_K: type_rows(SPROUT_TYPE_Q4_K, at, G, rs); break;
    case SPROUT_TYPE_Q5_K: type_rows(SPROUT_TYPE_Q5_K, at, G, rs); break;
    case SPROUT_TYPE_Q6_K: type_rows(SPROUT_TYPE_Q6_K, at, G, rs); break;
    case SPROUT_TYPE_Q3_K: type_rows(SPROUT_TYPE_Q3_K, at, G, rs); break;
    case SPROUT_TYPE_Q2_K: type_rows(SPROUT_TYPE_Q2_K, at, G, rs); break;
    default: type_rows(SPROUT_TYPE_Q8_0, at, G, rs); break;
    }
}

#if ROW_PAIRS
#include "kernels/x86_matmul_pairs.h"
#endif

/* A span of a row block: in row pairs where the level has them (only the
 * pairs' shapes are copies of the pair kernels: the build pays per copy),
 * their products in 256-bit halves where pair_halves says so. */
static void span_rows(sprout_type type, const act_tile *at, int G, bool pair_halves, const row_span *rs) {
#if ROW_PAIRS
    if (pairs_group(G) && pairs_type(type)) {
        pair_rows(type, at, G, pair_halves, rs);
        return;
    }
#else
    (void)pair_halves;
#endif
    span_rows_alone(type, at, G, rs);
}

/* The int8 path: activations of up to TOKEN_TILE tokens quantized into the
 * caller's scratch (sp_matmul_scratch_floats covers a full tile), then each
 * weight row, read once, dotted with all of them. */
static void matmul_int8(const sp_weight *w, const float *x, int64_t x_stride, const act_block *xq, int64_t n_tokens, float *y,
                        int64_t y_stride, int64_t o0, int64_t o1, float *scratch, bool pair_halves) {
    /* per 256 elements: a row of chunks and the tile's blocks (sp_matmul_scratch_floats) */
    _Static_assert(CHUNK_ROW * sizeof(act_chunk) + 8 * TOKEN_TILE * sizeof(act_block) <= SP_TILE_FLOATS_PER_ELEMENT * 256 * sizeof(float),
                   "a tile fits the scratch");
    _Static_assert(CHUNK_ROW * sizeof(act_chunk) <= SP_TILE_PADDING_FLOATS * sizeof(float), "and so does a row's padding to a chunk");
    const int64_t nb = w->n_in / 32, nb8 = (nb + 7) & ~(int64_t)7;
    /* 32-byte loads that straddle cache lines cost a quarter of the speed:
     * the chunks start on a line (the scratch has room to spare) */
    __m256(*state)[2 * TOKEN_GROUP] = (__m256(*)[2 * TOKEN_GROUP])(((uintptr_t)scratch + 63) & ~(uintptr_t)63);
    _Static_assert(ROW_BLOCK_MAX * 2 * TOKEN_GROUP * 8 <= SP_ROW_STATE_FLOATS, "the scratch holds a row block's accumulators");
    act_tile at = {.chunks = (act_chunk *)(state + ROW_BLOCK_MAX), .nb = nb, .nb8 = nb8};
    act_block *own_blocks = (act_block *)(at.chunks + CHUNK_ROW * (nb8 / 8));
    const sprout_type type = w->type;
    const int sum_factor = type_sum_factor(type);
    const int64_t n_chunks = nb8 / 8;
    const size_t chunk_bytes = w->row_bytes * 8 / (size_t)nb; /* eight blocks, or one K-quant super-block (Q2_K: 84 bytes, 10.5 per 32) */
    for (int64_t t0 = 0; t0 < n_tokens; t0 += TOKEN_TILE) {
        const int64_t tn = n_tokens - t0 < TOKEN_TILE ? n_tokens - t0 : TOKEN_TILE;
        at.blocks = xq ? xq + t0 * nb : own_blocks;
        const act_order order = tn > 1 ? ACT_TRANSPOSED : one_token_order(type);
        for (int64_t t = 0; t < tn; t++) {
            if (!xq) quantize_activations(x + (t0 + t) * x_stride, w->n_in, own_blocks + t * nb);
            /* a scale per 16 elements wants the sums of each half */
            prepare_act_tile(&at, order, t, sum_factor, sp_scale_per_16(type) || grid2_scale_per_16(type), order == ACT_IN_ORDER && wants_run_sums(type));
        }
        /* rows go in blocks whose weights serve several token groups or
         * spans from cache; one group in one span takes them all at once */
        const bool one_pass = tn <= TOKEN_GROUP && n_chunks <= SPAN_TOKEN_CHUNKS / tn;
        const int64_t budget_rows = ROW_BLOCK_BYTES / (int64_t)w->row_bytes;
        const int64_t row_block = one_pass                       ? o1 - o0
                                  : budget_rows < ROW_BLOCK_MIN ? ROW_BLOCK_MIN
                                  : budget_rows > ROW_BLOCK_MAX ? ROW_BLOCK_MAX
                                                                : budget_rows;
        for (int64_t ob = o0; ob < o1; ob += row_block) {
            const int64_t oe = o1 - ob < row_block ? o1 : ob + row_block;
            /* groups of near-equal size: one token alone is a lone token (one_token_order) */
            const int64_t n_groups = (tn + TOKEN_GROUP - 1) / TOKEN_GROUP;
            for (int64_t g = 0; g < n_groups; g++) {
                const int64_t tg = g * tn / n_groups, gn = (g + 1) * tn / n_groups - tg;
                act_tile view = at;
                view.chunks += tg, view.blocks += tg * nb;
                const int64_t span_chunks = SPAN_TOKEN_CHUNKS / gn;
                for (int64_t c0 = 0; c0 < n_chunks; c0 += span_chunks) {
                    const row_span rs = {w, ob, oe, c0, n_chunks - c0 < span_chunks ? n_chunks : c0 + span_chunks, n_chunks, one_pass ? NULL : state,
                                         tn > 1, o1, chunk_bytes, y + (t0 + tg) * y_stride, y_stride};
                    span_rows(type, &view, (int)gn, pair_halves, &rs);
                }
            }
        }
    }
}

/* A tile of any shape used: a copy per shape, so that each one's loops
 * unroll and its accumulators stay in registers. */
static void float_tile_any(float_format f, const void *const rows[], int R, const float *const xs[], int T, int64_t n, ptrdiff_t ahead,
                           bool into_l1, float *out) {
#define SHAPE(RR, TT)                                                                             \
    case (RR) * 8 + (TT):                                                                         \
        if (f == FLOAT_F16) float_tile(FLOAT_F16, rows, RR, xs, TT, n, ahead, into_l1, out);        \
        else if (f == FLOAT_BF16) float_tile(FLOAT_BF16, rows, RR, xs, TT, n, ahead, into_l1, out); \
        else float_tile(FLOAT_F32, rows, RR, xs, TT, n, ahead, into_l1, out);                       \
        return;
    switch (R * 8 + T) {
        FLOAT_TILE_SHAPES
    default: break;
    }
#undef SHAPE
}

/* One token against F16, BF16 or F32 rows [o0, o1) read in place: as
 * SP_DECODE_STREAMS stretches, a row of each side by side in a tile
 * (kernels.h), left to the hardware prefetcher (SP_FLOAT_DECODE_AHEAD). A
 * row's arithmetic is the tile's for that row whatever else the tile
 * holds, so only the order of the rows differs from a batch's. Four
 * consecutive rows, each fetching the next tile's (its row 4 rows on),
 * stayed short of the pace four stretches keep. */
typedef struct float_token {
    float_format f;
    const float *x;
    int64_t n_in;
} float_token;

static void float_token_tile(const uint8_t *const rows[], int n, const void *ctx, float *dots) {
    const float_token *t = ctx;
    const void *tile[SP_DECODE_STREAMS];
    for (int k = 0; k < n; k++) tile[k] = rows[k];
    float_tile_any(t->f, tile, n, &t->x, 1, t->n_in, SP_FLOAT_DECODE_AHEAD, true, dots);
}

static void float_rows_one_token(const sp_weight *w, float_format f, const float *x, float *y, int64_t o0, int64_t o1) {
    const float_token t = {f, x, w->n_in};
    sp_decode_sets(w, o0, o1, y, float_token_tile, &t);
}

/* Rows [o0, o1) against tokens [0, n_tokens) of x. */
static void float_rows_block(const sp_weight *w, const float *x, int64_t x_stride, int64_t n_tokens, float *y, int64_t y_stride, int64_t o0,
                             int64_t o1, float *scratch) {
    /* F16 and BF16 widen in registers; other types are decoded to F32 */
    const bool direct = w->type == SPROUT_TYPE_F16 || w->type == SPROUT_TYPE_BF16 || w->type == SPROUT_TYPE_F32;
    const float_format f = w->type == SPROUT_TYPE_F16 ? FLOAT_F16 : w->type == SPROUT_TYPE_BF16 ? FLOAT_BF16 : FLOAT_F32;
    if (direct && n_tokens == 1) {
        float_rows_one_token(w, f, x, y, o0, o1);
        return;
    }
    for (int64_t o = o0, R; o < o1; o += R) {
        R = o1 - o < FLOAT_TILE_ROWS ? 1 : FLOAT_TILE_ROWS; /* a partial tile of rows goes one row at a time */
        const void *rows[FLOAT_TILE_ROWS];
        for (int r = 0; r < R; r++) {
            const uint8_t *row = w->data + (size_t)(o + r) * w->row_bytes;
            if (direct) rows[r] = row;
            else { /* decoded once per call, for all tokens */
                sp_type_traits_of(w->type)->dequantize(row, scratch + (size_t)r * (size_t)w->n_in, w->n_in);
                rows[r] = scratch + (size_t)r * (size_t)w->n_in;
            }
        }
        for (int64_t t0 = 0; t0 < n_tokens; t0 += FLOAT_TILE_TOKENS) {
            const int T = n_tokens - t0 < FLOAT_TILE_TOKENS ? (int)(n_tokens - t0) : FLOAT_TILE_TOKENS;
            const float *xs[FLOAT_TILE_TOKENS];
            for (int t = 0; t < T; t++) xs[t] = x + (t0 + t) * x_stride;
            float out[FLOAT_TILE_ROWS * FLOAT_TILE_TOKENS];
            /* the next tile's rows, where they are read in place; a lone row (at the edge) SP_DECODE_AHEAD further */
            const ptrdiff_t ahead = !direct ? 0 : R > 1 ? (ptrdiff_t)R * (ptrdiff_t)w->row_bytes : SP_DECODE_AHEAD;
            float_tile_any(f, rows, (int)R, xs, T, w->n_in, ahead, n_tokens == 1, out);
            for (int r = 0; r < R; r++)
                for (int t = 0; t < T; t++) y[(t0 + t) * y_stride + o + r] = out[r * T + t];
        }
    }
}

/* F16 and BF16 rows' activations (kernels.h): rounded to the format (to
 * nearest even) and widened back to floats (exactly): the same values as
 * sp_fp32_to_fp16 and sp_fp32_to_bf16 give. */
static void round_activations(float_format f, const float *x, int64_t n, float *out) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_loadu_ps(x + i);
        _mm256_storeu_ps(out + i, f == FLOAT_F16 ? _mm256_cvtph_ps(_mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT))
                                                 : _mm256_castsi256_ps(_mm256_slli_epi32(round8_bf16_bits(v), 16)));
    }
    for (; i < n; i++) out[i] = f == FLOAT_F16 ? sp_fp16_round(x[i]) : sp_bf16_round(x[i]);
}

static void matmul_float(const sp_weight *w, const float *x, int64_t x_stride, int64_t n_tokens, float *y, int64_t y_stride, int64_t o0,
                         int64_t o1, float *scratch) {
    const bool round_x = w->type == SPROUT_TYPE_F16 || w->type == SPROUT_TYPE_BF16;
    const float_format f = w->type == SPROUT_TYPE_F16 ? FLOAT_F16 : FLOAT_BF16;
    /* the tokens of a block stay in L2 (half of a 1 MiB one) while every
     * row passes; an F16 or BF16 row's rounded block fits SP_ROUNDED_BLOCK_FLOATS */
    int64_t block = (512 << 10) / (w->n_in * (int64_t)sizeof(float)) / FLOAT_TILE_TOKENS * FLOAT_TILE_TOKENS;
    if (block < FLOAT_TILE_TOKENS) block = FLOAT_TILE_TOKENS;
    for (int64_t tb = 0; tb < n_tokens; tb += block) {
        const int64_t tn = n_tokens - tb < block ? n_tokens - tb : block;
        const float *xb = x + tb * x_stride;
        int64_t xb_stride = x_stride;
        if (round_x) {
            for (int64_t t = 0; t < tn; t++) round_activations(f, xb + t * x_stride, w->n_in, scratch + t * w->n_in);
            xb = scratch;
            xb_stride = w->n_in;
        }
        float_rows_block(w, xb, xb_stride, tn, y + tb * y_stride, y_stride, o0, o1, scratch);
    }
}

/* The level's matmul: the int8 path where the type has one and the rows
 * are whole blocks of 32, else the float rows (pair_halves: span_rows). */
static inline __attribute__((always_inline)) void matmul_x86(const sp_weight *w, const float *x, int64_t x_stride, const void *xq,
                                                             int64_t n_tokens, float *y, int64_t y_stride, int64_t o0, int64_t o1,
                                                             float *scratch, bool pair_halves) {
    const bool int8_path = sp_x86_int8_type(w->type) && w->n_in % 32 == 0;
    if (int8_path) {
        matmul_int8(w, x, x_stride, xq, n_tokens, y, y_stride, o0, o1, scratch, pair_halves);
        return;
    }
    matmul_float(w, x, x_stride, n_tokens, y, y_stride, o0, o1, scratch);
}

#endif
