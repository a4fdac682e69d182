/* BERT and nomic-bert (embeddings only) on small random-weight models
 * written here, with the real BERT vocabulary from ../shared/tokenizer: the
 * scheduler's vectors against a plain double-precision model written from
 * the architectures' definitions (token type 0 and a norm of the
 * embeddings, bidirectional attention, post-norm blocks, mean or CLS
 * pooling; BERT: learned positions, biases everywhere, a tanh-GELU FFN;
 * nomic-bert: NEOX RoPE, a fused QKV projection, a SwiGLU FFN, no biases);
 * every token sees the whole text; texts batched together give the same
 * bits as alone; generation is refused, as are texts past the positions.
 * SPROUT_KEEP_BERT=PATH keeps the model (to compare with llama.cpp's
 * llama-embedding by hand). */
#include <unistd.h>

#include "gguf/gguf_writer.h"
#include "test_util.h"

enum { E = 32, FF = 64, LAYERS = 2, HEADS = 4, POSITIONS = 64, TYPES = 2 };
static const float EPS = 1e-12f;

typedef struct tensor {
    const char *name;
    int64_t ne0, ne1;
    float *data;
} tensor;

static tensor tensors[64];
static int n_tensors;
static bool nomic; /* the model written and checked: nomic-bert, else bert */
static const float ROPE_BASE = 1000.f;
static int32_t n_vocab;
static uint64_t rng = 0x5eed;

static float uniform(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (float)((double)(rng >> 11) / 9007199254740992.0) * 2.f - 1.f;
}

/* A tensor of random values: around `center` (norm weights), spread `scale`. */
static float *add(const char *name, int64_t ne0, int64_t ne1, float center, float scale) {
    tensor *t = &tensors[n_tensors++];
    t->name = strdup(name);
    t->ne0 = ne0;
    t->ne1 = ne1;
    t->data = malloc((size_t)(ne0 * ne1) * sizeof(float));
    for (int64_t i = 0; i < ne0 * ne1; i++) t->data[i] = center + scale * uniform();
    return t->data;
}

static const float *get(const char *name) {
    for (int i = 0; i < n_tensors; i++)
        if (!strcmp(tensors[i].name, name)) return tensors[i].data;
    return NULL;
}

static const float *layer_get(int il, const char *suffix) {
    char name[96];
    snprintf(name, sizeof name, "blk.%d.%s", il, suffix);
    return get(name);
}

