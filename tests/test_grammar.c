/* The grammar engine: GBNF parsing and its errors, the automaton over
 * bytes on grammars of every kind llama.cpp ships (tests/data/grammar),
 * can_end / must_end, and token masks equal to trying every token, on the
 * stories260K, Llama-3 and Qwen2 vocabularies. */
#include <stdint.h>

#include "grammar/gbnf.h"
#include "grammar/grammar.h"
#include "grammar/grammar_mask.h"
#include "test_util.h"

#ifndef SPROUT_GRAMMAR_DATA_DIR
#define SPROUT_GRAMMAR_DATA_DIR "tests/data/grammar"
#endif

static char *read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = malloc(1 << 20);
    size_t n = buf ? fread(buf, 1, (1 << 20) - 1, f) : 0;
    fclose(f);
    if (buf) buf[n] = 0;
    *len = n;
    return buf;
}

static sp_grammar *load(const char *name) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.gbnf", SPROUT_GRAMMAR_DATA_DIR, name);
    size_t len = 0;
    char *text = read_all(path, &len);
    CHECK_MSG(text != NULL, "cannot read %s", path);
    if (!text) return NULL;
    sp_grammar *g = NULL;
    sprout_status st = sp_grammar_compile(text, len, NULL, &g);
    CHECK_MSG(st == SPROUT_OK, "%s: %s", name, sprout_last_error());
    free(text);
    return g;
}

static sp_grammar *compile(const char *text) {
    sp_grammar *g = NULL;
    sprout_status st = sp_grammar_compile(text, strlen(text), NULL, &g);
    CHECK_MSG(st == SPROUT_OK, "%s: %s", text, sprout_last_error());
    return g;
}

/* Feeds text a byte at a time: the index of the first byte refused, or -1
 * if all are taken; *can_end whether the grammar may end there. */
static long feed(const sp_grammar *g, const char *text, bool *can_end) {
    sp_grammar_state *st = sp_grammar_state_new(g);
    long bad = -1;
    for (size_t i = 0; text[i]; i++)
        if (!sp_grammar_accept(st, text + i, 1)) {
            bad = (long)i;
            break;
        }
    if (can_end) *can_end = bad < 0 && sp_grammar_can_end(st);
    sp_grammar_state_free(st);
    return bad;
}

static void valid(const sp_grammar *g, const char *text) {
    bool end = false;
    long bad = feed(g, text, &end);
    CHECK_MSG(bad < 0 && end, "\"%s\": refused at byte %ld (can_end %d)", text, bad, end);
    /* and all at once */
    sp_grammar_state *st = sp_grammar_state_new(g);
    CHECK(sp_grammar_accept(st, text, strlen(text)) && sp_grammar_can_end(st));
    sp_grammar_state_free(st);
}

/* A text refused exactly at byte `at` (-1: taken but unfinished). */
static void invalid(const sp_grammar *g, const char *text, long at) {
    bool end = true;
    long bad = feed(g, text, &end);
    CHECK_MSG(bad == at && !end, "\"%s\": refused at %ld, expected %ld (can_end %d)", text, bad, at, end);
    if (at >= 0) { /* a refused chunk leaves the state as it was */
        sp_grammar_state *st = sp_grammar_state_new(g);
        CHECK(sp_grammar_accept(st, text, (size_t)at));
        CHECK(!sp_grammar_accept(st, text + at, strlen(text + at)));
        CHECK(at == 0 || !sp_grammar_accept(st, text + at, 1));
        sp_grammar_state_free(st);
    }
}

