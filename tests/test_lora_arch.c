/* LoRA adapters on the random-weight models of ../shared/arch against
 * llama.cpp's logits (tests/data/lora/arch_cases.json): for each case the
 * adapters are written again with make_lora from the stored arguments, the
 * 32 tokens go through sprout in one batch with them, then 16 greedy steps
 * one token at a time, as test_arch does for the bare models. Checked: the
 * last position's 512 logits, the listed top-5 of every position and the
 * greedy-step logits within the case's tolerance, top-1 and greedy tokens
 * where the reference margins decide them, and that sprout's logits moved
 * away from the bare model's by more than that tolerance (an adapter that
 * was silently dropped fails). */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/lora.h"
#include "runtime/forward.h"
#include "test_util.h"

#define MAX_ADAPTERS 4

static char tmp_dir[256];

static double num(const json_t *o, const char *key) { return json_number_value(json_object_get(o, key)); }

/* make_lora BASE OUT ARGS... (args: a JSON array of strings). */
static bool make_lora(const char *base, const char *out, const json_t *args) {
    char cmd[4096];
    int len = snprintf(cmd, sizeof cmd, "'%s' '%s' '%s' 2>/dev/null", SPROUT_MAKE_LORA_PATH, base, out);
    for (size_t i = 0; i < json_array_size(args); i++)
        len += snprintf(cmd + len, sizeof cmd - (size_t)len, " '%s'", json_string_value(json_array_get(args, i)));
    const int rc = system(cmd);
    CHECK_MSG(rc == 0, "%s failed", cmd);
    return rc == 0;
}

/* The bare model's last logits from its arch JSON (NULL if unreadable). */
static json_t *base_last_logits(const char *model_file) {
    char path[2048];
    snprintf(path, sizeof path, "%s/arch/%.*s.json", test_shared_dir(), (int)(strlen(model_file) - strlen(".gguf")), model_file);
    json_t *ref = json_load_file(path, 0, NULL);
    CHECK_MSG(ref != NULL, "cannot read %s", path);
    json_t *last = ref ? json_incref(json_object_get(ref, "last_logits")) : NULL;
    json_decref(ref);
    return last;
}

