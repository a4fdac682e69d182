/* sprout_lora_export and `sprout export-lora` on stories260K: two adapters
 * (written by make_lora) merged into an F32 copy give the logits the base
 * model gives with the same adapters applied at run time, within float
 * rounding, and the same greedy tokens; untouched tensors are copied byte
 * for byte and the metadata unchanged; the default type rule is
 * llama-export-lora's; bad adapters, paths and arguments fail cleanly and
 * leave no output behind. The same on a tiny mixture of experts (make_moe
 * qwen2moe) with adapters on its 3-D expert tensors, merged expert by
 * expert; adapters on its router or shared expert are refused. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/lora.h"
#include "runtime/forward.h"
#include "sprout.h"
#include "test_util.h"

static char model_path[1024], dir[256];
static char adapter_a[512], adapter_b[512];

/* Runs a shell command line built from fmt, in the test's folder; its
 * output (stdout and stderr) into *out when out is not NULL. */
static int shell(char **out, const char *fmt, ...) {
    char line[4096], cmd[4600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "cd '%s' && { %s ; } 2>&1", dir, line);
    char *text = NULL;
    const int st = test_run_command(cmd, &text);
    if (out) *out = text;
    else free(text);
    return st;
}

static bool exists(const char *name) {
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return access(path, F_OK) == 0;
}

/* The export of base with two adapters (at scales[0] and scales[1]) to `out`. */
static sprout_status export_pair(const char *base, const char *lora_0, const char *lora_1, const float scales[2], const char *out, int32_t type) {
    const char *paths[2] = {lora_0, lora_1};
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, out);
    sprout_lora_export_params p;
    sprout_lora_export_params_default(&p);
    p.base_path = base;
    p.adapter_paths = paths;
    p.scales = scales;
    p.n_adapters = 2;
    p.output_path = path;
    p.output_type = type;
    p.n_threads = 2;
    return sprout_lora_export(&p);
}

/* The export of the two adapters (A at 1, B at 0.5) to `out`. */
static sprout_status export_to(const char *out, int32_t type) {
    static const float scales[2] = {1.f, 0.5f};
    return export_pair(model_path, adapter_a, adapter_b, scales, out, type);
}

/* --- the merged model computes what the run-time adapters compute ------------------------ */

enum { N_PROMPT = 12, V = 512 };

/* Logits of every position of a fixed prompt, with `set` applied (NULL: none). */
static bool prompt_logits(const sprout_model *m, const sp_lora_set *set, float *logits) {
    static const int32_t prompt[N_PROMPT] = {1, 403, 407, 261, 378, 432, 287, 300, 339, 263, 411, 270};
    sp_context ctx;
    if (sp_context_init(&ctx, m, 64, 64, 1, 2, SP_KV_F32) != SPROUT_OK) return false;
    sp_batch_token bt[N_PROMPT];
    for (int i = 0; i < N_PROMPT; i++) bt[i] = (sp_batch_token){prompt[i], i, 0, true, false, false, set};
    const sprout_status st = sp_forward(&ctx, bt, N_PROMPT, logits);
    sp_context_free(&ctx);
    return st == SPROUT_OK;
}

/* How far merged's logits are from base's with `set` (the largest
 * |difference|), with *scale the largest |logit| and *moved how far the set
 * moves base's; -1 if a forward pass fails. Printed as `what`. */
static float merged_vs_runtime(const char *what, const sprout_model *base, const sprout_model *merged, const sp_lora_set *set, float *scale,
                               float *moved) {
    static float with_lora[N_PROMPT * V], merged_logits[N_PROMPT * V], plain[N_PROMPT * V];
    if (!prompt_logits(base, set, with_lora) || !prompt_logits(merged, NULL, merged_logits) || !prompt_logits(base, NULL, plain)) {
        CHECK_MSG(0, "%s", sprout_last_error());
        return -1;
    }
    float diff = 0;
    *scale = *moved = 0;
    for (int i = 0; i < N_PROMPT * V; i++) {
        diff = fmaxf(diff, fabsf(with_lora[i] - merged_logits[i]));
        *scale = fmaxf(*scale, fabsf(with_lora[i]));
        *moved = fmaxf(*moved, fabsf(with_lora[i] - plain[i]));
    }
    printf("%s: max |logit difference| %.3g, largest |logit| %.3g, adapters move logits by up to %.3g\n", what, (double)diff,
           (double)*scale, (double)*moved);
    return diff;
}

