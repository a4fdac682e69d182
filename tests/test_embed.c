/* Embeddings on the real stories260K model, through the scheduler:
 * - last-token pooling is the final-norm hidden state whose projection by
 *   the output matrix gives llama.cpp's logits (../shared/reference);
 * - mean pooling is the mean of every prefix's last-token state (the model
 *   is causal), CLS the first token's, normalising divides by the length;
 * - a vector is the same bits alone, among other requests (generations and
 *   embeddings, batched in one pass) and over a cached prefix, and
 *   generations beside embeddings give what they give alone;
 * - a prompt may fill the context but not pass it; bad pooling, cancel and
 *   shutdown end requests with an error, never a vector. */
#include <jansson.h>

#include "logit_ref.h"
#include "runtime/forward.h"
#include "test_util.h"

static char model_path[1024];

/* one thread (as every model of this test): the references decode beside
 * the scheduler's thread, and two pools of two spin on a shared host
 * (3.0 s here where one thread takes 0.7 s) */
static sprout_model *load_model(int32_t n_ctx) {
    sprout_model_params mp = {.struct_size = sizeof mp, .n_threads = 1, .n_ctx = n_ctx, .kv_type = SPROUT_KV_F32, .kv_type_set = true};
    sprout_model *m = NULL;
    CHECK_MSG(sprout_model_load(model_path, &mp, &m) == SPROUT_OK, "%s", sprout_last_error());
    return m;
}

static sprout_scheduler *scheduler(sprout_model *m, int32_t n_slots, int32_t n_ctx, int32_t chunk) {
    sprout_scheduler_params sp = {.struct_size = sizeof sp, .n_slots = n_slots, .n_ctx = n_ctx, .prefill_chunk = chunk,
                                  .kv_type = SPROUT_KV_F32, .kv_type_set = true};
    sprout_scheduler *s = NULL;
    CHECK_MSG(sprout_scheduler_create(m, &sp, &s) == SPROUT_OK, "%s", sprout_last_error());
    return s;
}

static sprout_request *submit_embed(sprout_scheduler *s, const sprout_token *ids, size_t n, sprout_pooling pooling, bool normalize) {
    sprout_request_params rp = {.struct_size = sizeof rp, .prompt = ids, .n_prompt = n, .embed = true, .pooling = pooling,
                                .normalize = normalize};
    sprout_request *req = NULL;
    CHECK_MSG(sprout_scheduler_submit(s, &rp, &req) == SPROUT_OK, "%s", sprout_last_error());
    return req;
}

/* The request's vector, copied into out (dim floats); false if it failed. */
static bool take_vector(sprout_request *req, float *out, size_t dim) {
    sprout_result *r = NULL;
    bool ok = req && sprout_request_wait(req, &r) == SPROUT_OK;
    size_t n = 0;
    const float *v = ok ? sprout_result_embedding(r, &n) : NULL;
    CHECK_MSG(ok && v && n == dim, "no vector of %zu floats: %s", dim, ok ? "wrong size" : sprout_last_error());
    if (ok && v && n == dim) memcpy(out, v, dim * sizeof *out);
    else ok = false;
    sprout_result_free(r);
    sprout_request_free(req);
    return ok;
}

static bool embed_one(sprout_scheduler *s, const sprout_token *ids, size_t n, sprout_pooling pooling, bool normalize, float *out,
                      size_t dim) {
    return take_vector(submit_embed(s, ids, n, pooling, normalize), out, dim);
}

static double max_diff(const float *a, const float *b, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++) m = fmax(m, fabs((double)a[i] - b[i]));
    return m;
}

static sprout_token *json_ids(const json_t *arr, size_t *n) {
    *n = json_array_size(arr);
    sprout_token *ids = malloc((*n ? *n : 1) * sizeof *ids);
    for (size_t i = 0; ids && i < *n; i++) ids[i] = (sprout_token)json_integer_value(json_array_get(arr, i));
    return ids;
}

