/* A minimal test harness: CHECK records a failure and goes on, so one run
 * shows every broken case; TEST_MAIN_END prints the tally CTest logs and
 * turns it into the exit status. */
#ifndef SPROUT_TEST_UTIL_H
#define SPROUT_TEST_UTIL_H

#include <dirent.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "sprout.h"

static int test_passed, test_failed;

#define CHECK(cond)                                                                                   \
    do {                                                                                              \
        if (cond) {                                                                                   \
            test_passed++;                                                                            \
        } else {                                                                                      \
            test_failed++;                                                                            \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);                  \
        }                                                                                             \
    } while (0)

#define CHECK_MSG(cond, ...)                                                                          \
    do {                                                                                              \
        if (cond) {                                                                                   \
            test_passed++;                                                                            \
        } else {                                                                                      \
            test_failed++;                                                                            \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond);                  \
            fprintf(stderr, __VA_ARGS__);                                                             \
            fputc('\n', stderr);                                                                      \
        }                                                                                             \
    } while (0)

#define TEST_MAIN_END()                                                                               \
    do {                                                                                              \
        printf("%d passed, %d failed\n", test_passed, test_failed);                                   \
        return test_failed ? 1 : 0;                                                                   \
    } while (0)

/* The shared data folder: $SPROUT_SHARED_DIR, else the path CMake baked in. */
static inline const char *test_shared_dir(void) {
    const char *env = getenv("SPROUT_SHARED_DIR");
#ifdef SPROUT_SHARED_DIR_DEFAULT
    return env && *env ? env : SPROUT_SHARED_DIR_DEFAULT;
#else
    return env && *env ? env : "../shared";
#endif
}

/* SPROUT_TEST_QUICK set and not "0": a shorter run (the sanitizers' and
 * the emulators' builds set it), every code path still walked. */
static inline bool test_quick_run(void) {
    const char *v = getenv("SPROUT_TEST_QUICK");
    return v && *v && strcmp(v, "0");
}

/* Calls fn(dir, name, ctx) for every file of the shared folder's `subdir`
 * whose name ends in `suffix`; fn says whether it counted the file. Returns
 * the count (a failed check when the folder cannot be listed). */
typedef bool (*test_file_fn)(const char *dir, const char *name, void *ctx);
static inline int test_for_each_shared_file(const char *subdir, const char *suffix, test_file_fn fn, void *ctx) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/%s", test_shared_dir(), subdir);
    DIR *d = opendir(dir);
    CHECK_MSG(d != NULL, "cannot list %s", dir);
    if (!d) return 0;
    int counted = 0;
    const size_t suffix_len = strlen(suffix);
    struct dirent *e;
    while ((e = readdir(d))) {
        const size_t len = strlen(e->d_name);
        if (len > suffix_len && !strcmp(e->d_name + len - suffix_len, suffix) && fn(dir, e->d_name, ctx)) counted++;
    }
    closedir(d);
    return counted;
}

/* Reads a whole file; NULL if it cannot. */
static inline char *test_read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf) {
        buf[n] = 0;
        if (len) *len = (size_t)n;
    }
    return buf;
}

/* Runs a shell command; *out gets everything it printed on stdout (the
 * caller frees it). Returns its exit status, or -1 if it did not exit. */
static inline int test_run_command(const char *cmd, char **out) {
    FILE *p = popen(cmd, "r");
    *out = NULL;
    if (!p) return -1;
    size_t cap = 1 << 16, len = 0, n;
    char *buf = malloc(cap);
    while (buf && (n = fread(buf + len, 1, cap - len - 1, p)) > 0) {
        len += n;
        if (cap - len < 4096) {
            char *grown = realloc(buf, cap *= 2);
            if (!grown) free(buf);
            buf = grown;
        }
    }
    if (buf) buf[len] = 0;
    int status = pclose(p);
    *out = buf ? buf : calloc(1, 1);
    return status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* A fresh temporary directory for files a test writes. */
static inline const char *test_temp_dir(void) {
    static char dir[256];
    if (!dir[0]) {
        const char *base = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/sprout-test-XXXXXX", base && *base ? base : "/tmp");
        if (!mkdtemp(dir)) {
            perror("mkdtemp");
            exit(2);
        }
    }
    return dir;
}

/* Tokens, text, finish reason and every log-probability, bit for bit. */
static inline bool test_same_result(const sprout_result *a, const sprout_result *b) {
    if (!a || !b) return false;
    size_t na, nb, la, lb;
    const sprout_token *ta = sprout_result_tokens(a, &na), *tb = sprout_result_tokens(b, &nb);
    const char *xa = sprout_result_text(a, &la), *xb = sprout_result_text(b, &lb);
    if (na != nb || memcmp(ta, tb, na * sizeof *ta) || la != lb || memcmp(xa, xb, la)) return false;
    if (sprout_result_finish_reason(a) != sprout_result_finish_reason(b)) return false;
    for (size_t i = 0; i < na; i++) {
        float pa, pb;
        const sprout_token *ia, *ib;
        const float *va, *vb;
        size_t ka, kb;
        if (sprout_result_logprob(a, i, &pa, &ia, &va, &ka) != SPROUT_OK || sprout_result_logprob(b, i, &pb, &ib, &vb, &kb) != SPROUT_OK)
            return false;
        if (memcmp(&pa, &pb, sizeof pa) || ka != kb || memcmp(ia, ib, ka * sizeof *ia) || memcmp(va, vb, ka * sizeof *va)) return false;
    }
    return true;
}

/* A model of ../shared (rel: "models/stories260K.gguf", "arch/llama-Q8_0.gguf"
 * ...) on one thread (these tiny models gain nothing from more, and CTest
 * runs tests side by side) with a context of n_ctx; NULL (a failed check)
 * if it does not load. */
static inline sprout_model *test_load_shared(const char *rel, int32_t n_ctx) {
    char path[2048];
    snprintf(path, sizeof path, "%s/%s", test_shared_dir(), rel);
    sprout_model_params mp = {.struct_size = sizeof mp, .n_threads = 1, .n_ctx = n_ctx};
    sprout_model *m = NULL;
    CHECK_MSG(sprout_model_load(path, &mp, &m) == SPROUT_OK, "%s: %s", rel, sprout_last_error());
    return m;
}

#endif