static sprout_result *greedy(sprout_pipeline *p) {
    sprout_generation_config c;
    sprout_generation_config_init(&c);
    c.temperature = 0.f;
    c.max_new_tokens = 32;
    sprout_result *r = NULL;
    CHECK_MSG(sprout_generate(p, "Once upon a time", &c, NULL, NULL, &r) == SPROUT_OK, "%s", sprout_last_error());
    return r;
}

static void test_same_as_runtime(sprout_model *base) {
    CHECK_MSG(export_to("merged.gguf", SPROUT_TYPE_F32) == SPROUT_OK, "%s", sprout_last_error());
    char path[600];
    snprintf(path, sizeof path, "%s/merged.gguf", dir);
    sprout_model *merged = NULL;
    sprout_lora *a = NULL, *b = NULL;
    CHECK_MSG(sprout_model_load(path, NULL, &merged) == SPROUT_OK, "%s", sprout_last_error());
    CHECK(sprout_lora_load(base, adapter_a, &a) == SPROUT_OK && sprout_lora_load(base, adapter_b, &b) == SPROUT_OK);
    if (!merged || !a || !b) return;
    const sprout_lora_use uses[] = {{a, 1.f}, {b, 0.5f}};
    sp_lora_set set;
    CHECK(sp_lora_set_copy(base, uses, 2, &set) == SPROUT_OK);
    float scale, moved;
    const float diff = merged_vs_runtime("merged vs run time", base, merged, &set, &scale, &moved);
    sp_lora_set_free(&set);
    CHECK_MSG(moved > 0.5f, "the adapters change little (%g): the test would prove nothing", (double)moved);
    CHECK_MSG(diff >= 0 && diff < 2e-5f * fmaxf(scale, 1.f), "merged logits differ from the run-time adapters' by %g", (double)diff);

    sprout_pipeline *pa = NULL, *pm = NULL;
    sprout_lora *both[2] = {a, b};
    const float scales[2] = {1.f, 0.5f};
    CHECK(sprout_pipeline_create(base, NULL, &pa) == SPROUT_OK && sprout_pipeline_create(merged, NULL, &pm) == SPROUT_OK);
    if (pa && pm) {
        CHECK(sprout_pipeline_set_lora(pa, both, scales, 2) == SPROUT_OK);
        sprout_result *ra = greedy(pa), *rm = greedy(pm);
        size_t na = 0, nm = 0;
        const sprout_token *ta = ra ? sprout_result_tokens(ra, &na) : NULL, *tm = rm ? sprout_result_tokens(rm, &nm) : NULL;
        CHECK_MSG(ta && tm && na == 32 && na == nm && !memcmp(ta, tm, na * sizeof *ta), "greedy tokens differ");
        sprout_result_free(ra);
        sprout_result_free(rm);
    }
    sprout_pipeline_free(pa);
    sprout_pipeline_free(pm);
    sprout_lora_free(a);
    sprout_lora_free(b);
    sprout_model_free(merged);
}

/* --- what is copied, and the types ------------------------------------------------------- */

