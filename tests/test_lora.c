/* LoRA adapters on stories260K: adapters written by make_lora (regenerated
 * here from the arguments in tests/data/lora/cases.json) give llama.cpp's
 * greedy tokens; scale 0 is the base model bit for bit; a token's output
 * does not depend on the adapters of the other rows of its batch, nor a
 * scheduled request's on the other requests' sets; hostile adapters are
 * refused by name. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "model/lora.h"
#include "runtime/forward.h"
#include "sprout.h"
#include "test_util.h"

static char model_path[1024], tmp_dir[256];

/* make_lora BASE OUT ARGS... (args: a JSON array of strings, or NULL) plus extra. */
static bool make_lora(const char *out, const json_t *args, const char *extra) {
    char cmd[4096];
    int len = snprintf(cmd, sizeof cmd, "'%s' '%s' '%s'", SPROUT_MAKE_LORA_PATH, model_path, out);
    for (size_t i = 0; i < json_array_size(args); i++)
        len += snprintf(cmd + len, sizeof cmd - (size_t)len, " '%s'", json_string_value(json_array_get(args, i)));
    if (extra) snprintf(cmd + len, sizeof cmd - (size_t)len, " %s", extra);
    const int rc = system(cmd);
    CHECK_MSG(rc == 0, "%s failed", cmd);
    return rc == 0;
}

/* Writes tmp_dir/NAME-a.gguf and NAME-b.gguf with make_lora's args_a and
 * args_b and loads them against m; false (both NULL) if a step fails. */
static bool two_adapters(sprout_model *m, const char *name, const char *args_a, const char *args_b, sprout_lora **a, sprout_lora **b) {
    char fa[512], fb[512];
    snprintf(fa, sizeof fa, "%s/%s-a.gguf", tmp_dir, name);
    snprintf(fb, sizeof fb, "%s/%s-b.gguf", tmp_dir, name);
    *a = *b = NULL;
    if (!make_lora(fa, NULL, args_a) || !make_lora(fb, NULL, args_b)) return false;
    CHECK_MSG(sprout_lora_load(m, fa, a) == SPROUT_OK && sprout_lora_load(m, fb, b) == SPROUT_OK, "%s", sprout_last_error());
    if (*a && *b) return true;
    sprout_lora_free(*a);
    sprout_lora_free(*b);
    *a = *b = NULL;
    return false;
}

static sprout_generation_config greedy(int n) {
    sprout_generation_config c;
    sprout_generation_config_init(&c);
    c.temperature = 0.f;
    c.max_new_tokens = n;
    c.logprobs = 4;
    return c;
}

/* --- llama.cpp's greedy tokens ---------------------------------------------------------- */

static void test_reference(sprout_model *m) {
    char path[1024];
    snprintf(path, sizeof path, "%s/cases.json", SPROUT_LORA_DATA_DIR);
    json_t *ref = json_load_file(path, 0, NULL);
    CHECK_MSG(ref != NULL, "cannot read %s", path);
    if (!ref) return;
    sprout_pipeline *p = NULL;
    CHECK(sprout_pipeline_create(m, NULL, &p) == SPROUT_OK);
    const json_t *cases = json_object_get(ref, "cases");
    CHECK(json_array_size(cases) >= 3);
    for (size_t c = 0; c < json_array_size(cases); c++) {
        const json_t *cs = json_array_get(cases, c), *adapters = json_object_get(cs, "adapters");
        const char *name = json_string_value(json_object_get(cs, "name"));
        sprout_lora *loras[4] = {0};
        float scales[4];
        size_t n = 0;
        for (; n < json_array_size(adapters) && n < 4; n++) {
            const json_t *a = json_array_get(adapters, n);
            char file[512];
            snprintf(file, sizeof file, "%s/%s-%zu.gguf", tmp_dir, name, n);
            if (!make_lora(file, json_object_get(a, "make_lora"), NULL)) break;
            CHECK_MSG(sprout_lora_load(m, file, &loras[n]) == SPROUT_OK, "%s: %s", name, sprout_last_error());
            scales[n] = (float)json_number_value(json_object_get(a, "scale"));
        }
        CHECK(sprout_pipeline_set_lora(p, loras, scales, n) == SPROUT_OK);
        const json_t *want = json_object_get(cs, "tokens");
        sprout_generation_config cfg = greedy((int)json_array_size(want));
        sprout_result *r = NULL;
        CHECK_MSG(sprout_generate(p, json_string_value(json_object_get(cs, "prompt")), &cfg, NULL, NULL, &r) == SPROUT_OK, "%s",
                  sprout_last_error());
        if (r) {
            size_t got;
            const sprout_token *toks = sprout_result_tokens(r, &got);
            size_t same = 0;
            while (same < got && same < json_array_size(want) && toks[same] == json_integer_value(json_array_get(want, same))) same++;
            CHECK_MSG(same == json_array_size(want) && got == same, "%s: %zu of %zu tokens match llama.cpp's", name, same,
                      json_array_size(want));
            size_t len;
            const char *text = sprout_result_text(r, &len), *want_text = json_string_value(json_object_get(cs, "text"));
            CHECK_MSG(want_text && len == strlen(want_text) && !memcmp(text, want_text, len), "%s: text differs: %.*s", name, (int)len,
                      text);
            sprout_result_free(r);
        }
        CHECK(sprout_pipeline_set_lora(p, NULL, NULL, 0) == SPROUT_OK);
        for (size_t i = 0; i < n; i++) sprout_lora_free(loras[i]);
    }
    sprout_pipeline_free(p);
    json_decref(ref);
}

