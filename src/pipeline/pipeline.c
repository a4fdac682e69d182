/* Pipelines: creation and configuration. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/log.h"
#include "core/versioned.h"
#include "pipeline/pipeline_internal.h"

void sprout_generation_config_init(sprout_generation_config *c) {
    if (!c) return;
    memset(c, 0, sizeof *c);
    c->struct_size = sizeof *c;
    c->max_new_tokens = 256;
    c->temperature = 0.8f;
    c->top_k = 40;
    c->top_p = 0.95f;
    c->min_p = 0.05f;
    c->repetition_penalty = 1.f;
    c->repeat_last_n = 64;
    c->seed = 42;
    /* llama.cpp's defaults, which leave these samplers off */
    c->typical_p = 1.f;
    c->mirostat_tau = 5.f;
    c->mirostat_eta = 0.1f;
    c->dry_base = 1.75f;
    c->dry_allowed_length = 2;
    c->dry_penalty_last_n = -1;
    c->xtc_threshold = 0.1f;
    c->top_n_sigma = -1.f;
}

void sp_config_copy(sprout_generation_config *dst, const sprout_generation_config *src) {
    sprout_generation_config_init(dst);
    if (!src) return;
    size_t n = sp_versioned_bytes(src->struct_size, sizeof *dst);
    memcpy(dst, src, n);
    dst->struct_size = sizeof *dst;
}

const char *sprout_kv_type_name(sprout_kv_type type) { return sp_kv_type_name((sp_kv_type)type); }

sprout_status sprout_kv_type_from_name(const char *name, sprout_kv_type *out) {
    static const sprout_kv_type all[] = {SPROUT_KV_F32, SPROUT_KV_F16, SPROUT_KV_BF16, SPROUT_KV_Q8_0, SPROUT_KV_Q4_0};
    for (size_t i = 0; name && out && i < sizeof all / sizeof *all; i++)
        if (!strcmp(name, sprout_kv_type_name(all[i]))) {
            *out = all[i];
            return SPROUT_OK;
        }
    return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "KV cache type '%s': f32, f16, bf16, q8_0 or q4_0", name ? name : "(null)");
}

const char *sp_kv_types_label(sp_kv_types kv, char *buf, size_t size) {
    if (kv.k == kv.v) snprintf(buf, size, "%s", sp_kv_type_name(kv.k));
    else snprintf(buf, size, "%s/%s", sp_kv_type_name(kv.k), sp_kv_type_name(kv.v));
    return buf;
}

/* One side's type: its own, else both sides', else the fallback. */
static sprout_kv_type pick_side(bool side_set, sprout_kv_type side, const sp_kv_ask *ask, sprout_kv_type fallback) {
    return side_set ? side : ask->both_set ? ask->both : fallback;
}

sprout_status sp_kv_types_resolve(const sprout_model *m, sp_kv_ask ask, sp_kv_types *out) {
    const sprout_model_params *mp = &m->params;
    const sp_kv_ask model = {mp->kv_type, mp->cache_type_k, mp->cache_type_v, mp->kv_type_set, mp->cache_type_k_set, mp->cache_type_v_set};
    const sprout_kv_type k = pick_side(ask.k_set, ask.k, &ask, pick_side(model.k_set, model.k, &model, SPROUT_KV_F16));
    const sprout_kv_type v = pick_side(ask.v_set, ask.v, &ask, pick_side(model.v_set, model.v, &model, SPROUT_KV_F16));
    const sprout_kv_type sides[2] = {k, v};
    for (int i = 0; i < 2; i++)
        if (!sprout_kv_type_name(sides[i]))
            return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "KV cache type %d: F32 (%d), F16 (%d), BF16 (%d), Q8_0 (%d) or Q4_0 (%d)", (int)sides[i],
                           SPROUT_KV_F32, SPROUT_KV_F16, SPROUT_KV_BF16, SPROUT_KV_Q8_0, SPROUT_KV_Q4_0);
    *out = (sp_kv_types){(sp_kv_type)k, (sp_kv_type)v};
    return SPROUT_OK;
}

sprout_status sprout_pipeline_create(const sprout_model *model, const sprout_pipeline_params *params, sprout_pipeline **out) {
    if (!out) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "NULL output pointer");
    *out = NULL;
    if (!model) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "NULL model");
    sprout_pipeline_params pp = {.struct_size = sizeof pp};
    if (params) memcpy(&pp, params, sp_versioned_bytes(params->struct_size, sizeof pp));
    const int32_t n_ctx = pp.n_ctx > 0 ? pp.n_ctx : model->params.n_ctx;
    const int32_t n_batch = pp.n_batch > 0 ? (pp.n_batch < n_ctx ? pp.n_batch : n_ctx) : (n_ctx < 512 ? n_ctx : 512);
    const int32_t n_threads = pp.n_threads > 0 ? pp.n_threads : model->params.n_threads;
    if (n_ctx < 1 || n_ctx > (1 << 24)) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "context length %d", n_ctx);
    sp_kv_types kv;
    sprout_status st = sp_kv_types_resolve(model,
                                           (sp_kv_ask){pp.kv_type, pp.cache_type_k, pp.cache_type_v, pp.kv_type_set,
                                                       pp.cache_type_k_set, pp.cache_type_v_set},
                                           &kv);
    if (st != SPROUT_OK) return st;
    sprout_pipeline *p = calloc(1, sizeof *p);
    if (!p) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
    p->model = model;
    p->n_ctx = n_ctx;
    sprout_generation_config_init(&p->config);
    st = sp_context_init_kv(&p->ctx, model, n_ctx, n_batch, 1, n_threads, kv);
    if (st == SPROUT_OK) st = sp_sampler_init(&p->sampler, model->hp.n_vocab, p->config.seed);
    if (st == SPROUT_OK) {
        p->cached = malloc((size_t)n_ctx * sizeof *p->cached);
        p->logits = malloc((size_t)model->hp.n_vocab * sizeof *p->logits);
        p->batch = malloc((size_t)n_batch * sizeof *p->batch);
        if (!p->cached || !p->logits || !p->batch) st = sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    if (st != SPROUT_OK) {
        sprout_pipeline_free(p);
        return st;
    }
    char kv_label[16];
    sp_log(SPROUT_LOG_INFO, "pipeline: %d tokens of context, %s KV cache, batches of %d, %d threads, %s kernels", n_ctx,
           sp_kv_types_label(kv, kv_label, sizeof kv_label), n_batch, n_threads, sprout_kernels_name());
    *out = p;
    return SPROUT_OK;
}