static bool same_value(const sprout_gguf_value *x, const sprout_gguf_value *y) {
    const sprout_gguf_type t = sprout_gguf_value_type(x);
    if (t != sprout_gguf_value_type(y)) return false;
    if (t == SPROUT_GGUF_ARRAY)
        return sprout_gguf_array_type(x) == sprout_gguf_array_type(y) && sprout_gguf_array_len(x) == sprout_gguf_array_len(y);
    const char *sx, *sy;
    size_t lx, ly;
    if (t == SPROUT_GGUF_STRING)
        return sprout_gguf_value_str(x, &sx, &lx) == SPROUT_OK && sprout_gguf_value_str(y, &sy, &ly) == SPROUT_OK && lx == ly &&
               !memcmp(sx, sy, lx);
    double dx = 0, dy = 0;
    sprout_gguf_value_f64(x, &dx);
    sprout_gguf_value_f64(y, &dy);
    return dx == dy;
}

/* out (in dir) against base: the same keys and values, the same tensors in
 * the same order and shapes; the n_targets that adapter `targets` has a
 * pair for of type `merged_type`, the rest byte for byte the base's. */
static void check_copy(const char *base_path, const char *out, const char *targets, sprout_type merged_type, int64_t n_targets) {
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, out);
    sprout_gguf *in = NULL, *o = NULL, *lora = NULL;
    CHECK(sprout_gguf_open(base_path, &in) == SPROUT_OK && sprout_gguf_open(path, &o) == SPROUT_OK &&
          sprout_gguf_open(targets, &lora) == SPROUT_OK);
    if (in && o && lora) {
        CHECK(sprout_gguf_kv_count(in) == sprout_gguf_kv_count(o));
        for (int64_t i = 0; i < sprout_gguf_kv_count(in) && i < sprout_gguf_kv_count(o); i++)
            CHECK_MSG(!strcmp(sprout_gguf_kv_key(in, i), sprout_gguf_kv_key(o, i)) &&
                          same_value(sprout_gguf_kv_value(in, i), sprout_gguf_kv_value(o, i)),
                      "%s: key %s differs", out, sprout_gguf_kv_key(in, i));
        CHECK(sprout_gguf_tensor_count(in) == sprout_gguf_tensor_count(o));
        int64_t n_merged = 0;
        for (int64_t i = 0; i < sprout_gguf_tensor_count(in) && i < sprout_gguf_tensor_count(o); i++) {
            const char *name = sprout_gguf_tensor_name(in, i);
            char lora_a[160];
            snprintf(lora_a, sizeof lora_a, "%s.lora_a", name);
            const bool merged = sprout_gguf_find_tensor(lora, lora_a) >= 0;
            n_merged += merged;
            CHECK(!strcmp(name, sprout_gguf_tensor_name(o, i)) && sprout_gguf_tensor_elements(in, i) == sprout_gguf_tensor_elements(o, i));
            for (int d = 0; d < 3; d++) CHECK_MSG(sprout_gguf_tensor_dim(in, i, d) == sprout_gguf_tensor_dim(o, i, d), "%s: %s's shape", out, name);
            if (merged) {
                CHECK_MSG(sprout_gguf_tensor_type(o, i) == merged_type, "%s: %s is %s", out, name, sprout_type_name(sprout_gguf_tensor_type(o, i)));
                /* every slice (an expert's) changed */
                const int64_t n_slices = sprout_gguf_tensor_dim(in, i, 2);
                const uint64_t slice = sprout_gguf_tensor_bytes(in, i) / (uint64_t)n_slices;
                for (int64_t e = 0; sprout_gguf_tensor_type(o, i) == sprout_gguf_tensor_type(in, i) && e < n_slices; e++)
                    CHECK_MSG(memcmp((const char *)sprout_gguf_tensor_data(o, i) + e * slice, (const char *)sprout_gguf_tensor_data(in, i) + e * slice,
                                     slice),
                              "%s: %s's slice %lld is unchanged", out, name, (long long)e);
            } else
                CHECK_MSG(sprout_gguf_tensor_type(o, i) == sprout_gguf_tensor_type(in, i) &&
                              sprout_gguf_tensor_bytes(o, i) == sprout_gguf_tensor_bytes(in, i) &&
                              !memcmp(sprout_gguf_tensor_data(o, i), sprout_gguf_tensor_data(in, i), sprout_gguf_tensor_bytes(in, i)),
                          "%s: %s not copied", out, name);
        }
        CHECK_MSG(n_merged == n_targets, "%s: %lld merged tensors, expected %lld", out, (long long)n_merged, (long long)n_targets);
    }
    sprout_gguf_close(in);
    sprout_gguf_close(o);
    sprout_gguf_close(lora);
}

