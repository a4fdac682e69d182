/* Context shift (llama.cpp's --context-shift): llama.cpp's greedy tokens
 * through its shifts on stories260K (tests/data/context_shift, README.md
 * there), with F16 and F32 caches, through a pipeline and a scheduler, and
 * on arch/llama-F32 with F32, Q8_0 and Q4_0 caches; the finish reason and the chat error
 * without it; the cache shift itself for every KV type and both RoPE
 * styles against keys written at the shifted positions; the refusals. */
#include <jansson.h>
#include <math.h>
#include <string.h>

#include "model/model.h"
#include "runtime/kv_cache.h"
#include "runtime/vector_ops.h"
#include "test_util.h"

#ifndef SPROUT_CONTEXT_SHIFT_DATA_DIR
#define SPROUT_CONTEXT_SHIFT_DATA_DIR "tests/data/context_shift"
#endif

static sprout_pipeline *open_pipeline(const sprout_model *m, int32_t n_ctx, sprout_kv_type kv) {
    sprout_pipeline_params pp = {.struct_size = sizeof pp, .n_ctx = n_ctx, .kv_type = kv, .kv_type_set = true};
    sprout_pipeline *p = NULL;
    CHECK_MSG(sprout_pipeline_create(m, &pp, &p) == SPROUT_OK, "%s", sprout_last_error());
    return p;
}

static void greedy(sprout_generation_config *cfg, int32_t max_new, bool shift, int32_t n_keep) {
    sprout_generation_config_init(cfg);
    cfg->temperature = 0;
    cfg->max_new_tokens = max_new;
    cfg->context_shift = shift;
    cfg->n_keep = n_keep;
}

static bool tokens_are(const sprout_result *r, const json_t *want) {
    size_t n = 0;
    const sprout_token *got = r ? sprout_result_tokens(r, &n) : NULL;
    if (n != json_array_size(want)) return false;
    for (size_t i = 0; i < n; i++)
        if (got[i] != json_integer_value(json_array_get(want, i))) return false;
    return true;
}

/* The scheduler: two requests at once shift each in its slot, then a
 * third, assisted by prompt lookup, reuses a shifted slot (only its kept
 * tokens) and gives the same. */
static void check_scheduler(sprout_model *m, const sprout_token *prompt, size_t n_prompt, int32_t n_ctx, const json_t *want, int32_t keep) {
    sprout_scheduler_params sp = {.struct_size = sizeof sp, .n_slots = 2, .n_ctx = n_ctx, .kv_type = SPROUT_KV_F16, .kv_type_set = true};
    sprout_scheduler *s = NULL;
    CHECK_MSG(sprout_scheduler_create(m, &sp, &s) == SPROUT_OK, "%s", sprout_last_error());
    if (!s) return;
    sprout_generation_config cfg;
    greedy(&cfg, (int32_t)json_array_size(want), true, keep);
    sprout_request_params rp = {.struct_size = sizeof rp, .prompt = prompt, .n_prompt = n_prompt, .config = &cfg};
    for (int round = 0; round < 2; round++) {
        sprout_request *req[2] = {NULL, NULL};
        const int n_req = round ? 1 : 2;
        cfg.prompt_lookup = round == 1; /* the second round assisted: the same tokens */
        cfg.num_assistant_tokens = round ? 4 : 0;
        cfg.max_ngram_size = 3;
        for (int i = 0; i < n_req; i++) CHECK_MSG(sprout_scheduler_submit(s, &rp, &req[i]) == SPROUT_OK, "%s", sprout_last_error());
        for (int i = 0; i < n_req; i++) {
            sprout_result *r = NULL;
            CHECK_MSG(req[i] && sprout_request_wait(req[i], &r) == SPROUT_OK, "%s", sprout_last_error());
            CHECK_MSG(tokens_are(r, want), "scheduler, round %d, request %d: not llama.cpp's tokens", round, i);
            sprout_result_free(r);
            sprout_request_free(req[i]);
        }
    }
    sprout_scheduler_free(s);
}

