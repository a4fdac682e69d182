/* Writes a GGUF with the exact tensor names, shapes and metadata of a real
 * model, its real tokenizer, and random weights, for benchmarks and memory
 * tests: speed does not depend on the values. Tensors are generated and
 * quantized one at a time while the file is written, so memory stays small
 * whatever the model's size.
 *
 * usage: make_model PRESET TYPE OUT.gguf [SEED]
 *   PRESET: tinyllama-1.1b, qwen2.5-0.5b, llama-3.2-1b, small-100m, qwen2-tiny (Qwen2's vocabulary, a toy body),
 *           olmoe-1b-7b (64 experts, 8 used: 6.9 B parameters, 1.3 B read per token; GPT-NeoX's
 *           50432-token vocabulary, where OLMoE pads its own to 50304),
 *           qwen3-30b-a3b (Qwen3-30B-A3B's shapes, 128 experts of 768, 8 used, heads of 128, Qwen2's
 *           vocabulary, which Qwen3 shares; 12 of its 48 layers: 7.9 B parameters, 8.6 GB in Q8_0),
 *           gpt-oss-20b (gpt-oss-20b's shapes: 32 experts of 2880, 4 used, 64 heads of 64, 8 KV heads,
 *           attention sinks, biases, every other layer a window of 128, YaRN 32 over 4096; 12 of its
 *           24 layers so that MXFP4_MOE fits 7 GB; Llama 3's vocabulary padded to its 201088 rows,
 *           as o200k_harmony is not in the shared folder)
 *   TYPE:   a tensor type (F32 F16 BF16 Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q2_K Q3_K
 *           Q4_K Q5_K Q6_K: every matrix in it) or a file type (Q4_K_M,
 *           Q3_K_S ...: the model is written in F16, then quantized with
 *           sprout_quantize_model's mix), or MXFP4_MOE (llama-quantize's
 *           recipe for gpt-oss: the 3-D expert tensors MXFP4, every other
 *           matrix Q8_0)
 *
 * The tokenizer (every tokenizer.* key) comes from the vocabulary GGUF of
 * the real model in $SPROUT_SHARED_DIR/tokenizer (default: the shared folder
 * CMake was configured with): TinyLlama and small-100m use Llama's
 * SentencePiece vocabulary, Qwen2.5 Qwen2's BPE (151936 ids), Llama-3.2
 * Llama 3's BPE (128256 ids).
 *
 * Weights (fixed seed, approximately normal): embeddings and the output
 * matrix std 0.02; every other matrix std 1/sqrt(n_in) (n_in = its row
 * length); biases std 0.02; norm weights 1 + 0.1 N(0, 1). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "core/error.h"
#include "gguf/gguf_writer.h"
#include "random.h"
#include "sprout.h"

typedef struct preset {
    const char *name, *arch, *vocab;
    int n_vocab, n_embd, n_layer, n_head, n_head_kv, n_ff, n_ctx;
    float rope_base, eps;
    bool tied, qkv_bias;
    int n_expert, n_expert_used; /* a mixture of experts (olmoe: q/k norms of n_embd; qwen3moe: of each head) */
    int head_dim, n_ff_exp;      /* 0: n_embd / n_head, n_ff */
} preset;

static const preset presets[] = {
    {"tinyllama-1.1b", "llama", "llama-spm", 32000, 2048, 22, 32, 4, 5632, 2048, 10000.f, 1e-5f, false, false, 0, 0, 0, 0},
    {"qwen2.5-0.5b", "qwen2", "qwen2", 151936, 896, 24, 14, 2, 4864, 32768, 1000000.f, 1e-6f, true, true, 0, 0, 0, 0},
    {"llama-3.2-1b", "llama", "llama-bpe", 128256, 2048, 16, 32, 8, 8192, 131072, 500000.f, 1e-5f, true, false, 0, 0, 0, 0},
    {"small-100m", "llama", "llama-spm", 32000, 1024, 4, 16, 4, 2816, 2048, 10000.f, 1e-5f, false, false, 0, 0, 0, 0},
    /* Qwen2's real vocabulary on a toy body: for tests of what the vocabulary decides (FIM tokens) */
    {"qwen2-tiny", "qwen2", "qwen2", 151936, 64, 1, 4, 2, 128, 512, 1000000.f, 1e-6f, true, true, 0, 0, 0, 0},
    {"olmoe-1b-7b", "olmoe", "gpt-neox", 50432, 2048, 16, 16, 16, 1024, 4096, 10000.f, 1e-5f, false, false, 64, 8, 0, 0},
    {"qwen3-30b-a3b", "qwen3moe", "qwen2", 151936, 2048, 12, 32, 4, 6144, 40960, 1000000.f, 1e-6f, false, false, 128, 8, 128, 768},
    {"gpt-oss-20b", "gpt-oss", "llama-bpe", 201088, 2880, 12, 64, 8, 2880, 131072, 150000.f, 1e-5f, false, true, 32, 4, 64, 2880},
};

