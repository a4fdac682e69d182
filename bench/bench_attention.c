/* Fused attention against the unfused form, at 512, 2048 and 8192 cells of
 * context (TinyLlama-1.1B's heads: 32 query heads over 4 KV heads of 64,
 * f16 cache): the unfused form writes the whole score row, softmaxes it,
 * then sums the values (what a graph of separate ops does); the fused
 * kernel (sprout's, as dispatched) keeps a tile of 64 cells, called per query
 * head, per KV head with its 8 query heads together (as the engine decodes),
 * and per KV head for 4 query tokens at once (as the engine does a prompt's
 * tokens: time per token).
 * Prints the time per query (all heads) and the scratch each needs. Not a
 * test.
 *
 * usage: build/bench_attention [REPS]      (x86-64 with AVX2) */
#include <immintrin.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/kernels.h"
#include "quant/fp16.h"

enum { N_HEAD = 32, N_HEAD_KV = 4, HEAD_DIM = 64, TOKENS = 4 };

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

/* The unfused form, vectorized like the kernel so that only the structure
 * differs: scores[0..n) stored, then softmax, then the weighted sum. */
static void attention_unfused(const sp_attention_args *a, float *scores) {
    const uint16_t *k = a->keys, *v = a->values;
    for (int64_t c = 0; c < a->n_cells; c++) {
        const int64_t cell = (int64_t)a->cells[c] * a->stride;
        __m256 acc = _mm256_setzero_ps();
        for (int64_t d = 0; d < a->head_dim_k; d += 8)
            acc = _mm256_fmadd_ps(_mm256_loadu_ps(a->q + d), _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(k + cell + d))), acc);
        __m128 h = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
        h = _mm_add_ps(h, _mm_movehl_ps(h, h));
        h = _mm_add_ss(h, _mm_movehdup_ps(h));
        scores[c] = _mm_cvtss_f32(h) * a->scale;
    }
    float max = -INFINITY, sum = 0.f;
    for (int64_t c = 0; c < a->n_cells; c++) max = scores[c] > max ? scores[c] : max;
    for (int64_t c = 0; c < a->n_cells; c++) sum += scores[c] = expf(scores[c] - max);
    for (int64_t d = 0; d < a->head_dim_v; d += 8) {
        __m256 o = _mm256_setzero_ps();
        for (int64_t c = 0; c < a->n_cells; c++)
            o = _mm256_fmadd_ps(_mm256_set1_ps(scores[c]),
                                _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(v + (int64_t)a->cells[c] * a->stride + d))), o);
        _mm256_storeu_ps(a->out + d, _mm256_mul_ps(o, _mm256_set1_ps(1.f / sum)));
    }
}

