/* Workers wait for the next job by spinning a short while and then
 * sleeping on a condition variable: a decode step runs dozens of short jobs
 * back to back, and waking a sleeping thread for each would cost more than
 * the job. */
#include "runtime/threadpool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "core/error.h"

enum { SPIN_ROUNDS = 20000 };

struct sp_threadpool {
    int n_threads;
    pthread_t *threads;
    pthread_mutex_t lock;
    pthread_cond_t start, done;
    sp_parallel_fn fn;
    void *ctx;
    atomic_uint generation; /* bumped for every job */
    atomic_int pending;     /* workers still running the current job */
    atomic_int sleepers;    /* workers blocked on `start` */
    atomic_bool quit;
};

typedef struct worker_arg {
    sp_threadpool *pool;
    int ith;
} worker_arg;

static void *worker(void *p) {
    worker_arg *arg = p;
    sp_threadpool *pool = arg->pool;
    const int ith = arg->ith;
    free(arg);
    unsigned seen = 0;
    for (;;) {
        unsigned gen = atomic_load_explicit(&pool->generation, memory_order_acquire);
        for (int spin = 0; gen == seen && spin < SPIN_ROUNDS && !atomic_load(&pool->quit); spin++) {
            sp_cpu_relax();
            gen = atomic_load_explicit(&pool->generation, memory_order_acquire);
        }
        if (gen == seen) {
            pthread_mutex_lock(&pool->lock);
            atomic_fetch_add(&pool->sleepers, 1);
            while ((gen = atomic_load(&pool->generation)) == seen && !atomic_load(&pool->quit)) pthread_cond_wait(&pool->start, &pool->lock);
            atomic_fetch_sub(&pool->sleepers, 1);
            pthread_mutex_unlock(&pool->lock);
        }
        if (atomic_load(&pool->quit)) return NULL;
        seen = gen;
        pool->fn(pool->ctx, ith, pool->n_threads);
        if (atomic_fetch_sub_explicit(&pool->pending, 1, memory_order_acq_rel) == 1) {
            pthread_mutex_lock(&pool->lock);
            pthread_cond_signal(&pool->done);
            pthread_mutex_unlock(&pool->lock);
        }
    }
}

sprout_status sp_threadpool_create(int n_threads, sp_threadpool **out) {
    *out = NULL;
    /* refused, not lowered: a caller who asked for 300 threads and silently got 256 would measure the wrong thing */
    if (n_threads < 1 || n_threads > SPROUT_MAX_THREADS)
        return sp_fail(SPROUT_ERR_OUT_OF_RANGE, "%d threads: the thread pool holds 1 to %d", n_threads, SPROUT_MAX_THREADS);
    sp_threadpool *pool = calloc(1, sizeof *pool);
    if (!pool) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
    pool->n_threads = n_threads;
    pthread_mutex_init(&pool->lock, NULL);
    pthread_cond_init(&pool->start, NULL);
    pthread_cond_init(&pool->done, NULL);
    pool->threads = calloc((size_t)n_threads, sizeof *pool->threads);
    if (!pool->threads) {
        sp_threadpool_free(pool);
        return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    for (int i = 1; i < n_threads; i++) {
        worker_arg *arg = malloc(sizeof *arg);
        if (arg) *arg = (worker_arg){pool, i};
        if (!arg || pthread_create(&pool->threads[i], NULL, worker, arg) != 0) {
            free(arg);
            pool->n_threads = i; /* only the started ones are joined */
            sp_threadpool_free(pool);
            return sp_fail(SPROUT_ERR_INTERNAL, "cannot start thread %d", i);
        }
    }
    *out = pool;
    return SPROUT_OK;
}

void sp_threadpool_free(sp_threadpool *pool) {
    if (!pool) return;
    pthread_mutex_lock(&pool->lock);
    atomic_store(&pool->quit, true);
    pthread_cond_broadcast(&pool->start);
    pthread_mutex_unlock(&pool->lock);
    for (int i = 1; pool->threads && i < pool->n_threads; i++) pthread_join(pool->threads[i], NULL);
    pthread_mutex_destroy(&pool->lock);
    pthread_cond_destroy(&pool->start);
    pthread_cond_destroy(&pool->done);
    free(pool->threads);
    free(pool);
}

int sp_threadpool_size(const sp_threadpool *pool) { return pool ? pool->n_threads : 1; }

void sp_threadpool_run(sp_threadpool *pool, sp_parallel_fn fn, void *ctx) {
    if (!pool || pool->n_threads == 1) {
        fn(ctx, 0, 1);
        return;
    }
    pool->fn = fn;
    pool->ctx = ctx;
    atomic_store_explicit(&pool->pending, pool->n_threads - 1, memory_order_relaxed);
    atomic_fetch_add(&pool->generation, 1); /* seq_cst: pairs with the sleepers check in the worker */
    if (atomic_load(&pool->sleepers) > 0) {
        pthread_mutex_lock(&pool->lock);
        pthread_cond_broadcast(&pool->start);
        pthread_mutex_unlock(&pool->lock);
    }
    fn(ctx, 0, pool->n_threads);
    for (int spin = 0; atomic_load_explicit(&pool->pending, memory_order_acquire) > 0 && spin < SPIN_ROUNDS; spin++) sp_cpu_relax();
    if (atomic_load_explicit(&pool->pending, memory_order_acquire) > 0) {
        pthread_mutex_lock(&pool->lock);
        while (atomic_load(&pool->pending) > 0) pthread_cond_wait(&pool->done, &pool->lock);
        pthread_mutex_unlock(&pool->lock);
    }
}
