/* LoRA adapters on the experts, routers and shared experts of tiny
 * mixture-of-experts models (make_moe, written again here from
 * tests/data/moe's arguments): with adapters that
 * make_lora writes from the arguments in tests/data/lora/moe_cases.json,
 * sprout's logits for 32 tokens in one batch and 16 greedy steps match
 * llama.cpp's (build_lora_mm_id: each token's chosen experts get their own
 * slice's B_e (A_e x)) within the bare model's tolerance, and move away
 * from the bare model's by more than it. Then on one model: scale 0 is the
 * bare model bit for bit; a sequence's logits are the same bits alone and
 * interleaved with sequences of other adapter sets (other experts chosen,
 * other pairs), on other threads; broken expert adapters are refused by
 * name. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/lora.h"
#include "logit_ref.h"
#include "runtime/forward.h"
#include "test_util.h"

enum { MAX_ADAPTERS = 4, MAX_TOKENS = 64 };

/* Runs cmd (its output kept only when it fails); false on failure. */
static bool run(const char *cmd) {
    char *out = NULL;
    const int rc = test_run_command(cmd, &out);
    CHECK_MSG(rc == 0, "%s: %s", cmd, out ? out : "");
    free(out);
    return rc == 0;
}

/* The bare model's reference (tests/data/moe/NAME.json), or NULL. */
static json_t *moe_reference(const char *name) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.json", SPROUT_MOE_DATA_DIR, name);
    json_t *ref = json_load_file(path, 0, NULL);
    CHECK_MSG(ref != NULL, "cannot read %s", path);
    return ref;
}

/* Writes model NAME (its reference's make_moe "ARCH TYPE SEED") into the
 * temporary folder as BASE and loads it; NULL if a step fails. */
static sprout_model *make_model(const json_t *bare, const char *name, char *base, size_t cap) {
    char arch[32], type[16], seed[16], cmd[2048];
    if (sscanf(json_string_value(json_object_get(bare, "make_moe")), "%31s %15s %15s", arch, type, seed) != 3) {
        CHECK_MSG(0, "%s: no make_moe arguments", name);
        return NULL;
    }
    snprintf(base, cap, "%s/%s.gguf", test_temp_dir(), name);
    snprintf(cmd, sizeof cmd, "'%s' %s %s '%s' %s", SPROUT_MAKE_MOE_PATH, arch, type, base, seed);
    sprout_model_params mp = {.struct_size = sizeof mp, .n_threads = 2};
    sprout_model *m = NULL;
    if (run(cmd) && sprout_model_load(base, &mp, &m) != SPROUT_OK) CHECK_MSG(0, "%s: %s", base, sprout_last_error());
    return m;
}

/* make_lora BASE OUT with the arguments of a JSON array (or none) and
 * `extra`, then the adapter loaded against m (NULL if a step fails). */
static sprout_lora *make_lora(sprout_model *m, const char *base, const char *out, const json_t *args, const char *extra) {
    char cmd[4096];
    int len = snprintf(cmd, sizeof cmd, "'%s' '%s' '%s' %s", SPROUT_MAKE_LORA_PATH, base, out, extra);
    for (size_t i = 0; i < json_array_size(args); i++)
        len += snprintf(cmd + len, sizeof cmd - (size_t)len, " '%s'", json_string_value(json_array_get(args, i)));
    sprout_lora *l = NULL;
    if (run(cmd) && sprout_lora_load(m, out, &l) != SPROUT_OK) CHECK_MSG(0, "%s: %s", out, sprout_last_error());
    return l;
}

static double num(const json_t *o, const char *key) { return json_number_value(json_object_get(o, key)); }

static int32_t arg_max(const float *x, int32_t n) {
    int32_t best = 0;
    for (int32_t i = 1; i < n; i++) best = x[i] > x[best] ? i : best;
    return best;
}

/* --- llama.cpp's logits -------------------------------------------------------------------- */

/* One case: the 32 tokens in one batch with the case's adapters, then its
 * 16 greedy steps a token at a time. */
