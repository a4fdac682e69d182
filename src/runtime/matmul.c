#include "runtime/matmul.h"

#include <stdatomic.h>
#include <stdbool.h>

#include "runtime/lora_apply.h"
#include "runtime/parallel.h"

/* One weight's rows against its tokens. */
typedef struct matmul_job {
    const sp_context *ctx;
    const sp_weight *w;
    const float *x;
    int64_t x_stride;
    const void *xq;
    int64_t n_tokens;
    float *y;
    int64_t y_stride;
    const sp_batch_token *rows; /* the tokens' batch entries (prompt or not) */
    const void *staged;         /* the prompt runs' tokens staged one after another, or NULL */
} matmul_job;

/* Projections run together: their output rows one after another (job i's
 * from start[i]), handed out among the pool's threads in one run. */
enum { MATMUL_PARTS_MAX = 64 };
typedef struct matmul_run {
    matmul_job job[MATMUL_PARTS_MAX];
    int64_t start[MATMUL_PARTS_MAX + 1];
    int n_jobs;
    /* 0: an even share of the rows each; else each thread's first
     * first_rows rows, then the rest in pieces of piece_rows as they go */
    int64_t first_rows, piece_rows;
    atomic_int_fast64_t next_piece;
    sp_lora_fused *lora; /* the jobs' adapter terms, made in the same run; or NULL */
} matmul_run;

/* The end of the run of tokens of one kind (prompt or not) from t0. */
static int64_t run_end(const sp_batch_token *rows, int64_t n, int64_t t0) {
    int64_t t1 = t0 + 1;
    while (t1 < n && rows[t1].prompt == rows[t0].prompt) t1++;
    return t1;
}

/* Rows [o0, o1) of the job, on thread ith's scratch. */
static void matmul_rows(const matmul_job *j, int ith, int64_t o0, int64_t o1) {
    const sp_kernels *k = j->ctx->kernels;
    float *scratch = j->ctx->scratch + (int64_t)ith * j->ctx->scratch_stride;
    if (!sp_prompt_path_differs(k, j->w->type)) {
        k->matmul(j->w, j->x, j->x_stride, j->xq, j->n_tokens, j->y, j->y_stride, o0, o1, scratch);
        return;
    }
    /* runs of prompt tokens and of generated ones, each through its own
     * entry; the prompt entry reads its runs staged (or stages them itself) */
    const sp_batch_token *rows = j->rows;
    const size_t xq_row = (size_t)(j->w->n_in / 32) * SP_ACT_BLOCK_BYTES;
    size_t staged_at = 0;
    for (int64_t t0 = 0, t1; t0 < j->n_tokens; t0 = t1) {
        t1 = run_end(rows, j->n_tokens, t0);
        const float *x = j->x + t0 * j->x_stride;
        float *y = j->y + t0 * j->y_stride;
        if (rows[t0].prompt) {
            k->matmul_prompt(j->w, x, j->x_stride, j->staged ? (const char *)j->staged + staged_at : NULL, t1 - t0, y, j->y_stride, o0, o1,
                             scratch);
            staged_at += k->prompt_staged_bytes(j->w->type, j->w->n_in, t1 - t0);
        } else {
            k->matmul(j->w, x, j->x_stride, j->xq ? (const char *)j->xq + (size_t)t0 * xq_row : NULL, t1 - t0, y, j->y_stride, o0, o1,
                      scratch);
        }
    }
}

/* The prompt runs of a matmul's tokens, staged into ctx->staged one after
 * another, each run's token tiles split among the threads. */
static void stage_worker(void *p, int ith, int nth) {
    const matmul_job *j = p;
    const sp_kernels *k = j->ctx->kernels;
    const sp_batch_token *rows = j->rows;
    size_t staged_at = 0;
    for (int64_t t0 = 0, t1; t0 < j->n_tokens; t0 = t1) {
        t1 = run_end(rows, j->n_tokens, t0);
        if (!rows[t0].prompt) continue;
        const int64_t n = t1 - t0, columns = sp_prompt_tile_tokens(n);
        int64_t k0, k1;
        sp_split_range((n + columns - 1) / columns, ith, nth, &k0, &k1);
        k->stage_prompt(j->w, j->x + t0 * j->x_stride, j->x_stride, n, k0, k1, (char *)j->ctx->staged + staged_at);
        staged_at += k->prompt_staged_bytes(j->w->type, j->w->n_in, n);
    }
}

/* The bytes the prompt runs among a job's tokens take staged. */
static size_t staged_bytes(const matmul_job *j) {
    size_t bytes = 0;
    for (int64_t t0 = 0, t1; t0 < j->n_tokens; t0 = t1) {
        t1 = run_end(j->rows, j->n_tokens, t0);
        if (j->rows[t0].prompt) bytes += j->ctx->kernels->prompt_staged_bytes(j->w->type, j->w->n_in, t1 - t0);
    }
    return bytes;
}

