/* Quantized and BF16 KV caches through the engine: llama.cpp's logits and
 * greedy tokens with the same cache types (tests/data/kv_quant, flash
 * attention on) on ../shared/arch/llama-F32.gguf (heads of 64, so whole
 * blocks of 32; F32 weights, so the cache is the only rounding that
 * differs from the arch references); a token's logits bit for bit the same
 * alone, beside another sequence, and after its cache was truncated and
 * refilled; a scheduler's concurrent requests as each alone; the API's
 * names, sizes and refusals. */
#include <jansson.h>
#include <math.h>
#include <string.h>

#include "logit_ref.h"
#include "runtime/forward.h"
#include "test_util.h"

#ifndef SPROUT_KV_QUANT_DATA_DIR
#define SPROUT_KV_QUANT_DATA_DIR "tests/data/kv_quant"
#endif

/* Each case's bounds on the last position's logits (its JSON; README.md
 * there says how they were set). The cache types' own error is far larger:
 * a q4_0 cache moves llama.cpp's logits by up to 3.3 from an F32 one. */
typedef struct tolerance {
    double max_abs, rel_rms;
} tolerance;

static sp_kv_type type_named(const char *name) {
    sprout_kv_type t = SPROUT_KV_F16;
    CHECK_MSG(sprout_kv_type_from_name(name, &t) == SPROUT_OK, "%s", sprout_last_error());
    return (sp_kv_type)t;
}