static void check_case(const json_t *cs, const json_t *tokens) {
    const char *name = json_string_value(json_object_get(cs, "name")), *model = json_string_value(json_object_get(cs, "moe_model"));
    json_t *bare = moe_reference(model);
    char base[1024], file[1200];
    sprout_model *m = bare ? make_model(bare, model, base, sizeof base) : NULL;
    const json_t *adapters = json_object_get(cs, "adapters");
    sprout_lora *loras[MAX_ADAPTERS] = {0};
    sprout_lora_use uses[MAX_ADAPTERS];
    size_t n_ad = 0;
    for (; m && n_ad < json_array_size(adapters) && n_ad < MAX_ADAPTERS; n_ad++) {
        const json_t *a = json_array_get(adapters, n_ad);
        snprintf(file, sizeof file, "%s/%s-%zu.gguf", test_temp_dir(), name, n_ad);
        if (!(loras[n_ad] = make_lora(m, base, file, json_object_get(a, "make_lora"), ""))) break;
        uses[n_ad] = (sprout_lora_use){loras[n_ad], (float)num(a, "scale")};
    }
    sp_lora_set set = {0, NULL, NULL};
    sp_context ctx = {0};
    const int32_t n = (int32_t)json_array_size(tokens), n_vocab = m ? sprout_model_n_vocab(m) : 0;
    float *logits = malloc((size_t)(n > 0 ? n : 1) * (size_t)(n_vocab > 0 ? n_vocab : 1) * sizeof(float));
    if (!m || n_ad != json_array_size(adapters) || n > MAX_TOKENS || !logits || sp_lora_set_copy(m, uses, n_ad, &set) != SPROUT_OK ||
        sp_context_init(&ctx, m, 512, MAX_TOKENS, 1, 2, SP_KV_F32) != SPROUT_OK) {
        CHECK_MSG(0, "%s: not run: %s", name, sprout_last_error());
        goto done;
    }
    sp_batch_token batch[MAX_TOKENS];
    for (int32_t i = 0; i < n; i++) batch[i] = (sp_batch_token){(int32_t)json_integer_value(json_array_get(tokens, (size_t)i)), i, 0, true, false, true, &set};
    if (sp_forward(&ctx, batch, n, logits) != SPROUT_OK) {
        CHECK_MSG(0, "%s: %s", name, sprout_last_error());
        goto done;
    }
    const json_t *tol = json_object_get(cs, "tolerance");
    const double tol_abs = num(tol, "max_abs"), tol_rel = num(tol, "rel_rms");
    const float *last = logits + (size_t)(n - 1) * (size_t)n_vocab;
    double rel, moved_rel;
    const double last_abs = logits_vs_ref(last, json_object_get(cs, "last_logits"), n_vocab, &rel);
    const double moved = logits_vs_ref(last, json_object_get(bare, "last_logits"), n_vocab, &moved_rel);
    /* the listed top 5 of every position */
    double top_abs = 0;
    const json_t *tops = json_object_get(cs, "top5_per_position");
    CHECK(json_array_size(tops) == (size_t)n && json_array_size(json_object_get(cs, "last_logits")) == (size_t)n_vocab);
    for (int32_t p = 0; p < n; p++)
        for (size_t k = 0; k < json_array_size(json_array_get(tops, (size_t)p)); k++) {
            const json_t *e = json_array_get(json_array_get(tops, (size_t)p), k);
            const int64_t id = json_integer_value(json_array_get(e, 0));
            if (id >= 0 && id < n_vocab) top_abs = fmax(top_abs, fabs(logits[(size_t)p * (size_t)n_vocab + (size_t)id] - json_number_value(json_array_get(e, 1))));
        }
    /* the greedy steps, following llama.cpp's tokens; the leading ones its margins decide must be sprout's too */
    const json_t *steps = json_object_get(json_object_get(cs, "greedy"), "steps");
    const int checkable = (int)json_integer_value(json_object_get(json_object_get(cs, "greedy"), "checkable_steps"));
    int same = 0;
    double step_abs = 0;
    float *step = logits; /* the batch's rows are no longer needed */
    memmove(step, last, (size_t)n_vocab * sizeof(float));
    for (int s = 0; s < (int)json_array_size(steps); s++) {
        const json_t *st = json_array_get(steps, (size_t)s);
        const int32_t want = (int32_t)json_integer_value(json_object_get(st, "token"));
        if (want < 0 || want >= n_vocab) break;
        step_abs = fmax(step_abs, fabs(step[want] - num(st, "logit")));
        same += s < checkable && arg_max(step, n_vocab) == want;
        const sp_batch_token bt = {want, n + s, 0, true, false, false, &set};
        if (sp_forward(&ctx, &bt, 1, step) != SPROUT_OK) {
            CHECK_MSG(0, "%s: step %d: %s", name, s, sprout_last_error());
            break;
        }
    }
    printf("%-24s last max|d| %.3g rel %.3g | top5 %.3g | steps %.3g | greedy %d/%d | tol %.3g/%.3g | vs bare %.3g rel %.3g\n", name,
           last_abs, rel, top_abs, step_abs, same, checkable, tol_abs, tol_rel, moved, moved_rel);
    CHECK_MSG(last_abs <= tol_abs && rel <= tol_rel, "%s: last logits off (max %.4g, rel %.4g)", name, last_abs, rel);
    CHECK_MSG(top_abs <= tol_abs && step_abs <= tol_abs, "%s: top-5 off by %.4g, steps by %.4g", name, top_abs, step_abs);
    CHECK_MSG(same == checkable, "%s: %d of %d checkable greedy steps match", name, same, checkable);
    CHECK_MSG(moved > tol_abs && moved_rel > tol_rel, "%s: the adapters barely move the logits (max %.4g)", name, moved);
done:
    sp_context_free(&ctx);
    sp_lora_set_free(&set);
    free(logits);
    for (size_t i = 0; i < n_ad; i++) sprout_lora_free(loras[i]);
    sprout_model_free(m);
    json_decref(bare);
}

