/* A model built from a GGUF's metadata alone: hyperparameters, architecture
 * traits and per-layer weight views into the mapping. Nothing here is
 * per-model code: each supported architecture is a row of traits, and every
 * optional piece (biases, fused projections, q/k norms, post-norms, RoPE
 * factors) is found by its tensor's presence. */
#ifndef SPROUT_MODEL_H
#define SPROUT_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "grammar/grammar_cache.h"
#include "grammar/grammar_mask.h"
#include "kernels/kernels.h"
#include "sprout.h"

typedef enum sp_arch {
    SP_ARCH_LLAMA,
    SP_ARCH_QWEN2,
    SP_ARCH_QWEN3,
    SP_ARCH_PHI3,
    SP_ARCH_GEMMA,
    SP_ARCH_GEMMA2,
    SP_ARCH_GEMMA3,
    SP_ARCH_PHI2,
    SP_ARCH_STABLELM,
    SP_ARCH_FALCON,
    SP_ARCH_BERT,
    SP_ARCH_NOMIC_BERT,
    SP_ARCH_QWEN2MOE,
    SP_ARCH_QWEN3MOE,
    SP_ARCH_OLMOE,
    SP_ARCH_GRANITE,
    SP_ARCH_GRANITEMOE,
    SP_ARCH_OLMO2,
    SP_ARCH_STARCODER2,
    SP_ARCH_COMMAND_R,
    SP_ARCH_GLM4,
    SP_ARCH_GPT_OSS,
    SP_ARCH_DEEPSEEK2,
} sp_arch;

typedef enum sp_rope_kind { SP_ROPE_NORM, SP_ROPE_NEOX, SP_ROPE_NONE /* learned absolute positions (BERT) */ } sp_rope_kind;
typedef enum sp_norm_kind { SP_NORM_RMS, SP_NORM_LAYER } sp_norm_kind;
/* SWIGLU_OAI: gpt-oss's experts, llama.cpp's swiglu_oai (gate clamped above,
 * up clamped both ways, silu with alpha, times up + 1) */
typedef enum sp_ffn_kind { SP_FFN_SWIGLU, SP_FFN_GEGLU, SP_FFN_GELU, SP_FFN_SWIGLU_OAI } sp_ffn_kind;
/* How a router's logits become the chosen experts' weights: a softmax or a
 * sigmoid over all experts (llama.cpp's expert_gating_func: 1 softmax, 2
 * sigmoid), then the top k; or the top k logits, then a softmax over those
 * k alone (gpt-oss; llama.cpp's SOFTMAX_WEIGHT). */
typedef enum sp_moe_gating { SP_GATING_SOFTMAX, SP_GATING_SIGMOID, SP_GATING_SOFTMAX_TOP_K } sp_moe_gating;
typedef enum sp_rope_scaling { SP_ROPE_SCALING_NONE, SP_ROPE_SCALING_LINEAR, SP_ROPE_SCALING_YARN } sp_rope_scaling;

/* A vector (norm weight, bias) as floats: F32 views of the file when the file
 * stores F32, else decoded once at load (they are tiny). NULL when absent. */
typedef const float *sp_vec;

/* The most experts a layer may have (llama.cpp's LLAMA_MAX_EXPERTS). */
#define SP_MAX_EXPERTS 1024

/* A 3-D expert tensor ([n_in, n_out, n_expert], ggml's order): one mapped
 * tensor, expert i's matrix `stride` bytes after expert i - 1's. */
typedef struct sp_experts {
    sp_weight first; /* expert 0's matrix */
    size_t stride;
} sp_experts;

/* Expert i's matrix: a view into the mapping, nothing read. */
static inline sp_weight sp_expert(const sp_experts *x, int32_t i) {
    sp_weight w = x->first;
    w.data += (size_t)i * x->stride;
    return w;
}

