/* Writes a tiny random-weight model of one of the architectures sprout
 * took on with its mixtures of experts (the MoE ones and the dense ones of
 * the same issue), with the vocabulary of ../shared/models/stories260K.gguf,
 * for the tests (test_moe) and their llama.cpp references
 * (tests/data/moe/README.md, tests/data/arch_more/README.md). The same
 * arguments give the same bytes.
 *
 * usage: make_moe ARCH TYPE OUT.gguf [SEED] [--set KEY=N]... [--unset KEY]... [--shape TENSOR=D0,D1[,D2]]... [--drop TENSOR]...
 *   ARCH: mixtral (general.architecture llama with experts), qwen2moe,
 *         qwen3moe, olmoe, granitemoe, gpt-oss; dense: granite, olmo2,
 *         starcoder2, command-r, command-r-64 (64 layers, per-head q/k
 *         norms), glm4; deepseek2 (latent attention, V2-Lite's plain
 *         attn_q, softmax routing), deepseek3 (deepseek2 with q_lora_rank,
 *         sigmoid routing with a selection bias and expert groups, YaRN),
 *         deepseek2-kvb (deepseek2 as older conversions wrote it: attn_kv_b)
 *   TYPE: F32, F16 or a block type (Q8_0 ...) for every matrix, or
 *         MXFP4_MOE (llama-quantize's recipe: the 3-D expert tensors
 *         MXFP4, every other matrix Q8_0)
 *   --set KEY=N      writes <arch>.KEY = N (uint32) over what the preset says
 *   --unset KEY      leaves <arch>.KEY out
 *   --shape T=...    writes tensor T with that shape (random data)
 *   --drop T         leaves tensor T out
 * (the last four make the broken files of the tests' hostile cases)
 *
 * Shapes (as ../shared/arch): n_embd 256, 4 heads of 64, 2 KV heads (olmoe
 * 4: its K norm spans n_embd), 2 layers, context 512. Weights N(0, s²):
 * embeddings and output 0.25, q/k 1.5/sqrt(n_in), v, attn_output and every
 * down projection 1/sqrt(n_in), gate/up 1/sqrt(n_embd), the router
 * 4/sqrt(n_embd) (its logits spread by about 4, so the top-k choice is
 * clear of rounding), norm weights 1 + 0.1 N(0, 1), biases 0.1. gpt-oss:
 * attention sinks N(0, 1), the router's bias 0.5, and its experts' gate
 * and up 3/sqrt(n_embd), so that some of their outputs pass the clamps of
 * its SwiGLU (7); YaRN (factor 4 over 128 positions) and a window of 8
 * on layer 0. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "gguf/gguf_writer.h"
#include "random.h"
#include "sprout.h"

/* What a preset's file holds beyond llama's block (each flag adds tensors
 * after those of the presets before it, so older presets keep their bytes). */
enum {
    EXP_FF_KEY = 1 << 0,     /* writes expert_feed_forward_length */
    QKV_BIAS = 1 << 1,
    QK_NORM_HEAD = 1 << 2,
    QK_NORM_WHOLE = 1 << 3,
    SHARED = 1 << 4,         /* qwen2moe's gated shared expert */
    LAYER_NORM = 1 << 5,     /* LayerNorm (its epsilon key) in place of RMS */
    NORM_BIAS = 1 << 6,      /* the LayerNorms' biases */
    NO_PRE_NORM = 1 << 7,    /* neither attn_norm nor ffn_norm (olmo2) */
    PARALLEL = 1 << 8,       /* no ffn_norm: the FFN reads the attention's input (command-r) */
    POST_NORMS = 1 << 9,     /* post_attention_norm and post_ffw_norm */
    OUT_BIAS = 1 << 10,      /* attn_output.bias */
    FFN_BIAS = 1 << 11,      /* ffn_up.bias, ffn_down.bias */
    GELU_FFN = 1 << 12,      /* up and down only */
    FUSED_GATE_UP = 1 << 13, /* ffn_up has rows [gate | up] */
    TIED = 1 << 14,          /* no output.weight */
    QK_NORM_EACH_HEAD = 1 << 15, /* q/k norms [head size, heads]: each head its own weights (command-r) */
    ATTN_SINKS = 1 << 16,    /* attn_sinks [heads] (gpt-oss) */
    EXPERT_BIAS = 1 << 17,   /* ffn_gate_inp.bias and each expert's biases ffn_{gate,up,down}_exps.bias */
    FFN_NORM_POST_ATTN = 1 << 18, /* the FFN's norm is named post_attention_norm (gpt-oss) */
    YARN_SWA = 1 << 19,      /* YaRN RoPE scaling keys and attention.sliding_window */
    MLA = 1 << 20,           /* deepseek2's latent attention, leading dense layer, ungated shared experts (moe_preset.mla) */
};

