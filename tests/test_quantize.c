/* sprout_quantize_model on ../shared/arch: quantizing llama.cpp's own F32
 * model must reproduce the files llama-quantize made from it (same type for
 * every tensor, same bytes), every file type must load and stay within a
 * stated distance of the F32 logits, and the mixes must choose the types
 * llama-quantize chose for each architecture. */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "quantize/recipe.h"
#include "runtime/forward.h"
#include "test_util.h"

static char tmp_dir[] = "/tmp/sprout_test_quantize_XXXXXX";

/* The F32 model's reference input and llama.cpp's logits for it. */
static int32_t ref_tokens[64];
static int32_t ref_n_tokens;
static float *ref_logits; /* last position */
static int32_t ref_vocab;

static sprout_status quantize(const char *in, const char *out, sprout_file_type ft, bool pure) {
    sprout_quantize_params p;
    sprout_quantize_params_default(&p);
    p.file_type = ft;
    p.pure = pure;
    p.n_threads = 2;
    return sprout_quantize_model(in, out, &p, NULL);
}

/* Logits at the last of the reference tokens; false if the model fails to load or run. */
static bool last_logits(const char *path, float *out) {
    sprout_model_params mp = {.struct_size = sizeof mp, .n_threads = 2};
    sprout_model *m = NULL;
    if (sprout_model_load(path, &mp, &m) != SPROUT_OK) return false;
    sp_context ctx;
    bool ok = sprout_model_n_vocab(m) == ref_vocab && sp_context_init(&ctx, m, 512, 64, 1, 2, SP_KV_F32) == SPROUT_OK;
    float *all = malloc((size_t)ref_n_tokens * (size_t)ref_vocab * sizeof(float));
    if (ok) {
        sp_batch_token batch[64];
        for (int32_t i = 0; i < ref_n_tokens; i++) batch[i] = (sp_batch_token){ref_tokens[i], i, 0, true, false, true, NULL};
        ok = sp_forward(&ctx, batch, ref_n_tokens, all) == SPROUT_OK;
        if (ok) memcpy(out, all + (size_t)(ref_n_tokens - 1) * (size_t)ref_vocab, (size_t)ref_vocab * sizeof(float));
        sp_context_free(&ctx);
    }
    free(all);
    sprout_model_free(m);
    return ok;
}

static double rel_rms(const float *a, const float *ref, int32_t n) {
    double e = 0, r = 0;
    for (int32_t i = 0; i < n; i++) {
        e += ((double)a[i] - ref[i]) * ((double)a[i] - ref[i]);
        r += (double)ref[i] * ref[i];
    }
    return sqrt(e / r);
}

static bool load_reference(const char *arch_dir) {
    char path[2048];
    snprintf(path, sizeof path, "%s/llama-F32.json", arch_dir);
    json_t *ref = json_load_file(path, 0, NULL);
    if (!ref) return false;
    const json_t *tokens = json_object_get(ref, "tokens"), *last = json_object_get(ref, "last_logits");
    ref_n_tokens = (int32_t)json_array_size(tokens);
    ref_vocab = (int32_t)json_array_size(last);
    ref_logits = malloc((size_t)ref_vocab * sizeof(float));
    for (int32_t i = 0; i < ref_n_tokens && i < 64; i++) ref_tokens[i] = (int32_t)json_integer_value(json_array_get(tokens, (size_t)i));
    for (int32_t v = 0; v < ref_vocab; v++) ref_logits[v] = (float)json_number_value(json_array_get(last, (size_t)v));
    json_decref(ref);
    return ref_n_tokens > 0 && ref_n_tokens <= 64 && ref_vocab > 0;
}

static double rmse_vs(const float *x, const sprout_gguf *g, int64_t i, float *y, int64_t n) {
    sprout_dequantize(sprout_gguf_tensor_type(g, i), sprout_gguf_tensor_data(g, i), y, n);
    double e = 0;
    for (int64_t k = 0; k < n; k++) e += ((double)x[k] - y[k]) * ((double)x[k] - y[k]);
    return sqrt(e / (double)n);
}

/* Every tensor of `got` has the type of `want`; with `source` given, the
 * quantization error of each (RMSE against the source's values) is within 1%
 * of `want`'s, and few blocks differ at all (at most 2% of a tensor's,
 * 0.5% of the file's: the K-quant searches may settle a near-tie the other
 * way than llama.cpp's build, whose compiler fuses multiply-adds). */
