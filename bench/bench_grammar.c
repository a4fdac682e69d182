/* Grammar-constrained decoding's cost per token: compiles a GBNF grammar,
 * builds a vocabulary's trie, then walks a document the grammar accepts
 * token by token, as a model that always picks the longest allowed token
 * matching the document's next bytes would, and times each mask. The walk
 * runs twice with the same masker: first with an empty cache (each new key
 * is a walk of the whole vocabulary), then warm (the steady state of a long
 * generation). Prints the compile and build times and the mask time per
 * step: median, p90, max.
 *
 * usage: bench_grammar VOCAB.gguf GRAMMAR.gbnf DOCUMENT [ROOT] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/mapped_file.h"
#include "grammar/grammar.h"
#include "grammar/grammar_mask.h"
#include "sprout.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* One walk of the document; the mask times (seconds) go to times. Returns
 * the steps taken, or -1 if the document cannot be followed. */
static long walk(sp_grammar_masker *m, const sp_grammar *g, const char *doc, size_t doc_len, uint32_t n_vocab,
                 const char *const *text, const uint32_t *len, uint64_t *bits, double *times, double *inside, long *n_inside) {
    sp_grammar_state *st = sp_grammar_state_new(g);
    size_t at = 0;
    long steps = 0;
    while (at < doc_len) {
        double t0 = now();
        if (sp_grammar_mask(m, st, bits) != SPROUT_OK) return -1;
        times[steps] = now() - t0;
        if (st->need > 0) inside[(*n_inside)++] = times[steps];
        uint32_t best = UINT32_MAX;
        for (uint32_t t = 0; t < n_vocab; t++)
            if (((bits[t >> 6] >> (t & 63)) & 1) && len[t] > 0 && len[t] <= doc_len - at &&
                (best == UINT32_MAX || len[t] > len[best]) && !memcmp(text[t], doc + at, len[t]))
                best = t;
        if (best == UINT32_MAX || !sp_grammar_accept(st, text[best], len[best])) {
            fprintf(stderr, "no allowed token continues the document at byte %zu\n", at);
            sp_grammar_state_free(st);
            return -1;
        }
        at += len[best];
        steps++;
    }
    if (!sp_grammar_can_end(st)) fprintf(stderr, "warning: the grammar cannot end after the document\n");
    sp_grammar_state_free(st);
    return steps;
}

static void report(const char *what, double *times, long n) {
    qsort(times, (size_t)n, sizeof *times, cmp_double);
    double sum = 0;
    for (long i = 0; i < n; i++) sum += times[i];
    printf("  %s %5ld steps  median %8.1f us  p90 %8.1f us  max %9.1f us  mean %8.1f us\n", what, n,
           times[n / 2] * 1e6, times[(n * 9) / 10] * 1e6, times[n - 1] * 1e6, sum / (double)n * 1e6);
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: bench_grammar VOCAB.gguf GRAMMAR.gbnf DOCUMENT [ROOT]\n");
        return 2;
    }
    sprout_gguf *gguf = NULL;
    sprout_tokenizer *tok = NULL;
    if (sprout_gguf_open(argv[1], &gguf) != SPROUT_OK || sprout_tokenizer_create(gguf, &tok) != SPROUT_OK) {
        fprintf(stderr, "%s: %s\n", argv[1], sprout_last_error());
        return 1;
    }
    sp_mapped_file gbnf_file, doc_file;
    if (sp_mapped_file_open(argv[2], &gbnf_file) != SPROUT_OK || sp_mapped_file_open(argv[3], &doc_file) != SPROUT_OK) {
        fprintf(stderr, "%s\n", sprout_last_error());
        return 1;
    }
    const char *gbnf = (const char *)gbnf_file.data, *doc = (const char *)doc_file.data;
    const size_t gbnf_len = (size_t)gbnf_file.size, doc_len = (size_t)doc_file.size;
    const uint32_t n_vocab = (uint32_t)sprout_tokenizer_vocab_size(tok);
    const char **text = malloc(n_vocab * sizeof *text);
    uint32_t *len = malloc(n_vocab * sizeof *len);
    for (uint32_t i = 0; i < n_vocab; i++) {
        size_t l = 0;
        if (sprout_token_to_piece(tok, (sprout_token)i, false, &text[i], &l) != SPROUT_OK) text[i] = "", l = 0;
        len[i] = (uint32_t)l;
    }

    double t0 = now();
    sp_grammar *g = NULL;
    if (sp_grammar_compile(gbnf, gbnf_len, argc > 4 ? argv[4] : NULL, &g) != SPROUT_OK) {
        fprintf(stderr, "%s: %s\n", argv[2], sprout_last_error());
        return 1;
    }
    const double t_compile = now() - t0;
    t0 = now();
    sp_grammar_vocab *v = NULL;
    sp_grammar_masker *m = NULL;
    if (sp_grammar_vocab_create(text, len, n_vocab, &v) != SPROUT_OK || sp_grammar_masker_create(g, v, &m) != SPROUT_OK) {
        fprintf(stderr, "%s\n", sprout_last_error());
        return 1;
    }
    const double t_trie = now() - t0;
    const char *name = strrchr(argv[1], '/') ? strrchr(argv[1], '/') + 1 : argv[1];
    printf("%s (%u tokens), %s, %zu-byte document\n", name, n_vocab, argv[2], doc_len);
    printf("  compile %.3f ms, vocabulary trie %.1f ms\n", t_compile * 1e3, t_trie * 1e3);

    uint64_t *bits = malloc(sp_grammar_mask_words(v) * 8);
    double *times = malloc((doc_len + 1) * sizeof *times), *inside = malloc((doc_len + 1) * sizeof *inside);
    for (int pass = 0; pass < 2; pass++) {
        t0 = now();
        long n_inside = 0;
        long steps = walk(m, g, doc, doc_len, n_vocab, text, len, bits, times, inside, &n_inside);
        if (steps <= 0) {
            if (steps < 0) fprintf(stderr, "a mask failed: %s\n", sprout_last_error());
            return 1;
        }
        const double total = now() - t0;
        report(pass == 0 ? "cold" : "warm", times, steps);
        if (pass == 0) printf("         (walk with the greedy pick: %.1f ms)\n", total * 1e3);
        if (n_inside) report("  of which inside a code point", inside, n_inside);
    }
    sp_grammar_mask_stats s;
    sp_grammar_mask_stats_get(m, &s);
    printf("  cache: %zu keys (%zu lengthened), %zu open tokens, %.1f MiB\n", s.keys, s.lengthened, s.dependent,
           (double)s.bytes / (1 << 20));

    free(bits), free(times), free(inside), free(text), free(len);
    sp_mapped_file_close(&gbnf_file);
    sp_mapped_file_close(&doc_file);
    sp_grammar_masker_free(m);
    sp_grammar_vocab_free(v);
    sp_grammar_free(g);
    sprout_tokenizer_free(tok);
    sprout_gguf_close(gguf);
    return 0;
}