/* deepseek2's latent attention and routing (written where not 0), for the
 * preset of the same name. */
typedef struct mla_preset {
    const char *name;
    int q_lora, kv_lora, nope, rope, v_dim; /* q_lora 0: attn_q (V2-Lite) */
    int n_shared, dense_lead, groups, groups_used, gating; /* gating 2: sigmoid, with exp_probs_b */
    float weights_scale;
    int weights_norm;
    float yarn_factor, yarn_log_mul; /* yarn_factor 0: no RoPE scaling */
    int fused_kv_b;          /* an older conversion: attn_kv_b, the full heads' key and value lengths, no _mla keys */
} mla_preset;

typedef struct moe_preset {
    const char *name, *arch; /* the name on the command line; general.architecture */
    int n_head_kv, n_ff, n_expert, n_used, n_ff_exp, n_ff_shexp, n_rot; /* n_expert 0: dense; n_rot 0: the head size */
    int n_layer;             /* 0: N_LAYER */
    unsigned flags;
    float eps;
    float embd_scale, residual_scale, logit_scale, attn_scale; /* written where not 0 */
} moe_preset;

static const moe_preset presets[] = {
    {"mixtral", "llama", 2, 128, 4, 2, 128, 0, 0, 0, 0, 1e-5f, 0, 0, 0, 0},
    {"qwen2moe", "qwen2moe", 2, 384, 8, 2, 128, 256, 0, 0, EXP_FF_KEY | QKV_BIAS | SHARED, 1e-6f, 0, 0, 0, 0},
    {"qwen3moe", "qwen3moe", 2, 384, 8, 2, 128, 0, 0, 0, EXP_FF_KEY | QK_NORM_HEAD, 1e-6f, 0, 0, 0, 0},
    {"olmoe", "olmoe", 4, 128, 8, 2, 128, 0, 0, 0, QK_NORM_WHOLE, 1e-5f, 0, 0, 0, 0},
    /* granite's scales as Granite 3 has them, but attention.scale (1/32, not the default 1/8) */
    {"granite", "granite", 2, 384, 0, 0, 0, 0, 0, 0, 0, 1e-5f, 12.f, 0.22f, 8.f, 0.03125f},
    {"granitemoe", "granitemoe", 2, 128, 8, 2, 128, 0, 0, 0, 0, 1e-6f, 12.f, 0.22f, 8.f, 0.03125f},
    {"olmo2", "olmo2", 2, 384, 0, 0, 0, 0, 0, 0, NO_PRE_NORM | POST_NORMS | QK_NORM_WHOLE, 1e-6f, 0, 0, 0, 0},
    {"starcoder2", "starcoder2", 2, 512, 0, 0, 0, 0, 0, 0, LAYER_NORM | NORM_BIAS | QKV_BIAS | OUT_BIAS | FFN_BIAS | GELU_FFN, 1e-5f, 0, 0, 0, 0},
    {"command-r", "command-r", 2, 384, 0, 0, 0, 0, 0, 0, LAYER_NORM | PARALLEL | TIED, 1e-5f, 0, 0, 0.25f, 0},
    /* llama.cpp reads command-r's per-head q/k norms (each head its own weights) from 64 layers on */
    {"command-r-64", "command-r", 2, 384, 0, 0, 0, 0, 0, 64, LAYER_NORM | PARALLEL | TIED | QK_NORM_EACH_HEAD, 1e-5f, 0, 0, 0.25f, 0},
    {"glm4", "glm4", 2, 384, 0, 0, 0, 0, 32, 0, QKV_BIAS | POST_NORMS | FUSED_GATE_UP, 1e-5f, 0, 0, 0, 0},
    {"gpt-oss", "gpt-oss", 2, 128, 8, 4, 128, 0, 0, 0,
     EXP_FF_KEY | QKV_BIAS | OUT_BIAS | ATTN_SINKS | EXPERT_BIAS | FFN_NORM_POST_ATTN | YARN_SWA, 1e-5f, 0, 0, 0, 0},
    {"deepseek2", "deepseek2", 1, 384, 8, 2, 128, 0, 32, 0, MLA, 1e-6f, 0, 0, 0, 0},
    {"deepseek3", "deepseek2", 1, 384, 16, 4, 64, 0, 32, 0, MLA, 1e-6f, 0, 0, 0, 0},
    {"deepseek2-kvb", "deepseek2", 4, 384, 8, 2, 128, 0, 32, 0, MLA, 1e-6f, 0, 0, 0, 0}, /* head_count_kv: the heads, as then */
};