static void check_same_tensors(const char *got_path, const char *want_path, const char *source_path) {
    sprout_gguf *got = NULL, *want = NULL, *source = NULL;
    CHECK_MSG(sprout_gguf_open(got_path, &got) == SPROUT_OK, "%s: %s", got_path, sprout_last_error());
    CHECK_MSG(sprout_gguf_open(want_path, &want) == SPROUT_OK, "%s: %s", want_path, sprout_last_error());
    if (source_path) CHECK_MSG(sprout_gguf_open(source_path, &source) == SPROUT_OK, "%s", sprout_last_error());
    if (!got || !want || (source_path && !source)) goto done;
    CHECK_MSG(sprout_gguf_tensor_count(got) == sprout_gguf_tensor_count(want), "%s: tensor count", got_path);
    int64_t same_type = 0, n = sprout_gguf_tensor_count(want), blocks = 0, blocks_differ = 0;
    double worst_ratio = 1.0;
    for (int64_t i = 0; i < n; i++) {
        const char *name = sprout_gguf_tensor_name(want, i);
        const int64_t j = sprout_gguf_find_tensor(got, name);
        if (j < 0) {
            CHECK_MSG(0, "%s: no tensor %s", got_path, name);
            continue;
        }
        const sprout_type type = sprout_gguf_tensor_type(want, i);
        const bool type_ok = sprout_gguf_tensor_type(got, j) == type;
        CHECK_MSG(type_ok, "%s: %s is %s, llama-quantize chose %s", got_path, name,
                  sprout_type_name(sprout_gguf_tensor_type(got, j)), sprout_type_name(type));
        same_type += type_ok;
        if (!type_ok || !source) continue;
        const int64_t elements = sprout_gguf_tensor_elements(want, i), nb = elements / sprout_type_block_size(type);
        const size_t bb = sprout_type_block_bytes(type);
        const char *a = sprout_gguf_tensor_data(got, j), *b = sprout_gguf_tensor_data(want, i);
        int64_t differ = 0;
        for (int64_t k = 0; k < nb; k++) differ += memcmp(a + (size_t)k * bb, b + (size_t)k * bb, bb) != 0;
        blocks += nb;
        blocks_differ += differ;
        CHECK_MSG(differ * 50 <= nb, "%s: %s: %lld of %lld blocks differ from llama-quantize's", got_path, name,
                  (long long)differ, (long long)nb);
        if (!differ) continue;
        const int64_t s = sprout_gguf_find_tensor(source, name);
        float *x = malloc((size_t)elements * sizeof(float)), *y = malloc((size_t)elements * sizeof(float));
        sprout_dequantize(sprout_gguf_tensor_type(source, s), sprout_gguf_tensor_data(source, s), x, elements);
        const double ours = rmse_vs(x, got, j, y, elements), theirs = rmse_vs(x, want, i, y, elements);
        const double ratio = ours / theirs;
        if (fabs(ratio - 1) > fabs(worst_ratio - 1)) worst_ratio = ratio;
        CHECK_MSG(fabs(ratio - 1) <= 0.01, "%s: %s: RMSE %.6g vs llama-quantize's %.6g", got_path, name, ours, theirs);
        free(x);
        free(y);
    }
    CHECK_MSG(blocks_differ * 200 <= blocks, "%s: %lld of %lld blocks differ", got_path, (long long)blocks_differ,
              (long long)blocks);
    printf("  %-20s %lld/%lld types", strrchr(want_path, '/') + 1, (long long)same_type, (long long)n);
    if (source)
        printf(", %lld/%lld blocks differ, worst RMSE ratio %.5f", (long long)blocks_differ, (long long)blocks, worst_ratio);
    printf("\n");
done:
    sprout_gguf_close(got);
    sprout_gguf_close(want);
    sprout_gguf_close(source);
}

/* The last logits of a model against the llama.cpp JSON of a file of the
 * same type, within that JSON's tolerance. */
