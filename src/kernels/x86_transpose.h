/* The 16x16 transpose of 32-bit elements shared by the AVX-512 kernel
 * files (attention's keys, the AMX float kernel's token tiles). */
#ifndef SPROUT_KERNELS_X86_TRANSPOSE_H
#define SPROUT_KERNELS_X86_TRANSPOSE_H

#include <immintrin.h>

#ifdef __AVX512F__
/* r[i] = element i of every r[j], in lane j. */
static inline __attribute__((always_inline)) void transpose16x16_ps(__m512 r[16]) {
    __m512 t[16];
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    /* r[4i + e], 128-bit lane L: element 4L + e of rows 4i..4i+3 */
    for (int i = 0; i < 4; i++)
        for (int h = 0; h < 2; h++) {
            const __m512d x = _mm512_castps_pd(t[4 * i + h]), y = _mm512_castps_pd(t[4 * i + h + 2]);
            r[4 * i + 2 * h] = _mm512_castpd_ps(_mm512_unpacklo_pd(x, y));
            r[4 * i + 2 * h + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(x, y));
        }
    /* then the 4x4 transpose of 128-bit lanes among r[e], r[4 + e], r[8 + e], r[12 + e] */
    for (int e = 0; e < 4; e++) {
        const __m512 a01 = _mm512_shuffle_f32x4(r[e], r[4 + e], _MM_SHUFFLE(1, 0, 1, 0));
        const __m512 b01 = _mm512_shuffle_f32x4(r[8 + e], r[12 + e], _MM_SHUFFLE(1, 0, 1, 0));
        const __m512 a23 = _mm512_shuffle_f32x4(r[e], r[4 + e], _MM_SHUFFLE(3, 2, 3, 2));
        const __m512 b23 = _mm512_shuffle_f32x4(r[8 + e], r[12 + e], _MM_SHUFFLE(3, 2, 3, 2));
        r[e] = _mm512_shuffle_f32x4(a01, b01, _MM_SHUFFLE(2, 0, 2, 0));
        r[4 + e] = _mm512_shuffle_f32x4(a01, b01, _MM_SHUFFLE(3, 1, 3, 1));
        r[8 + e] = _mm512_shuffle_f32x4(a23, b23, _MM_SHUFFLE(2, 0, 2, 0));
        r[12 + e] = _mm512_shuffle_f32x4(a23, b23, _MM_SHUFFLE(3, 1, 3, 1));
    }
}
#endif

#endif