/* latent 128, heads of 64 + 32 (RoPE) for q/k and 64 for v; layer 0 dense */
static const mla_preset mla_presets[] = {
    {.name = "deepseek2", .kv_lora = 128, .nope = 64, .rope = 32, .v_dim = 64, .n_shared = 2, .dense_lead = 1, .gating = 1},
    {.name = "deepseek3", .q_lora = 128, .kv_lora = 128, .nope = 64, .rope = 32, .v_dim = 64, .n_shared = 1, .dense_lead = 1,
     .groups = 4, .groups_used = 2, .gating = 2, .weights_scale = 2.5f, .weights_norm = 1, .yarn_factor = 4.f, .yarn_log_mul = 0.1f},
    {.name = "deepseek2-kvb", .kv_lora = 128, .nope = 64, .rope = 32, .v_dim = 64, .n_shared = 2, .dense_lead = 1, .gating = 1, .fused_kv_b = 1},
};

static const mla_preset *mla_of(const moe_preset *p) {
    for (size_t i = 0; i < sizeof mla_presets / sizeof mla_presets[0]; i++)
        if (!strcmp(mla_presets[i].name, p->name)) return &mla_presets[i];
    return NULL;
}

enum { N_EMBD = 256, N_HEAD = 4, HEAD_DIM = 64, N_LAYER = 2, N_CTX = 512, MAX_TENSORS = 1024 };

typedef struct tensor_spec {
    char name[64];
    int64_t ne[3];
    int n_dims;
    sprout_type type;
    float std; /* < 0: a norm weight, 1 + 0.1 N(0, 1) */
} tensor_spec;

typedef struct gen {
    tensor_spec specs[MAX_TENSORS];
    int n;
    uint64_t seed;
    bool mxfp4_experts; /* MXFP4_MOE: the 3-D tensors MXFP4 */
    float buf[4096];
} gen;

static sprout_status fill(void *user, int64_t index, void *dst, uint64_t bytes) {
    gen *g = user;
    const tensor_spec *t = &g->specs[index];
    uint64_t s = g->seed * 0x9E3779B97F4A7C15ull + (uint64_t)index * 7919 + 1;
    int64_t rows = 1;
    for (int d = 1; d < t->n_dims; d++) rows *= t->ne[d];
    const size_t row_bytes = (size_t)(bytes / (uint64_t)rows);
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t i = 0; i < t->ne[0]; i++) g->buf[i] = t->std < 0 ? 1.f + 0.1f * rng_normal(&s) : t->std * rng_normal(&s);
        sprout_status st = sprout_quantize(t->type, g->buf, (char *)dst + (size_t)r * row_bytes, t->ne[0]);
        if (st != SPROUT_OK) return st;
    }
    return SPROUT_OK;
}

static void add(gen *g, sprout_type type, const char *name, int n_dims, int64_t d0, int64_t d1, int64_t d2, float std) {
    tensor_spec *t = &g->specs[g->n++];
    snprintf(t->name, sizeof t->name, "%s", name);
    t->ne[0] = d0;
    t->ne[1] = d1;
    t->ne[2] = d2;
    t->n_dims = n_dims;
    t->std = std;
    t->type = n_dims == 1 || std < 0 ? SPROUT_TYPE_F32 : n_dims == 3 && g->mxfp4_experts ? SPROUT_TYPE_MXFP4 : type; /* vectors and norms in F32 */
}

/* A bias of each expert: rows of d0, F32 whatever the matrices are. */
static void add_expert_bias(gen *g, const char *name, int64_t d0, int64_t n_expert) {
    add(g, SPROUT_TYPE_F32, name, 2, d0, n_expert, 1, 0.1f);
}

