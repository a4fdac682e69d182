/* Tokenizer throughput on 1 MiB inputs: English prose (the licence texts
 * every Debian system has, repeated), one 1 MiB word of 'a', and 1 MiB of
 * random CJK (one giant pre-token). Prints MB/s per vocabulary and input;
 * times are for comparison between builds, not pass/fail.
 *
 * usage: bench_tokenize VOCAB.gguf [VOCAB.gguf ...] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sprout.h"

enum { MIB = 1 << 20 };

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static size_t english(char *buf) {
    static const char *const files[] = {"/usr/share/common-licenses/GPL-3", "/usr/share/common-licenses/Apache-2.0",
                                        "/usr/share/common-licenses/GPL-2"};
    size_t n = 0;
    while (n < MIB) {
        size_t before = n;
        for (size_t f = 0; f < 3 && n < MIB; f++) {
            FILE *fp = fopen(files[f], "rb");
            if (!fp) continue;
            n += fread(buf + n, 1, MIB - n, fp);
            fclose(fp);
        }
        if (n == before) break;
    }
    return n;
}

static size_t cjk(char *buf) {
    uint64_t s = 1;
    size_t n = 0;
    while (n + 3 <= MIB) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        uint32_t c = 0x4E00 + (uint32_t)(s >> 33) % (0x9FFF - 0x4E00);
        buf[n++] = (char)(0xE0 | (c >> 12));
        buf[n++] = (char)(0x80 | ((c >> 6) & 0x3F));
        buf[n++] = (char)(0x80 | (c & 0x3F));
    }
    return n;
}

int main(int argc, char **argv) {
    char *buf = malloc(MIB);
    sprout_token *ids = malloc(sizeof *ids * (MIB + 16));
    if (!buf || !ids) return 1;
    printf("%-32s %-8s %10s %10s %9s\n", "vocabulary", "input", "tokens", "seconds", "MB/s");
    for (int a = 1; a < argc; a++) {
        sprout_gguf *g = NULL;
        sprout_tokenizer *t = NULL;
        if (sprout_gguf_open(argv[a], &g) != SPROUT_OK || sprout_tokenizer_create(g, &t) != SPROUT_OK) {
            fprintf(stderr, "%s: %s\n", argv[a], sprout_last_error());
            sprout_gguf_close(g);
            continue;
        }
        const char *name = strrchr(argv[a], '/') ? strrchr(argv[a], '/') + 1 : argv[a];
        for (int kind = 0; kind < 3; kind++) {
            size_t n = kind == 0 ? english(buf) : kind == 1 ? (memset(buf, 'a', MIB), (size_t)MIB) : cjk(buf);
            size_t count = 0;
            double t0 = now();
            sprout_status st = sprout_tokenize(t, buf, n, 0, ids, MIB + 16, &count);
            double dt = now() - t0;
            printf("%-32s %-8s %10zu %10.3f %9.2f%s\n", name, kind == 0 ? "english" : kind == 1 ? "aaaa" : "cjk", count, dt,
                   (double)n / 1e6 / dt, st == SPROUT_OK ? "" : "  FAILED");
        }
        sprout_tokenizer_free(t);
        sprout_gguf_close(g);
    }
    free(buf);
    free(ids);
    return 0;
}