/* logits[v] = output row v . h, as a model's head computes them from the
 * file: its output matrix (or the tied token embeddings; gemma's always),
 * plus output.bias, then the final soft-cap where the file has one. */
static bool project(const sprout_model *m, const float *h, float *logits, int32_t n_vocab, int32_t dim) {
    const sprout_gguf *g = sprout_model_gguf(m);
    const char *arch = sprout_model_architecture(m);
    int64_t t = strncmp(arch, "gemma", 5) ? sprout_gguf_find_tensor(g, "output.weight") : -1;
    if (t < 0) t = sprout_gguf_find_tensor(g, "token_embd.weight");
    if (t < 0 || sprout_gguf_tensor_dim(g, t, 0) != dim || sprout_gguf_tensor_dim(g, t, 1) < n_vocab) return false;
    float *w = malloc((size_t)n_vocab * (size_t)dim * sizeof *w);
    bool ok = w && sprout_dequantize(sprout_gguf_tensor_type(g, t), sprout_gguf_tensor_data(g, t), w, (int64_t)n_vocab * dim) == SPROUT_OK;
    const int64_t b = sprout_gguf_find_tensor(g, "output.bias");
    const float *bias = b >= 0 && sprout_gguf_tensor_type(g, b) == SPROUT_TYPE_F32 ? sprout_gguf_tensor_data(g, b) : NULL;
    char key[128];
    snprintf(key, sizeof key, "%s.final_logit_softcapping", arch);
    const sprout_gguf_value *capv = sprout_gguf_find(g, key);
    double cap = 0;
    if (capv) sprout_gguf_value_f64(capv, &cap);
    for (int32_t v = 0; ok && v < n_vocab; v++) {
        double sum = bias ? bias[v] : 0;
        for (int32_t i = 0; i < dim; i++) sum += (double)w[(size_t)v * (size_t)dim + (size_t)i] * h[i];
        logits[v] = (float)(cap > 0 ? cap * tanh(sum / cap) : sum);
    }
    free(w);
    return ok;
}

/* --- against llama.cpp's logits ------------------------------------------------------------------- */

static void test_last_token_state(void) {
    char path[1024];
    snprintf(path, sizeof path, "%s/reference/stories260K-greedy.json", test_shared_dir());
    json_t *ref = json_load_file(path, 0, NULL);
    CHECK_MSG(ref != NULL, "cannot read %s", path);
    sprout_model *m = load_model(512);
    sprout_scheduler *s = m ? scheduler(m, 2, 512, 0) : NULL;
    if (!ref || !s) goto done;
    const int32_t dim = sprout_model_n_embd(m), n_vocab = sprout_model_n_vocab(m);
    float *h = malloc((size_t)dim * sizeof *h), *logits = malloc((size_t)n_vocab * sizeof *logits);
    const json_t *cases = json_object_get(ref, "cases");
    CHECK(json_array_size(cases) > 0);
    for (size_t c = 0; c < json_array_size(cases); c++) {
        const json_t *cs = json_array_get(cases, c);
        size_t n;
        sprout_token *ids = json_ids(json_object_get(cs, "prompt_tokens_with_bos"), &n);
        if (!embed_one(s, ids, n, SPROUT_POOLING_LAST, false, h, (size_t)dim) || !project(m, h, logits, n_vocab, dim)) {
            CHECK_MSG(false, "case %zu: no projection", c);
            free(ids);
            continue;
        }
        const json_t *fl = json_object_get(cs, "first_position_logits");
        CHECK(json_array_size(fl) == (size_t)n_vocab);
        double max = 0;
        for (int32_t v = 0; v < n_vocab; v++) max = fmax(max, fabs(logits[v] - json_number_value(json_array_get(fl, (size_t)v))));
        CHECK_MSG(max <= 1e-3, "case %zu: the last-token state projects to logits %g away from llama.cpp's", c, max);
        free(ids);
    }
    free(h);
    free(logits);
done:
    sprout_scheduler_free(s);
    sprout_model_free(m);
    json_decref(ref);
}

