/* Matmul for x86-64 CPUs with AVX2 and FMA (compiled with those flags only
 * here; dispatch.c calls it only when cpuid says so).
 *
 * Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL and IQ4_XS
 * weights are dotted in int8 against the activations quantized to 8-bit blocks of 32, as
 * llama.cpp does, so weights are never widened to float; the forward pass
 * quantizes each activation once where it is made (sp_kernels.quantize),
 * other callers leave it to the call. Eight blocks
 * (or a K-quant super-block's eight sub-blocks) go side by side in the
 * lanes of a vector, their levels transposed once for up to 8 tokens, so
 * each block's sum comes out exact in its own lane and the scales apply as
 * vectors. The result differs from the float path by the activations'
 * rounding (about 1% relative per dot of random signs). The loops go tile
 * of 32 tokens > block of up to 256 rows > group of 8 tokens > span of the row
 * (as much as keeps the group's activations in L1) > row, so that the
 * activations are read from L1 and each weight row from memory once per
 * tile. Other types go through float register tiles. Every path computes a
 * token the same way whatever else is in the batch. */
#include <immintrin.h>
#include <stddef.h>
#include <string.h>

/* matmul_avx512.c compiles this file again with VNNI on */
#ifndef SP_MATMUL_NAME
#define SP_MATMUL_NAME sp_matmul_avx2
#define SP_QUANTIZE_NAME sp_quantize_avx2
#endif

#include "kernels/kernels.h"
#include "kernels/x86_act.h"
#include "kernels/x86_prefetch.h"
#include "kernels/x86_round.h"
#include "kernels/x86_sum.h"
#include "quant/blocks.h"
#include "quant/fp16.h"
#include "quant/quant.h"

/* Tokens whose quantized activations are kept at once (in L2): each
 * weight row is read from memory once per tile. */
#define TOKEN_TILE 32
/* Tokens whose accumulators a kernel keeps in registers at once; their
 * loops must unroll, or the accumulators live in memory. */
#define TOKEN_GROUP 8
/* Rows that take a token group's activations (kept in L1) in turn before
 * the next group comes: as many as keep their weights in L2 for the next
 * groups (ROW_BLOCK_BYTES), at least ROW_BLOCK_MIN and at most what
 * SP_ROW_STATE_FLOATS holds. Longer blocks load each group's activations
 * into L1 fewer times: TinyLlama Q4_0 pp512, 2 threads, 198 -> 209 t/s
 * from 16 rows to 256 (best of three, alternating). */
#define ROW_BLOCK_MIN 16
#define ROW_BLOCK_MAX 256
#define ROW_BLOCK_BYTES (1 << 20)
#define UNROLL_GROUP _Pragma("GCC unroll 8")



/* n (a multiple of 32) activations to blocks: one scale per 32, the
 * largest magnitude mapped to 127. */
static void quantize_activations(const float *x, int64_t n, act_block *q) {
    const __m256 sign_mask = _mm256_set1_ps(-0.0f);
    for (int64_t b = 0; b < n / 32; b++, x += 32) {
        __m256 v[4], m = _mm256_setzero_ps();
        for (int k = 0; k < 4; k++) {
            v[k] = _mm256_loadu_ps(x + 8 * k);
            m = _mm256_max_ps(m, _mm256_andnot_ps(sign_mask, v[k]));
        }
        __m128 mm = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
        mm = _mm_max_ps(mm, _mm_movehl_ps(mm, mm));
        mm = _mm_max_ss(mm, _mm_movehdup_ps(mm));
        const float max_abs = _mm_cvtss_f32(mm);
        /* blocks too small to scale (127 / max_abs would overflow) count as zero */
        const float d = max_abs / 127.f, id = max_abs >= 1e-30f ? 127.f / max_abs : 0.f;
        q[b].d = d;
        const __m256 scale = _mm256_set1_ps(id);
        __m256i i32[4];
        for (int k = 0; k < 4; k++) i32[k] = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v[k], scale), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        /* pack 4x8 int32 to 32 int8 in element order (packs interleave 128-bit lanes: undo with a permute) */
        __m256i i16a = _mm256_packs_epi32(i32[0], i32[1]), i16b = _mm256_packs_epi32(i32[2], i32[3]);
        __m256i i8 = _mm256_packs_epi16(i16a, i16b);
        i8 = _mm256_permutevar8x32_epi32(i8, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
        /* finite values land in -127..127; a NaN converts to INT_MIN and
         * would pack to -128, past the bounds the 16-bit partial sums rely
         * on (pair_sums, q6_K_group_sums) */
        i8 = _mm256_max_epi8(i8, _mm256_set1_epi8(-127));
        _mm256_storeu_si256((__m256i *)q[b].qs, i8);
        /* the halves' sums: sums of absolute differences from -128 per 8
         * bytes (each level shifted to 0..255), less 8 * 128 */
        const __m256i sad = _mm256_sad_epu8(_mm256_xor_si256(i8, _mm256_set1_epi8((char)0x80)), _mm256_setzero_si256());
        const __m128i lo = _mm256_castsi256_si128(sad), hi = _mm256_extracti128_si256(sad, 1);
        q[b].sum[0] = (int16_t)(_mm_cvtsi128_si32(lo) + _mm_extract_epi32(lo, 2) - 2048);
        q[b].sum[1] = (int16_t)(_mm_cvtsi128_si32(hi) + _mm_extract_epi32(hi, 2) - 2048);
    }
}

/* Unsigned bytes times signed bytes, summed in fours into 8 int32 lanes:
 * one VNNI instruction, or two (with int16 pairs that cannot overflow for
 * sprout's operands: at most 2 * 63 * 127) without. */
static inline __m256i dot_u8_i8(__m256i u, __m256i s) {
#ifdef SP_MATMUL_VNNI
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s);
#else
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
#endif
}

/* acc + dot_u8_i8(u, s), fused where VNNI can. */
static inline __m256i dot_u8_i8_acc(__m256i acc, __m256i u, __m256i s) {
#ifdef SP_MATMUL_VNNI
    return _mm256_dpbusd_epi32(acc, u, s);
#else
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)));
#endif
}


/* The unsigned 6-bit levels (0..63) of one 128-element half of a Q6_K
 * block, as four runs of 32: low nibbles of ql[0..31], of ql[32..63], high
 * nibbles of both, each with its 2 bits from qh. */
static inline void unpack_q6_K_half(const uint8_t *ql, const uint8_t *qh, __m256i q[4]) {
    const __m256i low4 = _mm256_set1_epi8(0x0F), bits45 = _mm256_set1_epi8(0x30);
    const __m256i l0 = _mm256_loadu_si256((const __m256i *)ql), l1 = _mm256_loadu_si256((const __m256i *)(ql + 32));
    const __m256i hb = _mm256_loadu_si256((const __m256i *)qh);
    /* run k's 2 bits (bits 2k, 2k+1 of hb) go to bits 4-5: one 16-bit
     * shift (none for k = 2) and a per-byte mask, which drops what the
     * shift carries across bytes */
    q[0] = _mm256_or_si256(_mm256_and_si256(l0, low4), _mm256_and_si256(_mm256_slli_epi16(hb, 4), bits45));
    q[1] = _mm256_or_si256(_mm256_and_si256(l1, low4), _mm256_and_si256(_mm256_slli_epi16(hb, 2), bits45));
    q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), low4), _mm256_and_si256(hb, bits45));
    q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), low4), _mm256_and_si256(_mm256_srli_epi16(hb, 2), bits45));
}

/* --- blocks in lanes (Q4_0, Q8_0) -------------------------------------------------------------
 * One row against a tile of tokens, eight blocks at a time, each block in
 * its own int32 lane: the eight blocks' levels are transposed (vector m
 * holds bytes 4m..4m+3 of every block) and so are the activations (once per
 * token), so eight dot-product instructions leave each block's exact sum in
 * its lane with no horizontal adds. The scales (weight times activation)
 * then multiply as one vector, the lanes accumulate along the row and one
 * fixed horizontal sum ends it. The weights are unpacked and transposed once
 * per eight blocks for all tokens. A token's arithmetic is the same whatever
 * the token count, so its output does not depend on what else is in the
 * batch, which continuous batching relies on. */