static void test_shipped_grammars(void) {
    sp_grammar *g = load("json");
    if (g) {
        valid(g, "{}");
        valid(g, "{\"a\": 1, \"b\": [true, false, null], \"c\": {\"d\": \"e\\u00e9\\n\"}}");
        valid(g, "{\"x\":-0.5e+3,\"y\":[[],{}],\"z\":\"日本語\"}");
        valid(g, "{\n  \"k\": [1, 2.25, -0]\n}\n");
        invalid(g, "{\"a\" 1}", 5);
        invalid(g, "{\"a\": tru}", 9);
        invalid(g, "[1]", 0);
        invalid(g, "{\"a\": 01}", 7);
        invalid(g, "{\"a\": \"x\\q\"}", 9);
        invalid(g, "{\"a\": \"\x01\"}", 7);
        invalid(g, "{\"a\": 1", -1);
        invalid(g, "{\"a\": \"\xC3\"}", 8); /* a code point cut short */
        invalid(g, "{\"a\": \"\xC0\x80\"}", 7); /* overlong */
        sp_grammar_free(g);
    }
    g = load("arithmetic");
    if (g) {
        valid(g, "1+2*(3-4)");
        valid(g, "-(12.5 / 3) - 4 * -2");
        invalid(g, "1+", -1);
        invalid(g, "1+*2", 2);
        invalid(g, "(1", -1);
        invalid(g, "1)", 1);
        sp_grammar_free(g);
    }
    g = load("list");
    if (g) {
        valid(g, "- one\n- two items\n- ünïcödé\n");
        invalid(g, "- a\n-b", 5);
        invalid(g, "- \n", 2);
        invalid(g, "- a\xe2\x80\xa8", 5); /* U+2028 refused at its last byte */
        sp_grammar_free(g);
    }
    g = load("c");
    if (g) {
        valid(g, "int main() {\n  int x = 1;\n  while (x < 10) { x = x + 1; }\n  return x;\n}\n");
        valid(g, "void f(int a, char b) { /* a ** comment */ // and a line\n if (a >= b) { a = g(a, b); } else { return; } }");
        invalid(g, "int 1x()", 4);
        invalid(g, "int f() { return x }", 19);
        sp_grammar_free(g);
    }
    g = load("chess");
    if (g) {
        valid(g, "1. e4 e5\n2. Nf3 Nc6\n3. Bb5 a6\n");
        valid(g, "1. O-O-O Qxd8+\n2. exd8=Q# Kh1\n");
        invalid(g, "1. e9", 4);
        invalid(g, "1. e4 e5\n", -1);
        invalid(g, "1. e4 e5\n0", 9);
        sp_grammar_free(g);
    }
    g = load("japanese");
    if (g) {
        valid(g, "今日は良い天気です。");
        valid(g, "こんにちは 世界！\nカタカナ");
        invalid(g, "hello", 0);
        invalid(g, "日本a", 6);
        invalid(g, "日本\xE3", -1); /* a code point begun */
        sp_grammar_free(g);
    }
}

static void test_features(void) {
    sp_grammar *g = compile("root ::= \"ab\"{2,3}\n");
    if (g) {
        valid(g, "abab");
        valid(g, "ababab");
        invalid(g, "ab", -1);
        invalid(g, "abababab", 6);
        sp_grammar_free(g);
    }
    g = compile("root ::= [^a-c]+ # comment\n");
    if (g) {
        valid(g, "xyz");
        valid(g, "é€𝄞");
        invalid(g, "xaz", 1);
        sp_grammar_free(g);
    }
    g = compile("root ::= \"<\" . \">\"");
    if (g) {
        valid(g, "<é>");
        valid(g, "<>>");
        invalid(g, "<ab", 2);
        sp_grammar_free(g);
    }
    g = compile("root ::= [α-γ] \"\\x41\\u00e9\\U0001F600\\t\\\\\\\"\"\n");
    if (g) {
        valid(g, "βAé😀\t\\\"");
        invalid(g, "δ", 1); /* 0xCE is the start of α-γ too; 0xB4 ends δ */
        invalid(g, "é", 0);
        sp_grammar_free(g);
    }
    g = compile("root ::= x{0,2} \"!\"\nx ::= (\"a\" |\n  \"b\")\n");
    if (g) {
        valid(g, "!");
        valid(g, "ab!");
        invalid(g, "aba", 2);
        sp_grammar_free(g);
    }
    g = compile("root ::= \"a\"{2,}\n");
    if (g) {
        valid(g, "aaaaaaa");
        invalid(g, "a", -1);
        sp_grammar_free(g);
    }
    /* another root */
    sp_grammar *h = NULL;
    CHECK(sp_grammar_compile("a ::= \"x\"\nb ::= \"y\"", 19, "b", &h) == SPROUT_OK);
    if (h) {
        valid(h, "y");
        invalid(h, "x", 0);
        sp_grammar_free(h);
    }
}

