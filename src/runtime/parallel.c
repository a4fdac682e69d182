#include "runtime/parallel.h"

typedef struct token_job {
    sp_context *ctx;
    const void *arg;
    int32_t n;
    sp_token_range_fn fn;
} token_job;

static void token_worker(void *p, int ith, int nth) {
    const token_job *j = p;
    int64_t t0, t1;
    sp_split_range(j->n, ith, nth, &t0, &t1);
    if (t0 < t1) j->fn(j->ctx, j->arg, (int32_t)t0, (int32_t)t1);
}

void sp_for_each_token(sp_context *ctx, int32_t n, int64_t work_per_token, sp_token_range_fn fn, const void *arg) {
    token_job j = {ctx, arg, n, fn};
    if (n < 2 || (int64_t)n * work_per_token < SP_PARALLEL_MIN_WORK) token_worker(&j, 0, 1);
    else sp_threadpool_run(ctx->pool, token_worker, &j);
}
