/* Every model in ../shared/arch (random weights, one per architecture and
 * tensor type) against llama.cpp's logits for the same 32 tokens: all 32
 * positions in one batch, then 16 greedy steps one token at a time, within
 * the tolerance each JSON gives (and its greedy tokens where the reference
 * margins make them decidable). */
#include <jansson.h>
#include <math.h>

#include "logit_ref.h"
#include "runtime/forward.h"
#include "test_util.h"

typedef struct tolerance {
    double max_abs, rel_rms;
} tolerance;

static void check_model(const char *dir, const char *json_name, int *models) {
    char path[2048];
    snprintf(path, sizeof path, "%s/%s", dir, json_name);
    json_t *ref = json_load_file(path, 0, NULL);
    CHECK_MSG(ref != NULL, "cannot read %s", path);
    if (!ref) return;
    snprintf(path, sizeof path, "%s/%s", dir, json_string_value(json_object_get(ref, "model_file")));
    /* one thread: these tiny models gain nothing from two, which spin beside
     * another test's on a shared host; test_engine checks threads */
    sprout_model_params mp = {.struct_size = sizeof mp, .n_threads = 1};
    sprout_model *m = NULL;
    if (sprout_model_load(path, &mp, &m) != SPROUT_OK) {
        CHECK_MSG(0, "%s: %s", path, sprout_last_error());
        json_decref(ref);
        return;
    }
    (*models)++;
    const json_t *tol = json_object_get(ref, "tolerance");
    tolerance t = {json_number_value(json_object_get(tol, "max_abs")), json_number_value(json_object_get(tol, "rel_rms"))};
    const int32_t n_vocab = sprout_model_n_vocab(m);
    sp_context ctx;
    CHECK(sp_context_init(&ctx, m, 512, 64, 1, 2, SP_KV_F32) == SPROUT_OK);
    const json_t *tokens = json_object_get(ref, "tokens");
    const int32_t n = (int32_t)json_array_size(tokens);
    sp_batch_token batch[64];
    for (int32_t i = 0; i < n; i++) batch[i] = (sp_batch_token){(int32_t)json_integer_value(json_array_get(tokens, i)), i, 0, true, false, true, NULL};
    float *logits = malloc((size_t)n * (size_t)n_vocab * sizeof(float));
    CHECK_MSG(sp_forward(&ctx, batch, n, logits) == SPROUT_OK, "%s: %s", json_name, sprout_last_error());

    /* the last position: every logit */
    const json_t *last = json_object_get(ref, "last_logits");
    const float *ll = logits + (size_t)(n - 1) * (size_t)n_vocab;
    double rel;
    const double max_abs = logits_vs_ref(ll, last, n_vocab, &rel);
    /* every position: the five listed ids */
    double top_abs = 0;
    int top1_checked = 0, top1_same = 0;
    const json_t *tops = json_object_get(ref, "top5_per_position");
    for (int32_t p = 0; p < n; p++) {
        const json_t *top = json_array_get(tops, (size_t)p);
        for (size_t k = 0; k < json_array_size(top); k++) {
            const json_t *e = json_array_get(top, k);
            int32_t id = (int32_t)json_integer_value(json_array_get(e, 0));
            double d = fabs(logits[(size_t)p * (size_t)n_vocab + (size_t)id] - json_number_value(json_array_get(e, 1)));
            if (d > top_abs) top_abs = d;
        }
        double gap = json_number_value(json_array_get(json_array_get(top, 0), 1)) - json_number_value(json_array_get(json_array_get(top, 1), 1));
        if (gap > 2 * t.max_abs) {
            top1_checked++;
            int32_t best = 0;
            for (int32_t v = 1; v < n_vocab; v++)
                if (logits[(size_t)p * (size_t)n_vocab + (size_t)v] > logits[(size_t)p * (size_t)n_vocab + (size_t)best]) best = v;
            top1_same += best == json_integer_value(json_array_get(json_array_get(top, 0), 0));
        }
    }
    /* greedy steps, one token per batch, while the reference margins decide */
    const json_t *greedy = json_object_get(ref, "greedy");
    const json_t *steps = json_object_get(greedy, "steps");
    const int checkable = (int)json_integer_value(json_object_get(json_object_get(greedy, "checkable_steps"), "tolerance"));
    int steps_same = 0;
    float *step_logits = malloc((size_t)n_vocab * sizeof(float));
    memcpy(step_logits, ll, (size_t)n_vocab * sizeof(float));
    double step_abs = 0;
    for (int s = 0; s < (int)json_array_size(steps); s++) {
        const json_t *st = json_array_get(steps, (size_t)s);
        int32_t want = (int32_t)json_integer_value(json_object_get(st, "token"));
        double d = fabs(step_logits[want] - json_number_value(json_object_get(st, "logit")));
        if (d > step_abs) step_abs = d;
        int32_t best = 0;
        for (int32_t v = 1; v < n_vocab; v++)
            if (step_logits[v] > step_logits[best]) best = v;
        if (s < checkable) steps_same += best == want;
        /* follow the reference's tokens so later steps stay comparable */
        sp_batch_token bt = {want, n + s, 0, true, false, false, NULL};
        if (sp_forward(&ctx, &bt, 1, step_logits) != SPROUT_OK) break;
    }
    printf("%-24s last max|d| %.3g rel %.3g | top5 max|d| %.3g | step max|d| %.3g | top1 %d/%d | greedy %d/%d (tol %.3g/%.3g)\n",
           json_name, max_abs, rel, top_abs, step_abs, top1_same, top1_checked, steps_same, checkable, t.max_abs, t.rel_rms);
    CHECK_MSG(max_abs <= t.max_abs && rel <= t.rel_rms, "%s: last logits off (max %.4g, rel %.4g)", json_name, max_abs, rel);
    CHECK_MSG(top_abs <= t.max_abs, "%s: top-5 logits off by %.4g", json_name, top_abs);
    CHECK_MSG(step_abs <= t.max_abs, "%s: greedy-step logits off by %.4g", json_name, step_abs);
    CHECK_MSG(top1_same == top1_checked, "%s: top-1 differs at %d positions", json_name, top1_checked - top1_same);
    CHECK_MSG(steps_same == checkable, "%s: %d of %d checkable greedy steps match", json_name, steps_same, checkable);
    free(step_logits);
    free(logits);
    sp_context_free(&ctx);
    sprout_model_free(m);
    json_decref(ref);
}

static bool check_file(const char *dir, const char *name, void *models) {
    check_model(dir, name, models);
    return true;
}

int main(void) {
    int models = 0;
    test_for_each_shared_file("arch", ".json", check_file, &models);
    CHECK_MSG(models >= 30, "only %d arch models checked", models);
    TEST_MAIN_END();
}
