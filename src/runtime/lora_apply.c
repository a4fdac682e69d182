#include "runtime/lora_apply.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include <sched.h>

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

/* The terms go by use slot: for slot u, every token whose set has a u-th
 * adapter with a pair for w gets y += s B (A x). A token's terms still add
 * in its set's order, each computed the same way whatever the batch and
 * the threads, so its bits do not depend on them. */
typedef struct lora_job {
    const sp_context *ctx;
    const sp_batch_token *rows; /* the tokens' batch entries: their adapter sets */
    int64_t index; /* the pairs' index in each adapter (sprout_lora.pairs) */
    const float *x;
    float *y;
    int64_t n_in, n_out;
    int32_t n;
    float *ax; /* AX_FLOATS */
    /* The step the threads are on: slot u's tokens [c0, c1), their A x in
     * ax rows `stride` (the slot's largest rank) apart. */
    size_t u;
    int64_t c0, c1, stride;
} lora_job;

/* Row t's pair `index` in its set's slot u (and its scale), or NULL. */
static const sp_lora_pair *row_pair(const sp_batch_token *rows, int64_t index, int64_t t, size_t u, float *scale) {
    const sp_lora_set *set = rows[t].lora;
    if (!set || u >= set->n) return NULL;
    const sp_lora_pair *p = &set->uses[u].adapter->pairs[index];
    if (!p->a.data) return NULL;
    if (scale) *scale = set->uses[u].scale * p->alpha_over_rank;
    return p;
}

static const sp_lora_pair *slot_pair(const lora_job *j, int64_t t, size_t u, float *scale) { return row_pair(j->rows, j->index, t, u, scale); }

/* The largest rank in slot u of rows [0, n); 0 when none has a pair there. */
static int64_t rows_rank(const sp_batch_token *rows, int64_t index, int64_t n, size_t u) {
    int64_t rank = 0;
    for (int64_t t = 0; t < n; t++) {
        const sp_lora_pair *p = row_pair(rows, index, t, u, NULL);
        if (p && p->a.n_out > rank) rank = p->a.n_out;
    }
    return rank;
}

/* The end of the run of rows from t0 with the same pair in slot u. */
static int64_t same_pair_end(const sp_batch_token *rows, int64_t index, int64_t t0, int64_t t1, size_t u) {
    const sp_lora_pair *p = row_pair(rows, index, t0, u, NULL);
    int64_t end = t0 + 1;
    while (end < t1 && row_pair(rows, index, end, u, NULL) == p) end++;
    return end;
}

/* A x of `count` tokens (x n_in apart) with pair p, rows [r0, r1) of A,
 * into ax (stride apart): one matmul, whose bits per token do not depend
 * on the count (kernels.h). */
static void pair_ax(const sp_context *ctx, const sp_lora_pair *p, const float *x, int64_t n_in, int64_t count, float *ax, int64_t stride,
                    int64_t r0, int64_t r1, float *scratch) {
    const int64_t rows_end = r1 < p->a.n_out ? r1 : p->a.n_out;
    if (r0 >= rows_end) return;
    ctx->kernels->matmul(&p->a, x, n_in, NULL, count, ax, stride, r0, rows_end, scratch);
    /* as the kernels round a token for F16 and BF16 rows (llama.cpp's
     * products); other types' B takes A x as it is */
    const sprout_type b_type = p->b.type;
    if (b_type == SPROUT_TYPE_F16 || b_type == SPROUT_TYPE_BF16)
        for (int64_t i = 0; i < count; i++)
            for (int64_t e = r0; e < rows_end; e++)
                ax[i * stride + e] = b_type == SPROUT_TYPE_F16 ? sp_fp16_round(ax[i * stride + e]) : sp_bf16_round(ax[i * stride + e]);
}

/* A x for the step's tokens [t0, t1), rows [r0, r1) of each A: runs of
 * tokens with the same pair in one matmul. */