static void test_copies_and_types(void) {
    check_copy(model_path, "merged.gguf", adapter_a, SPROUT_TYPE_F32, 36); /* 5 layers x 7, and the output head */
    /* the default rule (llama-export-lora's): an F32 base stays F32 ... */
    CHECK_MSG(export_to("default.gguf", -1) == SPROUT_OK, "%s", sprout_last_error());
    check_copy(model_path, "default.gguf", adapter_a, SPROUT_TYPE_F32, 36);
    /* ... a quantized one becomes F16, through the CLI; the untouched Q8_0 tensors stay */
    char *out = NULL;
    CHECK(shell(NULL, "'%s' quantize '%s' q8.gguf Q8_0", SPROUT_CLI_PATH, model_path) == 0);
    const int st = shell(&out, "'%s' export-lora -m q8.gguf --lora '%s' --lora-scaled '%s' 0.5 -o q8-merged.gguf -t 2", SPROUT_CLI_PATH,
                         adapter_a, adapter_b);
    CHECK_MSG(st == 0 && strstr(out, "[   4/48] blk.0.attn_q.weight") && strstr(out, "Q8_0 -> F16") &&
                  strstr(out, "q8-merged.gguf: 48 tensors, 36 merged with 2 adapters, 12 copied"),
              "export-lora -> %d: %s", st, out);
    free(out);
    char q8[600];
    snprintf(q8, sizeof q8, "%s/q8.gguf", dir);
    check_copy(q8, "q8-merged.gguf", adapter_a, SPROUT_TYPE_F16, 36);
    /* --type Q8_0: FFN-down rows (172) fit no block, F16 as the quantizer falls back, and said */
    CHECK(shell(&out, "'%s' export-lora -m '%s' --lora '%s' -o q8-type.gguf --type Q8_0", SPROUT_CLI_PATH, model_path, adapter_a) == 0);
    CHECK_MSG(strstr(out, "blk.0.ffn_down.weight: rows do not fit Q8_0 blocks, using F16") && strstr(out, "with a fallback type"), "%s", out);
    free(out);
}

/* --- a mixture of experts ----------------------------------------------------------------- */

/* Experts' pairs merged slice by slice: an adapter on the experts alone
 * and one on every target sprout adapts, at 1 and -0.5, merged into an F32
 * copy of a qwen2moe (router, shared expert), give the run-time logits; a
 * Q8_0 copy's expert tensors become F16 3-D tensors of the same shape;
 * adapters on the router and the shared expert merge as they apply. */
/* The merged copy `merged` of base against base with adapters a (at
 * scales[0]) and b (scales[1]) at run time: the same logits within float
 * rounding; and adapter a alone must move base's by more than min_move
 * (else the comparison would prove nothing). */