static void test_refs(void) {
    char path[1024];
    snprintf(path, sizeof path, "%s/moe_cases.json", SPROUT_LORA_DATA_DIR);
    json_error_t error;
    json_t *ref = json_load_file(path, 0, &error), *cs;
    CHECK_MSG(ref != NULL, "%s: %s", path, error.text);
    const json_t *cases = json_object_get(ref, "cases"), *tokens = json_object_get(ref, "tokens");
    CHECK(json_array_size(cases) >= 3);
    size_t c;
    json_array_foreach(cases, c, cs) check_case(cs, tokens);
    json_decref(ref);
}

/* --- batch invariance, scale 0 ------------------------------------------------------------- */

enum { PROMPT = 7, STEPS = 3, N_SETS = 4, VOCAB = 512 };

/* Sequences first .. first + n_seq - 1 (sets[0 .. n_seq)), each its
 * prompt's last logits and then each step's: one alone on one thread, or
 * several interleaved in each batch on two threads, every adapter term
 * split among them however small. */
static void run_sequences(sprout_model *m, const sp_lora_set *const *sets, int first, int n_seq, float out[][STEPS + 1][VOCAB]) {
    sp_context ctx;
    if (sp_context_init(&ctx, m, 64, PROMPT * N_SETS, n_seq, n_seq > 1 ? 2 : 1, SP_KV_F32) != SPROUT_OK) {
        CHECK_MSG(0, "%s", sprout_last_error());
        return;
    }
    if (n_seq > 1) ctx.lora_parallel_min_work = 0;
    static float logits[PROMPT * N_SETS * VOCAB];
    for (int step = 0; step <= STEPS; step++) {
        sp_batch_token bt[PROMPT * N_SETS];
        const int per = step == 0 ? PROMPT : 1;
        for (int i = 0; i < per; i++) /* rows of different sets side by side */
            for (int s = 0; s < n_seq; s++) {
                const int32_t pos = step == 0 ? i : PROMPT + step - 1, token = 1 + (pos * 53 + (first + s) * 11 * (step > 0)) % 500;
                bt[i * n_seq + s] = (sp_batch_token){token, pos, s, true, false, false, sets[s]};
            }
        if (sp_forward(&ctx, bt, per * n_seq, logits) != SPROUT_OK) {
            CHECK_MSG(0, "%s", sprout_last_error());
            break;
        }
        for (int s = 0; s < n_seq; s++) memcpy(out[s][step], logits + (size_t)((per - 1) * n_seq + s) * VOCAB, sizeof out[s][step]);
    }
    sp_context_free(&ctx);
}

static void test_rows(sprout_model *m, const char *base) {
    char fa[1200], fb[1200];
    snprintf(fa, sizeof fa, "%s/rows-a.gguf", test_temp_dir());
    snprintf(fb, sizeof fb, "%s/rows-b.gguf", test_temp_dir());
    sprout_lora *a = make_lora(m, base, fa, NULL, "--rank 4 --targets experts --seed 41 --magnitude 0.1");
    sprout_lora *b = make_lora(m, base, fb, NULL, "--rank 8 --type F16 --targets all --alpha 4 --seed 42 --magnitude 0.1");
    if (!a || !b) goto done;
    const sprout_lora_use ua[] = {{a, 1.f}}, uab[] = {{a, 0.5f}, {b, -1.5f}}, ub[] = {{b, 1.f}}, zero[] = {{a, 0.f}, {b, 0.f}};
    sp_lora_set sa, sab, sb, s0;
    CHECK(sp_lora_set_copy(m, ua, 1, &sa) == SPROUT_OK && sp_lora_set_copy(m, uab, 2, &sab) == SPROUT_OK &&
          sp_lora_set_copy(m, ub, 1, &sb) == SPROUT_OK && sp_lora_set_copy(m, zero, 2, &s0) == SPROUT_OK);
    const sp_lora_set *sets[N_SETS] = {&sa, NULL, &sab, &sb};
    static float alone[N_SETS][STEPS + 1][VOCAB], together[N_SETS][STEPS + 1][VOCAB], scale0[1][STEPS + 1][VOCAB];
    for (int s = 0; s < N_SETS; s++) run_sequences(m, &sets[s], s, 1, &alone[s]);
    run_sequences(m, sets, 0, N_SETS, together);
    /* scale 0 leaves no term: the bare model's bits (sequence 1 ran without adapters) */
    const sp_lora_set *zero_set[] = {&s0};
    CHECK(s0.n == 0);
    run_sequences(m, zero_set, 1, 1, scale0);
    CHECK_MSG(!memcmp(scale0[0], alone[1], sizeof scale0[0]), "scale 0 differs from no adapter");
    for (int s = 0; s < N_SETS; s++) CHECK_MSG(!memcmp(alone[s], together[s], sizeof alone[s]), "sequence %d differs in a batch", s);
    for (int s = 0; s < N_SETS; s++)
        if (s != 1) CHECK_MSG(memcmp(alone[s][0], alone[1][0], sizeof alone[1][0]) != 0, "set %d changes nothing", s);
    sp_lora_set_free(&sa);
    sp_lora_set_free(&sab);
    sp_lora_set_free(&sb);
done:
    sprout_lora_free(a);
    sprout_lora_free(b);
}