/* --- scale 0, and the cache keyed by the set ------------------------------------------- */

static sprout_result *generate(sprout_pipeline *p, const char *prompt) {
    sprout_generation_config cfg = greedy(24);
    sprout_result *r = NULL;
    CHECK_MSG(sprout_generate(p, prompt, &cfg, NULL, NULL, &r) == SPROUT_OK, "%s", sprout_last_error());
    return r;
}


static void test_scale_zero(sprout_model *m) {
    char file[512];
    snprintf(file, sizeof file, "%s/zero.gguf", tmp_dir);
    if (!make_lora(file, NULL, "--rank 8 --type F16 --targets all --alpha 16 --seed 5 --magnitude 0.3")) return;
    sprout_lora *a = NULL;
    CHECK_MSG(sprout_lora_load(m, file, &a) == SPROUT_OK, "%s", sprout_last_error());
    sprout_pipeline *p = NULL;
    CHECK(sprout_pipeline_create(m, NULL, &p) == SPROUT_OK);
    if (!a || !p) return;
    sprout_result *base = generate(p, "Once upon a time");
    CHECK(sprout_pipeline_cached_tokens(p) > 0);
    const float zero = 0.f, one = 1.f;
    /* scale 0 is no adapter: the same set, so the cache is reused */
    CHECK(sprout_pipeline_set_lora(p, &a, &zero, 1) == SPROUT_OK);
    sprout_result *zeroed = generate(p, "Once upon a time");
    CHECK(sprout_pipeline_last_prefill_tokens(p) == 1);
    CHECK(sprout_pipeline_set_lora(p, &a, &one, 1) == SPROUT_OK);
    sprout_result *adapted = generate(p, "Once upon a time");
    CHECK(sprout_pipeline_last_prefill_tokens(p) == 5); /* another set: nothing cached is reused */
    /* a config's own adapters rule over the pipeline's */
    sprout_generation_config cfg;
    sprout_generation_config_init(&cfg);
    CHECK(sprout_pipeline_get_config(p, &cfg) == SPROUT_OK && cfg.n_lora == 1 && cfg.lora[0].adapter == a);
    const sprout_generation_config g = greedy(24);
    cfg.temperature = g.temperature;
    cfg.max_new_tokens = g.max_new_tokens;
    cfg.logprobs = g.logprobs;
    const sprout_lora_use off = {a, 0.f};
    cfg.lora = &off;
    sprout_result *off_result = NULL;
    CHECK(sprout_generate(p, "Once upon a time", &cfg, NULL, NULL, &off_result) == SPROUT_OK);
    CHECK(sprout_pipeline_last_prefill_tokens(p) == 5);
    if (base && off_result) CHECK_MSG(test_same_result(base, off_result), "a config's scale 0 differs from no adapter");
    sprout_result_free(off_result);
    if (base && zeroed && adapted) {
        CHECK_MSG(test_same_result(base, zeroed), "scale 0 differs from no adapter");
        CHECK_MSG(!test_same_result(base, adapted), "the adapter changes nothing");
    }
    /* refused: a NULL adapter, a non-finite scale, an adapter of another model */
    sprout_lora *none = NULL;
    const float inf = INFINITY;
    CHECK(sprout_pipeline_set_lora(p, &none, &one, 1) == SPROUT_ERR_INVALID_ARGUMENT);
    CHECK(sprout_pipeline_set_lora(p, &a, &inf, 1) == SPROUT_ERR_INVALID_ARGUMENT);
    CHECK(sprout_pipeline_set_lora(p, NULL, NULL, 1) == SPROUT_ERR_INVALID_ARGUMENT);
    sprout_model *other = NULL;
    CHECK(sprout_model_load(model_path, NULL, &other) == SPROUT_OK);
    sprout_pipeline *q = NULL;
    if (other) CHECK(sprout_pipeline_create(other, NULL, &q) == SPROUT_OK);
    if (q) CHECK(sprout_pipeline_set_lora(q, &a, &one, 1) == SPROUT_ERR_INVALID_ARGUMENT);
    sprout_pipeline_free(q);
    sprout_model_free(other);
    sprout_result_free(base);
    sprout_result_free(zeroed);
    sprout_result_free(adapted);
    sprout_pipeline_free(p);
    sprout_lora_free(a);
}

