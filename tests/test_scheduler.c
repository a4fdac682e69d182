/* The continuous-batching scheduler on the real stories260K model: many
 * concurrent requests give exactly what each gives alone (greedy and
 * seeded sampling), streaming matches the result, cancellation and
 * disconnects free the slot without disturbing the others, a full queue
 * says busy, cached prefixes are reused, and shutdown ends everything. */
#include <pthread.h>
#include <unistd.h>

#include "runtime/forward.h"
#include "test_util.h"

static char model_path[1024];

static const char *prompts[] = {
    "Once upon a time",
    "The little dog",
    "Lily wanted to play with her ball",
    "One day, a boy named Tim",
    "The sun was",
    "Mom said",
    "There was a big tree in the park. Every day",
    "Bob and Sue",
    "A cat sat",
    "The bird flew over the house and",
};
#define N_PROMPTS (sizeof prompts / sizeof prompts[0])

static sprout_generation_config config(int n, float temperature, uint64_t seed) {
    sprout_generation_config c;
    sprout_generation_config_init(&c);
    c.temperature = temperature;
    c.max_new_tokens = n;
    c.seed = seed;
    return c;
}

static sprout_status tokenize(const sprout_model *m, const char *text, sprout_token **ids, size_t *n) {
    return sprout_model_tokenize_prompt(m, text, strlen(text), false, ids, n);
}

/* What a pipeline alone generates for the prompt. */
static sprout_result *alone(sprout_model *m, const char *prompt, const sprout_generation_config *cfg) {
    sprout_pipeline *p = NULL;
    sprout_result *r = NULL;
    CHECK(sprout_pipeline_create(m, NULL, &p) == SPROUT_OK);
    if (p) CHECK_MSG(sprout_generate(p, prompt, cfg, NULL, NULL, &r) == SPROUT_OK, "%s", sprout_last_error());
    sprout_pipeline_free(p);
    return r;
}

typedef struct stream_capture {
    char text[8192];
    size_t len;
    int pieces, cancel_after; /* cancel_after > 0: CANCEL at that piece */
    int done_calls;
} stream_capture;

static sprout_stream_status capture(const char *piece, size_t len, void *user) {
    stream_capture *c = user;
    if (c->len + len < sizeof c->text) {
        memcpy(c->text + c->len, piece, len);
        c->len += len;
    }
    c->pieces++;
    return c->cancel_after > 0 && c->pieces >= c->cancel_after ? SPROUT_STREAM_CANCEL : SPROUT_STREAM_RUNNING;
}

static void on_done(sprout_request *req, void *user) {
    (void)req;
    ((stream_capture *)user)->done_calls++;
}

static bool same_tokens(const sprout_result *a, const sprout_result *b) {
    size_t na, nb;
    const sprout_token *ta = sprout_result_tokens(a, &na), *tb = sprout_result_tokens(b, &nb);
    return na == nb && !memcmp(ta, tb, na * sizeof *ta);
}

