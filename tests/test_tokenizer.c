/* Tokenizers against the reference vectors in ../shared/tokenizer (every
 * NAME.gguf.inp/.out pair found there, the vocabulary taken from
 * tokenizer/NAME.gguf or models/NAME.gguf), round trips, every token id, and
 * the streaming detokenizer. */
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gguf/gguf_writer.h"
#include "test_util.h"
#include "tokenizer/pretokenize.h"

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

/* NAME.gguf.inp with NAME.gguf.out beside it; the vocabulary is NAME.gguf
 * there or in models/. */
static bool run_vector_pair(const char *dir, const char *name, void *ctx) {
    (void)ctx;
    const size_t len = strlen(name);
    char base[512], vocab[2048], inp[2048], out[2048];
    snprintf(base, sizeof base, "%.*s", (int)(len - 4), name); /* NAME.gguf */
    snprintf(inp, sizeof inp, "%s/%s", dir, name);
    snprintf(out, sizeof out, "%s/%s.out", dir, base);
    snprintf(vocab, sizeof vocab, "%s/%s", dir, base);
    FILE *f = fopen(vocab, "rb");
    if (!f) snprintf(vocab, sizeof vocab, "%s/models/%s", test_shared_dir(), base);
    else fclose(f);
    run_vectors(vocab, inp, out);
    return true;
}

static void test_all_vectors(void) {
    const int pairs = test_for_each_shared_file("tokenizer", ".gguf.inp", run_vector_pair, NULL);
    CHECK_MSG(pairs >= 13, "only %d vector pairs found", pairs);
}

static bool open_named(const char *rel, vocab_file *vf) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", test_shared_dir(), rel);
    return open_vocab(path, vf);
}

static bool ids_equal(const sprout_token *a, size_t n, const sprout_token *b, size_t m) {
    return n == m && (n == 0 || memcmp(a, b, n * sizeof *a) == 0);
}