/* Lane j of the result: the sum of p[j]'s eight int32 lanes (exact), by a
 * tree of pairwise sums. Its first int16_levels levels (0 to 2) may go in
 * int16 pairs (packs, then madd with ones: fewer shuffles than vphaddd, the
 * same lanes and the same exact sums) where what they pack fits: a lane
 * holds four products of a level and an activation (-127..127,
 * quantize_activations), at most 4 * 31 * 127 = 15748 for levels up to 5
 * bits, so lanes and pairs of lanes fit (two levels); 6-bit levels reach
 * 32004, lanes only (one level); Q8_0's unsigned ones none.
 * check_extreme_sums in test_kernels.c fails where a level would overflow. */
static inline __attribute__((always_inline)) __m256i pair_sums(__m256i a, __m256i b, bool in_int16) {
    return in_int16 ? _mm256_madd_epi16(_mm256_packs_epi32(a, b), _mm256_set1_epi16(1)) : _mm256_hadd_epi32(a, b);
}

static inline __attribute__((always_inline)) __m256i sum_lanes8(const __m256i p[8], const int int16_levels) {
    __m256i q[4], r[2];
    for (int i = 0; i < 4; i++) q[i] = pair_sums(p[2 * i], p[2 * i + 1], int16_levels >= 1);
    for (int i = 0; i < 2; i++) r[i] = pair_sums(q[2 * i], q[2 * i + 1], int16_levels >= 2);
    return _mm256_add_epi32(_mm256_permute2x128_si256(r[0], r[1], 0x20), _mm256_permute2x128_si256(r[0], r[1], 0x31));
}

/* v[m] = dword m of every w[j], in lane j (an 8x8 transpose of dwords). */
static inline __attribute__((always_inline)) void transpose8x8_epi32(const __m256i w[8], __m256i v[8]) {
    __m256i t[8], u[8];
    for (int i = 0; i < 4; i++) {
        t[2 * i] = _mm256_unpacklo_epi32(w[2 * i], w[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_epi32(w[2 * i], w[2 * i + 1]);
    }
    for (int h = 0; h < 2; h++) { /* rows 0-3, then 4-7 */
        u[4 * h + 0] = _mm256_unpacklo_epi64(t[4 * h + 0], t[4 * h + 2]);
        u[4 * h + 1] = _mm256_unpackhi_epi64(t[4 * h + 0], t[4 * h + 2]);
        u[4 * h + 2] = _mm256_unpacklo_epi64(t[4 * h + 1], t[4 * h + 3]);
        u[4 * h + 3] = _mm256_unpackhi_epi64(t[4 * h + 1], t[4 * h + 3]);
    }
    for (int m = 0; m < 4; m++) {
        v[m] = _mm256_permute2x128_si256(u[m], u[4 + m], 0x20);
        v[m + 4] = _mm256_permute2x128_si256(u[m], u[4 + m], 0x31);
    }
}

/* Q8_0 levels go in as unsigned bytes (level + 128) where VNNI multiplies
 * them without saturating; without VNNI maddubs could saturate, so the
 * signs move onto the activations instead. */
#ifdef SP_MATMUL_VNNI
#define Q8_0_UNSIGNED 1
#else
#define Q8_0_UNSIGNED 0
#endif

/* acc + the dot of 8-bit levels (Q8_0's, the IQ4 formats' looked-up ones)
 * with activations: unsigned levels by VNNI, or signed levels with their
 * signs moved onto the activations (maddubs takes unsigned times signed). */
static inline __m256i byte_level_dot_acc(__m256i acc, __m256i levels, __m256i a) {
    return Q8_0_UNSIGNED ? dot_u8_i8_acc(acc, levels, a)
                         : _mm256_add_epi32(acc, dot_u8_i8(_mm256_sign_epi8(levels, levels), _mm256_sign_epi8(a, levels)));
}

/* Eight blocks of one token's activations as the lanes kernels read them:
 * levels transposed, scales and sums, side by side so that one pointer
 * reaches them all. */
typedef struct act_chunk {
    __m256i qs_t[8];
    float d[8];
    int32_t sum[8];    /* times type_sum_factor (Q6_K, Q3_K, Q2_K: of the first 16 elements) */
    int32_t sum_hi[8]; /* Q6_K, Q3_K, Q2_K: of the last 16 elements */
    float dsum[8];     /* d times the plain sum: what a min multiplies */
    int32_t sum8[32];  /* Q6_K alone (wants_run_sums): times type_sum_factor, of each run of 8, where q6_K_in_order_sums adds them */
} act_chunk;
_Static_assert(sizeof(act_chunk) % 64 == 0, "chunks start on cache lines");

/* How a chunk's qs_t holds its eight blocks' levels: transposed (vector m
 * holds bytes 4m..4m+3 of every block); for one token with VNNI, Q8_0's
 * blocks j and j + 4 side by side (q8_0_chunk_sums); for the one-token
 * paths that take whole blocks in element order, block j in vector j. */
typedef enum act_order { ACT_TRANSPOSED, ACT_PAIRED, ACT_IN_ORDER } act_order;

/* How a lone token's chunks hold its levels: as its type's one-token
 * path reads them (blocks8_chunk transposes Q4_0's and IQ4_NL's). Token
 * groups of one are lone tokens (matmul_int8), so that the order is a
 * constant in each kernel's copy. */
static inline act_order one_token_order(sprout_type type) {
    if (type == SPROUT_TYPE_Q4_0 || type == SPROUT_TYPE_IQ4_NL) return ACT_TRANSPOSED;
    if (Q8_0_UNSIGNED && (type == SPROUT_TYPE_Q4_K || type == SPROUT_TYPE_Q5_K))
        return ACT_TRANSPOSED; /* affine_k_lane_parts */
    return type == SPROUT_TYPE_Q8_0 && Q8_0_UNSIGNED ? ACT_PAIRED : ACT_IN_ORDER;
}

/* Whether a lone token's chunks carry the sums of runs of 8 (act_chunk.sum8). */
static inline bool wants_run_sums(sprout_type type) { return Q8_0_UNSIGNED && type == SPROUT_TYPE_Q6_K; }

/* A tile's activations: the blocks, and their chunks (nb rounded up to 8,
 * the padding zero) chunk-major, so that the tokens of a group sit at
 * constant distances from one pointer (kept in registers, not in memory). */
typedef struct act_tile {
    const act_block *blocks; /* token t's at t * nb */
    act_chunk *chunks; /* chunk c of token t at c * CHUNK_ROW + t */
    int64_t nb, nb8;
} act_tile;

/* A row of chunks holds the tile's tokens and one chunk of padding: rows a
 * multiple of 4 KiB apart would put every chunk of a token in the same L1
 * sets. */
#define CHUNK_ROW (TOKEN_TILE + 1)

static inline const act_chunk *act_chunk_of(const act_tile *at, int64_t t, int64_t b) { return at->chunks + (b / 8) * CHUNK_ROW + t; }

/* The levels of block b + j (b a multiple of 8) of token t in element
 * order, for a kernel's copy for G tokens: a lone token's from its chunk
 * (one_token_order: in order, or Q8_0's pairs), at constant offsets on
 * cache lines (a block's 32 bytes at its 40-byte stride straddle two
 * lines every other time, and such a load costs two); else from the
 * blocks. */
static inline __attribute__((always_inline)) __m256i block_levels(sprout_type type, const int G, const act_tile *at, int64_t t, int64_t b,
                                                                  int j) {
    if (G == 1 && one_token_order(type) != ACT_TRANSPOSED) {
        const int v = one_token_order(type) == ACT_PAIRED ? (j < 4 ? 2 * j : 2 * (j - 4) + 1) : j;
        return _mm256_load_si256(act_chunk_of(at, t, b)->qs_t + v);
    }
    return _mm256_loadu_si256((const __m256i *)at->blocks[t * at->nb + b + j].qs);
}

/* The chunks [c0, c1) of a row that one call covers: rows wider than
 * SPAN_CHUNKS chunks are done in spans, so that a token group's
 * activations for the span stay in L1 while the rows pass. Between spans
 * the accumulators wait in `state` (TOKEN_GROUP for the scales' terms, then
 * TOKEN_GROUP for the mins'), stored exactly, so a token's arithmetic is the
 * same whatever the spans. */
typedef struct k_span {
    int64_t c0, c1;
    bool first, last;
    __m256 *state;
} k_span;

/* One token's chunk asks for the lines SP_DECODE_AHEAD bytes further on
 * as it starts (kernels.h). */
static inline __attribute__((always_inline)) void decode_prefetch(const uint8_t *chunk, size_t bytes) {
    for (size_t k = 0; k < bytes; k += 64) _mm_prefetch((const char *)chunk + SP_DECODE_AHEAD + k, _MM_HINT_T0);
}

/* Chunks of one token a span may hold: 8 tokens' chunks of 2048 elements
 * (32 KiB), or one token's of 16384. */
#define SPAN_TOKEN_CHUNKS 64

/* Blocks [b, b + nv) of a row (nv <= 8), levels transposed into v[0..8)
 * (zero past nv; Q8_0 may leave them as they are), and their eight scales. Shuffles are the scarce
 * resource here: Q4_0's packed halves are transposed before the nibbles
 * are split, a 4x4 transpose per 128-bit lane instead of an 8x8 one. */
/* Unsigned levels of a packed block in element order (0..15 the low
 * nibbles, 16..31 the high ones), with bit i of qh (if any) as element i's
 * fifth bit: for one or two tokens, cheaper than the transposed layout. */
static inline __m256i unpack_packed_levels(const uint8_t *qs, const uint8_t *qh) {
    const __m128i packed = _mm_loadu_si128((const __m128i *)qs);
    __m256i q = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(packed, 4), packed), _mm256_set1_epi8(0x0F));
    if (qh) {
        /* byte i takes byte i/8 of qh, keeps bit i%8, and turns it into 16 */
        uint32_t bits;
        memcpy(&bits, qh, 4);
        const __m256i spread = _mm256_shuffle_epi8(_mm256_set1_epi32((int)bits),
                                                   _mm256_setr_epi64x(0, 0x0101010101010101ll, 0x0202020202020202ll,
                                                                      0x0303030303030303ll));
        const __m256i mask = _mm256_set1_epi64x((long long)0x8040201008040201ull);
        const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(spread, mask), mask);
        q = _mm256_or_si256(q, _mm256_and_si256(set, _mm256_set1_epi8(16)));
    }
    return q;
}

