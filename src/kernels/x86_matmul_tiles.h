/* What the int8 and float matmuls of the x86 levels (matmul_avx2.c,
 * matmul_avx512vnni.c) share: the tile constants, the activations' layout
 * (act_chunk, act_tile), the weight formats' unpacking and the float rows'
 * helpers. Where the levels differ is how unsigned bytes meet signed ones,
 * so each file defines that before including this header:
 *   Q8_0_UNSIGNED           1 where 8-bit levels go in plus 128 (VNNI's
 *                           products do not saturate), 0 where their signs
 *                           move onto the activations (maddubs's could);
 *   dot_u8_i8(u, s)         unsigned bytes times signed bytes, summed in
 *                           fours into 8 int32 lanes;
 *   dot_u8_i8_acc(a, u, s)  a + dot_u8_i8(u, s);
 *   dots_u8_i8_acc(a, u, s, n, bits)
 *                           a + the n dots of u[m] and s[m] (s read from
 *                           memory), the unsigned bytes below 2^bits
 *                           (unsigned_level_bits) and the signed ones
 *                           within -127..127 (quantize_activations): what
 *                           lets maddubs's pair sums add up in int16.
 * Then its own kernels, then x86_matmul_loops.h (the loops over chunks,
 * rows and tokens, which call them).
 *
 * Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS,
 * MXFP4, TQ1_0, TQ2_0 and the grid IQ formats' weights are dotted in int8 against the activations quantized to 8-bit blocks of 32, as
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
#ifndef SPROUT_KERNELS_X86_MATMUL_TILES_H
#define SPROUT_KERNELS_X86_MATMUL_TILES_H

#include <immintrin.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

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
 * into L1 fewer times: prompts ran faster with 256 rows than with 16. */
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
    if (type == SPROUT_TYPE_Q4_0 || type == SPROUT_TYPE_IQ4_NL || type == SPROUT_TYPE_MXFP4) return ACT_TRANSPOSED;
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
static inline __m256i byte_levels_of(const int8_t table[16]) {
    const __m128i signed_levels = _mm_loadu_si128((const __m128i *)table);
    const __m128i levels = Q8_0_UNSIGNED ? _mm_xor_si128(signed_levels, _mm_set1_epi8((char)0x80)) : signed_levels;
    return _mm256_broadcastsi128_si256(levels);
}

static inline __m256i iq4_levels(void) { return byte_levels_of(sp_iq4_levels); }

/* How many bits a type's unsigned levels take where they meet the
 * activations as dot_u8_i8's unsigned bytes (the offset or the mins taken
 * off apart); 8 where they may take all of them. */
static inline int unsigned_level_bits(sprout_type type) {
    switch (type) {
    case SPROUT_TYPE_TQ1_0:
    case SPROUT_TYPE_TQ2_0:
    case SPROUT_TYPE_Q2_K: return 2;
    case SPROUT_TYPE_Q3_K: return 3;
    case SPROUT_TYPE_Q4_0:
    case SPROUT_TYPE_Q4_1:
    case SPROUT_TYPE_Q4_K: return 4;
    case SPROUT_TYPE_Q5_0:
    case SPROUT_TYPE_Q5_1:
    case SPROUT_TYPE_Q5_K: return 5;
    case SPROUT_TYPE_Q6_K: return 6;
    default: return 8;
    }
}

/* The table a packed type's nibbles index (IQ4_NL's, MXFP4's doubled E2M1
 * values), or NULL where the nibbles are the levels. */
static inline const int8_t *nibble_table(sprout_type type) {
    return type == SPROUT_TYPE_IQ4_NL ? sp_iq4_levels : type == SPROUT_TYPE_MXFP4 ? sp_mxfp4_levels : NULL;
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
    case SPROUT_TYPE_MXFP4: return (block_layout){sizeof(sp_block_mxfp4), offsetof(sp_block_mxfp4, qs), -1, -1};
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
 * (nv <= 8; zero past nv), gathered a word at a time: each level's
 * block_scales8 (the including file's) where it has no faster way. */
static inline __attribute__((always_inline)) __m256 gathered_block_scales8(sprout_type type, const uint8_t *row, int64_t b, int nv) {
    const size_t block_bytes = layout_of(type).bytes;
    if (type == SPROUT_TYPE_MXFP4) {
        /* E8M0 exponents to 2^(e - 128) as sp_e8m0_half: (e - 1) << 23, or for e < 2 the subnormal 2^-128 << e */
        uint8_t e8[8] = {0};
        for (int j = 0; j < 8; j++)
            if (j < nv) e8[j] = row[(size_t)(b + j) * block_bytes];
        const __m256i e = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)e8));
        const __m256i normal = _mm256_slli_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(1)), 23);
        const __m256i subnormal = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), e);
        const __m256i tiny = _mm256_cmpgt_epi32(_mm256_set1_epi32(2), e);
        const __m256 scales = _mm256_castsi256_ps(_mm256_blendv_epi8(normal, subnormal, tiny));
        /* past nv: zero, not the 2^-128 of a zero exponent */
        return _mm256_and_ps(scales, _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(nv), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7))));
    }
    uint16_t d16[8] = {0};
    for (int j = 0; j < 8; j++)
        if (j < nv) memcpy(&d16[j], row + (size_t)(b + j) * block_bytes, sizeof d16[j]);
    return gather_halves8(d16);
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