static void test_ends(void) {
    sp_grammar *g = compile("root ::= \"a\" \"b\"?\n");
    if (g) {
        sp_grammar_state *st = sp_grammar_state_new(g);
        CHECK(!sp_grammar_can_end(st) && !sp_grammar_must_end(st));
        CHECK(sp_grammar_accept(st, "a", 1));
        CHECK(sp_grammar_can_end(st) && !sp_grammar_must_end(st));
        sp_grammar_state *copy = sp_grammar_state_clone(st);
        CHECK(sp_grammar_accept(st, "b", 1));
        CHECK(sp_grammar_can_end(st) && sp_grammar_must_end(st));
        CHECK(!sp_grammar_accept(st, "b", 1));
        CHECK(sp_grammar_must_end(st)); /* unchanged by the refusal */
        CHECK(copy && sp_grammar_can_end(copy) && !sp_grammar_must_end(copy)); /* the clone is apart */
        CHECK(sp_grammar_state_copy(copy, st) && sp_grammar_must_end(copy));
        sp_grammar_state_free(copy);
        sp_grammar_state_free(st);
        sp_grammar_free(g);
    }
    g = load("json");
    if (g) {
        sp_grammar_state *st = sp_grammar_state_new(g);
        CHECK(sp_grammar_accept(st, "{}", 2) && sp_grammar_can_end(st) && !sp_grammar_must_end(st));
        CHECK(sp_grammar_accept(st, " ", 1) && sp_grammar_must_end(st));
        sp_grammar_state_free(st);
        st = sp_grammar_state_new(g);
        CHECK(sp_grammar_accept(st, "{\"a\":\"\xE6\x97", 8) && !sp_grammar_can_end(st));
        sp_grammar_state_free(st);
        sp_grammar_free(g);
    }
    g = compile("root ::= \"\" | \"x\"*");
    if (g) {
        sp_grammar_state *st = sp_grammar_state_new(g);
        CHECK(sp_grammar_can_end(st) && !sp_grammar_must_end(st));
        sp_grammar_state_free(st);
        sp_grammar_free(g);
    }
}

static void error_is(const char *text, const char *message) {
    sp_grammar *g = NULL;
    sprout_status st = sp_grammar_compile(text, strlen(text), NULL, &g);
    CHECK_MSG(st == SPROUT_ERR_FORMAT && g == NULL, "\"%s\" compiled (status %d)", text, st);
    CHECK_MSG(!strcmp(sprout_last_error(), message), "\"%s\": got \"%s\", expected \"%s\"", text, sprout_last_error(),
              message);
    sp_grammar_free(g);
}