typedef struct tensor_spec {
    char name[64];
    int64_t ne[3];
    int n_dims;
    sprout_type type;
    float std;
} tensor_spec;

typedef struct gen {
    tensor_spec *specs;
    uint64_t seed;
    float *buf;
} gen;

static sprout_status fill(void *user, int64_t index, void *dst, uint64_t bytes) {
    gen *g = user;
    const tensor_spec *t = &g->specs[index];
    const int64_t n = t->ne[0] * (t->n_dims > 1 ? t->ne[1] : 1) * (t->n_dims > 2 ? t->ne[2] : 1);
    uint64_t s = g->seed * 0x9E3779B97F4A7C15ull + (uint64_t)index * 7919 + 1;
    const int64_t row = t->ne[0], rows = n / row;
    const size_t row_bytes = (size_t)(bytes / (uint64_t)rows);
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t i = 0; i < row; i++) g->buf[i] = t->std < 0 ? 1.f + 0.1f * rng_normal(&s) : t->std * rng_normal(&s);
        sprout_status st = sprout_quantize(t->type, g->buf, (char *)dst + (size_t)r * row_bytes, row);
        if (st != SPROUT_OK) return st;
    }
    return SPROUT_OK;
}

/* A vocabulary shorter than the embedding gets unused tokens ("<|pad_N|>",
 * type 5) up to its rows, as converters pad one (llama.cpp wants one token
 * per row). Only tokens and their types: the presets' vocabularies have no
 * scores. */
static sprout_status pad_vocabulary(sp_gguf_writer *w, const sprout_gguf *vocab, const sprout_gguf_value *tokens, int n_vocab) {
    const uint64_t n = sprout_gguf_array_len(tokens);
    const sprout_gguf_value *types = sprout_gguf_find(vocab, "tokenizer.ggml.token_type");
    if (n >= (uint64_t)n_vocab) return SPROUT_OK;
    if (!types || sprout_gguf_array_len(types) != n || sprout_gguf_find(vocab, "tokenizer.ggml.scores"))
        return sp_fail(SPROUT_ERR_UNSUPPORTED, "cannot pad a vocabulary with scores or without token types");
    const char **strs = malloc((size_t)n_vocab * sizeof *strs);
    size_t *lens = malloc((size_t)n_vocab * sizeof *lens);
    int32_t *kinds = malloc((size_t)n_vocab * sizeof *kinds);
    char *pads = malloc((size_t)(n_vocab - (int)n) * 24);
    sprout_status st = strs && lens && kinds && pads ? SPROUT_OK : sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
    for (uint64_t i = 0; st == SPROUT_OK && i < (uint64_t)n_vocab; i++) {
        int64_t kind = 5; /* unused */
        if (i < n) {
            st = sprout_gguf_array_str(tokens, i, &strs[i], &lens[i]);
            if (st == SPROUT_OK) st = sprout_gguf_array_i64(types, i, &kind);
        } else {
            char *pad = pads + (i - n) * 24;
            lens[i] = (size_t)snprintf(pad, 24, "<|pad_%llu|>", (unsigned long long)(i - n));
            strs[i] = pad;
        }
        kinds[i] = (int32_t)kind;
    }
    if (st == SPROUT_OK) st = sp_gguf_writer_set_str_array(w, "tokenizer.ggml.tokens", strs, lens, (uint64_t)n_vocab);
    if (st == SPROUT_OK) st = sp_gguf_writer_set_array(w, "tokenizer.ggml.token_type", SPROUT_GGUF_INT32, kinds, (uint64_t)n_vocab);
    free(strs);
    free(lens);
    free(kinds);
    free(pads);
    return st;
}