static void check_logits_like(const char *model_path, const char *json_path) {
    json_t *ref = json_load_file(json_path, 0, NULL);
    CHECK_MSG(ref != NULL, "cannot read %s", json_path);
    if (!ref) return;
    const json_t *last = json_object_get(ref, "last_logits"), *tol = json_object_get(ref, "tolerance");
    float *want = malloc((size_t)ref_vocab * sizeof(float)), *got = malloc((size_t)ref_vocab * sizeof(float));
    for (int32_t v = 0; v < ref_vocab; v++) want[v] = (float)json_number_value(json_array_get(last, (size_t)v));
    const bool ran = last_logits(model_path, got);
    CHECK_MSG(ran, "%s: %s", model_path, sprout_last_error());
    double max_abs = 0;
    for (int32_t v = 0; ran && v < ref_vocab; v++)
        if (fabs((double)got[v] - want[v]) > max_abs) max_abs = fabs((double)got[v] - want[v]);
    const double rel = ran ? rel_rms(got, want, ref_vocab) : INFINITY;
    const double tol_abs = json_number_value(json_object_get(tol, "max_abs")), tol_rel = json_number_value(json_object_get(tol, "rel_rms"));
    printf("  %-20s logits vs llama.cpp's of its own file: max|d| %.3g rel %.3g (tolerance %.3g/%.3g)\n",
           strrchr(json_path, '/') + 1, max_abs, rel, tol_abs, tol_rel);
    CHECK_MSG(max_abs <= tol_abs && rel <= tol_rel, "%s: logits off", json_path);
    free(want);
    free(got);
    json_decref(ref);
}

/* llama-quantize's files of llama-F32.gguf, by the file type that makes them. */
static void test_matches_llama_quantize(const char *arch_dir) {
    static const struct {
        const char *file;
        const char *ftype;
        bool pure;
    } made[] = {
        {"llama-F16", "F16", false},   {"llama-BF16", "BF16", false}, {"llama-Q4_0", "Q4_0", true},
        {"llama-Q4_1", "Q4_1", true},  {"llama-Q5_0", "Q5_0", true},  {"llama-Q5_1", "Q5_1", true},
        {"llama-Q8_0", "Q8_0", true},  {"llama-Q2_K", "Q2_K", true},  {"llama-Q3_K", "Q3_K_M", true},
        {"llama-Q4_K", "Q4_K_M", true}, {"llama-Q5_K", "Q5_K_M", true}, {"llama-Q6_K", "Q6_K", true},
        {"llama-Q4_K_M", "Q4_K_M", false},
    };
    printf("sprout quantize of llama-F32.gguf vs llama-quantize's files:\n");
    char in[2048], want[2048], out[2048];
    snprintf(in, sizeof in, "%s/llama-F32.gguf", arch_dir);
    for (size_t k = 0; k < sizeof made / sizeof made[0]; k++) {
        snprintf(want, sizeof want, "%s/%s.gguf", arch_dir, made[k].file);
        if (access(want, R_OK) != 0) continue;
        snprintf(out, sizeof out, "%s/%s.gguf", tmp_dir, made[k].file);
        sprout_file_type ft;
        CHECK(sprout_file_type_from_name(made[k].ftype, &ft));
        CHECK_MSG(quantize(in, out, ft, made[k].pure) == SPROUT_OK, "%s: %s", made[k].file, sprout_last_error());
        check_same_tensors(out, want, in);
        snprintf(want, sizeof want, "%s/%s.json", arch_dir, made[k].file);
        check_logits_like(out, want);
        unlink(out);
    }
}

/* The mixes of the other architectures, made by llama-quantize from their
 * F32 files; ours start from the Q8_0 files, so only the types compare. */
static void test_mix_types_per_arch(const char *arch_dir) {
    /* quick: run under the sanitizers (SPROUT_TEST_QUICK) too; four, each
     * of a different shape (biases, a parallel block, sliding windows, a
     * fused QKV): the quantizing is the same code for all */
    static const struct {
        const char *name;
        bool quick;
    } archs[] = {{"qwen2", true},   {"qwen3", false},  {"phi2", true},      {"phi3", false},  {"gemma", false},
                 {"gemma2", false}, {"gemma3", true},  {"stablelm", false}, {"falcon", true}};
    const bool few = test_quick_run();
    printf("Q4_K_M mix types vs llama-quantize:\n");
    char in[2048], want[2048], out[2048];
    for (size_t k = 0; k < sizeof archs / sizeof archs[0]; k++) {
        if (few && !archs[k].quick) continue;
        const char *arch = archs[k].name;
        snprintf(in, sizeof in, "%s/%s-Q8_0.gguf", arch_dir, arch);
        snprintf(want, sizeof want, "%s/%s-Q4_K_M.gguf", arch_dir, arch);
        if (access(in, R_OK) != 0 || access(want, R_OK) != 0) continue;
        snprintf(out, sizeof out, "%s/%s-Q4_K_M.gguf", tmp_dir, arch);
        CHECK_MSG(quantize(in, out, SPROUT_FTYPE_Q4_K_M, false) == SPROUT_OK, "%s: %s", arch, sprout_last_error());
        check_same_tensors(out, want, NULL);
        unlink(out);
    }
}