static void check_merged_moe(const char *what, const char *base, const char *merged, const char *a, const char *b, const float scales[2],
                             float min_move) {
    const sprout_model_params mp = {.struct_size = sizeof mp, .n_threads = 2};
    sprout_model *m = NULL, *mm = NULL;
    sprout_lora *la = NULL, *lb = NULL;
    CHECK_MSG(sprout_model_load(base, &mp, &m) == SPROUT_OK && sprout_model_load(merged, &mp, &mm) == SPROUT_OK, "%s", sprout_last_error());
    if (m) CHECK_MSG(sprout_lora_load(m, a, &la) == SPROUT_OK && sprout_lora_load(m, b, &lb) == SPROUT_OK, "%s", sprout_last_error());
    if (m && mm && la && lb) {
        const sprout_lora_use uses[] = {{la, scales[0]}, {lb, scales[1]}};
        sp_lora_set both, first;
        CHECK(sp_lora_set_copy(m, uses, 2, &both) == SPROUT_OK && sp_lora_set_copy(m, uses, 1, &first) == SPROUT_OK);
        char label[160];
        float scale, moved, a_scale, a_moved;
        snprintf(label, sizeof label, "%s merged vs run time", what);
        const float diff = merged_vs_runtime(label, m, mm, &both, &scale, &moved);
        snprintf(label, sizeof label, "%s: the first adapter vs none", what);
        merged_vs_runtime(label, m, m, &first, &a_scale, &a_moved);
        CHECK_MSG(a_moved > min_move, "%s: the first adapter changes little (%g): the test would prove nothing", what, (double)a_moved);
        CHECK_MSG(diff >= 0 && diff < 2e-5f * fmaxf(scale, 1.f), "%s: merged logits differ from the run-time adapters' by %g", what, (double)diff);
        sp_lora_set_free(&both);
        sp_lora_set_free(&first);
    }
    sprout_lora_free(la);
    sprout_lora_free(lb);
    sprout_model_free(mm);
    sprout_model_free(m);
}

static void test_experts(void) {
    char base[600], q8[600], x[600], all[600], merged[600], *out = NULL;
    snprintf(base, sizeof base, "%s/moe.gguf", dir);
    snprintf(q8, sizeof q8, "%s/moe-q8.gguf", dir);
    snprintf(x, sizeof x, "%s/moe-experts.gguf", dir);
    snprintf(all, sizeof all, "%s/moe-all.gguf", dir);
    snprintf(merged, sizeof merged, "%s/moe-merged.gguf", dir);
    CHECK(shell(NULL, "'%s' qwen2moe F32 moe.gguf 7 && '%s' qwen2moe Q8_0 moe-q8.gguf 7", SPROUT_MAKE_MOE_PATH, SPROUT_MAKE_MOE_PATH) == 0);
    CHECK(shell(NULL, "'%s' moe.gguf moe-experts.gguf --rank 4 --targets experts --alpha 8 --seed 5 --magnitude 0.1", SPROUT_MAKE_LORA_PATH) == 0);
    CHECK(shell(NULL, "'%s' moe.gguf moe-all.gguf --rank 8 --targets all --seed 6 --magnitude 0.05", SPROUT_MAKE_LORA_PATH) == 0);
    static const float scales[2] = {1.f, -0.5f};
    CHECK_MSG(export_pair(base, x, all, scales, "moe-merged.gguf", SPROUT_TYPE_F32) == SPROUT_OK, "%s", sprout_last_error());
    /* 2 layers x (q, k, v, attention output, 3 expert tensors), and the output head */
    check_copy(base, "moe-merged.gguf", all, SPROUT_TYPE_F32, 15);

    /* (the adapter on the experts alone: what a merge that left the experts alone would miss) */
    check_merged_moe("experts", base, merged, x, all, scales, 0.5f);

    /* a quantized mixture: its expert tensors F16 (llama-export-lora's rule), the rest copied */
    int st = shell(&out, "'%s' export-lora -m moe-q8.gguf --lora moe-experts.gguf -o moe-q8-merged.gguf -t 2", SPROUT_CLI_PATH);
    CHECK_MSG(st == 0 && strstr(out, "blk.1.ffn_down_exps.weight") && strstr(out, "Q8_0 -> F16") &&
                  strstr(out, "moe-q8-merged.gguf: 37 tensors, 6 merged with 1 adapter, 31 copied"),
              "export-lora -> %d: %s", st, out);
    free(out);
    check_copy(q8, "moe-q8-merged.gguf", x, SPROUT_TYPE_F16, 6);

    /* the router and the shared expert (its gate, up and down): merged as run time applies them */
    CHECK(shell(NULL, "'%s' moe.gguf moe-router.gguf --rank 4 --targets router --seed 8 --magnitude 0.2", SPROUT_MAKE_LORA_PATH) == 0);
    CHECK(shell(NULL, "'%s' moe.gguf moe-shexp.gguf --rank 8 --targets shexp --alpha 4 --seed 9 --magnitude 0.1", SPROUT_MAKE_LORA_PATH) == 0);
    char router[600], shexp[600];
    snprintf(router, sizeof router, "%s/moe-router.gguf", dir);
    snprintf(shexp, sizeof shexp, "%s/moe-shexp.gguf", dir);
    static const float rs_scales[2] = {1.f, 0.5f};
    CHECK_MSG(export_pair(base, router, shexp, rs_scales, "moe-rs-merged.gguf", SPROUT_TYPE_F32) == SPROUT_OK, "%s", sprout_last_error());
    snprintf(merged, sizeof merged, "%s/moe-rs-merged.gguf", dir);
    check_merged_moe("router and shared expert", base, merged, router, shexp, rs_scales, 0.1f);
}

