/* A fixed pool of worker threads running one parallel-for at a time: the
 * caller's thread takes part as thread 0, so a pool of n threads has n - 1
 * workers. Created once per pipeline; running a job allocates nothing. */
#ifndef SPROUT_RUNTIME_THREADPOOL_H
#define SPROUT_RUNTIME_THREADPOOL_H

#include "sprout.h"

typedef struct sp_threadpool sp_threadpool;

/* fn(ctx, ith, nth) is called once for every ith in [0, nth). */
typedef void (*sp_parallel_fn)(void *ctx, int ith, int nth);

/* SPROUT_ERR_OUT_OF_RANGE for n_threads outside [1, SPROUT_MAX_THREADS]. */
sprout_status sp_threadpool_create(int n_threads, sp_threadpool **out);
void sp_threadpool_free(sp_threadpool *pool);
int sp_threadpool_size(const sp_threadpool *pool);
/* Runs fn on every thread and returns when all have finished. */
void sp_threadpool_run(sp_threadpool *pool, sp_parallel_fn fn, void *ctx);

/* A spinning thread's pause: the other hardware thread of its core runs on. */
static inline void sp_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* The slice [*begin, *end) of n items that thread ith of nth takes. */
static inline void sp_split_range(int64_t n, int ith, int nth, int64_t *begin, int64_t *end) {
    int64_t per = n / nth, extra = n % nth;
    *begin = ith * per + (ith < extra ? ith : extra);
    *end = *begin + per + (ith < extra);
}

#endif