static void test_errors(void) {
    error_is("root ::= foo\n", "grammar:1:10: undefined rule 'foo'");
    error_is("root ::= \"a\"\nx ::= (\"a\" \"b\"\n", "grammar:2:7: unbalanced group: '(' without ')'");
    error_is("root ::= \"a\")\n", "grammar:1:13: unbalanced group: ')' without '('");
    error_is("root ::= [a-z\n", "grammar:1:10: unbalanced bracket: '[' without ']'");
    error_is("root ::= \"\\q\"\n", "grammar:1:11: unknown escape \"\\q\"");
    error_is("root ::= \"\\x4\"\n", "grammar:1:11: bad escape: expected hex digits");
    error_is("root ::= \"abc\n", "grammar:1:10: unterminated string");
    error_is("root ::= \"a\"{3,2}\n", "grammar:1:13: repetition bounds out of order: m > n in {m,n}");
    error_is("root ::= \"a\"{1001}\n", "grammar:1:14: repetition bound too large (over 1000)");
    error_is("", "grammar:1:1: empty grammar");
    error_is("  # only a comment\n\n", "grammar:1:1: empty grammar");
    error_is("root ::= \"a\"\nroot ::= \"b\"\n", "grammar:2:1: rule 'root' defined twice");
    error_is("root ::= * \"a\"\n", "grammar:1:10: repetition mark without a symbol before it");
    error_is("root = \"a\"\n", "grammar:1:6: expected '::='");
    error_is("root ::= []\n", "grammar:1:10: empty character class");
    error_is("root ::= [z-a]\n", "grammar:1:12: character range out of order");
    error_is("a ::= \"x\"\n", "grammar: no rule 'root'");
    error_is("root ::= expr\nexpr ::= expr \"+\" term | term\nterm ::= [0-9]\n", "grammar: left recursion: expr -> expr");
    error_is("root ::= a\na ::= b? c\nb ::= \"x\"\nc ::= a \"y\" | \"z\"\n", "grammar: left recursion: a -> c -> a");
    error_is("root ::= (\"a\"?)*\n", "grammar: left recursion: root/3 -> root/3");
    char deep[256];
    memset(deep, '(', 100);
    deep[100] = 0;
    error_is(deep, "grammar:1:1: expected a rule name");
    char nest[300] = "root ::= ";
    memset(nest + 9, '(', 100);
    nest[109] = 0;
    error_is(nest, "grammar:1:74: groups nested too deeply (over 64)");
    /* hostile: every prefix of a real grammar fails cleanly or compiles */
    size_t len = 0;
    char *json = read_all(SPROUT_GRAMMAR_DATA_DIR "/json.gbnf", &len);
    if (json) {
        for (size_t n = 0; n <= len; n++) {
            sp_grammar *g = NULL;
            sprout_status st = sp_grammar_compile(json, n, NULL, &g);
            CHECK(st == SPROUT_OK || (st == SPROUT_ERR_FORMAT && !g));
            sp_grammar_free(g);
        }
        free(json);
    }
}

/* --- masks ---------------------------------------------------------------------- */

typedef struct vocab {
    sprout_gguf *gguf;
    sprout_tokenizer *tok;
    uint32_t n;
    const char **text;
    uint32_t *len;
    sp_grammar_vocab *v;
} vocab;

static bool vocab_open(vocab *vc, const char *rel) {
    memset(vc, 0, sizeof *vc);
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", test_shared_dir(), rel);
    if (sprout_gguf_open(path, &vc->gguf) != SPROUT_OK || sprout_tokenizer_create(vc->gguf, &vc->tok) != SPROUT_OK) {
        CHECK_MSG(false, "%s: %s", path, sprout_last_error());
        return false;
    }
    vc->n = (uint32_t)sprout_tokenizer_vocab_size(vc->tok);
    vc->text = malloc(vc->n * sizeof *vc->text);
    vc->len = malloc(vc->n * sizeof *vc->len);
    for (uint32_t i = 0; i < vc->n; i++) {
        size_t l = 0;
        if (sprout_token_to_piece(vc->tok, (sprout_token)i, false, &vc->text[i], &l) != SPROUT_OK) vc->text[i] = "", l = 0;
        vc->len[i] = (uint32_t)l;
    }
    CHECK(sp_grammar_vocab_create(vc->text, vc->len, vc->n, &vc->v) == SPROUT_OK);
    return vc->v != NULL;
}

static void vocab_close(vocab *vc) {
    sp_grammar_vocab_free(vc->v);
    free(vc->text), free(vc->len);
    sprout_tokenizer_free(vc->tok);
    sprout_gguf_close(vc->gguf);
}

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint32_t rnd(uint32_t n) {
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng_state >> 33) % n;
}

/* A random valid prefix of about `steps` bytes: each byte drawn among those
 * the state takes (printable ones twice as likely as the rest). */