static void check_case(const json_t *cs, const json_t *tokens) {
    const char *name = json_string_value(json_object_get(cs, "name")), *model_file = json_string_value(json_object_get(cs, "model"));
    char path[2048];
    snprintf(path, sizeof path, "%s/arch/%s", test_shared_dir(), model_file);
    sprout_model_params mp = {.struct_size = sizeof mp, .n_threads = 2};
    sprout_model *m = NULL;
    if (sprout_model_load(path, &mp, &m) != SPROUT_OK) {
        CHECK_MSG(0, "%s: %s", path, sprout_last_error());
        return;
    }
    /* the adapters, rebuilt from their make_lora arguments */
    const json_t *adapters = json_object_get(cs, "adapters");
    sprout_lora *loras[MAX_ADAPTERS] = {0};
    sprout_lora_use uses[MAX_ADAPTERS];
    size_t n_ad = 0;
    CHECK(json_array_size(adapters) >= 1 && json_array_size(adapters) <= MAX_ADAPTERS);
    for (; n_ad < json_array_size(adapters) && n_ad < MAX_ADAPTERS; n_ad++) {
        const json_t *a = json_array_get(adapters, n_ad);
        char file[512];
        snprintf(file, sizeof file, "%s/%s-%zu.gguf", tmp_dir, name, n_ad);
        if (!make_lora(path, file, json_object_get(a, "make_lora"))) break;
        if (sprout_lora_load(m, file, &loras[n_ad]) != SPROUT_OK) {
            CHECK_MSG(0, "%s: %s", name, sprout_last_error());
            break;
        }
        uses[n_ad] = (sprout_lora_use){loras[n_ad], (float)num(a, "scale")};
    }
    sp_lora_set set = {0, NULL, NULL};
    CHECK(sp_lora_set_copy(m, uses, n_ad, &set) == SPROUT_OK);
    const json_t *tol = json_object_get(cs, "tolerance");
    const double tol_abs = num(tol, "max_abs"), tol_rel = num(tol, "rel_rms");
    const int32_t n_vocab = sprout_model_n_vocab(m), n = (int32_t)json_array_size(tokens);
    sp_context ctx;
    CHECK(sp_context_init(&ctx, m, 512, 64, 1, 2, SP_KV_F32) == SPROUT_OK);
    sp_batch_token batch[64];
    for (int32_t i = 0; i < n && i < 64; i++)
        batch[i] = (sp_batch_token){(int32_t)json_integer_value(json_array_get(tokens, i)), i, 0, true, false, true, &set};
    float *logits = malloc((size_t)n * (size_t)n_vocab * sizeof(float)), *step_logits = malloc((size_t)n_vocab * sizeof(float));
    if (n_ad != json_array_size(adapters) || n > 64 || !logits || !step_logits ||
        sp_forward(&ctx, batch, n, logits) != SPROUT_OK) {
        CHECK_MSG(0, "%s: not run: %s", name, sprout_last_error());
        goto done;
    }

    /* the last position: every logit, against llama.cpp's and against the bare model's */
    const json_t *last = json_object_get(cs, "last_logits");
    json_t *bare = base_last_logits(model_file);
    const float *ll = logits + (size_t)(n - 1) * (size_t)n_vocab;
    double max_abs = 0, err2 = 0, ref2 = 0, moved_abs = 0, moved2 = 0, bare2 = 0;
    CHECK_MSG(json_array_size(last) == (size_t)n_vocab && json_array_size(bare) == (size_t)n_vocab, "%s: %zu logits stored", name,
              json_array_size(last));
    for (int32_t v = 0; v < n_vocab && v < (int32_t)json_array_size(last); v++) {
        const double r = json_number_value(json_array_get(last, (size_t)v)), d = fabs(ll[v] - r);
        const double b = json_number_value(json_array_get(bare, (size_t)v)), e = fabs(ll[v] - b);
        max_abs = fmax(max_abs, d);
        err2 += d * d;
        ref2 += r * r;
        moved_abs = fmax(moved_abs, e);
        moved2 += e * e;
        bare2 += b * b;
    }
    json_decref(bare);
    const double rel = sqrt(err2 / ref2), moved_rel = bare2 > 0 ? sqrt(moved2 / bare2) : 0;
    /* every position: the five listed ids; top-1 where the gap decides it */
    double top_abs = 0;
    int top1_checked = 0, top1_same = 0;
    const json_t *tops = json_object_get(cs, "top5_per_position");
    for (int32_t p = 0; p < n; p++) {
        const json_t *top = json_array_get(tops, (size_t)p);
        const float *lp = logits + (size_t)p * (size_t)n_vocab;
        for (size_t k = 0; k < json_array_size(top); k++) {
            const json_t *e = json_array_get(top, k);
            const int64_t id = json_integer_value(json_array_get(e, 0));
            if (id >= 0 && id < n_vocab) top_abs = fmax(top_abs, fabs(lp[id] - json_number_value(json_array_get(e, 1))));
        }
        const double gap = json_number_value(json_array_get(json_array_get(top, 0), 1)) - json_number_value(json_array_get(json_array_get(top, 1), 1));
        if (gap > 2 * tol_abs) {
            int32_t best = 0;
            for (int32_t v = 1; v < n_vocab; v++)
                if (lp[v] > lp[best]) best = v;
            top1_checked++;
            top1_same += best == json_integer_value(json_array_get(json_array_get(top, 0), 0));
        }
    }
    /* greedy steps, one token per batch, following the reference's tokens */
    const json_t *greedy = json_object_get(cs, "greedy"), *steps = json_object_get(greedy, "steps");
    const int checkable = (int)json_integer_value(json_object_get(greedy, "checkable_steps"));
    int steps_same = 0;
    double step_abs = 0;
    memcpy(step_logits, ll, (size_t)n_vocab * sizeof(float));
    for (int s = 0; s < (int)json_array_size(steps); s++) {
        const json_t *st = json_array_get(steps, (size_t)s);
        const int32_t want = (int32_t)json_integer_value(json_object_get(st, "token"));
        if (want < 0 || want >= n_vocab) break;
        step_abs = fmax(step_abs, fabs(step_logits[want] - num(st, "logit")));
        int32_t best = 0;
        for (int32_t v = 1; v < n_vocab; v++)
            if (step_logits[v] > step_logits[best]) best = v;
        if (s < checkable) steps_same += best == want;
        const sp_batch_token bt = {want, n + s, 0, true, false, false, &set};
        if (sp_forward(&ctx, &bt, 1, step_logits) != SPROUT_OK) {
            CHECK_MSG(0, "%s: step %d: %s", name, s, sprout_last_error());
            break;
        }
    }
    printf("%-20s %-16s last max|d| %.3g rel %.3g | top5 %.3g | steps %.3g | top1 %d/%d | greedy %d/%d | tol %.3g/%.3g | "
           "vs bare %.3g rel %.3g\n",
           name, model_file, max_abs, rel, top_abs, step_abs, top1_same, top1_checked, steps_same, checkable, tol_abs, tol_rel, moved_abs,
           moved_rel);
    CHECK_MSG(max_abs <= tol_abs && rel <= tol_rel, "%s: last logits off (max %.4g, rel %.4g)", name, max_abs, rel);
    CHECK_MSG(top_abs <= tol_abs, "%s: top-5 logits off by %.4g", name, top_abs);
    CHECK_MSG(step_abs <= tol_abs, "%s: greedy-step logits off by %.4g", name, step_abs);
    CHECK_MSG(top1_same == top1_checked, "%s: top-1 differs at %d positions", name, top1_checked - top1_same);
    CHECK_MSG(steps_same == checkable, "%s: %d of %d checkable greedy steps match", name, steps_same, checkable);
    CHECK_MSG(moved_abs > tol_abs && moved_rel > tol_rel, "%s: the adapters barely move the logits (max %.4g, rel %.4g)", name, moved_abs,
              moved_rel);
done:
    sp_lora_set_free(&set);
    free(step_logits);
    free(logits);
    sp_context_free(&ctx);
    for (size_t i = 0; i < n_ad; i++) sprout_lora_free(loras[i]);
    sprout_model_free(m);
}

int main(void) {
    snprintf(tmp_dir, sizeof tmp_dir, "%s", test_temp_dir());
    char path[1024];
    snprintf(path, sizeof path, "%s/arch_cases.json", SPROUT_LORA_DATA_DIR);
    json_t *ref = json_load_file(path, 0, NULL);
    CHECK_MSG(ref != NULL, "cannot read %s", path);
    const json_t *cases = json_object_get(ref, "cases");
    CHECK(json_array_size(cases) >= 8);
    for (size_t c = 0; c < json_array_size(cases); c++) check_case(json_array_get(cases, c), json_object_get(ref, "tokens"));
    json_decref(ref);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmp_dir);
    TEST_MAIN_END();
}
