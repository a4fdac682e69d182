/* JSON mode, the grammar of one JSON object (pipeline/constraint.c),
 * against jansson: every prefix of a valid object is accepted and only the
 * whole is complete; thousands of mutated documents agree with jansson
 * both ways (what jansson accepts within the grammar's whitespace is
 * accepted and complete; what is accepted and complete jansson accepts); a
 * list of near misses is refused; a sequence in JSON mode on the real
 * stories260K vocabulary passes over better-scored tokens that would break
 * the object and ends as the object closes; and the masks a sequence uses
 * equal a scan of the vocabulary. */
#include <jansson.h>

#include "pipeline/constraint.h"
#include "pipeline/sequence.h"
#include "test_util.h"

static const char *const valid[] = {
    "{}",
    " {\"a\": 1}",
    "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": [1, 2, 3]}}",
    "{\"x\":-0.5e+10,\"y\":0,\"z\":[true,false,null,[],{}],\"s\":\"\\u00e9\\n\\\"q\\\" \xc3\xa9\"}",
    "{\n  \"deep\": [[[[{\"k\": [1.0E-3, -12, 3e7]}]]]],\n  \"empty\": \"\"\n}",
    "{\"a\" : { \"b\" : [ 1 , 2 ] } }",
};

static const char *const invalid[] = {
    "[1]", "{\"a\":01}", "{\"a\":-}", "{'a':1}", "{\"a\" 1}", "{\"a\":1,}", "{,}", "{\"a\":[1,]}", "{\"a\":\"\x01\"}",
    "{\"a\":\"\\q\"}", "{\"a\":\"\\u12G4\"}", "{\"a\":tru}", "{\"a\":1}}", "{\"a\":1} x", "{}{}", "{\"a\":1.}", "{\"a\":1e}",
    "{\"a\":.5}", "{\"a\":+1}", "{1:2}", "{\"a\":NaN}", "{\"a\":\"\xc3\"}", "{\"a\":\"\xed\xa0\x80\"}", "{\"a\":\"\xc0\xaf\"}",
};

static sp_grammar *json_grammar;

/* A state of JSON mode's grammar after s[0..n); NULL when refused. */
static sp_grammar_state *feed_all(const char *s, size_t n) {
    sp_grammar_state *st = sp_grammar_state_new(json_grammar);
    if (st && !sp_grammar_accept(st, s, n)) {
        sp_grammar_state_free(st);
        return NULL;
    }
    return st;
}

/* Accepted and complete: the object closed, nothing may follow. */
static bool whole(const char *s, size_t n) {
    sp_grammar_state *st = feed_all(s, n);
    const bool done = st && sp_grammar_must_end(st);
    sp_grammar_state_free(st);
    return done;
}

/* Accepted and not complete. */
static bool prefix(const char *s, size_t n) {
    sp_grammar_state *st = feed_all(s, n);
    const bool open = st && !sp_grammar_can_end(st);
    sp_grammar_state_free(st);
    return open;
}

/* Refused. */
static bool refused(const char *s, size_t n) {
    sp_grammar_state *st = feed_all(s, n);
    sp_grammar_state_free(st);
    return st == NULL;
}