static sp_grammar_state *random_state(const sp_grammar *g, int steps) {
    sp_grammar_state *st = sp_grammar_state_new(g);
    sp_grammar_state *probe = sp_grammar_state_clone(st);
    for (int k = 0; k < steps; k++) {
        unsigned char ok[512];
        int n = 0;
        for (int b = 0; b < 256; b++) {
            sp_grammar_state_copy(probe, st);
            char c = (char)b;
            if (sp_grammar_accept(probe, &c, 1)) {
                ok[n++] = (unsigned char)b;
                if (b >= 0x20 && b < 0x7F) ok[n++] = (unsigned char)b;
            }
        }
        if (n == 0) break;
        char c = (char)ok[rnd((uint32_t)n)];
        sp_grammar_accept(st, &c, 1);
    }
    sp_grammar_state_free(probe);
    return st;
}

/* The mask of st against trying every token; returns how many it allows. */
static size_t check_mask(sp_grammar_masker *m, const vocab *vc, const sp_grammar_state *st, const char *what) {
    const size_t words = sp_grammar_mask_words(vc->v);
    uint64_t *bits = malloc(words * 8);
    CHECK(sp_grammar_mask(m, st, bits) == SPROUT_OK);
    sp_grammar_state *probe = sp_grammar_state_clone(st);
    size_t wrong = 0, allowed = 0;
    for (uint32_t t = 0; t < vc->n; t++) {
        sp_grammar_state_copy(probe, st);
        const bool want = sp_grammar_accept(probe, vc->text[t], vc->len[t]);
        const bool got = (bits[t >> 6] >> (t & 63)) & 1;
        allowed += want;
        if (want != got && wrong++ < 3)
            fprintf(stderr, "%s: token %u \"%.*s\": mask %d, trying it %d\n", what, t, (int)vc->len[t], vc->text[t], got, want);
    }
    CHECK_MSG(wrong == 0, "%s: %zu tokens wrong", what, wrong);
    sp_grammar_state_free(probe);
    free(bits);
    return allowed;
}

static void test_masks(const char *vocab_path, int states_per_grammar) {
    vocab vc;
    if (!vocab_open(&vc, vocab_path)) return;
    static const char *const names[] = {"json", "arithmetic", "c", "chess", "japanese", "list"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        sp_grammar *g = load(names[i]);
        if (!g) continue;
        sp_grammar_masker *m = NULL;
        CHECK(sp_grammar_masker_create(g, vc.v, &m) == SPROUT_OK);
        size_t total = 0;
        for (int k = 0; k < states_per_grammar && m; k++) {
            sp_grammar_state *st = random_state(g, k == 0 ? 0 : (int)rnd(80));
            char what[256];
            snprintf(what, sizeof what, "%s, %s, state %d", vocab_path, names[i], k);
            total += check_mask(m, &vc, st, what);
            sp_grammar_state_free(st);
        }
        CHECK_MSG(total > 0, "%s: no token allowed anywhere", names[i]);
        sp_grammar_masker_free(m);
        sp_grammar_free(g);
    }
    /* a state of another grammar is refused */
    sp_grammar *a = compile("root ::= \"a\""), *b = compile("root ::= \"b\"");
    sp_grammar_masker *m = NULL;
    if (a && b && sp_grammar_masker_create(a, vc.v, &m) == SPROUT_OK) {
        sp_grammar_state *st = sp_grammar_state_new(b);
        uint64_t *bits = malloc(sp_grammar_mask_words(vc.v) * 8);
        CHECK(sp_grammar_mask(m, st, bits) == SPROUT_ERR_INVALID_ARGUMENT);
        free(bits);
        sp_grammar_state_free(st);
    }
    sp_grammar_masker_free(m);
    sp_grammar_free(a), sp_grammar_free(b);
    vocab_close(&vc);
}

/* Where reading a token would pass SP_GRAMMAR_MAX_STACKS the engine gives
 * up on it (gave_up, the state kept), while the mask, which judges each
 * stack alone, allows it; every other token's mask bit equals trying it.
 * The grammar (nested, ambiguous recursion: 256 stacks after 30 bytes,
 * thousands a byte later) is what fuzz_grammar's first finding came down
 * to; the whole input is fuzz/grammar_seeds/stack-bound. */