typedef struct sp_layer {
    sp_vec attn_norm, attn_norm_b;
    sp_weight wq, wk, wv, wqkv; /* wqkv.data set: fused */
    sp_vec bq, bk, bv, bqkv;
    sp_vec q_norm, k_norm;      /* per-head RMS norms (qwen3, gemma3) */
    sp_weight wo;
    sp_vec bo;
    sp_vec post_attn_norm;      /* gemma2/3, olmo2, glm4 */
    sp_vec ffn_norm, ffn_norm_b;
    sp_weight w_gate, w_up, w_down; /* w_up has 2*n_ff rows when gate and up are fused (phi3) */
    sp_vec b_up, b_down;
    sp_vec post_ffn_norm;       /* gemma2/3, olmo2, glm4 */
    /* a mixture of experts in place of w_gate/w_up/w_down (router.data set):
     * the router (n_expert rows of e), the experts, and a shared expert
     * with its sigmoid gate (one row of e; qwen2moe) where present */
    sp_weight router;
    sp_experts gate_exps, up_exps, down_exps;
    sp_weight gate_shexp, up_shexp, down_shexp, gate_inp_shexp; /* gate_inp_shexp absent: ungated (deepseek2) */
    sp_vec exp_probs_b;         /* a bias on the probabilities that choose experts, not on their weights (DeepSeek-V3) */
    /* gpt-oss: the router's bias (n_expert) and each expert's biases, rows
     * of n_ff_exp (gate, up) and n_embd (down) one expert after another */
    sp_vec router_b, gate_exps_b, up_exps_b, down_exps_b;
    sp_vec attn_sinks;          /* one logit per query head joining each softmax's denominator (gpt-oss) */
    /* multi-head latent attention (deepseek2; hp.n_lora_kv > 0) in place of
     * wq/wk/wv: q through a low-rank pair and its norm (wq_a.data set) or
     * wq; the latent and the shared RoPE key from wkv_a ([latent | k_pe]);
     * per head, k_b (n_lora_kv rows of the head's nope part) and v_b
     * (head_dim_v_mla rows of the latent), heads as the 3-D tensors' slices */
    sp_weight wq_a, wq_b, wkv_a;
    sp_vec q_a_norm, kv_a_norm;
    sp_experts k_b, v_b;
    /* older conversions: k_b and v_b fused per head in rows [k_nope | v] of
     * wkv_b (n_lora_kv wide); v_b is then a view of its v rows, and the
     * queries are absorbed through the k rows transposed (k_b.first empty) */
    sp_weight wkv_b;
    /* post-norm blocks (BERT): x = norm(x + attention), then x = norm(x + FFN) */
    sp_vec attn_out_norm, attn_out_norm_b, out_norm, out_norm_b;
    bool sliding;               /* sliding-window attention on this layer */
    float rope_base, rope_freq_scale; /* this layer's RoPE (gemma3's local layers keep their own, unscaled) */
} sp_layer;

typedef struct sp_hparams {
    sp_arch arch;
    const char *arch_name;
    int32_t n_vocab, n_ctx_train, n_embd, n_layer, n_head, n_head_kv, head_dim_k, head_dim_v, n_ff, n_rot;
    sp_rope_kind rope_kind;
    float rope_base, rope_base_swa;
    sp_rope_scaling rope_scaling;
    float rope_freq_scale;      /* 1 / scaling factor */
    int32_t rope_ctx_orig;
    float rope_attn_factor, yarn_ext_factor, yarn_beta_fast, yarn_beta_slow;
    sp_norm_kind norm_kind;
    float norm_eps;
    sp_ffn_kind ffn_kind;
    bool parallel_block;        /* attention and FFN read the same normed input */
    bool fused_gate_up;
    float embd_scale;           /* 1, or sqrt(n_embd) for gemma, or granite's embedding_scale */
    float residual_scale;       /* what each block adds to x is scaled first (granite); 1: as is */
    float logit_scale;          /* the logits' factor (granite: 1 / logit_scale, command-r: logit_scale); 1: none */
    float attn_scale;
    float attn_softcap, final_softcap; /* 0: none */
    int32_t sliding_window;     /* 0: none */
    bool causal;                /* a token sees only earlier ones (every decoder; BERT sees its whole text) */
    bool post_norm;             /* norms after each residual add (BERT), not before each block */
    bool no_pre_norm;           /* attention and FFN read x itself, no norm before them (olmo2) */
    int32_t pooling;            /* the file's pooling_type (llama.cpp's numbers: 1 mean, 2 cls, 3 last); 0: none said */
    bool qk_norm_whole;         /* q/k norms span all heads at once (olmoe), not each head */
    bool qk_norm_each_head;     /* q/k norms: a LayerNorm of each head with that head's weights (command-r) */
    /* a mixture of experts (n_expert 0: a dense FFN): how many, how many a
     * token uses, each expert's FFN width and the shared expert's */
    int32_t n_expert, n_expert_used, n_ff_exp, n_ff_shexp;
    bool expert_weights_norm;   /* the chosen experts' softmax weights renormalized to sum 1 */
    sp_moe_gating expert_gating;
    float expert_weights_scale; /* the chosen weights' factor (deepseek2); 1: none */
    int32_t n_expert_groups, n_group_used; /* group-limited routing (DeepSeek-V3); groups <= 1: none */
    int32_t n_layer_dense_lead; /* the first layers have a dense FFN (deepseek2) */
    /* multi-head latent attention (deepseek2): n_lora_kv > 0. The cache's
     * one KV head is then [latent (n_lora_kv) | k_pe (n_rot)] (head_dim_k),
     * its values the latent (head_dim_v = n_lora_kv); a query head before
     * absorption is head_dim_k_mla wide (nope + rope), its value
     * head_dim_v_mla; n_lora_q 0: q from attn_q directly */
    int32_t n_lora_q, n_lora_kv, head_dim_k_mla, head_dim_v_mla;
    bool mla_fused_kv_b;        /* an older conversion: attn_kv_b, no _mla keys (its key_length/value_length the full heads') */
} sp_hparams;