static bool write_bert(const char *path) {
    char vocab_path[1024];
    snprintf(vocab_path, sizeof vocab_path, "%s/tokenizer/ggml-vocab-bert-bge.gguf", test_shared_dir());
    sprout_gguf *vocab = NULL;
    if (sprout_gguf_open(vocab_path, &vocab) != SPROUT_OK) return false;
    n_vocab = (int32_t)sprout_gguf_array_len(sprout_gguf_find(vocab, "tokenizer.ggml.tokens"));
    sp_gguf_writer *w = sp_gguf_writer_new();
    for (int64_t i = 0; i < sprout_gguf_kv_count(vocab); i++)
        if (!strncmp(sprout_gguf_kv_key(vocab, i), "tokenizer.", 10))
            sp_gguf_writer_set_value(w, sprout_gguf_kv_key(vocab, i), sprout_gguf_kv_value(vocab, i));
    const char *arch = nomic ? "nomic-bert" : "bert";
    sp_gguf_writer_set_str(w, "general.architecture", arch, strlen(arch));
    const uint32_t u[] = {POSITIONS, E, FF, LAYERS, HEADS, 1};
    const char *keys[] = {"context_length", "embedding_length", "feed_forward_length", "block_count", "attention.head_count", "pooling_type"};
    char key[96];
    for (int i = 0; i < 6; i++) {
        snprintf(key, sizeof key, "%s.%s", arch, keys[i]);
        sp_gguf_writer_set_scalar(w, key, SPROUT_GGUF_UINT32, &u[i]);
    }
    snprintf(key, sizeof key, "%s.attention.layer_norm_epsilon", arch);
    sp_gguf_writer_set_scalar(w, key, SPROUT_GGUF_FLOAT32, &EPS);
    const bool causal = false;
    snprintf(key, sizeof key, "%s.attention.causal", arch);
    sp_gguf_writer_set_scalar(w, key, SPROUT_GGUF_BOOL, &causal);
    snprintf(key, sizeof key, "%s.rope.freq_base", arch);
    if (nomic) sp_gguf_writer_set_scalar(w, key, SPROUT_GGUF_FLOAT32, &ROPE_BASE);

    const float s_in = 1.f / sqrtf((float)E), s_ff = 1.f / sqrtf((float)FF);
    add("token_embd.weight", E, n_vocab, 0, 0.5f);
    add("token_types.weight", E, TYPES, 0, 0.5f);
    if (!nomic) add("position_embd.weight", E, POSITIONS, 0, 0.5f);
    add("token_embd_norm.weight", E, 1, 1, 0.2f);
    add("token_embd_norm.bias", E, 1, 0, 0.2f);
    char name[96];
    for (int il = 0; il < LAYERS; il++) {
#define L(s) (snprintf(name, sizeof name, "blk.%d.%s", il, s), name)
        if (nomic) {
            add(L("attn_qkv.weight"), E, 3 * E, 0, 2 * s_in); /* rows: q, then k, then v */
        } else {
            add(L("attn_q.weight"), E, E, 0, 2 * s_in);
            add(L("attn_q.bias"), E, 1, 0, 0.1f);
            add(L("attn_k.weight"), E, E, 0, 2 * s_in);
            add(L("attn_k.bias"), E, 1, 0, 0.1f);
            add(L("attn_v.weight"), E, E, 0, s_in);
            add(L("attn_v.bias"), E, 1, 0, 0.1f);
        }
        add(L("attn_output.weight"), E, E, 0, s_in);
        if (!nomic) add(L("attn_output.bias"), E, 1, 0, 0.1f);
        add(L("attn_output_norm.weight"), E, 1, 1, 0.2f);
        add(L("attn_output_norm.bias"), E, 1, 0, 0.2f);
        add(L("ffn_up.weight"), E, FF, 0, 2 * s_in);
        if (nomic) add(L("ffn_gate.weight"), E, FF, 0, 2 * s_in);
        else add(L("ffn_up.bias"), FF, 1, 0, 0.1f);
        add(L("ffn_down.weight"), FF, E, 0, s_ff);
        if (!nomic) add(L("ffn_down.bias"), E, 1, 0, 0.1f);
        add(L("layer_output_norm.weight"), E, 1, 1, 0.2f);
        add(L("layer_output_norm.bias"), E, 1, 0, 0.2f);
#undef L
    }
    for (int i = 0; i < n_tensors; i++) {
        const int64_t ne[2] = {tensors[i].ne0, tensors[i].ne1};
        sp_gguf_writer_add_tensor(w, tensors[i].name, SPROUT_TYPE_F32, tensors[i].ne1 > 1 ? 2 : 1, ne, tensors[i].data);
    }
    const bool ok = sp_gguf_writer_write(w, path, NULL, NULL) == SPROUT_OK;
    sp_gguf_writer_free(w);
    sprout_gguf_close(vocab);
    return ok;
}

/* --- BERT as defined, in double --------------------------------------------------------------- */

static void layer_norm(double *x, const float *g, const float *b) {
    double mean = 0, var = 0;
    for (int i = 0; i < E; i++) mean += x[i];
    mean /= E;
    for (int i = 0; i < E; i++) var += (x[i] - mean) * (x[i] - mean);
    const double scale = 1.0 / sqrt(var / E + EPS);
    for (int i = 0; i < E; i++) x[i] = (x[i] - mean) * scale * g[i] + b[i];
}

/* y[o] = sum_i W[o][i] x[i] + bias[o]: a GGUF matrix of ne0 = n_in */
static void linear(const float *w, const float *bias, const double *x, int n_in, int n_out, double *y) {
    for (int o = 0; o < n_out; o++) {
        double s = bias ? bias[o] : 0;
        for (int i = 0; i < n_in; i++) s += (double)w[(size_t)o * n_in + i] * x[i];
        y[o] = s;
    }
}

