/* IEEE half and bfloat16 conversions, portable and exact: round to nearest
 * even on the way down (as F16C's _cvtss_sh and ggml do), so that quantized
 * files written by sprout match llama.cpp's bit for bit. */
#ifndef SPROUT_QUANT_FP16_H
#define SPROUT_QUANT_FP16_H

#include <stdint.h>
#include <string.h>

static inline uint32_t sp_f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float sp_f32_from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline float sp_fp16_to_fp32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1F;
    uint32_t mant = h & 0x3FF;
    if (exp == 0x1F) return sp_f32_from_bits(sign | 0x7F800000u | (mant << 13)); /* inf, nan */
    if (exp != 0) return sp_f32_from_bits(sign | ((exp + 112) << 23) | (mant << 13));
    if (mant == 0) return sp_f32_from_bits(sign);
    /* subnormal half: mant * 2^-24 is a normal float; shift the leading one
     * into the implicit bit */
    uint32_t e = 113;
    while (!(mant & 0x400)) {
        mant <<= 1;
        e--;
    }
    return sp_f32_from_bits(sign | (e << 23) | ((mant & 0x3FF) << 13));
}

static inline uint16_t sp_fp32_to_fp16(float f) {
    uint32_t x = sp_f32_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    uint32_t ax = x & 0x7FFFFFFFu;
    if (ax >= 0x7F800000u) /* inf stays inf; nan stays a quiet nan */
        return (uint16_t)(sign | 0x7C00 | (ax > 0x7F800000u ? 0x200 | ((ax >> 13) & 0x3FF) : 0));
    if (ax < 0x38800000u) { /* below the smallest normal half (2^-14) */
        if (ax < 0x33000000u) return sign; /* below 2^-25: rounds to zero */
        uint32_t e = ax >> 23;
        uint32_t m = (ax & 0x7FFFFFu) | 0x800000u;
        uint32_t shift = 126 - e; /* from float mantissa units to 2^-24 units */
        uint32_t r = m >> shift;
        uint32_t rem = m & ((1u << shift) - 1);
        uint32_t half = 1u << (shift - 1);
        if (rem > half || (rem == half && (r & 1))) r++;
        return (uint16_t)(sign | r);
    }
    uint32_t r = (ax - 0x38000000u) >> 13; /* rebias 127 -> 15 */
    uint32_t rem = ax & 0x1FFF;
    if (rem > 0x1000 || (rem == 0x1000 && (r & 1))) r++; /* a carry may reach inf, as it should */
    if (r >= 0x7C00) r = 0x7C00;
    return (uint16_t)(sign | r);
}

/* v rounded to the nearest half (even on ties), as a float again. */
static inline float sp_fp16_round(float v) { return sp_fp16_to_fp32(sp_fp32_to_fp16(v)); }

static inline float sp_bf16_to_fp32(uint16_t h) { return sp_f32_from_bits((uint32_t)h << 16); }

static inline uint16_t sp_fp32_to_bf16(float f) {
    uint32_t x = sp_f32_bits(f);
    if ((x & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((x >> 16) | 0x40); /* quiet the nan */
    return (uint16_t)((x + 0x7FFFu + ((x >> 16) & 1)) >> 16);
}

/* v rounded to the nearest bfloat16 (even on ties), as a float again. */
static inline float sp_bf16_round(float v) { return sp_bf16_to_fp32(sp_fp32_to_bf16(v)); }

#endif
