/* Writes a GGUF with the exact shapes of a real model and random weights,
 * for benchmarks and memory tests: speed does not depend on the values.
 * Tensors are generated and quantized one at a time while the file is
 * written, so memory stays small whatever the model's size.
 *
 * usage: make_model PRESET TYPE OUT.gguf [SEED]
 *   PRESET: tinyllama-1.1b, qwen2.5-0.5b, llama-3.2-1b, small-100m
 *   TYPE:   F32 F16 BF16 Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q2_K Q3_K Q4_K Q5_K Q6_K */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf_writer.h"
#include "sprout.h"

typedef struct preset {
    const char *name, *arch;
    int n_vocab, n_embd, n_layer, n_head, n_head_kv, n_ff, n_ctx;
    float rope_base, eps;
    bool tied, qkv_bias;
} preset;

static const preset presets[] = {
    {"tinyllama-1.1b", "llama", 32000, 2048, 22, 32, 4, 5632, 2048, 10000.f, 1e-5f, false, false},
    {"qwen2.5-0.5b", "qwen2", 151936, 896, 24, 14, 2, 4864, 32768, 1000000.f, 1e-6f, true, true},
    {"llama-3.2-1b", "llama", 128256, 2048, 16, 32, 8, 8192, 131072, 500000.f, 1e-5f, true, false},
    {"small-100m", "llama", 32000, 1024, 4, 16, 4, 2816, 2048, 10000.f, 1e-5f, false, false},
};

typedef struct tensor_spec {
    char name[64];
    int64_t ne[2];
    int n_dims;
    sprout_type type;
    float std;
} tensor_spec;

typedef struct gen {
    tensor_spec *specs;
    uint64_t seed;
    float *buf;
} gen;

