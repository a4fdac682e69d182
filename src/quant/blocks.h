/* Block layouts of the GGUF/ggml quantized formats. They are part of the file
 * format: every struct must match the published layout byte for byte, which
 * the static_asserts pin down. Halves are stored as raw uint16_t bits. */
#ifndef SPROUT_QUANT_BLOCKS_H
#define SPROUT_QUANT_BLOCKS_H

#include <assert.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define SP_QK32 32  /* elements per block of the legacy formats */
#define SP_QK_K 256 /* elements per super-block of the K-quants */
#define SP_K_SCALE_BYTES 12

/* x = d * (q - 8) */
typedef struct {
    uint16_t d;
    uint8_t qs[SP_QK32 / 2]; /* element j in the low nibble of qs[j], j+16 in the high one */
} sp_block_q4_0;
static_assert(sizeof(sp_block_q4_0) == 18, "q4_0 block layout");

/* x = d * q + m */
typedef struct {
    uint16_t d, m;
    uint8_t qs[SP_QK32 / 2];
} sp_block_q4_1;
static_assert(sizeof(sp_block_q4_1) == 20, "q4_1 block layout");

/* x = d * (q - 16), q = 4 low bits from qs, the 5th from bit j of qh */
typedef struct {
    uint16_t d;
    uint8_t qh[4];
    uint8_t qs[SP_QK32 / 2];
} sp_block_q5_0;
static_assert(sizeof(sp_block_q5_0) == 22, "q5_0 block layout");

typedef struct {
    uint16_t d, m;
    uint8_t qh[4];
    uint8_t qs[SP_QK32 / 2];
} sp_block_q5_1;
static_assert(sizeof(sp_block_q5_1) == 24, "q5_1 block layout");

typedef struct {
    uint16_t d;
    int8_t qs[SP_QK32];
} sp_block_q8_0;
static_assert(sizeof(sp_block_q8_0) == 34, "q8_0 block layout");

/* activation format paired with q4_1/q5_1: s = d * sum(qs) */
typedef struct {
    uint16_t d, s;
    int8_t qs[SP_QK32];
} sp_block_q8_1;
static_assert(sizeof(sp_block_q8_1) == 36, "q8_1 block layout");

/* 16 sub-blocks of 16: x = d * (scales & 15) * q - dmin * (scales >> 4) */
typedef struct {
    uint8_t scales[SP_QK_K / 16];
    uint8_t qs[SP_QK_K / 4];
    uint16_t d, dmin;
} sp_block_q2_K;
static_assert(sizeof(sp_block_q2_K) == 84, "q2_K block layout");

/* 16 sub-blocks of 16 with 6-bit signed scales: x = d * (scale - 32) * (q - 4) */
typedef struct {
    uint8_t hmask[SP_QK_K / 8];
    uint8_t qs[SP_QK_K / 4];
    uint8_t scales[SP_K_SCALE_BYTES];
    uint16_t d;
} sp_block_q3_K;
static_assert(sizeof(sp_block_q3_K) == 110, "q3_K block layout");

/* Q3_K's scale j of 16, 6 bits in 12 bytes (low nibbles in bytes 0-7,
 * top two bits in bytes 8-11), less 32. */
static inline int sp_q3k_scale(const uint8_t q[12], int j) {
    const int lo = j < 8 ? (q[j] & 0x0F) : (q[j - 8] >> 4);
    const int hi = (q[8 + j % 4] >> (2 * (j / 4))) & 3;
    return (lo | (hi << 4)) - 32;
}

static inline void sp_q3k_unpack_scales(const uint8_t q[12], int8_t out[16]) {
    for (int j = 0; j < 16; j++) out[j] = (int8_t)sp_q3k_scale(q, j);
}

/* 8 sub-blocks of 32 with 6-bit scales and mins: x = d * sc * q - dmin * m */
typedef struct {
    uint16_t d, dmin;
    uint8_t scales[SP_K_SCALE_BYTES];
    uint8_t qs[SP_QK_K / 2];
} sp_block_q4_K;
static_assert(sizeof(sp_block_q4_K) == 144, "q4_K block layout");

/* Scale and min of sub-block j of Q4_K/Q5_K from their 12 packed bytes:
 * bytes 0-3 hold scales 0-3 (low 6 bits) and the top 2 bits of scales 4-7;
 * bytes 4-7 the same for mins; bytes 8-11 the low 4 bits of scale j (low
 * nibble) and min j (high nibble), j = 4..7. */