static void test_bounds(void) {
    sp_grammar *g = compile("root ::= expr\nexpr ::= term (ws [+] ws term)*\nterm ::= factor (factor)*\n"
                            "factor ::= number | ws expr\nnumber ::= [e] ([0])?\nws ::= .");
    if (!g) return;
    enum { N_WORDS = 3, N_VOCAB = 128 + N_WORDS };
    static const char *const words[N_WORDS] = {"true", "1.5", "eee"};
    static char bytes[128];
    const char *text[N_VOCAB];
    uint32_t len[N_VOCAB];
    for (int i = 0; i < 128; i++) bytes[i] = (char)i, text[i] = bytes + i, len[i] = 1;
    for (int i = 0; i < N_WORDS; i++) text[128 + i] = words[i], len[128 + i] = (uint32_t)strlen(words[i]);
    sp_grammar_vocab *v = NULL;
    sp_grammar_masker *m = NULL;
    sp_grammar_state *st = sp_grammar_state_new(g), *probe = sp_grammar_state_new(g);
    CHECK(sp_grammar_vocab_create(text, len, N_VOCAB, &v) == SPROUT_OK && sp_grammar_masker_create(g, v, &m) == SPROUT_OK);
    const char *input = "by as[-+] ws term)*\nterm   ::";
    CHECK(st && probe && sp_grammar_accept(st, input, strlen(input)));
    uint64_t bits[(N_VOCAB + 63) / 64];
    int gave_up = 0, allowed = 0;
    if (m && st && probe && sp_grammar_mask(m, st, bits) == SPROUT_OK)
        for (uint32_t t = 0; t < N_VOCAB; t++) {
            CHECK(sp_grammar_state_copy(probe, st));
            const bool took = sp_grammar_accept(probe, text[t], len[t]), in_mask = (bits[t / 64] >> (t % 64)) & 1;
            allowed += in_mask;
            if (!took && probe->gave_up) {
                gave_up++;
                CHECK_MSG(probe->set.count == st->set.count, "token '%s': the state changed when the engine gave up", text[t]);
                continue;
            }
            CHECK_MSG(took == in_mask, "token '%.*s': read %d, mask %d", (int)len[t], text[t], took, in_mask);
        }
    printf("bounds: %u stacks, %d tokens allowed, %d given up on\n", st ? st->set.count : 0, allowed, gave_up);
    CHECK_MSG(gave_up > 0, "no token passed the bound: the test no longer reaches it");
    sp_grammar_state_free(probe), sp_grammar_state_free(st);
    sp_grammar_masker_free(m);
    sp_grammar_vocab_free(v);
    sp_grammar_free(g);
}

/* Repeated alternatives of a rule are one: each empty copy here made the
 * expansion of the whole rest of the rule again, 21^6 expansions before
 * the first byte, past the engine's budget (no state at all). */
static void test_repeated_alternatives(void) {
    char text[512] = "root ::= b b b b b b \"y\"\nb ::= \"x\"";
    for (int i = 0; i < 20; i++) strcat(text, " |");
    sp_grammar *g = compile(text);
    if (!g) return;
    sp_grammar_state *first = sp_grammar_state_new(g);
    CHECK_MSG(first != NULL, "no state: the expansion passed the engine's budget");
    sp_grammar_state_free(first);
    if (!first) {
        sp_grammar_free(g);
        return;
    }
    valid(g, "y");
    valid(g, "xxy");
    valid(g, "xxxxxxy");
    invalid(g, "xxxxxxxy", 6);
    sp_grammar_free(g);
    /* and identical non-empty ones, classes compared by their code points */
    g = compile("root ::= [a-c] \"z\" | [abc] \"z\" | [a-c] \"z\" | \"q\"");
    if (!g) return;
    valid(g, "bz");
    valid(g, "q");
    invalid(g, "dz", 0);
    sp_grammar_state *st = sp_grammar_state_new(g);
    CHECK_MSG(st && st->set.count == 2, "%u stacks: the copies of [a-c] \"z\" were kept", st ? st->set.count : 0);
    sp_grammar_state_free(st);
    sp_grammar_free(g);
}