/* The types ../shared has no files of: llama-quantize --pure made them from
 * llama-F32.gguf, and sprout's quantizers write the same bytes
 * (test_quant_types; tests/data/quant_types/README.md), so sprout's own
 * file of the same type must give llama.cpp's logits of its file, kept in
 * tests/data/quant_types, within their tolerance. MXFP4_MOE with --pure
 * puts every matrix in MXFP4. */
static void test_types_without_files(const char *arch_dir) {
    static const char *const ftypes[] = {"TQ1_0", "TQ2_0", "MXFP4_MOE"};
    char in[2048], out[2048], want[2048];
    snprintf(in, sizeof in, "%s/llama-F32.gguf", arch_dir);
    printf("sprout quantize --pure vs llama.cpp's logits of llama-quantize's files:\n");
    for (size_t k = 0; k < sizeof ftypes / sizeof ftypes[0]; k++) {
        sprout_file_type ft;
        CHECK(sprout_file_type_from_name(ftypes[k], &ft));
        snprintf(out, sizeof out, "%s/llama-%s.gguf", tmp_dir, ftypes[k]);
        CHECK_MSG(quantize(in, out, ft, true) == SPROUT_OK, "%s: %s", ftypes[k], sprout_last_error());
        snprintf(want, sizeof want, "%s/llama-%s.json", SPROUT_QUANT_TYPES_DATA_DIR, ftypes[k]);
        check_logits_like(out, want);
        unlink(out);
    }
    /* the MXFP4_MOE mix: experts in MXFP4, every other matrix (the output too) in Q8_0 */
    sp_recipe r = {.file_type = SPROUT_FTYPE_MXFP4_MOE, .n_gqa = 8, .n_layer = 2, .n_attn_v = 2, .has_output = true};
    CHECK(sp_recipe_choose(&r, sp_tensor_role_of("blk.0.ffn_down_exps.weight"), 2880) == SPROUT_TYPE_MXFP4);
    CHECK(sp_recipe_choose(&r, sp_tensor_role_of("blk.0.ffn_down.weight"), 2880) == SPROUT_TYPE_Q8_0);
    CHECK(sp_recipe_choose(&r, sp_tensor_role_of("blk.0.attn_q.weight"), 2880) == SPROUT_TYPE_Q8_0);
    CHECK(sp_recipe_choose(&r, sp_tensor_role_of("token_embd.weight"), 2880) == SPROUT_TYPE_Q8_0);
    CHECK(sp_recipe_choose(&r, sp_tensor_role_of("output.weight"), 2880) == SPROUT_TYPE_Q8_0);
    /* the ternary mixes: a Q4_K embedding, a Q6_K output; Q4_0 for rows that do not fit 256 */
    sp_recipe t = {.file_type = SPROUT_FTYPE_TQ2_0, .n_gqa = 8, .n_layer = 2, .n_attn_v = 2, .has_output = true};
    CHECK(sp_recipe_choose(&t, SP_ROLE_TOKEN_EMBD, 2048) == SPROUT_TYPE_Q4_K);
    CHECK(sp_recipe_choose(&t, SP_ROLE_OUTPUT, 2048) == SPROUT_TYPE_Q6_K);
    CHECK(sp_recipe_choose(&t, sp_tensor_role_of("blk.0.ffn_down_exps.weight"), 2048) == SPROUT_TYPE_TQ2_0);
    CHECK(sp_type_fitting_rows(SPROUT_TYPE_TQ1_0, 2048 + 32) == SPROUT_TYPE_Q4_0);
}

