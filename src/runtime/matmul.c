#include "runtime/matmul.h"

#include <stdatomic.h>
#include <stdbool.h>

#include "runtime/lora_apply.h"
#include "runtime/parallel.h"

typedef struct matmul_job {
    const sp_context *ctx;
    const sp_weight *w;
    const float *x;
    int64_t x_stride;
    const void *xq;
    int64_t n_tokens;
    float *y;
    int64_t y_stride;
    /* 0: an even share of the rows each; else each thread's first
     * first_rows rows, then the rest in pieces of piece_rows as they go */
    int64_t first_rows, piece_rows;
    atomic_int_fast64_t next_piece;
    const void *staged; /* the prompt runs' tokens staged one after another, or NULL */
} matmul_job;

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
    const sp_batch_token *rows = j->ctx->rows;
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
    const sp_batch_token *rows = j->ctx->rows;
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

/* The bytes the prompt runs among n tokens take staged for w. */
static size_t staged_bytes(const sp_context *ctx, const sp_weight *w, int64_t n) {
    size_t bytes = 0;
    for (int64_t t0 = 0, t1; t0 < n; t0 = t1) {
        t1 = run_end(ctx->rows, n, t0);
        if (ctx->rows[t0].prompt) bytes += ctx->kernels->prompt_staged_bytes(w->type, w->n_in, t1 - t0);
    }
    return bytes;
}

static void matmul_worker(void *p, int ith, int nth) {
    matmul_job *j = p;
    const int64_t n_out = j->w->n_out;
    if (!j->first_rows) {
        int64_t o0, o1;
        sp_split_range(n_out, ith, nth, &o0, &o1);
        if (o0 < o1) matmul_rows(j, ith, o0, o1);
        return;
    }
    /* (nth: the pool's size, which first_rows was sized for) */
    matmul_rows(j, ith, ith * j->first_rows, (ith + 1) * j->first_rows);
    const int64_t rest = nth * j->first_rows;
    for (int64_t k; (k = atomic_fetch_add_explicit(&j->next_piece, 1, memory_order_relaxed)) * j->piece_rows + rest < n_out;) {
        const int64_t o0 = rest + k * j->piece_rows;
        matmul_rows(j, ith, o0, o0 + j->piece_rows < n_out ? o0 + j->piece_rows : n_out);
    }
}

/* Matmuls of up to this many tokens (the decode kernels' batches) hand
 * their last rows out in pieces (matmul); so do prompt runs through the
 * prompt entry, in pieces of its group of panels (kernels.h). */
enum { MATMUL_PIECES_MAX_TOKENS = 8, PROMPT_PIECE_ROWS = SP_PROMPT_ROW_GROUP };

static void matmul_parallel(const sp_context *ctx, matmul_job *j);

void sp_matmul(const sp_context *ctx, const sp_weight *w, const sp_rows *x, float *y, int32_t n) {
    matmul_job j = {.ctx = ctx, .w = w, .x = x->f32, .x_stride = w->n_in, .xq = x->blocks, .n_tokens = n, .y = y, .y_stride = w->n_out};
    if (w->n_out * w->n_in * n < SP_PARALLEL_MIN_WORK) matmul_worker(&j, 0, 1);
    else matmul_parallel(ctx, &j);
    /* the adapters' low-rank terms, after W x is whole (lora_apply.c) */
    sp_lora_apply(ctx, w, x->f32, y, n);
}

void sp_matmul_rows(const sp_context *ctx, const sp_weight *w, const float *x, int64_t x_stride, float *y, int64_t y_stride, int32_t n,
                    int64_t o0, int64_t o1, int ith) {
    const matmul_job j = {.ctx = ctx, .w = w, .x = x, .x_stride = x_stride, .n_tokens = n, .y = y, .y_stride = y_stride};
    matmul_rows(&j, ith, o0, o1);
}

/* The rows of j among the pool's threads. */
static void matmul_parallel(const sp_context *ctx, matmul_job *j) {
    const sp_weight *w = j->w;
    const int32_t n = (int32_t)j->n_tokens;
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
    bool prompt_runs = false;
    if (sp_prompt_path_differs(ctx->kernels, w->type))
        for (int64_t t = 0; t < n; t++) prompt_runs |= ctx->rows[t].prompt;
    if (nth > 1 && prompt_runs && ctx->staged && staged_bytes(ctx, w, n) <= ctx->staged_capacity) {
        j->staged = ctx->staged;
        sp_threadpool_run(ctx->pool, stage_worker, j);
        j->first_rows = w->n_out / 2 / nth / PROMPT_PIECE_ROWS * PROMPT_PIECE_ROWS;
        j->piece_rows = PROMPT_PIECE_ROWS;
    } else if (nth > 1 && !prompt_runs && n <= MATMUL_PIECES_MAX_TOKENS) {
        j->first_rows = w->n_out * 3 / 4 / nth / 32 * 32;
        j->piece_rows = ((w->n_out - nth * j->first_rows) / (2 * nth) + 31) / 32 * 32;
        if (j->piece_rows < 32) j->piece_rows = 32;
    }
    if (j->first_rows > 0) atomic_init(&j->next_piece, 0);
    sp_threadpool_run(ctx->pool, matmul_worker, j);
}


void sp_rows_quantize(const sp_context *ctx, const sp_rows *rows, int64_t width, int32_t t) {
    if (rows->blocks) ctx->kernels->quantize(rows->f32 + t * width, width, sp_rows_block_at(rows->blocks, width, t, 0));
}