static void test_special_tokens(void) {
    vocab_file vf;
    if (open_named("models/stories260K.gguf", &vf)) {
        sprout_token *ids;
        size_t n = tokenize(vf.tok, "Once upon a time", 16, SPROUT_TOKENIZE_ADD_SPECIAL, &ids);
        const sprout_token want[] = {1, 403, 407, 261, 378};
        CHECK(ids_equal(ids, n, want, 5));
        free(ids);
        CHECK(sprout_tokenizer_special(vf.tok, SPROUT_SPECIAL_BOS) == 1 && sprout_tokenizer_special(vf.tok, SPROUT_SPECIAL_EOS) == 2);
        CHECK(sprout_tokenizer_special(vf.tok, SPROUT_SPECIAL_UNK) == 0 && sprout_tokenizer_special(vf.tok, SPROUT_SPECIAL_PAD) == -1);
        CHECK(sprout_tokenizer_special(vf.tok, SPROUT_SPECIAL_NEWLINE) == 13);
        CHECK(sprout_tokenizer_adds_bos(vf.tok) && !sprout_tokenizer_adds_eos(vf.tok));
        CHECK(sprout_tokenizer_is_eog(vf.tok, 2) && !sprout_tokenizer_is_eog(vf.tok, 1));
        CHECK(sprout_tokenizer_type(vf.tok) == SPROUT_VOCAB_SPM && sprout_tokenizer_vocab_size(vf.tok) == 512);
        /* the empty string: just BOS with add_special, nothing without */
        n = tokenize(vf.tok, "", 0, SPROUT_TOKENIZE_ADD_SPECIAL, &ids);
        CHECK(n == 1 && ids[0] == 1);
        free(ids);
        /* "<s>" typed by a user is text unless special parsing is on */
        n = tokenize(vf.tok, "<s>hi", 5, 0, &ids);
        CHECK(n > 1 && ids[0] != 1);
        free(ids);
        n = tokenize(vf.tok, "<s>hi", 5, SPROUT_TOKENIZE_PARSE_SPECIAL, &ids);
        CHECK(n >= 2 && ids[0] == 1);
        free(ids);
        const char *piece;
        size_t len;
        CHECK(sprout_token_to_piece(vf.tok, 13, false, &piece, &len) == SPROUT_OK && len == 1 && piece[0] == '\n');
        CHECK(sprout_token_to_piece(vf.tok, 1, false, &piece, &len) == SPROUT_OK && len == 0);
        CHECK(sprout_token_to_piece(vf.tok, 1, true, &piece, &len) == SPROUT_OK && len == 3 && !memcmp(piece, "<s>", 3));
        CHECK(sprout_token_to_piece(vf.tok, 512, true, &piece, &len) == SPROUT_ERR_OUT_OF_RANGE);
        CHECK(sprout_token_to_piece(vf.tok, -1, true, &piece, &len) == SPROUT_ERR_OUT_OF_RANGE);
        close_vocab(&vf);
    }
    if (open_named("tokenizer/ggml-vocab-qwen2.gguf", &vf)) {
        const char *chat = "<|im_start|>user\nhi<|im_end|>";
        sprout_token *ids;
        size_t n = tokenize(vf.tok, chat, strlen(chat), 0, &ids);
        bool has_control = false;
        for (size_t i = 0; i < n; i++) has_control |= ids[i] == 151644 || ids[i] == 151645;
        CHECK_MSG(!has_control, "control tokens matched without special parsing");
        free(ids);
        n = tokenize(vf.tok, chat, strlen(chat), SPROUT_TOKENIZE_PARSE_SPECIAL, &ids);
        CHECK(n >= 4 && ids[0] == 151644 && ids[n - 1] == 151645);
        free(ids);
        CHECK(sprout_tokenizer_special(vf.tok, SPROUT_SPECIAL_EOT) == 151645);
        CHECK(sprout_tokenizer_is_eog(vf.tok, 151645) && sprout_tokenizer_is_eog(vf.tok, 151643));
        CHECK(!sprout_tokenizer_adds_bos(vf.tok)); /* add_bos_token = false in the file */
        CHECK(!strcmp(sprout_tokenizer_pre(vf.tok), "qwen2"));
        /* user-defined tokens are matched even without special parsing */
        int found = 0;
        for (sprout_token id = 0; id < sprout_tokenizer_vocab_size(vf.tok) && found < 3; id++) {
            if (!(sprout_token_attr(vf.tok, id) & SPROUT_TOKEN_ATTR_USER_DEFINED)) continue;
            const char *text;
            size_t len;
            sprout_token_text(vf.tok, id, &text, &len);
            n = tokenize(vf.tok, text, len, 0, &ids);
            CHECK_MSG(n == 1 && ids[0] == id, "user-defined token %d '%.*s' not matched", id, (int)len, text);
            free(ids);
            found++;
        }
        CHECK_MSG(found > 0, "qwen2 vocabulary has no user-defined tokens");
        close_vocab(&vf);
    }
    if (open_named("tokenizer/ggml-vocab-llama-bpe.gguf", &vf)) {
        sprout_token *ids;
        size_t n = tokenize(vf.tok, "Hello", 5, SPROUT_TOKENIZE_ADD_SPECIAL, &ids);
        CHECK(n == 2 && ids[0] == 128000); /* the llama-bpe pre-tokenizer implies BOS */
        free(ids);
        CHECK(sprout_tokenizer_special(vf.tok, SPROUT_SPECIAL_EOT) == 128009 && sprout_tokenizer_is_eog(vf.tok, 128009));
        close_vocab(&vf);
    }
    if (open_named("tokenizer/ggml-vocab-bert-bge.gguf", &vf)) {
        sprout_token *ids;
        size_t n = tokenize(vf.tok, "Hello world", 11, SPROUT_TOKENIZE_ADD_SPECIAL, &ids);
        CHECK(n == 4 && ids[0] == 101 && ids[3] == 102); /* [CLS] ... [SEP] */
        free(ids);
        /* llama.cpp's BERT normalizer keeps the first code point of each
         * canonical decomposition and drops the marks: an accent spelt as a
         * combining mark goes, a Hangul syllable is its leading consonant
         * (more cases from llama.cpp itself: test_wordpiece) */
        static const char *const same[][2] = {
            {"caf\u00e9 na\u00efve", "cafe\u0301 nai\u0308ve"},
            {"\ud55c\uad6d\uc5b4", "\u1112\u1100\u110b"},
            {"\u1f42", "\u03bf\u0313\u0300"},
        };
        for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
            sprout_token *a, *b;
            size_t na = tokenize(vf.tok, same[i][0], strlen(same[i][0]), 0, &a), nb = tokenize(vf.tok, same[i][1], strlen(same[i][1]), 0, &b);
            CHECK_MSG(na == nb && na > 0 && memcmp(a, b, na * sizeof *a) == 0 && a[0] != 100, "BERT case %zu: %zu and %zu tokens (first %d)", i,
                      na, nb, na ? a[0] : -1);
            free(a);
            free(b);
        }
        close_vocab(&vf);
    }
}