int main(int argc, char **argv) {
    const int reps = argc > 1 ? atoi(argv[1]) : 20;
    const sp_kernels *k = sp_kernels_get();
    printf("fused kernel: %s; %d query heads over %d KV heads of %d, f16 cache, %d repetitions\n\n", k->name, N_HEAD, N_HEAD_KV,
           HEAD_DIM, reps);
    printf("| context | unfused ms/query | fused per head | fused per KV head | speed-up | fused, 4 tokens per call | speed-up | unfused scratch | fused scratch | max abs diff |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|\n");
    static const int64_t lengths[] = {512, 2048, 8192};
    uint64_t rng = 12345;
    for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++) {
        const int64_t n = lengths[li], stride = (int64_t)N_HEAD_KV * HEAD_DIM;
        uint16_t *keys = malloc((size_t)(n * stride) * sizeof *keys), *values = malloc((size_t)(n * stride) * sizeof *values);
        int32_t *cells = malloc((size_t)n * sizeof *cells);
        float *q = malloc((size_t)N_HEAD * HEAD_DIM * sizeof *q), *out_f = malloc((size_t)N_HEAD * HEAD_DIM * sizeof *out_f);
        float *out_u = malloc((size_t)N_HEAD * HEAD_DIM * sizeof *out_u), *scores = malloc((size_t)n * sizeof *scores);
        float *out_g = malloc((size_t)N_HEAD * HEAD_DIM * sizeof *out_g), *out_t = malloc((size_t)TOKENS * N_HEAD * HEAD_DIM * sizeof *out_t);
        for (int64_t i = 0; i < n * stride; i++) {
            rng = rng * 6364136223846793005ull + 1442695040888963407ull;
            keys[i] = sp_fp32_to_fp16((float)((double)(rng >> 40) / (1 << 24) - 0.5));
            values[i] = sp_fp32_to_fp16((float)((double)((rng >> 16) & 0xFFFFFF) / (1 << 24) - 0.5));
        }
        for (int64_t i = 0; i < n; i++) cells[i] = (int32_t)i;
        for (int64_t i = 0; i < N_HEAD * HEAD_DIM; i++) q[i] = (float)((i * 7919) % 101) / 50.f - 1.f;
        double best[4] = {1e30, 1e30, 1e30, 1e30};
        float *outs[4] = {out_u, out_f, out_g, out_t};
        const int group = N_HEAD / N_HEAD_KV;
        for (int r = 0; r < reps; r++) {
            for (int pass = 0; pass < 4; pass++) {
                const double t0 = now_ms();
                for (int h = 0; h < N_HEAD; h += pass >= 2 ? group : 1) {
                    const int kvh = h / group;
                    sp_attention_args a = {.q = q + h * HEAD_DIM, .keys = keys + kvh * HEAD_DIM, .values = values + kvh * HEAD_DIM,
                                           .k_type = SP_KV_F16, .v_type = SP_KV_F16, .stride = stride, .cells = cells, .n_cells = n, .head_dim_k = HEAD_DIM,
                                           .head_dim_v = HEAD_DIM, .scale = 0.125f, .out = outs[pass] + h * HEAD_DIM,
                                           .n_q_heads = pass >= 2 ? group : 1};
                    if (pass == 3) { /* the same query for every token: each token's output must match the lone one */
                        a.n_tokens = TOKENS;
                        a.out_stride = N_HEAD * HEAD_DIM;
                    }
                    if (pass) k->attention(&a);
                    else attention_unfused(&a, scores);
                }
                const double dt = (now_ms() - t0) / (pass == 3 ? TOKENS : 1);
                best[pass] = dt < best[pass] ? dt : best[pass];
            }
        }
        double diff = 0;
        for (int64_t i = 0; i < N_HEAD * HEAD_DIM; i++) diff = fmax(diff, fmax(fabs((double)out_f[i] - out_u[i]), fabs((double)out_g[i] - out_u[i])));
        if (memcmp(out_f, out_g, (size_t)N_HEAD * HEAD_DIM * sizeof *out_f)) printf("(grouped and per-head results differ!)\n");
        for (int t = 0; t < TOKENS; t++)
            if (memcmp(out_f, out_t + t * N_HEAD * HEAD_DIM, (size_t)N_HEAD * HEAD_DIM * sizeof *out_f)) printf("(token %d differs!)\n", t);
        /* the fused kernel's tile (64 cells): its scores per head, and the
         * tile's keys and values widened to f32 */
        const int tile = 64, per_head = tile * 4, per_group = group * per_head + 2 * tile * HEAD_DIM * 4;
        printf("| %lld | %.3f | %.3f | %.3f | %.2fx | %.3f | %.2fx | %lld B per head (%lld B per query) | %d B per head, %d B per KV head | %.1e |\n",
               (long long)n, best[0], best[1], best[2], best[0] / best[2], best[3], best[0] / best[3], (long long)(n * 4),
               (long long)(n * 4 * N_HEAD), per_head, per_group, diff);
        free(keys);
        free(values);
        free(cells);
        free(q);
        free(out_f);
        free(out_u);
        free(out_g);
        free(out_t);
        free(scores);
    }
    return 0;
}