/* All prompts at once on `slots` slots (the rest queue) equal each alone. */
static void test_exact(sprout_model *m, int slots, float temperature) {
    sprout_scheduler_params sp = {.struct_size = sizeof sp, .n_slots = slots, .n_ctx = 256, .prefill_chunk = 5};
    sprout_scheduler *s = NULL;
    CHECK_MSG(sprout_scheduler_create(m, &sp, &s) == SPROUT_OK, "%s", sprout_last_error());
    if (!s) return;
    sprout_request *reqs[N_PROMPTS] = {0};
    stream_capture caps[N_PROMPTS];
    memset(caps, 0, sizeof caps);
    sprout_generation_config cfgs[N_PROMPTS];
    for (size_t i = 0; i < N_PROMPTS; i++) {
        cfgs[i] = config(40 + (int)i * 3, temperature, 1000 + i);
        sprout_token *ids = NULL;
        size_t n = 0;
        CHECK(tokenize(m, prompts[i], &ids, &n) == SPROUT_OK);
        sprout_request_params rp = {.struct_size = sizeof rp, .prompt = ids, .n_prompt = n, .config = &cfgs[i],
                                    .streamer = capture, .on_done = on_done, .user = &caps[i]};
        CHECK_MSG(sprout_scheduler_submit(s, &rp, &reqs[i]) == SPROUT_OK, "%s", sprout_last_error());
        sprout_free(ids);
    }
    for (size_t i = 0; i < N_PROMPTS; i++) {
        sprout_result *r = NULL, *ref = alone(m, prompts[i], &cfgs[i]);
        CHECK_MSG(sprout_request_wait(reqs[i], &r) == SPROUT_OK, "%s", sprout_last_error());
        if (r && ref) {
            CHECK_MSG(same_tokens(r, ref), "slots %d, temperature %.1f, prompt %zu: '%s' vs alone '%s'", slots, temperature, i,
                      sprout_result_text(r, NULL), sprout_result_text(ref, NULL));
            size_t len;
            const char *text = sprout_result_text(r, &len);
            CHECK(len == caps[i].len && !memcmp(text, caps[i].text, len));
            CHECK(sprout_result_finish_reason(r) == sprout_result_finish_reason(ref));
        }
        CHECK(caps[i].done_calls == 1);
        CHECK(sprout_request_done(reqs[i]));
        sprout_result_free(r);
        sprout_result_free(ref);
        sprout_request_free(reqs[i]);
    }
    sprout_scheduler_stats st = {.struct_size = sizeof st};
    CHECK(sprout_scheduler_stats_get(s, &st) == SPROUT_OK);
    CHECK(st.requests_done == N_PROMPTS && st.busy_slots == 0 && st.queued == 0 && st.generated_tokens > 0);
    /* batching happened: fewer forward passes than tokens computed */
    CHECK_MSG(slots == 1 || st.steps < st.generated_tokens, "%llu steps for %llu tokens", (unsigned long long)st.steps,
              (unsigned long long)st.generated_tokens);
    sprout_scheduler_free(s);
}

/* One forward pass per generated token, prompt included: the pass over the
 * prompt gives the first token, and the last token is not fed back. */
static void test_passes_per_token(sprout_model *m) {
    sprout_scheduler_params sp = {.struct_size = sizeof sp, .n_slots = 1, .n_ctx = 256};
    sprout_scheduler *s = NULL;
    CHECK(sprout_scheduler_create(m, &sp, &s) == SPROUT_OK);
    if (!s) return;
    sprout_generation_config cfg = config(12, 0, 1);
    cfg.ignore_eos = true;
    sprout_token *ids = NULL;
    size_t n = 0;
    CHECK(tokenize(m, prompts[0], &ids, &n) == SPROUT_OK);
    sprout_request_params rp = {.struct_size = sizeof rp, .prompt = ids, .n_prompt = n, .config = &cfg};
    sprout_request *req = NULL;
    sprout_result *r = NULL;
    CHECK(sprout_scheduler_submit(s, &rp, &req) == SPROUT_OK);
    CHECK(req && sprout_request_wait(req, &r) == SPROUT_OK);
    size_t n_out = 0;
    sprout_result_tokens(r, &n_out);
    sprout_scheduler_stats st = {.struct_size = sizeof st};
    CHECK(sprout_scheduler_stats_get(s, &st) == SPROUT_OK);
    CHECK_MSG(n_out == 12 && st.steps == 12, "%zu tokens in %llu passes", n_out, (unsigned long long)st.steps);
    CHECK(sprout_result_finish_reason(r) == SPROUT_FINISH_LENGTH);
    sprout_result_free(r);
    sprout_request_free(req);
    sprout_free(ids);
    sprout_scheduler_free(s);
}

/* A request cancelled mid-stream (its streamer, or another thread) ends
 * "cancelled" at once and the others still give their exact output. */