static void reference(const sprout_token *ids, int n, double out[][E]) {
    double (*x)[E] = out;
    for (int t = 0; t < n; t++) {
        for (int i = 0; i < E; i++)
            x[t][i] = (double)get("token_embd.weight")[(size_t)ids[t] * E + i] + get("token_types.weight")[i] +
                      (nomic ? 0 : get("position_embd.weight")[(size_t)t * E + i]);
        layer_norm(x[t], get("token_embd_norm.weight"), get("token_embd_norm.bias"));
    }
    static double q[POSITIONS][E], k[POSITIONS][E], v[POSITIONS][E], a[POSITIONS][E], o[E], up[FF], down[E];
    const int hd = E / HEADS;
    for (int il = 0; il < LAYERS; il++) {
        for (int t = 0; t < n; t++) {
            if (nomic) {
                const float *qkv = layer_get(il, "attn_qkv.weight");
                linear(qkv, NULL, x[t], E, E, q[t]);
                linear(qkv + E * E, NULL, x[t], E, E, k[t]);
                linear(qkv + 2 * E * E, NULL, x[t], E, E, v[t]);
                for (int h = 0; h < HEADS; h++) /* NEOX RoPE: dimension i turns with i + hd/2 */
                    for (int i = 0; i < hd / 2; i++) {
                        const double theta = t * pow(ROPE_BASE, -2.0 * i / hd), c = cos(theta), sn = sin(theta);
                        double *vecs[2] = {q[t] + h * hd, k[t] + h * hd};
                        for (int z = 0; z < 2; z++) {
                            const double a0 = vecs[z][i], a1 = vecs[z][i + hd / 2];
                            vecs[z][i] = a0 * c - a1 * sn;
                            vecs[z][i + hd / 2] = a0 * sn + a1 * c;
                        }
                    }
            } else {
                linear(layer_get(il, "attn_q.weight"), layer_get(il, "attn_q.bias"), x[t], E, E, q[t]);
                linear(layer_get(il, "attn_k.weight"), layer_get(il, "attn_k.bias"), x[t], E, E, k[t]);
                linear(layer_get(il, "attn_v.weight"), layer_get(il, "attn_v.bias"), x[t], E, E, v[t]);
            }
        }
        for (int t = 0; t < n; t++)
            for (int h = 0; h < HEADS; h++) { /* every token sees every token */
                double s[POSITIONS], max = -INFINITY, sum = 0;
                for (int j = 0; j < n; j++) {
                    s[j] = 0;
                    for (int d = 0; d < hd; d++) s[j] += q[t][h * hd + d] * k[j][h * hd + d];
                    s[j] /= sqrt((double)hd);
                    max = fmax(max, s[j]);
                }
                for (int j = 0; j < n; j++) sum += (s[j] = exp(s[j] - max));
                for (int d = 0; d < hd; d++) {
                    double acc = 0;
                    for (int j = 0; j < n; j++) acc += s[j] / sum * v[j][h * hd + d];
                    a[t][h * hd + d] = acc;
                }
            }
        for (int t = 0; t < n; t++) {
            linear(layer_get(il, "attn_output.weight"), layer_get(il, "attn_output.bias"), a[t], E, E, o);
            for (int i = 0; i < E; i++) x[t][i] += o[i];
            layer_norm(x[t], layer_get(il, "attn_output_norm.weight"), layer_get(il, "attn_output_norm.bias"));
            linear(layer_get(il, "ffn_up.weight"), layer_get(il, "ffn_up.bias"), x[t], E, FF, up);
            if (nomic) { /* silu(gate x) * up x */
                static double gate[FF];
                linear(layer_get(il, "ffn_gate.weight"), NULL, x[t], E, FF, gate);
                for (int i = 0; i < FF; i++) up[i] *= gate[i] / (1 + exp(-gate[i]));
            } else {
                for (int i = 0; i < FF; i++) up[i] = 0.5 * up[i] * (1 + tanh(sqrt(2 / M_PI) * (up[i] + 0.044715 * up[i] * up[i] * up[i])));
            }
            linear(layer_get(il, "ffn_down.weight"), layer_get(il, "ffn_down.bias"), up, FF, E, down);
            for (int i = 0; i < E; i++) x[t][i] += down[i];
            layer_norm(x[t], layer_get(il, "layer_output_norm.weight"), layer_get(il, "layer_output_norm.bias"));
        }
    }
}

/* --- through sprout ------------------------------------------------------------------------------ */