/* --- errors ------------------------------------------------------------------------------ */

static bool stop_at_once(void *user, const sprout_lora_export_progress *p) {
    (void)user;
    (void)p;
    return false;
}

static void test_errors(void) {
    char *out = NULL;
    /* an adapter of another architecture: refused by name, no file left */
    CHECK(shell(NULL, "'%s' '%s' hostile.gguf --targets attn --hostile arch", SPROUT_MAKE_LORA_PATH, model_path) == 0);
    int st = shell(&out, "'%s' export-lora -m '%s' --lora hostile.gguf -o hostile-out.gguf", SPROUT_CLI_PATH, model_path);
    CHECK_MSG(st == 1 && strstr(out, "hostile.gguf: not a LoRA adapter for this model: general.architecture is 'gpt2'"), "-> %d: %s", st,
              out);
    free(out);
    CHECK(shell(&out, "ls | grep -c hostile-out") != 0 && !exists("hostile-out.gguf"));
    free(out);
    /* usage errors */
    st = shell(&out, "'%s' export-lora -m '%s' --lora '%s'", SPROUT_CLI_PATH, model_path, adapter_a);
    CHECK_MSG(st == 2 && strstr(out, "-o OUT.gguf is required"), "no -o -> %d: %s", st, out);
    free(out);
    st = shell(&out, "'%s' export-lora -m '%s' -o x.gguf", SPROUT_CLI_PATH, model_path);
    CHECK_MSG(st == 2 && strstr(out, "--lora"), "no adapter -> %d: %s", st, out);
    free(out);
    st = shell(&out, "'%s' export-lora -m '%s' --lora '%s' -o x.gguf --type Q9", SPROUT_CLI_PATH, model_path, adapter_a);
    CHECK_MSG(st == 2 && strstr(out, "--type Q9: must be a tensor type"), "--type Q9 -> %d: %s", st, out);
    free(out);
    st = shell(&out, "'%s' export-lora --help", SPROUT_CLI_PATH);
    CHECK_MSG(st == 0 && strstr(out, "usage: sprout export-lora") && strstr(out, "--lora-scaled"), "--help -> %d: %s", st, out);
    free(out);
    /* missing files, an unwritable output, the base as output */
    st = shell(&out, "'%s' export-lora -m '%s' --lora missing.gguf -o x.gguf", SPROUT_CLI_PATH, model_path);
    CHECK_MSG(st == 1 && strstr(out, "missing.gguf: cannot open"), "missing adapter -> %d: %s", st, out);
    free(out);
    st = shell(&out, "'%s' export-lora -m missing-base.gguf --lora '%s' -o x.gguf", SPROUT_CLI_PATH, adapter_a);
    CHECK_MSG(st == 1 && strstr(out, "missing-base.gguf"), "missing base -> %d: %s", st, out);
    free(out);
    st = shell(&out, "'%s' export-lora -m '%s' --lora '%s' -o no-such-dir/x.gguf", SPROUT_CLI_PATH, model_path, adapter_a);
    CHECK_MSG(st == 1 && strstr(out, "no-such-dir/x.gguf"), "unwritable -> %d: %s", st, out);
    free(out);
    st = shell(&out, "'%s' export-lora -m '%s' --lora '%s' -o '%s'", SPROUT_CLI_PATH, model_path, adapter_a, model_path);
    CHECK_MSG(st == 1 && strstr(out, "the output is the base model"), "base as output -> %d: %s", st, out);
    free(out);
    CHECK(!exists("x.gguf"));

    /* the library: arguments, cancellation */
    sprout_lora_export_params p;
    sprout_lora_export_params_default(&p);
    CHECK(sprout_lora_export(&p) == SPROUT_ERR_INVALID_ARGUMENT);
    CHECK(sprout_lora_export(NULL) == SPROUT_ERR_INVALID_ARGUMENT);
    const char *paths[1] = {adapter_a};
    char path[600];
    snprintf(path, sizeof path, "%s/cancelled.gguf", dir);
    p.base_path = model_path;
    p.adapter_paths = paths;
    p.n_adapters = 1;
    p.output_path = path;
    const float inf = INFINITY;
    p.scales = &inf;
    CHECK(sprout_lora_export(&p) == SPROUT_ERR_INVALID_ARGUMENT);
    p.scales = NULL;
    p.output_type = 9999;
    CHECK(sprout_lora_export(&p) == SPROUT_ERR_INVALID_ARGUMENT);
    p.output_type = -1;
    p.output_path = adapter_a;
    CHECK(sprout_lora_export(&p) == SPROUT_ERR_INVALID_ARGUMENT);
    p.output_path = path;
    p.struct_size = sizeof p - 1;
    CHECK(sprout_lora_export(&p) == SPROUT_ERR_INVALID_ARGUMENT);
    p.struct_size = sizeof p;
    p.progress = stop_at_once;
    CHECK(sprout_lora_export(&p) == SPROUT_ERR_CANCELLED && !exists("cancelled.gguf"));
    CHECK_MSG(shell(&out, "ls | grep -c tmp") != 0, "a temporary file was left: %s", out);
    free(out);
}

