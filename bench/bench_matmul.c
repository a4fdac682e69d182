/* One weight matrix times a batch of tokens through the dispatched matmul
 * kernel, on one thread: the kernel's own speed, without the rest of the
 * forward pass. Prints GMAC/s (multiply-adds per second) for each type at
 * each token count. Random weights, quantized by sprout's reference
 * quantizers. Not a test.
 *
 * usage: [BENCH_TOKENS=N] [BENCH_PROMPT=1] build/bench_matmul [N_IN N_OUT] [TYPES...]   (default 2048 5632, Q4_0 Q8_0 Q4_K Q6_K F16)
 * BENCH_PROMPT=1 measures the level's matmul for prompt tokens (kernels.h), where it has one. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "kernels/kernels.h"
#include "quant/quant.h"

enum { MAX_TOKENS = 512 };

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* n blocks of a type sprout has no quantizer for (the grid IQ formats):
 * random bytes, each block's half-float scale 1/16 (IQ1_M's in its scale
 * words' top nibbles); speed does not depend on the values. */
static void random_blocks(sprout_type type, size_t block_bytes, uint8_t *data, size_t n) {
    for (size_t i = 0; i < n * block_bytes; i++) data[i] = (uint8_t)rand();
    const uint16_t d = 0x2C00;
    for (size_t b = 0; b < n; b++) {
        uint8_t *blk = data + b * block_bytes;
        if (type != SPROUT_TYPE_IQ1_M) memcpy(blk, &d, sizeof d);
        else
            for (int k = 0; k < 4; k++) blk[block_bytes - 8 + 2 * k + 1] = (uint8_t)((blk[block_bytes - 8 + 2 * k + 1] & 0x0F) | ((d >> (4 * k)) & 0x0F) << 4);
    }
}

int main(int argc, char **argv) {
    int64_t n_in = 2048, n_out = 5632;
    int first_type = 1;
    if (argc > 2 && atoll(argv[1]) > 0) n_in = atoll(argv[1]), n_out = atoll(argv[2]), first_type = 3;
    static const char *default_types[] = {"Q4_0", "Q8_0", "Q4_K", "Q6_K", "F16"};
    const char **types = argc > first_type ? (const char **)argv + first_type : default_types;
    const int n_types = argc > first_type ? argc - first_type : 5;
    const sp_kernels *k = sp_kernels_get();
    const bool prompt = getenv("BENCH_PROMPT") && k->matmul_prompt;
    void (*const matmul)(const sp_weight *, const float *, int64_t, const void *, int64_t, float *, int64_t, int64_t, int64_t, float *) =
        prompt ? k->matmul_prompt : k->matmul;
    printf("kernel level %s%s, %lld x %lld, one thread, GMAC/s\n", k->name, prompt ? " (prompt tokens)" : "", (long long)n_in, (long long)n_out);
    /* BENCH_TOKENS=N measures that count alone (for a profile of one shape) */
    int token_counts[] = {1, 4, 8, 32, 64, 256};
    size_t n_counts = sizeof token_counts / sizeof *token_counts;
    const char *only = getenv("BENCH_TOKENS");
    if (only && atoi(only) >= 1 && atoi(only) <= MAX_TOKENS) token_counts[0] = atoi(only), n_counts = 1;
    printf("| type |");
    for (size_t i = 0; i < n_counts; i++) printf(" %d tokens |", token_counts[i]);
    printf("\n");
    float *weights_f = malloc(sizeof(float) * (size_t)(n_in * n_out));
    float *x = malloc(sizeof(float) * (size_t)(n_in * MAX_TOKENS)), *y = malloc(sizeof(float) * (size_t)(n_out * MAX_TOKENS));
    float *scratch = malloc(sizeof(float) * (size_t)sp_matmul_scratch_floats(n_in));
    srand(1);
    for (int64_t i = 0; i < n_in * n_out; i++) weights_f[i] = (float)rand() / RAND_MAX - 0.5f;
    for (int64_t i = 0; i < n_in * MAX_TOKENS; i++) x[i] = (float)rand() / RAND_MAX - 0.5f;
    for (int ti = 0; ti < n_types; ti++) {
        sprout_type type;
        const sp_type_traits *tr = sprout_type_from_name(types[ti], &type) ? sp_type_traits_of(type) : NULL;
        if (!tr || n_in % tr->block_size) {
            fprintf(stderr, "skipping %s\n", types[ti]);
            continue;
        }
        const size_t row_bytes = (size_t)(n_in / tr->block_size) * tr->block_bytes;
        /* in 2 MiB pages, as the engine advises for its mapped weights
         * (core/mapped_file.c): from 4 KiB pages a matrix larger than the
         * caches reads slower */
        const size_t huge = (size_t)2 << 20, data_bytes = (row_bytes * (size_t)n_out + huge - 1) / huge * huge;
        uint8_t *data = aligned_alloc(huge, data_bytes);
        if (data) (void)madvise(data, data_bytes, MADV_HUGEPAGE);
        if (tr->quantize_ref)
            for (int64_t o = 0; o < n_out; o++) tr->quantize_ref(weights_f + o * n_in, data + (size_t)o * row_bytes, n_in);
        else random_blocks(type, tr->block_bytes, data, row_bytes / tr->block_bytes * (size_t)n_out);
        if (getenv("BENCH_MMAP")) { /* weights from a mapped file, as the engine reads them */
            FILE *f = fopen("/tmp/bench_matmul.bin", "wb");
            fwrite(data, row_bytes, (size_t)n_out, f);
            fclose(f);
            f = fopen("/tmp/bench_matmul.bin", "rb");
            data = mmap(NULL, row_bytes * (size_t)n_out, PROT_READ, MAP_PRIVATE, fileno(f), 0);
        }
        const sp_weight w = {.data = data, .type = type, .n_in = n_in, .n_out = n_out, .row_bytes = row_bytes};
        /* the int8 paths get their activations quantized once, as the forward pass gives them */
        void *xq = NULL;
        if (k->quantize && sp_x86_int8_type(type) && n_in % 32 == 0) {
            xq = malloc((size_t)(n_in / 32 * SP_ACT_BLOCK_BYTES * MAX_TOKENS));
            for (int t = 0; t < MAX_TOKENS; t++) k->quantize(x + t * n_in, n_in, (char *)xq + (size_t)(t * (n_in / 32) * SP_ACT_BLOCK_BYTES));
        }
        printf("| %s |", tr->name);
        for (size_t i = 0; i < n_counts; i++) {
            const int nt = token_counts[i];
            matmul(&w, x, n_in, xq, nt, y, n_out, 0, n_out, scratch); /* warm */
            /* the fastest single call over half a second: this machine's
             * neighbours take bursts of time, and a call of a matrix in
             * cache lasts microseconds, so some calls see none of them */
            double best = 0.;
            const double start = now_s();
            for (double t0 = start, t1 = start; t1 - start < 0.5; t0 = t1) {
                matmul(&w, x, n_in, xq, nt, y, n_out, 0, n_out, scratch);
                t1 = now_s();
                const double rate = (double)n_in * (double)n_out * nt / (t1 - t0) * 1e-9;
                if (rate > best) best = rate;
            }
            printf(" %.1f |", best);
            fflush(stdout);
        }
        printf("\n");
        if (!getenv("BENCH_MMAP")) free(data);
        free(xq);
    }
    free(weights_f), free(x), free(y), free(scratch);
    return 0;
}