/* Random valid UTF-8 from a spread of scripts, spaces and emoji. */
static size_t random_utf8(char *out, size_t max_chars, uint64_t *state) {
    static const uint32_t ranges[][2] = {{0x20, 0x7E},     {0x09, 0x0D},   {0xA0, 0x24F},    {0x300, 0x36F},
                                         {0x400, 0x4FF},   {0x590, 0x6FF}, {0x900, 0x97F},   {0x3040, 0x30FF},
                                         {0x4E00, 0x9FFF}, {0xAC00, 0xD7A3}, {0x1F300, 0x1F64F}, {0x20, 0x20}};
    size_t o = 0;
    for (size_t k = 0; k < max_chars; k++) {
        *state = *state * 6364136223846793005ull + 1442695040888963407ull;
        uint32_t r = (uint32_t)(*state >> 33);
        const uint32_t *range = ranges[r % 12];
        uint32_t c = range[0] + (r / 12) % (range[1] - range[0] + 1);
        if (c < 0x80) out[o++] = (char)c;
        else if (c < 0x800) {
            out[o++] = (char)(0xC0 | (c >> 6));
            out[o++] = (char)(0x80 | (c & 0x3F));
        } else if (c < 0x10000) {
            out[o++] = (char)(0xE0 | (c >> 12));
            out[o++] = (char)(0x80 | ((c >> 6) & 0x3F));
            out[o++] = (char)(0x80 | (c & 0x3F));
        } else {
            out[o++] = (char)(0xF0 | (c >> 18));
            out[o++] = (char)(0x80 | ((c >> 12) & 0x3F));
            out[o++] = (char)(0x80 | ((c >> 6) & 0x3F));
            out[o++] = (char)(0x80 | (c & 0x3F));
        }
    }
    return o;
}

/* Every vocabulary: random text round-trips (BPE and SPM exactly), hostile
 * bytes are survived, and every token's piece re-tokenizes. */
