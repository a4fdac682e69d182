#include "model/model.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/cpu.h"
#include "core/error.h"
#include "core/versioned.h"
#include "gguf/gguf_resident.h"
#include "quant/quant.h"

/* <arch>.logit_scale: unused, the logits' factor where present (command-r),
 * or their required divisor (granite). */
typedef enum logit_scaling { LOGITS_AS_IS, LOGITS_TIMES_KEY, LOGITS_OVER_KEY } logit_scaling;

/* What each architecture does that the tensors alone do not say. */
typedef struct arch_traits {
    const char *name;
    sp_arch arch;
    sp_rope_kind rope;
    sp_norm_kind norm;
    sp_ffn_kind ffn;
    bool may_be_parallel; /* parallel attention/FFN when the file has no ffn_norm */
    bool embd_scale;      /* embeddings times sqrt(n_embd) */
    bool always_tied;     /* the output head is the embedding, whatever else the file holds */
    int swa_pattern;      /* 0: none; n: layer il is local when il % n < n - 1 */
    bool swa_pattern_in_file; /* attention.sliding_window_pattern may say otherwise */
    bool swa_all_layers;  /* the window (if any) applies to every layer */
    bool swa_own_rope;    /* local layers: rope.freq_base_swa, and no frequency scaling */
    bool swa_unscaled_rope; /* local layers: the same base, no frequency scaling (olmo2's OLMo 3) */
    bool encoder;         /* the BERT family: bidirectional, post-norm, no output head (embeddings only) */
    bool qk_norm_whole;   /* attn_q_norm/attn_k_norm span every head (olmoe), not one head */
    /* mixtures of experts, as llama.cpp's graph for the architecture builds
     * them (src/models/<arch>.cpp): experts_required refuses a file without
     * them; moe_norm_w renormalizes the chosen experts' weights (the norm_w
     * argument of build_moe_ffn); ff_exp_from_used: without
     * expert_feed_forward_length an expert is n_ff / n_expert_used wide,
     * else n_ff */
    bool experts_required, moe_norm_w, ff_exp_from_used;
    bool no_pre_norm;     /* olmo2: the blocks read x unnormed (post-norms only) */
    bool post_norms;      /* post_attention_norm and post_ffw_norm are required (olmo2, glm4) */
    bool qk_norm;         /* attn_q_norm and attn_k_norm are required (olmo2) */
    bool granite_scales;  /* embedding_scale and residual_scale, each optional */
    bool qk_norm_each_head; /* q/k norms: a LayerNorm of each head with its own weights (command-r) */
    /* gpt-oss: local layers rotate with rope.freq_base_swa where the file
     * has it (else rope.freq_base), scaled as the others; the FFN's norm is
     * named post_attention_norm; attention sinks, the router's and the
     * experts' biases are required; the router's top k logits are then
     * softmaxed (gating) */
    bool swa_base_in_file;
    bool ffn_norm_post_attention;
    bool sinks_and_biases;
    sp_moe_gating gating;
    logit_scaling logits; /* what <arch>.logit_scale does to the logits */
    bool mla;             /* deepseek2: multi-head latent attention and DeepSeek's MoE keys (load_deepseek2) */
} arch_traits;

static const arch_traits archs[] = {
    /* with llama.expert_count: Mixtral */
    {.name = "llama", .arch = SP_ARCH_LLAMA, .rope = SP_ROPE_NORM, .norm = SP_NORM_RMS, .ffn = SP_FFN_SWIGLU, .moe_norm_w = true},
    {.name = "qwen2", .arch = SP_ARCH_QWEN2, .rope = SP_ROPE_NEOX, .norm = SP_NORM_RMS, .ffn = SP_FFN_SWIGLU},
    {.name = "qwen3", .arch = SP_ARCH_QWEN3, .rope = SP_ROPE_NEOX, .norm = SP_NORM_RMS, .ffn = SP_FFN_SWIGLU},
    {.name = "phi3", .arch = SP_ARCH_PHI3, .rope = SP_ROPE_NEOX, .norm = SP_NORM_RMS, .ffn = SP_FFN_SWIGLU,
      .swa_all_layers = true},
    {.name = "gemma", .arch = SP_ARCH_GEMMA, .rope = SP_ROPE_NEOX, .norm = SP_NORM_RMS, .ffn = SP_FFN_GEGLU,
      .embd_scale = true, .always_tied = true},
    {.name = "gemma2", .arch = SP_ARCH_GEMMA2, .rope = SP_ROPE_NEOX, .norm = SP_NORM_RMS, .ffn = SP_FFN_GEGLU,
      .embd_scale = true, .always_tied = true, .swa_pattern = 2},
    {.name = "gemma3", .arch = SP_ARCH_GEMMA3, .rope = SP_ROPE_NEOX, .norm = SP_NORM_RMS, .ffn = SP_FFN_GEGLU,
      .embd_scale = true, .always_tied = true, .swa_pattern = 6, .swa_pattern_in_file = true, .swa_own_rope = true},
    {.name = "phi2", .arch = SP_ARCH_PHI2, .rope = SP_ROPE_NEOX, .norm = SP_NORM_LAYER, .ffn = SP_FFN_GELU,
      .may_be_parallel = true},
    {.name = "stablelm", .arch = SP_ARCH_STABLELM, .rope = SP_ROPE_NEOX, .norm = SP_NORM_LAYER, .ffn = SP_FFN_SWIGLU,
      .may_be_parallel = true},
    {.name = "falcon", .arch = SP_ARCH_FALCON, .rope = SP_ROPE_NEOX, .norm = SP_NORM_LAYER, .ffn = SP_FFN_GELU,
      .may_be_parallel = true},
    {.name = "bert", .arch = SP_ARCH_BERT, .rope = SP_ROPE_NONE, .norm = SP_NORM_LAYER, .ffn = SP_FFN_GELU, .encoder = true},
    {.name = "nomic-bert", .arch = SP_ARCH_NOMIC_BERT, .rope = SP_ROPE_NEOX, .norm = SP_NORM_LAYER, .ffn = SP_FFN_SWIGLU,
      .encoder = true},
    {.name = "qwen2moe", .arch = SP_ARCH_QWEN2MOE, .rope = SP_ROPE_NEOX, .norm = SP_NORM_RMS, .ffn = SP_FFN_SWIGLU,
      .experts_required = true, .ff_exp_from_used = true},
    {.name = "qwen3moe", .arch = SP_ARCH_QWEN3MOE, .rope = SP_ROPE_NEOX, .norm = SP_NORM_RMS, .ffn = SP_FFN_SWIGLU,
      .experts_required = true, .moe_norm_w = true, .ff_exp_from_used = true},
    {.name = "olmoe", .arch = SP_ARCH_OLMOE, .rope = SP_ROPE_NEOX, .norm = SP_NORM_RMS, .ffn = SP_FFN_SWIGLU,
      .experts_required = true, .qk_norm_whole = true},
    {.name = "granite", .arch = SP_ARCH_GRANITE, .rope = SP_ROPE_NORM, .norm = SP_NORM_RMS, .ffn = SP_FFN_SWIGLU,
      .moe_norm_w = true, .granite_scales = true, .logits = LOGITS_OVER_KEY},
    {.name = "granitemoe", .arch = SP_ARCH_GRANITEMOE, .rope = SP_ROPE_NORM, .norm = SP_NORM_RMS, .ffn = SP_FFN_SWIGLU,
      .experts_required = true, .moe_norm_w = true, .granite_scales = true, .logits = LOGITS_OVER_KEY},
    {.name = "olmo2", .arch = SP_ARCH_OLMO2, .rope = SP_ROPE_NEOX, .norm = SP_NORM_RMS, .ffn = SP_FFN_SWIGLU,
      .qk_norm_whole = true, .no_pre_norm = true, .post_norms = true, .qk_norm = true,
      .swa_pattern = 4, .swa_pattern_in_file = true, .swa_unscaled_rope = true},
    {.name = "starcoder2", .arch = SP_ARCH_STARCODER2, .rope = SP_ROPE_NEOX, .norm = SP_NORM_LAYER, .ffn = SP_FFN_GELU},
    {.name = "command-r", .arch = SP_ARCH_COMMAND_R, .rope = SP_ROPE_NORM, .norm = SP_NORM_LAYER, .ffn = SP_FFN_SWIGLU,
      .may_be_parallel = true, .always_tied = true, .qk_norm_each_head = true, .logits = LOGITS_TIMES_KEY},
    /* its rows [gate | up] in ffn_up; partial RoPE (rope.dimension_count) */
    {.name = "glm4", .arch = SP_ARCH_GLM4, .rope = SP_ROPE_NORM, .norm = SP_NORM_RMS, .ffn = SP_FFN_SWIGLU, .post_norms = true},
    /* every other layer local (il % 2 == 0), YaRN on all of them */
    {.name = "gpt-oss", .arch = SP_ARCH_GPT_OSS, .rope = SP_ROPE_NEOX, .norm = SP_NORM_RMS, .ffn = SP_FFN_SWIGLU_OAI,
      .experts_required = true, .swa_pattern = 2, .swa_pattern_in_file = true, .swa_base_in_file = true,
      .ffn_norm_post_attention = true, .sinks_and_biases = true, .gating = SP_GATING_SOFTMAX_TOP_K},
    /* V2, V2-Lite, V3: the latent KV cache of runtime/mla.c, leading dense layers, ungated shared experts */
    {.name = "deepseek2", .arch = SP_ARCH_DEEPSEEK2, .rope = SP_ROPE_NORM, .norm = SP_NORM_RMS, .ffn = SP_FFN_SWIGLU, .mla = true},
};