/* IQ4_NL's 16 levels in both lanes, as the int8 paths take them: plus 128
 * (unsigned) where VNNI multiplies them, signed where the signs move onto
 * the activations (as Q8_0's). */
static inline __m256i iq4_levels(void) {
    const __m128i signed_levels = _mm_loadu_si128((const __m128i *)sp_iq4_levels);
    const __m128i levels = Q8_0_UNSIGNED ? _mm_xor_si128(signed_levels, _mm_set1_epi8((char)0x80)) : signed_levels;
    return _mm256_broadcastsi128_si256(levels);
}

/* Where the parts of a 32-element block are: its size, its packed nibbles,
 * its fifth bits (-1: none) and its min (-1: none); the scale d comes first. */
typedef struct block_layout {
    size_t bytes, qs;
    int qh, m;
} block_layout;

static inline block_layout layout_of(sprout_type type) {
    switch (type) {
    case SPROUT_TYPE_Q4_0: return (block_layout){sizeof(sp_block_q4_0), offsetof(sp_block_q4_0, qs), -1, -1};
    case SPROUT_TYPE_IQ4_NL: return (block_layout){sizeof(sp_block_iq4_nl), offsetof(sp_block_iq4_nl, qs), -1, -1};
    case SPROUT_TYPE_Q4_1: return (block_layout){sizeof(sp_block_q4_1), offsetof(sp_block_q4_1, qs), -1, (int)offsetof(sp_block_q4_1, m)};
    case SPROUT_TYPE_Q5_0:
        return (block_layout){sizeof(sp_block_q5_0), offsetof(sp_block_q5_0, qs), (int)offsetof(sp_block_q5_0, qh), -1};
    case SPROUT_TYPE_Q5_1:
        return (block_layout){sizeof(sp_block_q5_1), offsetof(sp_block_q5_1, qs), (int)offsetof(sp_block_q5_1, qh),
                              (int)offsetof(sp_block_q5_1, m)};
    default: return (block_layout){sizeof(sp_block_q8_0), offsetof(sp_block_q8_0, qs), -1, -1};
    }
}

static inline __m256 gather_halves8(const uint16_t h[8]) {
    /* gathered in registers: eight 2-byte stores and a wide reload would stall */
    return _mm256_cvtph_ps(_mm_setr_epi16((short)h[0], (short)h[1], (short)h[2], (short)h[3], (short)h[4], (short)h[5], (short)h[6],
                                          (short)h[7]));
}

/* The scales (each block's first half) of blocks [b, b + nv) of a row
 * (nv <= 8; zero past nv). */
static inline __attribute__((always_inline)) __m256 block_scales8(sprout_type type, const uint8_t *row, int64_t b, int nv) {
    const size_t block_bytes = layout_of(type).bytes;
#ifdef SP_MATMUL_VNNI
    if ((type == SPROUT_TYPE_Q4_0 || type == SPROUT_TYPE_IQ4_NL) && nv == 8) {
        /* a whole Q4_0 (IQ4_NL) chunk's scales lie in its first 128 bytes, at words
         * 9j: one two-source word permute of two loads gathers them */
        static const uint16_t at_9j[32] __attribute__((aligned(64))) = {0, 9, 18, 27, 36, 45, 54, 63};
        const uint8_t *chunk = row + (size_t)b * block_bytes;
        const __m512i words = _mm512_permutex2var_epi16(_mm512_loadu_si512(chunk), _mm512_load_si512(at_9j), _mm512_loadu_si512(chunk + 64));
        return _mm256_cvtph_ps(_mm512_castsi512_si128(words));
    }
#endif
    uint16_t d16[8] = {0};
    for (int j = 0; j < 8; j++)
        if (j < nv) memcpy(&d16[j], row + (size_t)(b + j) * block_bytes, sizeof d16[j]);
    return gather_halves8(d16);
}

/* Blocks [b, b + nv) of a row (nv <= 8), levels as unsigned bytes
 * transposed into v[0..8) (zero past nv; Q8_0 may leave them as they are),
 * their eight scales returned and (Q4_1, Q5_1) their mins in *mw. */
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
        if (type == SPROUT_TYPE_IQ4_NL) /* the nibbles index the format's levels */
            for (int m = 0; m < 8; m++) v[m] = _mm256_shuffle_epi8(iq4_levels(), v[m]);
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
    const bool byte_levels = type == SPROUT_TYPE_Q8_0 || type == SPROUT_TYPE_IQ4_NL; /* 8-bit: signed without VNNI */
    const bool has_min = layout_of(type).m >= 0, has_offset = !has_min && (!byte_levels || Q8_0_UNSIGNED);
    /* with an offset, c->sum is minus the offset times the activations' sums: the correction starts the sum */
    const __m256i asum = _mm256_loadu_si256((const __m256i *)c->sum);
    __m256i sums;
    if (transposed) {
        __m256i part[2] = {has_offset ? asum : _mm256_setzero_si256(), _mm256_setzero_si256()}; /* two chains: half the latency */
        for (int m = 0; m < 8; m++) {
            const __m256i ym = _mm256_loadu_si256(y + m);
            part[m & 1] = byte_levels ? byte_level_dot_acc(part[m & 1], v[m], ym) : dot_u8_i8_acc(part[m & 1], v[m], ym);
        }
        sums = _mm256_add_epi32(part[0], part[1]);
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

#ifdef SP_MATMUL_VNNI
/* v's two 256-bit halves added: lane j, lanes j and j + 8 of v (the
 * one-token lane kernels' partial sums of dwords m and m + 1, or of a
 * block's two halves). */
static inline __m256i add_halves(__m512i v) { return _mm256_add_epi32(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1)); }

