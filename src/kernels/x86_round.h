/* Rounding floats to bfloat16 with AVX2 integer ops, shared by the x86
 * kernel files (included only by files compiled with AVX2): the same bits
 * as sp_fp32_to_bf16, so activations rounded here equal those every other
 * level computes. */
#ifndef SPROUT_KERNELS_X86_ROUND_H
#define SPROUT_KERNELS_X86_ROUND_H

#include <immintrin.h>
#include <stdint.h>

#include "quant/fp16.h"

/* The bfloat16 nearest each lane (even on ties), in the low 16 bits of
 * its lane; a nan stays a nan, made quiet. */
static inline __m256i round8_bf16_bits(__m256 v) {
    const __m256i u = _mm256_castps_si256(v);
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7FFF))), 16);
    const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40));
    return _mm256_blendv_epi8(rounded, quiet, _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)));
}

/* n floats to bfloat16 values (round8_bf16_bits, then the tail in C). */
static inline void narrow_to_bf16(const float *x, int64_t n, uint16_t *out) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256i bits = round8_bf16_bits(_mm256_loadu_ps(x + i));
        _mm_storeu_si128((__m128i *)(out + i), _mm_packus_epi32(_mm256_castsi256_si128(bits), _mm256_extracti128_si256(bits, 1)));
    }
    for (; i < n; i++) out[i] = sp_fp32_to_bf16(x[i]);
}

#endif
