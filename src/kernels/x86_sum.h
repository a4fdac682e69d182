/* Horizontal sums shared by the x86 kernel files (included only by files
 * compiled with AVX2). The tree is fixed: results that must agree bit for
 * bit (a head alone and in a group; a token alone and in a batch) are
 * summed by this one function. */
#ifndef SPROUT_KERNELS_X86_SUM_H
#define SPROUT_KERNELS_X86_SUM_H

#include <immintrin.h>

/* The sum of v's lanes: ((0+4)+(2+6)) + ((1+5)+(3+7)). */
static inline float hsum256(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

#ifdef __AVX512F__
/* Half h (0: lanes 0-7) of a 16-lane vector (AVX-512F has no 8-float
 * extract; AVX512DQ's is not required). */
static inline __m256 half512_ps(__m512 v, int h) {
    return h ? _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)) : _mm512_castps512_ps256(v);
}

/* The sum of a 16-lane vector's lanes: its halves added, then hsum256. */
static inline float hsum512(__m512 v) { return hsum256(_mm256_add_ps(half512_ps(v, 0), half512_ps(v, 1))); }
#endif

#endif