/* One token against a whole chunk of eight Q4_0 (IQ4_NL) blocks, in 512-bit
 * registers: the exact block sums, as accumulate_blocks8 forms them
 * (lane j, block j, the offset's sum first), in fewer instructions than
 * its 256-bit transposes (in L2 only 15.1 -> 16.4 GB/s; inferred, not
 * measured: with 512-bit work in flight two ports take vector work, not
 * three). Masked dword permutes gather the chunk's packed levels
 * already transposed, dwords of four levels from eight blocks side by
 * side: block j's dword m is at byte 18 j + 2 + 4 m, on a 4-byte boundary
 * 2 bytes into the chunk for even j (dword 9 j / 2 + m from there), 16
 * bytes in for odd j (dword (9 j - 7) / 2 + m): two 128-byte windows,
 * one two-source permute each (the second reaches byte 143, the chunk's
 * last; a window at the start left block 7 to a third permute). Lanes 0-7
 * hold dword m of each block, lanes 8-15 dword m + 1: the transposed
 * activations of m and m + 1 are one load. */
static inline __attribute__((always_inline)) __m256i packed_chunk_sums(sprout_type type, const uint8_t *chunk, const act_chunk *c) {
#define FROM_EVEN(m) (m), 0, 9 + (m), 0, 18 + (m), 0, 27 + (m), 0
#define FROM_ODD(m) 0, 1 + (m), 0, 10 + (m), 0, 19 + (m), 0, 28 + (m)
    static const int32_t even01[16] __attribute__((aligned(64))) = {FROM_EVEN(0), FROM_EVEN(1)};
    static const int32_t even23[16] __attribute__((aligned(64))) = {FROM_EVEN(2), FROM_EVEN(3)};
    static const int32_t odd01[16] __attribute__((aligned(64))) = {FROM_ODD(0), FROM_ODD(1)};
    static const int32_t odd23[16] __attribute__((aligned(64))) = {FROM_ODD(2), FROM_ODD(3)};
#undef FROM_EVEN
#undef FROM_ODD
    const __mmask16 even = 0x5555, odd = 0xAAAA;
    const __m512i lo_b = _mm512_loadu_si512(chunk + 2), hi_b = _mm512_loadu_si512(chunk + 66);
    const __m512i lo_c = _mm512_loadu_si512(chunk + 16), hi_c = _mm512_loadu_si512(chunk + 80);
    __m512i packed[2];
    packed[0] = _mm512_or_si512(_mm512_maskz_permutex2var_epi32(even, lo_b, _mm512_load_si512(even01), hi_b),
                                _mm512_maskz_permutex2var_epi32(odd, lo_c, _mm512_load_si512(odd01), hi_c));
    packed[1] = _mm512_or_si512(_mm512_maskz_permutex2var_epi32(even, lo_b, _mm512_load_si512(even23), hi_b),
                                _mm512_maskz_permutex2var_epi32(odd, lo_c, _mm512_load_si512(odd23), hi_c));
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
#endif

#ifdef SP_MATMUL_VNNI
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
#endif

/* Chunk c (blocks 8c to 8c + 7) of one row against G tokens from t0 (G
 * constant in each copy, so the accumulators stay in registers). */
static inline __attribute__((always_inline)) void blocks8_chunk(sprout_type type, const uint8_t *row, const act_tile *at, int64_t t0,
                                                                const int G, int64_t c, __m256 acc[], __m256 macc[]) {
    const int64_t nb = at->nb, b = 8 * c;
    /* for one or two tokens the transposes cost more shuffles than they
     * save, except Q4_0's, whose is cheap (the block sums are the same
     * integers either way) */
    const bool transpose = type == SPROUT_TYPE_Q4_0 || type == SPROUT_TYPE_IQ4_NL || G > 2;
    if (G == 1) decode_prefetch(row + (size_t)b * layout_of(type).bytes, 8 * layout_of(type).bytes);
#ifdef SP_MATMUL_VNNI
    /* one token, a whole chunk: the 512-bit kernels of Q4_0 (IQ4_NL) and of Q8_0 (paired activations) */
    const bool packed = type == SPROUT_TYPE_Q4_0 || type == SPROUT_TYPE_IQ4_NL, paired_q8_0 = one_token_order(type) == ACT_PAIRED;
    if (G == 1 && (packed || paired_q8_0) && nb - b >= 8) {
        const uint8_t *chunk = row + (size_t)b * layout_of(type).bytes;
        const act_chunk *ac = act_chunk_of(at, t0, b);
        const __m256i sums = packed ? packed_chunk_sums(type, chunk, ac) : q8_0_chunk_sums(chunk, ac);
        const __m256 scales = packed ? block_scales8(type, row, b, 8) : q8_0_chunk_scales(chunk);
        acc[0] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums), _mm256_mul_ps(scales, _mm256_loadu_ps(ac->d)), acc[0]);
        return;
    }
#endif
    __m256i v[8];
    __m256 mw = _mm256_setzero_ps();
    /* whole chunks with a constant count, so that its per-block checks fold away */
    const __m256 dw = nb - b >= 8 ? load_blocks8(type, row, b, 8, transpose, v, &mw) : load_blocks8(type, row, b, (int)(nb - b), transpose, v, &mw);
    UNROLL_GROUP
    for (int k = 0; k < G; k++) acc[k] = accumulate_blocks8(type, G, v, dw, mw, at, t0 + k, b, transpose, acc[k], &macc[k]);
}

/* Token t's activations in the given order (act_order), with its scales and
 * offset-weighted sums (offset: what the weight type adds to its levels),
 * of halves of blocks (split_sums) and of runs of 8 (run_sums8). */
static void prepare_act_tile(act_tile *at, act_order order, int64_t t, int sum_factor, bool split_sums, bool run_sums8) {
    const act_block *blocks = at->blocks + t * at->nb;
    for (int64_t b = 0; b < at->nb8; b += 8) {
        __m256i q[8];
        for (int j = 0; j < 8; j++)
            q[j] = b + j < at->nb ? _mm256_loadu_si256((const __m256i *)blocks[b + j].qs) : _mm256_setzero_si256();
        __m256i v[8];
        if (order == ACT_PAIRED)
            for (int j = 0; j < 4; j++) v[2 * j] = q[j], v[2 * j + 1] = q[j + 4];
        else if (order == ACT_IN_ORDER)
            for (int j = 0; j < 8; j++) v[j] = q[j];
        else transpose8x8_epi32(q, v);
        act_chunk *c = at->chunks + (b / 8) * CHUNK_ROW + t;
        for (int m = 0; m < 8; m++) _mm256_storeu_si256(c->qs_t + m, v[m]);
        const int n_real = at->nb - b < 8 ? (int)(at->nb - b) : 8;
        for (int j = 0; j < n_real; j++) {
            const act_block *blk = blocks + b + j;
            c->d[j] = blk->d;
            c->sum[j] = sum_factor * (split_sums ? blk->sum[0] : blk->sum[0] + blk->sum[1]);
            c->sum_hi[j] = split_sums ? sum_factor * blk->sum[1] : 0;
            c->dsum[j] = blk->d * (float)(blk->sum[0] + blk->sum[1]);
        }
        for (int j = n_real; j < 8; j++) c->d[j] = c->dsum[j] = 0.f, c->sum[j] = c->sum_hi[j] = 0;
        if (run_sums8) {
            /* the sums of the runs of 8 (unsigned sums of the bytes plus
             * 128 less 8 * 128), each where q6_K_in_order_sums has its pair
             * sum: dword 16h + 4m + 2a + p holds run 16h + 8a + 2m + p
             * (elements 128h + 64a + 16m + 8p on) */
            int64_t run_sums[32];
            for (int j = 0; j < 8; j++)
                _mm256_storeu_si256((__m256i *)(run_sums + 4 * j), _mm256_sad_epu8(_mm256_xor_si256(q[j], _mm256_set1_epi8((char)0x80)), _mm256_setzero_si256()));
            for (int i = 0; i < 32; i++) {
                const int run = (i & 16) | (i & 2) << 2 | (i & 12) >> 1 | (i & 1);
                c->sum8[i] = sum_factor * (int32_t)(run_sums[run] - 8 * 128);
            }
        }
    }
}