/* --- hostile adapters ---------------------------------------------------------------------- */

static void test_hostile(sprout_model *m, const char *base) {
    static const struct {
        const char *kind, *message;
    } cases[] = {
        {"lone-a", "'blk.0.ffn_gate_exps.weight.lora_b' is missing"},
        {"shape", "'blk.0.ffn_gate_exps.weight.lora_a' has shape [288, 4, 8], expected [256, 4, 8] (one slice per expert)"},
        {"slices", "'blk.0.ffn_gate_exps.weight.lora_b' has shape [4, 128, 9], expected [4, 128, 8]"},
        {"ranks", "'blk.0.ffn_gate_exps.weight.lora_b' has shape [5, 128, 8], expected [4, 128, 8]"},
        {"flat", "'blk.0.ffn_gate_exps.weight.lora_a' has shape [256, 4, 1], expected [256, 4, 8]"},
        {"rank0", "rank 0"},
    };
    char file[1200], extra[96];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(file, sizeof file, "%s/hostile-%s.gguf", test_temp_dir(), cases[i].kind);
        snprintf(extra, sizeof extra, "--rank 4 --targets experts --hostile %s", cases[i].kind);
        char cmd[4096];
        snprintf(cmd, sizeof cmd, "'%s' '%s' '%s' %s", SPROUT_MAKE_LORA_PATH, base, file, extra);
        if (!run(cmd)) continue;
        sprout_lora *l = (sprout_lora *)1;
        CHECK_MSG(sprout_lora_load(m, file, &l) != SPROUT_OK && !l, "hostile %s loaded", cases[i].kind);
        CHECK_MSG(strstr(sprout_last_error(), cases[i].message) != NULL, "%s: '%s' lacks '%s'", cases[i].kind, sprout_last_error(),
                  cases[i].message);
    }
}

/* mixtral's experts in an adapter for a dense llama: a target it lacks */
static void test_dense_base(void) {
    json_t *bare = moe_reference("mixtral-F32");
    char base[1024], file[1200], cmd[4096];
    sprout_model *mixtral = bare ? make_model(bare, "mixtral-F32", base, sizeof base) : NULL;
    json_decref(bare);
    sprout_model *dense = test_load_shared("models/stories260K.gguf", 64);
    snprintf(file, sizeof file, "%s/mixtral-experts.gguf", test_temp_dir());
    snprintf(cmd, sizeof cmd, "'%s' '%s' '%s' --rank 4 --targets experts", SPROUT_MAKE_LORA_PATH, base, file);
    if (mixtral && dense && run(cmd)) {
        sprout_lora *l = NULL;
        CHECK(sprout_lora_load(mixtral, file, &l) == SPROUT_OK);
        sprout_lora_free(l);
        CHECK(sprout_lora_load(dense, file, &l) == SPROUT_ERR_FORMAT && !l);
        CHECK_MSG(strstr(sprout_last_error(), "adapts 'blk.0.ffn_gate_exps.weight', which the model does not have"), "%s", sprout_last_error());
    }
    sprout_model_free(dense);
    sprout_model_free(mixtral);
}

int main(void) {
    test_refs();
    json_t *bare = moe_reference("olmoe-F32");
    char base[1024];
    sprout_model *m = bare ? make_model(bare, "olmoe-F32", base, sizeof base) : NULL;
    json_decref(bare);
    if (m) {
        test_rows(m, base);
        test_hostile(m, base);
    }
    sprout_model_free(m);
    test_dense_base();
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", test_temp_dir());
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", test_temp_dir());
    TEST_MAIN_END();
}