/* Every architecture in ../shared/arch: the last token's state of the
 * reference prompt, projected by the file's head, gives llama.cpp's last
 * logits within the file's own tolerance. */
static bool arch_case(const char *dir, const char *name, void *ctx) {
    (void)ctx;
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    json_t *ref = json_load_file(path, 0, NULL);
    CHECK_MSG(ref != NULL, "cannot read %s", path);
    if (!ref) return false;
    snprintf(path, sizeof path, "%s/%s", dir, json_string_value(json_object_get(ref, "model_file")));
    sprout_model_params mp = {.struct_size = sizeof mp, .n_threads = 1};
    sprout_model *m = NULL;
    CHECK_MSG(sprout_model_load(path, &mp, &m) == SPROUT_OK, "%s: %s", path, sprout_last_error());
    sprout_scheduler *s = m ? scheduler(m, 1, 64, 0) : NULL;
    const int32_t dim = sprout_model_n_embd(m), n_vocab = sprout_model_n_vocab(m);
    size_t n = 0;
    sprout_token *ids = json_ids(json_object_get(ref, "tokens"), &n);
    float *h = malloc((size_t)(dim > 0 ? dim : 1) * sizeof *h), *logits = malloc((size_t)(n_vocab > 0 ? n_vocab : 1) * sizeof *logits);
    if (s && embed_one(s, ids, n, SPROUT_POOLING_LAST, false, h, (size_t)dim)) {
        CHECK_MSG(project(m, h, logits, n_vocab, dim), "%s: no head to project with", name);
        const json_t *last = json_object_get(ref, "last_logits"), *tol = json_object_get(ref, "tolerance");
        double rel;
        const double max_abs = logits_vs_ref(logits, last, n_vocab, &rel);
        CHECK_MSG(max_abs <= json_number_value(json_object_get(tol, "max_abs")) && rel <= json_number_value(json_object_get(tol, "rel_rms")),
                  "%s: the last state projects %g (rel %g) from llama.cpp's logits", name, max_abs, rel);
        /* and, closer, the engine's own logits for the same prompt (its head reads int8 activations where its type does) */
        sp_context fwd;
        float *own = malloc((size_t)n * (size_t)n_vocab * sizeof *own);
        sp_batch_token *batch = malloc(n * sizeof *batch);
        if (own && batch && sp_context_init(&fwd, m, 64, 64, 1, 2, SP_KV_F32) == SPROUT_OK) {
            for (size_t i = 0; i < n; i++) batch[i] = (sp_batch_token){ids[i], (int32_t)i, 0, i + 1 == n, false, true, NULL};
            CHECK(sp_forward(&fwd, batch, (int32_t)n, own) == SPROUT_OK);
            double own_max = 0, scale = 0;
            for (int32_t v = 0; v < n_vocab; v++) {
                own_max = fmax(own_max, fabs(logits[v] - own[v]));
                scale = fmax(scale, fabs(own[v]));
            }
            /* measured: 1e-6 (F32) to 0.09 (the int8 heads) on logits up to 15; the soft-cap alone moves gemma2's by 0.3-0.6 */
            CHECK_MSG(own_max <= 0.02 * scale, "%s: the last state projects %g from the engine's logits (largest %g)", name, own_max, scale);
            sp_context_free(&fwd);
        }
        free(own);
        free(batch);
    }
    free(h);
    free(logits);
    free(ids);
    sprout_scheduler_free(s);
    sprout_model_free(m);
    json_decref(ref);
    return true;
}

static void test_every_architecture(void) {
    CHECK(test_for_each_shared_file("arch", ".json", arch_case, NULL) >= 10);
}

/* --- the poolings against each other ---------------------------------------------------------------- */