static void compute_ax(const lora_job *j, int64_t t0, int64_t t1, int64_t r0, int64_t r1, float *scratch) {
    for (int64_t t = t0, end; t < t1; t = end) {
        end = same_pair_end(j->rows, j->index, t, t1, j->u);
        const sp_lora_pair *p = slot_pair(j, t, j->u, NULL);
        if (p) pair_ax(j->ctx, p, j->x + t * j->n_in, j->n_in, end - t, j->ax + (t - j->c0) * j->stride, j->stride, r0, r1, scratch);
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

/* y[lo, hi) += s (B ax) over one tile of B's r rows (y: the tile's first
 * output): each output's sum the same whichever are added. */
TILE_CLONES static void tile_term(const float *tile, const float *ax, int64_t r, float s, float *y, int64_t lo, int64_t hi) {
    float acc[SP_LORA_B_TILE] = {0};
    for (int64_t k = 0; k < r; k++) {
#if defined(__GNUC__)
        __builtin_prefetch((const char *)(tile + k * SP_LORA_B_TILE) + 2 * PREFETCH_AHEAD);
#endif
        for (int i = 0; i < SP_LORA_B_TILE; i++) acc[i] += ax[k] * tile[k * SP_LORA_B_TILE + i];
    }
    for (int64_t i = lo; i < hi; i++) y[i] += s * acc[i];
}

#if defined(__x86_64__) && defined(__GNUC__)
/* tile_term over halves (sp_lora_f16_tiles): widened exactly, then the
 * same products and sums in the same order, so the same bits as floats. */
__attribute__((target("avx2,f16c"))) static void tile_term_f16(const uint16_t *tile, const float *ax, int64_t r, float s, float *y,
                                                               int64_t lo, int64_t hi) {
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
    for (int64_t i = lo; i < hi; i++) y[i] += s * out[i];
}
#endif

/* One tile of pair p's B, in whichever form model/lora.c keeps it. */
static void pair_tile_term(const sp_lora_pair *p, int64_t b, const float *ax, float s, float *y, int64_t lo, int64_t hi) {
    const int64_t r = p->b.n_in, at = b * r * SP_LORA_B_TILE;
#if defined(__x86_64__) && defined(__GNUC__)
    if (p->b_tiles_f16) {
        tile_term_f16(p->b_tiles_f16 + at, ax, r, s, y, lo, hi);
        return;
    }
#endif
    tile_term(p->b_tiles + at, ax, r, s, y, lo, hi);
}

/* y += s B (A x) for the step's tokens [t0, t1), B's tiles [b0, b1): a
 * tile's r rows stay in cache while every token passes over them. */
static void add_b_terms(const lora_job *j, int64_t t0, int64_t t1, int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; b++) {
        const int64_t o0 = b * SP_LORA_B_TILE, width = j->n_out - o0 < SP_LORA_B_TILE ? j->n_out - o0 : SP_LORA_B_TILE;
        for (int64_t t = t0; t < t1; t++) {
            float s;
            const sp_lora_pair *p = slot_pair(j, t, j->u, &s);
            if (p) pair_tile_term(p, b, j->ax + (t - j->c0) * j->stride, s, j->y + t * j->n_out + o0, 0, width);
        }
    }
}

static int64_t b_tiles(const lora_job *j) { return (j->n_out + SP_LORA_B_TILE - 1) / SP_LORA_B_TILE; }

/* The step's tokens [t0, t1) on thread ith: each one's A x, then its B terms. */
static void tokens_on(const lora_job *j, int64_t t0, int64_t t1, int ith) {
    compute_ax(j, t0, t1, 0, j->stride, j->ctx->scratch + (int64_t)ith * j->ctx->scratch_stride);
    add_b_terms(j, t0, t1, 0, b_tiles(j));
}

/* The step's tokens split among the threads, each token's A x and then its
 * B terms on one thread: no thread waits for another's A x. */
static void tokens_worker(void *user, int ith, int nth) {
    const lora_job *j = user;
    int64_t s0, s1;
    sp_split_range(j->c1 - j->c0, ith, nth, &s0, &s1);
    tokens_on(j, j->c0 + s0, j->c0 + s1, ith);
}

/* A lone token's A x, its rows split among the threads. */
static void ax_rows_worker(void *user, int ith, int nth) {
    const lora_job *j = user;
    int64_t r0, r1;
    sp_split_range(j->stride, ith, nth, &r0, &r1);
    compute_ax(j, j->c0, j->c1, r0, r1, j->ctx->scratch + (int64_t)ith * j->ctx->scratch_stride);
}

/* Then its B terms, B's tiles split among the threads. */
static void b_tiles_worker(void *user, int ith, int nth) {
    const lora_job *j = user;
    int64_t b0, b1;
    sp_split_range(b_tiles(j), ith, nth, &b0, &b1);
    add_b_terms(j, j->c0, j->c1, b0, b1);
}

/* Rows [0, n) of x (n_in wide) and y (n_out wide): the terms of each
 * adapter's pair `index`, through the pool, or all on thread on_thread
 * (>= 0: a pool worker's share of sp_lora_apply_each). */
static void apply_pairs(const sp_context *ctx, const sp_batch_token *rows, int64_t index, int64_t n_in, int64_t n_out, const float *x, float *y,
                        int32_t n, int on_thread) {
    size_t n_slots = 0;
    for (int32_t t = 0; t < n; t++)
        if (rows[t].lora && rows[t].lora->n > n_slots) n_slots = rows[t].lora->n;
    if (!n_slots) return;
    float ax[AX_FLOATS];
    lora_job j = {.ctx = ctx, .rows = rows, .index = index, .x = x, .y = y, .n_in = n_in, .n_out = n_out, .n = n, .ax = ax};
    /* One run of the pool per chunk (the next chunk overwrites ax), or two
     * for a lone token, as matmul.c stages its prompt runs: its B terms
     * read the A x rows of every thread. */
    for (j.u = 0; j.u < n_slots; j.u++) {
        j.stride = rows_rank(rows, index, n, j.u);
        if (!j.stride) continue;
        const int64_t chunk = AX_FLOATS / j.stride;
        for (j.c0 = 0; j.c0 < n; j.c0 += chunk) {
            j.c1 = j.c0 + chunk < n ? j.c0 + chunk : n;
            if (on_thread >= 0) tokens_on(&j, j.c0, j.c1, on_thread);
            else if ((j.c1 - j.c0) * j.stride * (j.n_in + j.n_out) < ctx->lora_parallel_min_work) tokens_worker(&j, 0, 1);
            else if (j.c1 - j.c0 > 1) sp_threadpool_run(ctx->pool, tokens_worker, &j);
            else {
                sp_threadpool_run(ctx->pool, ax_rows_worker, &j);
                sp_threadpool_run(ctx->pool, b_tiles_worker, &j);
            }
        }
    }
}

/* The pair index of w's terms for rows [0, n), or -1 where no row has an adapter. */
static int64_t terms_index(const sp_context *ctx, const sp_weight *w, int32_t n) {
    bool any = false;
    for (int32_t t = 0; t < n && !any; t++) any = ctx->rows[t].lora != NULL;
    return any ? sp_model_weight_index(ctx->model, w) : -1;
}

void sp_lora_apply(const sp_context *ctx, const sp_weight *w, const float *x, float *y, int32_t n) {
    const int64_t index = terms_index(ctx, w, n);
    if (index >= 0) apply_pairs(ctx, ctx->rows, index, w->n_in, w->n_out, x, y, n, -1);
}

/* The multiply-adds of pair `index`'s terms over rows [0, n): each row's
 * A x and B, every adapter of its set with the pair. */
static int64_t terms_work(const sp_context *ctx, int64_t index, const sp_weight *w, int32_t n) {
    int64_t work = 0;
    for (int32_t t = 0; t < n; t++)
        for (size_t u = 0; ctx->rows[t].lora && u < ctx->rows[t].lora->n; u++) {
            const sp_lora_pair *p = &ctx->rows[t].lora->uses[u].adapter->pairs[index];
            if (p->a.data) work += p->a.n_out * (w->n_in + w->n_out);
        }
    return work;
}

enum { EACH_MAX = 16 };

typedef struct each_job {
    const sp_context *ctx;
    const sp_lora_target *targets;
    int64_t index[EACH_MAX];
    int owner[EACH_MAX];
    int n_targets;
    int32_t n;
} each_job;

static void each_worker(void *user, int ith, int nth) {
    (void)nth;
    const each_job *e = user;
    for (int i = 0; i < e->n_targets; i++)
        if (e->owner[i] == ith && e->index[i] >= 0) {
            const sp_lora_target *tg = &e->targets[i];
            apply_pairs(e->ctx, e->ctx->rows, e->index[i], tg->w->n_in, tg->w->n_out, tg->x, tg->y, e->n, ith);
        }
}

void sp_lora_apply_each(const sp_context *ctx, const sp_lora_target *targets, int n_targets, int32_t n) {
    const int nth = sp_threadpool_size(ctx->pool);
    each_job e = {.ctx = ctx, .targets = targets, .n_targets = n_targets, .n = n};
    int adapted = 0;
    bool small = n_targets <= EACH_MAX;
    int64_t work[EACH_MAX], load[SPROUT_MAX_THREADS] = {0};
    for (int i = 0; small && i < n_targets; i++) {
        e.index[i] = terms_index(ctx, targets[i].w, n);
        work[i] = e.index[i] >= 0 ? terms_work(ctx, e.index[i], targets[i].w, n) : 0;
        adapted += work[i] > 0;
        small = work[i] < ctx->lora_parallel_min_work;
    }
    if (nth < 2 || adapted < 2 || !small) {
        for (int i = 0; i < n_targets; i++) sp_lora_apply(ctx, targets[i].w, targets[i].x, targets[i].y, n);
        return;
    }
    /* the largest first, each to the least loaded thread */
    bool placed[EACH_MAX] = {false};
    for (int k = 0; k < n_targets; k++) {
        int big = -1, least = 0;
        for (int i = 0; i < n_targets; i++)
            if (!placed[i] && (big < 0 || work[i] > work[big])) big = i;
        for (int t = 1; t < nth; t++)
            if (load[t] < load[least]) least = t;
        placed[big] = true, e.owner[big] = least, load[least] += work[big];
    }
    sp_threadpool_run(ctx->pool, each_worker, &e);
}

/* --- terms inside the matmul's run (sp_lora_fused) ----------------------------------------------------- */

/* A x units of half the work worth a hand-off (lora_parallel_min_work)
 * at most, so that a lone token's large-rank A spreads over the threads;
 * never fewer than this many rows. */
enum { FUSED_UNIT_MIN_ROWS = 4 };

/* Lane l's units: its runs of tokens with the same pair, each run's A
 * rows in pieces where the work is large. */
static bool plan_units(sp_lora_fused *f, int l) {
    const int i = f->lane[l].target;
    const size_t u = f->lane[l].u;
    const int64_t n_in = f->target[i].w->n_in, stride = f->lane[l].stride;
    for (int32_t t = 0, end; t < f->n[i]; t = end) {
        end = (int32_t)same_pair_end(f->ctx->rows, f->index[i], t, f->n[i], u);
        if (!row_pair(f->ctx->rows, f->index[i], t, u, NULL)) continue;
        const int64_t unit_work = f->ctx->lora_parallel_min_work / 2, work = (end - t) * stride * n_in;
        int64_t pieces = unit_work > 0 ? (work + unit_work - 1) / unit_work : INT64_MAX;
        if (pieces > stride / FUSED_UNIT_MIN_ROWS) pieces = stride / FUSED_UNIT_MIN_ROWS;
        if (pieces < 1) pieces = 1;
        for (int64_t k = 0; k < pieces; k++) {
            if (f->n_units == SP_LORA_FUSED_UNITS) return false;
            int64_t r0, r1;
            sp_split_range(stride, (int)k, (int)pieces, &r0, &r1);
            f->unit[f->n_units++] = (sp_lora_fused_unit){l, t, end, (int32_t)r0, (int32_t)r1};
        }
    }
    return true;
}

bool sp_lora_fused_plan(const sp_context *ctx, const sp_lora_target *targets, const int32_t *n, int n_targets, sp_lora_fused *f) {
    if (n_targets > SP_LORA_FUSED_TARGETS) return false;
    f->ctx = ctx;
    f->n_units = 0;
    int n_lanes = 0;
    int64_t ax_used = 0;
    for (int i = 0; i < n_targets; i++) {
        f->target[i] = targets[i];
        f->n[i] = n[i];
        f->first_lane[i] = n_lanes;
        f->index[i] = targets[i].w ? terms_index(ctx, targets[i].w, n[i]) : -1;
        if (f->index[i] < 0) continue;
        size_t n_slots = 0;
        for (int32_t t = 0; t < n[i]; t++)
            if (ctx->rows[t].lora && ctx->rows[t].lora->n > n_slots) n_slots = ctx->rows[t].lora->n;
        for (size_t u = 0; u < n_slots; u++) {
            const int64_t stride = rows_rank(ctx->rows, f->index[i], n[i], u);
            if (!stride) continue;
            if (n_lanes == SP_LORA_FUSED_LANES || ax_used + n[i] * stride > SP_LORA_FUSED_AX) return false;
            f->lane[n_lanes] = (sp_lora_fused_lane){i, u, stride, ax_used};
            ax_used += n[i] * stride;
            if (!plan_units(f, n_lanes++)) return false;
        }
    }
    f->first_lane[n_targets] = n_lanes;
    atomic_init(&f->next_unit, 0);
    atomic_init(&f->units_done, 0);
    return f->n_units > 0;
}

void sp_lora_fused_ax(sp_lora_fused *f, int ith) {
    const sp_context *ctx = f->ctx;
    float *scratch = ctx->scratch + (int64_t)ith * ctx->scratch_stride;
    for (int k; (k = atomic_fetch_add_explicit(&f->next_unit, 1, memory_order_relaxed)) < f->n_units;) {
        const sp_lora_fused_unit *un = &f->unit[k];
        const sp_lora_fused_lane *ln = &f->lane[un->lane];
        const sp_lora_target *tg = &f->target[ln->target];
        const sp_lora_pair *p = row_pair(ctx->rows, f->index[ln->target], un->t0, ln->u, NULL);
        pair_ax(ctx, p, tg->x + (int64_t)un->t0 * tg->w->n_in, tg->w->n_in, un->t1 - un->t0, f->ax + ln->ax_at + (int64_t)un->t0 * ln->stride,
                ln->stride, un->r0, un->r1, scratch);
        atomic_fetch_add_explicit(&f->units_done, 1, memory_order_release);
    }
}

/* Spins this long for the other threads' units before yielding the core. */
enum { FUSED_SPIN_ROUNDS = 1 << 14 };

void sp_lora_fused_terms(sp_lora_fused *f, int i, int64_t o0, int64_t o1) {
    if (f->index[i] < 0 || f->first_lane[i] == f->first_lane[i + 1]) return;
    /* the units were all taken before any thread computes rows: each is
     * finishing on a running thread */
    for (int spin = 0; atomic_load_explicit(&f->units_done, memory_order_acquire) < f->n_units; spin++)
        if (spin < FUSED_SPIN_ROUNDS) sp_cpu_relax();
        else sched_yield();
    const sp_lora_target *tg = &f->target[i];
    const int64_t n_out = tg->w->n_out;
    for (int l = f->first_lane[i]; l < f->first_lane[i + 1]; l++) {
        const sp_lora_fused_lane *ln = &f->lane[l];
        for (int64_t b = o0 / SP_LORA_B_TILE; b * SP_LORA_B_TILE < o1; b++) {
            const int64_t first = b * SP_LORA_B_TILE, lo = o0 > first ? o0 - first : 0;
            const int64_t end = first + SP_LORA_B_TILE < n_out ? first + SP_LORA_B_TILE : n_out, hi = (o1 < end ? o1 : end) - first;
            for (int32_t t = 0; t < f->n[i]; t++) {
                float s;
                const sp_lora_pair *p = row_pair(f->ctx->rows, f->index[i], t, ln->u, &s);
                if (p) pair_tile_term(p, b, f->ax + ln->ax_at + (int64_t)t * ln->stride, s, tg->y + (int64_t)t * n_out + first, lo, hi);
            }
        }
    }
}

void sp_lora_apply_expert(const sp_context *ctx, const sp_batch_token *rows, int32_t il, sp_lora_experts kind, int32_t expert,
                          const sp_weight *w, const float *x, float *y, int32_t n) {
    if (ctx->model->hp.n_expert > 0)
        apply_pairs(ctx, rows, sp_lora_expert_index(ctx->model, il, kind, expert), w->n_in, w->n_out, x, y, n, -1);
}