static bool embed(sprout_scheduler *s, const sprout_token *ids, size_t n, sprout_pooling pooling, float *out) {
    sprout_request_params rp = {.struct_size = sizeof rp, .prompt = ids, .n_prompt = n, .embed = true, .pooling = pooling};
    sprout_request *req = NULL;
    sprout_result *r = NULL;
    bool ok = sprout_scheduler_submit(s, &rp, &req) == SPROUT_OK && sprout_request_wait(req, &r) == SPROUT_OK;
    CHECK_MSG(ok, "embedding: %s", sprout_last_error());
    size_t dim = 0;
    const float *v = ok ? sprout_result_embedding(r, &dim) : NULL;
    ok = ok && v && dim == E;
    if (ok) memcpy(out, v, sizeof(float) * E);
    sprout_result_free(r);
    sprout_request_free(req);
    return ok;
}

static const char *texts[] = {"hello world", "The quick brown fox jumps over the lazy dog.", "café au lait, s'il vous plaît",
                              "a"};
#define N_TEXTS (sizeof texts / sizeof texts[0])

static void test_against_definition(sprout_model *m, sprout_kv_type kv, double tolerance) {
    sprout_scheduler_params sp = {.struct_size = sizeof sp, .n_slots = 2, .kv_type = kv, .kv_type_set = true};
    sprout_scheduler *s = NULL;
    CHECK_MSG(sprout_scheduler_create(m, &sp, &s) == SPROUT_OK, "%s", sprout_last_error());
    if (!s) return;
    CHECK(sprout_model_pooling(m) == SPROUT_POOLING_MEAN); /* the file's pooling_type */
    static double ref[POSITIONS][E];
    for (size_t t = 0; t < N_TEXTS; t++) {
        sprout_token *ids = NULL;
        size_t n = 0;
        CHECK(sprout_model_tokenize_prompt(m, texts[t], strlen(texts[t]), false, &ids, &n) == SPROUT_OK);
        if (!ids || n > POSITIONS) continue;
        reference(ids, (int)n, ref);
        float mean[E], cls[E];
        if (embed(s, ids, n, SPROUT_POOLING_MODEL, mean) && embed(s, ids, n, SPROUT_POOLING_CLS, cls)) {
            double worst_mean = 0, worst_cls = 0;
            for (int i = 0; i < E; i++) { /* the vectors as they are (not normalised) */
                double avg = 0;
                for (size_t j = 0; j < n; j++) avg += ref[j][i];
                worst_mean = fmax(worst_mean, fabs(mean[i] - avg / (double)n));
                worst_cls = fmax(worst_cls, fabs(cls[i] - ref[0][i]));
            }
            CHECK_MSG(worst_mean <= tolerance && worst_cls <= tolerance, "text %zu (%zu tokens, kv %s): mean off by %g, CLS by %g", t, n,
                      kv == SPROUT_KV_F32 ? "f32" : "f16", worst_mean, worst_cls);
        }
        sprout_free(ids);
    }
    sprout_scheduler_free(s);
}