/* One token against a K-quant super-block's eight runs of 32 levels in
 * element order (lv): p[j] holds run j's products summed in fours, for a
 * horizontal sum to finish (the one-token path, without the transposes). */
static inline __attribute__((always_inline)) void super_block_dots(sprout_type type, const __m256i lv[8], const act_tile *at, int64_t t, int64_t b,
                                                                   __m256i p[8]) {
    for (int j = 0; j < 8; j++) p[j] = dot_u8_i8(lv[j], block_levels(type, 1, at, t, 8 * b, j));
}

/* Bit `from` of every byte of v, moved to bit `to` (the rest zero): a
 * 16-bit shift, whose carries across bytes the mask drops. */
static inline __attribute__((always_inline)) __m256i bit_to(__m256i v, const int from, const int to) {
    const __m256i moved = from < to ? _mm256_slli_epi16(v, to - from) : from > to ? _mm256_srli_epi16(v, from - to) : v;
    return _mm256_and_si256(moved, _mm256_set1_epi8((char)(1 << to)));
}

/* The eight 6-bit scales (bytes 0-7) and mins (bytes 8-15) of a K-quant
 * super-block's 12 packed bytes, as sp_q4k_scale_min unpacks them one by
 * one: two byte shuffles place the low parts and the top two bits; two
 * super-blocks at once, one per 128-bit lane (callers load 16 bytes, 4
 * past the scales, still inside the block). */
static inline __m256i k_scales_mins2(__m256i x) {
    /* scales 0-3: b0-3 & 63; 4-7: b8-11 & 15; mins 0-3: b4-7 & 63; 4-7: b8-11 >> 4 */
    const __m256i lo_src = _mm256_shuffle_epi8(x, _mm256_broadcastsi128_si256(_mm_setr_epi8(0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 8, 9, 10, 11)));
    const __m256i lo_mask = _mm256_broadcastsi128_si256(_mm_setr_epi8(63, 63, 63, 63, 15, 15, 15, 15, 63, 63, 63, 63, 0, 0, 0, 0));
    const __m256i upper_nibbles =
        _mm256_and_si256(_mm256_srli_epi16(lo_src, 4), _mm256_broadcastsi128_si256(_mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 15, 15, 15, 15)));
    const __m256i low = _mm256_or_si256(_mm256_and_si256(lo_src, lo_mask), upper_nibbles);
    /* scales 4-7 take b0-3's top two bits as bits 4-5, mins 4-7 b4-7's */
    const __m256i hi_src = _mm256_shuffle_epi8(x, _mm256_broadcastsi128_si256(_mm_setr_epi8(-1, -1, -1, -1, 0, 1, 2, 3, -1, -1, -1, -1, 4, 5, 6, 7)));
    return _mm256_or_si256(low, _mm256_srli_epi16(_mm256_and_si256(hi_src, _mm256_set1_epi8((char)0xC0)), 2));
}

static inline __m128i k_scales_mins(const uint8_t *scales) {
    return _mm256_castsi256_si128(k_scales_mins2(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)scales))));
}


#ifdef SP_MATMUL_VNNI
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
#define PAIRS(m) (m), (m), 8 + (m), 8 + (m), 16 + (m), 16 + (m), 24 + (m), 24 + (m)
    static const int32_t gather[4][16] __attribute__((aligned(64))) = {
        {PAIRS(0), PAIRS(1)}, {PAIRS(2), PAIRS(3)}, {PAIRS(4), PAIRS(5)}, {PAIRS(6), PAIRS(7)}};
#undef PAIRS
    const __m512i nibble_shift = _mm512_set_epi32(4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0);
    const __m512i fifth_bit_turn = _mm512_set_epi32(29, 30, 31, 0, 1, 2, 3, 4, 29, 30, 31, 0, 1, 2, 3, 4);
    const __m512i low4 = _mm512_set1_epi8(0x0F), bit4 = _mm512_set1_epi8(0x10);
    const __m512i nibble_mask = _mm512_sllv_epi32(low4, nibble_shift); /* each lane's nibbles where they lie */
    const __m512i lo = _mm512_loadu_si512(qs), hi = _mm512_loadu_si512(qs + 64);
    const __m512i hb = qh ? _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)qh)) : _mm512_setzero_si512();
    __m512i part[2] = {_mm512_setzero_si512(), _mm512_setzero_si512()};
    for (int h = 0; h < 4; h++) {
        const __m512i dwords = _mm512_permutex2var_epi32(lo, _mm512_load_si512(gather[h]), hi);
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
#endif

/* Q4_K and Q5_K in the same layout: a super-block's eight sub-blocks of 32
 * are the eight lanes (sub-block 2i is the low nibbles of qs[32i..], 2i+1
 * the high ones, Q5_K's fifth bits from qh), so after one 8x8 transpose of
 * the levels (one token: affine_k_lane_parts with VNNI, horizontal sums
 * without), eight vpdpbusd give every sub-block's sum; scales and mins
 * then apply as vectors: sum(x*a) = d*sc*ad*sum(q*qa) - dmin*m*ad*sum(qa). */
static inline __attribute__((always_inline)) void affine_k_chunk(sprout_type type, const uint8_t *row, const act_tile *at, int64_t t0,
                                                                 const int G, int64_t b, __m256 acc[], __m256 macc[]) {
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    const size_t block_bytes = type == SPROUT_TYPE_Q5_K ? sizeof(sp_block_q5_K) : sizeof(sp_block_q4_K);
    if (G == 1) decode_prefetch(row + (size_t)b * block_bytes, block_bytes);
    const sp_affine_k_block blk = sp_affine_k_block_at(type == SPROUT_TYPE_Q5_K, row, b);
    const uint16_t d16 = blk.d, dmin16 = blk.dmin;
    const uint8_t *scales = blk.scales, *qs = blk.qs, *qh = blk.qh;
    const __m128i sm = k_scales_mins(scales);
    /* d and dmin side by side, widened once: [d, dmin] in every pair of lanes */
    const __m256 d_dmin = _mm256_cvtph_ps(_mm_set1_epi32((int)((uint32_t)d16 | (uint32_t)dmin16 << 16)));
    const __m256 dsc = _mm256_mul_ps(_mm256_moveldup_ps(d_dmin), _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(sm)));
    const __m256 dm = _mm256_mul_ps(_mm256_movehdup_ps(d_dmin), _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(sm, 8))));
#ifdef SP_MATMUL_VNNI
    if (G == 1) {
        const act_chunk *c = act_chunk_of(at, t0, 8 * b);
        const __m256i sums = add_halves(affine_k_lane_parts(qs, qh, c));
        acc[0] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums), _mm256_mul_ps(dsc, _mm256_loadu_ps(c->d)), acc[0]);
        macc[0] = _mm256_fmadd_ps(dm, _mm256_loadu_ps(c->dsum), macc[0]);
        return;
    }