/* --- batch invariance: each row its own adapters --------------------------------------- */

/* Three sequences of one prompt, with adapters A, none and A+B, in one batch
 * and each alone: the last logits of each are the same bits. */
static void test_rows(sprout_model *m) {
    sprout_lora *a, *b;
    if (!two_adapters(m, "rows", "--rank 4 --targets attn --seed 7", "--rank 16 --type Q8_0 --seed 8 --alpha 8", &a, &b)) return;
    const sprout_lora_use ua[] = {{a, 1.f}}, uab[] = {{a, 0.5f}, {b, 1.5f}};
    sp_lora_set sa, sab, sb;
    CHECK(sp_lora_set_copy(m, ua, 1, &sa) == SPROUT_OK && sp_lora_set_copy(m, uab, 2, &sab) == SPROUT_OK);
    /* sets are told apart by their adapters' ids, never by addresses a
     * freed adapter may leave to a new one */
    const sprout_lora_use ub[] = {{b, 1.f}};
    CHECK(sp_lora_set_copy(m, ub, 1, &sb) == SPROUT_OK);
    CHECK(!sp_lora_set_equal(&sa, &sb) && sp_lora_set_equal(&sa, &sa) && !sp_lora_set_equal(&sa, &sab));
    sp_lora_set_free(&sb);
    const sp_lora_set *sets[3] = {&sa, NULL, &sab};
    const int32_t prompt[] = {1, 403, 407, 261, 378, 432};
    enum { N = sizeof prompt / sizeof prompt[0], V = 512 };
    float alone[3][V], together[3 * V];
    for (int s = 0; s < 3; s++) {
        sp_context ctx;
        CHECK(sp_context_init(&ctx, m, 64, 64, 1, 2, SP_KV_F32) == SPROUT_OK);
        sp_batch_token bt[N];
        for (int i = 0; i < N; i++) bt[i] = (sp_batch_token){prompt[i], i, 0, i == N - 1, false, false, sets[s]};
        CHECK_MSG(sp_forward(&ctx, bt, N, alone[s]) == SPROUT_OK, "%s", sprout_last_error());
        sp_context_free(&ctx);
    }
    sp_context ctx;
    CHECK(sp_context_init(&ctx, m, 64, 64, 3, 2, SP_KV_F32) == SPROUT_OK);
    sp_batch_token bt[3 * N];
    for (int i = 0; i < N; i++) /* interleaved: rows of different sets side by side */
        for (int s = 0; s < 3; s++) bt[3 * i + s] = (sp_batch_token){prompt[i], i, s, i == N - 1, false, false, sets[s]};
    CHECK(sp_forward(&ctx, bt, 3 * N, together) == SPROUT_OK);
    for (int s = 0; s < 3; s++) CHECK_MSG(!memcmp(alone[s], together + s * V, sizeof alone[s]), "sequence %d differs in a batch", s);
    CHECK(memcmp(alone[0], alone[1], sizeof alone[0]) != 0 && memcmp(alone[2], alone[1], sizeof alone[0]) != 0);
    sp_context_free(&ctx);
    sp_lora_set_free(&sa);
    sp_lora_set_free(&sab);
    sprout_lora_free(a);
    sprout_lora_free(b);
}