static void test_behaviour(sprout_model *m) {
    sprout_scheduler_params sp = {.struct_size = sizeof sp, .n_slots = 3, .prefill_chunk = 2};
    sprout_scheduler *s = NULL;
    CHECK(sprout_scheduler_create(m, &sp, &s) == SPROUT_OK);
    if (!s) return;
    /* the first token's state depends on the last token (bidirectional) */
    const sprout_token a[] = {101, 7592, 2088, 102}, b[] = {101, 7592, 2088, 999, 102};
    float ca[E], cb[E];
    if (embed(s, a, 4, SPROUT_POOLING_CLS, ca) && embed(s, b, 5, SPROUT_POOLING_CLS, cb)) {
        double d = 0;
        for (int i = 0; i < E; i++) d = fmax(d, fabs(ca[i] - cb[i]));
        CHECK_MSG(d > 1e-3, "the first token did not see the later ones (%g)", d);
    }
    /* together as alone, though prompt chunks are 2 tokens (a text goes whole) */
    float alone[N_TEXTS][E];
    sprout_token *ids[N_TEXTS];
    size_t n[N_TEXTS];
    for (size_t t = 0; t < N_TEXTS; t++) {
        sprout_model_tokenize_prompt(m, texts[t], strlen(texts[t]), false, &ids[t], &n[t]);
        CHECK(embed(s, ids[t], n[t], SPROUT_POOLING_MEAN, alone[t]));
    }
    sprout_request *reqs[N_TEXTS];
    for (size_t t = 0; t < N_TEXTS; t++) {
        sprout_request_params rp = {.struct_size = sizeof rp, .prompt = ids[t], .n_prompt = n[t], .embed = true};
        CHECK(sprout_scheduler_submit(s, &rp, &reqs[t]) == SPROUT_OK);
    }
    for (size_t t = 0; t < N_TEXTS; t++) {
        sprout_result *r = NULL;
        size_t dim = 0;
        CHECK(sprout_request_wait(reqs[t], &r) == SPROUT_OK);
        const float *v = sprout_result_embedding(r, &dim);
        CHECK_MSG(v && dim == E && !memcmp(v, alone[t], sizeof alone[t]), "text %zu differs in a batch", t);
        sprout_result_free(r);
        sprout_request_free(reqs[t]);
        sprout_free(ids[t]);
    }
    /* the longest text: the learned positions (nomic-bert: the context), then a batch (one pass) */
    sprout_scheduler_params wide = {.struct_size = sizeof wide, .n_slots = 1, .n_ctx = 2 * POSITIONS};
    sprout_scheduler *ws = NULL;
    CHECK(sprout_scheduler_create(m, &wide, &ws) == SPROUT_OK);
    CHECK_MSG(sprout_scheduler_max_embed_tokens(ws) == (nomic ? 2 * POSITIONS : POSITIONS), "%d", sprout_scheduler_max_embed_tokens(ws));
    sprout_scheduler_free(ws);
    wide.n_batch = 16;
    ws = NULL;
    CHECK(sprout_scheduler_create(m, &wide, &ws) == SPROUT_OK && sprout_scheduler_max_embed_tokens(ws) == 16);
    sprout_scheduler_free(ws);
    /* no text from an embedding model; nothing past the learned positions */
    sprout_request_params gen = {.struct_size = sizeof gen, .prompt = a, .n_prompt = 4};
    sprout_request *req = NULL;
    CHECK(sprout_scheduler_submit(s, &gen, &req) == SPROUT_ERR_UNSUPPORTED && strstr(sprout_last_error(), "no output head"));
    sprout_token many[POSITIONS + 1];
    for (int i = 0; i <= POSITIONS; i++) many[i] = 1000 + i;
    sprout_request_params longer = {.struct_size = sizeof longer, .prompt = many, .n_prompt = POSITIONS + 1, .embed = true};
    CHECK(sprout_scheduler_submit(s, &longer, &req) == SPROUT_ERR_OUT_OF_RANGE);
    longer.n_prompt = POSITIONS;
    float v[E];
    CHECK(embed(s, many, POSITIONS, SPROUT_POOLING_MEAN, v));
    sprout_scheduler_free(s);
    sprout_pipeline *p = NULL;
    sprout_result *r = NULL;
    CHECK(sprout_pipeline_create(m, NULL, &p) == SPROUT_OK);
    CHECK(p && sprout_generate(p, "hello", NULL, NULL, NULL, &r) == SPROUT_ERR_UNSUPPORTED && !r);
    sprout_pipeline_free(p);
}

int main(void) {
    const char *keep = getenv("SPROUT_KEEP_BERT"); /* a prefix: PREFIX-bert.gguf, PREFIX-nomic-bert.gguf */
    for (int variant = 0; variant < 2; variant++) {
        nomic = variant == 1;
        char path[1024] = "/tmp/sprout-test-bert-XXXXXX";
        const int fd = keep && *keep ? -1 : mkstemp(path);
        if (fd >= 0) close(fd);
        if (keep && *keep) snprintf(path, sizeof path, "%s-%s.gguf", keep, nomic ? "nomic-bert" : "bert");
        CHECK_MSG(write_bert(path), "cannot write %s", path);
        sprout_model *m = NULL;
        CHECK_MSG(sprout_model_load(path, NULL, &m) == SPROUT_OK, "%s", sprout_last_error());
        if (m) {
            CHECK(!strcmp(sprout_model_architecture(m), nomic ? "nomic-bert" : "bert") && sprout_model_n_embd(m) == E);
            test_against_definition(m, SPROUT_KV_F32, 2e-5);
            test_against_definition(m, SPROUT_KV_F16, 5e-3);
            test_behaviour(m);
        }
        sprout_model_free(m);
        if (!(keep && *keep)) unlink(path);
        for (int i = 0; i < n_tensors; i++) free(tensors[i].data), free((void *)tensors[i].name);
        n_tensors = 0;
    }
    TEST_MAIN_END();
}