static void add_ffn(gen *g, const moe_preset *p, sprout_type type, int l) {
    const int64_t e = N_EMBD, f = p->n_ff_exp, x = p->n_expert, ff = p->n_ff;
    const float s_e = 1.f / sqrtf((float)e);
    char name[64];
#define L(s) (snprintf(name, sizeof name, "blk.%d.%s", l, s), name)
    if (x == 0) {
        if (!(p->flags & (GELU_FFN | FUSED_GATE_UP))) add(g, type, L("ffn_gate.weight"), 2, e, ff, 1, s_e);
        add(g, type, L("ffn_up.weight"), 2, e, p->flags & FUSED_GATE_UP ? 2 * ff : ff, 1, s_e);
        if (p->flags & FFN_BIAS) add(g, type, L("ffn_up.bias"), 1, ff, 1, 1, 0.1f);
        add(g, type, L("ffn_down.weight"), 2, ff, e, 1, 1.f / sqrtf((float)ff));
        if (p->flags & FFN_BIAS) add(g, type, L("ffn_down.bias"), 1, e, 1, 1, 0.1f);
        return;
    }
    const float s_gate_up = p->flags & EXPERT_BIAS ? 3.f * s_e : s_e;
    add(g, type, L("ffn_gate_inp.weight"), 2, e, x, 1, 4.f * s_e);
    add(g, type, L("ffn_gate_exps.weight"), 3, e, f, x, s_gate_up);
    add(g, type, L("ffn_up_exps.weight"), 3, e, f, x, s_gate_up);
    add(g, type, L("ffn_down_exps.weight"), 3, f, e, x, 1.f / sqrtf((float)f));
    if (p->flags & EXPERT_BIAS) {
        add(g, type, L("ffn_gate_inp.bias"), 1, x, 1, 1, 0.5f);
        add_expert_bias(g, L("ffn_gate_exps.bias"), f, x);
        add_expert_bias(g, L("ffn_up_exps.bias"), f, x);
        add_expert_bias(g, L("ffn_down_exps.bias"), e, x);
    }
    if (p->flags & SHARED) {
        add(g, type, L("ffn_gate_inp_shexp.weight"), 1, e, 1, 1, s_e);
        add(g, type, L("ffn_gate_shexp.weight"), 2, e, p->n_ff_shexp, 1, s_e);
        add(g, type, L("ffn_up_shexp.weight"), 2, e, p->n_ff_shexp, 1, s_e);
        add(g, type, L("ffn_down_shexp.weight"), 2, p->n_ff_shexp, e, 1, 1.f / sqrtf((float)p->n_ff_shexp));
    }
#undef L
}

/* deepseek2's attention: q (plain or low-rank), the latent and k_pe, each head's k_b and v_b. */
static void add_mla(gen *g, const mla_preset *a, sprout_type type, int l) {
    const int64_t e = N_EMBD, hk = a->nope + a->rope;
    const float s_e = 1.f / sqrtf((float)e);
    char name[64];
#define L(s) (snprintf(name, sizeof name, "blk.%d.%s", l, s), name)
    if (a->q_lora > 0) {
        add(g, type, L("attn_q_a.weight"), 2, e, a->q_lora, 1, s_e);
        add(g, type, L("attn_q_a_norm.weight"), 1, a->q_lora, 1, 1, -1.f);
        add(g, type, L("attn_q_b.weight"), 2, a->q_lora, N_HEAD * hk, 1, 1.5f / sqrtf((float)a->q_lora));
    } else {
        add(g, type, L("attn_q.weight"), 2, e, N_HEAD * hk, 1, 1.5f * s_e);
    }
    add(g, type, L("attn_kv_a_mqa.weight"), 2, e, a->kv_lora + a->rope, 1, 1.5f * s_e);
    add(g, type, L("attn_kv_a_norm.weight"), 1, a->kv_lora, 1, 1, -1.f);
    if (a->fused_kv_b) {
        add(g, type, L("attn_kv_b.weight"), 2, a->kv_lora, N_HEAD * (a->nope + a->v_dim), 1, 1.f / sqrtf((float)a->kv_lora));
    } else {
        add(g, type, L("attn_k_b.weight"), 3, a->nope, a->kv_lora, N_HEAD, 1.f / sqrtf((float)a->nope));
        add(g, type, L("attn_v_b.weight"), 3, a->kv_lora, a->v_dim, N_HEAD, 1.f / sqrtf((float)a->kv_lora));
    }
    add(g, type, L("attn_output.weight"), 2, N_HEAD * a->v_dim, e, 1, 1.f / sqrtf((float)(N_HEAD * a->v_dim)));
#undef L
}