/* The last logits of n tokens of one sequence with set `set`: the first
 * `first` in one batch, the rest in batches of `batch`, on `threads`
 * threads (split: every adapter step among them, however small). */
static void last_logits(sprout_model *m, const sp_lora_set *set, int32_t n, int32_t first, int32_t batch, int threads, bool split,
                        float *out) {
    sp_context ctx;
    CHECK(sp_context_init(&ctx, m, n, first > batch ? first : batch, 1, threads, SP_KV_F32) == SPROUT_OK);
    if (split) ctx.lora_parallel_min_work = 0;
    sp_batch_token bt[512];
    for (int32_t t0 = 0, k; t0 < n; t0 += k) {
        k = t0 == 0 ? first : n - t0 < batch ? n - t0 : batch;
        for (int32_t i = 0; i < k; i++) bt[i] = (sp_batch_token){1 + (t0 + i) * 37 % 500, t0 + i, 0, t0 + i == n - 1, false, false, set};
        CHECK_MSG(sp_forward(&ctx, bt, k, out) == SPROUT_OK, "%s", sprout_last_error());
    }
    sp_context_free(&ctx);
}

/* A set whose A x outgrows one pass over B (rank 64 at dim 64: 256 tokens
 * of it at a time), two adapters deep: the same bits in one batch on one
 * thread, in batches of 41 on two, and with the last tokens one at a time
 * on three (B's tiles and A's rows split, and each step on the calling
 * thread, as a step this small runs unless split). */
static void test_chunks_and_threads(sprout_model *m) {
    sprout_lora *a, *b;
    if (!two_adapters(m, "wide", "--rank 64 --type F16 --seed 11 --magnitude 0.05", "--rank 32 --type Q8_0 --targets ffn --seed 12 --alpha 4",
                      &a, &b))
        return;
    sp_lora_set set = {0};
    const sprout_lora_use uses[] = {{a, 1.f}, {b, -0.5f}};
    CHECK(sp_lora_set_copy(m, uses, 2, &set) == SPROUT_OK);
    if (set.n == 2) {
        enum { N = 300, V = 512 };
        static float one_batch[V], by_token[V], by_token_caller[V], by_41[V], base[V];
        last_logits(m, &set, N, N, N, 1, false, one_batch);
        last_logits(m, &set, N, 41, 41, 2, true, by_41);
        last_logits(m, &set, N, N - 8, 1, 3, true, by_token);
        last_logits(m, &set, N, N - 8, 1, 3, false, by_token_caller);
        last_logits(m, NULL, N, N, N, 2, false, base);
        CHECK_MSG(!memcmp(one_batch, by_41, sizeof one_batch), "batches of 41 on 2 threads differ from one batch on 1");
        CHECK_MSG(!memcmp(one_batch, by_token, sizeof one_batch), "the last tokens one at a time on 3 threads differ");
        CHECK_MSG(!memcmp(one_batch, by_token_caller, sizeof one_batch), "the last tokens one at a time on the caller differ");
        CHECK(memcmp(one_batch, base, sizeof base) != 0);
    }
    sp_lora_set_free(&set);
    sprout_lora_free(a);
    sprout_lora_free(b);
}

/* --- the scheduler: requests with different adapters in one batch ------------------------ */

typedef struct sched_case {
    const char *prompt;
    sprout_lora_use uses[2];
    size_t n_uses;
    float temperature;
} sched_case;

static sprout_request *submit(sprout_scheduler *s, sprout_model *m, const sched_case *c) {
    sprout_token *ids = NULL;
    size_t n = 0;
    CHECK(sprout_model_tokenize_prompt(m, c->prompt, strlen(c->prompt), false, &ids, &n) == SPROUT_OK);
    sprout_generation_config cfg = greedy(20);
    cfg.temperature = c->temperature;
    cfg.seed = 7;
    cfg.lora = c->uses;
    cfg.n_lora = c->n_uses;
    sprout_request_params rp = {.struct_size = sizeof rp, .prompt = ids, .n_prompt = n, .config = &cfg};
    sprout_request *req = NULL;
    CHECK_MSG(sprout_scheduler_submit(s, &rp, &req) == SPROUT_OK, "%s", sprout_last_error());
    sprout_free(ids);
    return req;
}

static sprout_result *wait_result(sprout_request *req) {
    sprout_result *r = NULL;
    if (req) CHECK_MSG(sprout_request_wait(req, &r) == SPROUT_OK, "%s", sprout_last_error());
    sprout_request_free(req);
    return r;
}

