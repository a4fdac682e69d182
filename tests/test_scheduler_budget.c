/* The prompt-token budget of a scheduler step beside generating requests
 * (pipeline/prefill_budget.h), on the real stories260K model: a long
 * prompt arriving while a stream generates goes in pieces of at most the
 * budget, one per step, and still gives what it gives alone; with nothing
 * generating it goes prefill_chunk tokens a step. Steps are counted, never
 * timed; the adaptive estimate is checked on made-up timings. */
#include "pipeline/prefill_budget.h"
#include "test_util.h"

#define CHUNK 32
#define N_LONG 100

/* The running stream's first token submits the long request from the
 * engine thread, so that it joins on the very next step. */
typedef struct arrival {
    sprout_scheduler *s;
    sprout_request_params long_rp;
    sprout_request *long_req;
    uint64_t first_step_stream, first_step_long; /* the step of each one's first token; 0: none yet */
} arrival;

static uint64_t steps_so_far(sprout_scheduler *s) {
    sprout_scheduler_stats st = {.struct_size = sizeof st};
    CHECK(sprout_scheduler_stats_get(s, &st) == SPROUT_OK);
    return st.steps;
}

static void stream_token(sprout_request *req, sprout_token id, float logprob, const sprout_token *top_ids, const float *top_logprobs,
                         size_t n_top, void *user) {
    (void)req, (void)id, (void)logprob, (void)top_ids, (void)top_logprobs, (void)n_top;
    arrival *a = user;
    if (a->first_step_stream) return;
    a->first_step_stream = steps_so_far(a->s);
    if (a->long_rp.prompt) CHECK_MSG(sprout_scheduler_submit(a->s, &a->long_rp, &a->long_req) == SPROUT_OK, "%s", sprout_last_error());
}

static void long_token(sprout_request *req, sprout_token id, float logprob, const sprout_token *top_ids, const float *top_logprobs,
                       size_t n_top, void *user) {
    (void)req, (void)id, (void)logprob, (void)top_ids, (void)top_logprobs, (void)n_top;
    arrival *a = user;
    if (!a->first_step_long) a->first_step_long = steps_so_far(a->s);
}

static bool same_tokens(const sprout_result *a, const sprout_result *b) {
    size_t na, nb;
    const sprout_token *ta = sprout_result_tokens(a, &na), *tb = sprout_result_tokens(b, &nb);
    return na == nb && !memcmp(ta, tb, na * sizeof *ta);
}

typedef struct run {
    sprout_result *stream, *long_result;
    uint64_t first_step_stream, first_step_long;
} run;

/* The stream (if stream_prompt) and, once it generates, the long request
 * (if long_prompt), on a fresh scheduler with the given budget. */
static run run_pair(sprout_model *m, int32_t budget, const sprout_token *stream_prompt, size_t n_stream, const sprout_token *long_prompt) {
    run out = {0};
    sprout_scheduler_params sp = {.struct_size = sizeof sp, .n_slots = 2, .n_ctx = 256, .prefill_chunk = CHUNK, .prefill_budget = budget};
    arrival a = {0};
    CHECK_MSG(sprout_scheduler_create(m, &sp, &a.s) == SPROUT_OK, "%s", sprout_last_error());
    if (!a.s) return out;
    sprout_generation_config stream_cfg, long_cfg;
    sprout_generation_config_init(&stream_cfg);
    stream_cfg.temperature = 0;
    stream_cfg.ignore_eos = true;
    stream_cfg.max_new_tokens = 40; /* still generating when the long prompt is in */
    long_cfg = stream_cfg;
    long_cfg.max_new_tokens = 6;
    a.long_rp = (sprout_request_params){.struct_size = sizeof a.long_rp, .prompt = long_prompt, .n_prompt = long_prompt ? N_LONG : 0,
                                        .config = &long_cfg, .on_token = long_token, .user = &a};
    if (stream_prompt) {
        sprout_request_params rp = {.struct_size = sizeof rp, .prompt = stream_prompt, .n_prompt = n_stream, .config = &stream_cfg,
                                    .on_token = stream_token, .user = &a};
        sprout_request *req = NULL;
        CHECK(sprout_scheduler_submit(a.s, &rp, &req) == SPROUT_OK);
        CHECK_MSG(sprout_request_wait(req, &out.stream) == SPROUT_OK, "%s", sprout_last_error());
        sprout_request_free(req);
    } else {
        CHECK(sprout_scheduler_submit(a.s, &a.long_rp, &a.long_req) == SPROUT_OK);
    }
    if (a.long_req) {
        CHECK_MSG(sprout_request_wait(a.long_req, &out.long_result) == SPROUT_OK, "%s", sprout_last_error());
        sprout_request_free(a.long_req);
    }
    sprout_scheduler_free(a.s);
    out.first_step_stream = a.first_step_stream;
    out.first_step_long = a.first_step_long;
    return out;
}