static void test_fixed(void) {
    for (size_t i = 0; i < sizeof valid / sizeof valid[0]; i++) {
        const size_t n = strlen(valid[i]);
        for (size_t k = 0; k < n; k++) CHECK_MSG(prefix(valid[i], k), "valid %zu: prefix of %zu bytes", i, k);
        CHECK_MSG(whole(valid[i], n), "valid %zu whole", i);
        /* byte by byte gives the same as all at once */
        sp_grammar_state *st = sp_grammar_state_new(json_grammar);
        bool ok = st != NULL;
        for (size_t k = 0; ok && k < n; k++) ok = sp_grammar_accept(st, valid[i] + k, 1);
        CHECK_MSG(ok && sp_grammar_must_end(st), "valid %zu byte by byte", i);
        sp_grammar_state_free(st);
    }
    for (size_t i = 0; i < sizeof invalid / sizeof invalid[0]; i++)
        CHECK_MSG(refused(invalid[i], strlen(invalid[i])), "invalid %zu (%s) accepted", i, invalid[i]);
    /* whitespace as llama.cpp's JSON grammar has it: one space, or a
     * newline and up to 20 spaces or tabs, between any two tokens */
    static const char indented[] = "{\n                    \"a\": 1}", too_deep[] = "{\n                     \"a\": 1}",
                      pretty[] = "{\n  \"a\": 1\n}", two_newlines[] = "{\n\n\"a\": 1}", two_spaces[] = "{  \"a\": 1}";
    CHECK(whole(indented, strlen(indented)) && whole(pretty, strlen(pretty)));
    CHECK(refused(too_deep, strlen(too_deep)) && refused(two_newlines, strlen(two_newlines)) && refused(two_spaces, strlen(two_spaces)));
    /* deep nesting is fine */
    char text[512];
    size_t o = 0;
    text[o++] = '{', text[o++] = '"', text[o++] = 'a', text[o++] = '"', text[o++] = ':';
    for (int d = 0; d < 100; d++) text[o++] = '[';
    for (int d = 0; d < 100; d++) text[o++] = ']';
    text[o++] = '}';
    CHECK(whole(text, o));
}

/* Whether every run of whitespace outside strings is one JSON mode's
 * grammar allows: " ", or a newline and up to 20 spaces or tabs (jansson
 * allows any). */
static bool whitespace_in_bounds(const char *s, size_t n) {
    bool in_string = false;
    for (size_t i = 0; i < n; i++) {
        const char c = s[i];
        if (in_string) {
            if (c == '\\') i++;
            else if (c == '"') in_string = false;
            continue;
        }
        if (c == ' ' || c == '\n' || c == '\t' || c == '\r') {
            size_t end = i + 1;
            while (end < n && (s[end] == ' ' || s[end] == '\n' || s[end] == '\t' || s[end] == '\r')) end++;
            bool indented = c == '\n' && end - i - 1 <= 20;
            for (size_t k = i + 1; indented && k < end; k++) indented = s[k] == ' ' || s[k] == '\t';
            if (!(end - i == 1 && c == ' ') && !indented) return false;
            i = end - 1;
            continue;
        }
        in_string = c == '"';
    }
    return true;
}

static uint64_t rng = 88172645463325252ull;
static uint32_t next_random(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (uint32_t)(rng >> 11);
}

/* Both directions against jansson on mutated documents (object roots only,
 * as JSON mode wants; jansson allows array roots). */
static void test_against_jansson(void) {
    static const char alphabet[] = "{}[]\":,. \n-+0123456789eEtruefalsn\\u\"ab";
    int agreed = 0, accepted = 0;
    for (int trial = 0; trial < 20000; trial++) {
        const char *base = valid[next_random() % (sizeof valid / sizeof valid[0])];
        char doc[512];
        size_t n = strlen(base);
        memcpy(doc, base, n);
        for (int m = 1 + (int)(next_random() % 2); m > 0 && n > 1; m--) {
            const size_t at = next_random() % n;
            const char c = alphabet[next_random() % (sizeof alphabet - 1)];
            switch (next_random() % 3) {
            case 0: doc[at] = c; break;
            case 1: memmove(doc + at, doc + at + 1, n - at - 1), n--; break;
            default:
                if (n + 1 < sizeof doc) memmove(doc + at + 1, doc + at, n - at), doc[at] = c, n++;
            }
        }
        size_t first = 0;
        while (first < n && (doc[first] == ' ' || doc[first] == '\n')) first++;
        if (first == n || doc[first] != '{') continue;
        json_error_t err;
        json_t *j = json_loadb(doc, n, JSON_ALLOW_NUL, &err);
        const bool ours = whole(doc, n);
        if (!j && strstr(err.text, "overflow")) continue; /* jansson stops at a number past double's range, which is still JSON */
        if (j && !whitespace_in_bounds(doc, n)) {
            json_decref(j);
            continue;
        }
        const bool theirs = j != NULL;
        json_decref(j);
        CHECK_MSG(ours == theirs, "trial %d: ours %d, jansson %d: %.*s", trial, ours, theirs, (int)n, doc);
        agreed += ours == theirs;
        accepted += theirs;
    }
    printf("json mode vs jansson: %d mutated documents agree (%d valid)\n", agreed, accepted);
    CHECK(accepted > 100);
}