static sprout_scheduler_stats stats_of(const sprout_scheduler *s) {
    sprout_scheduler_stats st = {.struct_size = sizeof st};
    CHECK(sprout_scheduler_stats_get(s, &st) == SPROUT_OK);
    return st;
}

/* Five requests, three adapter sets among them and one without, run
 * together: each gives what it gives alone, bit for bit; and a slot's
 * cached prompt is reused only under the same set. */
static void test_scheduler_sets(sprout_model *m) {
    sprout_lora *a, *b;
    if (!two_adapters(m, "sched", "--rank 8 --type F16 --targets all --alpha 16 --seed 11 --magnitude 0.3",
                      "--rank 4 --type F32 --targets attn --seed 12 --magnitude 0.3", &a, &b))
        return;
    const sched_case cases[] = {
        {"Once upon a time", {{a, 1.f}}, 1, 0.f},
        {"Once upon a time", {{b, 1.f}}, 1, 0.f},
        {"Lily and Tom went to the park", {{a, 0.5f}, {b, 1.5f}}, 2, 0.8f},
        {"Once upon a time", {{0}}, 0, 0.f},
        {"The little dog was happy", {{a, 1.f}}, 1, 0.8f},
    };
    enum { N = sizeof cases / sizeof cases[0] };
    sprout_scheduler_params sp = {.struct_size = sizeof sp, .n_slots = N, .n_ctx = 128, .n_threads = 2};
    sprout_result *alone[N] = {0}, *together[N] = {0};
    uint64_t alone_steps = 0;
    for (int i = 0; i < N; i++) {
        sprout_scheduler *s = NULL;
        CHECK(sprout_scheduler_create(m, &sp, &s) == SPROUT_OK);
        if (!s) return;
        alone[i] = wait_result(submit(s, m, &cases[i]));
        alone_steps += stats_of(s).steps;
        sprout_scheduler_free(s);
    }
    sprout_scheduler *s = NULL;
    CHECK(sprout_scheduler_create(m, &sp, &s) == SPROUT_OK);
    if (!s) return;
    sprout_request *reqs[N];
    for (int i = 0; i < N; i++) reqs[i] = submit(s, m, &cases[i]);
    for (int i = 0; i < N; i++) together[i] = wait_result(reqs[i]);
    const uint64_t together_steps = stats_of(s).steps;
    CHECK_MSG(together_steps < alone_steps, "%llu passes together, %llu alone: not batched", (unsigned long long)together_steps,
              (unsigned long long)alone_steps);
    for (int i = 0; i < N; i++)
        if (alone[i] && together[i]) CHECK_MSG(test_same_result(alone[i], together[i]), "request %d differs in the batch", i);
    /* the sets do change the output: one prompt under a, b and none */
    if (alone[0] && alone[1] && alone[3]) CHECK(!test_same_result(alone[0], alone[3]) && !test_same_result(alone[1], alone[3]));
    sprout_scheduler_free(s);
    /* one slot: its cache serves the same prompt only under the same set
     * (all but the last prompt token, whose logits were not kept) */
    sp.n_slots = 1;
    CHECK(sprout_scheduler_create(m, &sp, &s) == SPROUT_OK);
    if (!s) return;
    const int order[] = {0, 1, 1, 3};
    const uint64_t reused[] = {0, 0, 4, 0};
    for (int k = 0; k < 4; k++) {
        const uint64_t before = stats_of(s).cached_prompt_tokens;
        sprout_result *r = wait_result(submit(s, m, &cases[order[k]]));
        const uint64_t got = stats_of(s).cached_prompt_tokens - before;
        CHECK_MSG(got == reused[k], "run %d reused %llu cached tokens, expected %llu", k, (unsigned long long)got,
                  (unsigned long long)reused[k]);
        if (r && alone[order[k]]) CHECK_MSG(test_same_result(r, alone[order[k]]), "run %d differs from its request alone", k);
        sprout_result_free(r);
    }
    sprout_scheduler_free(s);
    /* refused at submission: an adapter loaded against another model */
    sprout_model *other = NULL;
    CHECK(sprout_model_load(model_path, NULL, &other) == SPROUT_OK);
    if (other && sprout_scheduler_create(other, &sp, &s) == SPROUT_OK) {
        sprout_request *req = NULL;
        const sprout_token ids[] = {1, 403};
        sprout_generation_config cfg = greedy(4);
        cfg.lora = cases[0].uses;
        cfg.n_lora = 1;
        sprout_request_params rp = {.struct_size = sizeof rp, .prompt = ids, .n_prompt = 2, .config = &cfg};
        CHECK(sprout_scheduler_submit(s, &rp, &req) == SPROUT_ERR_INVALID_ARGUMENT && !req);
        sprout_scheduler_free(s);
    }
    sprout_model_free(other);
    for (int i = 0; i < N; i++) {
        sprout_result_free(alone[i]);
        sprout_result_free(together[i]);
    }
    sprout_lora_free(a);
    sprout_lora_free(b);
}