static sprout_status copy_tokenizer(sp_gguf_writer *w, const preset *p) {
    const char *shared = getenv("SPROUT_SHARED_DIR");
    char path[2048];
    snprintf(path, sizeof path, "%s/tokenizer/ggml-vocab-%s.gguf", shared && *shared ? shared : SPROUT_SHARED_DIR_DEFAULT,
             p->vocab);
    sprout_gguf *vocab = NULL;
    sprout_status st = sprout_gguf_open(path, &vocab);
    for (int64_t i = 0; st == SPROUT_OK && i < sprout_gguf_kv_count(vocab); i++) {
        const char *key = sprout_gguf_kv_key(vocab, i);
        if (!strncmp(key, "tokenizer.", 10)) st = sp_gguf_writer_set_value(w, key, sprout_gguf_kv_value(vocab, i));
    }
    const sprout_gguf_value *tokens = vocab ? sprout_gguf_find(vocab, "tokenizer.ggml.tokens") : NULL;
    if (st == SPROUT_OK && (!tokens || sprout_gguf_array_len(tokens) > (uint64_t)p->n_vocab))
        st = sp_fail(SPROUT_ERR_FORMAT, "%s: no vocabulary of at most %d tokens", path, p->n_vocab);
    if (st == SPROUT_OK) st = pad_vocabulary(w, vocab, tokens, p->n_vocab);
    sprout_gguf_close(vocab);
    return st;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: make_model PRESET TYPE OUT.gguf [SEED]\n");
        return 2;
    }
    const preset *p = NULL;
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
        if (!strcmp(presets[i].name, argv[1])) p = &presets[i];
    sprout_type type;
    sprout_file_type mix;
    const bool mxfp4_experts = !strcmp(argv[2], "MXFP4_MOE");
    const bool is_mix = !mxfp4_experts && !sprout_type_from_name(argv[2], &type) && sprout_file_type_from_name(argv[2], &mix);
    if (is_mix) type = SPROUT_TYPE_F16;
    if (mxfp4_experts) type = SPROUT_TYPE_Q8_0;
    if (!p || !sprout_type_can_dequantize(type) || (!is_mix && !mxfp4_experts && !sprout_type_from_name(argv[2], &type))) {
        fprintf(stderr, "make_model: unknown preset '%s' or type '%s'\n", argv[1], argv[2]);
        return 2;
    }
    char out[2048];
    snprintf(out, sizeof out, is_mix ? "%s.f16-tmp" : "%s", argv[3]);
    gen g = {.seed = argc > 4 ? strtoull(argv[4], NULL, 10) : 1};
    const int head = p->head_dim ? p->head_dim : p->n_embd / p->n_head, kv = head * p->n_head_kv, q_dim = head * p->n_head;
    const int ff_exp = p->n_ff_exp ? p->n_ff_exp : p->n_ff;
    const bool gpt_oss = !strcmp(p->arch, "gpt-oss");
    const int max_tensors = 4 + 24 * p->n_layer;
    g.specs = calloc((size_t)max_tensors, sizeof *g.specs);
    int n = 0;
    /* 1-D tensors stay F32; matrices whose rows do not fit the type's blocks fall back to F16 */
#define ADD(nm, d0, d1, dims, std_) ADD3(nm, d0, d1, 1, dims, std_)
#define ADD3(nm, d0, d1, d2, dims, std_)                                                              \
    do {                                                                                              \
        tensor_spec *t = &g.specs[n++];                                                               \
        snprintf(t->name, sizeof t->name, "%s", nm);                                                  \
        t->ne[0] = (d0);                                                                              \
        t->ne[1] = (d1);                                                                              \
        t->ne[2] = (d2);                                                                              \
        t->n_dims = (dims);                                                                           \
        t->std = (std_);                                                                              \
        t->type = (dims) == 1 ? SPROUT_TYPE_F32 : ((d0) % sprout_type_block_size(type) ? SPROUT_TYPE_F16 : type); \
        if ((dims) == 3 && mxfp4_experts) t->type = SPROUT_TYPE_MXFP4;                                \
    } while (0)
    /* a bias of each expert: F32 whatever the matrices are */