/* --- metadata ------------------------------------------------------------------------ */

typedef struct loader {
    sprout_model *m;
    const sprout_gguf *g;
    const char *arch;
    const struct arch_traits *at;
    float *decoded;       /* next free float of m->decoded */
    size_t decoded_left;
} loader;

static bool arch_key(const loader *L, const char *suffix, char *key, size_t cap) {
    return snprintf(key, cap, "%s.%s", L->arch, suffix) < (int)cap;
}

/* An integer hyperparameter; per-layer arrays must be uniform. */
static sprout_status get_int(const loader *L, const char *suffix, bool required, int64_t fallback, int64_t *out) {
    char key[160];
    arch_key(L, suffix, key, sizeof key);
    const sprout_gguf_value *v = sprout_gguf_find(L->g, key);
    *out = fallback;
    if (!v) return required ? sp_fail(SPROUT_ERR_FORMAT, "metadata key '%s' is missing", key) : SPROUT_OK;
    if (sprout_gguf_value_type(v) == SPROUT_GGUF_ARRAY) {
        uint64_t n = sprout_gguf_array_len(v);
        for (uint64_t i = 0; i < n; i++) {
            int64_t x;
            if (sprout_gguf_array_i64(v, i, &x) != SPROUT_OK) return sp_fail(SPROUT_ERR_FORMAT, "key '%s': not integers", key);
            if (i > 0 && x != *out)
                return sp_fail(SPROUT_ERR_UNSUPPORTED, "key '%s' varies by layer, which sprout does not support", key);
            *out = x;
        }
        return n ? SPROUT_OK : sp_fail(SPROUT_ERR_FORMAT, "key '%s' is an empty array", key);
    }
    if (sprout_gguf_value_i64(v, out) != SPROUT_OK) return sp_fail(SPROUT_ERR_FORMAT, "key '%s' must be an integer", key);
    return SPROUT_OK;
}

/* Lower bounds of a float hyperparameter: none (any finite value), or
 * above zero, or zero and above. A NaN epsilon, a zero RoPE base or a
 * negative soft-cap would only show as NaN logits. */
typedef enum float_bound { ANY_FINITE, POSITIVE, NON_NEGATIVE } float_bound;

/* An optional number (of any numeric type), which must be finite and above
 * its bound; present but not a number is an error, not the fallback. */
static sprout_status get_float(const loader *L, const char *suffix, float fallback, float_bound bound, float *out) {
    char key[160];
    arch_key(L, suffix, key, sizeof key);
    const sprout_gguf_value *v = sprout_gguf_find(L->g, key);
    double x = fallback;
    if (v && sprout_gguf_value_f64(v, &x) != SPROUT_OK) return sp_fail(SPROUT_ERR_FORMAT, "key '%s' must be a number", key);
    const float f = (float)x;
    if (!isfinite(f) || (bound == POSITIVE && !(f > 0.f)) || (bound == NON_NEGATIVE && !(f >= 0.f)))
        return sp_fail(SPROUT_ERR_FORMAT, "%s = %g is out of range", key, (double)f);
    *out = f;
    return SPROUT_OK;
}

/* --- tensors --------------------------------------------------------------------------- */

static int64_t find_tensor(const loader *L, const char *name) { return sprout_gguf_find_tensor(L->g, name); }

static sprout_status check_computable(const sprout_gguf *g, int64_t i) {
    sprout_type t = sprout_gguf_tensor_type(g, i);
    if (!sprout_type_can_dequantize(t))
        return sp_fail(SPROUT_ERR_UNSUPPORTED, "tensor '%s' has type %s, which sprout cannot compute with yet",
                       sprout_gguf_tensor_name(g, i), sprout_type_name(t));
    return SPROUT_OK;
}

sprout_status sp_weight_bind(const sprout_gguf *g, int64_t i, int64_t n_in, int64_t n_out, sp_weight *w) {
    sprout_status st = check_computable(g, i);
    if (st != SPROUT_OK) return st;
    const char *name = sprout_gguf_tensor_name(g, i);
    int64_t ne0 = sprout_gguf_tensor_dim(g, i, 0), ne1 = sprout_gguf_tensor_dim(g, i, 1);
    if (ne0 != n_in || ne1 != n_out || sprout_gguf_tensor_elements(g, i) != n_in * n_out)
        return sp_fail(SPROUT_ERR_FORMAT, "tensor '%s' has shape [%lld, %lld], expected [%lld, %lld]", name, (long long)ne0,
                       (long long)ne1, (long long)n_in, (long long)n_out);
    w->data = sprout_gguf_tensor_data(g, i);
    w->type = sprout_gguf_tensor_type(g, i);
    w->n_in = n_in;
    w->n_out = n_out;
    w->row_bytes = (size_t)(sprout_gguf_tensor_bytes(g, i) / (uint64_t)n_out);
    return SPROUT_OK;
}

/* A matrix of n_out rows of n_in; absent optional ones stay zeroed. */
static sprout_status bind_weight(loader *L, const char *name, int64_t n_in, int64_t n_out, bool required, sp_weight *w) {
    memset(w, 0, sizeof *w);
    int64_t i = find_tensor(L, name);
    if (i < 0) return required ? sp_fail(SPROUT_ERR_FORMAT, "tensor '%s' is missing", name) : SPROUT_OK;
    return sp_weight_bind(L->g, i, n_in, n_out, w);
}

/* A vector of n floats: a view of F32 data, else decoded into m->decoded. */
static sprout_status bind_vec(loader *L, const char *name, int64_t n, bool required, sp_vec *out) {
    *out = NULL;
    int64_t i = find_tensor(L, name);
    if (i < 0) return required ? sp_fail(SPROUT_ERR_FORMAT, "tensor '%s' is missing", name) : SPROUT_OK;
    sprout_status st = check_computable(L->g, i);
    if (st != SPROUT_OK) return st;
    if (sprout_gguf_tensor_elements(L->g, i) != n)
        return sp_fail(SPROUT_ERR_FORMAT, "tensor '%s' has %lld elements, expected %lld", name,
                       (long long)sprout_gguf_tensor_elements(L->g, i), (long long)n);
    const void *data = sprout_gguf_tensor_data(L->g, i);
    sprout_type t = sprout_gguf_tensor_type(L->g, i);
    if (t == SPROUT_TYPE_F32 && ((uintptr_t)data & 3) == 0) {
        *out = data;
        return SPROUT_OK;
    }
    if ((size_t)n > L->decoded_left) return sp_fail(SPROUT_ERR_INTERNAL, "decoded vector space exhausted at '%s'", name);
    if (n % sprout_type_block_size(t) != 0)
        return sp_fail(SPROUT_ERR_FORMAT, "tensor '%s' length does not fit its type %s", name, sprout_type_name(t));
    sprout_dequantize(t, data, L->decoded, n);
    *out = L->decoded;
    L->decoded += n;
    L->decoded_left -= (size_t)n;
    return SPROUT_OK;
}