/* keep: the --keep the reference ran with (its file's n_keep adds the BOS). */
static void check_reference(sprout_model *m, const char *file, int32_t keep) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", SPROUT_CONTEXT_SHIFT_DATA_DIR, file);
    json_t *ref = json_load_file(path, 0, NULL);
    CHECK_MSG(ref != NULL, "cannot read %s", path);
    if (!ref) return;
    const json_t *jp = json_object_get(ref, "prompt"), *jt = json_object_get(ref, "tokens");
    const int32_t n_ctx = (int32_t)json_integer_value(json_object_get(ref, "n_ctx"));
    const size_t n_prompt = json_array_size(jp), n_tokens = json_array_size(jt);
    sprout_token prompt[64];
    CHECK(n_prompt > 0 && n_prompt <= 64 && n_tokens > 0);
    for (size_t i = 0; i < n_prompt && i < 64; i++) prompt[i] = (sprout_token)json_integer_value(json_array_get(jp, i));
    const sprout_kv_type kinds[2] = {SPROUT_KV_F16, SPROUT_KV_F32};
    const int n_kinds = test_quick_run() ? 1 : 2; /* the sanitizers' run: the F16 cache only */
    for (int k = 0; k < n_kinds && n_prompt <= 64; k++) {
        sprout_pipeline *p = open_pipeline(m, n_ctx, kinds[k]);
        if (!p) break;
        sprout_generation_config cfg;
        greedy(&cfg, (int32_t)n_tokens, true, keep);
        sprout_result *r = NULL;
        CHECK_MSG(sprout_generate_tokens(p, prompt, n_prompt, &cfg, NULL, NULL, &r) == SPROUT_OK, "%s", sprout_last_error());
        size_t n = 0;
        const sprout_token *got = r ? sprout_result_tokens(r, &n) : NULL;
        size_t same = 0;
        while (same < n && same < n_tokens && got[same] == json_integer_value(json_array_get(jt, same))) same++;
        CHECK_MSG(n == n_tokens && same == n, "%s, %s cache: %zu of %zu tokens as llama.cpp's, first difference at %zu", file,
                  sprout_kv_type_name(kinds[k]), n, n_tokens, same);
        CHECK(r && sprout_result_finish_reason(r) == SPROUT_FINISH_LENGTH);
        CHECK(sprout_pipeline_cached_tokens(p) < n_ctx);
        sprout_result_free(r);

        /* assisted by prompt lookup, whose index must forget the dropped text: the same tokens */
        cfg.prompt_lookup = true;
        cfg.num_assistant_tokens = 4;
        cfg.max_ngram_size = 3;
        r = NULL;
        CHECK_MSG(sprout_generate_tokens(p, prompt, n_prompt, &cfg, NULL, NULL, &r) == SPROUT_OK, "%s", sprout_last_error());
        CHECK_MSG(tokens_are(r, jt), "%s, %s cache, prompt lookup: not llama.cpp's tokens", file, sprout_kv_type_name(kinds[k]));
        sprout_perf_metrics pm = {.struct_size = sizeof pm};
        CHECK(r && sprout_result_metrics(r, &pm) == SPROUT_OK && pm.n_draft_tokens > 0);
        sprout_result_free(r);

        /* without the shift: the context fills and the finish says "length" early */
        greedy(&cfg, (int32_t)n_tokens, false, keep);
        r = NULL;
        CHECK(sprout_generate_tokens(p, prompt, n_prompt, &cfg, NULL, NULL, &r) == SPROUT_OK);
        n = 0;
        if (r) sprout_result_tokens(r, &n);
        CHECK_MSG(n == (size_t)n_ctx - n_prompt + 1, "%zu tokens before the context filled", n);
        CHECK(r && sprout_result_finish_reason(r) == SPROUT_FINISH_LENGTH);
        sprout_result_free(r);
        sprout_pipeline_free(p);
    }
    if (n_prompt <= 64 && (keep >= 0 || !test_quick_run())) check_scheduler(m, prompt, n_prompt, n_ctx, jt, keep);
    json_decref(ref);
}

/* llama.cpp's tokens through a shift on a model of heads of 64 with F32,
 * Q8_0 and Q4_0 caches: the quantized keys go out of their rotated basis,
 * turn, and back (llama-arch-kv-types.json). */
static void check_kv_types(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/arch/llama-F32.gguf", test_shared_dir());
    sprout_model_params mp = {.struct_size = sizeof mp, .n_threads = 1};
    sprout_model *m = NULL;
    json_t *ref = json_load_file(SPROUT_CONTEXT_SHIFT_DATA_DIR "/llama-arch-kv-types.json", 0, NULL);
    CHECK(ref != NULL);
    CHECK_MSG(sprout_model_load(path, &mp, &m) == SPROUT_OK, "%s", sprout_last_error());
    const json_t *jp = ref ? json_object_get(ref, "prompt") : NULL;
    sprout_token prompt[16];
    const size_t n_prompt = json_array_size(jp);
    CHECK(n_prompt > 0 && n_prompt <= 16);
    for (size_t i = 0; i < n_prompt && i < 16; i++) prompt[i] = (sprout_token)json_integer_value(json_array_get(jp, i));
    const char *key;
    const json_t *want;
    json_object_foreach(ref ? json_object_get(ref, "tokens") : NULL, key, want) {
        sprout_kv_type type = SPROUT_KV_F16;
        CHECK(sprout_kv_type_from_name(key, &type) == SPROUT_OK);
        sprout_pipeline *p = m && n_prompt <= 16 ? open_pipeline(m, (int32_t)json_integer_value(json_object_get(ref, "n_ctx")), type) : NULL;
        if (!p) break;
        sprout_generation_config cfg;
        greedy(&cfg, (int32_t)json_array_size(want), true, 4);
        sprout_result *r = NULL;
        CHECK_MSG(sprout_generate_tokens(p, prompt, n_prompt, &cfg, NULL, NULL, &r) == SPROUT_OK, "%s", sprout_last_error());
        CHECK_MSG(tokens_are(r, want), "arch/llama-F32, %s cache: not llama.cpp's tokens", key);
        sprout_result_free(r);
        sprout_pipeline_free(p);
    }
    sprout_model_free(m);
    json_decref(ref);
}

