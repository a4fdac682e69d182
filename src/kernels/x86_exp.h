/* e^x eight lanes at a time, shared by the x86 kernel files (included only
 * by files compiled with AVX2 and FMA). */
#ifndef SPROUT_KERNELS_X86_EXP_H
#define SPROUT_KERNELS_X86_EXP_H

#include <immintrin.h>

/* x = n ln2 + r with |r| <= ln2/2, a degree-6 polynomial for e^r (relative
 * error about 2e-7), 2^n built in the exponent bits: the steps after the
 * clamp and the rounding of n, defined once for each width (P the
 * intrinsics' prefix, W the bits) so that 8 and 16 lanes give each lane
 * the same bits. */
#define SP_DEFINE_EXP_SCALED(NAME, P, W, VEC, VECI)                                                                \
    static inline VEC NAME(VEC x, VEC n) {                                                                         \
        VEC r = P##_fnmadd_ps(n, P##_set1_ps(0.693359375f), x);                                                    \
        r = P##_fnmadd_ps(n, P##_set1_ps(-2.12194440e-4f), r);                                                     \
        VEC p = P##_set1_ps(1.9875691500e-4f);                                                                     \
        p = P##_fmadd_ps(p, r, P##_set1_ps(1.3981999507e-3f));                                                     \
        p = P##_fmadd_ps(p, r, P##_set1_ps(8.3334519073e-3f));                                                     \
        p = P##_fmadd_ps(p, r, P##_set1_ps(4.1665795894e-2f));                                                     \
        p = P##_fmadd_ps(p, r, P##_set1_ps(1.6666665459e-1f));                                                     \
        p = P##_fmadd_ps(p, r, P##_set1_ps(5.0000001201e-1f));                                                     \
        p = P##_fmadd_ps(p, P##_mul_ps(r, r), P##_add_ps(r, P##_set1_ps(1.f)));                                    \
        const VECI bits = P##_slli_epi32(P##_add_epi32(P##_cvtps_epi32(n), P##_set1_epi32(127)), 23);              \
        return P##_mul_ps(p, P##_castsi##W##_ps(bits));                                                            \
    }

SP_DEFINE_EXP_SCALED(exp8_scaled, _mm256, 256, __m256, __m256i)

/* Below -87.3 the result is 0; above 88 it is e^88 (about 1.7e38: finite,
 * so that 1 + e^x and x / (1 + e^x) stay well defined); a NaN stays NaN,
 * as expf keeps it. */
static inline __m256 exp8(__m256 x) {
    const __m256 lo = _mm256_set1_ps(-87.3f);
    const __m256 underflow = _mm256_cmp_ps(x, lo, _CMP_LT_OQ);
    x = _mm256_min_ps(_mm256_set1_ps(88.f), _mm256_max_ps(lo, x));
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    return _mm256_andnot_ps(underflow, exp8_scaled(x, n));
}

#ifdef __AVX512F__
SP_DEFINE_EXP_SCALED(exp16_scaled, _mm512, 512, __m512, __m512i)

/* exp8 on 16 lanes (AVX-512 F only). */
static inline __m512 exp16(__m512 x) {
    const __m512 lo = _mm512_set1_ps(-87.3f);
    const __mmask16 underflow = _mm512_cmp_ps_mask(x, lo, _CMP_LT_OQ);
    x = _mm512_min_ps(_mm512_set1_ps(88.f), _mm512_max_ps(lo, x));
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    return _mm512_maskz_mov_ps((__mmask16)~underflow, exp16_scaled(x, n));
}
#endif

#undef SP_DEFINE_EXP_SCALED

#endif
