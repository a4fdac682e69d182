/* libFuzzer target over the tokenizers: byte 0 picks a vocabulary from
 * ../shared (every tokenizer GGUF found there, loaded once), byte 1 the
 * tokenize and detokenize flags, the rest is the text (any bytes: invalid
 * UTF-8, NULs, special-token text). Tokenize, detokenize whole and
 * streamed; nothing may crash, leak or read out of bounds. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sprout.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { MAX_VOCABS = 32 };
static sprout_gguf *ggufs[MAX_VOCABS];
static sprout_tokenizer *toks[MAX_VOCABS];
static int n_vocabs = -1;

static void load_vocabs(void) {
    n_vocabs = 0;
    const char *shared = getenv("SPROUT_SHARED_DIR");
    if (!shared || !*shared) shared = SPROUT_SHARED_DIR_DEFAULT;
    static const char *const dirs[] = {"tokenizer", "models"};
    for (int k = 0; k < 2; k++) {
        char dir[1024];
        snprintf(dir, sizeof dir, "%s/%s", shared, dirs[k]);
        DIR *d = opendir(dir);
        struct dirent *e;
        while (d && (e = readdir(d)) && n_vocabs < MAX_VOCABS) {
            size_t len = strlen(e->d_name);
            if (len < 6 || strcmp(e->d_name + len - 5, ".gguf")) continue;
            char path[2048];
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            if (sprout_gguf_open(path, &ggufs[n_vocabs]) != SPROUT_OK) continue;
            if (sprout_tokenizer_create(ggufs[n_vocabs], &toks[n_vocabs]) != SPROUT_OK) {
                sprout_gguf_close(ggufs[n_vocabs]);
                continue;
            }
            n_vocabs++;
        }
        if (d) closedir(d);
    }
    if (n_vocabs == 0) {
        fprintf(stderr, "fuzz_tokenizer: no vocabularies under %s\n", shared);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (n_vocabs < 0) load_vocabs();
    if (size < 2) return 0;
    const sprout_tokenizer *t = toks[data[0] % n_vocabs];
    const unsigned flags = data[1];
    const char *text = (const char *)data + 2;
    const size_t len = size - 2;

    size_t cap = len + 8, n = 0;
    sprout_token *ids = malloc(cap * sizeof *ids);
    if (sprout_tokenize(t, text, len, flags & 3, ids, cap, &n) != SPROUT_OK) {
        free(ids);
        return 0;
    }
    char *out = malloc(4 * len + 64);
    size_t out_len;
    sprout_detokenize(t, ids, n, (flags >> 2) & 7, out, 4 * len + 64, &out_len);

    sprout_detokenizer *d;
    if (sprout_detokenizer_create(t, (flags >> 2) & 7, &d) == SPROUT_OK) {
        const char *piece;
        size_t piece_len;
        for (size_t i = 0; i < n; i++) sprout_detokenizer_push(d, ids[i], &piece, &piece_len);
        sprout_detokenizer_push(d, (sprout_token)(flags * 1000), &piece, &piece_len); /* maybe out of range */
        sprout_detokenizer_flush(d, &piece, &piece_len);
        sprout_detokenizer_free(d);
    }
    free(out);
    free(ids);
    return 0;
}