static void test_cancel(sprout_model *m) {
    sprout_scheduler_params sp = {.struct_size = sizeof sp, .n_slots = 2, .n_ctx = 256};
    sprout_scheduler *s = NULL;
    CHECK(sprout_scheduler_create(m, &sp, &s) == SPROUT_OK);
    if (!s) return;
    sprout_generation_config long_cfg = config(200, 0, 1), cfg = config(60, 0, 1);
    long_cfg.ignore_eos = true;
    stream_capture a = {.cancel_after = 5}, b = {0}, c = {0};
    sprout_token *ids = NULL;
    size_t n = 0;
    CHECK(tokenize(m, prompts[0], &ids, &n) == SPROUT_OK);
    sprout_request *ra = NULL, *rb = NULL, *rc = NULL;
    sprout_request_params pa = {.struct_size = sizeof pa, .prompt = ids, .n_prompt = n, .config = &long_cfg, .streamer = capture, .user = &a};
    sprout_request_params pb = pa, pc = pa;
    pb.config = &cfg;
    pb.user = &b;
    pc.config = &long_cfg;
    pc.user = &c;
    CHECK(sprout_scheduler_submit(s, &pa, &ra) == SPROUT_OK);
    CHECK(sprout_scheduler_submit(s, &pb, &rb) == SPROUT_OK);
    sprout_result *r = NULL;
    CHECK(sprout_request_wait(ra, &r) == SPROUT_OK);
    CHECK(r && sprout_result_finish_reason(r) == SPROUT_FINISH_CANCELLED);
    CHECK(a.pieces == 5);
    sprout_result_free(r);
    /* the freed slot takes the next request; cancel that one from here */
    CHECK(sprout_scheduler_submit(s, &pc, &rc) == SPROUT_OK);
    while (!sprout_request_done(rc) && c.pieces < 3) usleep(1000);
    sprout_request_cancel(rc);
    CHECK(sprout_request_wait(rc, &r) == SPROUT_OK);
    CHECK(r && sprout_result_finish_reason(r) == SPROUT_FINISH_CANCELLED);
    sprout_result_free(r);
    sprout_result *ref = alone(m, prompts[0], &cfg);
    CHECK(sprout_request_wait(rb, &r) == SPROUT_OK);
    CHECK(r && ref && same_tokens(r, ref));
    /* the result is handed out once */
    sprout_result *again = NULL;
    CHECK(sprout_request_wait(rb, &again) == SPROUT_ERR_NOT_FOUND && again == NULL);
    sprout_result_free(r);
    sprout_result_free(ref);
    sprout_request_free(ra);
    sprout_request_free(rb);
    sprout_request_free(rc);
    sprout_free(ids);
    sprout_scheduler_free(s);
}

/* One slot, no queue: a second request is turned away; the prefix of a
 * finished request is reused; a prompt longer than the context fails. */
