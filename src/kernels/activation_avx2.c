/* The FFN's activations with AVX2 and FMA, eight at a time: both are
 * x * sigmoid(z), SiLU with z = x and tanh-GELU with z = 2 * 0.79788456 *
 * (x + 0.044715 x^3) (since 0.5 (1 + tanh(y)) = 1 / (1 + e^-2y)), so one
 * exponential and one division each. A tail shorter than a vector goes
 * through the same vector code, so every element is computed the same way
 * wherever it sits. */
#include <immintrin.h>
#include <string.h>

#include "kernels/kernels.h"
#include "kernels/x86_exp.h"

static inline __m256 activation8(sp_activation kind, __m256 x) {
    __m256 z = x;
    if (kind == SP_ACT_GELU) {
        const __m256 x3 = _mm256_mul_ps(_mm256_mul_ps(x, x), x);
        z = _mm256_mul_ps(_mm256_set1_ps(2.f * 0.7978845608028654f), _mm256_fmadd_ps(_mm256_set1_ps(0.044715f), x3, x));
    }
    const __m256 e = exp8(_mm256_sub_ps(_mm256_setzero_ps(), z));
    return _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.f), e));
}

void sp_activation_avx2(sp_activation kind, const float *x, const float *up, float *out, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 a = activation8(kind, _mm256_loadu_ps(x + i));
        if (up) a = _mm256_mul_ps(a, _mm256_loadu_ps(up + i));
        _mm256_storeu_ps(out + i, a);
    }
    if (i < n) {
        float xs[8] = {0}, us[8] = {0}, os[8];
        memcpy(xs, x + i, (size_t)(n - i) * sizeof(float));
        if (up) memcpy(us, up + i, (size_t)(n - i) * sizeof(float));
        __m256 a = activation8(kind, _mm256_loadu_ps(xs));
        if (up) a = _mm256_mul_ps(a, _mm256_loadu_ps(us));
        _mm256_storeu_ps(os, a);
        memcpy(out + i, os, (size_t)(n - i) * sizeof(float));
    }
}