/* Fill-in-the-middle tokens, by key or by the texts code models use. */
static void test_fim_tokens(void) {
    static const struct {
        const char *file;
        sprout_token pre, suf, mid;
    } cases[] = {
        {"tokenizer/ggml-vocab-qwen2.gguf", 151659, 151661, 151660},    /* <|fim_prefix|> ... */
        {"tokenizer/ggml-vocab-deepseek-coder.gguf", 32016, 32015, 32017}, /* <｜fim▁begin｜> <｜fim▁hole｜> <｜fim▁end｜> */
        {"tokenizer/ggml-vocab-starcoder.gguf", 1, 3, 2},              /* <fim_prefix> <fim_suffix> <fim_middle> */
        {"tokenizer/ggml-vocab-llama-spm.gguf", -1, -1, -1},
        {"tokenizer/ggml-vocab-llama-bpe.gguf", -1, -1, -1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        vocab_file vf;
        if (!open_named(cases[i].file, &vf)) continue;
        const sprout_token pre = sprout_tokenizer_special(vf.tok, SPROUT_SPECIAL_FIM_PRE), suf = sprout_tokenizer_special(vf.tok, SPROUT_SPECIAL_FIM_SUF),
                           mid = sprout_tokenizer_special(vf.tok, SPROUT_SPECIAL_FIM_MID);
        CHECK_MSG(pre == cases[i].pre && suf == cases[i].suf && mid == cases[i].mid, "%s: FIM tokens %d %d %d", cases[i].file, pre, suf, mid);
        close_vocab(&vf);
    }
}

static void test_every_vocab(void) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/tokenizer", test_shared_dir());
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    int vocabs = 0;
    while ((e = readdir(d))) {
        size_t namelen = strlen(e->d_name);
        if (namelen < 6 || strcmp(e->d_name + namelen - 5, ".gguf")) continue;
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        vocab_file vf;
        if (!open_vocab(path, &vf)) continue;
        vocabs++;
        const bool wpm = sprout_tokenizer_type(vf.tok) == SPROUT_VOCAB_WPM;
        /* some vocabularies cannot spell every control byte (Falcon lacks
         * \x03, \x0b ...): those are dropped, as by the reference tokenizer */
        bool lost[128] = {false};
        for (int b = 0; b < 128; b++) {
            char c = (char)b;
            sprout_token one[8];
            size_t count;
            lost[b] = sprout_tokenize(vf.tok, &c, 1, 0, one, 8, &count) == SPROUT_OK && count == 0;
        }
        uint64_t state = 42;
        char text[4096];
        int round_trips = 0;
        for (int k = 0; k < 100; k++) {
            size_t n = random_utf8(text, 1 + (size_t)k * 5, &state);
            sprout_token *ids;
            size_t count = tokenize(vf.tok, text, n, 0, &ids);
            size_t len;
            char *back = detokenize(vf.tok, ids, count, 0, &len);
            char want[4096];
            size_t wn = 0;
            for (size_t i = 0; i < n; i++)
                if ((unsigned char)text[i] >= 128 || !lost[(unsigned char)text[i]]) want[wn++] = text[i];
            bool same = len == wn && memcmp(back, want, wn) == 0;
            round_trips += same;
            if (!same && !wpm) fprintf(stderr, "%s: random string %d does not round-trip: [%.*s] -> [%.*s]\n", e->d_name, k, (int)n, text, (int)len, back);
            free(back);
            free(ids);
        }
        if (!wpm) CHECK_MSG(round_trips == 100, "%s: %d of 100 random strings round-trip", e->d_name, round_trips);

        /* invalid UTF-8, NUL bytes, lone continuation bytes */
        static const char hostile[] = "a\xff\xfe b\0c \xc3\x28 \xe2\x82 \xf0\x9f\x98 \xed\xa0\x80 \x80\x80 <|im_start|>\xc0\xaf";
        for (unsigned flags = 0; flags < 4; flags++) {
            sprout_token *ids;
            size_t count = tokenize(vf.tok, hostile, sizeof hostile - 1, flags, &ids);
            CHECK(count > 0);
            size_t len;
            free(detokenize(vf.tok, ids, count, SPROUT_DETOKENIZE_UNPARSE_SPECIAL, &len));
            free(ids);
        }

        /* every id: its piece, re-tokenized (quick, under the sanitizers,
         * where fuzz_tokenizer also runs: every seventh, each kind of piece
         * among them) */
        int bad = 0;
        for (sprout_token id = 0; id < sprout_tokenizer_vocab_size(vf.tok); id += test_quick_run() ? 7 : 1) {
            const char *piece;
            size_t plen;
            if (sprout_token_to_piece(vf.tok, id, true, &piece, &plen) != SPROUT_OK) {
                bad++;
                continue;
            }
            sprout_token ids[512];
            size_t count;
            sprout_status st = sprout_tokenize(vf.tok, piece, plen, 0, ids, 512, &count);
            bad += st != SPROUT_OK;
        }
        CHECK_MSG(bad == 0, "%s: %d token ids fail to re-tokenize", e->d_name, bad);
        close_vocab(&vf);
    }
    closedir(d);
    CHECK(vocabs >= 14);
}

/* Pushes ids one by one; every chunk must be whole UTF-8, and the chunks
 * together must equal the detokenized text. */