static inline void sp_q4k_scale_min(int j, const uint8_t *q, uint8_t *sc, uint8_t *m) {
    if (j < 4) {
        *sc = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *sc = (uint8_t)((q[j + 4] & 0x0F) | ((q[j - 4] >> 6) << 4));
        *m = (uint8_t)((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}

typedef struct {
    uint16_t d, dmin;
    uint8_t scales[SP_K_SCALE_BYTES];
    uint8_t qh[SP_QK_K / 8];
    uint8_t qs[SP_QK_K / 2];
} sp_block_q5_K;
static_assert(sizeof(sp_block_q5_K) == 176, "q5_K block layout");

/* Super-block b of a Q4_K row (qh NULL) or a Q5_K row, whose parts the
 * kernels read alike. */
typedef struct sp_affine_k_block {
    uint16_t d, dmin;
    const uint8_t *scales, *qs, *qh;
} sp_affine_k_block;

static inline sp_affine_k_block sp_affine_k_block_at(bool q5, const uint8_t *row, int64_t b) {
    if (!q5) {
        const sp_block_q4_K *blk = (const sp_block_q4_K *)row + b;
        return (sp_affine_k_block){blk->d, blk->dmin, blk->scales, blk->qs, NULL};
    }
    const sp_block_q5_K *blk = (const sp_block_q5_K *)row + b;
    return (sp_affine_k_block){blk->d, blk->dmin, blk->scales, blk->qs, blk->qh};
}

/* 16 sub-blocks of 16 with 8-bit signed scales: x = d * scale * (q - 32) */
typedef struct {
    uint8_t ql[SP_QK_K / 2];
    uint8_t qh[SP_QK_K / 4];
    int8_t scales[SP_QK_K / 16];
    uint16_t d;
} sp_block_q6_K;
static_assert(sizeof(sp_block_q6_K) == 210, "q6_K block layout");

/* The 16 levels of the non-linear 4-bit formats (IQ4_NL, IQ4_XS), in
 * units of the block's scale: denser near zero, where most weights are. */
static const int8_t sp_iq4_levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

/* x = d * sp_iq4_levels[q]; element j in the low nibble of qs[j], j+16 in the high one (as Q4_0) */
typedef struct {
    uint16_t d;
    uint8_t qs[SP_QK32 / 2];
} sp_block_iq4_nl;
static_assert(sizeof(sp_block_iq4_nl) == 18, "iq4_nl block layout");

/* Eight sub-blocks of 32, each laid out as an IQ4_NL block's levels (qs[16 j..]),
 * x = d * (ls_j - 32) * sp_iq4_levels[q]: the 6-bit ls_j has its low 4 bits in
 * nibble j % 2 of scales_l[j / 2] and its top 2 in bits 2j, 2j+1 of scales_h. */
typedef struct {
    uint16_t d;
    uint16_t scales_h;
    uint8_t scales_l[SP_QK_K / 64];
    uint8_t qs[SP_QK_K / 2];
} sp_block_iq4_xs;
static_assert(sizeof(sp_block_iq4_xs) == 136, "iq4_xs block layout");

/* Sub-block j's 6-bit scale of an IQ4_XS block (0..63; the multiplier is it less 32). */
static inline int sp_iq4_xs_scale(const sp_block_iq4_xs *b, int j) {
    return ((b->scales_l[j / 2] >> (4 * (j % 2))) & 0x0F) | (((b->scales_h >> (2 * j)) & 3) << 4);
}

/* The E2M1 values of the MX formats, doubled so they are integers: x =
 * sp_mxfp4_levels[q] * 2^(e - 128) (the halving of the doubling folded
 * into the exponent). Codes 8..15 are 0..7 negated (8 is -0). */
static const int8_t sp_mxfp4_levels[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

/* x = sp_mxfp4_levels[q] * 2^(e - 128), e an E8M0 exponent (bias 127, less
 * one for the doubled levels); elements as IQ4_NL's nibbles */
typedef struct {
    uint8_t e;
    uint8_t qs[SP_QK32 / 2];
} sp_block_mxfp4;
static_assert(sizeof(sp_block_mxfp4) == 17, "mxfp4 block layout");

/* 2^(e - 128) exactly, e = 0 and 1 being subnormal floats. */
static inline float sp_e8m0_half(uint8_t e) {
    const uint32_t bits = e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* Ternary, x = d * (t - 1), t in 0..2. Elements 0-159 five trits a byte in
 * qs[0..31] (byte m holds elements m + 32 n, n = 0..4), 160-239 the same
 * over qs[32..47] (m + 16 n), 240-255 four a byte in qh (j + 4 n, n = 0..3).
 * A byte holds its trits t_0..t_k as the fraction ceil(256 * sum t_n 3^-n-1):
 * trit n is the top byte of 3 * (byte * 3^n mod 256). */
typedef struct {
    uint8_t qs[48];
    uint8_t qh[SP_QK_K / 64];
    uint16_t d;
} sp_block_tq1_0;
static_assert(sizeof(sp_block_tq1_0) == 54, "tq1_0 block layout");

/* Ternary, x = d * (t - 1): element 128 c + 32 l + m is bits 2l..2l+1 of qs[32 c + m] */
typedef struct {
    uint8_t qs[SP_QK_K / 4];
    uint16_t d;
} sp_block_tq2_0;
static_assert(sizeof(sp_block_tq2_0) == 66, "tq2_0 block layout");

/* The IQ2/IQ3/IQ1 formats snap groups of 8 (IQ3: 4) weights to points of a
 * grid (iq_grids.h); a sub-block of 32 has a small odd scale (2 s + 1,
 * in units of the half-float d, some formats with a further factor), signs
 * of 8 elements are 7 stored bits (sp_iq_signs) or 8 plain ones. */

/* per 32: four 8-bit grid indices in qs[4 j..4 j+1] as bytes, then a word
 * with four 7-bit signs (bits 7 l..) and a 4-bit scale (top): x = d * (s +
 * 1/2) / 4 * grid * sign */
typedef struct {
    uint16_t d;
    uint16_t qs[SP_QK_K / 8];
} sp_block_iq2_xxs;
static_assert(sizeof(sp_block_iq2_xxs) == 66, "iq2_xxs block layout");

/* per 8: a 9-bit grid index and 7-bit signs in one word; per 16 a 4-bit scale
 * (low nibble of scales[j] for the first 16 of sub-block j): x = d * (s + 1/2) / 4 * grid * sign */
typedef struct {
    uint16_t d;
    uint16_t qs[SP_QK_K / 8];
    uint8_t scales[SP_QK_K / 32];
} sp_block_iq2_xs;
static_assert(sizeof(sp_block_iq2_xs) == 74, "iq2_xs block layout");

/* per 8: a 10-bit grid index (qs[k], the top 2 bits from qh[k / 4]) and 8
 * plain sign bits (qs[32 + k]); scales as IQ2_XS */
typedef struct {
    uint16_t d;
    uint8_t qs[SP_QK_K / 4];
    uint8_t qh[SP_QK_K / 32];
    uint8_t scales[SP_QK_K / 32];
} sp_block_iq2_s;
static_assert(sizeof(sp_block_iq2_s) == 82, "iq2_s block layout");

/* per 4: an 8-bit grid index (qs[0..63]); per 32 a word (after them) of
 * four 7-bit signs and a 4-bit scale: x = d * (s + 1/2) / 2 * grid * sign */
typedef struct {
    uint16_t d;
    uint8_t qs[3 * SP_QK_K / 8];
} sp_block_iq3_xxs;
static_assert(sizeof(sp_block_iq3_xxs) == 98, "iq3_xxs block layout");

/* per 4: a 9-bit grid index (qs[k], the 9th bit k % 8 of qh[k / 8]); per 8
 * plain sign bits; per 64 two 4-bit scales (nibbles of scales[j / 2]):
 * x = d * (2 s + 1) * grid * sign */
typedef struct {
    uint16_t d;
    uint8_t qs[SP_QK_K / 4];
    uint8_t qh[SP_QK_K / 32];
    uint8_t signs[SP_QK_K / 8];
    uint8_t scales[SP_QK_K / 64];
} sp_block_iq3_s;
static_assert(sizeof(sp_block_iq3_s) == 110, "iq3_s block layout");

/* The shift of the IQ1 grids' points, in units of their scale. */
#define SP_IQ1_DELTA 0.125f

/* per 8: an 11-bit grid index (qs[k], the top 3 bits from qh[k / 4] bits
 * 3 (k % 4)..); per 32 a 3-bit scale (qh bits 12-14) and the shift's sign
 * (bit 15): x = d * (2 s + 1) * (grid +- 1/8) */
typedef struct {
    uint16_t d;
    uint8_t qs[SP_QK_K / 8];
    uint16_t qh[SP_QK_K / 32];
} sp_block_iq1_s;
static_assert(sizeof(sp_block_iq1_s) == 50, "iq1_s block layout");

/* per 8: an 11-bit grid index (qs[k], the top 3 bits the low or high
 * nibble's bits 0-2 of qh[k / 2]; bit 3 the shift's sign); per 16 a 3-bit
 * scale (the four words of scales hold three per 12 bits); the half-float
 * d is the four words' top nibbles: x = d * (2 s + 1) * (grid +- 1/8) */
typedef struct {
    uint8_t qs[SP_QK_K / 8];
    uint8_t qh[SP_QK_K / 16];
    uint8_t scales[SP_QK_K / 32];
} sp_block_iq1_m;
static_assert(sizeof(sp_block_iq1_m) == 56, "iq1_m block layout");

/* activation format paired with the K-quants; bsums are sums of 16 qs */
typedef struct {
    float d;
    int8_t qs[SP_QK_K];
    int16_t bsums[SP_QK_K / 16];
} sp_block_q8_K;
static_assert(sizeof(sp_block_q8_K) == 292, "q8_K block layout");

#endif
