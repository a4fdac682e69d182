#include "runtime/lora_apply.h"

#include <sched.h>
#include <stdatomic.h>
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "quant/fp16.h"
#include "runtime/parallel.h"

/* Floats of A x kept at once, on the calling thread's stack: 1,024 tokens
 * of rank 16 (a prompt's tokens go through B's tiles together), or 16 of
 * the largest rank. */
enum { AX_FLOATS = 16384 };

/* Bytes ahead of a tile's row that are fetched while it is summed: the
 * tiles of a pair lie one after another, and without it each row's line
 * arrived only when asked for. */
enum { PREFETCH_AHEAD = 2048 };

/* Rounds a waiting thread spins before it yields its core. */
enum { SPIN_ROUNDS = 4096 };

/* The terms go by use slot: for slot u, every token whose set has a u-th
 * adapter with a pair for w gets y += s B (A x). A token's terms still add
 * in its set's order, each computed the same way whatever the batch and
 * the threads, so its bits do not depend on them. */
typedef struct lora_job {
    const sp_context *ctx;
    int64_t index; /* w's index among the model's weights */
    const float *x;
    float *y;
    int64_t n_in, n_out;
    int32_t n;
    size_t n_slots;     /* the most adapters a token carries */
    float *ax;          /* AX_FLOATS */
    atomic_int arrived; /* threads past a barrier, counted over the job */
} lora_job;

/* Token t's pair in slot u, or NULL. */
static const sp_lora_pair *slot_pair(const lora_job *j, int64_t t, size_t u, float *scale) {
    const sp_lora_set *set = j->ctx->rows[t].lora;
    if (!set || u >= set->n) return NULL;
    const sp_lora_pair *p = &set->uses[u].adapter->pairs[j->index];
    if (!p->a.data) return NULL;
    if (scale) *scale = set->uses[u].scale * p->alpha_over_rank;
    return p;
}

/* No thread goes on before all nth are there (passed: the job's barriers
 * this thread has passed). */
static void barrier(lora_job *j, int nth, int *passed) {
    const int target = ++*passed * nth;
    atomic_fetch_add_explicit(&j->arrived, 1, memory_order_acq_rel);
    for (int spin = 0; atomic_load_explicit(&j->arrived, memory_order_acquire) < target;) {
        if (spin < SPIN_ROUNDS) {
            spin++;
#if defined(__x86_64__) && defined(__GNUC__)
            _mm_pause();
#endif
        } else sched_yield();
    }
}

/* A x for tokens [t0, t1) of the chunk from c0 (ax rows `stride` apart),
 * rows [r0, r1) of each A: runs of tokens with the same pair in one
 * matmul, whose bits per token do not depend on the run (kernels.h). */
static void compute_ax(const lora_job *j, size_t u, int64_t c0, int64_t stride, int64_t t0, int64_t t1, int64_t r0, int64_t r1,
                       float *scratch) {
    const sp_kernels *k = j->ctx->kernels;
    for (int64_t t = t0, end; t < t1; t = end) {
        const sp_lora_pair *p = slot_pair(j, t, u, NULL);
        for (end = t + 1; end < t1 && slot_pair(j, end, u, NULL) == p;) end++;
        if (!p) continue;
        const int64_t rows_end = r1 < p->a.n_out ? r1 : p->a.n_out;
        if (r0 >= rows_end) continue;
        float *ax = j->ax + (t - c0) * stride;
        k->matmul(&p->a, j->x + t * j->n_in, j->n_in, NULL, end - t, ax, stride, r0, rows_end, scratch);
        /* as the kernels round a token for F16 and BF16 rows (llama.cpp's
         * products); other types' B takes A x as it is */
        const sprout_type b_type = p->b.type;
        if (b_type == SPROUT_TYPE_F16 || b_type == SPROUT_TYPE_BF16)
            for (int64_t i = 0; i < end - t; i++)
                for (int64_t e = r0; e < rows_end; e++)
                    ax[i * stride + e] = b_type == SPROUT_TYPE_F16 ? sp_fp16_round(ax[i * stride + e]) : sp_bf16_round(ax[i * stride + e]);
    }
}

/* The loader picks the widest of these the CPU has for tile_term: its
 * lanes are independent and no clone contracts the multiply-adds (ISO C
 * mode), so all give the same bits (as quant_k.c's search). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define TILE_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define TILE_CLONES
#endif

/* y[0, width) += s (B ax) over one tile of B's r rows. */
TILE_CLONES static void tile_term(const float *tile, const float *ax, int64_t r, float s, float *y, int64_t width) {
    float acc[SP_LORA_B_TILE] = {0};
    for (int64_t k = 0; k < r; k++) {
#if defined(__GNUC__)
        __builtin_prefetch((const char *)(tile + k * SP_LORA_B_TILE) + 2 * PREFETCH_AHEAD);
#endif
        for (int i = 0; i < SP_LORA_B_TILE; i++) acc[i] += ax[k] * tile[k * SP_LORA_B_TILE + i];
    }
    for (int64_t i = 0; i < width; i++) y[i] += s * acc[i];
}