/* With a few tokens the weights stream from memory at the pace of the
 * arithmetic, and the hardware prefetcher alone leaves gaps: each chunk
 * asks for the lines of the chunk `ahead` bytes on (rows further down),
 * a chunk's worth at a time. Asking for a whole row at once, two rows
 * before it was needed, four tokens of Q4_0 from memory ran at 38 GMAC/s
 * a core, 72 spread out (bench/RESULTS.md; that a burst of a row's lines
 * overran the line fill buffers is the likely cause, not measured: the
 * VM exposes no counters). Into L2, not L1: on a Zen 4, four tokens of
 * Q8_0 from memory ran at 36-38 GMAC/s a core with the lines asked into
 * L1 and 63-66 into L2 (Q4_0 59-66 -> 76-77, Q6_K 46-51 -> 59-62), and
 * without asking at 28. 0 asks for nothing. */
static inline __attribute__((always_inline)) void prefetch_chunk_ahead(const uint8_t *row, int64_t c, size_t chunk_bytes, ptrdiff_t ahead) {
    if (!ahead) return;
    const uintptr_t from = (uintptr_t)(row + (size_t)c * chunk_bytes + ahead) & ~(uintptr_t)63;
    const uintptr_t to = (uintptr_t)(row + (size_t)(c + 1) * chunk_bytes + ahead);
    for (uintptr_t line = from; line < to; line += 64) _mm_prefetch((const char *)line, _MM_HINT_T1);
}

/* Rows a group's prefetch runs ahead of the row it works on. */
#define GROUP_AHEAD_ROWS 2

/* What the activations' block sums are multiplied by for a type: minus
 * what its kernel adds to the levels to make them unsigned (the sums then
 * start the dot products), or 1 where the mins use the plain sums. */
static int type_sum_factor(sprout_type type) {
    switch (type) {
    case SPROUT_TYPE_Q4_0: return -8;
    case SPROUT_TYPE_Q5_0: return -16;
    case SPROUT_TYPE_Q8_0:
    case SPROUT_TYPE_IQ4_NL:
    case SPROUT_TYPE_MXFP4:
    case SPROUT_TYPE_IQ3_XXS:
    case SPROUT_TYPE_IQ3_S:
    case SPROUT_TYPE_IQ2_XXS:
    case SPROUT_TYPE_IQ2_XS:
    case SPROUT_TYPE_IQ2_S:
    case SPROUT_TYPE_IQ1_S:
    case SPROUT_TYPE_IQ1_M:
    case SPROUT_TYPE_IQ4_XS: return Q8_0_UNSIGNED ? -128 : 0; /* the grid formats with a scale per 16: per half */
    case SPROUT_TYPE_TQ1_0:
    case SPROUT_TYPE_TQ2_0: return -1; /* trits 0..2 stand for -1..1 */
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
    bool prefetch; /* rows GROUP_AHEAD_ROWS ahead, up to o_end */
    int64_t o_end;
    size_t chunk_bytes;
    float *y; /* token 0's output row */
    int64_t y_stride;
} row_span;

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

/* Rows read in place stream from memory: while a tile works on its rows,
 * the next tile's rows (`ahead` bytes on; 0 for rows decoded into a
 * buffer) are fetched into L2, one cache line per line consumed here. The
 * hardware prefetcher alone keeps too few lines in flight for four rows
 * that a handful of tokens consume slowly. For one token (decode: into_l1)
 * the lines go into L1, which served it better than L2; for a few tokens
 * L2 stayed better. A lone row (at the edge) goes into L1 too. */
static inline __attribute__((always_inline)) void prefetch_ahead(float_format f, const void *const rows[], const int R, ptrdiff_t ahead,
                                                                 bool into_l1, int64_t i) {
    const int64_t at = i * (f == FLOAT_F32 ? 4 : 2); /* bytes into the row; i steps by 16 elements */
    if (!ahead || (at & 63)) return;
    sp_prefetch_rows(rows, R, ahead + at, into_l1);
}

#endif