#endif
    __m256i lv[8], v[8];
    const __m256i hb = qh ? _mm256_loadu_si256((const __m256i *)qh) : _mm256_setzero_si256();
    for (int i = 0; i < 4; i++) {
        const __m256i q = _mm256_loadu_si256((const __m256i *)(qs + 32 * i));
        lv[2 * i] = _mm256_and_si256(q, low4);
        lv[2 * i + 1] = _mm256_and_si256(_mm256_srli_epi16(q, 4), low4);
        if (qh) /* sub-block j's bit (bit j of hb) to bit 4: one 16-bit shift and a per-byte mask */
            for (int h = 0; h < 2; h++) lv[2 * i + h] = _mm256_or_si256(lv[2 * i + h], bit_to(hb, 2 * i + h, 4));
    }
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
            __m256i part[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
            for (int j = 0; j < 8; j++) part[j & 1] = dot_u8_i8_acc(part[j & 1], v[j], _mm256_loadu_si256(y + j));
            sums = _mm256_add_epi32(part[0], part[1]);
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

#ifdef SP_MATMUL_VNNI
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
#endif

/* An IQ4_XS block's eight sub-block scales (ls - 32, as sp_iq4_xs_scale
 * unpacks them one by one), lane j sub-block j: the low nibbles by a byte
 * shuffle and per-lane shifts, the top bits likewise from scales_h. */
static inline __m256i iq4_xs_scales(const sp_block_iq4_xs *blk) {
    uint32_t low_bytes;
    memcpy(&low_bytes, blk->scales_l, sizeof low_bytes);
    const __m128i pairs = _mm_shuffle_epi8(_mm_cvtsi32_si128((int)low_bytes), _mm_setr_epi8(0, 0, 1, 1, 2, 2, 3, 3, -1, -1, -1, -1, -1, -1, -1, -1));
    const __m256i low = _mm256_srlv_epi32(_mm256_cvtepu8_epi32(pairs), _mm256_setr_epi32(0, 4, 0, 4, 0, 4, 0, 4));
    const __m256i high = _mm256_srlv_epi32(_mm256_set1_epi32(blk->scales_h), _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14));
    const __m256i ls = _mm256_or_si256(_mm256_and_si256(low, _mm256_set1_epi32(0x0F)), _mm256_slli_epi32(_mm256_and_si256(high, _mm256_set1_epi32(3)), 4));
    return _mm256_sub_epi32(ls, _mm256_set1_epi32(32));
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
    __m256i lv[8], v[8];
    for (int j = 0; j < 8; j++) {
        const __m128i q = _mm_loadu_si128((const __m128i *)(blk->qs + 16 * j));
        const __m256i nibbles = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(q, 4), q), low4);
        lv[j] = _mm256_shuffle_epi8(levels, nibbles);
    }
    const bool transposed = G > 1;
    if (transposed) transpose8x8_epi32(lv, v);
    const __m256 dsc = _mm256_mul_ps(_mm256_set1_ps(_cvtsh_ss(blk->d)), _mm256_cvtepi32_ps(iq4_xs_scales(blk)));
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
            for (int j = 0; j < 8; j++) p[j] = byte_level_dot_acc(_mm256_setzero_si256(), lv[j], block_levels(SPROUT_TYPE_IQ4_XS, 1, at, t0 + k, 8 * b, j));
            sums = _mm256_add_epi32(sum_lanes8(p, 0), offset);
        }
        const __m256 ad = _mm256_loadu_ps(c->d);
        acc[k] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums), _mm256_mul_ps(dsc, ad), acc[k]);
    }
}


/* A super-block of the K-quants with a scale per 16 elements (Q6_K, Q3_K,
 * Q2_K): its eight sub-blocks' unsigned levels in element order, the
 * integer scales of their first and last 16 elements (lane j: sub-block
 * j), Q2_K's mins likewise, and d (dmin). */
typedef struct split_k_block {
    __m256i lv[8], sc_lo, sc_hi, min_lo, min_hi;
    __m256 d, dmin;
} split_k_block;

/* Q3_K's 16 scales (as sp_q3k_unpack_scales gives them) in one vector:
 * low nibbles from bytes 0-7, then their high nibbles; the top two bits of
 * scale 4k + i are bits 2k, 2k + 1 of byte 8 + i. */
static inline __m128i q3_K_scales(const uint8_t *q) {
    const __m128i low4 = _mm_set1_epi8(0x0F), x = _mm_loadl_epi64((const __m128i *)q);
    const __m128i lo = _mm_unpacklo_epi64(_mm_and_si128(x, low4), _mm_and_si128(_mm_srli_epi16(x, 4), low4));
    uint32_t top;
    memcpy(&top, q + 8, sizeof top);
    const __m128i hi = _mm_and_si128(_mm_srlv_epi32(_mm_set1_epi32((int)top), _mm_setr_epi32(0, 2, 4, 6)), _mm_set1_epi8(3));
    return _mm_sub_epi8(_mm_or_si128(lo, _mm_slli_epi16(hi, 4)), _mm_set1_epi8(32));
}

static inline __attribute__((always_inline)) void split_k_unpack(sprout_type type, const uint8_t *row, int64_t b, split_k_block *k) {
    /* even bytes (first halves) to the low 8 bytes, odd to the high */
    const __m128i split = _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
    const __m256i two_bits = _mm256_set1_epi8(0x03);
    __m128i sc;
    if (type == SPROUT_TYPE_Q6_K) {
        const sp_block_q6_K *w = (const sp_block_q6_K *)row + b;
        unpack_q6_K_half(w->ql, w->qh, k->lv);
        unpack_q6_K_half(w->ql + 64, w->qh + 32, k->lv + 4);
        sc = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)w->scales), split);
        k->d = _mm256_set1_ps(_cvtsh_ss(w->d));
    } else if (type == SPROUT_TYPE_Q3_K) {
        /* sub-block 4h + j: bits 2j of qs[32h..], bit 4h + j of hmask as 4 */
        const sp_block_q3_K *w = (const sp_block_q3_K *)row + b;
        const __m256i hm = _mm256_loadu_si256((const __m256i *)w->hmask);
        for (int h = 0; h < 2; h++) {
            const __m256i q = _mm256_loadu_si256((const __m256i *)(w->qs + 32 * h));
            for (int j = 0; j < 4; j++)
                k->lv[4 * h + j] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q, 2 * j), two_bits), bit_to(hm, 4 * h + j, 2));
        }
        sc = _mm_shuffle_epi8(q3_K_scales(w->scales), split);
        k->d = _mm256_set1_ps(_cvtsh_ss(w->d));
    } else { /* Q2_K: sub-block 4h + j, bits 2j of qs[32h..]; scales in the low nibbles, mins in the high */
        const sp_block_q2_K *w = (const sp_block_q2_K *)row + b;
        for (int h = 0; h < 2; h++) {
            const __m256i q = _mm256_loadu_si256((const __m256i *)(w->qs + 32 * h));
            for (int j = 0; j < 4; j++) k->lv[4 * h + j] = _mm256_and_si256(_mm256_srli_epi16(q, 2 * j), two_bits);
        }
        const __m128i bytes = _mm_loadu_si128((const __m128i *)w->scales), low4 = _mm_set1_epi8(0x0F);
        sc = _mm_shuffle_epi8(_mm_and_si128(bytes, low4), split);
        const __m128i mins = _mm_shuffle_epi8(_mm_and_si128(_mm_srli_epi16(bytes, 4), low4), split);
        k->min_lo = _mm256_cvtepu8_epi32(mins), k->min_hi = _mm256_cvtepu8_epi32(_mm_srli_si128(mins, 8));
        k->d = _mm256_set1_ps(_cvtsh_ss(w->d)), k->dmin = _mm256_set1_ps(_cvtsh_ss(w->dmin));
    }
    k->sc_lo = _mm256_cvtepi8_epi32(sc), k->sc_hi = _mm256_cvtepi8_epi32(_mm_srli_si128(sc, 8));
}

#ifdef SP_MATMUL_VNNI
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
#endif

/* Q6_K, Q3_K and Q2_K in lanes: the eight activation blocks of a
 * super-block are the lanes; their first and last 16 elements have a scale
 * each, so the level sums are kept per half (vectors 0-3 hold elements
 * 0..15 of every block, 4-7 elements 16..31), scaled in integer, with the
 * offset (Q6_K -32, Q3_K -4) taken off through the activations' half sums:
 * sum(x*a) = d*ad*sum(sc*(q-offset)*qa); Q2_K's mins meet those half sums
 * in integer too: - dmin*ad*sum(m*sum(qa)). */
static inline __attribute__((always_inline)) void split_k_chunk(sprout_type type, const uint8_t *row, const act_tile *at, int64_t t0,
                                                                const int G, int64_t b, __m256 acc[], __m256 macc[]) {
    const bool with_mins = type == SPROUT_TYPE_Q2_K;
    const size_t block_bytes = type == SPROUT_TYPE_Q6_K   ? sizeof(sp_block_q6_K)
                               : type == SPROUT_TYPE_Q3_K ? sizeof(sp_block_q3_K)
                                                          : sizeof(sp_block_q2_K);
    if (G == 1) decode_prefetch(row + (size_t)b * block_bytes, block_bytes);
#ifdef SP_MATMUL_VNNI
    if (G == 1 && type == SPROUT_TYPE_Q6_K) {
        const sp_block_q6_K *w = (const sp_block_q6_K *)row + b;
        const act_chunk *c = act_chunk_of(at, t0, 8 * b);
        const __m256i sums = q6_K_in_order_sums(w, c);
        acc[0] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums), _mm256_mul_ps(_mm256_set1_ps(_cvtsh_ss(w->d)), _mm256_loadu_ps(c->d)), acc[0]);
        return;
    }