static const char *texts[] = {
    "Once upon a time",
    "Lily wanted to play with her ball in the park, but it started to rain.",
    "A cat sat",
};
#define N_TEXTS (sizeof texts / sizeof texts[0])

static void test_poolings(void) {
    sprout_model *m = load_model(512);
    /* prompt chunks of 3 tokens: a mean spans several forward passes */
    sprout_scheduler *s = m ? scheduler(m, 3, 256, 3) : NULL;
    if (!s) goto done;
    const size_t dim = (size_t)sprout_model_n_embd(m);
    CHECK(dim == 64);
    CHECK(sprout_model_pooling(m) == SPROUT_POOLING_MEAN); /* the file names none */
    float mean[64], last[64], cls[64], prefix[64], unit[64], deflt[64];
    double sum[64];
    for (size_t t = 0; t < N_TEXTS; t++) {
        sprout_token *ids = NULL;
        size_t n = 0;
        CHECK(sprout_model_tokenize_prompt(m, texts[t], strlen(texts[t]), false, &ids, &n) == SPROUT_OK);
        if (!ids || n < 2) continue;
        bool ok = embed_one(s, ids, n, SPROUT_POOLING_MEAN, false, mean, dim) && embed_one(s, ids, n, SPROUT_POOLING_LAST, false, last, dim) &&
                  embed_one(s, ids, n, SPROUT_POOLING_CLS, false, cls, dim) && embed_one(s, ids, n, SPROUT_POOLING_MEAN, true, unit, dim) &&
                  embed_one(s, ids, n, SPROUT_POOLING_MODEL, true, deflt, dim);
        /* every prefix's last state, summed */
        for (size_t i = 0; i < dim; i++) sum[i] = 0;
        for (size_t k = 1; ok && k <= n; k++) {
            ok = embed_one(s, ids, k, SPROUT_POOLING_LAST, false, prefix, dim);
            for (size_t i = 0; ok && i < dim; i++) sum[i] += prefix[i];
            if (ok && k == 1) CHECK_MSG(max_diff(prefix, cls, dim) == 0, "text %zu: CLS is not the first token's state", t);
            if (ok && k == n) CHECK_MSG(max_diff(prefix, last, dim) == 0, "text %zu: last differs between two runs", t);
        }
        if (ok) {
            double worst = 0, norm2 = 0;
            for (size_t i = 0; i < dim; i++) worst = fmax(worst, fabs(sum[i] / (double)n - mean[i]));
            CHECK_MSG(worst <= 1e-5, "text %zu: the mean differs from the prefixes' states by %g", t, worst);
            for (size_t i = 0; i < dim; i++) norm2 += (double)mean[i] * mean[i];
            double unit_err = 0, len2 = 0;
            for (size_t i = 0; i < dim; i++) {
                unit_err = fmax(unit_err, fabs(unit[i] - mean[i] / sqrt(norm2)));
                len2 += (double)unit[i] * unit[i];
            }
            CHECK_MSG(unit_err <= 1e-6 && fabs(len2 - 1) <= 1e-5, "text %zu: normalised mean off by %g (length^2 %g)", t, unit_err, len2);
            CHECK_MSG(max_diff(unit, deflt, dim) == 0, "text %zu: the model's pooling is not mean", t);
            CHECK_MSG(max_diff(mean, last, dim) > 1e-3, "text %zu: mean and last pooling agree", t);
        }
        sprout_free(ids);
    }
done:
    sprout_scheduler_free(s);
    sprout_model_free(m);
}

/* --- batching, caching, generations beside --------------------------------------------------------- */