/* A 3-D tensor [n_in, n_out, n_slices] of n_slices matrices (experts, or
 * MLA's heads), the count read from key `count_key`: its shape checked
 * against the metadata (an error names the tensor and what the key says),
 * then slice 0's matrix and the bytes between slices. Nothing is read. */
static sprout_status bind_slices(loader *L, const char *name, int64_t n_in, int64_t n_out, int64_t n_slices, const char *count_key,
                                 sp_experts *x) {
    memset(x, 0, sizeof *x);
    const int64_t i = find_tensor(L, name);
    if (i < 0) return sp_fail(SPROUT_ERR_FORMAT, "tensor '%s' is missing (%s.%s = %lld)", name, L->arch, count_key, (long long)n_slices);
    sprout_status st = check_computable(L->g, i);
    if (st != SPROUT_OK) return st;
    const int64_t ne0 = sprout_gguf_tensor_dim(L->g, i, 0), ne1 = sprout_gguf_tensor_dim(L->g, i, 1), ne2 = sprout_gguf_tensor_dim(L->g, i, 2);
    if (ne0 != n_in || ne1 != n_out || ne2 != n_slices || sprout_gguf_tensor_elements(L->g, i) != n_in * n_out * n_slices)
        return sp_fail(SPROUT_ERR_FORMAT, "tensor '%s' has shape [%lld, %lld, %lld], expected [%lld, %lld, %lld] (%s.%s = %lld)",
                       name, (long long)ne0, (long long)ne1, (long long)ne2, (long long)n_in, (long long)n_out, (long long)n_slices,
                       L->arch, count_key, (long long)n_slices);
    x->stride = (size_t)(sprout_gguf_tensor_bytes(L->g, i) / (uint64_t)n_slices);
    x->first = (sp_weight){.data = sprout_gguf_tensor_data(L->g, i), .type = sprout_gguf_tensor_type(L->g, i), .n_in = n_in,
                           .n_out = n_out, .row_bytes = x->stride / (size_t)n_out};
    return SPROUT_OK;
}

static sprout_status bind_experts(loader *L, const char *name, int64_t n_in, int64_t n_out, sp_experts *x) {
    return bind_slices(L, name, n_in, n_out, L->m->hp.n_expert, "expert_count", x);
}

/* The layer's router, experts and shared expert (where its tensors are). */
static sprout_status bind_moe(loader *L, int il, sp_layer *ly) {
    const sp_hparams *hp = &L->m->hp;
    const int64_t e = hp->n_embd, f = hp->n_ff_exp, fs = hp->n_ff_shexp;
    char name[128];
    sprout_status st;
#define NAME(s) (snprintf(name, sizeof name, "blk.%d.%s", il, s), name)
    if ((st = bind_weight(L, NAME("ffn_gate_inp.weight"), e, hp->n_expert, true, &ly->router)) != SPROUT_OK ||
        (st = bind_experts(L, NAME("ffn_gate_exps.weight"), e, f, &ly->gate_exps)) != SPROUT_OK ||
        (st = bind_experts(L, NAME("ffn_up_exps.weight"), e, f, &ly->up_exps)) != SPROUT_OK ||
        (st = bind_experts(L, NAME("ffn_down_exps.weight"), f, e, &ly->down_exps)) != SPROUT_OK ||
        (st = bind_vec(L, NAME("exp_probs_b.bias"), hp->n_expert, false, &ly->exp_probs_b)) != SPROUT_OK)
        return st;
    if (L->at->sinks_and_biases &&
        ((st = bind_vec(L, NAME("ffn_gate_inp.bias"), hp->n_expert, true, &ly->router_b)) != SPROUT_OK ||
         (st = bind_vec(L, NAME("ffn_gate_exps.bias"), f * hp->n_expert, true, &ly->gate_exps_b)) != SPROUT_OK ||
         (st = bind_vec(L, NAME("ffn_up_exps.bias"), f * hp->n_expert, true, &ly->up_exps_b)) != SPROUT_OK ||
         (st = bind_vec(L, NAME("ffn_down_exps.bias"), e * hp->n_expert, true, &ly->down_exps_b)) != SPROUT_OK))
        return st;
    if (find_tensor(L, NAME("ffn_up_shexp.weight")) < 0) return SPROUT_OK;
    if ((st = bind_weight(L, NAME("ffn_gate_shexp.weight"), e, fs, true, &ly->gate_shexp)) != SPROUT_OK ||
        (st = bind_weight(L, NAME("ffn_up_shexp.weight"), e, fs, true, &ly->up_shexp)) != SPROUT_OK ||
        (st = bind_weight(L, NAME("ffn_down_shexp.weight"), fs, e, true, &ly->down_shexp)) != SPROUT_OK ||
        (st = bind_weight(L, NAME("ffn_gate_inp_shexp.weight"), e, 1, !L->at->mla, &ly->gate_inp_shexp)) != SPROUT_OK)
        return st;
#undef NAME
    return SPROUT_OK;
}

/* Multi-head latent attention's weights (llama.cpp's names and shapes). */
static sprout_status bind_mla(loader *L, int il, sp_layer *ly) {
    const sp_hparams *hp = &L->m->hp;
    const int64_t e = hp->n_embd, r = hp->n_lora_kv, heads = hp->n_head, hk = hp->head_dim_k_mla, nope = hk - hp->n_rot;
    char name[128];
    sprout_status st;
#define NAME(s) (snprintf(name, sizeof name, "blk.%d.%s", il, s), name)
    if (hp->n_lora_q > 0) {
        if ((st = bind_weight(L, NAME("attn_q_a.weight"), e, hp->n_lora_q, true, &ly->wq_a)) != SPROUT_OK ||
            (st = bind_vec(L, NAME("attn_q_a_norm.weight"), hp->n_lora_q, true, &ly->q_a_norm)) != SPROUT_OK ||
            (st = bind_weight(L, NAME("attn_q_b.weight"), hp->n_lora_q, heads * hk, true, &ly->wq_b)) != SPROUT_OK)
            return st;
    } else if ((st = bind_weight(L, NAME("attn_q.weight"), e, heads * hk, true, &ly->wq)) != SPROUT_OK)
        return st;
    if ((st = bind_weight(L, NAME("attn_kv_a_mqa.weight"), e, r + hp->n_rot, true, &ly->wkv_a)) != SPROUT_OK ||
        (st = bind_vec(L, NAME("attn_kv_a_norm.weight"), r, true, &ly->kv_a_norm)) != SPROUT_OK)
        return st;
    if (hp->mla_fused_kv_b) { /* each head's rows [k_nope | v]: v_b a view of the v rows, k_b read transposed */
        const int64_t hv = hp->head_dim_v_mla;
        if ((st = bind_weight(L, NAME("attn_kv_b.weight"), r, heads * (nope + hv), true, &ly->wkv_b)) != SPROUT_OK) return st;
        ly->v_b.first = ly->wkv_b;
        ly->v_b.first.data += (size_t)nope * ly->wkv_b.row_bytes;
        ly->v_b.first.n_out = hv;
        ly->v_b.stride = (size_t)(nope + hv) * ly->wkv_b.row_bytes;
        return SPROUT_OK;
    }
    if ((st = bind_slices(L, NAME("attn_k_b.weight"), nope, r, heads, "attention.head_count", &ly->k_b)) != SPROUT_OK ||
        (st = bind_slices(L, NAME("attn_v_b.weight"), r, hp->head_dim_v_mla, heads, "attention.head_count", &ly->v_b)) != SPROUT_OK)
        return st;
#undef NAME
    return SPROUT_OK;
}

