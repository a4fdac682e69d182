/* Each query head of each token against its sequence's cached keys and values, in one pass
 * with a running maximum (online softmax), for any number of cells; quantized rows decoded
 * an element at a time as the loop reads them. */
#include <math.h>

#include "kernels/kv_element.h"

static void attend_one(const sp_attention_args *a, sp_cell_range range, int64_t h) {
    float max = -INFINITY, sum = 0.f;
    for (int64_t d = 0; d < a->head_dim_v; d++) a->out[d] = 0.f;
    for (int64_t c = range.begin; c < range.end; c++) {
        const int64_t cell = (int64_t)a->cells[c] * a->stride;
        float s = 0.f;
        for (int64_t d = 0; d < a->head_dim_k; d++) s += a->q[d] * sp_kv_element(a->keys, a->k_type, cell + d);
        s *= a->scale;
        if (a->softcap > 0.f) s = a->softcap * tanhf(s / a->softcap);
        float w;
        if (s > max) { /* rescale what was accumulated under the old maximum */
            float correction = expf(max - s);
            sum *= correction;
            for (int64_t d = 0; d < a->head_dim_v; d++) a->out[d] *= correction;
            max = s;
            w = 1.f;
        } else {
            w = expf(s - max);
        }
        sum += w;
        for (int64_t d = 0; d < a->head_dim_v; d++) a->out[d] += w * sp_kv_element(a->values, a->v_type, cell + d);
    }
    const float inv = sp_attention_finish(a, h, max, sum);
    for (int64_t d = 0; d < a->head_dim_v; d++) a->out[d] *= inv;
}

void sp_attention_portable(const sp_attention_args *a) {
    const int64_t n_heads = a->n_q_heads > 0 ? a->n_q_heads : 1, n_tokens = a->n_tokens > 0 ? a->n_tokens : 1;
    for (int64_t i = 0; i < n_tokens; i++)
        for (int64_t h = 0; h < n_heads; h++) {
            sp_attention_args one = *a;
            one.q = a->q + i * a->q_stride + h * a->head_dim_k;
            one.out = a->out + i * a->out_stride + h * a->head_dim_v;
            attend_one(&one, sp_attention_range(a, i), h);
        }
}