static uint64_t rng_next(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Approximately normal: the sum of four uniforms, rescaled. */
static float rng_normal(uint64_t *s) {
    float sum = 0;
    for (int i = 0; i < 4; i++) sum += (float)(rng_next(s) >> 40) / (float)(1 << 24);
    return (sum - 2.f) * 1.7320508f;
}

static sprout_status fill(void *user, int64_t index, void *dst, uint64_t bytes) {
    gen *g = user;
    const tensor_spec *t = &g->specs[index];
    const int64_t n = t->ne[0] * (t->n_dims > 1 ? t->ne[1] : 1);
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

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: make_model PRESET TYPE OUT.gguf [SEED]\n");
        return 2;
    }
    const preset *p = NULL;
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
        if (!strcmp(presets[i].name, argv[1])) p = &presets[i];
    sprout_type type;
    if (!p || !sprout_type_from_name(argv[2], &type) || !sprout_type_can_dequantize(type)) {
        fprintf(stderr, "make_model: unknown preset '%s' or type '%s'\n", argv[1], argv[2]);
        return 2;
    }
    gen g = {.seed = argc > 4 ? strtoull(argv[4], NULL, 10) : 1};
    const int head = p->n_embd / p->n_head, kv = head * p->n_head_kv;
    const int max_tensors = 4 + 12 * p->n_layer;
    g.specs = calloc((size_t)max_tensors, sizeof *g.specs);
    int n = 0;
    /* 1-D tensors stay F32; matrices whose rows do not fit the type's blocks fall back to F16 */
#define ADD(nm, d0, d1, dims, std_)                                                                   \
    do {                                                                                              \
        tensor_spec *t = &g.specs[n++];                                                               \
        snprintf(t->name, sizeof t->name, "%s", nm);                                                  \
        t->ne[0] = (d0);                                                                              \
        t->ne[1] = (d1);                                                                              \
        t->n_dims = (dims);                                                                           \
        t->std = (std_);                                                                              \
        t->type = (dims) == 1 ? SPROUT_TYPE_F32 : ((d0) % sprout_type_block_size(type) ? SPROUT_TYPE_F16 : type); \
    } while (0)
    ADD("token_embd.weight", p->n_embd, p->n_vocab, 2, 0.02f);
    ADD("output_norm.weight", p->n_embd, 1, 1, -1.f);
    if (!p->tied) ADD("output.weight", p->n_embd, p->n_vocab, 2, 0.02f);
    char name[64];
    const float s_in = 1.f / sqrtf((float)p->n_embd), s_ff = 1.f / sqrtf((float)p->n_ff);
    for (int l = 0; l < p->n_layer; l++) {
#define L(s) (snprintf(name, sizeof name, "blk.%d.%s", l, s), name)
        ADD(L("attn_norm.weight"), p->n_embd, 1, 1, -1.f);
        ADD(L("attn_q.weight"), p->n_embd, p->n_embd, 2, s_in);
        ADD(L("attn_k.weight"), p->n_embd, kv, 2, s_in);
        ADD(L("attn_v.weight"), p->n_embd, kv, 2, s_in);
        if (p->qkv_bias) {
            ADD(L("attn_q.bias"), p->n_embd, 1, 1, 0.02f);
            ADD(L("attn_k.bias"), kv, 1, 1, 0.02f);
            ADD(L("attn_v.bias"), kv, 1, 1, 0.02f);
        }
        ADD(L("attn_output.weight"), p->n_embd, p->n_embd, 2, s_in);
        ADD(L("ffn_norm.weight"), p->n_embd, 1, 1, -1.f);
        ADD(L("ffn_gate.weight"), p->n_embd, p->n_ff, 2, s_in);
        ADD(L("ffn_up.weight"), p->n_embd, p->n_ff, 2, s_in);
        ADD(L("ffn_down.weight"), p->n_ff, p->n_embd, 2, s_ff);
#undef L
    }
#undef ADD
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
#undef KEY
    /* an SPM vocabulary: specials, the 256 byte tokens, then fillers */
    const char **tokens = malloc((size_t)p->n_vocab * sizeof *tokens);
    char *storage = malloc((size_t)p->n_vocab * 16);
    float *scores = malloc((size_t)p->n_vocab * sizeof *scores);
    int32_t *types = malloc((size_t)p->n_vocab * sizeof *types);
    for (int i = 0; i < p->n_vocab; i++) {
        char *t = storage + (size_t)i * 16;
        if (i < 3) snprintf(t, 16, "%s", i == 0 ? "<unk>" : i == 1 ? "<s>" : "</s>");
        else if (i < 259) snprintf(t, 16, "<0x%02X>", i - 3);
        else snprintf(t, 16, "tok%d", i);
        tokens[i] = t;
        scores[i] = -(float)i;
        types[i] = i == 0 ? 2 : i < 3 ? 3 : i < 259 ? 6 : 1;
    }
    sp_gguf_writer_set_str(w, "tokenizer.ggml.model", "llama", 5);
    sp_gguf_writer_set_str_array(w, "tokenizer.ggml.tokens", tokens, NULL, (uint64_t)p->n_vocab);
    sp_gguf_writer_set_array(w, "tokenizer.ggml.scores", SPROUT_GGUF_FLOAT32, scores, (uint64_t)p->n_vocab);
    sp_gguf_writer_set_array(w, "tokenizer.ggml.token_type", SPROUT_GGUF_INT32, types, (uint64_t)p->n_vocab);
    for (int i = 0; i < n; i++) {
        const int64_t ne[2] = {g.specs[i].ne[0], g.specs[i].ne[1]};
        sp_gguf_writer_add_tensor(w, g.specs[i].name, g.specs[i].type, g.specs[i].n_dims, ne, NULL);
    }
    g.buf = malloc((size_t)(p->n_ff > p->n_embd ? p->n_ff : p->n_embd) * sizeof(float) * 2);
    sp_gguf_write_options opt = {.fill = fill, .fill_user = &g};
    sprout_status st = sp_gguf_writer_write(w, argv[3], &opt, NULL);
    if (st != SPROUT_OK) fprintf(stderr, "make_model: %s\n", sprout_last_error());
    sp_gguf_writer_free(w);
    free(tokens);
    free(storage);
    free(scores);
    free(types);
    free(g.buf);
    free(g.specs);
    return st == SPROUT_OK ? 0 : 1;
}