static sprout_status bind_layer(loader *L, int il, sp_layer *ly) {
    const sp_hparams *hp = &L->m->hp;
    const int64_t e = hp->n_embd, q_dim = (int64_t)hp->n_head * hp->head_dim_k, kv_k = (int64_t)hp->n_head_kv * hp->head_dim_k,
                  kv_v = (int64_t)hp->n_head_kv * hp->head_dim_v, ff = hp->n_ff;
    char name[128];
    sprout_status st;
#define NAME(s) (snprintf(name, sizeof name, "blk.%d.%s", il, s), name)
#define TRY(expr)                                                                                     \
    do {                                                                                              \
        if ((st = (expr)) != SPROUT_OK) return st;                                                    \
    } while (0)
    if (!hp->no_pre_norm) {
        TRY(bind_vec(L, NAME("attn_norm.weight"), e, !hp->post_norm, &ly->attn_norm));
        TRY(bind_vec(L, NAME("attn_norm.bias"), e, false, &ly->attn_norm_b));
    }
    if (hp->n_lora_kv > 0) {
        TRY(bind_mla(L, il, ly));
    } else if (find_tensor(L, NAME("attn_qkv.weight")) >= 0) {
        TRY(bind_weight(L, NAME("attn_qkv.weight"), e, q_dim + kv_k + kv_v, true, &ly->wqkv));
        TRY(bind_vec(L, NAME("attn_qkv.bias"), q_dim + kv_k + kv_v, false, &ly->bqkv));
    } else {
        TRY(bind_weight(L, NAME("attn_q.weight"), e, q_dim, true, &ly->wq));
        TRY(bind_weight(L, NAME("attn_k.weight"), e, kv_k, true, &ly->wk));
        TRY(bind_weight(L, NAME("attn_v.weight"), e, kv_v, true, &ly->wv));
        TRY(bind_vec(L, NAME("attn_q.bias"), q_dim, false, &ly->bq));
        TRY(bind_vec(L, NAME("attn_k.bias"), kv_k, false, &ly->bk));
        TRY(bind_vec(L, NAME("attn_v.bias"), kv_v, false, &ly->bv));
    }
    const bool qk_norm_spans_all = hp->qk_norm_whole || hp->qk_norm_each_head;
    TRY(bind_vec(L, NAME("attn_q_norm.weight"), qk_norm_spans_all ? q_dim : hp->head_dim_k, L->at->qk_norm, &ly->q_norm));
    TRY(bind_vec(L, NAME("attn_k_norm.weight"), qk_norm_spans_all ? kv_k : hp->head_dim_k, L->at->qk_norm, &ly->k_norm));
    TRY(bind_weight(L, NAME("attn_output.weight"), (int64_t)hp->n_head * (hp->n_lora_kv > 0 ? hp->head_dim_v_mla : hp->head_dim_v), e,
                    true, &ly->wo));
    TRY(bind_vec(L, NAME("attn_output.bias"), e, L->at->sinks_and_biases, &ly->bo));
    if (L->at->sinks_and_biases) TRY(bind_vec(L, NAME("attn_sinks.weight"), hp->n_head, true, &ly->attn_sinks));
    const bool ffn_norm_renamed = L->at->ffn_norm_post_attention; /* gpt-oss: the norm before the FFN */
    if (!ffn_norm_renamed) TRY(bind_vec(L, NAME("post_attention_norm.weight"), e, L->at->post_norms, &ly->post_attn_norm));
    if (!hp->no_pre_norm) {
        TRY(bind_vec(L, NAME(ffn_norm_renamed ? "post_attention_norm.weight" : "ffn_norm.weight"), e, !hp->parallel_block && !hp->post_norm,
                     &ly->ffn_norm));
        TRY(bind_vec(L, NAME("ffn_norm.bias"), e, false, &ly->ffn_norm_b));
    }
    if (hp->n_expert > 0 && il >= hp->n_layer_dense_lead) TRY(bind_moe(L, il, ly));
    else {
        if (hp->ffn_kind != SP_FFN_GELU && !hp->fused_gate_up) TRY(bind_weight(L, NAME("ffn_gate.weight"), e, ff, true, &ly->w_gate));
        TRY(bind_weight(L, NAME("ffn_up.weight"), e, hp->fused_gate_up ? 2 * ff : ff, true, &ly->w_up));
        TRY(bind_vec(L, NAME("ffn_up.bias"), ff, false, &ly->b_up));
        TRY(bind_weight(L, NAME("ffn_down.weight"), ff, e, true, &ly->w_down));
        TRY(bind_vec(L, NAME("ffn_down.bias"), e, false, &ly->b_down));
    }
    TRY(bind_vec(L, NAME("post_ffw_norm.weight"), e, L->at->post_norms, &ly->post_ffn_norm));
    TRY(bind_vec(L, NAME("attn_output_norm.weight"), e, hp->post_norm, &ly->attn_out_norm));
    TRY(bind_vec(L, NAME("attn_output_norm.bias"), e, false, &ly->attn_out_norm_b));
    TRY(bind_vec(L, NAME("layer_output_norm.weight"), e, hp->post_norm, &ly->out_norm));
    TRY(bind_vec(L, NAME("layer_output_norm.bias"), e, false, &ly->out_norm_b));
#undef NAME
#undef TRY
    return SPROUT_OK;
}

static const arch_traits *find_arch(const char *name, size_t len) {
    for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++)
        if (strlen(archs[i].name) == len && !memcmp(archs[i].name, name, len)) return &archs[i];
    return NULL;
}

/* The expert counts as llama.cpp checks them (llama_model::load_hparams). */
static sprout_status check_experts(const loader *L, const arch_traits *at) {
    const sp_hparams *hp = &L->m->hp;
    if (hp->n_expert == 0 && at->experts_required)
        return sp_fail(SPROUT_ERR_FORMAT, "%s.expert_count is missing or 0: a %s model is a mixture of experts", L->arch, L->arch);
    if (hp->n_expert == 0 && hp->n_expert_used > 0)
        return sp_fail(SPROUT_ERR_FORMAT, "%s.expert_used_count = %d without experts (%s.expert_count is 0)", L->arch, hp->n_expert_used, L->arch);
    if (hp->n_expert > SP_MAX_EXPERTS)
        return sp_fail(SPROUT_ERR_FORMAT, "%s.expert_count = %d is more than %d", L->arch, hp->n_expert, SP_MAX_EXPERTS);
    if (hp->n_expert > 0 && (hp->n_expert_used <= 0 || hp->n_expert_used > hp->n_expert))
        return sp_fail(SPROUT_ERR_FORMAT, "%s.expert_used_count = %d is out of range (1 to %s.expert_count = %d)", L->arch,
                       hp->n_expert_used, L->arch, hp->n_expert);
    return SPROUT_OK;
}

/* The factors on the embeddings, the attention scores, each block's
 * output and the logits; 0 in the file means none, as in llama.cpp. */
static sprout_status load_scales(loader *L, const arch_traits *at) {
    sp_hparams *hp = &L->m->hp;
    sprout_status st;
    hp->embd_scale = at->embd_scale ? sqrtf((float)hp->n_embd) : 1.f;
    if ((st = get_float(L, "attention.scale", 0.f, ANY_FINITE, &hp->attn_scale)) != SPROUT_OK) return st;
    if (hp->attn_scale == 0.f) hp->attn_scale = 1.f / sqrtf((float)hp->head_dim_k);
    float v = 0.f;
    hp->residual_scale = hp->logit_scale = 1.f;
    if (at->granite_scales) {
        if ((st = get_float(L, "embedding_scale", 0.f, ANY_FINITE, &v)) != SPROUT_OK) return st;
        if (v != 0.f) hp->embd_scale = v;
        if ((st = get_float(L, "residual_scale", 0.f, ANY_FINITE, &v)) != SPROUT_OK) return st;
        if (v != 0.f) hp->residual_scale = v;
    }
    char key[160];
    arch_key(L, "logit_scale", key, sizeof key);
    if (at->logits == LOGITS_OVER_KEY && !sprout_gguf_find(L->g, key))
        return sp_fail(SPROUT_ERR_FORMAT, "metadata key '%s' is missing (%s divides its logits by it)", key, L->arch);
    if (at->logits != LOGITS_AS_IS &&
        (st = get_float(L, "logit_scale", 0.f, at->logits == LOGITS_OVER_KEY ? POSITIVE : ANY_FINITE, &v)) != SPROUT_OK)
        return st;
    if (at->logits == LOGITS_OVER_KEY) hp->logit_scale = 1.f / v;
    else if (at->logits == LOGITS_TIMES_KEY && v != 0.f) hp->logit_scale = v;
    return SPROUT_OK;
}