int main(void) {
    snprintf(model_path, sizeof model_path, "%s/models/stories260K.gguf", test_shared_dir());
    snprintf(dir, sizeof dir, "/tmp/sprout-export-lora-XXXXXX");
    if (!mkdtemp(dir)) return 1;
    snprintf(adapter_a, sizeof adapter_a, "%s/a.gguf", dir);
    snprintf(adapter_b, sizeof adapter_b, "%s/b.gguf", dir);
    /* A: rank 8, F32, every target, alpha 16; B: rank 4, F32, attention only, no alpha */
    CHECK(shell(NULL, "'%s' '%s' a.gguf --rank 8 --type F32 --targets all --alpha 16 --seed 3 --magnitude 0.1", SPROUT_MAKE_LORA_PATH, model_path) == 0);
    CHECK(shell(NULL, "'%s' '%s' b.gguf --rank 4 --type F32 --targets attn --seed 4 --magnitude 0.1", SPROUT_MAKE_LORA_PATH, model_path) == 0);
    sprout_model_params mp = {.struct_size = sizeof mp, .n_threads = 2};
    sprout_model *m = NULL;
    CHECK_MSG(sprout_model_load(model_path, &mp, &m) == SPROUT_OK, "%s", sprout_last_error());
    if (m) {
        test_same_as_runtime(m);
        test_copies_and_types();
        test_errors();
    }
    test_experts();
    sprout_model_free(m);
    if (shell(NULL, "rm -f *.gguf") != 0) fprintf(stderr, "could not empty %s\n", dir);
    rmdir(dir);
    TEST_MAIN_END();
}