/* deepseek2's FFN: dense in the leading layers, else the experts (with the
 * selection bias under sigmoid gating) and the ungated shared experts. */
static void add_deepseek_ffn(gen *g, const moe_preset *p, sprout_type type, int l) {
    const int64_t e = N_EMBD, f = p->n_ff_exp, x = p->n_expert, fs = (int64_t)p->n_ff_exp * mla_of(p)->n_shared;
    const float s_e = 1.f / sqrtf((float)e);
    char name[64];
#define L(s) (snprintf(name, sizeof name, "blk.%d.%s", l, s), name)
    if (l < mla_of(p)->dense_lead) {
        add(g, type, L("ffn_gate.weight"), 2, e, p->n_ff, 1, s_e);
        add(g, type, L("ffn_up.weight"), 2, e, p->n_ff, 1, s_e);
        add(g, type, L("ffn_down.weight"), 2, p->n_ff, e, 1, 1.f / sqrtf((float)p->n_ff));
        return;
    }
    /* sigmoid gating: logits spread by about 1, where the sigmoid still separates them */
    add(g, type, L("ffn_gate_inp.weight"), 2, e, x, 1, mla_of(p)->gating == 2 ? s_e : 4.f * s_e);
    if (mla_of(p)->gating == 2) add(g, type, L("exp_probs_b.bias"), 1, x, 1, 1, 0.1f);
    add(g, type, L("ffn_gate_exps.weight"), 3, e, f, x, s_e);
    add(g, type, L("ffn_up_exps.weight"), 3, e, f, x, s_e);
    add(g, type, L("ffn_down_exps.weight"), 3, f, e, x, 1.f / sqrtf((float)f));
    add(g, type, L("ffn_gate_shexp.weight"), 2, e, fs, 1, s_e);
    add(g, type, L("ffn_up_shexp.weight"), 2, e, fs, 1, s_e);
    add(g, type, L("ffn_down_shexp.weight"), 2, fs, e, 1, 1.f / sqrtf((float)fs));
#undef L
}

static void add_tensors(gen *g, const moe_preset *p, sprout_type type) {
    const int64_t e = N_EMBD, kv = (int64_t)HEAD_DIM * p->n_head_kv;
    const unsigned fl = p->flags;
    const float s_e = 1.f / sqrtf((float)e);
    add(g, type, "token_embd.weight", 2, e, 512, 1, 0.25f);
    add(g, type, "output_norm.weight", 1, e, 1, 1, -1.f);
    if (fl & NORM_BIAS) add(g, type, "output_norm.bias", 1, e, 1, 1, 0.1f);
    if (!(fl & TIED)) add(g, type, "output.weight", 2, e, 512, 1, 0.25f);
    char name[64];
    for (int l = 0; l < (p->n_layer ? p->n_layer : N_LAYER); l++) {
#define L(s) (snprintf(name, sizeof name, "blk.%d.%s", l, s), name)
        if (fl & MLA) {
            add(g, type, L("attn_norm.weight"), 1, e, 1, 1, -1.f);
            add_mla(g, mla_of(p), type, l);
            add(g, type, L("ffn_norm.weight"), 1, e, 1, 1, -1.f);
            add_deepseek_ffn(g, p, type, l);
            continue;
        }
        if (!(fl & NO_PRE_NORM)) add(g, type, L("attn_norm.weight"), 1, e, 1, 1, -1.f);
        if (fl & NORM_BIAS) add(g, type, L("attn_norm.bias"), 1, e, 1, 1, 0.1f);
        add(g, type, L("attn_q.weight"), 2, e, e, 1, 1.5f * s_e);
        add(g, type, L("attn_k.weight"), 2, e, kv, 1, 1.5f * s_e);
        add(g, type, L("attn_v.weight"), 2, e, kv, 1, s_e);
        if (fl & QKV_BIAS) {
            add(g, type, L("attn_q.bias"), 1, e, 1, 1, 0.1f);
            add(g, type, L("attn_k.bias"), 1, kv, 1, 1, 0.1f);
            add(g, type, L("attn_v.bias"), 1, kv, 1, 1, 0.1f);
        }
        if (fl & (QK_NORM_HEAD | QK_NORM_WHOLE)) {
            add(g, type, L("attn_q_norm.weight"), 1, fl & QK_NORM_WHOLE ? e : HEAD_DIM, 1, 1, -1.f);
            add(g, type, L("attn_k_norm.weight"), 1, fl & QK_NORM_WHOLE ? kv : HEAD_DIM, 1, 1, -1.f);
        }
        if (fl & QK_NORM_EACH_HEAD) {
            add(g, type, L("attn_q_norm.weight"), 2, HEAD_DIM, N_HEAD, 1, -1.f);
            add(g, type, L("attn_k_norm.weight"), 2, HEAD_DIM, p->n_head_kv, 1, -1.f);
        }
        add(g, type, L("attn_output.weight"), 2, e, e, 1, s_e);
        if (fl & OUT_BIAS) add(g, type, L("attn_output.bias"), 1, e, 1, 1, 0.1f);
        if (fl & ATTN_SINKS) add(g, type, L("attn_sinks.weight"), 1, N_HEAD, 1, 1, 1.f);
        if (fl & POST_NORMS) add(g, type, L("post_attention_norm.weight"), 1, e, 1, 1, -1.f);
        if (!(fl & (NO_PRE_NORM | PARALLEL)))
            add(g, type, L(fl & FFN_NORM_POST_ATTN ? "post_attention_norm.weight" : "ffn_norm.weight"), 1, e, 1, 1, -1.f);
        if (fl & NORM_BIAS) add(g, type, L("ffn_norm.bias"), 1, e, 1, 1, 0.1f);
        add_ffn(g, p, type, l);
        if (fl & POST_NORMS) add(g, type, L("post_ffw_norm.weight"), 1, e, 1, 1, -1.f);
#undef L
    }
}