/* What the traits say sprout does not run, refused by name rather than
 * computed differently from llama.cpp. */
static sprout_status check_unsupported(const loader *L, const arch_traits *at) {
    char key[160];
    arch_key(L, "rope.dimension_sections", key, sizeof key);
    const sprout_gguf_value *sections = sprout_gguf_find(L->g, key);
    const bool is_array = sections && sprout_gguf_value_type(sections) == SPROUT_GGUF_ARRAY;
    const uint64_t n_sections = is_array ? sprout_gguf_array_len(sections) : sections ? 1 : 0;
    for (uint64_t i = 0; i < n_sections; i++) {
        int64_t x = 0;
        const sprout_status got = is_array ? sprout_gguf_array_i64(sections, i, &x) : sprout_gguf_value_i64(sections, &x);
        if (got != SPROUT_OK || x != 0) return sp_fail(SPROUT_ERR_UNSUPPORTED, "%s: multi-axis RoPE (%s) is not supported", L->arch, key);
    }
    bool rope = true; /* granite's switch for RoPE (off: its hybrid models' attention layers) */
    arch_key(L, "rope.scaling.finetuned", key, sizeof key);
    if (at->granite_scales && sprout_gguf_find(L->g, key) && sprout_gguf_get_bool(L->g, key, &rope) != SPROUT_OK)
        return sp_fail(SPROUT_ERR_FORMAT, "key '%s' must be a boolean", key);
    if (!rope) return sp_fail(SPROUT_ERR_UNSUPPORTED, "%s without RoPE (%s false) is not supported", L->arch, key);
    arch_key(L, "expert_shared_feed_forward_length", key, sizeof key);
    if (at->granite_scales && at->experts_required && sprout_gguf_find(L->g, key))
        return sp_fail(SPROUT_ERR_UNSUPPORTED, "%s with a shared expert (%s) is not supported", L->arch, key);
    return SPROUT_OK;
}

/* An integer key of 0 to 2^24 (fallback where absent). */
static sprout_status get_count(const loader *L, const char *suffix, int64_t fallback, int32_t *out) {
    int64_t v;
    sprout_status st = get_int(L, suffix, false, fallback, &v);
    if (st != SPROUT_OK) return st;
    if (v < 0 || v > (1 << 24)) return sp_fail(SPROUT_ERR_FORMAT, "%s.%s = %lld is out of range", L->arch, suffix, (long long)v);
    *out = (int32_t)v;
    return SPROUT_OK;
}

/* DeepSeek's routing keys as llama.cpp reads them for deepseek2: the
 * gating function, a factor on the chosen weights, their renormalization,
 * expert groups, shared experts and the leading dense layers. */
static sprout_status load_deepseek_moe(loader *L) {
    sp_hparams *hp = &L->m->hp;
    int32_t gating = 0, n_shared = 0;
    sprout_status st;
    if ((st = get_count(L, "leading_dense_block_count", 0, &hp->n_layer_dense_lead)) != SPROUT_OK ||
        (st = get_count(L, "expert_gating_func", 0, &gating)) != SPROUT_OK ||
        (st = get_count(L, "expert_shared_count", 0, &n_shared)) != SPROUT_OK ||
        (st = get_count(L, "expert_group_count", 0, &hp->n_expert_groups)) != SPROUT_OK ||
        (st = get_count(L, "expert_group_used_count", 0, &hp->n_group_used)) != SPROUT_OK ||
        (st = get_float(L, "expert_weights_scale", 0.f, NON_NEGATIVE, &hp->expert_weights_scale)) != SPROUT_OK)
        return st;
    if (hp->expert_weights_scale == 0.f) hp->expert_weights_scale = 1.f;
    char key[160];
    arch_key(L, "expert_weights_norm", key, sizeof key);
    if (sprout_gguf_find(L->g, key) && sprout_gguf_get_bool(L->g, key, &hp->expert_weights_norm) != SPROUT_OK)
        return sp_fail(SPROUT_ERR_FORMAT, "key '%s' must be a boolean", key);
    if (gating > 2) return sp_fail(SPROUT_ERR_UNSUPPORTED, "%s.expert_gating_func = %d is not supported (1 softmax, 2 sigmoid)", L->arch, gating);
    hp->expert_gating = gating == 2 ? SP_GATING_SIGMOID : SP_GATING_SOFTMAX;
    if (hp->n_layer_dense_lead > hp->n_layer)
        return sp_fail(SPROUT_ERR_FORMAT, "%s.leading_dense_block_count = %d is more than the %d layers", L->arch, hp->n_layer_dense_lead, hp->n_layer);
    if (hp->n_layer_dense_lead < hp->n_layer && hp->n_expert == 0)
        return sp_fail(SPROUT_ERR_FORMAT, "%s.expert_count is missing or 0 but layers %d on are mixtures of experts", L->arch, hp->n_layer_dense_lead);
    if ((int64_t)hp->n_ff_exp * n_shared > (1 << 24))
        return sp_fail(SPROUT_ERR_FORMAT, "%s.expert_shared_count = %d is out of range", L->arch, n_shared);
    hp->n_ff_shexp = hp->n_ff_exp * n_shared;
    if (hp->n_expert_groups <= 1) return SPROUT_OK;
    /* llama.cpp's checks, and room for the top two of each group and the n_used chosen */
    const int32_t per_group = hp->n_expert_groups > 0 && hp->n_expert % hp->n_expert_groups == 0 ? hp->n_expert / hp->n_expert_groups : 0;
    if (per_group < 2 || hp->n_group_used <= 0 || hp->n_group_used >= hp->n_expert_groups ||
        hp->n_expert_used > per_group * hp->n_group_used)
        return sp_fail(SPROUT_ERR_FORMAT, "%s: %d experts in %d groups, %d groups used, do not fit %d experts a token", L->arch,
                       hp->n_expert, hp->n_expert_groups, hp->n_group_used, hp->n_expert_used);
    return SPROUT_OK;
}

/* Multi-head latent attention's sizes (the cache's head is [latent | k_pe],
 * its value the latent), checked against each other, and the attention
 * scale and RoPE factor llama.cpp's deepseek2 graph computes from YaRN's. */
