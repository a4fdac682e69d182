/* The IQ mixes end to end on ../shared/arch/llama-F32.gguf (n_embd 256, so
 * every matrix fits the 256-element blocks), with the importance matrix
 * llama-imatrix made for it: each tensor must get the type llama-quantize
 * gave it, and every IQ tensor (and every one copied) llama-quantize's
 * bytes; the K-quant tensors differ where llama.cpp used the importance,
 * which sprout's K-quants do not take (tests/data/quant_iq/README.md).
 * Part "plans" checks the types of all ten mixes; the others, named by
 * file type, write one mix whole. The matrices are written from the JSON
 * the repository keeps (imatrix_json.h) into the temporary folder. */
#include <stdint.h>

#include "imatrix_json.h"
#include "quantize/recipe.h"
#include "test_util.h"

#define MAX_TENSORS 64

typedef struct expected {
    char name[64], type[16], hash[20];
} expected;

static const char *data_path(const char *file) {
    static char path[1024];
    snprintf(path, sizeof path, "%s/%s", SPROUT_QUANT_IQ_DATA_DIR, file);
    return path;
}

static char imatrix_paths[2][1024]; /* llama-F32's, stories260K's */

/* The GGUF of data file NAME.imatrix.json (written once per run), or NULL. */
static const char *imatrix_gguf(const char *name) {
    char *path = imatrix_paths[strcmp(name, "llama-F32") != 0];
    if (path[0]) return path;
    char json[1024];
    snprintf(json, sizeof json, "%s/%s.imatrix.json", SPROUT_QUANT_IQ_DATA_DIR, name);
    snprintf(path, sizeof imatrix_paths[0], "%s/%s.imatrix.gguf", test_temp_dir(), name);
    if (imatrix_json_to_gguf(json, path)) return path;
    path[0] = 0;
    return NULL;
}

/* llama-quantize's tensors for one file type, from llama-mixes.txt. */
static int read_expected(const char *file_type, expected *out) {
    FILE *f = fopen(data_path("llama-mixes.txt"), "r");
    if (!f) return 0;
    char line[256], ft[32];
    int n = 0;
    while (fgets(line, sizeof line, f) && n < MAX_TENSORS) {
        expected e;
        if (line[0] == '#' || sscanf(line, "%31s %63s %15s %19s", ft, e.name, e.type, e.hash) != 4) continue;
        if (!strcmp(ft, file_type)) out[n++] = e;
    }
    fclose(f);
    return n;
}

typedef struct plan_check {
    const expected *want;
    int n_want, seen, wrong;
} plan_check;

static void on_plan(void *user, const sprout_quantize_tensor_plan *p) {
    plan_check *c = user;
    c->seen++;
    for (int i = 0; i < c->n_want; i++)
        if (!strcmp(c->want[i].name, p->tensor_name)) {
            const bool same = !strcmp(c->want[i].type, sprout_type_name(p->to_type));
            CHECK_MSG(same, "%s: %s, llama-quantize chose %s", p->tensor_name, sprout_type_name(p->to_type), c->want[i].type);
            c->wrong += !same;
            return;
        }
    CHECK_MSG(false, "%s: not in llama-quantize's file", p->tensor_name);
}

static bool stop_at_once(void *user, const sprout_quantize_progress *p) {
    (void)user;
    (void)p;
    return false;
}

static uint64_t fnv1a(const uint8_t *p, uint64_t n) {
    uint64_t h = 1469598103934665603ull;
    for (uint64_t k = 0; k < n; k++) h = (h ^ p[k]) * 1099511628211ull;
    return h;
}

/* Quantizes to file_type with the importance matrix; whole: write the file
 * and compare its bytes, else stop after the plan. */