static sprout_status copy_tokenizer(sp_gguf_writer *w) {
    const char *shared = getenv("SPROUT_SHARED_DIR");
    char path[2048];
    snprintf(path, sizeof path, "%s/models/stories260K.gguf", shared && *shared ? shared : SPROUT_SHARED_DIR_DEFAULT);
    sprout_gguf *vocab = NULL;
    sprout_status st = sprout_gguf_open(path, &vocab);
    for (int64_t i = 0; st == SPROUT_OK && i < sprout_gguf_kv_count(vocab); i++) {
        const char *key = sprout_gguf_kv_key(vocab, i);
        if (!strncmp(key, "tokenizer.", 10)) st = sp_gguf_writer_set_value(w, key, sprout_gguf_kv_value(vocab, i));
    }
    sprout_gguf_close(vocab);
    return st;
}

static void set_u32(sp_gguf_writer *w, const char *arch, const char *suffix, uint32_t v) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    sp_gguf_writer_set_scalar(w, key, SPROUT_GGUF_UINT32, &v);
}

static void set_f32(sp_gguf_writer *w, const char *arch, const char *suffix, float v) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    if (v != 0.f) sp_gguf_writer_set_scalar(w, key, SPROUT_GGUF_FLOAT32, &v);
}

/* deepseek2's keys as llama.cpp's converter writes them for latent attention. */
static void write_mla_metadata(sp_gguf_writer *w, const moe_preset *p) {
    const char *a = p->arch;
    const mla_preset *m = mla_of(p);
    set_u32(w, a, "attention.q_lora_rank", (uint32_t)m->q_lora); /* llama.cpp needs it, 0 too, but for V2-Lite's layer counts */
    set_u32(w, a, "attention.kv_lora_rank", (uint32_t)m->kv_lora);
    if (m->fused_kv_b) {
        set_u32(w, a, "attention.key_length", (uint32_t)(m->nope + m->rope));
        set_u32(w, a, "attention.value_length", (uint32_t)m->v_dim);
    } else {
        set_u32(w, a, "attention.key_length", (uint32_t)(m->kv_lora + m->rope));
        set_u32(w, a, "attention.value_length", (uint32_t)m->kv_lora);
        set_u32(w, a, "attention.key_length_mla", (uint32_t)(m->nope + m->rope));
        set_u32(w, a, "attention.value_length_mla", (uint32_t)m->v_dim);
    }
    set_u32(w, a, "rope.dimension_count", (uint32_t)m->rope);
    set_u32(w, a, "leading_dense_block_count", (uint32_t)m->dense_lead);
    set_u32(w, a, "expert_feed_forward_length", (uint32_t)p->n_ff_exp);
    set_u32(w, a, "expert_shared_count", (uint32_t)m->n_shared);
    set_u32(w, a, "expert_gating_func", (uint32_t)m->gating);
    if (m->groups > 0) {
        set_u32(w, a, "expert_group_count", (uint32_t)m->groups);
        set_u32(w, a, "expert_group_used_count", (uint32_t)m->groups_used);
    }
    set_f32(w, a, "expert_weights_scale", m->weights_scale);
    char key[128];
    if (m->weights_norm) {
        const bool yes = true;
        snprintf(key, sizeof key, "%s.expert_weights_norm", a);
        sp_gguf_writer_set_scalar(w, key, SPROUT_GGUF_BOOL, &yes);
    }
    if (m->yarn_factor > 0.f) {
        snprintf(key, sizeof key, "%s.rope.scaling.type", a);
        sp_gguf_writer_set_str(w, key, "yarn", 4);
        set_f32(w, a, "rope.scaling.factor", m->yarn_factor);
        set_u32(w, a, "rope.scaling.original_context_length", N_CTX / 4);
        set_f32(w, a, "rope.scaling.yarn_log_multiplier", m->yarn_log_mul);
    }
}