static sprout_status load_deepseek2(loader *L) {
    sp_hparams *hp = &L->m->hp;
    sprout_status st;
    /* the trailing multi-token-prediction blocks are not part of the
     * forward pass (llama.cpp's n_layer() leaves them out too) */
    int32_t n_nextn = 0;
    float temperature = 0.f;
    if ((st = get_count(L, "nextn_predict_layers", 0, &n_nextn)) != SPROUT_OK ||
        (st = get_float(L, "attention.temperature_scale", 0.f, ANY_FINITE, &temperature)) != SPROUT_OK)
        return st;
    if (n_nextn >= hp->n_layer)
        return sp_fail(SPROUT_ERR_FORMAT, "%s.nextn_predict_layers = %d leaves none of the %d blocks", L->arch, n_nextn, hp->n_layer);
    hp->n_layer -= n_nextn;
    if (temperature != 0.f)
        return sp_fail(SPROUT_ERR_UNSUPPORTED, "%s with attention.temperature_scale (position-dependent query scaling) is not supported", L->arch);
    if ((st = get_count(L, "attention.q_lora_rank", 0, &hp->n_lora_q)) != SPROUT_OK ||
        (st = get_count(L, "attention.kv_lora_rank", 0, &hp->n_lora_kv)) != SPROUT_OK ||
        (st = get_count(L, "attention.key_length_mla", 0, &hp->head_dim_k_mla)) != SPROUT_OK ||
        (st = get_count(L, "attention.value_length_mla", 0, &hp->head_dim_v_mla)) != SPROUT_OK)
        return st;
    if (hp->n_lora_kv == 0)
        return sp_fail(SPROUT_ERR_FORMAT, "%s.attention.kv_lora_rank is missing or 0: a %s model has a latent KV projection", L->arch, L->arch);
    if ((hp->head_dim_k_mla == 0) != (hp->head_dim_v_mla == 0))
        return sp_fail(SPROUT_ERR_FORMAT, "%s: attention.key_length_mla and value_length_mla come together", L->arch);
    if (hp->head_dim_k_mla == 0) {
        /* an older conversion: the keys say the full heads, attn_kv_b holds
         * k_b and v_b fused; the cache is the latent all the same */
        if (sprout_gguf_find_tensor(L->g, "blk.0.attn_kv_b.weight") < 0)
            return sp_fail(SPROUT_ERR_FORMAT, "%s: no attention.key_length_mla and no attn_kv_b: neither latent attention's layout", L->arch);
        hp->mla_fused_kv_b = true;
        hp->head_dim_k_mla = hp->head_dim_k;
        hp->head_dim_v_mla = hp->head_dim_v;
        hp->head_dim_k = hp->n_lora_kv + hp->n_rot;
        hp->head_dim_v = hp->n_lora_kv;
        hp->n_head_kv = 1;
    }
    if (hp->n_head_kv != 1 || hp->head_dim_k != hp->n_lora_kv + hp->n_rot || hp->head_dim_v != hp->n_lora_kv)
        return sp_fail(SPROUT_ERR_FORMAT, "%s: head_count_kv %d, key_length %d, value_length %d; latent attention needs 1, "
                                          "kv_lora_rank + rope.dimension_count = %d, kv_lora_rank = %d", L->arch, hp->n_head_kv,
                       hp->head_dim_k, hp->head_dim_v, hp->n_lora_kv + hp->n_rot, hp->n_lora_kv);
    if (hp->n_rot <= 0 || hp->n_rot >= hp->head_dim_k_mla)
        return sp_fail(SPROUT_ERR_FORMAT, "%s: rope.dimension_count %d must leave part of the %d-wide query heads (key_length_mla) unrotated",
                       L->arch, hp->n_rot, hp->head_dim_k_mla);
    float log_mul = 0.f;
    if ((st = get_float(L, "rope.scaling.yarn_log_multiplier", 0.f, ANY_FINITE, &log_mul)) != SPROUT_OK) return st;
    /* llama.cpp: with a multiplier, YaRN's factor on the rotated parts is
     * cancelled (its attn_factor / (1 + 0.1 ln s)); the scores' scale is
     * then mscale^2 / sqrt(key_length_mla), mscale = attn_factor (1 + 0.1 ln s)
     * (1 + multiplier ln s) (the file's multiplier is 0.1 times the model's) */
    const float ln_s = logf(1.f / hp->rope_freq_scale);
    if (hp->yarn_ext_factor != 0.f && log_mul != 0.f) hp->rope_attn_factor /= 1.f + 0.1f * ln_s;
    const float mscale = hp->rope_attn_factor * (1.f + 0.1f * ln_s) * (1.f + log_mul * ln_s);
    hp->attn_scale = mscale * mscale / sqrtf((float)hp->head_dim_k_mla);
    return load_deepseek_moe(L);
}