#endif
    split_k_block k;
    split_k_unpack(type, row, b, &k);
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
            for (int m = 0; m < 4; m++) {
                lo = dot_u8_i8_acc(lo, v[m], _mm256_loadu_si256(y + m));
                hi = dot_u8_i8_acc(hi, v[m + 4], _mm256_loadu_si256(y + m + 4));
            }
        } else {
            /* lanes 0-3 of block j's dot hold its first 16 elements, 4-7 its last:
             * two levels of pairwise adds leave [first halves | last halves] of
             * four blocks per vector */
            __m256i p[8];
            super_block_dots(type, k.lv, at, t0 + t, b, p);
            const __m256i h0 = _mm256_hadd_epi32(pair_sums(p[0], p[1], true), pair_sums(p[2], p[3], true));
            const __m256i h1 = _mm256_hadd_epi32(pair_sums(p[4], p[5], true), pair_sums(p[6], p[7], true));
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


/* A row's bytes of chunks [c0, c1), asked for two rows before it is
 * needed: with a few tokens the weights stream from memory at the pace
 * of the arithmetic, and the hardware prefetcher alone leaves gaps. */
static inline void prefetch_span(const uint8_t *row, int64_t c0, int64_t c1, size_t chunk_bytes, size_t row_bytes) {
    const size_t begin = (size_t)c0 * chunk_bytes, end = (size_t)c1 * chunk_bytes < row_bytes ? (size_t)c1 * chunk_bytes : row_bytes;
    for (size_t at = begin; at < end; at += 64) _mm_prefetch((const char *)row + at, _MM_HINT_T0);
}

/* What the activations' block sums are multiplied by for a type: minus
 * what its kernel adds to the levels to make them unsigned (the sums then
 * start the dot products), or 1 where the mins use the plain sums. */
static int type_sum_factor(sprout_type type) {
    switch (type) {
    case SPROUT_TYPE_Q4_0: return -8;
    case SPROUT_TYPE_Q5_0: return -16;
    case SPROUT_TYPE_Q8_0:
    case SPROUT_TYPE_IQ4_NL:
    case SPROUT_TYPE_IQ4_XS: return Q8_0_UNSIGNED ? -128 : 0;
    case SPROUT_TYPE_Q6_K: return -32; /* per 16-element half */
    case SPROUT_TYPE_Q3_K: return -4;  /* per 16-element half */
    default: return 1; /* Q4_1, Q5_1, Q4_K, Q5_K; Q2_K per half */
    }
}

/* Where a span of a block of rows goes: rows [o0, o1) of the weight, the
 * span [c0, c1) of their n_chunks chunks, the accumulators kept between
 * spans (one entry per row), and the outputs, written on the last span. */
typedef struct row_span {
    const sp_weight *w;
    int64_t o0, o1, c0, c1, n_chunks;
    __m256 (*state)[2 * TOKEN_GROUP]; /* NULL: a single span keeps nothing */
    bool prefetch; /* rows two ahead, up to o_end */
    int64_t o_end;
    size_t chunk_bytes;
    float *y; /* token 0's output row */
    int64_t y_stride;
} row_span;

/* Chunk c of a row (eight blocks, or one K-quant super-block) against G
 * tokens from t0: the scales' terms into acc, the mins' into macc. */
static inline __attribute__((always_inline)) void type_chunk(sprout_type type, const uint8_t *row, const act_tile *at, int64_t t0,
                                                             const int G, int64_t c, __m256 acc[], __m256 macc[]) {
    switch (type) {
    case SPROUT_TYPE_Q4_K:
    case SPROUT_TYPE_Q5_K: affine_k_chunk(type, row, at, t0, G, c, acc, macc); break;
    case SPROUT_TYPE_IQ4_XS: iq4_xs_chunk(row, at, t0, G, c, acc); break;
    case SPROUT_TYPE_Q6_K:
    case SPROUT_TYPE_Q3_K:
    case SPROUT_TYPE_Q2_K: split_k_chunk(type, row, at, t0, G, c, acc, macc); break;
    default: blocks8_chunk(type, row, at, t0, G, c, acc, macc); break;
    }
}

/* How a type's mins' terms (macc) enter a row's output: subtracted for
 * the K-quants with mins (x = d*sc*q - dmin*m), added for Q4_1 and Q5_1
 * (x = d*q + m), none for the rest. */
static inline float type_mins_sign(sprout_type type) {
    switch (type) {
    case SPROUT_TYPE_Q4_K:
    case SPROUT_TYPE_Q5_K:
    case SPROUT_TYPE_Q2_K: return -1.f;
    case SPROUT_TYPE_IQ4_XS:
    case SPROUT_TYPE_Q6_K:
    case SPROUT_TYPE_Q3_K: return 0.f;
    default: return layout_of(type).m >= 0 ? 1.f : 0.f;
    }
}

/* A row's output from its accumulators: the lanes summed, the mins' after. */
static inline __attribute__((always_inline)) float row_output(sprout_type type, __m256 acc, __m256 macc) {
    return type_mins_sign(type) != 0.f ? hsum256(acc) + type_mins_sign(type) * hsum256(macc) : hsum256(acc);
}

/* One row's span sp against G tokens (G constant in each copy, so the
 * accumulators stay in registers). */
static inline __attribute__((always_inline)) void span_group(sprout_type type, const uint8_t *row, const act_tile *at, const int G,
                                                             const k_span *sp, float *out) {
    const bool with_mins = type_mins_sign(type) != 0.f;
    __m256 acc[TOKEN_GROUP], macc[TOKEN_GROUP];
    UNROLL_GROUP
    for (int k = 0; k < G; k++) {
        acc[k] = sp->first ? _mm256_setzero_ps() : sp->state[k];
        macc[k] = sp->first || !with_mins ? _mm256_setzero_ps() : sp->state[TOKEN_GROUP + k];
    }
    for (int64_t c = sp->c0; c < sp->c1; c++) type_chunk(type, row, at, 0, G, c, acc, macc);
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
 * bits. TinyLlama tg64, 2 threads, alternating: Q4_0 32.3 -> 36.6 t/s,
 * Q8_0 20.0 -> 24.7; one thread Q4_0 19.6 -> 23.7. */
static inline __attribute__((always_inline)) void rows_side_by_side(sprout_type type, const uint8_t *const rows[], const int R,
                                                                    const act_tile *at, float *out) {
#ifdef SP_MATMUL_VNNI
    if ((type == SPROUT_TYPE_Q4_K || type == SPROUT_TYPE_Q5_K) && R % 2 == 0) {
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
        return;
    }
#endif
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
 * of horizontal sums (TinyLlama Q4_K_M tg128, 2 threads, alternating: 30.4
 * -> 28.1 t/s, 5 rounds of 6 lost) and win with their lanes
 * (affine_k_lane_parts; all-Q4_K TinyLlama 30.8 -> 34.3, Q5_K_M 26.5 ->
 * 28.1, 9 rounds of 10 won). */
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
            int n = 0;
            for (int k = 0; k < SP_DECODE_STREAMS; k++) {
                const int64_t o = sp_decode_row(rs->o0, rs->o1, stretch, i * SP_DECODE_STREAMS + k);
                if (o >= 0) os[n] = o, rows[n++] = w->data + (size_t)o * w->row_bytes;
            }
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
        if (rs->prefetch && o + 2 < rs->o_end) prefetch_span(row + 2 * w->row_bytes, rs->c0, rs->c1, rs->chunk_bytes, w->row_bytes);
        const k_span sp = {rs->c0, rs->c1, rs->c0 == 0, rs->c1 == rs->n_chunks, rs->state ? rs->state[o - rs->o0] : NULL};
        float dots[TOKEN_GROUP];
        span_group(type, row, at, G, &sp, dots);
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
static void span_rows(sprout_type type, const act_tile *at, int G, const row_span *rs) {
    switch (type) {
    case SPROUT_TYPE_Q4_0: type_rows(SPROUT_TYPE_Q4_0, at, G, rs); break;
    case SPROUT_TYPE_IQ4_NL: type_rows(SPROUT_TYPE_IQ4_NL, at, G, rs); break;
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

/* The int8 path: activations of up to TOKEN_TILE tokens quantized into the
 * caller's scratch (sp_matmul_scratch_floats covers a full tile), then each
 * weight row, read once, dotted with all of them. */
static void matmul_int8(const sp_weight *w, const float *x, int64_t x_stride, const act_block *xq, int64_t n_tokens, float *y,
                        int64_t y_stride, int64_t o0, int64_t o1, float *scratch) {
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
            prepare_act_tile(&at, order, t, sum_factor, sp_scale_per_16(type), order == ACT_IN_ORDER && wants_run_sums(type));
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
                    span_rows(type, &view, (int)gn, &rs);
                }
            }
        }
    }
}

/* --- float rows (F16, F32, and every type decoded to floats) -----------------------------------
 * A tile of R rows by T tokens in registers: each weight vector, loaded
 * (and widened from F16) once, meets T tokens, and each token vector R
 * rows. The tail past the last whole vector is added in order after the
 * lanes are summed in a fixed order: a pair's arithmetic is the same
 * whatever the tile's shape, so a token's output does not depend on the
 * batch. */
/* How a float row is stored: read in place and widened in registers
 * (exactly), never decoded into a buffer first. */
typedef enum float_format { FLOAT_F32, FLOAT_F16, FLOAT_BF16 } float_format;

static inline float float_at(float_format f, const void *row, int64_t j) {
    return f == FLOAT_F32 ? ((const float *)row)[j]
           : f == FLOAT_F16 ? sp_fp16_to_fp32(((const uint16_t *)row)[j])
                            : sp_bf16_to_fp32(((const uint16_t *)row)[j]);
}

/* sum plus row[j] * x[j] for j in [from, n), in order: a tile's tail. */
static inline float float_row_tail(float_format f, const void *row, const float *x, int64_t from, int64_t n, float sum) {
    for (int64_t j = from; j < n; j++) sum += float_at(f, row, j) * x[j];
    return sum;
}

/* Eight or sixteen 16-bit values of a format at p, widened (exactly). */
static inline __m256 widen8(float_format f, const void *p) {
    const __m128i h = _mm_loadu_si128((const __m128i *)p);
    return f == FLOAT_F16 ? _mm256_cvtph_ps(h) : _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}
#ifdef SP_MATMUL_VNNI
static inline __m512 widen16(float_format f, const void *p) {
    const __m256i h = _mm256_loadu_si256((const __m256i *)p);
    return f == FLOAT_F16 ? _mm512_cvtph_ps(h) : _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
#endif

/* Rows read in place stream from memory: while a tile works on its rows,
 * the next tile's rows (`ahead` bytes on; 0 for rows decoded into a
 * buffer) are fetched into L2, one cache line per line consumed here. The
 * hardware prefetcher alone keeps too few lines in flight for four rows
 * that a handful of tokens consume slowly: F16, 2048 x 32000, 5 tokens on
 * one thread, 30-31 -> 42-44 GMAC/s; a 5-token prompt of TinyLlama F16, 2
 * threads, 44-47 -> 70-76 tokens/s. For one token (decode: into_l1) the
 * lines go into L1: F16 2048 x 146k rows, 2 threads, 24.4 -> 28.0 GB/s
 * (5632-element rows 27.4 either way); 2048 x 32000, one thread, 6.1 ->
 * 7.5 GMAC/s; for 5 tokens L2 stayed better (35-37 against 30-36). A lone
 * row (at the edge) goes into L1 too. */
static inline __attribute__((always_inline)) void prefetch_ahead(float_format f, const void *const rows[], const int R, ptrdiff_t ahead,
                                                                 bool into_l1, int64_t i) {
    const int64_t at = i * (f == FLOAT_F32 ? 4 : 2); /* bytes into the row; i steps by 16 elements */
    if (!ahead || (at & 63)) return;
    sp_prefetch_rows(rows, R, ahead + at, into_l1);
}

#ifdef SP_MATMUL_VNNI
/* AVX-512: one 16-lane accumulator per (row, token) pair; 32 registers
 * hold a tile of 4 rows by 6 tokens. One token takes such tiles too: a
 * lone row's one chain of FMAs, 4 cycles each, bounded it below the
 * memory's pace, and four rows are four streams (F16, 2048 x 146k rows,
 * one token: 11.6 -> 16.7 GB/s on one thread, 21.8 -> 27.1 on two; AVX2's
 * 2-row tiles 11.0 -> 12.5 and 20.4 -> 24.8; Sapphire Rapids VM). */
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
#else
/* AVX2: every (row, token) pair has two accumulators (even and odd
 * 8-element chunks, so one row alone still has independent chains),
 * joined before the lanes are summed; 16 registers hold 2 rows by 3
 * tokens. */
#define FLOAT_TILE_ROWS 2
#define FLOAT_TILE_TOKENS 3
static inline __attribute__((always_inline)) void float_tile(float_format f, const void *const rows[], const int R,
                                                             const float *const xs[], const int T, int64_t n, ptrdiff_t ahead, bool into_l1,
                                                             float *out) {
    __m256 acc[FLOAT_TILE_ROWS][FLOAT_TILE_TOKENS][2];
    for (int r = 0; r < R; r++)
        for (int t = 0; t < T; t++) acc[r][t][0] = acc[r][t][1] = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        prefetch_ahead(f, rows, R, ahead, into_l1, i);
        for (int h = 0; h < 2; h++) {
            __m256 wv[FLOAT_TILE_ROWS];
            for (int r = 0; r < R; r++)
                wv[r] = f == FLOAT_F32 ? _mm256_loadu_ps((const float *)rows[r] + i + 8 * h) : widen8(f, (const uint16_t *)rows[r] + i + 8 * h);
            for (int t = 0; t < T; t++) {
                const __m256 xv = _mm256_loadu_ps(xs[t] + i + 8 * h);
                for (int r = 0; r < R; r++) acc[r][t][h] = _mm256_fmadd_ps(wv[r], xv, acc[r][t][h]);
            }
        }
    }
    for (int r = 0; r < R; r++)
        for (int t = 0; t < T; t++) {
            out[r * T + t] = float_row_tail(f, rows[r], xs[t], i, n, hsum256(_mm256_add_ps(acc[r][t][0], acc[r][t][1])));
        }
}

/* The tile shapes used: two rows by up to three tokens, fewer at the edges. */
#define FLOAT_TILE_SHAPES SHAPE(2, 1) SHAPE(2, 2) SHAPE(2, 3) SHAPE(1, 1) SHAPE(1, 2) SHAPE(1, 3)
#endif

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

/* Rows [o0, o1) against tokens [0, n_tokens) of x. */
static void float_rows_block(const sp_weight *w, const float *x, int64_t x_stride, int64_t n_tokens, float *y, int64_t y_stride, int64_t o0,
                             int64_t o1, float *scratch) {
    /* F16 and BF16 widen in registers; other types are decoded to F32 */
    const bool direct = w->type == SPROUT_TYPE_F16 || w->type == SPROUT_TYPE_BF16 || w->type == SPROUT_TYPE_F32;
    const float_format f = w->type == SPROUT_TYPE_F16 ? FLOAT_F16 : w->type == SPROUT_TYPE_BF16 ? FLOAT_BF16 : FLOAT_F32;
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

void SP_QUANTIZE_NAME(const float *x, int64_t n, void *out) { quantize_activations(x, n, out); }

void SP_MATMUL_NAME(const sp_weight *w, const float *x, int64_t x_stride, const void *xq, int64_t n_tokens, float *y,
                    int64_t y_stride, int64_t o0, int64_t o1, float *scratch) {
    const bool int8_path = sp_int8_type(w->type) && w->n_in % 32 == 0;
    if (int8_path) {
        matmul_int8(w, x, x_stride, xq, n_tokens, y, y_stride, o0, o1, scratch);
        return;
    }
    matmul_float(w, x, x_stride, n_tokens, y, y_stride, o0, o1, scratch);
}