static void write_metadata(sp_gguf_writer *w, const moe_preset *p, sprout_type type) {
    const char *a = p->arch;
    sp_gguf_writer_set_str(w, "general.architecture", a, strlen(a));
    char name[96];
    snprintf(name, sizeof name, "tiny %s (random weights)", p->name);
    sp_gguf_writer_set_str(w, "general.name", name, strlen(name));
    set_u32(w, a, "context_length", N_CTX);
    set_u32(w, a, "embedding_length", N_EMBD);
    set_u32(w, a, "block_count", p->n_layer ? (uint32_t)p->n_layer : N_LAYER);
    set_u32(w, a, "feed_forward_length", (uint32_t)p->n_ff);
    set_u32(w, a, "attention.head_count", N_HEAD);
    set_u32(w, a, "attention.head_count_kv", (uint32_t)p->n_head_kv);
    set_u32(w, a, "rope.dimension_count", p->n_rot ? (uint32_t)p->n_rot : HEAD_DIM);
    if (p->n_expert > 0) {
        set_u32(w, a, "expert_count", (uint32_t)p->n_expert);
        set_u32(w, a, "expert_used_count", (uint32_t)p->n_used);
    }
    if (p->flags & EXP_FF_KEY) set_u32(w, a, "expert_feed_forward_length", (uint32_t)p->n_ff_exp);
    if (p->flags & SHARED) set_u32(w, a, "expert_shared_feed_forward_length", (uint32_t)p->n_ff_shexp);
    set_f32(w, a, "rope.freq_base", 10000.f);
    set_f32(w, a, p->flags & LAYER_NORM ? "attention.layer_norm_epsilon" : "attention.layer_norm_rms_epsilon", p->eps);
    set_f32(w, a, "embedding_scale", p->embd_scale);
    set_f32(w, a, "residual_scale", p->residual_scale);
    set_f32(w, a, "logit_scale", p->logit_scale);
    set_f32(w, a, "attention.scale", p->attn_scale);
    if (p->flags & YARN_SWA) {
        char key[128];
        snprintf(key, sizeof key, "%s.rope.scaling.type", a);
        sp_gguf_writer_set_str(w, key, "yarn", 4);
        set_f32(w, a, "rope.scaling.factor", 4.f);
        set_u32(w, a, "rope.scaling.original_context_length", 128);
        set_u32(w, a, "attention.sliding_window", 8);
    }
    if (p->flags & MLA) write_mla_metadata(w, p);
    sprout_file_type label;
    if (sprout_file_type_from_name(sprout_type_name(type), &label)) {
        uint32_t u = (uint32_t)label;
        sp_gguf_writer_set_scalar(w, "general.file_type", SPROUT_GGUF_UINT32, &u);
    }
}

static tensor_spec *find_spec(gen *g, const char *name, size_t len) {
    for (int i = 0; i < g->n; i++)
        if (strlen(g->specs[i].name) == len && !strncmp(g->specs[i].name, name, len)) return &g->specs[i];
    return NULL;
}