/* Whether some of a job's tokens go through the level's prompt entry. */
static bool has_prompt_runs(const matmul_job *j) {
    if (!sp_prompt_path_differs(j->ctx->kernels, j->w->type)) return false;
    for (int64_t t = 0; t < j->n_tokens; t++)
        if (j->rows[t].prompt) return true;
    return false;
}

/* Rows [g0, g1) of the run's row space, job by job. */
static void run_rows(const matmul_run *r, int ith, int64_t g0, int64_t g1) {
    for (int i = 0; i < r->n_jobs && g0 < g1; i++) {
        if (r->start[i + 1] <= g0) continue;
        const int64_t end = g1 < r->start[i + 1] ? g1 : r->start[i + 1];
        matmul_rows(&r->job[i], ith, g0 - r->start[i], end - r->start[i]);
        if (r->lora) sp_lora_fused_terms(r->lora, i, g0 - r->start[i], end - r->start[i]);
        g0 = end;
    }
}

static void matmul_worker(void *p, int ith, int nth) {
    matmul_run *r = p;
    const int64_t total = r->start[r->n_jobs];
    if (r->lora) sp_lora_fused_ax(r->lora, ith);
    if (!r->first_rows) {
        int64_t o0, o1;
        sp_split_range(total, ith, nth, &o0, &o1);
        if (o0 < o1) run_rows(r, ith, o0, o1);
        return;
    }
    /* (nth: the pool's size, which first_rows was sized for) */
    run_rows(r, ith, ith * r->first_rows, (ith + 1) * r->first_rows);
    const int64_t rest = nth * r->first_rows;
    for (int64_t k; (k = atomic_fetch_add_explicit(&r->next_piece, 1, memory_order_relaxed)) * r->piece_rows + rest < total;) {
        const int64_t o0 = rest + k * r->piece_rows;
        run_rows(r, ith, o0, o0 + r->piece_rows < total ? o0 + r->piece_rows : total);
    }
}

/* Matmuls of up to this many tokens (the decode kernels' batches) hand
 * their last rows out in pieces (matmul), and run together where a caller
 * has several (sp_matmul_parts); so do prompt runs through the prompt
 * entry, in pieces of its group of panels (kernels.h). */
enum { MATMUL_PIECES_MAX_TOKENS = 8, PROMPT_PIECE_ROWS = SP_PROMPT_ROW_GROUP };

/* The run's rows among the pool's threads (the prompt runs staged first
 * where the run is one job that has them). */
static void matmul_parallel(const sp_context *ctx, matmul_run *r, bool prompt_runs) {
    /* A thread can run slower than another for a whole matmul (a shared
     * host's vCPUs do), so part of the rows goes in pieces to whoever is
     * free. A few tokens' rows stream from memory: the last quarter (or a
     * little more: shares are whole 32-row tiles) in few pieces, for each
     * call starts its streams cold and prepares its activations again. With
     * the prompt runs staged once for all threads (where they fit the
     * buffer), half their rows go in pieces of a panel group (where the
     * matrix has rows enough). Other batches keep even shares. Whoever
     * computes a row, its arithmetic is the same. */
    const int nth = sp_threadpool_size(ctx->pool);
    const int64_t total = r->start[r->n_jobs];
    int64_t most_tokens = 0;
    for (int i = 0; i < r->n_jobs; i++) most_tokens = r->job[i].n_tokens > most_tokens ? r->job[i].n_tokens : most_tokens;
    r->first_rows = 0;
    if (nth > 1 && prompt_runs && r->n_jobs == 1 && ctx->staged && staged_bytes(&r->job[0]) <= ctx->staged_capacity) {
        r->job[0].staged = ctx->staged;
        sp_threadpool_run(ctx->pool, stage_worker, &r->job[0]);
        r->first_rows = total / 2 / nth / PROMPT_PIECE_ROWS * PROMPT_PIECE_ROWS;
        r->piece_rows = PROMPT_PIECE_ROWS;
    } else if (nth > 1 && !prompt_runs && most_tokens <= MATMUL_PIECES_MAX_TOKENS) {
        r->first_rows = total * 3 / 4 / nth / 32 * 32;
        r->piece_rows = ((total - nth * r->first_rows) / (2 * nth) + 31) / 32 * 32;
        if (r->piece_rows < 32) r->piece_rows = 32;
    }
    if (r->first_rows > 0) atomic_init(&r->next_piece, 0);
    sp_threadpool_run(ctx->pool, matmul_worker, r);
}

static matmul_job job_of(const sp_context *ctx, const sp_matmul_part *p) {
    return (matmul_job){.ctx = ctx, .w = p->w, .x = p->x->f32, .x_stride = p->w->n_in, .xq = p->x->blocks, .n_tokens = p->n, .y = p->y,
                        .y_stride = p->w->n_out, .rows = p->rows ? p->rows : ctx->rows};
}

/* Jobs [0, n) of r, the start of each set: in one run of the pool, or on
 * this thread where the work is too small to hand out. */