static void test_together(void) {
    sprout_model *m = load_model(512);
    sprout_scheduler *s = m ? scheduler(m, 4, 256, 5) : NULL;
    if (!s) goto done;
    const size_t dim = (size_t)sprout_model_n_embd(m);
    sprout_token *ids[N_TEXTS] = {0};
    size_t n[N_TEXTS] = {0};
    float alone_mean[N_TEXTS][64], alone_last[N_TEXTS][64], got[64];
    for (size_t t = 0; t < N_TEXTS; t++) {
        CHECK(sprout_model_tokenize_prompt(m, texts[t], strlen(texts[t]), false, &ids[t], &n[t]) == SPROUT_OK);
        CHECK(embed_one(s, ids[t], n[t], SPROUT_POOLING_MEAN, true, alone_mean[t], dim));
        CHECK(embed_one(s, ids[t], n[t], SPROUT_POOLING_LAST, true, alone_last[t], dim));
    }
    /* a greedy generation alone */
    sprout_generation_config cfg;
    sprout_generation_config_init(&cfg);
    cfg.temperature = 0;
    cfg.max_new_tokens = 24;
    sprout_request_params gp = {.struct_size = sizeof gp, .prompt = ids[1], .n_prompt = n[1], .config = &cfg};
    sprout_request *gen = NULL;
    sprout_result *gen_alone = NULL, *gen_together = NULL;
    CHECK(sprout_scheduler_submit(s, &gp, &gen) == SPROUT_OK);
    CHECK(gen && sprout_request_wait(gen, &gen_alone) == SPROUT_OK);
    sprout_request_free(gen);

    /* everything at once: the generation, then both poolings of every text */
    gen = NULL;
    CHECK(sprout_scheduler_submit(s, &gp, &gen) == SPROUT_OK);
    sprout_request *reqs[2 * N_TEXTS];
    for (size_t t = 0; t < N_TEXTS; t++) {
        reqs[2 * t] = submit_embed(s, ids[t], n[t], SPROUT_POOLING_MEAN, true);
        reqs[2 * t + 1] = submit_embed(s, ids[t], n[t], SPROUT_POOLING_LAST, true);
    }
    for (size_t t = 0; t < N_TEXTS; t++) {
        if (take_vector(reqs[2 * t], got, dim)) CHECK_MSG(max_diff(got, alone_mean[t], dim) == 0, "text %zu: mean differs in a batch", t);
        if (take_vector(reqs[2 * t + 1], got, dim)) CHECK_MSG(max_diff(got, alone_last[t], dim) == 0, "text %zu: last differs in a batch", t);
    }
    CHECK(gen && sprout_request_wait(gen, &gen_together) == SPROUT_OK);
    sprout_request_free(gen);
    size_t na = 0, nt = 0;
    const sprout_token *ta = sprout_result_tokens(gen_alone, &na), *tt = sprout_result_tokens(gen_together, &nt);
    CHECK_MSG(na == nt && na > 0 && !memcmp(ta, tt, na * sizeof *ta), "the generation changed beside embeddings");
    sprout_result_free(gen_alone);
    sprout_result_free(gen_together);

    /* the slots now cache these prompts: last pooling reuses them, mean recomputes */
    for (size_t t = 0; t < N_TEXTS; t++) {
        if (embed_one(s, ids[t], n[t], SPROUT_POOLING_LAST, true, got, dim))
            CHECK_MSG(max_diff(got, alone_last[t], dim) == 0, "text %zu: last differs over a cached prefix", t);
        if (embed_one(s, ids[t], n[t], SPROUT_POOLING_MEAN, true, got, dim))
            CHECK_MSG(max_diff(got, alone_mean[t], dim) == 0, "text %zu: mean differs over a cached prefix", t);
    }
    sprout_scheduler_stats st = {.struct_size = sizeof st};
    CHECK(sprout_scheduler_stats_get(s, &st) == SPROUT_OK && st.cached_prompt_tokens > 0);
    for (size_t t = 0; t < N_TEXTS; t++) sprout_free(ids[t]);
done:
    sprout_scheduler_free(s);
    sprout_model_free(m);
}

/* --- limits and errors --------------------------------------------------------------------------------- */