/* Every file type loads and runs, and general.file_type names it. The bound
 * is on the relative RMS distance of the last position's 512 logits from
 * llama.cpp's F32 logits, about 1.5 times what sprout measured; random
 * weights through 256-wide matrices amplify quantization error far more than
 * trained ones (Q8_0 measures 0.044, Q4_K_M 0.38, Q2_K 1.2), so these bounds
 * catch a broken type, and the comparisons above with llama.cpp's own
 * quantized files are the precise check. */
static void test_every_type_runs(const char *arch_dir) {
    /* quick (under the sanitizers): one type of each family from F32 and
     * two from F16; each type's quantizer and kernels run there in
     * test_quant and test_kernels, and here whole in the plain build */
    static const struct {
        sprout_file_type ft;
        double max_rel_rms;
        bool quick;
    } types[] = {
        {SPROUT_FTYPE_F32, 3e-3, false},    {SPROUT_FTYPE_F16, 3e-3, true},     {SPROUT_FTYPE_BF16, 0.015, false},
        {SPROUT_FTYPE_Q8_0, 0.07, true},    {SPROUT_FTYPE_Q6_K, 0.2, false},    {SPROUT_FTYPE_Q5_1, 0.45, true},
        {SPROUT_FTYPE_Q5_0, 0.4, false},    {SPROUT_FTYPE_Q5_K_M, 0.4, true},   {SPROUT_FTYPE_Q5_K_S, 0.4, false},
        {SPROUT_FTYPE_Q4_1, 1.0, false},    {SPROUT_FTYPE_Q4_0, 0.8, false},    {SPROUT_FTYPE_Q4_K_M, 0.6, true},
        {SPROUT_FTYPE_Q4_K_S, 0.5, false},  {SPROUT_FTYPE_Q3_K_L, 1.4, false},  {SPROUT_FTYPE_Q3_K_M, 1.4, true},
        {SPROUT_FTYPE_Q3_K_S, 1.45, false}, {SPROUT_FTYPE_Q2_K, 1.8, true},     {SPROUT_FTYPE_IQ4_NL, 0.9, false},
        {SPROUT_FTYPE_IQ4_XS, 0.85, true},
    };
    char in[2048], out[2048];
    float *logits = malloc((size_t)ref_vocab * sizeof(float));
    const char *sources[] = {"llama-F32.gguf", "llama-F16.gguf"};
    /* from the F16 source, quick, two types: reading it is one path whatever the target */
    const bool quick = test_quick_run();
    for (size_t s = 0; s < 2; s++) {
        snprintf(in, sizeof in, "%s/%s", arch_dir, sources[s]);
        printf("every type from %s (rel RMS of last logits vs llama.cpp F32):\n", sources[s]);
        for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
            if (quick && (!types[k].quick || (s == 1 && types[k].ft != SPROUT_FTYPE_F16 && types[k].ft != SPROUT_FTYPE_Q4_K_M)))
                continue;
            const char *name = sprout_file_type_name(types[k].ft);
            snprintf(out, sizeof out, "%s/%s.gguf", tmp_dir, name);
            sprout_status st = quantize(in, out, types[k].ft, false);
            CHECK_MSG(st == SPROUT_OK, "%s -> %s: %s", sources[s], name, sprout_last_error());
            if (st != SPROUT_OK) continue;
            bool ran = last_logits(out, logits);
            CHECK_MSG(ran, "%s: %s", name, sprout_last_error());
            double rel = ran ? rel_rms(logits, ref_logits, ref_vocab) : INFINITY;
            printf("  %-7s rel RMS %.4f (bound %.4f)\n", name, rel, types[k].max_rel_rms);
            CHECK_MSG(rel <= types[k].max_rel_rms, "%s from %s: rel RMS %.4f > %.4f", name, sources[s], rel,
                      types[k].max_rel_rms);
            sprout_gguf *g = NULL;
            uint32_t ft = 0;
            CHECK(sprout_gguf_open(out, &g) == SPROUT_OK && sprout_gguf_get_u32(g, "general.file_type", &ft) == SPROUT_OK &&
                  ft == (uint32_t)types[k].ft);
            sprout_gguf_close(g);
            unlink(out);
        }
    }
    free(logits);
}