void sprout_chat_finish(sprout_pipeline *p) {
    if (!p) return;
    for (size_t i = 0; i < p->n_messages; i++) {
        free(p->messages[i].role);
        free(p->messages[i].content);
    }
    p->n_messages = 0;
    p->chat_active = false;
}

void sprout_pipeline_free(sprout_pipeline *p) {
    if (!p) return;
    sprout_chat_finish(p);
    free(p->messages);
    sprout_template_free(p->chat_template);
    free(p->bos_text);
    free(p->eos_text);
    sp_context_free(&p->ctx);
    sp_sampler_free(&p->sampler);
    free(p->cached);
    free(p->logits);
    free(p->batch);
    sp_lora_set_free(&p->default_lora);
    sp_lora_set_free(&p->cached_lora);
    sp_lookup_free(&p->lookup);
    free(p->verify_logits);
    free(p->proposal);
    free(p);
}

/* The default config's adapters become a copy of uses. */
static sprout_status set_default_lora(sprout_pipeline *p, const sprout_lora_use *uses, size_t n) {
    sp_lora_set set;
    sprout_status st = sp_lora_set_copy(p->model, uses, n, &set);
    if (st != SPROUT_OK) return st;
    sp_lora_set_free(&p->default_lora);
    p->default_lora = set;
    p->config.lora = set.uses;
    p->config.n_lora = set.n;
    return SPROUT_OK;
}

sprout_status sprout_pipeline_set_lora(sprout_pipeline *p, sprout_lora *const *adapters, const float *scales, size_t n) {
    if (!p || (n && (!adapters || !scales))) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "NULL pipeline, adapters or scales");
    sprout_lora_use *uses = calloc(n ? n : 1, sizeof *uses);
    if (!uses) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
    for (size_t i = 0; i < n; i++) uses[i] = (sprout_lora_use){adapters[i], scales[i]};
    sprout_status st = set_default_lora(p, uses, n);
    free(uses);
    return st;
}

int32_t sprout_pipeline_n_ctx(const sprout_pipeline *p) { return p ? p->n_ctx : 0; }
int32_t sprout_pipeline_n_threads(const sprout_pipeline *p) { return p ? sp_threadpool_size(p->ctx.pool) : 0; }
int32_t sprout_pipeline_cached_tokens(const sprout_pipeline *p) { return p ? p->n_cached : 0; }
size_t sprout_pipeline_kv_bytes_per_token(const sprout_pipeline *p) { return p ? sp_kv_bytes_per_token(&p->ctx.kv) : 0; }
int32_t sprout_pipeline_last_prefill_tokens(const sprout_pipeline *p) { return p ? p->last_prefill : 0; }

sprout_status sprout_pipeline_get_config(const sprout_pipeline *p, sprout_generation_config *c) {
    if (!p || !c) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "NULL pipeline or config");
    size_t n = sp_versioned_bytes(c->struct_size, sizeof *c);
    memcpy(c, &p->config, n);
    c->struct_size = n;
    return SPROUT_OK;
}

sprout_status sprout_pipeline_set_config(sprout_pipeline *p, const sprout_generation_config *c) {
    if (!p || !c) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "NULL pipeline or config");
    sprout_generation_config copy;
    sp_config_copy(&copy, c);
    /* the adapters are kept (a copy of the list), checked first so that a
     * refused config changes nothing */
    sprout_status st = set_default_lora(p, copy.lora, copy.n_lora);
    if (st != SPROUT_OK) return st;
    copy.lora = p->config.lora;
    copy.n_lora = p->config.n_lora;
    p->config = copy;
    /* the pointers belong to the caller: a default config cannot keep them */
    p->config.stop_strings = NULL;
    p->config.n_stop_strings = 0;
    p->config.stop_token_ids = NULL;
    p->config.n_stop_token_ids = 0;
    p->config.logit_bias = NULL;
    p->config.n_logit_bias = 0;
    p->config.dry_sequence_breakers = NULL;
    p->config.n_dry_sequence_breakers = 0;
    p->config.samplers = NULL;
    p->config.grammar = NULL;
    p->config.json_schema = NULL;
    p->config.grammar_trigger = NULL;
    return SPROUT_OK;
}
