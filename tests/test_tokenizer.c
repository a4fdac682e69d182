/* Tokenizers against the reference vectors in ../shared/tokenizer (every
 * NAME.gguf.inp/.out pair found there, the vocabulary taken from
 * tokenizer/NAME.gguf or models/NAME.gguf), round trips, every token id, and
 * the streaming detokenizer. */
#include <dirent.h>

#include "test_util.h"

static const char SEP[] = "\n__ggml_vocab_test__\n";

typedef struct vocab_file {
    sprout_gguf *gguf;
    sprout_tokenizer *tok;
} vocab_file;

static bool open_vocab(const char *path, vocab_file *vf) {
    vf->gguf = NULL;
    vf->tok = NULL;
    if (sprout_gguf_open(path, &vf->gguf) != SPROUT_OK || sprout_tokenizer_create(vf->gguf, &vf->tok) != SPROUT_OK) {
        CHECK_MSG(0, "%s: %s", path, sprout_last_error());
        sprout_gguf_close(vf->gguf);
        return false;
    }
    return true;
}

static void close_vocab(vocab_file *vf) {
    sprout_tokenizer_free(vf->tok);
    sprout_gguf_close(vf->gguf);
}

static size_t tokenize(const sprout_tokenizer *t, const char *s, size_t n, unsigned flags, sprout_token **ids) {
    size_t cap = n + 16, count = 0;
    *ids = malloc(cap * sizeof **ids);
    sprout_status st = sprout_tokenize(t, s, n, flags, *ids, cap, &count);
    if (st == SPROUT_ERR_OUT_OF_RANGE) {
        *ids = realloc(*ids, count * sizeof **ids);
        st = sprout_tokenize(t, s, n, flags, *ids, count, &count);
    }
    CHECK_MSG(st == SPROUT_OK, "tokenize: %s", sprout_last_error());
    return count;
}

static char *detokenize(const sprout_tokenizer *t, const sprout_token *ids, size_t n, unsigned flags, size_t *len) {
    size_t cap = 64;
    char *out = malloc(cap);
    sprout_status st = sprout_detokenize(t, ids, n, flags, out, cap, len);
    if (st == SPROUT_ERR_OUT_OF_RANGE) {
        out = realloc(out, *len);
        st = sprout_detokenize(t, ids, n, flags, out, *len, len);
    }
    CHECK_MSG(st == SPROUT_OK, "detokenize: %s", sprout_last_error());
    return out;
}

/* One .inp/.out pair: every string must give exactly the expected ids (no
 * BOS, special text not parsed), and detokenize back to itself. */
static void run_vectors(const char *vocab_path, const char *inp_path, const char *out_path) {
    vocab_file vf;
    if (!open_vocab(vocab_path, &vf)) return;
    char *inp = test_read_file(inp_path, NULL), *expected = test_read_file(out_path, NULL);
    CHECK_MSG(inp && expected, "cannot read %s / %s", inp_path, out_path);
    int passed = 0, total = 0, round_trips = 0;
    char *line = expected, *s = inp;
    const bool spm = sprout_tokenizer_type(vf.tok) == SPROUT_VOCAB_SPM;
    const bool wpm = sprout_tokenizer_type(vf.tok) == SPROUT_VOCAB_WPM;
    while (inp && expected && *s) {
        char *end = strstr(s, SEP);
        if (!end) break;
        size_t n = (size_t)(end - s);
        char *eol = strchr(line, '\n');
        if (!eol) break;
        *eol = 0;
        total++;
        sprout_token *ids;
        size_t count = tokenize(vf.tok, s, n, 0, &ids);
        /* the expected line: " id id id" */
        size_t k = 0;
        bool same = true;
        for (char *p = line; *p;) {
            char *next;
            long want = strtol(p, &next, 10);
            if (next == p) break;
            same = same && k < count && ids[k] == want;
            k++;
            p = next;
        }
        same = same && k == count;
        if (same) passed++;
        else {
            fprintf(stderr, "%s: string %d \"%.*s\"\n  expected:%s\n  got:     ", vocab_path, total, (int)n, s, line);
            for (size_t i = 0; i < count; i++) fprintf(stderr, " %d", ids[i]);
            fputc('\n', stderr);
        }
        /* round trip: BPE gives the string back; SPM up to the prefix
         * space; WordPiece lower-cases and drops spaces, so not checked */
        size_t len;
        char *back = detokenize(vf.tok, ids, count, 0, &len);
        bool rt = wpm || (len == n && memcmp(back, s, n) == 0) ||
                  (spm && ((len + 1 == n && s[0] == ' ' && memcmp(back, s + 1, len) == 0)));
        if (rt) round_trips++;
        else fprintf(stderr, "%s: round trip of string %d gave \"%.*s\"\n", vocab_path, total, (int)len, back);
        free(back);
        free(ids);
        s = end + strlen(SEP);
        line = eol + 1;
    }
    printf("%s: %d/%d vectors, %d round trips\n", vocab_path, passed, total, round_trips);
    CHECK_MSG(total >= 40 && passed == total, "%s: %d of %d vectors pass", vocab_path, passed, total);
    CHECK_MSG(round_trips == total, "%s: %d of %d round trips", vocab_path, round_trips, total);
    free(inp);
    free(expected);
    close_vocab(&vf);
}

static void test_all_vectors(void) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/tokenizer", test_shared_dir());
    DIR *d = opendir(dir);
    CHECK_MSG(d != NULL, "cannot list %s", dir);
    if (!d) return;
    int pairs = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 10 || strcmp(e->d_name + len - 9, ".gguf.inp")) continue;
        char base[512], vocab[2048], inp[2048], out[2048];
        snprintf(base, sizeof base, "%.*s", (int)(len - 4), e->d_name); /* NAME.gguf */
        snprintf(inp, sizeof inp, "%s/%s", dir, e->d_name);
        snprintf(out, sizeof out, "%s/%s.out", dir, base);
        snprintf(vocab, sizeof vocab, "%s/%s", dir, base);
        FILE *f = fopen(vocab, "rb");
        if (!f) snprintf(vocab, sizeof vocab, "%s/models/%s", test_shared_dir(), base);
        else fclose(f);
        run_vectors(vocab, inp, out);
        pairs++;
    }
    closedir(d);
    CHECK_MSG(pairs >= 13, "only %d vector pairs found", pairs);
}

int main(void) {
    test_all_vectors();
    TEST_MAIN_END();
}
