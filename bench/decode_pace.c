/* Decode's matmul kernels against a plain read of the same rows: every
 * weight matrix of a GGUF model (the bytes one decoded token reads) through
 * the dispatched one-token kernel, each matrix's rows in even shares over
 * the threads, and the same shares summed by the read loop of `sprout bench
 * --roofline` (cli/read_bandwidth.c), the two alternating pass by pass so
 * that the host's bandwidth, which drifts from minute to minute, is shared
 * evenly between them. Their ratio is the kernels' fraction of the
 * memory's pace: near 1, a decode step is bound by the memory; well below,
 * by the kernel. Not a test; no attention, norms or sampling, and not the
 * engine's hand-out of a matmul's last rows in pieces (`sprout bench
 * --roofline` times the whole step).
 *
 * usage: build/decode_pace MODEL.gguf [THREADS [PASSES]]   (default 2, 20) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gguf/gguf_reader.h"
#include "kernels/kernels.h"
#include "quant/quant.h"
#include "read_bandwidth.h"
#include "runtime/threadpool.h"

typedef struct matrix {
    sp_weight w;
    void *xq; /* the int8 paths' activations, quantized once */
} matrix;

typedef struct pass {
    const matrix *m;
    const float *x;
    float *y;
    float **scratch;
    bool read_only;
    uint64_t sink[SPROUT_MAX_THREADS];
} pass;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* A kind of pass's seconds: their sum, the best and how many. */
typedef struct times {
    double sum, best;
    int n;
} times;

static void add_time(times *t, double seconds) {
    t->sum += seconds, t->n++;
    if (seconds < t->best) t->best = seconds;
}

static void one_matrix(void *ctx, int ith, int nth) {
    pass *p = ctx;
    const sp_weight *w = &p->m->w;
    int64_t o0, o1;
    sp_split_range(w->n_out, ith, nth, &o0, &o1);
    if (o0 >= o1) return;
    if (p->read_only) p->sink[ith] += cli_read_bytes(w->data + (size_t)o0 * w->row_bytes, (size_t)(o1 - o0) * w->row_bytes, NULL);
    else sp_kernels_get()->matmul(w, p->x, w->n_in, p->m->xq, 1, p->y, w->n_out, o0, o1, p->scratch[ith]);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODEL.gguf [THREADS [PASSES]]\n", argv[0]);
        return 2;
    }
    const int n_threads = argc > 2 ? atoi(argv[2]) : 2, passes = argc > 3 ? atoi(argv[3]) : 20;
    if (n_threads < 1 || n_threads > SPROUT_MAX_THREADS || passes < 1) {
        fprintf(stderr, "%s: 1 to %d threads, at least one pass\n", argv[0], SPROUT_MAX_THREADS);
        return 2;
    }
    sp_gguf_part part = {0};
    if (sp_gguf_part_load(argv[1], &part) != SPROUT_OK) {
        fprintf(stderr, "%s: cannot read the model\n", argv[1]);
        sp_gguf_part_free(&part);
        return 1;
    }
    const sp_kernels *k = sp_kernels_get();
    /* the matrices decode reads whole: 2-D weights, the token embeddings only as the (tied) output head */
    bool has_output = false;
    for (int64_t i = 0; i < part.n_tensors; i++) has_output |= strcmp(part.tensors[i].name, "output.weight") == 0;
    matrix *ms = calloc(part.n_tensors > 0 ? (size_t)part.n_tensors : 1, sizeof *ms);
    int n = 0;
    int64_t max_in = 0, max_out = 0;
    double bytes = 0.;
    for (int64_t i = 0; i < part.n_tensors; i++) {
        const sp_gguf_tensor *t = &part.tensors[i];
        const sp_type_traits *tr = sp_type_traits_of(t->type);
        if (t->n_dims != 2 || t->ne[1] < 2 || !tr || !tr->block_size || t->ne[0] % tr->block_size) continue;
        if (strcmp(t->name, "token_embd.weight") == 0 && has_output) continue;
        const size_t row_bytes = (size_t)(t->ne[0] / tr->block_size) * tr->block_bytes;
        ms[n].w = (sp_weight){.data = t->data, .type = t->type, .n_in = t->ne[0], .n_out = t->ne[1], .row_bytes = row_bytes};
        if (t->ne[0] > max_in) max_in = t->ne[0];
        if (t->ne[1] > max_out) max_out = t->ne[1];
        bytes += (double)row_bytes * (double)t->ne[1];
        n++;
    }
    float *x = malloc(sizeof(float) * (size_t)max_in), *y = malloc(sizeof(float) * (size_t)max_out);
    srand(1);
    for (int64_t i = 0; i < max_in; i++) x[i] = (float)rand() / RAND_MAX - 0.5f;
    for (int i = 0; i < n; i++)
        if (k->quantize && sp_x86_int8_type(ms[i].w.type) && ms[i].w.n_in % 32 == 0) {
            ms[i].xq = malloc((size_t)(ms[i].w.n_in / 32 * SP_ACT_BLOCK_BYTES));
            k->quantize(x, ms[i].w.n_in, ms[i].xq);
        }
    float *scratch[SPROUT_MAX_THREADS];
    for (int t = 0; t < n_threads; t++) scratch[t] = malloc(sizeof(float) * (size_t)sp_matmul_scratch_floats(max_in));
    sp_threadpool *pool = NULL;
    const bool started = sp_threadpool_create(n_threads, &pool) == SPROUT_OK;
    if (started) {
        pass p = {.x = x, .y = y, .scratch = scratch};
        times kernels = {0., 1e30, 0}, reads = {0., 1e30, 0};
        for (int i = 0; i < 2 * passes + 2; i++) {
            p.read_only = i & 1; /* odd passes: the read loop */
            const double t0 = now_s();
            for (int j = 0; j < n; j++) {
                p.m = &ms[j];
                sp_threadpool_run(pool, one_matrix, &p);
            }
            if (i >= 2) add_time(p.read_only ? &reads : &kernels, now_s() - t0); /* the first of each: pages mapped, caches warm */
        }
        uint64_t sink = 0;
        for (int t = 0; t < n_threads; t++) sink += p.sink[t];
        const char *loop;
        cli_read_bytes(NULL, 0, &loop);
        printf("%s: %d matrices, %.1f MiB a token, level %s, read loop %s, %d threads, %d passes each (checksum %llu)\n", argv[1], n,
               bytes / (1 << 20), k->name, loop, n_threads, passes, (unsigned long long)(sink & 0xff));
        printf("| | mean GB/s | best GB/s |\n|---|---|---|\n");
        printf("| one-token kernels | %.2f | %.2f |\n", bytes * kernels.n / kernels.sum * 1e-9, bytes / kernels.best * 1e-9);
        printf("| read loop, same rows | %.2f | %.2f |\n", bytes * reads.n / reads.sum * 1e-9, bytes / reads.best * 1e-9);
        printf("| kernels / read loop | %.3f | %.3f |\n", reads.sum / reads.n / (kernels.sum / kernels.n), reads.best / kernels.best);
    } else fprintf(stderr, "%s: cannot start %d threads\n", argv[0], n_threads);
    sp_threadpool_free(pool);
    for (int t = 0; t < n_threads; t++) free(scratch[t]);
    for (int i = 0; i < n; i++) free(ms[i].xq);
    free(ms), free(x), free(y);
    sp_gguf_part_free(&part);
    return started ? 0 : 1;
}