#define ADD_EXPERT_BIAS(nm, d0)                                                                       \
    do {                                                                                              \
        ADD(nm, d0, p->n_expert, 2, 0.02f);                                                           \
        g.specs[n - 1].type = SPROUT_TYPE_F32;                                                        \
    } while (0)
    ADD("token_embd.weight", p->n_embd, p->n_vocab, 2, 0.02f);
    ADD("output_norm.weight", p->n_embd, 1, 1, -1.f);
    if (!p->tied) ADD("output.weight", p->n_embd, p->n_vocab, 2, 0.02f);
    char name[64];
    const float s_in = 1.f / sqrtf((float)p->n_embd), s_ff = 1.f / sqrtf((float)p->n_ff);
    for (int l = 0; l < p->n_layer; l++) {
#define L(s) (snprintf(name, sizeof name, "blk.%d.%s", l, s), name)
        ADD(L("attn_norm.weight"), p->n_embd, 1, 1, -1.f);
        ADD(L("attn_q.weight"), p->n_embd, q_dim, 2, s_in);
        ADD(L("attn_k.weight"), p->n_embd, kv, 2, s_in);
        ADD(L("attn_v.weight"), p->n_embd, kv, 2, s_in);
        if (p->qkv_bias) {
            ADD(L("attn_q.bias"), q_dim, 1, 1, 0.02f);
            ADD(L("attn_k.bias"), kv, 1, 1, 0.02f);
            ADD(L("attn_v.bias"), kv, 1, 1, 0.02f);
        }
        ADD(L("attn_output.weight"), q_dim, p->n_embd, 2, 1.f / sqrtf((float)q_dim));
        if (gpt_oss) {
            ADD(L("attn_output.bias"), p->n_embd, 1, 1, 0.02f);
            ADD(L("attn_sinks.weight"), p->n_head, 1, 1, 1.f);
        }
        ADD(L(gpt_oss ? "post_attention_norm.weight" : "ffn_norm.weight"), p->n_embd, 1, 1, -1.f);
        if (p->n_expert) {
            if (!gpt_oss) { /* olmoe's norms span every head, qwen3moe's one head */
                const bool whole = !strcmp(p->arch, "olmoe");
                ADD(L("attn_q_norm.weight"), whole ? q_dim : head, 1, 1, -1.f);
                ADD(L("attn_k_norm.weight"), whole ? kv : head, 1, 1, -1.f);
            }
            ADD(L("ffn_gate_inp.weight"), p->n_embd, p->n_expert, 2, s_in);
            ADD3(L("ffn_gate_exps.weight"), p->n_embd, ff_exp, p->n_expert, 3, s_in);
            ADD3(L("ffn_up_exps.weight"), p->n_embd, ff_exp, p->n_expert, 3, s_in);
            ADD3(L("ffn_down_exps.weight"), ff_exp, p->n_embd, p->n_expert, 3, 1.f / sqrtf((float)ff_exp));
            if (gpt_oss) {
                ADD(L("ffn_gate_inp.bias"), p->n_expert, 1, 1, 0.02f);
                ADD_EXPERT_BIAS(L("ffn_gate_exps.bias"), ff_exp);
                ADD_EXPERT_BIAS(L("ffn_up_exps.bias"), ff_exp);
                ADD_EXPERT_BIAS(L("ffn_down_exps.bias"), p->n_embd);
            }
            continue;
        }
        ADD(L("ffn_gate.weight"), p->n_embd, p->n_ff, 2, s_in);
        ADD(L("ffn_up.weight"), p->n_embd, p->n_ff, 2, s_in);
        ADD(L("ffn_down.weight"), p->n_ff, p->n_embd, 2, s_ff);
#undef L
    }
#undef ADD
#undef ADD3
#undef ADD_EXPERT_BIAS
    sp_gguf_writer *w = sp_gguf_writer_new();
    char key[96];
    const char *a = p->arch;
