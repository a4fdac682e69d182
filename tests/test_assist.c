/* Assisted generation (speculative decoding with a draft model, and prompt
 * lookup) gives plain decoding's output token for token: greedy and seeded
 * sampling, on stories260K and ../shared/arch models, with drafts that
 * agree (the same model), half agree (another quantization) and disagree
 * (a random model of the same vocabulary); stop strings, EOS and the
 * length end where plain decoding ends; a cancelled turn leaves the cache
 * as it was; the second token's distribution under a disagreeing draft is
 * the target's softmax; a draft of another vocabulary is refused; a
 * chat keeps both caches. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sprout.h"
#include "test_util.h"


static sprout_model *load(const char *rel) { return test_load_shared(rel, 256); }

static sprout_pipeline *pipeline(const sprout_model *m) {
    sprout_pipeline *p = NULL;
    if (m) CHECK_MSG(sprout_pipeline_create(m, NULL, &p) == SPROUT_OK, "%s", sprout_last_error());
    return p;
}

typedef enum { PLAIN, LOOKUP, DRAFT } assist_mode;

static sprout_generation_config config(assist_mode how, float temperature, int32_t n) {
    sprout_generation_config c;
    sprout_generation_config_init(&c);
    c.temperature = temperature;
    c.max_new_tokens = n;
    c.seed = 1234;
    c.logprobs = 2;
    c.num_assistant_tokens = how == PLAIN ? 0 : 6;
    c.prompt_lookup = how == LOOKUP;
    return c;
}

static sprout_result *generate(sprout_pipeline *p, const char *prompt, const sprout_generation_config *c) {
    sprout_result *r = NULL;
    CHECK_MSG(sprout_generate(p, prompt, c, NULL, NULL, &r) == SPROUT_OK, "%s", sprout_last_error());
    return r;
}

static sprout_perf_metrics metrics(const sprout_result *r) {
    sprout_perf_metrics m = {.struct_size = sizeof m};
    if (r) CHECK(sprout_result_metrics(r, &m) == SPROUT_OK);
    return m;
}

/* Plain, prompt lookup and the draft (when given) on one prompt: the same
 * output. Returns the draft run's acceptance (accepted / proposed). */
static double compare(const char *what, sprout_pipeline *p, sprout_pipeline *draft, const char *prompt, float temperature, int32_t n,
                      const char *stop) {
    sprout_generation_config c = config(PLAIN, temperature, n);
    if (stop) {
        c.stop_strings = &stop;
        c.n_stop_strings = 1;
    }
    sprout_result *plain = generate(p, prompt, &c);
    const int32_t cached_plain = sprout_pipeline_cached_tokens(p);
    double acceptance = -1;
    for (assist_mode how = LOOKUP; how <= DRAFT; how++) {
        if (how == DRAFT && !draft) break;
        CHECK(sprout_pipeline_set_draft(p, how == DRAFT ? draft : NULL) == SPROUT_OK);
        sprout_generation_config a = config(how, temperature, n);
        a.stop_strings = c.stop_strings;
        a.n_stop_strings = c.n_stop_strings;
        sprout_result *r = generate(p, prompt, &a);
        CHECK_MSG(test_same_result(plain, r), "%s, %s: assisted output differs from plain", what, how == LOOKUP ? "lookup" : "draft");
        CHECK_MSG(sprout_pipeline_cached_tokens(p) == cached_plain, "%s: %d tokens cached, plain %d", what, sprout_pipeline_cached_tokens(p),
                  cached_plain);
        const sprout_perf_metrics m = metrics(r);
        CHECK(m.n_accepted_tokens <= m.n_draft_tokens && m.n_decode_passes + m.n_accepted_tokens >= m.n_generated_tokens - 1);
        if (how == DRAFT && m.n_draft_tokens) acceptance = (double)m.n_accepted_tokens / m.n_draft_tokens;
        sprout_result_free(r);
    }
    CHECK(sprout_pipeline_set_draft(p, NULL) == SPROUT_OK);
    sprout_result_free(plain);
    return acceptance;
}

static sprout_stream_status cancel_after(const char *piece, size_t len, void *user) {
    (void)piece;
    (void)len;
    int *calls = user;
    return ++*calls >= 6 ? SPROUT_STREAM_CANCEL : SPROUT_STREAM_RUNNING;
}

static const char *const story = "Once upon a time, there was a little girl named Lily. She loved to play outside. "
                                 "One day, Lily saw a big red ball in the park. Once upon a time, there was";