static sprout_status load_hparams(loader *L, const arch_traits *at) {
    sp_hparams *hp = &L->m->hp;
    const sprout_gguf *g = L->g;
    int64_t v;
    sprout_status st;
    hp->arch = at->arch;
    hp->arch_name = at->name;
#define INT(field, suffix, required, fallback)                                                        \
    do {                                                                                              \
        if ((st = get_int(L, suffix, required, fallback, &v)) != SPROUT_OK) return st;                \
        if (v < 0 || v > (1 << 24)) return sp_fail(SPROUT_ERR_FORMAT, "%s.%s = %lld is out of range", L->arch, suffix, (long long)v); \
        hp->field = (int32_t)v;                                                                       \
    } while (0)
    INT(n_embd, "embedding_length", true, 0);
    INT(n_layer, "block_count", true, 0);
    INT(n_ff, "feed_forward_length", true, 0);
    INT(n_head, "attention.head_count", true, 0);
    INT(n_head_kv, "attention.head_count_kv", false, hp->n_head);
    INT(n_ctx_train, "context_length", false, 2048);
    if (hp->n_embd <= 0 || hp->n_layer <= 0 || hp->n_head <= 0 || hp->n_head_kv <= 0 || hp->n_ff <= 0)
        return sp_fail(SPROUT_ERR_FORMAT, "%s: embedding, layer, head and FFN sizes must be positive", L->arch);
    if (hp->n_head % hp->n_head_kv != 0)
        return sp_fail(SPROUT_ERR_FORMAT, "%s: %d heads cannot share %d KV heads", L->arch, hp->n_head, hp->n_head_kv);
    INT(head_dim_k, "attention.key_length", false, hp->n_embd / hp->n_head);
    INT(head_dim_v, "attention.value_length", false, hp->head_dim_k);
    INT(n_rot, "rope.dimension_count", false, hp->head_dim_k);
    if (hp->head_dim_k <= 0 || hp->head_dim_v <= 0 || hp->n_rot > hp->head_dim_k || hp->n_rot % 2 != 0)
        return sp_fail(SPROUT_ERR_FORMAT, "%s: head size %d / rotary dimensions %d do not fit", L->arch, hp->head_dim_k, hp->n_rot);
    INT(sliding_window, "attention.sliding_window", false, 0);
    INT(n_expert, "expert_count", false, 0);
    INT(n_expert_used, "expert_used_count", false, 0);
    if ((st = check_experts(L, at)) != SPROUT_OK) return st;
    INT(n_ff_exp, "expert_feed_forward_length", false, at->ff_exp_from_used && hp->n_expert_used > 0 ? hp->n_ff / hp->n_expert_used : hp->n_ff);
    INT(n_ff_shexp, "expert_shared_feed_forward_length", false, hp->n_ff);
    if (hp->n_expert > 0 && (hp->n_ff_exp <= 0 || hp->n_ff_shexp <= 0))
        return sp_fail(SPROUT_ERR_FORMAT, "%s: the experts' FFN widths must be positive (%s.expert_feed_forward_length)", L->arch, L->arch);
    hp->expert_weights_norm = at->moe_norm_w;
    hp->expert_weights_scale = 1.f;
    hp->qk_norm_whole = at->qk_norm_whole;
    hp->qk_norm_each_head = at->qk_norm_each_head;
    hp->expert_gating = at->gating;
    if (at->sinks_and_biases) { /* keys llama.cpp requires of gpt-oss */
        INT(n_ff_exp, "expert_feed_forward_length", true, 0);
        INT(sliding_window, "attention.sliding_window", true, 0);
        if (hp->sliding_window <= 0) return sp_fail(SPROUT_ERR_FORMAT, "%s.attention.sliding_window must be positive", L->arch);
    }
#undef INT
    hp->rope_kind = at->rope;
    if ((st = get_float(L, "rope.freq_base", 10000.f, POSITIVE, &hp->rope_base)) != SPROUT_OK) return st;
    if ((st = get_float(L, "rope.freq_base_swa", at->swa_base_in_file ? hp->rope_base : 10000.f, POSITIVE, &hp->rope_base_swa)) != SPROUT_OK)
        return st;
    hp->rope_freq_scale = 1.f;
    if ((st = get_float(L, "rope.scaling.attn_factor", 1.f, ANY_FINITE, &hp->rope_attn_factor)) != SPROUT_OK) return st;
    if ((st = get_float(L, "rope.scaling.yarn_beta_fast", 32.f, ANY_FINITE, &hp->yarn_beta_fast)) != SPROUT_OK) return st;
    if ((st = get_float(L, "rope.scaling.yarn_beta_slow", 1.f, ANY_FINITE, &hp->yarn_beta_slow)) != SPROUT_OK) return st;
    if ((st = get_int(L, "rope.scaling.original_context_length", false, hp->n_ctx_train, &v)) != SPROUT_OK) return st;
    hp->rope_ctx_orig = (int32_t)v;
    /* as llama.cpp reads them: the factor (rope.scaling.factor, else the
     * older rope.scale_linear; absent or 0: none) divides the frequencies
     * whatever the type, which is linear when absent; YaRN adds its ramp */
    float factor;
    if ((st = get_float(L, "rope.scaling.factor", 0.f, NON_NEGATIVE, &factor)) != SPROUT_OK) return st;
    if (factor == 0.f && (st = get_float(L, "rope.scale_linear", 0.f, NON_NEGATIVE, &factor)) != SPROUT_OK) return st;
    if (factor > 0.f) hp->rope_freq_scale = 1.f / factor;
    hp->rope_scaling = hp->rope_freq_scale != 1.f ? SP_ROPE_SCALING_LINEAR : SP_ROPE_SCALING_NONE;
    char key[160];
    const char *stype = NULL;
    size_t stype_len = 0;
    arch_key(L, "rope.scaling.type", key, sizeof key);
    if (sprout_gguf_get_str(g, key, &stype, &stype_len) == SPROUT_OK) {
        if (stype_len == 4 && !memcmp(stype, "yarn", 4)) {
            hp->rope_scaling = SP_ROPE_SCALING_YARN;
            hp->yarn_ext_factor = 1.f;
        } else if (!(stype_len == 6 && !memcmp(stype, "linear", 6)) && !(stype_len == 4 && !memcmp(stype, "none", 4)))
            return sp_fail(SPROUT_ERR_UNSUPPORTED, "%s: RoPE scaling '%.*s' is not supported", L->arch, (int)stype_len, stype);
    }
    hp->norm_kind = at->norm;
    const char *eps_key = at->norm == SP_NORM_RMS ? "attention.layer_norm_rms_epsilon" : "attention.layer_norm_epsilon";
    if ((st = get_float(L, eps_key, 1e-5f, NON_NEGATIVE, &hp->norm_eps)) != SPROUT_OK) return st;
    hp->ffn_kind = at->ffn;
    if ((st = load_scales(L, at)) != SPROUT_OK) return st;
    if ((st = get_float(L, "attn_logit_softcapping", 0.f, NON_NEGATIVE, &hp->attn_softcap)) != SPROUT_OK) return st;
    if ((st = get_float(L, "final_logit_softcapping", 0.f, NON_NEGATIVE, &hp->final_softcap)) != SPROUT_OK) return st;
    int64_t pooling;
    if ((st = get_int(L, "pooling_type", false, 0, &pooling)) != SPROUT_OK) return st;
    hp->pooling = pooling >= 1 && pooling <= 3 ? (int32_t)pooling : 0; /* others (rank) need heads sprout does not run */
    hp->post_norm = at->encoder;
    hp->no_pre_norm = at->no_pre_norm;
    hp->causal = !at->encoder;
    bool causal = hp->causal;
    char causal_key[160];
    arch_key(L, "attention.causal", causal_key, sizeof causal_key);
    if (sprout_gguf_find(g, causal_key) && sprout_gguf_get_bool(g, causal_key, &causal) != SPROUT_OK)
        return sp_fail(SPROUT_ERR_FORMAT, "key '%s' must be a boolean", causal_key);
    if (causal != hp->causal)
        return sp_fail(SPROUT_ERR_UNSUPPORTED, "%s with %s attention is not supported", L->arch, causal ? "causal" : "bidirectional");
    hp->parallel_block = at->may_be_parallel && find_tensor(L, "blk.0.ffn_norm.weight") < 0;
    hp->fused_gate_up = find_tensor(L, "blk.0.ffn_gate.weight") < 0 && at->ffn != SP_FFN_GELU && hp->n_expert == 0;
    if (at->mla && (st = load_deepseek2(L)) != SPROUT_OK) return st;
    return check_unsupported(L, at);
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

sprout_status sp_model_build(sprout_gguf *g, const sprout_model_params *params, sprout_model **out) {
    *out = NULL;
    const char *arch_name;
    size_t arch_len;
    sprout_status st = sprout_gguf_get_str(g, "general.architecture", &arch_name, &arch_len);
    if (st != SPROUT_OK) return sp_fail(SPROUT_ERR_FORMAT, "general.architecture is missing: not a model file");
    const arch_traits *at = find_arch(arch_name, arch_len);
    if (!at)
        return sp_fail(SPROUT_ERR_UNSUPPORTED, "architecture '%.*s' is not supported (sprout runs llama (and Mixtral), qwen2, qwen3, phi3, "
                                               "gemma, gemma2, gemma3, phi2, stablelm, falcon, qwen2moe, qwen3moe, olmoe, granite, "
                                               "granitemoe, olmo2, starcoder2, command-r, glm4, deepseek2, gpt-oss, and bert and "
                                               "nomic-bert for embeddings)",
                       (int)(arch_len > 64 ? 64 : arch_len), arch_name);
    sprout_model *m = calloc(1, sizeof *m);
    if (!m) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
    loader L = {.m = m, .g = g, .arch = at->name, .at = at};
    if ((st = load_hparams(&L, at)) != SPROUT_OK) goto fail;
    sp_hparams *hp = &m->hp;

    /* room for the small vectors that must be decoded (norms, biases) */
    const int64_t expert_biases = at->sinks_and_biases ? (int64_t)hp->n_expert * (2 * hp->n_ff_exp + hp->n_embd + 1) : 0;
    size_t room = (size_t)hp->n_layer * (size_t)(16 * hp->n_embd + 4 * (hp->n_head + hp->n_head_kv) * hp->head_dim_k + 4 * hp->n_ff +
                                                 expert_biases) +
                  (size_t)(8 * hp->n_embd) + 4096;
    m->decoded = malloc(room * sizeof(float));
    m->layers = calloc((size_t)hp->n_layer, sizeof *m->layers);
    if (!m->decoded || !m->layers) {
        st = sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
        goto fail;
    }
    L.decoded = m->decoded;
    L.decoded_left = room;

    int64_t emb = find_tensor(&L, "token_embd.weight");
    if (emb < 0) {
        st = sp_fail(SPROUT_ERR_FORMAT, "tensor 'token_embd.weight' is missing");
        goto fail;
    }
    hp->n_vocab = (int32_t)sprout_gguf_tensor_dim(g, emb, 1);
    if ((st = bind_weight(&L, "token_embd.weight", hp->n_embd, hp->n_vocab, true, &m->tok_embd)) != SPROUT_OK) goto fail;
    if ((st = bind_vec(&L, "output_norm.weight", hp->n_embd, !at->encoder, &m->output_norm)) != SPROUT_OK) goto fail;
    if ((st = bind_vec(&L, "output_norm.bias", hp->n_embd, false, &m->output_norm_b)) != SPROUT_OK) goto fail;
    if (at->encoder) { /* no head: m->output stays empty */
        /* learned positions, unless RoPE gives them (nomic-bert) */
        const bool learned = at->rope == SP_ROPE_NONE;
        if ((st = bind_weight(&L, "position_embd.weight", hp->n_embd, hp->n_ctx_train, learned, &m->pos_embd)) != SPROUT_OK) goto fail;
        int64_t types = find_tensor(&L, "token_types.weight");
        if (types >= 0 && sprout_gguf_tensor_dim(g, types, 1) < 1) {
            st = sp_fail(SPROUT_ERR_FORMAT, "tensor 'token_types.weight' has no rows");
            goto fail;
        }
        if (types >= 0 &&
            (st = bind_weight(&L, "token_types.weight", hp->n_embd, sprout_gguf_tensor_dim(g, types, 1), true, &m->type_embd)) != SPROUT_OK)
            goto fail;
        if ((st = bind_vec(&L, "token_embd_norm.weight", hp->n_embd, false, &m->embd_norm)) != SPROUT_OK) goto fail;
        if ((st = bind_vec(&L, "token_embd_norm.bias", hp->n_embd, false, &m->embd_norm_b)) != SPROUT_OK) goto fail;
    } else if (at->always_tied || find_tensor(&L, "output.weight") < 0) m->output = m->tok_embd;
    else if ((st = bind_weight(&L, "output.weight", hp->n_embd, hp->n_vocab, true, &m->output)) != SPROUT_OK) goto fail;
    if ((st = bind_vec(&L, "output.bias", hp->n_vocab, false, &m->output_b)) != SPROUT_OK) goto fail;
    /* Llama 3 stores its RoPE scaling as per-dimension divisors; Phi-3
     * long-context models store two sets, long used past the original length */
    const char *factors = "rope_freqs.weight";
    if (find_tensor(&L, "rope_factors_long.weight") >= 0) {
        int32_t n_ctx = params && params->n_ctx > 0 ? params->n_ctx : hp->n_ctx_train;
        factors = n_ctx > hp->rope_ctx_orig ? "rope_factors_long.weight" : "rope_factors_short.weight";
    }
    if ((st = bind_vec(&L, factors, hp->n_rot / 2, false, &m->rope_factors)) != SPROUT_OK) goto fail;

    int swa_pattern = at->swa_pattern;
    if (at->swa_pattern_in_file) {
        int64_t pattern;
        if ((st = get_int(&L, "attention.sliding_window_pattern", false, at->swa_pattern, &pattern)) != SPROUT_OK) goto fail;
        if (pattern < 0 || pattern > 1 << 16) {
            st = sp_fail(SPROUT_ERR_FORMAT, "%s.attention.sliding_window_pattern = %lld is out of range", at->name, (long long)pattern);
            goto fail;
        }
        swa_pattern = (int)pattern;
    }
    for (int il = 0; il < hp->n_layer; il++) {
        sp_layer *ly = &m->layers[il];
        if ((st = bind_layer(&L, il, ly)) != SPROUT_OK) goto fail;
        /* a pattern of 0 in the file: every layer local, as llama.cpp reads it */
        ly->sliding = hp->sliding_window > 0 && (at->swa_all_layers || (swa_pattern > 0 && il % swa_pattern < swa_pattern - 1) ||
                                                 (at->swa_pattern_in_file && swa_pattern == 0));
        const bool own_rope = (at->swa_own_rope || at->swa_base_in_file) && ly->sliding,
                   unscaled = (at->swa_own_rope || at->swa_unscaled_rope) && ly->sliding;
        ly->rope_base = own_rope ? hp->rope_base_swa : hp->rope_base;
        ly->rope_freq_scale = unscaled ? 1.f : hp->rope_freq_scale;
    }
    m->gguf = g;
    *out = m;
    return SPROUT_OK;
fail:
    free(m->decoded);
    free(m->layers);
    free(m);
    return st;
}

/* --- the weights by index -------------------------------------------------------------- */

static const char *const layer_weight_names[SP_LAYER_WEIGHTS] = {
    "attn_q",   "attn_k",       "attn_v",         "attn_qkv",       "attn_output",    "ffn_gate",          "ffn_up",
    "ffn_down", "ffn_gate_inp", "ffn_gate_shexp", "ffn_up_shexp",   "ffn_down_shexp", "ffn_gate_inp_shexp"};

const sp_weight *sp_model_weight(const sprout_model *m, int64_t i) {
    if (i == 0) return &m->output;
    const int64_t il = (i - 1) / SP_LAYER_WEIGHTS;
    if (i < 0 || il >= m->hp.n_layer) return NULL;
    const sp_layer *ly = &m->layers[il];
    const sp_weight *const ws[SP_LAYER_WEIGHTS] = {&ly->wq,     &ly->wk,         &ly->wv,       &ly->wqkv,        &ly->wo,
                                                   &ly->w_gate, &ly->w_up,       &ly->w_down,   &ly->router,      &ly->gate_shexp,
                                                   &ly->up_shexp, &ly->down_shexp, &ly->gate_inp_shexp};
    return ws[(i - 1) % SP_LAYER_WEIGHTS];
}

int64_t sp_model_weight_count(const sprout_model *m) { return 1 + (int64_t)SP_LAYER_WEIGHTS * m->hp.n_layer; }

int64_t sp_model_weight_index(const sprout_model *m, const sp_weight *w) {
    if (w == &m->output) return 0;
    const uintptr_t at = (uintptr_t)w, begin = (uintptr_t)m->layers, end = (uintptr_t)(m->layers + m->hp.n_layer);
    if (at < begin || at >= end) return -1;
    const int64_t il = (int64_t)((at - begin) / sizeof(sp_layer));
    for (int64_t k = 0; k < SP_LAYER_WEIGHTS; k++)
        if (sp_model_weight(m, 1 + il * SP_LAYER_WEIGHTS + k) == w) return 1 + il * SP_LAYER_WEIGHTS + k;
    return -1;
}

void sp_model_weight_name(int64_t i, char *buf, size_t cap) {
    if (i == 0) snprintf(buf, cap, "output.weight");
    else snprintf(buf, cap, "blk.%lld.%s.weight", (long long)((i - 1) / SP_LAYER_WEIGHTS), layer_weight_names[(i - 1) % SP_LAYER_WEIGHTS]);
}

/* --- the public model API ---------------------------------------------------------------- */

sprout_status sprout_model_load(const char *path, const sprout_model_params *params, sprout_model **out) {
    if (!out) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "NULL output pointer");
    *out = NULL;
    if (params && params->n_threads > SPROUT_MAX_THREADS)
        return sp_fail(SPROUT_ERR_OUT_OF_RANGE, "%d threads: a thread pool holds 1 to %d", params->n_threads, SPROUT_MAX_THREADS);
    const double t0 = now_ms();
    sprout_gguf *g = NULL;
    sprout_status st = sprout_gguf_open(path, &g);
    if (st != SPROUT_OK) return st;
    /* every page is read now, under a guard: a file truncated after it was
     * opened fails here instead of killing a later generation */
    if ((st = sp_gguf_fault_in(g)) != SPROUT_OK) {
        sprout_gguf_close(g);
        return st;
    }
    sprout_model *m = NULL;
    if ((st = sp_model_build(g, params, &m)) != SPROUT_OK) {
        sp_error_prefix("%s", path);
        sprout_gguf_close(g);
        return st;
    }
    st = sprout_tokenizer_create(g, &m->tokenizer);
    if (st == SPROUT_ERR_NOT_FOUND) st = SPROUT_OK; /* token ids in, token ids out */
    if (st != SPROUT_OK) {
        sprout_model_free(m);
        return st;
    }
    if (m->tokenizer && sprout_tokenizer_vocab_size(m->tokenizer) > m->hp.n_vocab) {
        sprout_model_free(m);
        return sp_fail(SPROUT_ERR_FORMAT, "%s: the vocabulary has more tokens than the embedding rows", path);
    }
    sprout_model_params defaults = {.struct_size = sizeof defaults};
    if (params) memcpy(&defaults, params, sp_versioned_bytes(params->struct_size, sizeof defaults));
    if (defaults.n_threads <= 0) defaults.n_threads = sp_cpu_count();
    if (defaults.n_ctx <= 0) defaults.n_ctx = m->hp.n_ctx_train < 4096 ? m->hp.n_ctx_train : 4096;
    m->params = defaults;
    m->load_ms = now_ms() - t0;
    *out = m;
    return SPROUT_OK;
}

void sprout_model_free(sprout_model *m) {
    if (!m) return;
    sp_grammar_cache_free(atomic_load(&m->grammar_cache));
    sp_grammar_vocab_free(atomic_load(&m->grammar_vocab));
    sprout_tokenizer_free(m->tokenizer);
    sprout_gguf_close(m->gguf);
    free(m->decoded);
    free(m->layers);
    free(m);
}

const sprout_tokenizer *sprout_model_tokenizer(const sprout_model *m) { return m ? m->tokenizer : NULL; }
const sprout_gguf *sprout_model_gguf(const sprout_model *m) { return m ? m->gguf : NULL; }
const char *sprout_model_architecture(const sprout_model *m) { return m ? m->hp.arch_name : ""; }
int32_t sprout_model_n_ctx_train(const sprout_model *m) { return m ? m->hp.n_ctx_train : 0; }
int32_t sprout_model_n_vocab(const sprout_model *m) { return m ? m->hp.n_vocab : 0; }
int32_t sprout_model_n_embd(const sprout_model *m) { return m ? m->hp.n_embd : 0; }
bool sprout_model_generates(const sprout_model *m) { return m && m->output.data; }
double sprout_model_load_ms(const sprout_model *m) { return m ? m->load_ms : 0; }
