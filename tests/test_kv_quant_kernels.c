/* The attention kernels over quantized and BF16 KV caches, at every level
 * this CPU runs: the portable kernel against softmax(QK^T)V written out in
 * double over the rows the reference dequantizers (src/quant) decode, and
 * each level against the portable kernel, for keys and values of the same
 * and of different types, several heads of a KV head, several tokens with
 * their own ranges, and each (token, head) bit for bit as it comes out
 * alone. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "quant/quant.h"
#include "runtime/kv_cache.h"
#include "test_util.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static float frand(void) {
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((rng_state >> 40) & 0xFFFFFF) / (float)0x800000 - 1.f;
}

/* A cache of n_rows rows of `stride` elements of type t, and the same
 * rows as the reference dequantizer decodes them. */
typedef struct cache_rows {
    void *data;
    float *decoded;
} cache_rows;

static cache_rows make_rows(sp_kv_type t, int64_t n_rows, int64_t stride, float scale) {
    cache_rows c = {malloc(sp_kv_bytes(t, stride) * (size_t)n_rows), malloc((size_t)(n_rows * stride) * sizeof(float))};
    float *row = malloc((size_t)stride * sizeof(float));
    for (int64_t r = 0; r < n_rows; r++) {
        for (int64_t i = 0; i < stride; i++) row[i] = scale * frand();
        if (r % 5 == 3) memset(row, 0, 32 * sizeof(float)); /* a block of zeros: scale 0 */
        char *dst = (char *)c.data + sp_kv_bytes(t, stride) * (size_t)r;
        float *dec = c.decoded + r * stride;
        switch (t) {
        case SP_KV_BF16: sp_quantize_bf16(row, dst, stride), sp_dequantize_bf16(dst, dec, stride); break;
        case SP_KV_Q8_0: sp_quantize_q8_0(row, dst, stride), sp_dequantize_q8_0(dst, dec, stride); break;
        case SP_KV_Q4_0: sp_quantize_q4_0(row, dst, stride), sp_dequantize_q4_0(dst, dec, stride); break;
        default: sp_quantize_f16(row, dst, stride), sp_dequantize_f16(dst, dec, stride); break;
        }
    }
    free(row);
    return c;
}

/* Token i's head h, plainly in double over the decoded rows. */
static void naive(const sp_attention_args *a, const float *keys, const float *values, int64_t i, int64_t h, double *out) {
    const sp_cell_range r = sp_attention_range(a, i);
    const int64_t dim = a->head_dim_k;
    const float *q = a->q + i * a->q_stride + h * dim;
    double max = -INFINITY, sum = 0, *p = malloc((size_t)(r.end > r.begin ? r.end - r.begin : 1) * sizeof *p);
    for (int32_t c = r.begin; c < r.end; c++) {
        double s = 0;
        for (int64_t d = 0; d < dim; d++) s += (double)q[d] * keys[(int64_t)a->cells[c] * a->stride + d];
        s *= a->scale;
        if (a->softcap > 0) s = a->softcap * tanh(s / a->softcap);
        p[c - r.begin] = s;
        max = s > max ? s : max;
    }
    for (int32_t c = r.begin; c < r.end; c++) sum += p[c - r.begin] = exp(p[c - r.begin] - max);
    for (int64_t d = 0; d < a->head_dim_v; d++) {
        double o = 0;
        for (int32_t c = r.begin; c < r.end; c++) o += p[c - r.begin] * values[(int64_t)a->cells[c] * a->stride + d];
        out[d] = sum > 0 ? o / sum : 0;
    }
    free(p);
}

static double rel_rms(const float *got, const double *want, int64_t n) {
    double err = 0, norm = 0;
    for (int64_t d = 0; d < n; d++) {
        err += (got[d] - want[d]) * (got[d] - want[d]);
        norm += want[d] * want[d];
    }
    return sqrt(err / (norm > 0 ? norm : 1));
}

typedef struct kv_pair {
    sp_kv_type k, v;
} kv_pair;

static const kv_pair pairs[] = {{SP_KV_Q8_0, SP_KV_Q8_0}, {SP_KV_Q4_0, SP_KV_Q4_0}, {SP_KV_Q8_0, SP_KV_Q4_0},
                                {SP_KV_BF16, SP_KV_BF16}, {SP_KV_F16, SP_KV_Q8_0}, {SP_KV_Q4_0, SP_KV_BF16}};

/* One shape at one level: n_tok tokens of `heads` heads over n cells (in a
 * shuffled order, every other row of a cache two KV heads wide, this
 * call's head the second), token i seeing a prefix that grows with i. */
