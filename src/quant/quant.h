/* The tensor-type traits table: one row per GGUF tensor type, with its block
 * geometry and its reference (scalar) converters. Kernels (src/kernels/) add
 * the fast paths; everything here is the portable truth they are tested
 * against. */
#ifndef SPROUT_QUANT_QUANT_H
#define SPROUT_QUANT_QUANT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "sprout.h"

/* n is always a multiple of the type's block size. */
typedef void (*sp_dequantize_fn)(const void *src, float *dst, int64_t n);
typedef void (*sp_quantize_fn)(const float *src, void *dst, int64_t n);
/* importance: one non-negative weight per element of src (an importance
 * matrix's row, llama.cpp's quant_weights), or NULL where the type allows. */
typedef void (*sp_quantize_weighted_fn)(const float *src, void *dst, int64_t n, const float *importance);

typedef struct sp_type_traits {
    const char *name;     /* as llama.cpp prints it: "Q4_K" */
    int64_t block_size;   /* elements per block */
    size_t block_bytes;   /* bytes per block */
    bool is_quantized;
    sp_dequantize_fn dequantize;   /* NULL: sprout cannot compute with it */
    sp_quantize_fn quantize_ref;   /* NULL: sprout cannot write it (without importance) */
    sp_quantize_weighted_fn quantize_weighted; /* NULL: the type has no use for importance */
} sp_type_traits;

/* The row for `type`, or NULL for an id that names no known type. */
const sp_type_traits *sp_type_traits_of(int type);

/* Bytes of a row of n elements; false if n is not a multiple of the block
 * size or the size overflows. */
bool sp_type_row_bytes(int type, int64_t n, uint64_t *bytes);

/* Reference converters, one per format (quant_float.c, quant_legacy.c,
 * quant_k.c, quant_iq4.c). */
void sp_dequantize_f32(const void *src, float *dst, int64_t n);
void sp_dequantize_f16(const void *src, float *dst, int64_t n);
void sp_dequantize_bf16(const void *src, float *dst, int64_t n);
void sp_quantize_f32(const float *src, void *dst, int64_t n);
void sp_quantize_f16(const float *src, void *dst, int64_t n);
void sp_quantize_bf16(const float *src, void *dst, int64_t n);

void sp_dequantize_q4_0(const void *src, float *dst, int64_t n);
void sp_dequantize_q4_1(const void *src, float *dst, int64_t n);
void sp_dequantize_q5_0(const void *src, float *dst, int64_t n);
void sp_dequantize_q5_1(const void *src, float *dst, int64_t n);
void sp_dequantize_q8_0(const void *src, float *dst, int64_t n);
void sp_dequantize_q8_1(const void *src, float *dst, int64_t n);
void sp_quantize_q4_0(const float *src, void *dst, int64_t n);
void sp_quantize_q4_1(const float *src, void *dst, int64_t n);
void sp_quantize_q5_0(const float *src, void *dst, int64_t n);
void sp_quantize_q5_1(const float *src, void *dst, int64_t n);
void sp_quantize_q8_0(const float *src, void *dst, int64_t n);
void sp_quantize_q8_1(const float *src, void *dst, int64_t n);

void sp_dequantize_q2_K(const void *src, float *dst, int64_t n);
void sp_dequantize_q3_K(const void *src, float *dst, int64_t n);
void sp_dequantize_q4_K(const void *src, float *dst, int64_t n);
void sp_dequantize_q5_K(const void *src, float *dst, int64_t n);
void sp_dequantize_q6_K(const void *src, float *dst, int64_t n);
void sp_dequantize_q8_K(const void *src, float *dst, int64_t n);
void sp_quantize_q2_K(const float *src, void *dst, int64_t n);
void sp_quantize_q3_K(const float *src, void *dst, int64_t n);
void sp_quantize_q4_K(const float *src, void *dst, int64_t n);
void sp_quantize_q5_K(const float *src, void *dst, int64_t n);
void sp_quantize_q6_K(const float *src, void *dst, int64_t n);
void sp_quantize_q8_K(const float *src, void *dst, int64_t n);