static void stream_check(const sprout_tokenizer *t, const sprout_token *ids, size_t n, const char *want, size_t want_len,
                         size_t *empty_pushes) {
    sprout_detokenizer *d;
    CHECK(sprout_detokenizer_create(t, 0, &d) == SPROUT_OK);
    char out[4096];
    size_t o = 0;
    *empty_pushes = 0;
    for (size_t i = 0; i < n; i++) {
        const char *text;
        size_t len;
        CHECK(sprout_detokenizer_push(d, ids[i], &text, &len) == SPROUT_OK);
        for (size_t k = 0; k < len;) {
            size_t cl = sprout_utf8_char_len(text + k, len - k);
            CHECK_MSG(cl > 0, "push %zu emitted a broken character", i);
            k += cl ? cl : 1;
        }
        *empty_pushes += len == 0;
        memcpy(out + o, text, len);
        o += len;
    }
    const char *text;
    size_t len;
    CHECK(sprout_detokenizer_flush(d, &text, &len) == SPROUT_OK && len == 0);
    CHECK_MSG(o == want_len && memcmp(out, want, o) == 0, "stream gave \"%.*s\"", (int)o, out);
    sprout_detokenizer_free(d);
}

static void test_streaming(void) {
    vocab_file vf;
    if (!open_named("models/stories260K.gguf", &vf)) return;
    /* with 512 tokens, emoji and CJK fall back to byte tokens */
    const char *s = "Hi \xF0\x9F\x98\x81 and \xE4\xB8\x96\xE7\x95\x8C!";
    sprout_token *ids;
    size_t n = tokenize(vf.tok, s, strlen(s), SPROUT_TOKENIZE_ADD_SPECIAL, &ids);
    CHECK(n > 10);
    size_t len, empty;
    char *whole = detokenize(vf.tok, ids, n, 0, &len);
    CHECK(len == strlen(s) && !memcmp(whole, s, len));
    stream_check(vf.tok, ids, n, whole, len, &empty);
    CHECK_MSG(empty >= 3 + 4, "only %zu pushes held bytes back", empty); /* 3 for the emoji, 2x2 for the CJK, BOS */
    free(whole);
    free(ids);

    /* bytes that can never form a character come out as U+FFFD, at once */
    sprout_detokenizer *d;
    CHECK(sprout_detokenizer_create(vf.tok, 0, &d) == SPROUT_OK);
    const char *text;
    sprout_token ff = sprout_token_from_text(vf.tok, "<0xFF>", 6), f0 = sprout_token_from_text(vf.tok, "<0xF0>", 6);
    sprout_token a = sprout_token_from_text(vf.tok, "<0x41>", 6);
    CHECK(ff >= 0 && f0 >= 0 && a >= 0);
    CHECK(sprout_detokenizer_push(d, ff, &text, &len) == SPROUT_OK && len == 3 && !memcmp(text, "\xEF\xBF\xBD", 3));
    CHECK(sprout_detokenizer_push(d, f0, &text, &len) == SPROUT_OK && len == 0);
    CHECK(sprout_detokenizer_push(d, a, &text, &len) == SPROUT_OK && len == 4 && !memcmp(text, "\xEF\xBF\xBD" "A", 4));
    CHECK(sprout_detokenizer_push(d, f0, &text, &len) == SPROUT_OK && len == 0);
    CHECK(sprout_detokenizer_flush(d, &text, &len) == SPROUT_OK && len == 3); /* unfinished: U+FFFD */
    CHECK(sprout_detokenizer_push(d, 5000, &text, &len) == SPROUT_ERR_OUT_OF_RANGE);
    sprout_detokenizer_free(d);
    close_vocab(&vf);

    /* the stream equals the whole for every vector of a BPE vocabulary */
    if (open_named("tokenizer/ggml-vocab-llama-bpe.gguf", &vf)) {
        char path[1024];
        snprintf(path, sizeof path, "%s/tokenizer/ggml-vocab-llama-bpe.gguf.inp", test_shared_dir());
        char *inp = test_read_file(path, NULL);
        for (char *p = inp, *end; p && (end = strstr(p, SEP)); p = end + strlen(SEP)) {
            n = tokenize(vf.tok, p, (size_t)(end - p), 0, &ids);
            whole = detokenize(vf.tok, ids, n, 0, &len);
            stream_check(vf.tok, ids, n, whole, len, &empty);
            free(whole);
            free(ids);
        }
        free(inp);
        close_vocab(&vf);
    }
}

/* A BPE vocabulary whose pre-tokenizer sprout does not know still loads, with
 * the default pre-tokenizer, and says so; a known one says nothing. */