static void run_free(run *r) {
    sprout_result_free(r->stream);
    sprout_result_free(r->long_result);
}

static int32_t steps_for(int32_t tokens, int32_t per_step) { return (tokens + per_step - 1) / per_step; }

static void test_arrival(sprout_model *m, const sprout_token *stream_prompt, size_t n_stream, const sprout_token *long_prompt) {
    run stream_alone = run_pair(m, 0, stream_prompt, n_stream, NULL), long_alone = run_pair(m, 0, NULL, 0, long_prompt);
    /* nothing generating: the prompt goes prefill_chunk tokens a step, the adaptive budget whatever it learnt */
    CHECK_MSG(long_alone.first_step_long == (uint64_t)steps_for(N_LONG, CHUNK), "alone: first token at step %llu, not %d",
              (unsigned long long)long_alone.first_step_long, steps_for(N_LONG, CHUNK));
    const struct {
        int32_t budget, min_steps, max_steps; /* the steps from the stream's first token to the long prompt's */
    } cases[] = {
        {8, steps_for(N_LONG, 8), steps_for(N_LONG, 8)},
        {3, steps_for(N_LONG, 3), steps_for(N_LONG, 3)},
        {CHUNK + 50, steps_for(N_LONG, CHUNK), steps_for(N_LONG, CHUNK)}, /* at most the chunk */
        {-1, steps_for(N_LONG, CHUNK), steps_for(N_LONG, CHUNK)},         /* no cap: as before budgets */
        {0, steps_for(N_LONG, CHUNK), steps_for(N_LONG, SP_PREFILL_BUDGET_MIN)},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        run r = run_pair(m, cases[k].budget, stream_prompt, n_stream, long_prompt);
        const uint64_t steps = r.first_step_long - r.first_step_stream;
        CHECK_MSG(r.first_step_stream && r.first_step_long && steps >= (uint64_t)cases[k].min_steps && steps <= (uint64_t)cases[k].max_steps,
                  "budget %d: the long prompt took %llu steps beside the stream, not %d to %d", cases[k].budget, (unsigned long long)steps,
                  cases[k].min_steps, cases[k].max_steps);
        /* the stream generated throughout, and both give what they give alone */
        size_t n_stream_tokens = 0;
        CHECK(r.stream && sprout_result_tokens(r.stream, &n_stream_tokens) && n_stream_tokens == 40);
        CHECK_MSG(r.stream && stream_alone.stream && same_tokens(r.stream, stream_alone.stream), "budget %d: the stream differs", cases[k].budget);
        CHECK_MSG(r.long_result && long_alone.long_result && same_tokens(r.long_result, long_alone.long_result), "budget %d: the long request differs",
                  cases[k].budget);
        printf("  budget %d: a %d-token prompt in %llu steps beside a generating stream\n", cases[k].budget, N_LONG, (unsigned long long)steps);
        run_free(&r);
    }
    run_free(&stream_alone);
    run_free(&long_alone);
}