/* A token whose text is exactly `c` (a byte token or a one-character one). */
static int32_t token_of(const sprout_tokenizer *tok, int32_t n_vocab, char c) {
    for (int32_t id = 0; id < n_vocab; id++) {
        const char *piece;
        size_t len;
        if (sprout_token_to_piece(tok, id, false, &piece, &len) == SPROUT_OK && len == 1 && piece[0] == c) return id;
    }
    return -1;
}

/* Defaults with JSON mode on. */
static sprout_generation_config json_mode_config(float temperature, int32_t max_new_tokens) {
    sprout_generation_config cfg;
    sprout_generation_config_init(&cfg);
    cfg.temperature = temperature;
    cfg.max_new_tokens = max_new_tokens;
    cfg.json_object = true;
    return cfg;
}

/* The real tiny model (NULL after a failed check). */
static sprout_model *load_stories(void) {
    char path[1024];
    snprintf(path, sizeof path, "%s/models/stories260K.gguf", test_shared_dir());
    sprout_model *model = NULL;
    if (sprout_model_load(path, NULL, &model) != SPROUT_OK) CHECK_MSG(0, "%s: %s", path, sprout_last_error());
    return model;
}

static void test_sequence(void) {
    sprout_model *model = load_stories();
    if (!model) return;
    const sprout_tokenizer *tok = sprout_model_tokenizer(model);
    const int32_t n_vocab = sprout_tokenizer_vocab_size(tok);
    static const char target[] = "{\"a\": [1, true]}";
    const int32_t eos = sprout_tokenizer_special(tok, SPROUT_SPECIAL_EOS), x = token_of(tok, n_vocab, 'x'),
                  brace = token_of(tok, n_vocab, '}');
    sp_sampler sampler;
    sp_sampler_init(&sampler, n_vocab, 1);
    sprout_generation_config cfg = json_mode_config(0.f, 64);
    sp_seq seq;
    const int32_t bos = 1;
    CHECK(sp_seq_begin(&seq, model, &sampler, 256, &bos, 1, NULL, 0, sp_now_ms(), 0, &cfg, NULL, NULL) == SPROUT_OK);
    float *logits = calloc((size_t)n_vocab, sizeof *logits);
    size_t step = 0;
    int32_t feed;
    bool going = true;
    for (; going && step < sizeof target - 1; step++) {
        /* the wanted character scores 5; what would break the object here scores more: end-of-text
         * (until it closes), 'x' (but in the key's string, steps 2-3) and '}' (from the array's start on) */
        memset(logits, 0, (size_t)n_vocab * sizeof *logits);
        logits[token_of(tok, n_vocab, target[step])] = 5.f;
        if (eos >= 0) logits[eos] = 9.f;
        if (x >= 0 && step != 2 && step != 3) logits[x] = 8.f;
        if (brace >= 0 && step >= 5 && step + 1 < sizeof target - 1) logits[brace] = 7.f;
        going = sp_seq_next(&seq, logits, &bos, 1, true, &feed);
    }
    CHECK_MSG(step == sizeof target - 1 && !going && seq.finish == SPROUT_FINISH_EOS, "ended after %zu of %zu tokens, finish %d", step,
              sizeof target - 1, (int)seq.finish);
    sprout_result *result = NULL;
    CHECK(sp_seq_end(&seq, SPROUT_OK, &result) == SPROUT_OK);
    size_t len = 0;
    const char *text = result ? sprout_result_text(result, &len) : "";
    CHECK_MSG(len == sizeof target - 1 && !memcmp(text, target, len), "JSON mode wrote [%.*s]", (int)len, text);
    sprout_result_free(result);
    free(logits);
    sp_sampler_free(&sampler);
    sprout_model_free(model);
}