static void test_unknown_pre_warning(void) {
    char src_path[1024], path[1024];
    snprintf(src_path, sizeof src_path, "%s/tokenizer/ggml-vocab-llama-bpe.gguf", test_shared_dir());
    snprintf(path, sizeof path, "%s/unknown-pre.gguf", test_temp_dir());
    vocab_file vf;
    if (!open_vocab(src_path, &vf)) return;
    CHECK_MSG(!strcmp(sprout_tokenizer_warning(vf.tok), ""), "a known pre-tokenizer warned: %s", sprout_tokenizer_warning(vf.tok));
    CHECK(!strcmp(sprout_tokenizer_warning(NULL), ""));
    sp_gguf_writer *w = sp_gguf_writer_new();
    CHECK(w && sp_gguf_writer_copy_metadata(w, vf.gguf) == SPROUT_OK);
    CHECK(sp_gguf_writer_set_str(w, "tokenizer.ggml.pre", "no-such-pre", strlen("no-such-pre")) == SPROUT_OK);
    CHECK_MSG(sp_gguf_writer_write(w, path, NULL, NULL) == SPROUT_OK, "%s", sprout_last_error());
    sp_gguf_writer_free(w);
    vocab_file odd;
    if (open_vocab(path, &odd)) {
        const char *warning = sprout_tokenizer_warning(odd.tok);
        CHECK_MSG(strstr(warning, "unknown pre-tokenizer 'no-such-pre': using the default one") != NULL, "warning [%s]", warning);
        sprout_token *ids = NULL;
        const char *text = "Hello world";
        size_t n = tokenize(odd.tok, text, strlen(text), 0, &ids);
        size_t len = 0;
        char *back = detokenize(odd.tok, ids, n, 0, &len);
        CHECK(n > 0 && back && len == strlen(text) && !memcmp(back, text, len));
        free(back);
        free(ids);
        close_vocab(&odd);
    }
    close_vocab(&vf);
    unlink(path);
    rmdir(test_temp_dir());
}

/* gpt-2's vocabulary plus harmony's markers as control tokens, written to
 * path; with_call adds <|call|> (o200k_harmony has it). */
static bool write_harmony_vocab(const vocab_file *src, const char *path, bool with_call) {
    static const char *const added[] = {"<|start|>", "<|channel|>", "<|message|>", "<|end|>", "<|return|>", "<|call|>"};
    const uint64_t n_added = with_call ? 6 : 5;
    const sprout_gguf_value *tokens = NULL, *types = NULL;
    uint64_t n = 0, n_types = 0;
    CHECK(sprout_gguf_get_array(src->gguf, "tokenizer.ggml.tokens", &tokens, NULL, &n) == SPROUT_OK);
    CHECK(sprout_gguf_get_array(src->gguf, "tokenizer.ggml.token_type", &types, NULL, &n_types) == SPROUT_OK && n_types == n);
    const char **strs = malloc((n + n_added) * sizeof *strs);
    size_t *lens = malloc((n + n_added) * sizeof *lens);
    int32_t *kinds = malloc((n + n_added) * sizeof *kinds);
    for (uint64_t i = 0; i < n + n_added; i++) {
        int64_t kind = 3; /* control */
        if (i < n) {
            sprout_gguf_array_str(tokens, i, &strs[i], &lens[i]);
            sprout_gguf_array_i64(types, i, &kind);
        } else {
            strs[i] = added[i - n];
            lens[i] = strlen(added[i - n]);
        }
        kinds[i] = (int32_t)kind;
    }
    sp_gguf_writer *w = sp_gguf_writer_new();
    const bool ok = w && sp_gguf_writer_copy_metadata(w, src->gguf) == SPROUT_OK &&
                    sp_gguf_writer_set_str_array(w, "tokenizer.ggml.tokens", strs, lens, n + n_added) == SPROUT_OK &&
                    sp_gguf_writer_set_array(w, "tokenizer.ggml.token_type", SPROUT_GGUF_INT32, kinds, n + n_added) == SPROUT_OK &&
                    sp_gguf_writer_write(w, path, NULL, NULL) == SPROUT_OK;
    CHECK_MSG(ok, "harmony vocabulary: %s", sprout_last_error());
    sp_gguf_writer_free(w);
    free(strs);
    free(lens);
    free(kinds);
    return ok;
}