/* llama-quantize's IQ4 mixes of a TinyLlama-shaped model (22 layers, 8
 * query heads per KV head; its log, ngxson/llama.cpp 3f545be): attention V
 * and the first 22/8 FFN-down matrices in Q5_K, the output in Q6_K, the
 * rest IQ4_XS (or IQ4_NL), and IQ4_NL where rows do not fit IQ4_XS's 256.
 * (sprout quantize of that model's F16 file gave llama-quantize's type for
 * every tensor, and its IQ4 tensors byte for byte.) */
static void test_iq4_mix(void) {
    static const sp_tensor_role layer[] = {SP_ROLE_ATTN_Q,      SP_ROLE_ATTN_K,  SP_ROLE_ATTN_V,   SP_ROLE_ATTN_OUTPUT,
                                           SP_ROLE_FFN_GATE,    SP_ROLE_FFN_UP,  SP_ROLE_FFN_DOWN};
    static const sprout_file_type fts[] = {SPROUT_FTYPE_IQ4_NL, SPROUT_FTYPE_IQ4_XS};
    for (size_t f = 0; f < 2; f++) {
        sp_recipe r = {.file_type = fts[f], .n_gqa = 8, .n_layer = 22, .n_attn_v = 22, .has_output = true};
        const sprout_type base = sp_file_type_base(fts[f]);
        int q5k = 0, other = 0;
        CHECK(sp_recipe_choose(&r, SP_ROLE_TOKEN_EMBD, 2048) == base);
        for (int l = 0; l < 22; l++)
            for (size_t k = 0; k < sizeof layer / sizeof layer[0]; k++) {
                const sprout_type t = sp_recipe_choose(&r, layer[k], layer[k] == SP_ROLE_FFN_DOWN ? 5632 : 2048);
                const bool more_bits = layer[k] == SP_ROLE_ATTN_V || (layer[k] == SP_ROLE_FFN_DOWN && l < 22 / 8);
                q5k += t == SPROUT_TYPE_Q5_K;
                other += t != base && t != SPROUT_TYPE_Q5_K;
                CHECK_MSG(t == (more_bits ? SPROUT_TYPE_Q5_K : base), "%s layer %d role %d: %s", sprout_type_name(base), l,
                          (int)layer[k], sprout_type_name(t));
            }
        CHECK(q5k == 24 && other == 0);
        CHECK(sp_recipe_choose(&r, SP_ROLE_OUTPUT, 2048) == SPROUT_TYPE_Q6_K);
        /* with 4 query heads per KV head or fewer, attention V keeps the base type */
        sp_recipe few = {.file_type = fts[f], .n_gqa = 2, .n_layer = 22, .n_attn_v = 22, .has_output = true};
        CHECK(sp_recipe_choose(&few, SP_ROLE_ATTN_V, 2048) == base);
    }
    CHECK(sp_type_fitting_rows(SPROUT_TYPE_IQ4_XS, 2048 + 32) == SPROUT_TYPE_IQ4_NL);
    CHECK(sp_type_fitting_rows(SPROUT_TYPE_IQ4_NL, 2048 + 16) == SPROUT_TYPE_F16);
}

/* With an argument, only that part: "llama" (llama-quantize's files and the
 * IQ4 mixes), "mixes" (the other architectures' mixes) or "types" (every
 * file type runs); CTest runs the three side by side. */
int main(int argc, char **argv) {
    const char *part = argc > 1 ? argv[1] : NULL;
    CHECK_MSG(!part || !strcmp(part, "llama") || !strcmp(part, "mixes") || !strcmp(part, "types"), "unknown part %s", part);
    char arch_dir[1024];
    snprintf(arch_dir, sizeof arch_dir, "%s/arch", test_shared_dir());
    CHECK(mkdtemp(tmp_dir) != NULL);
    CHECK_MSG(load_reference(arch_dir), "cannot read %s/llama-F32.json", arch_dir);
    if (!part || !strcmp(part, "llama")) {
        test_matches_llama_quantize(arch_dir);
        test_iq4_mix();
        test_types_without_files(arch_dir);
    }
    if (!part || !strcmp(part, "mixes")) test_mix_types_per_arch(arch_dir);
    if (!part || !strcmp(part, "types")) test_every_type_runs(arch_dir);
    rmdir(tmp_dir);
    free(ref_logits);
    TEST_MAIN_END();
}