/* stories260K: the same model as draft (every proposal right), an arch
 * model of its vocabulary (mostly wrong), and prompt lookup. */
static void test_stories(void) {
    sprout_model *m = load("models/stories260K.gguf"), *random = load("arch/llama-Q8_0.gguf");
    sprout_pipeline *p = pipeline(m), *self = pipeline(m), *poor = pipeline(random);
    if (!p || !self || !poor) return;
    const double all = compare("self-draft greedy", p, self, story, 0.f, 48, NULL);
    CHECK_MSG(all == 1.0, "a draft of the same model had %.2f of its proposals accepted", all);
    compare("poor-draft greedy", p, poor, story, 0.f, 48, NULL);
    compare("self-draft sampled", p, self, story, 0.8f, 48, NULL);
    compare("poor-draft sampled", p, poor, "Lily and Tom", 1.0f, 40, NULL);
    /* ends inside an accepted run: a stop string, the length, EOS */
    compare("stop string", p, self, story, 0.f, 48, "park");
    for (int32_t n = 1; n <= 9; n += 4) compare("length", p, self, story, 0.f, n, NULL);
    compare("to EOS", p, self, "Once upon a time", 0.f, 400, NULL);
    /* a cancelled assisted turn leaves the cache as it was */
    sprout_generation_config c = config(DRAFT, 0.f, 40);
    CHECK(sprout_pipeline_set_draft(p, self) == SPROUT_OK);
    sprout_result *first = generate(p, "Once upon a time", &c);
    const int32_t before = sprout_pipeline_cached_tokens(p);
    sprout_result *r = NULL;
    int calls = 0;
    CHECK(sprout_generate(p, "Once upon a time, Tom", &c, (sprout_streamer)cancel_after, &calls, &r) == SPROUT_OK);
    CHECK(r && sprout_result_finish_reason(r) == SPROUT_FINISH_CANCELLED);
    CHECK_MSG(sprout_pipeline_cached_tokens(p) <= before, "%d cached after a cancel, %d before", sprout_pipeline_cached_tokens(p), before);
    sprout_result_free(first);
    sprout_result_free(r);
    sprout_pipeline_free(p);
    sprout_pipeline_free(self);
    sprout_pipeline_free(poor);
    sprout_model_free(m);
    sprout_model_free(random);
}

/* Targets of other architectures, each with a draft of another quantization
 * of itself (same vocabulary, near but not equal numbers). */
static void test_arch(void) {
    static const char *const pairs[][2] = {
        {"arch/llama-Q8_0.gguf", "arch/llama-Q4_K_M.gguf"},
        {"arch/qwen2-Q8_0.gguf", "arch/qwen2-Q4_K_M.gguf"},
        {"arch/gemma3-Q8_0.gguf", "arch/gemma3-Q4_K_M.gguf"},
        {"arch/phi3-Q4_K_M.gguf", "arch/phi3-Q8_0.gguf"},
    };
    /* under the sanitizers (most of their 38 s here, gemma3's the most) 16
     * tokens: two or three draft rounds each, the same paths */
    const int32_t n = test_quick_run() ? 16 : 32;
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        sprout_model *t = load(pairs[i][0]), *d = load(pairs[i][1]);
        sprout_pipeline *p = pipeline(t), *draft = pipeline(d);
        if (p && draft) {
            const double greedy = compare(pairs[i][0], p, draft, story, 0.f, n, NULL);
            const double sampled = compare(pairs[i][0], p, draft, "Lily and Tom", 0.9f, n, NULL);
            CHECK_MSG(greedy >= 0 && sampled >= 0, "%s: the draft proposed nothing", pairs[i][0]);
        }
        sprout_pipeline_free(p);
        sprout_pipeline_free(draft);
        sprout_model_free(t);
        sprout_model_free(d);
    }
}

/* Temperature 1, no filters, a draft that mostly proposes other tokens:
 * over many seeds, the second token (the first that speculation decides)
 * after the most frequent first token is distributed as the target's
 * softmax there (chi-square, p < 0.001); always accepting the draft's
 * proposal, or never resampling, fails it. */