struct sprout_model {
    sprout_gguf *gguf;
    sprout_tokenizer *tokenizer; /* NULL when the file has no vocabulary */
    sp_hparams hp;
    sp_weight tok_embd, output;
    sp_vec output_norm, output_norm_b, output_b;
    sp_weight pos_embd, type_embd; /* learned positions and token types (BERT); data NULL: none */
    sp_vec embd_norm, embd_norm_b;  /* a norm of the embeddings (BERT) */
    sp_vec rope_factors;         /* per-dimension frequency divisors (Llama 3, Phi-3 long/short) */
    sp_layer *layers;
    float *decoded;              /* storage of decoded small vectors */
    sprout_model_params params;
    double load_ms;
    /* the vocabulary as constrained decoding reads it, made at first use
     * by whichever thread asks (sp_model_grammar_vocab) */
    _Atomic(sp_grammar_vocab *) grammar_vocab;
    _Atomic(sp_grammar_cache *) grammar_cache; /* over grammar_vocab (sp_model_grammar_cache) */
};

/* The 2-D matrices the forward pass multiplies by, one at a time: 0 is
 * the output head, 1 + 13 il + k layer il's wq, wk, wv, wqkv, wo, w_gate,
 * w_up, w_down, then a mixture of experts' router and its shared expert's
 * gate, up, down and gate (ffn_gate_inp_shexp). NULL past the last; absent
 * ones have no data. An adapter finds its pair for a weight by this
 * index (the experts' 3-D tensors by sp_lora_expert_index). */
#define SP_LAYER_WEIGHTS 13
const sp_weight *sp_model_weight(const sprout_model *m, int64_t i);
/* The index of w (a pointer into m: &m->output or a layer's field), or -1. */
int64_t sp_model_weight_index(const sprout_model *m, const sp_weight *w);
/* How many indices there are (1 + 13 n_layer). */
int64_t sp_model_weight_count(const sprout_model *m);
/* The file's tensor name of weight i ("output.weight", "blk.3.attn_q.weight"). */
void sp_model_weight_name(int64_t i, char *buf, size_t cap);

/* Tensor i of g as a weight of n_out rows of n_in: a type sprout computes,
 * the shape checked (an error names the tensor). */
sprout_status sp_weight_bind(const sprout_gguf *g, int64_t i, int64_t n_in, int64_t n_out, sp_weight *w);

/* Each token's text as a grammar reads it (none for tokens that add no
 * text: control tokens), built once and shared by every sequence; NULL
 * (the error said) without a vocabulary or memory. Any thread. */
const sp_grammar_vocab *sp_model_grammar_vocab(const sprout_model *m);
/* The model's cache of compiled grammars over that vocabulary, made the
 * same way; NULL (the error said) without a vocabulary or memory. */
sp_grammar_cache *sp_model_grammar_cache(const sprout_model *m);

/* Builds the model from an open GGUF (takes ownership of it on success). */
sprout_status sp_model_build(sprout_gguf *gguf, const sprout_model_params *params, sprout_model **out);

#endif