static void test_limits_and_reuse(sprout_model *m) {
    sprout_scheduler_params sp = {.struct_size = sizeof sp, .n_slots = 1, .n_ctx = 128, .n_queue = -1};
    sprout_scheduler *s = NULL;
    CHECK(sprout_scheduler_create(m, &sp, &s) == SPROUT_OK);
    if (!s) return;
    CHECK(sprout_scheduler_n_slots(s) == 1 && sprout_scheduler_n_ctx(s) == 128);
    /* the default the server sizes models with is the one a scheduler takes */
    const size_t per_token = sprout_scheduler_kv_bytes_per_token(s);
    sprout_scheduler_params dp = {.struct_size = sizeof dp, .n_ctx = 128};
    sprout_scheduler *d = NULL;
    CHECK(sprout_scheduler_create(m, &dp, &d) == SPROUT_OK);
    const int32_t slots = sprout_scheduler_default_slots(128, per_token);
    CHECK(slots >= 2 && slots <= 8 && sprout_scheduler_n_slots(d) == slots);
    sprout_scheduler_free(d);
    CHECK(sprout_scheduler_default_slots(1 << 20, 4096) == 1); /* 4 GiB a slot */
    sprout_token *ids = NULL, *longer = NULL;
    size_t n = 0, n_longer = 0;
    CHECK(tokenize(m, prompts[6], &ids, &n) == SPROUT_OK);
    CHECK(tokenize(m, "There was a big tree in the park. Every day, the birds sang", &longer, &n_longer) == SPROUT_OK);
    sprout_generation_config cfg = config(30, 0, 1), endless = config(100, 0, 1);
    endless.ignore_eos = true;
    stream_capture cap = {0};
    sprout_request_params rp = {.struct_size = sizeof rp, .prompt = ids, .n_prompt = n, .config = &endless, .streamer = capture, .user = &cap};
    sprout_request *r1 = NULL, *r2 = NULL;
    CHECK(sprout_scheduler_submit(s, &rp, &r1) == SPROUT_OK);
    rp.config = &cfg;
    rp.streamer = NULL;
    CHECK(sprout_scheduler_submit(s, &rp, &r2) == SPROUT_ERR_BUSY && r2 == NULL);
    sprout_result *r = NULL;
    CHECK(sprout_request_wait(r1, &r) == SPROUT_OK);
    sprout_perf_metrics pm = {.struct_size = sizeof pm};
    CHECK(r && sprout_result_metrics(r, &pm) == SPROUT_OK && pm.n_prefill_tokens == (int32_t)n);
    sprout_result_free(r);
    sprout_request_free(r1);

    rp.prompt = longer;
    rp.n_prompt = n_longer;
    CHECK(sprout_scheduler_submit(s, &rp, &r2) == SPROUT_OK);
    CHECK(sprout_request_wait(r2, &r) == SPROUT_OK);
    CHECK(r && sprout_result_metrics(r, &pm) == SPROUT_OK);
    CHECK_MSG(pm.n_prompt_tokens - pm.n_prefill_tokens >= (int32_t)n - 1, "%d of %d prompt tokens reused", pm.n_prompt_tokens - pm.n_prefill_tokens,
              (int)n);
    sprout_result *ref = NULL;
    char text[256];
    snprintf(text, sizeof text, "%s", "There was a big tree in the park. Every day, the birds sang");
    ref = alone(m, text, &cfg);
    CHECK(r && ref && same_tokens(r, ref));
    sprout_result_free(ref);
    sprout_result_free(r);
    sprout_request_free(r2);

    sprout_token big[200];
    for (int i = 0; i < 200; i++) big[i] = ids[i % n];
    rp.prompt = big;
    rp.n_prompt = 200;
    CHECK(sprout_scheduler_submit(s, &rp, &r2) == SPROUT_ERR_OUT_OF_RANGE);
    CHECK(strstr(sprout_last_error(), "200") && strstr(sprout_last_error(), "128"));
    big[0] = 1 << 30;
    rp.n_prompt = 10;
    CHECK(sprout_scheduler_submit(s, &rp, &r2) == SPROUT_ERR_INVALID_ARGUMENT);
    rp.n_prompt = 0;
    CHECK(sprout_scheduler_submit(s, &rp, &r2) == SPROUT_ERR_INVALID_ARGUMENT);
    sprout_free(ids);
    sprout_free(longer);
    sprout_scheduler_free(s);
}

/* Shutdown with work in flight: running requests end cancelled, queued
 * ones fail, and both stay usable after the scheduler is gone. */
static void test_shutdown(sprout_model *m) {
    sprout_scheduler_params sp = {.struct_size = sizeof sp, .n_slots = 1, .n_ctx = 256};
    sprout_scheduler *s = NULL;
    CHECK(sprout_scheduler_create(m, &sp, &s) == SPROUT_OK);
    if (!s) return;
    sprout_token *ids = NULL;
    size_t n = 0;
    CHECK(tokenize(m, prompts[1], &ids, &n) == SPROUT_OK);
    sprout_generation_config endless = config(250, 0, 1);
    endless.ignore_eos = true;
    stream_capture cap = {0};
    sprout_request_params rp = {.struct_size = sizeof rp, .prompt = ids, .n_prompt = n, .config = &endless, .streamer = capture, .user = &cap};
    sprout_request *running = NULL, *queued = NULL;
    CHECK(sprout_scheduler_submit(s, &rp, &running) == SPROUT_OK);
    rp.streamer = NULL;
    CHECK(sprout_scheduler_submit(s, &rp, &queued) == SPROUT_OK);
    while (cap.pieces < 2) usleep(1000);
    sprout_scheduler_free(s);
    sprout_result *r = NULL;
    CHECK(sprout_request_wait(running, &r) == SPROUT_OK);
    CHECK(r && sprout_result_finish_reason(r) == SPROUT_FINISH_CANCELLED);
    sprout_result_free(r);
    CHECK(sprout_request_wait(queued, &r) == SPROUT_ERR_CANCELLED && r == NULL);
    sprout_request_free(running);
    sprout_request_free(queued);
    sprout_free(ids);
}