#define KEY(s) (snprintf(key, sizeof key, "%s.%s", a, s), key)
    uint32_t u;
    float f;
    sp_gguf_writer_set_str(w, "general.architecture", a, strlen(a));
    snprintf(name, sizeof name, "synthetic %s (random weights)", p->name);
    sp_gguf_writer_set_str(w, "general.name", name, strlen(name));
    u = (uint32_t)p->n_ctx;
    sp_gguf_writer_set_scalar(w, KEY("context_length"), SPROUT_GGUF_UINT32, &u);
    u = (uint32_t)p->n_embd;
    sp_gguf_writer_set_scalar(w, KEY("embedding_length"), SPROUT_GGUF_UINT32, &u);
    u = (uint32_t)p->n_layer;
    sp_gguf_writer_set_scalar(w, KEY("block_count"), SPROUT_GGUF_UINT32, &u);
    u = (uint32_t)p->n_ff;
    sp_gguf_writer_set_scalar(w, KEY("feed_forward_length"), SPROUT_GGUF_UINT32, &u);
    u = (uint32_t)p->n_head;
    sp_gguf_writer_set_scalar(w, KEY("attention.head_count"), SPROUT_GGUF_UINT32, &u);
    u = (uint32_t)p->n_head_kv;
    sp_gguf_writer_set_scalar(w, KEY("attention.head_count_kv"), SPROUT_GGUF_UINT32, &u);
    u = (uint32_t)head;
    sp_gguf_writer_set_scalar(w, KEY("rope.dimension_count"), SPROUT_GGUF_UINT32, &u);
    f = p->rope_base;
    sp_gguf_writer_set_scalar(w, KEY("rope.freq_base"), SPROUT_GGUF_FLOAT32, &f);
    f = p->eps;
    sp_gguf_writer_set_scalar(w, KEY("attention.layer_norm_rms_epsilon"), SPROUT_GGUF_FLOAT32, &f);
    if (p->n_expert) {
        u = (uint32_t)p->n_expert;
        sp_gguf_writer_set_scalar(w, KEY("expert_count"), SPROUT_GGUF_UINT32, &u);
        u = (uint32_t)p->n_expert_used;
        sp_gguf_writer_set_scalar(w, KEY("expert_used_count"), SPROUT_GGUF_UINT32, &u);
        u = (uint32_t)ff_exp;
        if (p->n_ff_exp) sp_gguf_writer_set_scalar(w, KEY("expert_feed_forward_length"), SPROUT_GGUF_UINT32, &u);
    }
    if (p->head_dim) {
        u = (uint32_t)head;
        sp_gguf_writer_set_scalar(w, KEY("attention.key_length"), SPROUT_GGUF_UINT32, &u);
        sp_gguf_writer_set_scalar(w, KEY("attention.value_length"), SPROUT_GGUF_UINT32, &u);
    }
    if (gpt_oss) { /* as gpt-oss-20b's config.json: a window of 128, YaRN 32 over 4096 positions */
        u = 128;
        sp_gguf_writer_set_scalar(w, KEY("attention.sliding_window"), SPROUT_GGUF_UINT32, &u);
        sp_gguf_writer_set_str(w, KEY("rope.scaling.type"), "yarn", 4);
        f = 32.f;
        sp_gguf_writer_set_scalar(w, KEY("rope.scaling.factor"), SPROUT_GGUF_FLOAT32, &f);
        u = 4096;
        sp_gguf_writer_set_scalar(w, KEY("rope.scaling.original_context_length"), SPROUT_GGUF_UINT32, &u);
    }
#undef KEY
    sprout_file_type label;
    if (!is_mix && sprout_file_type_from_name(mxfp4_experts ? "MXFP4_MOE" : sprout_type_name(type), &label)) {
        u = (uint32_t)label;
        sp_gguf_writer_set_scalar(w, "general.file_type", SPROUT_GGUF_UINT32, &u);
    }
    if (copy_tokenizer(w, p) != SPROUT_OK) {
        fprintf(stderr, "make_model: %s\n", sprout_last_error());
        return 1;
    }
    for (int i = 0; i < n; i++) {
        const int64_t ne[3] = {g.specs[i].ne[0], g.specs[i].ne[1], g.specs[i].ne[2]};
        sp_gguf_writer_add_tensor(w, g.specs[i].name, g.specs[i].type, g.specs[i].n_dims, ne, NULL);
    }
    int widest = p->n_embd; /* the longest row of any tensor */
    const int rows[] = {p->n_ff, ff_exp, q_dim};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) widest = rows[i] > widest ? rows[i] : widest;
    g.buf = malloc((size_t)widest * sizeof(float) * 2);
    sp_gguf_write_options opt = {.fill = fill, .fill_user = &g};
    sprout_status st = sp_gguf_writer_write(w, out, &opt, NULL);
    if (st == SPROUT_OK && is_mix) {
        sprout_quantize_params qp;
        sprout_quantize_params_default(&qp);
        qp.file_type = mix;
        st = sprout_quantize_model(out, argv[3], &qp, NULL);
        unlink(out);
    }
    if (st != SPROUT_OK) fprintf(stderr, "make_model: %s\n", sprout_last_error());
    sp_gguf_writer_free(w);
    free(g.buf);
    free(g.specs);
    return st == SPROUT_OK ? 0 : 1;
}