static void test_distribution(void) {
    sprout_model *m = load("models/stories260K.gguf"), *random = load("arch/llama-F32.gguf");
    sprout_pipeline *p = pipeline(m), *poor = pipeline(random);
    if (!p || !poor) return;
    CHECK(sprout_pipeline_set_draft(p, poor) == SPROUT_OK);
    enum { MAX_DRAWS = 3000, V = 512 };
    /* the sanitizers' run walks the same paths on fewer draws (14 s for
     * 1000 there; 300 still fill 10 bins); the plain run keeps its power */
    const int DRAWS = test_quick_run() ? 300 : MAX_DRAWS;
    static int32_t first[MAX_DRAWS], second[MAX_DRAWS];
    sprout_generation_config c = config(DRAFT, 1.f, 3); /* room for a proposal after the first token */
    c.top_k = 0;
    c.top_p = 1.f;
    c.min_p = 0.f;
    c.logprobs = 0;
    int32_t proposed = 0, accepted = 0;
    for (int i = 0; i < DRAWS; i++) {
        c.seed = 1000 + (uint64_t)i;
        sprout_result *r = generate(p, "Once upon a time there was", &c);
        size_t n = 0;
        const sprout_token *t = r ? sprout_result_tokens(r, &n) : NULL;
        first[i] = n > 0 ? t[0] : -1;
        second[i] = n > 1 ? t[1] : -1;
        const sprout_perf_metrics mm = metrics(r);
        proposed += mm.n_draft_tokens;
        accepted += mm.n_accepted_tokens;
        sprout_result_free(r);
    }
    CHECK_MSG(proposed > DRAWS / 2 && accepted < proposed, "the draft proposed %d and had %d accepted", proposed, accepted);
    static int count_first[V], count[V];
    for (int i = 0; i < DRAWS; i++)
        if (first[i] >= 0 && first[i] < V) count_first[first[i]]++;
    int32_t mode = 0;
    for (int32_t v = 1; v < V; v++)
        if (count_first[v] > count_first[mode]) mode = v;
    int total = 0;
    for (int i = 0; i < DRAWS; i++)
        if (first[i] == mode && second[i] >= 0 && second[i] < V) {
            count[second[i]]++;
            total++;
        }
    /* the target's distribution after prompt + mode: all its log-probabilities */
    sprout_pipeline_set_draft(p, NULL);
    sprout_token *ids = NULL;
    size_t n_ids = 0;
    CHECK(sprout_model_tokenize_prompt(m, "Once upon a time there was", strlen("Once upon a time there was"), false, &ids, &n_ids) == SPROUT_OK);
    sprout_token *with = malloc((n_ids + 1) * sizeof *with);
    if (!ids || !with) return;
    memcpy(with, ids, n_ids * sizeof *ids);
    with[n_ids] = mode;
    sprout_generation_config g = config(PLAIN, 0.f, 1);
    g.logprobs = 64; /* the most recorded: the rest is one bin */
    sprout_result *r = NULL;
    CHECK(sprout_generate_tokens(p, with, n_ids + 1, &g, NULL, NULL, &r) == SPROUT_OK);
    double expected[V] = {0};
    bool known[V] = {0};
    float lp;
    const sprout_token *top;
    const float *top_lp;
    size_t k = 0;
    double rest_expected = total;
    if (r && sprout_result_logprob(r, 0, &lp, &top, &top_lp, &k) == SPROUT_OK)
        for (size_t j = 0; j < k; j++) {
            expected[top[j]] = exp(top_lp[j]) * total;
            known[top[j]] = true;
            rest_expected -= expected[top[j]];
        }
    CHECK_MSG(k == 64 && total > DRAWS / 4, "%zu log-probabilities, %d draws after token %d", k, total, mode);
    /* bins of at least 5 expected draws, the rest pooled */
    double chi2 = 0, rest_seen = 0;
    int bins = 0;
    for (int32_t v = 0; v < V; v++) {
        if (!known[v]) {
            rest_seen += count[v];
        } else if (expected[v] >= 5) {
            chi2 += (count[v] - expected[v]) * (count[v] - expected[v]) / expected[v];
            bins++;
        } else {
            rest_expected += expected[v];
            rest_seen += count[v];
        }
    }
    if (rest_expected >= 5) {
        chi2 += (rest_seen - rest_expected) * (rest_seen - rest_expected) / rest_expected;
        bins++;
    }
    /* the 0.999 quantile of chi-square with bins - 1 degrees of freedom (Wilson-Hilferty) */
    const double df = bins - 1, z = 3.09, q = 1 - 2 / (9 * df) + z * sqrt(2 / (9 * df));
    const double critical = df * q * q * q;
    CHECK_MSG(bins >= 3 && chi2 < critical, "chi-square %.1f over %d bins (critical %.1f), %d draws", chi2, bins, critical, total);
    sprout_result_free(r);
    free(with);
    sprout_free(ids);
    sprout_pipeline_free(p);
    sprout_pipeline_free(poor);
    sprout_model_free(m);
    sprout_model_free(random);
}