/* --- hostile adapters ------------------------------------------------------------------ */

static void refused(sprout_model *m, const char *file, const char *what) {
    sprout_lora *l = (sprout_lora *)1;
    const sprout_status st = sprout_lora_load(m, file, &l);
    CHECK_MSG(st != SPROUT_OK && l == NULL, "%s loaded", file);
    CHECK_MSG(strstr(sprout_last_error(), what) != NULL, "%s: '%s' lacks '%s'", file, sprout_last_error(), what);
}

static void test_hostile(sprout_model *m) {
    static const struct {
        const char *kind, *message;
    } cases[] = {
        {"arch", "general.architecture is 'gpt2'"},
        {"lone-a", "blk.0.attn_q.weight.lora_b' is missing"},
        {"shape", "blk.0.attn_q.weight.lora_a' has shape [96, 8], expected [64, 8]"},
        {"rank0", "rank 0"},
    };
    char file[512], extra[64];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(file, sizeof file, "%s/hostile-%s.gguf", tmp_dir, cases[i].kind);
        snprintf(extra, sizeof extra, "--targets attn --hostile %s", cases[i].kind);
        if (make_lora(file, NULL, extra)) refused(m, file, cases[i].message);
    }
    /* truncated: every cut of a good adapter refused (or, at the end, loaded) */
    snprintf(file, sizeof file, "%s/good.gguf", tmp_dir);
    if (!make_lora(file, NULL, "--rank 4 --targets attn")) return;
    FILE *f = fopen(file, "rb");
    char *bytes = malloc(1 << 20);
    const size_t size = f && bytes ? fread(bytes, 1, 1 << 20, f) : 0;
    if (f) fclose(f);
    char cut[512];
    snprintf(cut, sizeof cut, "%s/cut.gguf", tmp_dir);
    const size_t cuts[] = {0, 3, 20, size / 3, size / 2, size - 1};
    for (size_t i = 0; size && i < sizeof cuts / sizeof cuts[0]; i++) {
        FILE *o = fopen(cut, "wb");
        if (!o) break;
        fwrite(bytes, 1, cuts[i], o);
        fclose(o);
        sprout_lora *l = (sprout_lora *)1;
        CHECK_MSG(sprout_lora_load(m, cut, &l) != SPROUT_OK && !l, "a cut at %zu of %zu loaded", cuts[i], size);
    }
    free(bytes);
    /* a model file is no adapter; arguments */
    sprout_lora *l = NULL;
    CHECK(sprout_lora_load(m, model_path, &l) == SPROUT_ERR_FORMAT && !l);
    CHECK(sprout_lora_load(NULL, file, &l) == SPROUT_ERR_INVALID_ARGUMENT);
    CHECK(sprout_lora_load(m, file, NULL) == SPROUT_ERR_INVALID_ARGUMENT);
    sprout_lora_free(NULL);
}

int main(void) {
    snprintf(model_path, sizeof model_path, "%s/models/stories260K.gguf", test_shared_dir());
    snprintf(tmp_dir, sizeof tmp_dir, "/tmp/sprout-lora-XXXXXX");
    if (!mkdtemp(tmp_dir)) return 1;
    sprout_model_params mp = {.struct_size = sizeof mp, .n_threads = 2};
    sprout_model *m = NULL;
    CHECK_MSG(sprout_model_load(model_path, &mp, &m) == SPROUT_OK, "%s", sprout_last_error());
    if (m) {
        test_reference(m);
        test_scale_zero(m);
        test_rows(m);
        test_chunks_and_threads(m);
        test_scheduler_sets(m);
        test_hostile(m);
    }
    sprout_model_free(m);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmp_dir);
    TEST_MAIN_END();
}