/* A chat on a small context: without the shift the turn that outgrows it
 * fails with OUT_OF_RANGE; with it every turn answers and the cache never
 * holds more than the context. */
static void check_chat(sprout_model *m) {
    static const char *const turns[] = {"Tell me a story about a dog.", "What did the dog do next?", "And then?", "Who else came?",
                                        "How did it end?"};
    for (int shift = 0; shift < 2; shift++) {
        sprout_pipeline *p = open_pipeline(m, 96, SPROUT_KV_F16);
        if (!p) return;
        sprout_generation_config cfg;
        greedy(&cfg, 40, shift, 2);
        cfg.ignore_eos = true;
        sprout_status last = SPROUT_OK;
        int answered = 0;
        for (size_t t = 0; t < sizeof turns / sizeof *turns && last == SPROUT_OK; t++) {
            sprout_result *r = NULL;
            last = sprout_chat_generate(p, turns[t], &cfg, NULL, NULL, &r);
            if (last == SPROUT_OK) answered++;
            if (last == SPROUT_OK && shift && t > 0) {
                /* the shifted cache is reused past the kept tokens, up to
                 * where the reply's text tokenizes otherwise (24 or more
                 * tokens here, as without a shift) */
                size_t n_prompt = 0;
                sprout_result_prompt_tokens(r, &n_prompt);
                CHECK_MSG(n_prompt - (size_t)sprout_pipeline_last_prefill_tokens(p) >= 20, "turn %zu: %d of %zu computed", t,
                          sprout_pipeline_last_prefill_tokens(p), n_prompt);
            }
            CHECK(sprout_pipeline_cached_tokens(p) <= 96);
            sprout_result_free(r);
        }
        if (shift) {
            CHECK_MSG(last == SPROUT_OK && answered == 5, "turn %d: %s", answered + 1, sprout_last_error());
            CHECK(sprout_chat_history_length(p) == 10);
        } else {
            CHECK_MSG(last == SPROUT_ERR_OUT_OF_RANGE, "a chat past the context: status %d", (int)last);
            CHECK(strstr(sprout_last_error(), "context") != NULL);
            CHECK(sprout_chat_history_length(p) == 2 * (size_t)answered);
        }
        sprout_pipeline_free(p);
    }
}

/* A one-layer model of heads of 64 (rotated quantized keys: whole runs
 * of 64), for the cache alone. */
static void fake_model(sprout_model *m, sp_layer *layer, sp_rope_kind kind) {
    memset(m, 0, sizeof *m);
    memset(layer, 0, sizeof *layer);
    m->hp = (sp_hparams){.arch_name = "test", .n_layer = 1, .n_head = 2, .n_head_kv = 2, .head_dim_k = 64, .head_dim_v = 64, .n_rot = 64,
                         .rope_kind = kind, .rope_base = 10000.f, .rope_freq_scale = 1.f, .rope_attn_factor = 1.f, .causal = true};
    layer->rope_base = 10000.f;
    layer->rope_freq_scale = 1.f;
    m->layers = layer;
}

static void key_at(const sprout_model *m, int32_t token, int32_t pos, float *row) {
    for (int i = 0; i < 128; i++) row[i] = sinf(0.37f * (float)(token * 128 + i)) + (i % 17 == 0 ? 3.f : 0.f);
    sp_rope(&m->hp, NULL, row, 2, 64, pos, 10000.f, 1.f);
}

/* Cell `cell`'s keys out of the cache's type and rotated basis. */
static void read_key(const sp_kv_cache *kv, int32_t cell, float *row) {
    sp_kv_load_row((const char *)kv->k[0] + (size_t)cell * sp_kv_bytes(kv->type.k, kv->k_row), row, kv->type.k, kv->k_row);
    sp_kv_rotate(row, kv->k_row, kv->rotate_k);
}