static void check_case(const char *level, const sp_kernels *k, kv_pair kv, int64_t dim, int64_t n, int64_t heads, int64_t n_tok, bool capped,
                       double *worst) {
    const int64_t stride = 2 * dim, rows = 2 * n + 1;
    cache_rows keys = make_rows(kv.k, rows, stride, 3.f), values = make_rows(kv.v, rows, stride, 1.f);
    int32_t *cells = malloc((size_t)n * sizeof *cells);
    for (int64_t c = 0; c < n; c++) cells[c] = (int32_t)((c * 7919) % n) * 2 + 1;
    sp_cell_range ranges[8];
    for (int64_t i = 0; i < n_tok; i++) ranges[i] = (sp_cell_range){(int32_t)(i % 3 == 2 ? 1 : 0), (int32_t)(n - (n_tok - 1 - i) * n / (2 * n_tok))};
    const int64_t q_row = heads * dim;
    float *q = malloc((size_t)(n_tok * q_row) * sizeof(float)), *out = malloc((size_t)(n_tok * q_row) * sizeof(float)),
          *ref = malloc((size_t)(n_tok * q_row) * sizeof(float)), *alone = malloc((size_t)dim * sizeof(float));
    double *want = malloc((size_t)dim * sizeof(double));
    for (int64_t i = 0; i < n_tok * q_row; i++) q[i] = frand();
    sp_attention_args a = {.q = q, .keys = (const char *)keys.data + sp_kv_bytes(kv.k, dim), .values = (const char *)values.data + sp_kv_bytes(kv.v, dim),
                           .k_type = kv.k, .v_type = kv.v, .stride = stride, .cells = cells, .n_cells = n, .head_dim_k = dim, .head_dim_v = dim,
                           .scale = 1.f / sqrtf((float)dim), .softcap = capped ? 5.f : 0.f, .out = out, .n_q_heads = heads, .n_tokens = n_tok,
                           .q_stride = q_row, .out_stride = q_row, .ranges = ranges};
    k->attention(&a);
    sp_attention_args r = a;
    r.out = ref;
    sp_attention_portable(&r);
    for (int64_t i = 0; i < n_tok; i++)
        for (int64_t h = 0; h < heads; h++) {
            const float *got = out + i * q_row + h * dim, *portable = ref + i * q_row + h * dim;
            naive(&a, keys.decoded + dim, values.decoded + dim, i, h, want);
            const double rel_naive = rel_rms(portable, want, dim), rel = rel_rms(got, want, dim);
            *worst = rel > *worst ? rel : *worst;
            CHECK_MSG(rel_naive <= 1e-5, "portable %s/%s dim %lld n %lld: token %lld head %lld rel %.3g against the decoded rows",
                      sp_kv_type_name(kv.k), sp_kv_type_name(kv.v), (long long)dim, (long long)n, (long long)i,
                      (long long)h, rel_naive);
            CHECK_MSG(rel <= 1e-5, "%s %s/%s dim %lld n %lld heads %lld tokens %lld: token %lld head %lld rel %.3g", level,
                      sp_kv_type_name(kv.k), sp_kv_type_name(kv.v), (long long)dim, (long long)n, (long long)heads,
                      (long long)n_tok, (long long)i, (long long)h, rel);
            /* the same token's head alone: bit for bit */
            sp_cell_range one_range = ranges[i];
            sp_attention_args one = a;
            one.q = q + i * q_row + h * dim;
            one.out = alone;
            one.n_q_heads = 1;
            one.n_tokens = 1;
            one.ranges = &one_range;
            k->attention(&one);
            CHECK_MSG(!memcmp(alone, got, (size_t)dim * sizeof(float)), "%s %s/%s dim %lld n %lld: token %lld head %lld differs alone",
                      level, sp_kv_type_name(kv.k), sp_kv_type_name(kv.v), (long long)dim, (long long)n, (long long)i,
                      (long long)h);
        }
    free(keys.data), free(keys.decoded), free(values.data), free(values.decoded);
    free(cells), free(q), free(out), free(ref), free(alone), free(want);
}

static void check_level(const char *level) {
    const sp_kernels *k = sp_kernels_for_level(level);
    if (!k) {
        printf("  %-10s skipped: not supported by this CPU or build\n", level);
        return;
    }
    static const int64_t dims[] = {32, 64, 128, 256};
    static const int64_t lengths[] = {1, 7, 65, 300};
    static const int64_t head_counts[] = {1, 4, 8};
    double worst = 0;
    int cases = 0;
    for (size_t pi = 0; pi < sizeof pairs / sizeof *pairs; pi++)
        for (size_t di = 0; di < sizeof dims / sizeof *dims; di++)
            for (size_t li = 0; li < sizeof lengths / sizeof *lengths; li++) {
                if (test_quick_run() && dims[di] == 256 && lengths[li] > 65) continue;
                const int64_t heads = head_counts[(pi + di + li) % 3], n_tok = (pi + li) % 2 ? 5 : 1;
                check_case(level, k, pairs[pi], dims[di], lengths[li], heads, n_tok, (di + li) % 3 == 1, &worst);
                cases++;
            }
    printf("  %-10s %d cases, worst rel RMS against the decoded rows %.2g\n", level, cases, worst);
}

int main(void) {
    static const char *const levels[] = {"generic", "avx2", "avx512", "avx512bf16", "avx512bf16dot", "amx", "neon", "i8mm"};
    for (size_t i = 0; i < sizeof levels / sizeof *levels; i++) check_level(levels[i]);
    TEST_MAIN_END();
}