/* A chat with a draft: each turn is plain decoding's, and both caches
 * carry over (the second turn computes only its new tokens, and the draft
 * holds the conversation too). */
static void test_chat(void) {
    sprout_model *m = load("models/stories260K.gguf");
    sprout_pipeline *p = pipeline(m), *q = pipeline(m), *draft = pipeline(m);
    if (!p || !q || !draft) return;
    CHECK(sprout_pipeline_set_draft(q, draft) == SPROUT_OK);
    CHECK(sprout_chat_set_template(p, "chatml") == SPROUT_OK && sprout_chat_set_template(q, "chatml") == SPROUT_OK);
    CHECK(sprout_chat_start(p, "Tell stories.") == SPROUT_OK && sprout_chat_start(q, "Tell stories.") == SPROUT_OK);
    static const char *const turns[] = {"Once upon a time", "And then?"};
    for (int t = 0; t < 2; t++) {
        sprout_generation_config plain = config(PLAIN, 0.f, 24), assisted = config(DRAFT, 0.f, 24);
        sprout_result *a = NULL, *b = NULL;
        CHECK(sprout_chat_generate(p, turns[t], &plain, NULL, NULL, &a) == SPROUT_OK);
        CHECK(sprout_chat_generate(q, turns[t], &assisted, NULL, NULL, &b) == SPROUT_OK);
        CHECK_MSG(test_same_result(a, b), "chat turn %d differs with a draft", t);
        if (t == 1) {
            CHECK(sprout_pipeline_last_prefill_tokens(q) == sprout_pipeline_last_prefill_tokens(p));
            CHECK(sprout_pipeline_last_prefill_tokens(q) < (int32_t)metrics(b).n_prompt_tokens);
            CHECK(sprout_pipeline_cached_tokens(draft) > (int32_t)metrics(b).n_prompt_tokens / 2);
        }
        sprout_result_free(a);
        sprout_result_free(b);
    }
    sprout_pipeline_free(p);
    sprout_pipeline_free(q);
    sprout_pipeline_free(draft);
    sprout_model_free(m);
}

/* A draft of another vocabulary is refused, naming the difference. */
static void test_vocabulary(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/sprout-assist-%d.gguf", "/tmp", (int)getpid());
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' qwen2-tiny F32 '%s' >/dev/null", SPROUT_MAKE_MODEL_PATH, path);
    CHECK(system(cmd) == 0);
    sprout_model *m = load("models/stories260K.gguf"), *other = NULL;
    CHECK(sprout_model_load(path, NULL, &other) == SPROUT_OK);
    sprout_pipeline *p = pipeline(m), *draft = pipeline(other);
    if (p && draft) {
        CHECK(sprout_pipeline_set_draft(p, draft) == SPROUT_ERR_UNSUPPORTED && strstr(sprout_last_error(), "draft model"));
        CHECK(sprout_pipeline_set_draft(p, p) == SPROUT_ERR_INVALID_ARGUMENT);
        CHECK(sprout_pipeline_set_draft(NULL, draft) == SPROUT_ERR_INVALID_ARGUMENT);
        /* settings out of range are refused, not walked: an n-gram size of millions, a negative count */
        sprout_generation_config bad = config(LOOKUP, 0.f, 8);
        bad.max_ngram_size = 1 << 30;
        sprout_result *none = NULL;
        CHECK(sprout_generate(p, "Once upon a time", &bad, NULL, NULL, &none) == SPROUT_ERR_INVALID_ARGUMENT && !none);
        bad = config(LOOKUP, 0.f, 8);
        bad.num_assistant_tokens = -3;
        CHECK(sprout_generate(p, "Once upon a time", &bad, NULL, NULL, &none) == SPROUT_ERR_INVALID_ARGUMENT && !none);
        /* without a draft, a config asking for one decodes plainly */
        sprout_generation_config c = config(DRAFT, 0.f, 8), plain = config(PLAIN, 0.f, 8);
        sprout_result *a = generate(p, "Once upon a time", &c), *b = generate(p, "Once upon a time", &plain);
        CHECK(test_same_result(a, b) && metrics(a).n_draft_tokens == 0);
        sprout_result_free(a);
        sprout_result_free(b);
    }
    sprout_pipeline_free(p);
    sprout_pipeline_free(draft);
    sprout_model_free(m);
    sprout_model_free(other);
    unlink(path);
}

int main(void) {
    test_stories();
    test_arch();
    test_distribution();
    test_vocabulary();
    test_chat();
    TEST_MAIN_END();
}