static void write_key(sp_kv_cache *kv, int32_t cell, float *row) {
    sp_kv_rotate(row, kv->k_row, kv->rotate_k);
    sp_kv_store_row(row, (char *)kv->k[0] + (size_t)cell * sp_kv_bytes(kv->type.k, kv->k_row), kv->type.k, kv->k_row);
}

/* 12 cells, shift keeping 3 and dropping 4: the kept cells untouched, the
 * later ones at their positions less 4 with keys within the type's
 * rounding of keys computed there. */
static void check_cache_shift(sp_kv_type type, sp_rope_kind kind, float tol) {
    sprout_model m;
    sp_layer layer;
    fake_model(&m, &layer, kind);
    sp_kv_cache kv;
    if (sp_kv_init(&kv, (sp_kv_types){type, type}, 64, 16, 1, 1, 128, 128) != SPROUT_OK) {
        CHECK_MSG(0, "%s", sprout_last_error());
        return;
    }
    CHECK(type == SP_KV_F32 || type == SP_KV_F16 || type == SP_KV_BF16 || kv.rotate_k == 64);
    float row[128], want[128];
    for (int32_t pos = 0; pos < 12; pos++) {
        int32_t cell;
        CHECK(sp_kv_append(&kv, 0, pos, &cell) == SPROUT_OK);
        key_at(&m, pos, pos, row);
        write_key(&kv, cell, row);
    }
    float before[3][128];
    for (int32_t i = 0; i < 3; i++) read_key(&kv, kv.seqs[0].cells[i], before[i]);
    CHECK_MSG(sp_kv_shift(&kv, &m, 0, 3, 4) == SPROUT_OK, "%s", sprout_last_error());
    CHECK(kv.seqs[0].n == 8 && kv.n_free == 8);
    float worst = 0;
    for (int32_t i = 0; i < kv.seqs[0].n; i++) {
        const int32_t cell = kv.seqs[0].cells[i], token = i < 3 ? i : i + 4;
        CHECK(kv.cell_pos[cell] == i);
        read_key(&kv, cell, row);
        if (i < 3) memcpy(want, before[i], sizeof want);
        else key_at(&m, token, i, want);
        for (int j = 0; j < 128; j++) worst = fmaxf(worst, fabsf(row[j] - want[j]));
    }
    CHECK_MSG(worst <= tol, "%s, %s RoPE: keys off by %g after the shift (at most %g)", sp_kv_type_name(type),
              kind == SP_ROPE_NORM ? "NORM" : "NEOX", (double)worst, (double)tol);
    /* nothing to drop after the kept cells: refused, the cache unchanged */
    CHECK(sp_kv_shift(&kv, &m, 0, 8, 1) != SPROUT_OK && kv.seqs[0].n == 8);
    sp_kv_free(&kv);
}

static void check_refusals(void) {
    sprout_model m;
    sp_layer layer;
    fake_model(&m, &layer, SP_ROPE_NONE);
    CHECK(sp_kv_shift_check(&m) == SPROUT_ERR_UNSUPPORTED && strstr(sprout_last_error(), "positions"));
    fake_model(&m, &layer, SP_ROPE_NORM);
    CHECK(sp_kv_shift_check(&m) == SPROUT_OK);
    layer.sliding = true;
    CHECK(sp_kv_shift_check(&m) == SPROUT_ERR_UNSUPPORTED && strstr(sprout_last_error(), "sliding"));
}

int main(void) {
    /* the requantized keys: a second rounding of the type's, of keys of
     * magnitude up to 4 */
    const struct {
        sp_kv_type type;
        float tol;
    } types[] = {{SP_KV_F32, 1e-5f}, {SP_KV_F16, 8e-3f}, {SP_KV_BF16, 6e-2f}, {SP_KV_Q8_0, 8e-2f}, {SP_KV_Q4_0, 1.2f}};
    for (size_t i = 0; i < sizeof types / sizeof *types; i++) {
        check_cache_shift(types[i].type, SP_ROPE_NORM, types[i].tol);
        check_cache_shift(types[i].type, SP_ROPE_NEOX, types[i].tol);
    }
    check_refusals();
    check_kv_types();

    char path[512];
    snprintf(path, sizeof path, "%s/models/stories260K.gguf", test_shared_dir());
    sprout_model_params mp = {.struct_size = sizeof mp, .n_threads = 1};
    sprout_model *m = NULL;
    CHECK_MSG(sprout_model_load(path, &mp, &m) == SPROUT_OK, "%s", sprout_last_error());
    if (m) {
        check_reference(m, "llama-f16.json", 4);
        check_reference(m, "llama-f16-keep-all.json", -1);
        check_chat(m);
        sprout_model_free(m);
    }
    TEST_MAIN_END();
}