#if defined(__x86_64__) && defined(__GNUC__)
/* tile_term over halves (sp_lora_f16_tiles): widened exactly, then the
 * same products and sums in the same order, so the same bits as floats. */
__attribute__((target("avx2,f16c"))) static void tile_term_f16(const uint16_t *tile, const float *ax, int64_t r, float s, float *y,
                                                               int64_t width) {
    enum { VECTORS = SP_LORA_B_TILE / 8 };
    __m256 acc[VECTORS];
    for (int v = 0; v < VECTORS; v++) acc[v] = _mm256_setzero_ps();
    for (int64_t k = 0; k < r; k++) {
        _mm_prefetch((const char *)(tile + k * SP_LORA_B_TILE) + PREFETCH_AHEAD, _MM_HINT_T0);
        const __m256 a = _mm256_set1_ps(ax[k]);
        for (int v = 0; v < VECTORS; v++)
            acc[v] = _mm256_add_ps(acc[v], _mm256_mul_ps(a, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(tile + k * SP_LORA_B_TILE + 8 * v)))));
    }
    float out[SP_LORA_B_TILE];
    for (int v = 0; v < VECTORS; v++) _mm256_storeu_ps(out + 8 * v, acc[v]);
    for (int64_t i = 0; i < width; i++) y[i] += s * out[i];
}
#endif

/* One tile of pair p's B, in whichever form model/lora.c keeps it. */
static void pair_tile_term(const sp_lora_pair *p, int64_t b, const float *ax, float s, float *y, int64_t width) {
    const int64_t r = p->b.n_in, at = b * r * SP_LORA_B_TILE;
#if defined(__x86_64__) && defined(__GNUC__)
    if (p->b_tiles_f16) {
        tile_term_f16(p->b_tiles_f16 + at, ax, r, s, y, width);
        return;
    }
#endif
    tile_term(p->b_tiles + at, ax, r, s, y, width);
}

/* y += s B (A x) for the chunk's tokens [c0, c1), B's tiles [b0, b1): a
 * tile's r rows stay in cache while every token passes over them. */
static void add_b_terms(const lora_job *j, size_t u, int64_t c0, int64_t c1, int64_t stride, int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; b++) {
        const int64_t o0 = b * SP_LORA_B_TILE, width = j->n_out - o0 < SP_LORA_B_TILE ? j->n_out - o0 : SP_LORA_B_TILE;
        for (int64_t t = c0; t < c1; t++) {
            float s;
            const sp_lora_pair *p = slot_pair(j, t, u, &s);
            if (p) pair_tile_term(p, b, j->ax + (t - c0) * stride, s, j->y + t * j->n_out + o0, width);
        }
    }
}

/* Every thread walks the same slots and chunks: A x split among them (by
 * token, or by A's rows for a lone token), a barrier, then B's tiles split
 * among them, and a barrier before the next chunk reuses ax. */
static void lora_worker(void *user, int ith, int nth) {
    lora_job *j = user;
    float *scratch = j->ctx->scratch + (int64_t)ith * j->ctx->scratch_stride;
    int passed = 0;
    int64_t b0, b1;
    sp_split_range((j->n_out + SP_LORA_B_TILE - 1) / SP_LORA_B_TILE, ith, nth, &b0, &b1);
    for (size_t u = 0; u < j->n_slots; u++) {
        int64_t stride = 0; /* the slot's largest rank */
        for (int64_t t = 0; t < j->n; t++) {
            const sp_lora_pair *p = slot_pair(j, t, u, NULL);
            if (p && p->a.n_out > stride) stride = p->a.n_out;
        }
        if (!stride) continue;
        const int64_t chunk = AX_FLOATS / stride;
        for (int64_t c0 = 0; c0 < j->n; c0 += chunk) {
            const int64_t c1 = c0 + chunk < j->n ? c0 + chunk : j->n;
            if (passed) barrier(j, nth, &passed);
            int64_t s0, s1;
            if (c1 - c0 == 1) {
                sp_split_range(stride, ith, nth, &s0, &s1);
                compute_ax(j, u, c0, stride, c0, c1, s0, s1, scratch);
            } else {
                sp_split_range(c1 - c0, ith, nth, &s0, &s1);
                compute_ax(j, u, c0, stride, c0 + s0, c0 + s1, 0, stride, scratch);
            }
            barrier(j, nth, &passed);
            add_b_terms(j, u, c0, c1, stride, b0, b1);
        }
    }
}

void sp_lora_apply(const sp_context *ctx, const sp_weight *w, const float *x, float *y, int32_t n) {
    size_t n_slots = 0;
    for (int32_t t = 0; t < n; t++)
        if (ctx->rows[t].lora && ctx->rows[t].lora->n > n_slots) n_slots = ctx->rows[t].lora->n;
    if (!n_slots) return;
    const int64_t index = sp_model_weight_index(ctx->model, w);
    if (index < 0) return;
    float ax[AX_FLOATS];
    lora_job j = {.ctx = ctx, .index = index, .x = x, .y = y, .n_in = w->n_in, .n_out = w->n_out, .n = n, .n_slots = n_slots, .ax = ax};
    atomic_init(&j.arrived, 0);
    sp_threadpool_run(ctx->pool, lora_worker, &j);
}