/* The adaptive budget on made-up timings: a decode-only pass of 30 ms and
 * 4.9 ms a prompt token give 6 tokens; within the floor and the chunk. */
static void test_estimate(void) {
    sp_prefill_budget b;
    sp_prefill_budget_init(&b, 0, CHUNK);
    CHECK(sp_prefill_budget_tokens(&b, 0) == INT32_MAX);
    CHECK(sp_prefill_budget_tokens(&b, 2) == SP_PREFILL_BUDGET_MIN); /* nothing learnt yet */
    sp_prefill_budget_observe(&b, 0, 5, 50); /* a prompt-only pass before any decode-only one: 10 ms a token at most */
    sp_prefill_budget_observe(&b, 2, 4, 55);  /* beside generated tokens, with no decode-only pass: not telling */
    CHECK(sp_prefill_budget_tokens(&b, 2) == SP_PREFILL_BUDGET_MIN);
    sp_prefill_budget_observe(&b, 2, 0, 30);
    CHECK(sp_prefill_budget_tokens(&b, 2) == SP_PREFILL_BUDGET_MIN); /* 30 / 10 */
    for (int i = 0; i < 40; i++) sp_prefill_budget_observe(&b, 2, 4, 30 + 4 * 4.9);
    CHECK_MSG(sp_prefill_budget_tokens(&b, 2) == 6, "%d", sp_prefill_budget_tokens(&b, 2));
    sp_prefill_budget_init(&b, 0, CHUNK);
    sp_prefill_budget_observe(&b, 2, 0, 30);
    sp_prefill_budget_observe(&b, 0, 30, 30 + 30 * 2.0); /* a prompt-only pass past the weights' one read */
    CHECK_MSG(sp_prefill_budget_tokens(&b, 2) == 15, "%d", sp_prefill_budget_tokens(&b, 2));
    for (int i = 0; i < 40; i++) sp_prefill_budget_observe(&b, 2, 6, 30 + 6 * 20.0); /* dearer tokens: the floor */
    CHECK(sp_prefill_budget_tokens(&b, 2) == SP_PREFILL_BUDGET_MIN);
    for (int i = 0; i < 40; i++) sp_prefill_budget_observe(&b, 2, 8, 25); /* noise: cheaper than decode alone */
    CHECK(sp_prefill_budget_tokens(&b, 2) == CHUNK);
    sp_prefill_budget_init(&b, 8, CHUNK);
    CHECK(sp_prefill_budget_tokens(&b, 1) == 8 && sp_prefill_budget_tokens(&b, 0) == INT32_MAX);
    sp_prefill_budget_init(&b, -1, CHUNK);
    CHECK(sp_prefill_budget_tokens(&b, 1) == INT32_MAX);
}

int main(void) {
    test_estimate();
    sprout_model *m = test_load_shared("models/stories260K.gguf", 0);
    if (!m) TEST_MAIN_END();
    const char *text = "Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her friends. "
                       "One day, she saw a big red ball under a tree. She wanted to play with it, but a boy named Tim had it first. "
                       "Lily asked him nicely, and they played together all day.";
    sprout_token *ids = NULL, *stream_ids = NULL;
    size_t n = 0, n_stream = 0;
    CHECK(sprout_model_tokenize_prompt(m, text, strlen(text), false, &ids, &n) == SPROUT_OK);
    CHECK(sprout_model_tokenize_prompt(m, "The little dog", 14, false, &stream_ids, &n_stream) == SPROUT_OK);
    CHECK_MSG(n >= N_LONG, "%zu tokens", n);
    if (n >= N_LONG && n_stream) test_arrival(m, stream_ids, n_stream, ids);
    sprout_free(ids);
    sprout_free(stream_ids);
    sprout_model_free(m);
    TEST_MAIN_END();
}