static void test_limits(void) {
    sprout_model *m = load_model(64);
    sprout_scheduler *s = m ? scheduler(m, 2, 32, 0) : NULL;
    if (!s) goto done;
    const size_t dim = (size_t)sprout_model_n_embd(m);
    sprout_token ids[40];
    for (int i = 0; i < 40; i++) ids[i] = i == 0 ? 1 : 300 + i;
    float v[64];
    /* the whole context: fine for an embedding (a generation needs room) */
    CHECK(embed_one(s, ids, 32, SPROUT_POOLING_MEAN, true, v, dim));
    sprout_request *req = NULL;
    sprout_request_params rp = {.struct_size = sizeof rp, .prompt = ids, .n_prompt = 33, .embed = true};
    CHECK(sprout_scheduler_submit(s, &rp, &req) == SPROUT_ERR_OUT_OF_RANGE && !req);
    rp.n_prompt = 0;
    CHECK(sprout_scheduler_submit(s, &rp, &req) == SPROUT_ERR_INVALID_ARGUMENT && !req);
    rp.n_prompt = 4;
    rp.pooling = (sprout_pooling)7;
    CHECK(sprout_scheduler_submit(s, &rp, &req) == SPROUT_ERR_INVALID_ARGUMENT && !req);
    rp.pooling = SPROUT_POOLING_MEAN;
    const sprout_token bad[] = {1, 99999};
    rp.prompt = bad;
    rp.n_prompt = 2;
    CHECK(sprout_scheduler_submit(s, &rp, &req) == SPROUT_ERR_INVALID_ARGUMENT && !req);
    /* cancelled before it runs: an error, not a vector */
    rp.prompt = ids;
    rp.n_prompt = 32;
    sprout_request *many[8];
    for (int i = 0; i < 8; i++) CHECK(sprout_scheduler_submit(s, &rp, &many[i]) == SPROUT_OK);
    sprout_request_cancel(many[7]);
    sprout_result *r = NULL;
    CHECK(sprout_request_wait(many[7], &r) == SPROUT_ERR_CANCELLED && !r);
    for (int i = 0; i < 7; i++) CHECK(take_vector(many[i], v, dim));
    sprout_request_free(many[7]);
    /* a generation's result has no vector; names round-trip */
    size_t n = 99;
    CHECK(sprout_result_embedding(NULL, &n) == NULL && n == 0);
    sprout_pooling p = SPROUT_POOLING_MODEL;
    CHECK(sprout_pooling_from_name("last", &p) == SPROUT_OK && p == SPROUT_POOLING_LAST);
    CHECK(sprout_pooling_from_name("max", &p) == SPROUT_ERR_INVALID_ARGUMENT);
    CHECK(!strcmp(sprout_pooling_name(SPROUT_POOLING_CLS), "cls") && !sprout_pooling_name(SPROUT_POOLING_MODEL));
    /* shutdown with embeddings queued: each ends with an error */
    for (int i = 0; i < 8; i++) CHECK(sprout_scheduler_submit(s, &rp, &many[i]) == SPROUT_OK);
    sprout_scheduler_free(s);
    s = NULL;
    for (int i = 0; i < 8; i++) {
        r = NULL;
        const sprout_status st = sprout_request_wait(many[i], &r);
        CHECK_MSG(st == SPROUT_OK ? sprout_result_embedding(r, NULL) != NULL : st == SPROUT_ERR_CANCELLED, "request %d: %s", i,
                  sprout_status_str(st));
        sprout_result_free(r);
        sprout_request_free(many[i]);
    }
done:
    sprout_scheduler_free(s);
    sprout_model_free(m);
}

int main(void) {
    snprintf(model_path, sizeof model_path, "%s/models/stories260K.gguf", test_shared_dir());
    test_last_token_state();
    test_every_architecture();
    test_poolings();
    test_together();
    test_limits();
    TEST_MAIN_END();
}