/* --set, --unset, --shape and --drop; false (said) on a bad one. */
static bool apply_overrides(gen *g, sp_gguf_writer *w, const moe_preset *p, int argc, char **argv) {
    for (int i = 0; i + 1 < argc; i += 2) {
        const char *opt = argv[i], *arg = argv[i + 1], *eq = strchr(arg, '=');
        if (!strcmp(opt, "--drop")) {
            tensor_spec *t = find_spec(g, arg, strlen(arg));
            if (!t) break;
            *t = g->specs[--g->n];
            continue;
        }
        if (!strcmp(opt, "--unset")) {
            char key[128];
            snprintf(key, sizeof key, "%s.%s", p->arch, arg);
            sp_gguf_writer_remove(w, key);
            continue;
        }
        if (!eq) break;
        if (!strcmp(opt, "--set")) {
            char suffix[96];
            snprintf(suffix, sizeof suffix, "%.*s", (int)(eq - arg), arg);
            set_u32(w, p->arch, suffix, (uint32_t)strtoul(eq + 1, NULL, 10));
            continue;
        }
        tensor_spec *t = strcmp(opt, "--shape") ? NULL : find_spec(g, arg, (size_t)(eq - arg));
        if (!t) break;
        t->ne[0] = t->ne[1] = t->ne[2] = 1;
        t->n_dims = sscanf(eq + 1, "%lld,%lld,%lld", (long long *)&t->ne[0], (long long *)&t->ne[1], (long long *)&t->ne[2]);
        if (t->n_dims < 1 || t->ne[0] * t->ne[1] * t->ne[2] > 1 << 24) break;
        continue;
    }
    if (argc % 2 == 0) return true;
    fprintf(stderr, "make_moe: bad option near '%s'\n", argv[argc - 1]);
    return false;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: make_moe ARCH TYPE OUT.gguf [SEED] [--set KEY=N] [--unset KEY] [--shape TENSOR=D0,D1[,D2]] [--drop TENSOR]\n");
        return 2;
    }
    const moe_preset *p = NULL;
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
        if (!strcmp(presets[i].name, argv[1])) p = &presets[i];
    static gen g;
    sprout_type type;
    g.mxfp4_experts = !strcmp(argv[2], "MXFP4_MOE");
    if (g.mxfp4_experts) type = SPROUT_TYPE_Q8_0;
    else if (!sprout_type_from_name(argv[2], &type)) p = NULL;
    if (!p || !sprout_type_can_dequantize(type)) {
        fprintf(stderr, "make_moe: unknown architecture '%s' or type '%s'\n", argv[1], argv[2]);
        return 2;
    }
    int first_opt = 4;
    g.seed = 1;
    if (argc > 4 && argv[4][0] != '-') g.seed = strtoull(argv[first_opt++], NULL, 10);
    add_tensors(&g, p, type);
    sp_gguf_writer *w = sp_gguf_writer_new();
    write_metadata(w, p, type);
    sprout_file_type recipe;
    if (g.mxfp4_experts && sprout_file_type_from_name("MXFP4_MOE", &recipe)) {
        uint32_t u = (uint32_t)recipe;
        sp_gguf_writer_set_scalar(w, "general.file_type", SPROUT_GGUF_UINT32, &u);
    }
    sprout_status st = copy_tokenizer(w);
    if (!apply_overrides(&g, w, p, argc - first_opt, argv + first_opt)) {
        sp_gguf_writer_free(w);
        return 2;
    }
    for (int i = 0; st == SPROUT_OK && i < g.n; i++) {
        const tensor_spec *t = &g.specs[i];
        if (t->ne[0] % sprout_type_block_size(t->type)) g.specs[i].type = SPROUT_TYPE_F32; /* a broken shape's rows */
        st = sp_gguf_writer_add_tensor(w, t->name, g.specs[i].type, t->n_dims, t->ne, NULL);
    }
    sp_gguf_write_options opt = {.fill = fill, .fill_user = &g};
    if (st == SPROUT_OK) st = sp_gguf_writer_write(w, argv[3], &opt, NULL);
    if (st != SPROUT_OK) fprintf(stderr, "make_moe: %s\n", sprout_last_error());
    sp_gguf_writer_free(w);
    return st == SPROUT_OK ? 0 : 1;
}