static void run_jobs(const sp_context *ctx, matmul_run *r, bool prompt_runs) {
    int64_t work = 0;
    r->start[0] = 0;
    for (int i = 0; i < r->n_jobs; i++) {
        r->start[i + 1] = r->start[i] + r->job[i].w->n_out;
        work += r->job[i].w->n_out * r->job[i].w->n_in * r->job[i].n_tokens;
    }
    if (work < SP_PARALLEL_MIN_WORK) {
        r->first_rows = 0;
        matmul_worker(r, 0, 1);
    } else matmul_parallel(ctx, r, prompt_runs);
}

/* The adapters' low-rank terms of parts [p0, p1), after W x is whole
 * (lora_apply.c): the parts of the batch's own rows, which share their
 * tokens. */
static void apply_terms(const sp_context *ctx, const sp_matmul_part *parts, int p0, int p1) {
    sp_lora_target targets[MATMUL_PARTS_MAX];
    int n_targets = 0;
    int32_t n = 0;
    for (int i = p0; i < p1; i++) {
        if (parts[i].rows) continue;
        if (n_targets && parts[i].n != n) {
            sp_lora_apply_each(ctx, targets, n_targets, n);
            n_targets = 0;
        }
        n = parts[i].n;
        targets[n_targets++] = (sp_lora_target){parts[i].w, parts[i].x->f32, parts[i].y};
    }
    if (n_targets) sp_lora_apply_each(ctx, targets, n_targets, n);
}

/* A plan of the terms of parts [p0, p1) made inside their run (a decode
 * batch's), or false. */
static bool fused_terms(const sp_context *ctx, const sp_matmul_part *parts, int p0, int p1, sp_lora_fused *f) {
    if (p1 - p0 > SP_LORA_FUSED_TARGETS) return false;
    sp_lora_target targets[SP_LORA_FUSED_TARGETS];
    int32_t n[SP_LORA_FUSED_TARGETS];
    for (int i = p0; i < p1; i++) {
        /* an expert's rows: its terms are sp_lora_apply_expert's */
        targets[i - p0] = (sp_lora_target){parts[i].rows ? NULL : parts[i].w, parts[i].x->f32, parts[i].y};
        n[i - p0] = parts[i].n;
    }
    return sp_lora_fused_plan(ctx, targets, n, p1 - p0, f);
}

void sp_matmul_parts(const sp_context *ctx, const sp_matmul_part *parts, int n_parts) {
    matmul_run r;
    r.lora = NULL;
    for (int p0 = 0; p0 < n_parts; p0 += MATMUL_PARTS_MAX) {
        const int p1 = n_parts - p0 < MATMUL_PARTS_MAX ? n_parts : p0 + MATMUL_PARTS_MAX;
        /* a prompt's runs, or more tokens than a decode batch, go one
         * projection at a time (their rows are many; the prompt entry
         * stages its tokens per weight) */
        bool together = true;
        for (int i = p0; i < p1 && together; i++) {
            const matmul_job j = job_of(ctx, &parts[i]);
            together = j.n_tokens <= MATMUL_PIECES_MAX_TOKENS && !has_prompt_runs(&j);
        }
        if (together) {
            sp_lora_fused fused;
            r.lora = fused_terms(ctx, parts, p0, p1, &fused) ? &fused : NULL;
            r.n_jobs = p1 - p0;
            for (int i = p0; i < p1; i++) r.job[i - p0] = job_of(ctx, &parts[i]);
            run_jobs(ctx, &r, false);
            if (!r.lora) apply_terms(ctx, parts, p0, p1);
            r.lora = NULL;
        } else {
            for (int i = p0; i < p1; i++) {
                r.n_jobs = 1;
                r.job[0] = job_of(ctx, &parts[i]);
                run_jobs(ctx, &r, has_prompt_runs(&r.job[0]));
            }
            apply_terms(ctx, parts, p0, p1);
        }
    }
}

void sp_matmul(const sp_context *ctx, const sp_weight *w, const sp_rows *x, float *y, int32_t n) {
    const sp_matmul_part part = {.w = w, .x = x, .y = y, .n = n};
    sp_matmul_parts(ctx, &part, 1);
}

void sp_matmul_rows(const sp_context *ctx, const sp_weight *w, const float *x, int64_t x_stride, float *y, int64_t y_stride, int32_t n,
                    int64_t o0, int64_t o1, int ith) {
    const matmul_job j = {.ctx = ctx, .w = w, .x = x, .x_stride = x_stride, .n_tokens = n, .y = y, .y_stride = y_stride, .rows = ctx->rows};
    matmul_rows(&j, ith, o0, o1);
}

void sp_rows_quantize(const sp_context *ctx, const sp_rows *rows, int64_t width, int32_t t) {
    if (rows->blocks) ctx->kernels->quantize(rows->f32 + t * width, width, sp_rows_block_at(rows->blocks, width, t, 0));
}