/* Chat prompts: the template renders and tokenizes as the pipeline's chat. */
static void test_chat_prompt(sprout_model *m) {
    char *text = NULL;
    size_t len = 0, n = 0;
    sprout_token *ids = NULL;
    const char *msgs = "[{\"role\":\"system\",\"content\":\"Be brief.\"},{\"role\":\"user\",\"content\":\"Hi\"}]";
    CHECK_MSG(sprout_model_chat_prompt(m, "chatml", msgs, true, &text, &len, &ids, &n) == SPROUT_OK, "%s", sprout_last_error());
    CHECK(text && strstr(text, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n") && n > 0);
    sprout_free(text);
    sprout_free(ids);
    CHECK(sprout_model_chat_prompt(m, "chatml", "[{\"role\":", true, &text, &len, &ids, &n) != SPROUT_OK);
    CHECK(sprout_model_tokenize_prompt(m, "\xff", 1, false, &ids, &n) == SPROUT_ERR_INVALID_ARGUMENT);
}

/* The chosen tokens' log-probabilities of two results, bit for bit. */
static bool same_logprobs(const sprout_result *a, const sprout_result *b) {
    size_t na, nb;
    sprout_result_tokens(a, &na);
    sprout_result_tokens(b, &nb);
    bool same = na == nb && na > 0;
    for (size_t i = 0; same && i < na; i++) {
        float la, lb;
        same = sprout_result_logprob(a, i, &la, NULL, NULL, NULL) == SPROUT_OK && sprout_result_logprob(b, i, &lb, NULL, NULL, NULL) == SPROUT_OK &&
               !memcmp(&la, &lb, sizeof la);
    }
    return same;
}

/* What a fresh scheduler gives for a prompt: no slot caches anything. */
static sprout_result *fresh_result(sprout_model *m, const sprout_token *prompt, size_t n, const sprout_generation_config *cfg) {
    sprout_scheduler_params sp = {.struct_size = sizeof sp, .n_slots = 1, .n_ctx = 128};
    sprout_scheduler *s = NULL;
    sprout_request *req = NULL;
    sprout_result *r = NULL;
    sprout_request_params rp = {.struct_size = sizeof rp, .prompt = prompt, .n_prompt = n, .config = cfg};
    CHECK(sprout_scheduler_create(m, &sp, &s) == SPROUT_OK);
    CHECK(s && sprout_scheduler_submit(s, &rp, &req) == SPROUT_OK && sprout_request_wait(req, &r) == SPROUT_OK);
    sprout_request_free(req);
    sprout_scheduler_free(s);
    return r;
}

/* On one slot: a prompt, the conversation's next turn (that prompt, its
 * reply and more), then a short prompt that starts the same. Where a token
 * computed the prompt path may differ from the same token computed as
 * generated ones are (F16 weights at the amx level, kernels.h; prompts of
 * SP_PROMPT_PATH_MIN_TOKENS or more go that path), a request reuses only
 * cached tokens that went its own way: each result is what a fresh
 * scheduler gives, bit for bit (log-probabilities too). Elsewhere every
 * cached token is reused. On ../shared/arch's F16 llama. */
static void test_reuse_of_generated(void) {
    char path[1024];
    snprintf(path, sizeof path, "%s/arch/llama-F16.gguf", test_shared_dir());
    sprout_model_params mp = {.struct_size = sizeof mp, .n_threads = 2};
    sprout_model *m = NULL;
    CHECK_MSG(sprout_model_load(path, &mp, &m) == SPROUT_OK, "%s", sprout_last_error());
    if (!m) return;
    sp_context probe;
    CHECK(sp_context_init(&probe, m, 16, 1, 1, 1, SP_KV_F32) == SPROUT_OK);
    const bool differ = sp_context_kinds_differ(&probe);
    sp_context_free(&probe);
    sprout_scheduler_params sp = {.struct_size = sizeof sp, .n_slots = 1, .n_ctx = 128};
    sprout_scheduler *s = NULL;
    CHECK(sprout_scheduler_create(m, &sp, &s) == SPROUT_OK);
    sprout_generation_config cfg = config(12, 0, 1);
    cfg.ignore_eos = true;
    cfg.logprobs = 1;
    enum { FIRST = 40, SHORT = 8 };
    sprout_token turn[80];
    size_t n_turn = 0;
    for (int i = 0; i < FIRST; i++) turn[n_turn++] = 1 + (i * 53) % 500;
    sprout_request_params rp = {.struct_size = sizeof rp, .prompt = turn, .n_prompt = n_turn, .config = &cfg};
    sprout_request *req = NULL;
    sprout_result *first = NULL;
    CHECK(s && sprout_scheduler_submit(s, &rp, &req) == SPROUT_OK && sprout_request_wait(req, &first) == SPROUT_OK);
    sprout_request_free(req);
    size_t n_reply = 0;
    const sprout_token *reply = first ? sprout_result_tokens(first, &n_reply) : NULL;
    for (size_t i = 0; i < n_reply; i++) turn[n_turn++] = reply[i];
    for (int i = 0; i < 5; i++) turn[n_turn++] = 7 + i;
    /* the next turn reuses the first prompt, and its reply (11 fed, the last never) only where the kinds agree;
     * then the short prompt (the computed-alike way) nothing where they differ, else all but its last token */
    const struct {
        size_t n;
        int32_t reused;
    } steps[] = {{n_turn, differ ? FIRST : FIRST + 11}, {SHORT, differ ? 0 : SHORT - 1}};
    for (size_t k = 0; k < sizeof steps / sizeof steps[0]; k++) {
        rp.n_prompt = steps[k].n;
        sprout_result *r = NULL, *fresh = fresh_result(m, turn, steps[k].n, &cfg);
        CHECK(sprout_scheduler_submit(s, &rp, &req) == SPROUT_OK && sprout_request_wait(req, &r) == SPROUT_OK);
        sprout_request_free(req);
        sprout_perf_metrics pm = {.struct_size = sizeof pm};
        CHECK(r && sprout_result_metrics(r, &pm) == SPROUT_OK);
        const int32_t reused = pm.n_prompt_tokens - pm.n_prefill_tokens;
        CHECK_MSG(r && fresh && same_tokens(r, fresh) && same_logprobs(r, fresh), "step %zu: on the slot's cache (%d tokens reused) unlike fresh",
                  k, reused);
        CHECK_MSG(reused == steps[k].reused, "step %zu: %d prompt tokens reused, not %d", k, reused, steps[k].reused);
        /* a fresh pipeline computes them the same way (it decides by the tokens it computes, here all) */
        sprout_pipeline *p = NULL;
        sprout_result *piped = NULL;
        CHECK(sprout_pipeline_create(m, NULL, &p) == SPROUT_OK);
        CHECK(p && sprout_generate_tokens(p, turn, steps[k].n, &cfg, NULL, NULL, &piped) == SPROUT_OK);
        CHECK_MSG(piped && fresh && same_tokens(piped, fresh) && same_logprobs(piped, fresh), "step %zu: a fresh pipeline differs", k);
        sprout_result_free(piped);
        sprout_pipeline_free(p);
        printf("  F16 (%s): a prompt of %zu tokens reuses %d cached ones\n", sprout_kernels_name(), steps[k].n, reused);
        sprout_result_free(r);
        sprout_result_free(fresh);
    }
    sprout_result_free(first);
    sprout_scheduler_free(s);
    sprout_model_free(m);
}

int main(void) {
    snprintf(model_path, sizeof model_path, "%s/models/stories260K.gguf", test_shared_dir());
    /* one thread: the references decode beside the scheduler's thread, and two
     * pools of two spin on a shared host (3 s where one thread takes 0.7 s);
     * test_reuse_of_generated keeps a scheduler on two */
    sprout_model_params mp = {.struct_size = sizeof mp, .n_threads = 1};
    sprout_model *m = NULL;
    CHECK_MSG(sprout_model_load(model_path, &mp, &m) == SPROUT_OK, "%s", sprout_last_error());
    if (!m) TEST_MAIN_END();
    test_exact(m, 8, 0);
    test_exact(m, 3, 0);
    test_exact(m, 4, 0.9f);
    test_passes_per_token(m);
    test_cancel(m);
    test_limits_and_reuse(m);
    test_shutdown(m);
    test_chat_prompt(m);
    sprout_model_free(m);
    test_reuse_of_generated();
    TEST_MAIN_END();
}