static int32_t argmax(const float *x, int32_t n) {
    int32_t best = 0;
    for (int32_t i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

/* The gap between the largest logit and the next. */
static double margin(const float *x, int32_t n) {
    const int32_t best = argmax(x, n);
    double second = -INFINITY;
    for (int32_t i = 0; i < n; i++)
        if (i != best && x[i] > second) second = x[i];
    return x[best] - second;
}

static void check_reference(sprout_model *m, const json_t *tokens, const json_t *c, tolerance tol) {
    const char *k = json_string_value(json_object_get(c, "type_k")), *v = json_string_value(json_object_get(c, "type_v"));
    const int32_t n_vocab = sprout_model_n_vocab(m), n = (int32_t)json_array_size(tokens);
    sp_context ctx;
    if (!k || !v || sp_context_init_kv(&ctx, m, 512, 64, 1, 1, (sp_kv_types){type_named(k), type_named(v)}) != SPROUT_OK) {
        CHECK_MSG(0, "%s/%s: %s", k, v, sprout_last_error());
        return;
    }
    sp_batch_token batch[64];
    for (int32_t i = 0; i < n; i++) batch[i] = (sp_batch_token){(int32_t)json_integer_value(json_array_get(tokens, (size_t)i)), i, 0, i == n - 1, false, true, NULL};
    float *logits = malloc((size_t)n_vocab * sizeof(float));
    CHECK_MSG(sp_forward(&ctx, batch, n, logits) == SPROUT_OK, "%s/%s: %s", k, v, sprout_last_error());
    const json_t *last = json_object_get(c, "last_logits");
    double rel;
    const double max_abs = logits_vs_ref(logits, last, n_vocab, &rel);
    CHECK_MSG(max_abs <= tol.max_abs && rel <= tol.rel_rms, "%s/%s: last logits max_abs %.3g (<= %.3g), rel_rms %.3g (<= %.3g)", k, v, max_abs,
              tol.max_abs, rel, tol.rel_rms);
    /* greedy steps, one token at a time, while sprout's own margin decides them */
    const json_t *greedy = json_object_get(c, "greedy");
    int32_t same = 0, decidable = 0;
    for (int32_t step = 0; step < (int32_t)json_array_size(greedy); step++) {
        if (margin(logits, n_vocab) <= 2 * tol.max_abs) break;
        const int32_t next = argmax(logits, n_vocab);
        decidable++;
        same += next == (int32_t)json_integer_value(json_array_get(greedy, (size_t)step));
        if (next != (int32_t)json_integer_value(json_array_get(greedy, (size_t)step))) break;
        const sp_batch_token one = {next, n + step, 0, true, false, false, NULL};
        if (sp_forward(&ctx, &one, 1, logits) != SPROUT_OK) break;
    }
    CHECK_MSG(same == decidable && decidable >= 4, "%s/%s: %d of %d decidable greedy steps as llama.cpp's", k, v, same, decidable);
    printf("  %-4s/%-4s last logits max_abs %.3g rel_rms %.3g; %d greedy steps as llama.cpp's\n", k, v, max_abs, rel, same);
    free(logits);
    sp_context_free(&ctx);
}

static void test_references(sprout_model *m) {
    json_t *ref = json_load_file(SPROUT_KV_QUANT_DATA_DIR "/llama-F32.json", 0, NULL);
    CHECK_MSG(ref != NULL, "cannot read %s/llama-F32.json", SPROUT_KV_QUANT_DATA_DIR);
    if (!ref) return;
    const json_t *cases = json_object_get(ref, "cases");
    for (size_t i = 0; i < json_array_size(cases); i++) {
        const json_t *c = json_array_get(cases, i), *tol = json_object_get(c, "tolerance");
        check_reference(m, json_object_get(ref, "tokens"), c,
                        (tolerance){json_number_value(json_object_get(tol, "max_abs")), json_number_value(json_object_get(tol, "rel_rms"))});
    }
    CHECK(json_array_size(cases) >= 4);
    json_decref(ref);
}

/* The logits of seq 0's last token: its prompt alone, then beside
 * sequence 1's in one batch, then after truncating it to `keep` and
 * feeding the rest again; and one generated token alone and beside one of
 * sequence 1. Bit for bit the same each time. */
static void test_invariance(sprout_model *m, sp_kv_types kv) {
    const int32_t n_vocab = sprout_model_n_vocab(m), n0 = 20, n1 = 23, keep = 9;
    sp_context ctx;
    if (sp_context_init_kv(&ctx, m, 256, 64, 2, 2, kv) != SPROUT_OK) {
        CHECK_MSG(0, "%s", sprout_last_error());
        return;
    }
    sp_batch_token b[64];
    float *alone = malloc(2 * (size_t)n_vocab * sizeof(float)), *mixed = malloc(2 * (size_t)n_vocab * sizeof(float));
    for (int32_t i = 0; i < n0; i++) b[i] = (sp_batch_token){3 + (i * 37) % 500, i, 0, i == n0 - 1, false, false, NULL};
    CHECK(sp_forward(&ctx, b, n0, alone) == SPROUT_OK);
    const sp_batch_token next0 = {77, n0, 0, true, false, false, NULL};
    CHECK(sp_forward(&ctx, &next0, 1, alone + n_vocab) == SPROUT_OK);

    sp_kv_clear(&ctx.kv, 0);
    int32_t n = 0;
    for (int32_t i = 0; i < n1; i++) b[n++] = (sp_batch_token){5 + (i * 91) % 500, i, 1, false, false, false, NULL};
    for (int32_t i = 0; i < n0; i++) b[n++] = (sp_batch_token){3 + (i * 37) % 500, i, 0, i == n0 - 1, false, false, NULL};
    CHECK(sp_forward(&ctx, b, n, mixed) == SPROUT_OK);
    CHECK_MSG(!memcmp(alone, mixed, (size_t)n_vocab * sizeof(float)), "%s/%s: a prompt's logits differ beside another sequence",
              sp_kv_type_name(kv.k), sp_kv_type_name(kv.v));
    const sp_batch_token step[2] = {{200, n1, 1, true, false, false, NULL}, next0};
    CHECK(sp_forward(&ctx, step, 2, mixed) == SPROUT_OK);
    CHECK_MSG(!memcmp(alone + n_vocab, mixed + n_vocab, (size_t)n_vocab * sizeof(float)),
              "%s/%s: a generated token's logits differ beside another sequence's", sp_kv_type_name(kv.k), sp_kv_type_name(kv.v));

    sp_kv_truncate(&ctx.kv, 0, keep); /* roll back: the quantized rows after `keep` are rewritten */
    n = 0;
    for (int32_t i = keep; i < n0; i++) b[n++] = (sp_batch_token){3 + (i * 37) % 500, i, 0, i == n0 - 1, false, false, NULL};
    CHECK(sp_forward(&ctx, b, n, mixed) == SPROUT_OK);
    CHECK_MSG(!memcmp(alone, mixed, (size_t)n_vocab * sizeof(float)), "%s/%s: logits differ after truncating and refilling",
              sp_kv_type_name(kv.k), sp_kv_type_name(kv.v));
    free(alone);
    free(mixed);
    sp_context_free(&ctx);
}

static void test_api(sprout_model *m) {
    sprout_kv_type t;
    CHECK(sprout_kv_type_from_name("q4_0", &t) == SPROUT_OK && t == SPROUT_KV_Q4_0);
    CHECK(sprout_kv_type_from_name("bf16", &t) == SPROUT_OK && t == SPROUT_KV_BF16);
    CHECK(sprout_kv_type_from_name("q5_0", &t) == SPROUT_ERR_INVALID_ARGUMENT && strstr(sprout_last_error(), "q8_0"));
    CHECK(!strcmp(sprout_kv_type_name(SPROUT_KV_Q8_0), "q8_0") && sprout_kv_type_name((sprout_kv_type)5) == NULL);

    /* llama-F32: 2 layers, 2 KV heads of 64 */
    sprout_pipeline *p = NULL;
    sprout_pipeline_params pp = {.struct_size = sizeof pp, .n_ctx = 64, .n_threads = 1};
    CHECK(sprout_pipeline_create(m, &pp, &p) == SPROUT_OK && sprout_pipeline_kv_bytes_per_token(p) == 2 * (256 + 256));
    sprout_pipeline_free(p);
    pp = (sprout_pipeline_params){.struct_size = sizeof pp, .n_ctx = 64, .n_threads = 1, .kv_type = SPROUT_KV_Q8_0, .kv_type_set = true,
                                  .cache_type_v = SPROUT_KV_Q4_0, .cache_type_v_set = true};
    CHECK(sprout_pipeline_create(m, &pp, &p) == SPROUT_OK && sprout_pipeline_kv_bytes_per_token(p) == 2 * (4 * 34 + 4 * 18));
    sprout_pipeline_free(p);
    /* a caller built before the per-side fields: its struct ends at kv_type_set */
    pp.struct_size = offsetof(sprout_pipeline_params, cache_type_k);
    CHECK(sprout_pipeline_create(m, &pp, &p) == SPROUT_OK && sprout_pipeline_kv_bytes_per_token(p) == 2 * (4 * 34 + 4 * 34));
    sprout_pipeline_free(p);
    pp = (sprout_pipeline_params){.struct_size = sizeof pp, .n_ctx = 64, .cache_type_k = (sprout_kv_type)5, .cache_type_k_set = true};
    CHECK(sprout_pipeline_create(m, &pp, &p) == SPROUT_ERR_INVALID_ARGUMENT && !p);

    sprout_scheduler *s = NULL;
    sprout_scheduler_params sp = {.struct_size = sizeof sp, .n_slots = 2, .n_ctx = 32, .n_threads = 1, .cache_type_k = SPROUT_KV_BF16,
                                  .cache_type_k_set = true, .cache_type_v = SPROUT_KV_Q8_0, .cache_type_v_set = true};
    CHECK(sprout_scheduler_create(m, &sp, &s) == SPROUT_OK && sprout_scheduler_kv_bytes_per_token(s) == 2 * (256 + 4 * 34));
    sprout_scheduler_free(s);

    /* stories260K's heads are 8 wide: no whole blocks */
    sprout_model *tiny = test_load_shared("models/stories260K.gguf", 64);
    if (!tiny) return;
    pp = (sprout_pipeline_params){.struct_size = sizeof pp, .cache_type_k = SPROUT_KV_Q4_0, .cache_type_k_set = true};
    CHECK(sprout_pipeline_create(tiny, &pp, &p) == SPROUT_ERR_UNSUPPORTED && strstr(sprout_last_error(), "multiple of 32"));
    pp.cache_type_k = SPROUT_KV_BF16;
    CHECK(sprout_pipeline_create(tiny, &pp, &p) == SPROUT_OK);
    sprout_pipeline_free(p);
    sprout_model_free(tiny);
}

/* Requests at once on a scheduler (a model whose params make its caches
 * q8_0 keys and q4_0 values) give the tokens a pipeline gives each alone. */
static void test_scheduler_exact(void) {
    char path[2048];
    snprintf(path, sizeof path, "%s/arch/llama-F32.gguf", test_shared_dir());
    sprout_model_params mp = {.struct_size = sizeof mp, .n_threads = 1, .n_ctx = 128, .cache_type_k = SPROUT_KV_Q8_0,
                              .cache_type_k_set = true, .cache_type_v = SPROUT_KV_Q4_0, .cache_type_v_set = true};
    sprout_model *m = NULL;
    if (sprout_model_load(path, &mp, &m) != SPROUT_OK) {
        CHECK_MSG(0, "%s", sprout_last_error());
        return;
    }
    static const char *const prompts[] = {"Once upon a time", "The little dog ran to the park", "Lily", "One day, a boy named Tim saw"};
    enum { N = sizeof prompts / sizeof *prompts };
    sprout_scheduler_params sp = {.struct_size = sizeof sp, .n_slots = 3, .n_ctx = 64, .prefill_chunk = 5, .n_threads = 2};
    sprout_scheduler *s = NULL;
    CHECK_MSG(sprout_scheduler_create(m, &sp, &s) == SPROUT_OK && sprout_scheduler_kv_bytes_per_token(s) == 2 * (4 * 34 + 4 * 18), "%s",
              sprout_last_error());
    sprout_generation_config cfg;
    sprout_generation_config_init(&cfg);
    cfg.temperature = 0;
    cfg.max_new_tokens = 12;
    sprout_request *reqs[N] = {0};
    for (size_t i = 0; s && i < N; i++) {
        sprout_token *ids = NULL;
        size_t n = 0;
        CHECK(sprout_model_tokenize_prompt(m, prompts[i], strlen(prompts[i]), false, &ids, &n) == SPROUT_OK);
        sprout_request_params rp = {.struct_size = sizeof rp, .prompt = ids, .n_prompt = n, .config = &cfg};
        CHECK_MSG(sprout_scheduler_submit(s, &rp, &reqs[i]) == SPROUT_OK, "%s", sprout_last_error());
        sprout_free(ids);
    }
    for (size_t i = 0; s && i < N; i++) {
        sprout_result *r = NULL, *ref = NULL;
        sprout_pipeline *p = NULL;
        CHECK(sprout_request_wait(reqs[i], &r) == SPROUT_OK);
        CHECK(sprout_pipeline_create(m, NULL, &p) == SPROUT_OK && sprout_generate(p, prompts[i], &cfg, NULL, NULL, &ref) == SPROUT_OK);
        size_t na = 0, nb = 0;
        const sprout_token *ta = r ? sprout_result_tokens(r, &na) : NULL, *tb = ref ? sprout_result_tokens(ref, &nb) : NULL;
        CHECK_MSG(na == nb && na > 0 && !memcmp(ta, tb, na * sizeof *ta), "prompt %zu: %zu tokens beside the others, %zu alone", i, na, nb);
        sprout_result_free(r);
        sprout_result_free(ref);
        sprout_pipeline_free(p);
        sprout_request_free(reqs[i]);
    }
    sprout_scheduler_free(s);
    sprout_model_free(m);
}

int main(void) {
    sprout_model *m = test_load_shared("arch/llama-F32.gguf", 512);
    if (!m) TEST_MAIN_END();
    test_references(m);
    static const sp_kv_types kinds[] = {{SP_KV_Q8_0, SP_KV_Q8_0}, {SP_KV_Q4_0, SP_KV_Q4_0}, {SP_KV_BF16, SP_KV_Q4_0}};
    for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++) test_invariance(m, kinds[i]);
    test_api(m);
    sprout_model_free(m);
    test_scheduler_exact();
    TEST_MAIN_END();
}