/* The masks a sequence uses (sp_constraint_mask) against a scan of the
 * vocabulary (each token's text tried on a copy of the state; tokens
 * without text never, but end-of-generation once the object may end) for
 * every state that random walks through JSON mode on stories260K reach. */
static void test_masks_by_state(void) {
    sprout_model *model = load_stories();
    if (!model) return;
    const sprout_tokenizer *tok = sprout_model_tokenizer(model);
    const int32_t n_vocab = sprout_tokenizer_vocab_size(tok);
    if (n_vocab <= 0) {
        CHECK(n_vocab > 0);
        sprout_model_free(model);
        return;
    }
    sp_sampler sampler;
    sp_sampler_init(&sampler, n_vocab, 1);
    sprout_generation_config cfg = json_mode_config(1.5f, 400);
    cfg.top_k = 0, cfg.top_p = 1, cfg.min_p = 0; /* every token may be drawn */
    float *logits = malloc((size_t)n_vocab * sizeof *logits);
    bool *want = malloc((size_t)n_vocab * sizeof *want), *got = malloc((size_t)n_vocab * sizeof *got);
    int steps = 0, mismatches = 0;
    const int32_t bos = 1;
    for (uint64_t seed = 1; seed <= 6; seed++) { /* one sampler: later walks meet states the earlier ones left */
        cfg.seed = seed;
        sp_seq seq;
        CHECK(sp_seq_begin(&seq, model, &sampler, 512, &bos, 1, NULL, 0, sp_now_ms(), 0, &cfg, NULL, NULL) == SPROUT_OK);
        uint64_t r = seed * 0x9E3779B97F4A7C15ull;
        for (bool going = true; going;) {
            sprout_status status;
            const uint64_t *bits = sp_constraint_mask(&seq.constraint, &status);
            CHECK(status == SPROUT_OK);
            for (int32_t id = 0; id < n_vocab; id++) got[id] = bits && (bits[id / 64] >> (id % 64) & 1);
            const bool can_end = sp_grammar_can_end(seq.constraint.state);
            for (int32_t id = 0; id < n_vocab; id++) {
                const char *text;
                size_t len = 0;
                if (sprout_token_to_piece(tok, id, false, &text, &len) != SPROUT_OK || len == 0) {
                    want[id] = can_end && sprout_tokenizer_is_eog(tok, id);
                    continue;
                }
                sp_grammar_state *probe = sp_grammar_state_clone(seq.constraint.state);
                want[id] = probe && sp_grammar_accept(probe, text, len);
                sp_grammar_state_free(probe);
            }
            mismatches += memcmp(want, got, (size_t)n_vocab * sizeof *want) != 0;
            steps++;
            /* logits that wander: structure one step, text the next */
            for (int32_t id = 0; id < n_vocab; id++) {
                r ^= r << 13, r ^= r >> 7, r ^= r << 17;
                logits[id] = (float)(r % 1000) / 250.f;
            }
            int32_t feed;
            going = sp_seq_next(&seq, logits, &bos, 1, true, &feed);
        }
        sprout_result *result = NULL;
        CHECK(sp_seq_end(&seq, SPROUT_OK, &result) == SPROUT_OK);
        sprout_result_free(result);
    }
    CHECK_MSG(mismatches == 0 && steps > 100, "%d of %d masks differ from a scan", mismatches, steps);
    free(logits);
    free(want);
    free(got);
    sp_sampler_free(&sampler);
    sprout_model_free(model);
}

int main(void) {
    CHECK(sp_grammar_compile(sp_json_object_grammar, strlen(sp_json_object_grammar), "root", &json_grammar) == SPROUT_OK);
    if (!json_grammar) TEST_MAIN_END();
    test_fixed();
    test_against_jansson();
    test_sequence();
    test_masks_by_state();
    sp_grammar_free(json_grammar);
    TEST_MAIN_END();
}