/* A start past the engine's budget is refused with a message, not taken
 * for running out of memory: distinct empty rules are not repeated
 * alternatives, so 21^6 expansions remain. */
static void test_start_bound(void) {
    char text[1024] = "root ::= b b b b b b \"y\"\nb ::= \"x\"";
    for (int i = 0; i < 20; i++) snprintf(text + strlen(text), sizeof text - strlen(text), " | e%d", i);
    for (int i = 0; i < 20; i++) snprintf(text + strlen(text), sizeof text - strlen(text), "\ne%d ::= \"\"", i);
    sp_grammar *g = compile(text);
    if (!g) return;
    sp_grammar_state *st = NULL;
    const sprout_status status = sp_grammar_state_start(g, &st);
    CHECK_MSG(status == SPROUT_ERR_UNSUPPORTED && !st && strstr(sprout_last_error(), "ambiguous grammar"), "status %s: %s",
              sprout_status_str(status), sprout_last_error());
    sp_grammar_state_free(st);
    sp_grammar_free(g);
}

/* A mask's work is bounded: every one of 300 alternatives [^z]* "zN" has
 * its own stack top, each walking the vocabulary (over llama-bpe's the first
 * mask took 3.6 s). Past the budget the mask is refused with a message,
 * and the cache keeps nothing half made: the same mask with a budget
 * enough succeeds. The budget is set small here; 2^25 in use. */
static void test_mask_budget(void) {
    vocab vc;
    if (!vocab_open(&vc, "models/stories260K.gguf")) return;
    char *text = malloc(32 * 1024);
    sp_grammar *g = NULL;
    if (text) {
        strcpy(text, "root ::= r0");
        for (int i = 1; i < 300; i++) snprintf(text + strlen(text), 32 * 1024 - strlen(text), " | r%d", i);
        for (int i = 0; i < 300; i++) snprintf(text + strlen(text), 32 * 1024 - strlen(text), "\nr%d ::= [^z]* \"z%d\"", i, i);
        g = compile(text);
    }
    sp_grammar_masker *m = NULL;
    sp_grammar_state *st = g ? sp_grammar_state_new(g) : NULL;
    uint64_t *bits = malloc(sp_grammar_mask_words(vc.v) * sizeof *bits);
    if (st && bits && sp_grammar_masker_create(g, vc.v, &m) == SPROUT_OK) {
        sp_grammar_masker_set_budget(m, 20000);
        const sprout_status refused = sp_grammar_mask(m, st, bits);
        CHECK_MSG(refused == SPROUT_ERR_UNSUPPORTED && strstr(sprout_last_error(), "more than 20000 steps"), "status %s: %s",
                  sprout_status_str(refused), sprout_last_error());
        sp_grammar_masker_set_budget(m, 0);
        CHECK(sp_grammar_mask(m, st, bits) == SPROUT_OK && check_mask(m, &vc, st, "300 alternatives") > 0);
    }
    sp_grammar_masker_free(m);
    sp_grammar_state_free(st);
    sp_grammar_free(g);
    free(bits);
    free(text);
    vocab_close(&vc);
}

int main(void) {
    test_mask_budget();
    test_start_bound();
    test_repeated_alternatives();
    test_bounds();
    test_shipped_grammars();
    test_features();
    test_ends();
    test_errors();
    test_masks("models/stories260K.gguf", test_quick_run() ? 6 : 24);
    test_masks("tokenizer/ggml-vocab-llama-bpe.gguf", test_quick_run() ? 2 : 6);
    test_masks("tokenizer/ggml-vocab-qwen2.gguf", test_quick_run() ? 1 : 4);
    TEST_MAIN_END();
}