static void check_mix(const char *file_type, bool whole) {
    expected want[MAX_TENSORS];
    const int n_want = read_expected(file_type, want);
    CHECK_MSG(n_want == 21, "%s: %d tensors in llama-mixes.txt", file_type, n_want);
    char in[1024], out[1024];
    snprintf(in, sizeof in, "%s/arch/llama-F32.gguf", test_shared_dir());
    snprintf(out, sizeof out, "%s/iq-%s.gguf", test_temp_dir(), file_type);
    sprout_quantize_params p;
    sprout_quantize_params_default(&p);
    CHECK(sprout_file_type_from_name(file_type, &p.file_type));
    p.imatrix_path = imatrix_gguf("llama-F32");
    CHECK(p.imatrix_path);
    p.n_threads = 2;
    plan_check c = {want, n_want, 0, 0};
    p.plan = on_plan;
    p.user = &c;
    if (!whole) p.progress = stop_at_once;
    const sprout_status st = sprout_quantize_model(in, out, &p, NULL);
    CHECK_MSG(st == (whole ? SPROUT_OK : SPROUT_ERR_CANCELLED), "%s: %s", file_type, sprout_last_error());
    CHECK_MSG(c.seen == n_want && c.wrong == 0, "%s: %d of %d tensors planned, %d differ", file_type, c.seen, n_want, c.wrong);
    if (!whole || st != SPROUT_OK) return;
    sprout_gguf *g = NULL;
    CHECK(sprout_gguf_open(out, &g) == SPROUT_OK);
    int compared = 0;
    for (int i = 0; g && i < n_want; i++) {
        const int64_t t = sprout_gguf_find_tensor(g, want[i].name);
        CHECK_MSG(t >= 0, "%s: no %s", file_type, want[i].name);
        if (t < 0 || (strncmp(want[i].type, "IQ", 2) && strcmp(want[i].type, "F32"))) continue;
        char hash[20];
        snprintf(hash, sizeof hash, "%016llx",
                 (unsigned long long)fnv1a(sprout_gguf_tensor_data(g, t), sprout_gguf_tensor_bytes(g, t)));
        CHECK_MSG(!strcmp(hash, want[i].hash), "%s: %s (%s) differs from llama-quantize's", file_type, want[i].name, want[i].type);
        compared++;
    }
    CHECK_MSG(compared >= 13, "%s: only %d tensors compared", file_type, compared);
    sprout_gguf_close(g);
    remove(out);
}

/* A whole model: the IQ2_XXS mix without importance is refused naming
 * --imatrix, and an importance matrix of another model is refused naming
 * the tensor whose size does not match. */
static void test_model_refusals(void) {
    char in[1024], out[1024];
    snprintf(in, sizeof in, "%s/arch/llama-F32.gguf", test_shared_dir());
    snprintf(out, sizeof out, "%s/iq-refused.gguf", test_temp_dir());
    sprout_quantize_params p;
    sprout_quantize_params_default(&p);
    p.file_type = SPROUT_FTYPE_IQ2_XXS;
    p.n_threads = 1;
    CHECK(sprout_quantize_model(in, out, &p, NULL) == SPROUT_ERR_INVALID_ARGUMENT);
    CHECK_MSG(strstr(sprout_last_error(), "--imatrix"), "%s", sprout_last_error());
    p.imatrix_path = imatrix_gguf("stories260K"); /* another model's */
    CHECK(p.imatrix_path && sprout_quantize_model(in, out, &p, NULL) == SPROUT_ERR_INVALID_ARGUMENT);
    CHECK_MSG(strstr(sprout_last_error(), "has 64 values, the tensor needs 256"), "%s", sprout_last_error());
    p.imatrix_path = data_path("missing.dat");
    CHECK(sprout_quantize_model(in, out, &p, NULL) != SPROUT_OK);
    CHECK_MSG(strstr(sprout_last_error(), "missing.dat"), "%s", sprout_last_error());
    FILE *f = fopen(out, "rb");
    CHECK(!f);
    if (f) fclose(f);
}

/* Branches llama-F32 (2 layers, 2 query heads per KV head, no experts)
 * does not reach, as llama_tensor_get_type (3f545be) takes them. */