/* OpenAI's harmony as llama.cpp reads it: with <|return|> and <|call|>,
 * <|end|> ends a message, not generation, and shows in the text with the
 * headers' markers (the server splits the channels by them); both end
 * generation. Without <|call|> (not harmony), <|end|> ends it as before. */
/* o200k's words (tokenizer.ggml.pre "gpt-4o": gpt-oss, Llama 4), as
 * tiktoken's regex splits them: a leading mark or space joins a word, an
 * upper-case run joins the lower-case letters after it, contractions stay
 * on in any case, digits go in threes, a run of spaces leaves its last to
 * the next word, and a space after digits stands alone. */
static void test_gpt4o_words(void) {
    sp_pretokenizer *pre = NULL;
    sp_pretokenizer_traits traits;
    bool known = false;
    CHECK(sp_pretokenizer_create("gpt-4o", &pre, &traits, &known) == SPROUT_OK && known && !traits.clean_spaces);
    if (!pre) return;
    static const char text[] = "Hello World's HTTPServer 12345 DON'T\n\n  x...\n/";
    static const char *const want[] = {"Hello", " World's", " HTTPServer", " ", "123", "45", " DON'T", "\n\n", " ", " x", "...\n/"};
    sp_span *spans = NULL;
    size_t n = 0;
    CHECK(sp_pretokenize(pre, text, sizeof text - 1, &spans, &n) == SPROUT_OK);
    bool same = n == sizeof want / sizeof *want;
    for (size_t i = 0; same && i < n; i++) same = spans[i].len == strlen(want[i]) && !memcmp(text + spans[i].start, want[i], spans[i].len);
    CHECK_MSG(same, "gpt-4o split \"%s\" into %zu words", text, n);
    for (size_t i = 0; !same && i < n; i++) fprintf(stderr, "  [%.*s]\n", (int)spans[i].len, text + spans[i].start);
    free(spans);
    sp_pretokenizer_free(pre);
    CHECK(sp_pretokenizer_create("llama4", &pre, &traits, &known) == SPROUT_OK && known && !strcmp(traits.canonical, "gpt-4o"));
    sp_pretokenizer_free(pre);
}

static void test_harmony_tokens(void) {
    vocab_file vf;
    if (!open_named("tokenizer/ggml-vocab-gpt-2.gguf", &vf)) return;
    const sprout_token n = (sprout_token)sprout_tokenizer_vocab_size(vf.tok);
    char path[1024];
    snprintf(path, sizeof path, "%s/harmony.gguf", test_temp_dir());
    mkdir(test_temp_dir(), 0700); /* an earlier part removed it */
    for (int with_call = 0; with_call < 2; with_call++) {
        vocab_file h;
        if (!write_harmony_vocab(&vf, path, with_call) || !open_vocab(path, &h)) break;
        const sprout_token start = n, channel = n + 1, message = n + 2, end = n + 3, ret = n + 4;
        CHECK(sprout_tokenizer_is_eog(h.tok, ret));
        CHECK_MSG(sprout_tokenizer_is_eog(h.tok, end) == !with_call, "<|end|> with <|call|> %d", with_call);
        if (with_call) CHECK(sprout_tokenizer_is_eog(h.tok, n + 5));
        sprout_token *hi = NULL;
        const size_t n_hi = tokenize(h.tok, "hi", 2, 0, &hi);
        sprout_token reply[8] = {channel, hi[0], message, hi[0], end, start};
        size_t len = 0;
        char *text = detokenize(h.tok, reply, 6, 0, &len);
        const char *want = with_call ? "<|channel|>hi<|message|>hi<|end|><|start|>" : "hihi";
        CHECK_MSG(n_hi == 1 && text && len == strlen(want) && !memcmp(text, want, len), "with <|call|> %d: [%.*s]", with_call, (int)len,
                  text ? text : "");
        free(text);
        free(hi);
        close_vocab(&h);
    }
    close_vocab(&vf);
    unlink(path);
    rmdir(test_temp_dir());
}

int main(void) {
    test_all_vectors();
    test_special_tokens();
    test_fim_tokens();
    test_streaming();
    test_every_vocab();
    test_unknown_pre_warning();
    test_harmony_tokens();
    test_gpt4o_words();
    TEST_MAIN_END();
}
