/* The online-softmax attention of attention_portable.c with the two inner
 * loops (q.k and the weighted sum of values) in AVX2/FMA registers, f16
 * cells widened by F16C. Same order of cells, same running maximum. */
#include <immintrin.h>
#include <math.h>

#include "kernels/kernels.h"
#include "quant/fp16.h"

static inline __m256 load8(const void *base, sp_kv_type type, int64_t idx) {
    return type == SP_KV_F32 ? _mm256_loadu_ps((const float *)base + idx)
                             : _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)base + idx)));
}

static inline float load1(const void *base, sp_kv_type type, int64_t idx) {
    return type == SP_KV_F32 ? ((const float *)base)[idx] : _cvtsh_ss(((const uint16_t *)base)[idx]);
}

void sp_attention_avx2(const sp_attention_args *a) {
    const int64_t dk = a->head_dim_k, dv = a->head_dim_v, dk8 = dk & ~(int64_t)7, dv8 = dv & ~(int64_t)7;
    float max = -INFINITY, sum = 0.f;
    for (int64_t d = 0; d < dv; d++) a->out[d] = 0.f;
    for (int64_t c = 0; c < a->n_cells; c++) {
        const int64_t cell = (int64_t)a->cells[c] * a->stride;
        __m256 acc = _mm256_setzero_ps();
        for (int64_t d = 0; d < dk8; d += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(a->q + d), load8(a->keys, a->kv_type, cell + d), acc);
        __m128 h = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
        h = _mm_add_ps(h, _mm_movehl_ps(h, h));
        h = _mm_add_ss(h, _mm_movehdup_ps(h));
        float s = _mm_cvtss_f32(h);
        for (int64_t d = dk8; d < dk; d++) s += a->q[d] * load1(a->keys, a->kv_type, cell + d);
        s *= a->scale;
        if (a->softcap > 0.f) s = a->softcap * tanhf(s / a->softcap);
        float w;
        if (s > max) { /* rescale what was accumulated under the old maximum */
            const float correction = expf(max - s);
            sum *= correction;
            const __m256 cv = _mm256_set1_ps(correction);
            for (int64_t d = 0; d < dv8; d += 8) _mm256_storeu_ps(a->out + d, _mm256_mul_ps(_mm256_loadu_ps(a->out + d), cv));
            for (int64_t d = dv8; d < dv; d++) a->out[d] *= correction;
            max = s;
            w = 1.f;
        } else {
            w = expf(s - max);
        }
        sum += w;
        const __m256 wv = _mm256_set1_ps(w);
        for (int64_t d = 0; d < dv8; d += 8)
            _mm256_storeu_ps(a->out + d, _mm256_fmadd_ps(wv, load8(a->values, a->kv_type, cell + d), _mm256_loadu_ps(a->out + d)));
        for (int64_t d = dv8; d < dv; d++) a->out[d] += w * load1(a->values, a->kv_type, cell + d);
    }
    const float inv = sum > 0.f ? 1.f / sum : 0.f;
    for (int64_t d = 0; d < dv; d++) a->out[d] *= inv;
}
