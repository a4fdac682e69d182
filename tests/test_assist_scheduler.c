/* Assisted generation in the scheduler: requests that speculate (with a
 * draft model the scheduler owns, or by prompt lookup) run beside plain
 * ones and prompt chunks in the same forward passes, and each gives what
 * a plain pipeline gives alone (tokens, text, finish reason and
 * log-probabilities, bit for bit; greedy and seeded sampling; stop strings
 * and the length), in fewer passes; a cancelled speculative request frees
 * its slot and leaves both caches fit for the next request; a draft of
 * another vocabulary is refused. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sprout.h"
#include "test_util.h"


static sprout_model *load(const char *rel) { return test_load_shared(rel, 256); }

static const char *const story = "Once upon a time, there was a little girl named Lily. She loved to play outside. "
                                 "One day, Lily saw a big red ball in the park. Once upon a time, there was";

typedef enum { PLAIN, SPECULATE, LOOKUP } assist_mode;

typedef struct job {
    const char *prompt;
    assist_mode how;
    float temperature;
    int32_t max_new_tokens, n_assist, min_assist;
    const char *stop;
} job;

/* Five requests at once: speculating and plain, greedy and seeded, a stop
 * string, short and long. */
static const job jobs[] = {
    {story, SPECULATE, 0.f, 48, 6, 0, NULL},
    {"Lily and Tom went to the park. They", SPECULATE, 0.8f, 40, 4, 0, "park"},
    {"The little dog", PLAIN, 0.f, 32, 0, 0, NULL},
    {story, LOOKUP, 0.f, 48, 6, 0, NULL},
    {"One day, a boy named Tim", SPECULATE, 1.f, 40, 8, 2, NULL},
};
enum { N_JOBS = sizeof jobs / sizeof jobs[0] };

static sprout_generation_config config(const job *j, bool assisted) {
    sprout_generation_config c;
    sprout_generation_config_init(&c);
    c.temperature = j->temperature;
    c.max_new_tokens = j->max_new_tokens;
    c.seed = 1234;
    c.logprobs = 2;
    if (j->stop) {
        c.stop_strings = &j->stop;
        c.n_stop_strings = 1;
    }
    if (assisted && j->how != PLAIN) {
        c.num_assistant_tokens = j->n_assist;
        c.min_assistant_tokens = j->min_assist;
        c.prompt_lookup = j->how == LOOKUP;
    }
    return c;
}

static sprout_perf_metrics metrics(const sprout_result *r) {
    sprout_perf_metrics m = {.struct_size = sizeof m};
    if (r) CHECK(sprout_result_metrics(r, &m) == SPROUT_OK);
    return m;
}

/* What a plain pipeline alone generates for the job. */
static sprout_result *alone(sprout_model *m, const job *j) {
    sprout_pipeline *p = NULL;
    sprout_result *r = NULL;
    CHECK(sprout_pipeline_create(m, NULL, &p) == SPROUT_OK);
    const sprout_generation_config c = config(j, false);
    if (p) CHECK_MSG(sprout_generate(p, j->prompt, &c, NULL, NULL, &r) == SPROUT_OK, "%s", sprout_last_error());
    sprout_pipeline_free(p);
    return r;
}

static sprout_scheduler *scheduler(sprout_model *m, sprout_model *draft, int32_t n_slots) {
    sprout_scheduler_params sp = {.struct_size = sizeof sp, .n_slots = n_slots, .n_ctx = 256, .prefill_chunk = 8, .draft_model = draft};
    sprout_scheduler *s = NULL;
    CHECK_MSG(sprout_scheduler_create(m, &sp, &s) == SPROUT_OK, "%s", sprout_last_error());
    return s;
}

static sprout_request *submit(sprout_scheduler *s, const sprout_model *m, const char *prompt, const sprout_generation_config *c,
                              sprout_streamer streamer, void *user) {
    sprout_token *ids = NULL;
    size_t n = 0;
    CHECK(sprout_model_tokenize_prompt(m, prompt, strlen(prompt), false, &ids, &n) == SPROUT_OK);
    sprout_request_params rp = {.struct_size = sizeof rp, .prompt = ids, .n_prompt = n, .config = c, .streamer = streamer, .user = user};
    sprout_request *req = NULL;
    CHECK_MSG(sprout_scheduler_submit(s, &rp, &req) == SPROUT_OK, "%s", sprout_last_error());
    sprout_free(ids);
    return req;
}

/* All jobs at once on three slots (two wait, then prefill in chunks beside
 * the others' verification): each equals its plain run; returns the
 * passes of the jobs of the kind the run is about (the draft's, or with
 * none prompt lookup's) and of their plain runs, and the accepted share of
 * their proposals. */
static void run_all(const char *what, sprout_model *m, sprout_model *draft, sprout_result *const *plain, int32_t *passes,
                    int32_t *plain_passes, double *acceptance) {
    sprout_scheduler *s = scheduler(m, draft, 3);
    if (!s) return;
    sprout_generation_config cfg[N_JOBS];
    sprout_request *req[N_JOBS];
    for (int i = 0; i < N_JOBS; i++) {
        cfg[i] = config(&jobs[i], true);
        req[i] = submit(s, m, jobs[i].prompt, &cfg[i], NULL, NULL);
    }
    int32_t proposed = 0, accepted = 0;
    *passes = *plain_passes = 0;
    for (int i = 0; i < N_JOBS; i++) {
        sprout_result *r = NULL;
        CHECK_MSG(req[i] && sprout_request_wait(req[i], &r) == SPROUT_OK, "%s", sprout_last_error());
        CHECK_MSG(test_same_result(plain[i], r), "%s, job %d: the scheduler's assisted output differs from plain decoding", what, i);
        const sprout_perf_metrics a = metrics(r), p = metrics(plain[i]);
        CHECK(a.n_accepted_tokens <= a.n_draft_tokens && a.n_decode_passes + a.n_accepted_tokens >= a.n_generated_tokens - 1);
        if (jobs[i].how == PLAIN) CHECK_MSG(a.n_draft_tokens == 0, "%s: a plain job got %d proposals", what, a.n_draft_tokens);
        if (jobs[i].how == (draft ? SPECULATE : LOOKUP)) { /* the kind this run is about */
            *passes += a.n_decode_passes;
            *plain_passes += p.n_decode_passes;
            proposed += a.n_draft_tokens;
            accepted += a.n_accepted_tokens;
        }
        sprout_result_free(r);
        sprout_request_free(req[i]);
    }
    *acceptance = proposed ? (double)accepted / proposed : 0;
    sprout_scheduler_free(s);
}