void sp_dequantize_iq4_nl(const void *src, float *dst, int64_t n);
void sp_dequantize_iq4_xs(const void *src, float *dst, int64_t n);
void sp_quantize_iq4_nl(const float *src, void *dst, int64_t n);
void sp_quantize_iq4_xs(const float *src, void *dst, int64_t n);

/* quant_mxfp4.c, quant_tq.c */
void sp_dequantize_mxfp4(const void *src, float *dst, int64_t n);
void sp_quantize_mxfp4(const float *src, void *dst, int64_t n);
void sp_dequantize_tq1_0(const void *src, float *dst, int64_t n);
void sp_dequantize_tq2_0(const void *src, float *dst, int64_t n);
void sp_quantize_tq1_0(const float *src, void *dst, int64_t n);
void sp_quantize_tq2_0(const float *src, void *dst, int64_t n);

/* quant_iq.c: decoders; quant_iq_grid.c, quant_iq1.c: quantizers (the
 * _weighted ones take importance; IQ2_XXS, IQ2_XS and IQ1_S need it). */
void sp_dequantize_iq2_xxs(const void *src, float *dst, int64_t n);
void sp_dequantize_iq2_xs(const void *src, float *dst, int64_t n);
void sp_dequantize_iq2_s(const void *src, float *dst, int64_t n);
void sp_dequantize_iq3_xxs(const void *src, float *dst, int64_t n);
void sp_dequantize_iq3_s(const void *src, float *dst, int64_t n);
void sp_dequantize_iq1_s(const void *src, float *dst, int64_t n);
void sp_dequantize_iq1_m(const void *src, float *dst, int64_t n);
void sp_quantize_iq2_xxs_weighted(const float *src, void *dst, int64_t n, const float *importance);
void sp_quantize_iq2_xs_weighted(const float *src, void *dst, int64_t n, const float *importance);
void sp_quantize_iq2_s_weighted(const float *src, void *dst, int64_t n, const float *importance);
void sp_quantize_iq3_xxs_weighted(const float *src, void *dst, int64_t n, const float *importance);
void sp_quantize_iq3_s_weighted(const float *src, void *dst, int64_t n, const float *importance);
void sp_quantize_iq1_s_weighted(const float *src, void *dst, int64_t n, const float *importance);
void sp_quantize_iq1_m_weighted(const float *src, void *dst, int64_t n, const float *importance);
void sp_quantize_iq2_s(const float *src, void *dst, int64_t n);
void sp_quantize_iq3_xxs(const float *src, void *dst, int64_t n);
void sp_quantize_iq3_s(const float *src, void *dst, int64_t n);
void sp_quantize_iq1_m(const float *src, void *dst, int64_t n);

/* A (sub-)block whose largest magnitude is below this is all zero to the
 * K-quant and IQ4 searches, as to llama.cpp's. */
#define SP_ZERO_AMAX 1e-15f

/* The element of largest magnitude, with its sign (the first one on ties);
 * *amax_out (optional) gets its magnitude. Symmetric formats map it to their
 * most negative level. */
static inline float sp_signed_absmax(const float *x, int64_t n, float *amax_out) {
    float amax = 0.f, max = 0.f;
    for (int64_t i = 0; i < n; i++) {
        float a = x[i] < 0.f ? -x[i] : x[i];
        if (a > amax) {
            amax = a;
            max = x[i];
        }
    }
    if (amax_out) *amax_out = amax;
    return max;
}

/* Round to nearest, ties to even, for |x| < 2^22 (the quantizers' range):
 * adding 1.5 * 2^23 leaves the rounded integer in the low mantissa bits.
 * Clamping first keeps the result defined for inf and nan. */
static inline int sp_nearest_int(float x) {
    x = x > 4194303.f ? 4194303.f : (x < -4194303.f ? -4194303.f : x);
    if (x != x) x = 0.f;
    float biased = x + 12582912.f;
    int32_t bits;
    memcpy(&bits, &biased, sizeof bits);
    return (bits & 0x007FFFFF) - 0x00400000;
}

#endif