static void test_recipe_branches(void) {
    sp_recipe r = {.file_type = SPROUT_FTYPE_IQ2_XXS, .n_gqa = 4, .n_layer = 16, .has_output = true};
    CHECK(sp_recipe_choose(&r, SP_ROLE_ATTN_V, 4096) == SPROUT_TYPE_Q4_K);
    CHECK(sp_recipe_choose(&r, SP_ROLE_OUTPUT, 4096) == SPROUT_TYPE_Q5_K);
    CHECK(sp_recipe_choose(&r, SP_ROLE_TOKEN_EMBD, 4096) == SPROUT_TYPE_Q2_K);
    CHECK(sp_recipe_choose(&r, SP_ROLE_FFN_DOWN, 4096) == SPROUT_TYPE_Q2_K);
    CHECK(sp_recipe_choose(&r, SP_ROLE_FFN_DOWN, 4096) == SPROUT_TYPE_Q2_K);
    CHECK(sp_recipe_choose(&r, SP_ROLE_FFN_DOWN, 4096) == SPROUT_TYPE_IQ2_XXS); /* the third of 16 */
    CHECK(sp_recipe_choose(&r, SP_ROLE_ATTN_OUTPUT, 4096) == SPROUT_TYPE_IQ2_XXS);
    sp_recipe m = {.file_type = SPROUT_FTYPE_IQ2_M, .n_gqa = 1, .n_layer = 16, .has_output = false};
    CHECK(sp_recipe_choose(&m, SP_ROLE_TOKEN_EMBD, 4096) == SPROUT_TYPE_Q5_K); /* tied: the output's type */
    CHECK(sp_recipe_choose(&m, SP_ROLE_ATTN_V, 4096) == SPROUT_TYPE_IQ3_S);
    CHECK(sp_recipe_choose(&m, SP_ROLE_ATTN_Q, 4096) == SPROUT_TYPE_IQ2_S);
    sp_recipe x = {.file_type = SPROUT_FTYPE_IQ3_XXS, .n_gqa = 1, .n_layer = 16, .has_output = true};
    CHECK(sp_recipe_choose(&x, SP_ROLE_ATTN_V, 4096) == SPROUT_TYPE_IQ3_S);
    CHECK(sp_recipe_choose(&x, SP_ROLE_FFN_DOWN, 4096) == SPROUT_TYPE_Q4_K);
    CHECK(sp_recipe_choose(&x, SP_ROLE_FFN_DOWN, 4096) == SPROUT_TYPE_Q4_K);
    CHECK(sp_recipe_choose(&x, SP_ROLE_FFN_DOWN, 4096) == SPROUT_TYPE_Q3_K);
    x.has_imatrix = true;
    CHECK(sp_recipe_choose(&x, SP_ROLE_ATTN_V, 4096) == SPROUT_TYPE_IQ3_XXS);
    CHECK(sp_recipe_choose(&x, SP_ROLE_FFN_DOWN, 4096) == SPROUT_TYPE_IQ3_XXS);
    sp_recipe e = {.file_type = SPROUT_FTYPE_IQ3_S, .n_gqa = 8, .n_layer = 16, .n_expert = 8, .has_output = true};
    CHECK(sp_recipe_choose(&e, SP_ROLE_ATTN_V, 4096) == SPROUT_TYPE_Q8_0);
    CHECK(sp_recipe_choose(&e, SP_ROLE_ATTN_K, 4096) == SPROUT_TYPE_Q8_0);
    CHECK(sp_recipe_choose(&e, SP_ROLE_ATTN_OUTPUT, 4096) == SPROUT_TYPE_Q5_K);
    CHECK(sp_recipe_choose(&e, SP_ROLE_OUTPUT, 4096) == SPROUT_TYPE_Q6_K);
    sp_recipe g = {.file_type = SPROUT_FTYPE_IQ3_XS, .n_gqa = 1, .n_layer = 16, .has_output = true};
    CHECK(sp_recipe_choose(&g, SP_ROLE_FFN_GATE, 4096) == SPROUT_TYPE_IQ3_S);
    CHECK(sp_recipe_choose(&g, SP_ROLE_FFN_GATE, 4096) == SPROUT_TYPE_IQ3_S);
    CHECK(sp_recipe_choose(&g, SP_ROLE_FFN_GATE, 4096) == SPROUT_TYPE_IQ3_XXS);
    CHECK(sp_recipe_needs_imatrix(SP_ROLE_ATTN_Q, SPROUT_TYPE_IQ2_S) && !sp_recipe_needs_imatrix(SP_ROLE_ATTN_Q, SPROUT_TYPE_IQ3_S));
    CHECK(!sp_recipe_needs_imatrix(SP_ROLE_TOKEN_EMBD, SPROUT_TYPE_IQ2_XXS));
    /* rows that fit no 256-element block fall back as llama-quantize's do */
    CHECK(sp_type_fitting_rows(SPROUT_TYPE_IQ2_XXS, 64) == SPROUT_TYPE_IQ4_NL);
    CHECK(sp_type_fitting_rows(SPROUT_TYPE_IQ1_M, 172) == SPROUT_TYPE_F16);
}

int main(int argc, char **argv) {
    static const char *const mixes[] = {"IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ2_M", "IQ3_XXS",
                                        "IQ3_XS",  "IQ3_S",  "IQ3_M", "IQ1_S", "IQ1_M"};
    const char *part = argc > 1 ? argv[1] : "plans";
    if (!strcmp(part, "plans")) {
        for (size_t i = 0; i < sizeof mixes / sizeof mixes[0]; i++) check_mix(mixes[i], false);
        test_model_refusals();
        test_recipe_branches();
    } else {
        check_mix(part, true);
    }
    for (int i = 0; i < 2; i++)
        if (imatrix_paths[i][0]) remove(imatrix_paths[i]);
    TEST_MAIN_END();
}