static sprout_stream_status cancel_after(const char *piece, size_t len, void *user) {
    (void)piece;
    (void)len;
    int *calls = user;
    return ++*calls >= 6 ? SPROUT_STREAM_CANCEL : SPROUT_STREAM_RUNNING;
}

/* One slot: a speculative request cancelled mid-way frees it, and the
 * next requests there (which reuse its caches' prefix) are still right. */
static void test_cancel(sprout_model *m, sprout_model *draft, sprout_result *const *plain) {
    sprout_scheduler *s = scheduler(m, draft, 1);
    if (!s) return;
    int calls = 0;
    sprout_generation_config c = config(&jobs[0], true);
    sprout_request *req = submit(s, m, jobs[0].prompt, &c, cancel_after, &calls);
    sprout_result *r = NULL;
    CHECK(req && sprout_request_wait(req, &r) == SPROUT_OK);
    CHECK(r && sprout_result_finish_reason(r) == SPROUT_FINISH_CANCELLED);
    sprout_result_free(r);
    sprout_request_free(req);
    for (int i = 0; i < N_JOBS; i += 3) {
        c = config(&jobs[i], true);
        req = submit(s, m, jobs[i].prompt, &c, NULL, NULL);
        r = NULL;
        CHECK(req && sprout_request_wait(req, &r) == SPROUT_OK);
        CHECK_MSG(test_same_result(plain[i], r), "after a cancel, job %d differs from plain decoding", i);
        sprout_result_free(r);
        sprout_request_free(req);
    }
    sprout_scheduler_stats st = {.struct_size = sizeof st};
    CHECK(sprout_scheduler_stats_get(s, &st) == SPROUT_OK && st.busy_slots == 0);
    sprout_scheduler_free(s);
}

/* A draft of another vocabulary is refused, naming the difference. */
static void test_vocabulary(sprout_model *m) {
    char path[512], cmd[2048];
    snprintf(path, sizeof path, "/tmp/sprout-assist-sched-%d.gguf", (int)getpid());
    snprintf(cmd, sizeof cmd, "'%s' qwen2-tiny F32 '%s' >/dev/null", SPROUT_MAKE_MODEL_PATH, path);
    CHECK(system(cmd) == 0);
    sprout_model *other = NULL;
    CHECK(sprout_model_load(path, NULL, &other) == SPROUT_OK);
    sprout_scheduler_params sp = {.struct_size = sizeof sp, .n_slots = 1, .n_ctx = 64, .draft_model = other};
    sprout_scheduler *s = NULL;
    CHECK(other && sprout_scheduler_create(m, &sp, &s) == SPROUT_ERR_UNSUPPORTED && !s && strstr(sprout_last_error(), "draft model"));
    sprout_model_free(other);
    unlink(path);
}

int main(void) {
    sprout_model *m = load("models/stories260K.gguf"), *poor = load("arch/llama-Q8_0.gguf");
    if (!m || !poor) TEST_MAIN_END();
    sprout_result *plain[N_JOBS];
    for (int i = 0; i < N_JOBS; i++) plain[i] = alone(m, &jobs[i]);
    int32_t passes, plain_passes;
    double acceptance;
    /* the model as its own draft: every greedy proposal is right */
    run_all("self draft", m, m, plain, &passes, &plain_passes, &acceptance);
    printf("self draft: %d passes for the speculating jobs, plain %d; %.0f%% of the proposals accepted\n", passes, plain_passes,
           100 * acceptance);
    /* (a third at least: the sampled jobs miss, and a miss shrinks the next proposal count) */
    CHECK_MSG(passes * 3 < plain_passes * 2, "a draft of the same model saved too few passes: %d, plain %d", passes, plain_passes);
    /* a random model of the same vocabulary: mostly wrong, output unchanged */
    run_all("poor draft", m, poor, plain, &passes, &plain_passes, &acceptance);
    printf("poor draft: %d passes, plain %d; %.0f%% accepted\n", passes, plain_passes, 100 * acceptance);
    CHECK(passes <= plain_passes);
    /* no draft: the lookup job speculates, the draft jobs decode plainly */
    run_all("lookup", m, NULL, plain, &passes, &plain_passes, &acceptance);
    printf("lookup: %d passes, plain %d; %.0f%% accepted\n", passes, plain_passes, 100 * acceptance);
    CHECK_MSG(passes < plain_passes, "prompt lookup saved no pass on a repeating story: %d, plain %d", passes, plain_passes);
    test_cancel(m, m, plain);
    test_cancel(m, poor, plain);
    test_vocabulary(m);
    for (int i = 0; i < N_JOBS; i++) sprout_result_free(plain[i]);
    sprout_model_free(m);
    sprout_model_free(poor);
    TEST_MAIN_END();
}
