/* The engine end to end on the real stories260K model: llama.cpp's greedy
 * references, batched against unbatched evaluation, chat sessions that reuse
 * their cache, STOP and CANCEL, stop strings and ids, log-probabilities, and
 * the errors a user can provoke. */
#include <jansson.h>
#include <math.h>
#include <stddef.h>
#include <unistd.h>

#include "gguf/gguf_writer.h"
#include "runtime/forward.h"
#include "test_util.h"

static char model_path[1024];

static sprout_model *load(sprout_kv_type kv, int threads) {
    sprout_model_params mp = {.struct_size = sizeof mp, .n_threads = threads, .n_ctx = 512, .kv_type = kv, .kv_type_set = true};
    sprout_model *m = NULL;
    CHECK_MSG(sprout_model_load(model_path, &mp, &m) == SPROUT_OK, "%s", sprout_last_error());
    return m;
}

static sprout_generation_config greedy(int n) {
    sprout_generation_config c;
    sprout_generation_config_init(&c);
    c.temperature = 0;
    c.max_new_tokens = n;
    return c;
}

/* --- llama.cpp's references ---------------------------------------------------------------- */

static void test_reference(sprout_kv_type kv, int threads) {
    char path[1024];
    snprintf(path, sizeof path, "%s/reference/stories260K-greedy.json", test_shared_dir());
    json_t *ref = json_load_file(path, 0, NULL);
    CHECK_MSG(ref != NULL, "cannot read %s", path);
    sprout_model *m = load(kv, threads);
    if (!ref || !m) return;
    sprout_pipeline *p = NULL;
    CHECK(sprout_pipeline_create(m, NULL, &p) == SPROUT_OK);
    const json_t *cases = json_object_get(ref, "cases");
    for (size_t c = 0; c < json_array_size(cases); c++) {
        const json_t *cs = json_array_get(cases, c);
        const json_t *want = json_object_get(cs, "generated_tokens"), *pt = json_object_get(cs, "prompt_tokens_with_bos");
        sprout_generation_config cfg = greedy((int)json_array_size(want));
        sprout_result *r = NULL;
        CHECK_MSG(sprout_generate(p, json_string_value(json_object_get(cs, "prompt")), &cfg, NULL, NULL, &r) == SPROUT_OK, "%s",
                  sprout_last_error());
        if (!r) continue;
        size_t n, np;
        const sprout_token *toks = sprout_result_tokens(r, &n), *prompt = sprout_result_prompt_tokens(r, &np);
        bool prompt_same = np == json_array_size(pt);
        for (size_t i = 0; prompt_same && i < np; i++) prompt_same = prompt[i] == json_integer_value(json_array_get(pt, i));
        size_t same = 0;
        while (same < n && same < json_array_size(want) && toks[same] == json_integer_value(json_array_get(want, same))) same++;
        CHECK_MSG(prompt_same, "case %zu: prompt tokens differ", c);
        CHECK_MSG(same == json_array_size(want) && n == same, "case %zu (kv %s, %d threads): %zu of %zu tokens match", c,
                  kv == SPROUT_KV_F32 ? "f32" : "f16", threads, same, json_array_size(want));
        size_t len;
        const char *text = sprout_result_text(r, &len);
        const char *want_text = json_string_value(json_object_get(cs, "generated_text"));
        CHECK_MSG(len == strlen(want_text) && !memcmp(text, want_text, len), "case %zu: text differs", c);
        CHECK(sprout_result_finish_reason(r) == SPROUT_FINISH_LENGTH);

        /* the first position's logits, through the forward pass itself */
        if (kv == SPROUT_KV_F32) {
            sp_context ctx;
            CHECK(sp_context_init(&ctx, m, 512, 64, 1, threads, SP_KV_F32) == SPROUT_OK);
            sp_batch_token b[64];
            for (size_t i = 0; i < np; i++) b[i] = (sp_batch_token){prompt[i], (int32_t)i, 0, i == np - 1, false, true, NULL};
            float logits[512];
            CHECK(sp_forward(&ctx, b, (int32_t)np, logits) == SPROUT_OK);
            double max = 0;
            const json_t *fl = json_object_get(cs, "first_position_logits");
            for (int v = 0; v < 512; v++) max = fmax(max, fabs(logits[v] - json_number_value(json_array_get(fl, (size_t)v))));
            CHECK_MSG(max <= 1e-3, "case %zu: first-position logits differ by %g", c, max);
            sp_context_free(&ctx);
        }
        sprout_result_free(r);
    }
    sprout_pipeline_free(p);
    sprout_model_free(m);
    json_decref(ref);
}

/* --- batching ------------------------------------------------------------------------------------ */

static double max_diff(const float *a, const float *b, int n) {
    double m = 0;
    for (int i = 0; i < n; i++) m = fmax(m, fabs((double)a[i] - b[i]));
    return m;
}

static void test_batching(void) {
    sprout_model *m = load(SPROUT_KV_F32, 2);
    if (!m) return;
    const int32_t a[] = {1, 403, 407, 261, 378, 432, 383}, b[] = {1, 322, 353, 323, 410, 432};
    const int na = 7, nb = 6, V = 512;
    float alone_a[7 * 512], alone_b[6 * 512], together[13 * 512], stepwise[512];
    sp_context ctx;
    CHECK(sp_context_init(&ctx, m, 128, 32, 2, 2, SP_KV_F32) == SPROUT_OK);
    sp_batch_token batch[16];
    for (int i = 0; i < na; i++) batch[i] = (sp_batch_token){a[i], i, 0, true, false, true, NULL};
    CHECK(sp_forward(&ctx, batch, na, alone_a) == SPROUT_OK);
    sp_kv_clear(&ctx.kv, 0);
    for (int i = 0; i < nb; i++) batch[i] = (sp_batch_token){b[i], i, 1, true, false, true, NULL};
    CHECK(sp_forward(&ctx, batch, nb, alone_b) == SPROUT_OK);
    sp_kv_clear(&ctx.kv, 1);
    /* both sequences interleaved in one batch */
    int k = 0;
    for (int i = 0; i < na || i < nb; i++) {
        if (i < na) batch[k++] = (sp_batch_token){a[i], i, 0, true, false, true, NULL};
        if (i < nb) batch[k++] = (sp_batch_token){b[i], i, 1, true, false, true, NULL};
    }
    CHECK(sp_forward(&ctx, batch, k, together) == SPROUT_OK);
    double worst = 0;
    k = 0;
    for (int i = 0; i < na || i < nb; i++) {
        if (i < na) worst = fmax(worst, max_diff(together + (size_t)(k++) * V, alone_a + (size_t)i * V, V));
        if (i < nb) worst = fmax(worst, max_diff(together + (size_t)(k++) * V, alone_b + (size_t)i * V, V));
    }
    CHECK_MSG(worst <= 1e-5, "two sequences in one batch differ from each alone by %g", worst);
    /* logits for a few tokens only (the last layer runs for those alone):
     * the rows that come back are those tokens', in batch order */
    sp_kv_clear(&ctx.kv, 0);
    sp_kv_clear(&ctx.kv, 1);
    const float *want[16];
    int n_want = 0;
    k = 0;
    for (int i = 0; i < na || i < nb; i++) {
        if (i < na) {
            batch[k++] = (sp_batch_token){a[i], i, 0, i == 2 || i == na - 1, false, true, NULL};
            if (batch[k - 1].logits) want[n_want++] = alone_a + (size_t)i * V;
        }
        if (i < nb) {
            batch[k++] = (sp_batch_token){b[i], i, 1, i == 4, false, true, NULL};
            if (batch[k - 1].logits) want[n_want++] = alone_b + (size_t)i * V;
        }
    }
    CHECK(sp_forward(&ctx, batch, k, together) == SPROUT_OK);
    worst = 0;
    for (int i = 0; i < n_want; i++) worst = fmax(worst, max_diff(together + (size_t)i * V, want[i], V));
    CHECK_MSG(n_want == 3 && worst <= 1e-5, "logits of some tokens differ from all tokens' by %g", worst);
    /* a prompt that wants no logits still fills the cache for the next token */
    sp_kv_clear(&ctx.kv, 0);
    sp_kv_clear(&ctx.kv, 1);
    for (int i = 0; i < na - 1; i++) batch[i] = (sp_batch_token){a[i], i, 0, false, false, true, NULL};
    CHECK(sp_forward(&ctx, batch, na - 1, NULL) == SPROUT_OK);
    batch[0] = (sp_batch_token){a[na - 1], na - 1, 0, true, false, true, NULL};
    CHECK(sp_forward(&ctx, batch, 1, stepwise) == SPROUT_OK);
    CHECK_MSG(max_diff(stepwise, alone_a + (size_t)(na - 1) * V, V) <= 1e-5, "after a prompt without logits the next token differs");
    /* the same prompt token by token */
    sp_kv_clear(&ctx.kv, 0);
    sp_kv_clear(&ctx.kv, 1);
    worst = 0;
    for (int i = 0; i < na; i++) {
        sp_batch_token t = {a[i], i, 0, true, false, true, NULL};
        CHECK(sp_forward(&ctx, &t, 1, stepwise) == SPROUT_OK);
        worst = fmax(worst, max_diff(stepwise, alone_a + (size_t)i * V, V));
    }
    CHECK_MSG(worst <= 1e-5, "token by token differs from one batch by %g", worst);
    /* a rolled-back sequence computes the same again */
    sp_kv_truncate(&ctx.kv, 0, 3);
    for (int i = 3; i < na; i++) batch[i - 3] = (sp_batch_token){a[i], i, 0, i == na - 1, false, true, NULL};
    CHECK(sp_forward(&ctx, batch, na - 3, stepwise) == SPROUT_OK);
    CHECK(max_diff(stepwise, alone_a + (size_t)(na - 1) * V, V) <= 1e-5);
    /* bad batches are refused, and leave the cache as it was */
    int32_t before = ctx.kv.seqs[0].n;
    sp_batch_token bad = {9999, 100, 0, true, false, true, NULL};
    CHECK(sp_forward(&ctx, &bad, 1, stepwise) == SPROUT_ERR_INVALID_ARGUMENT);
    bad = (sp_batch_token){5, 2, 0, true, false, true, NULL}; /* a position behind the sequence's end */
    CHECK(sp_forward(&ctx, &bad, 1, stepwise) == SPROUT_ERR_INVALID_ARGUMENT);
    bad = (sp_batch_token){5, 50, 7, true, false, true, NULL};
    CHECK(sp_forward(&ctx, &bad, 1, stepwise) == SPROUT_ERR_INVALID_ARGUMENT);
    CHECK(ctx.kv.seqs[0].n == before);
    sp_context_free(&ctx);
    sprout_model_free(m);
}

/* Prompt tokens and generated ones may take different kernels (kernels.h:
 * F16 and BF16 weights at the amx level): each kind must give a token the
 * same bits in one batch, in chunks, token by token or beside another
 * sequence, and the two kinds must agree but for float rounding. On
 * ../shared/arch's F16 and BF16 llamas, at whatever level runs. */
static void test_token_kinds(void) {
    static const char *const files[] = {"llama-F16", "llama-BF16"};
    enum { N = 20, V = 512 };
    for (size_t fi = 0; fi < sizeof files / sizeof files[0]; fi++) {
        char path[1024];
        /* the kinds may differ as much as two float implementations: llama.cpp's reference's tolerance */
        snprintf(path, sizeof path, "%s/arch/%s.json", test_shared_dir(), files[fi]);
        json_t *ref = json_load_file(path, 0, NULL);
        const double tolerance = json_number_value(json_object_get(json_object_get(ref, "tolerance"), "max_abs"));
        json_decref(ref);
        CHECK_MSG(tolerance > 0, "%s: no tolerance", path);
        snprintf(path, sizeof path, "%s/arch/%s.gguf", test_shared_dir(), files[fi]);
        sprout_model_params mp = {.struct_size = sizeof mp, .n_threads = 2, .n_ctx = 128, .kv_type = SPROUT_KV_F32, .kv_type_set = true};
        sprout_model *m = NULL;
        CHECK_MSG(sprout_model_load(path, &mp, &m) == SPROUT_OK, "%s", sprout_last_error());
        if (!m) continue;
        sp_context ctx;
        CHECK(sp_context_init(&ctx, m, 256, 2 * N, 2, 2, SP_KV_F32) == SPROUT_OK);
        int32_t ids[N];
        for (int i = 0; i < N; i++) ids[i] = 1 + (i * 37) % (V - 1);
        static float whole[N * V], other[N * V], generated[N * V];
        sp_batch_token batch[2 * N];
        for (int i = 0; i < N; i++) batch[i] = (sp_batch_token){ids[i], i, 0, true, false, true, NULL};
        CHECK(sp_forward(&ctx, batch, N, whole) == SPROUT_OK);
        /* the prompt in chunks of 1, 7 and 12 */
        sp_kv_clear(&ctx.kv, 0);
        for (int from = 0, size = 1; from < N; from += size, size = size == 1 ? 7 : N - from) {
            for (int i = 0; i < size; i++) batch[i] = (sp_batch_token){ids[from + i], from + i, 0, true, false, true, NULL};
            CHECK(sp_forward(&ctx, batch, size, other + (size_t)from * V) == SPROUT_OK);
        }
        CHECK_MSG(!memcmp(whole, other, sizeof whole), "%s: a prompt in chunks differs from the prompt whole", files[fi]);
        /* beside another sequence's prompt in one batch (sequence 0 takes the even rows) */
        sp_kv_clear(&ctx.kv, 0);
        for (int i = 0; i < N; i++) {
            batch[2 * i] = (sp_batch_token){ids[i], i, 0, true, false, true, NULL};
            batch[2 * i + 1] = (sp_batch_token){ids[N - 1 - i], i, 1, true, false, true, NULL};
        }
        static float both[2 * N * V];
        CHECK(sp_forward(&ctx, batch, 2 * N, both) == SPROUT_OK);
        bool same = true;
        for (int i = 0; i < N; i++) same &= !memcmp(both + (size_t)(2 * i) * V, whole + (size_t)i * V, V * sizeof(float));
        CHECK_MSG(same, "%s: a prompt beside another differs from the prompt alone", files[fi]);
        /* the same tokens as generated ones, one at a time, and two
         * sequences' generated tokens in one batch */
        sp_kv_clear(&ctx.kv, 0);
        sp_kv_clear(&ctx.kv, 1);
        for (int i = 0; i < N; i++) {
            sp_batch_token t = {ids[i], i, 0, true, false, false, NULL};
            CHECK(sp_forward(&ctx, &t, 1, generated + (size_t)i * V) == SPROUT_OK);
        }
        sp_kv_clear(&ctx.kv, 0);
        same = true;
        for (int i = 0; i < N; i++) {
            const sp_batch_token pair[2] = {{ids[i], i, 0, true, false, false, NULL}, {ids[N - 1 - i], i, 1, true, false, false, NULL}};
            float out[2 * V];
            CHECK(sp_forward(&ctx, pair, 2, out) == SPROUT_OK);
            same &= !memcmp(out, generated + (size_t)i * V, V * sizeof(float));
        }
        CHECK_MSG(same, "%s: generated tokens beside another sequence's differ from alone", files[fi]);
        /* both kinds in one batch, as the scheduler makes them: sequence 0's
         * next token, generated, after half the prompt; sequence 1's prompt */
        sp_kv_clear(&ctx.kv, 0);
        sp_kv_clear(&ctx.kv, 1);
        static float half_then_one[V], mixed[(N + 1) * V];
        for (int i = 0; i < N / 2; i++) batch[i] = (sp_batch_token){ids[i], i, 0, false, false, true, NULL};
        CHECK(sp_forward(&ctx, batch, N / 2, NULL) == SPROUT_OK);
        batch[0] = (sp_batch_token){ids[N / 2], N / 2, 0, true, false, false, NULL};
        CHECK(sp_forward(&ctx, batch, 1, half_then_one) == SPROUT_OK);
        sp_kv_truncate(&ctx.kv, 0, N / 2);
        batch[0] = (sp_batch_token){ids[N / 2], N / 2, 0, true, false, false, NULL};
        for (int i = 0; i < N; i++) batch[1 + i] = (sp_batch_token){ids[i], i, 1, true, false, true, NULL};
        CHECK(sp_forward(&ctx, batch, N + 1, mixed) == SPROUT_OK);
        CHECK_MSG(!memcmp(mixed, half_then_one, sizeof half_then_one) && !memcmp(mixed + V, whole, sizeof whole),
                  "%s: prompt and generated tokens in one batch differ from each kind alone", files[fi]);
        /* the prompt in two runs around that generated token: the second run
         * staged after the first (forward.c) */
        sp_kv_truncate(&ctx.kv, 0, N / 2);
        sp_kv_clear(&ctx.kv, 1);
        static float two_runs[(N + 1) * V];
        for (int i = 0; i < N / 2; i++) batch[i] = (sp_batch_token){ids[i], i, 1, true, false, true, NULL};
        batch[N / 2] = (sp_batch_token){ids[N / 2], N / 2, 0, true, false, false, NULL};
        for (int i = N / 2; i < N; i++) batch[1 + i] = (sp_batch_token){ids[i], i, 1, true, false, true, NULL};
        CHECK(sp_forward(&ctx, batch, N + 1, two_runs) == SPROUT_OK);
        same = !memcmp(two_runs + (size_t)(N / 2) * V, half_then_one, sizeof half_then_one);
        for (int i = 0; i < N; i++) same &= !memcmp(two_runs + (size_t)(i < N / 2 ? i : i + 1) * V, whole + (size_t)i * V, V * sizeof(float));
        CHECK_MSG(same, "%s: a prompt in two runs around a generated token differs from each alone", files[fi]);
        const double apart = max_diff(whole, generated, N * V);
        CHECK_MSG(apart <= tolerance, "%s: generated tokens differ from prompt tokens by %g", files[fi], apart);
        /* and where the kinds take different kernels they do differ: each went its own way */
        if (sp_context_kinds_differ(&ctx)) CHECK_MSG(apart > 0, "%s: the kinds computed apart give the same numbers", files[fi]);
        printf("  %s (%s): prompt and generated tokens %s, %.2g apart\n", files[fi], sprout_kernels_name(),
               sp_context_kinds_differ(&ctx) ? "computed apart" : "computed alike", apart);
        if (!sp_context_kinds_differ(&ctx)) CHECK_MSG(apart == 0, "%s: kinds computed alike yet %g apart", files[fi], apart);
        sp_context_free(&ctx);
        sprout_model_free(m);
    }
}

/* --- chat ------------------------------------------------------------------------------------------ */

typedef struct stream_ctl {
    int pieces, stop_after;
    sprout_stream_status answer;
    char seen[4096];
    size_t seen_len;
} stream_ctl;

static sprout_stream_status on_piece(const char *piece, size_t len, void *user) {
    stream_ctl *s = user;
    if (s->seen_len + len < sizeof s->seen) {
        memcpy(s->seen + s->seen_len, piece, len);
        s->seen_len += len;
    }
    return ++s->pieces >= s->stop_after ? s->answer : SPROUT_STREAM_RUNNING;
}

static void test_chat(void) {
    sprout_model *m = load(SPROUT_KV_F32, 2);
    if (!m) return;
    sprout_pipeline *p = NULL;
    CHECK(sprout_pipeline_create(m, NULL, &p) == SPROUT_OK);
    CHECK(sprout_chat_start(p, "You tell stories.") == SPROUT_OK);
    sprout_generation_config cfg = greedy(12);
    const char *turns[] = {"Once upon a time", "Tell me about a dog", "And then?"};
    int32_t prefill[3], cached_before[3];
    sprout_result *r = NULL;
    for (int t = 0; t < 3; t++) {
        cached_before[t] = sprout_pipeline_cached_tokens(p);
        CHECK_MSG(sprout_chat_generate(p, turns[t], &cfg, NULL, NULL, &r) == SPROUT_OK, "%s", sprout_last_error());
        prefill[t] = sprout_pipeline_last_prefill_tokens(p);
        size_t np;
        sprout_result_prompt_tokens(r, &np);
        /* only what is new in this turn was computed */
        CHECK_MSG(t == 0 || prefill[t] <= (int32_t)np - cached_before[t] + 8, "turn %d computed %d of %zu prompt tokens", t, prefill[t], np);
        CHECK_MSG(t == 0 || prefill[t] < (int32_t)np / 2, "turn %d recomputed most of the conversation (%d of %zu)", t, prefill[t], np);
        if (t < 2) sprout_result_free(r);
    }
    CHECK(sprout_chat_history_length(p) == 7); /* system + 3 x (user, assistant) */
    /* the third answer equals rendering the whole conversation at once */
    size_t np, n3;
    const sprout_token *prompt3 = sprout_result_prompt_tokens(r, &np);
    const sprout_token *out3 = sprout_result_tokens(r, &n3);
    sprout_pipeline *fresh = NULL;
    CHECK(sprout_pipeline_create(m, NULL, &fresh) == SPROUT_OK);
    sprout_result *whole = NULL;
    CHECK(sprout_generate_tokens(fresh, prompt3, np, &cfg, NULL, NULL, &whole) == SPROUT_OK);
    size_t nw;
    const sprout_token *outw = sprout_result_tokens(whole, &nw);
    CHECK_MSG(nw == n3 && !memcmp(outw, out3, n3 * sizeof *outw), "incremental chat differs from the whole conversation");
    CHECK(sprout_pipeline_last_prefill_tokens(fresh) == (int32_t)np);
    sprout_result_free(whole);
    sprout_result_free(r);
    sprout_pipeline_free(fresh);

    /* STOP keeps the turn; CANCEL drops it from history and cache */
    const int32_t cached = sprout_pipeline_cached_tokens(p);
    stream_ctl stop = {.stop_after = 2, .answer = SPROUT_STREAM_STOP};
    cfg.max_new_tokens = 30;
    CHECK(sprout_chat_generate(p, "Stop soon", &cfg, on_piece, &stop, &r) == SPROUT_OK);
    CHECK(sprout_result_finish_reason(r) == SPROUT_FINISH_STOPPED);
    size_t n_stop;
    sprout_result_tokens(r, &n_stop);
    CHECK(n_stop >= 1 && n_stop < 30);
    CHECK(sprout_chat_history_length(p) == 9);
    CHECK(sprout_pipeline_cached_tokens(p) > cached);
    sprout_result_free(r);
    const int32_t cached_after_stop = sprout_pipeline_cached_tokens(p);
    stream_ctl cancel = {.stop_after = 2, .answer = SPROUT_STREAM_CANCEL};
    CHECK(sprout_chat_generate(p, "Cancel this", &cfg, on_piece, &cancel, &r) == SPROUT_OK);
    CHECK(sprout_result_finish_reason(r) == SPROUT_FINISH_CANCELLED);
    CHECK(sprout_chat_history_length(p) == 9);
    CHECK_MSG(sprout_pipeline_cached_tokens(p) <= cached_after_stop, "cancel left %d cached tokens (was %d)",
              sprout_pipeline_cached_tokens(p), cached_after_stop);
    const char *role, *content;
    CHECK(sprout_chat_history_message(p, 8, &role, &content) == SPROUT_OK && !strcmp(role, "assistant"));
    sprout_result_free(r);
    sprout_chat_finish(p);
    CHECK(sprout_chat_history_length(p) == 0);

    /* earlier turns added without generating render as if they had been */
    CHECK(sprout_chat_add_message(p, "user", "Hi") == SPROUT_ERR_INVALID_ARGUMENT); /* no chat */
    CHECK(sprout_chat_start(p, "You tell stories.") == SPROUT_OK);
    CHECK(sprout_chat_add_message(p, "narrator", "Hi") == SPROUT_ERR_INVALID_ARGUMENT);
    CHECK(sprout_chat_add_message(p, "user", "\xff") == SPROUT_ERR_INVALID_ARGUMENT);
    CHECK(sprout_chat_add_message(p, "user", "Tell me about a dog") == SPROUT_OK);
    CHECK(sprout_chat_add_message(p, "assistant", "The dog ran.") == SPROUT_OK);
    CHECK(sprout_chat_history_length(p) == 3);
    CHECK(sprout_chat_generate(p, "And then?", &cfg, NULL, NULL, &r) == SPROUT_OK);
    const sprout_token *added = sprout_result_prompt_tokens(r, &np);
    sprout_token *ids = NULL;
    size_t n_ids = 0;
    CHECK(sprout_model_chat_prompt(m, NULL,
                                   "[{\"role\":\"system\",\"content\":\"You tell stories.\"},"
                                   "{\"role\":\"user\",\"content\":\"Tell me about a dog\"},"
                                   "{\"role\":\"assistant\",\"content\":\"The dog ran.\"},"
                                   "{\"role\":\"user\",\"content\":\"And then?\"}]",
                                   true, NULL, NULL, &ids, &n_ids) == SPROUT_OK);
    CHECK_MSG(n_ids == np && !memcmp(ids, added, np * sizeof *ids), "added turns render as %zu tokens, the messages as %zu", np, n_ids);
    sprout_free(ids);
    sprout_result_free(r);
    sprout_chat_finish(p);
    sprout_pipeline_free(p);
    sprout_model_free(m);
}

/* --- stop strings, stop ids, logprobs, limits, errors --------------------------------------------------- */

static void test_stops_and_limits(void) {
    sprout_model *m = load(SPROUT_KV_F32, 1);
    if (!m) return;
    sprout_pipeline *p = NULL;
    CHECK(sprout_pipeline_create(m, NULL, &p) == SPROUT_OK);
    sprout_generation_config cfg = greedy(64);
    sprout_result *r = NULL;
    /* greedy continuation: ", there was a little girl named Lily." */
    const char *stops[] = {"zzz", "little"};
    cfg.stop_strings = stops;
    cfg.n_stop_strings = 2;
    stream_ctl s = {.stop_after = 1000};
    CHECK(sprout_generate(p, "Once upon a time", &cfg, on_piece, &s, &r) == SPROUT_OK);
    size_t len;
    const char *text = sprout_result_text(r, &len);
    CHECK_MSG(!strcmp(text, ", there was a "), "stop string: got [%s]", text);
    CHECK(sprout_result_finish_reason(r) == SPROUT_FINISH_STOP_STRING);
    CHECK_MSG(s.seen_len == len && !memcmp(s.seen, text, len), "streamed [%.*s]", (int)s.seen_len, s.seen);
    sprout_result_free(r);
    cfg.include_stop_string = true;
    CHECK(sprout_generate(p, "Once upon a time", &cfg, NULL, NULL, &r) == SPROUT_OK);
    CHECK(!strcmp(sprout_result_text(r, NULL), ", there was a little"));
    sprout_result_free(r);
    cfg.n_stop_strings = 0;
    cfg.include_stop_string = false;

    const int32_t stop_ids[] = {286}; /* " was" */
    cfg.stop_token_ids = stop_ids;
    cfg.n_stop_token_ids = 1;
    CHECK(sprout_generate(p, "Once upon a time", &cfg, NULL, NULL, &r) == SPROUT_OK);
    CHECK(sprout_result_finish_reason(r) == SPROUT_FINISH_STOP_TOKEN && !strcmp(sprout_result_text(r, NULL), ", there"));
    sprout_result_free(r);
    cfg.n_stop_token_ids = 0;

    /* log-probabilities: log-softmax of the raw logits */
    cfg.max_new_tokens = 3;
    cfg.logprobs = 5;
    CHECK(sprout_generate(p, "Once upon a time", &cfg, NULL, NULL, &r) == SPROUT_OK);
    float lp;
    const sprout_token *top_ids;
    const float *top_lp;
    size_t k;
    CHECK(sprout_result_logprob(r, 0, &lp, &top_ids, &top_lp, &k) == SPROUT_OK && k == 5);
    CHECK_MSG(fabsf(lp - (-0.031703f)) < 2e-3 && top_ids[0] == 432 && top_ids[1] == 383 && top_lp[0] == lp, "logprob %g", lp);
    CHECK(sprout_result_logprob(r, 3, &lp, NULL, NULL, NULL) == SPROUT_ERR_OUT_OF_RANGE);
    sprout_result_free(r);
    cfg.logprobs = 0;

    /* max_new_tokens 0; the context's end; seeds; echo; min_new_tokens */
    cfg.max_new_tokens = 0;
    CHECK(sprout_generate(p, "Once upon a time", &cfg, NULL, NULL, &r) == SPROUT_OK);
    CHECK(sprout_result_finish_reason(r) == SPROUT_FINISH_LENGTH && sprout_result_tokens(r, &k) && k == 0);
    sprout_result_free(r);
    sprout_pipeline *small = NULL;
    sprout_pipeline_params pp = {.struct_size = sizeof pp, .n_ctx = 16};
    CHECK(sprout_pipeline_create(m, &pp, &small) == SPROUT_OK);
    cfg.max_new_tokens = 100;
    CHECK(sprout_generate(small, "Once upon a time", &cfg, NULL, NULL, &r) == SPROUT_OK);
    sprout_result_tokens(r, &k);
    CHECK_MSG(sprout_result_finish_reason(r) == SPROUT_FINISH_LENGTH && k == 12, "context end after %zu tokens", k);
    sprout_result_free(r);
    char longp[512] = "";
    for (int i = 0; i < 40; i++) strcat(longp, "once ");
    CHECK(sprout_generate(small, longp, &cfg, NULL, NULL, &r) == SPROUT_ERR_OUT_OF_RANGE);
    CHECK_MSG(strstr(sprout_last_error(), "82 tokens") && strstr(sprout_last_error(), "holds 16"), "%s", sprout_last_error());
    sprout_pipeline_free(small);

    cfg = greedy(20);
    cfg.temperature = 1.0f;
    cfg.top_k = 0;
    cfg.top_p = 1;
    cfg.min_p = 0;
    cfg.seed = 7;
    sprout_result *r2 = NULL;
    CHECK(sprout_generate(p, "Once upon a time", &cfg, NULL, NULL, &r) == SPROUT_OK);
    CHECK(sprout_generate(p, "Once upon a time", &cfg, NULL, NULL, &r2) == SPROUT_OK);
    CHECK(!strcmp(sprout_result_text(r, NULL), sprout_result_text(r2, NULL))); /* same seed, same text */
    sprout_result_free(r2);
    cfg.seed = 8;
    CHECK(sprout_generate(p, "Once upon a time", &cfg, NULL, NULL, &r2) == SPROUT_OK);
    CHECK(strcmp(sprout_result_text(r, NULL), sprout_result_text(r2, NULL)) != 0);
    sprout_result_free(r);
    sprout_result_free(r2);
    cfg = greedy(5);
    cfg.echo = true;
    CHECK(sprout_generate(p, "Once upon a time", &cfg, NULL, NULL, &r) == SPROUT_OK);
    CHECK(!strncmp(sprout_result_text(r, NULL), "Once upon a time, there", 23));
    sprout_result_free(r);

    /* errors */
    CHECK(sprout_generate(p, "bad \xff utf-8", &cfg, NULL, NULL, &r) == SPROUT_ERR_INVALID_ARGUMENT);
    CHECK(strstr(sprout_last_error(), "not valid UTF-8") != NULL);
    CHECK(sprout_generate_tokens(p, NULL, 0, &cfg, NULL, NULL, &r) == SPROUT_ERR_INVALID_ARGUMENT);
    const int32_t bad[] = {1, 99999};
    CHECK(sprout_generate_tokens(p, bad, 2, &cfg, NULL, NULL, &r) == SPROUT_ERR_INVALID_ARGUMENT);
    CHECK(sprout_generate(p, "", &cfg, NULL, NULL, &r) == SPROUT_OK); /* just BOS: allowed, as llama.cpp does */
    sprout_result_free(r);
    cfg.max_new_tokens = -1;
    CHECK(sprout_generate(p, "x", &cfg, NULL, NULL, &r) == SPROUT_ERR_INVALID_ARGUMENT);
    sprout_pipeline_free(p);
    sprout_model_free(m);

    /* an architecture sprout does not run */
    char path[512];
    snprintf(path, sizeof path, "%s/mamba.gguf", test_temp_dir());
    sp_gguf_writer *w = sp_gguf_writer_new();
    sp_gguf_writer_set_str(w, "general.architecture", "mamba", 5);
    CHECK(sp_gguf_writer_write(w, path, NULL, NULL) == SPROUT_OK);
    sp_gguf_writer_free(w);
    sprout_model *mm = NULL;
    CHECK(sprout_model_load(path, NULL, &mm) == SPROUT_ERR_UNSUPPORTED && strstr(sprout_last_error(), "'mamba'"));
    unlink(path);
    rmdir(test_temp_dir());
}

/* --- numbers a hostile file may hold --------------------------------------------------------- */

/* stories260K rewritten to path with one key set to a float, or to a
 * string where text is not NULL (key NULL: none), and one F32 tensor's
 * values all set to fill (tensor NULL: none). */
static bool write_variant(const char *path, const char *key, float value, const char *text, const char *tensor, float fill) {
    sprout_gguf *src = NULL;
    if (sprout_gguf_open(model_path, &src) != SPROUT_OK) return false;
    sp_gguf_writer *w = sp_gguf_writer_new();
    sprout_status st = sp_gguf_writer_copy_metadata(w, src);
    if (st == SPROUT_OK && key)
        st = text ? sp_gguf_writer_set_str(w, key, text, strlen(text)) : sp_gguf_writer_set_scalar(w, key, SPROUT_GGUF_FLOAT32, &value);
    float *filled = NULL;
    for (int64_t i = 0; st == SPROUT_OK && i < sprout_gguf_tensor_count(src); i++) {
        int64_t ne[4];
        for (int d = 0; d < 4; d++) ne[d] = sprout_gguf_tensor_dim(src, i, d);
        const void *data = sprout_gguf_tensor_data(src, i);
        if (tensor && !strcmp(sprout_gguf_tensor_name(src, i), tensor) && sprout_gguf_tensor_type(src, i) == SPROUT_TYPE_F32) {
            const int64_t n = sprout_gguf_tensor_bytes(src, i) / sizeof(float);
            filled = malloc((size_t)n * sizeof *filled);
            for (int64_t j = 0; j < n; j++) filled[j] = fill;
            data = filled;
        }
        st = sp_gguf_writer_add_tensor(w, sprout_gguf_tensor_name(src, i), sprout_gguf_tensor_type(src, i), sprout_gguf_tensor_n_dims(src, i), ne,
                                       data);
    }
    if (st == SPROUT_OK) st = sp_gguf_writer_write(w, path, NULL, NULL);
    sp_gguf_writer_free(w);
    free(filled);
    sprout_gguf_close(src);
    return st == SPROUT_OK && (!tensor || filled);
}

static void test_hostile_numbers(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/numbers.gguf", test_temp_dir());
    /* float metadata that would only show as NaN logits: refused, with the key */
    static const struct {
        const char *key;
        float value;
    } bad[] = {
        {"llama.attention.layer_norm_rms_epsilon", NAN},
        {"llama.attention.layer_norm_rms_epsilon", -1.f},
        {"llama.attention.layer_norm_rms_epsilon", INFINITY},
        {"llama.rope.freq_base", 0.f},
        {"llama.rope.freq_base", NAN},
        {"llama.attention.scale", INFINITY},
        {"llama.final_logit_softcapping", -30.f},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        CHECK(write_variant(path, bad[i].key, bad[i].value, NULL, NULL, 0.f));
        sprout_model *m = NULL;
        CHECK_MSG(sprout_model_load(path, NULL, &m) == SPROUT_ERR_FORMAT && strstr(sprout_last_error(), bad[i].key) &&
                      strstr(sprout_last_error(), "out of range"),
                  "%s = %g: %s", bad[i].key, (double)bad[i].value, sprout_last_error());
        sprout_model_free(m);
    }
    /* a number in a string is not taken for the default */
    CHECK(write_variant(path, "llama.attention.layer_norm_rms_epsilon", 0.f, "1e-5", NULL, 0.f));
    sprout_model *m = NULL;
    CHECK_MSG(sprout_model_load(path, NULL, &m) == SPROUT_ERR_FORMAT &&
                  strstr(sprout_last_error(), "'llama.attention.layer_norm_rms_epsilon' must be a number"),
              "%s", sprout_last_error());
    sprout_model_free(m);
    CHECK(write_variant(path, "llama.attention.layer_norm_rms_epsilon", 0.f, NULL, NULL, 0.f)); /* zero is a valid epsilon */
    m = NULL;
    CHECK_MSG(sprout_model_load(path, NULL, &m) == SPROUT_OK, "%s", sprout_last_error());
    sprout_model_free(m);

    /* weights that are NaN or infinite: well-formed, so they load; every
     * sampler setting still gives tokens of the vocabulary, never a crash */
    static const float fills[] = {NAN, INFINITY, -INFINITY};
    for (size_t f = 0; f < sizeof fills / sizeof *fills; f++) {
        CHECK(write_variant(path, NULL, 0.f, NULL, "output_norm.weight", fills[f]));
        m = NULL;
        if (sprout_model_load(path, NULL, &m) != SPROUT_OK) {
            CHECK_MSG(false, "%s", sprout_last_error());
            continue;
        }
        sprout_pipeline *p = NULL;
        CHECK(sprout_pipeline_create(m, NULL, &p) == SPROUT_OK);
        for (int mode = 0; p && mode < 3; mode++) {
            sprout_generation_config cfg = greedy(8);
            if (mode > 0) cfg.temperature = 0.8f, cfg.top_k = mode == 1 ? 40 : 0, cfg.top_p = 0.9f, cfg.min_p = 0.05f;
            sprout_result *r = NULL;
            CHECK(sprout_generate(p, "Once upon a time", &cfg, NULL, NULL, &r) == SPROUT_OK);
            size_t n = 0;
            const sprout_token *tokens = r ? sprout_result_tokens(r, &n) : NULL;
            for (size_t t = 0; t < n; t++)
                CHECK_MSG(tokens[t] >= 0 && tokens[t] < sprout_model_n_vocab(m), "fill %g mode %d: token %d", (double)fills[f], mode, tokens[t]);
            sprout_result_free(r);
        }
        sprout_pipeline_free(p);
        sprout_model_free(m);
    }
    unlink(path);
}

/* --- what a model and a pipeline say about themselves, their configs ----------------------------------- */

/* The greedy text of a model file (NULL when it does not load). */
static char *greedy_text(const char *path, int n) {
    sprout_model *m = NULL;
    sprout_pipeline *p = NULL;
    sprout_result *r = NULL;
    char *text = NULL;
    sprout_generation_config c = greedy(n);
    if (sprout_model_load(path, NULL, &m) == SPROUT_OK && sprout_pipeline_create(m, NULL, &p) == SPROUT_OK &&
        sprout_generate(p, "Once upon a time", &c, NULL, NULL, &r) == SPROUT_OK) {
        size_t len;
        const char *t = sprout_result_text(r, &len);
        text = strndup(t, len);
    }
    sprout_result_free(r);
    sprout_pipeline_free(p);
    sprout_model_free(m);
    return text;
}

/* RoPE scaling keys as llama.cpp reads them: rope.scaling.factor without
 * rope.scaling.type is linear scaling, the same as the older
 * rope.scale_linear (llama-completion --temp 0 on stories260K with either
 * key set to 4 writes ", there was a little girloate old man
 * whmastraite car named Ben"; sprout ignored the first before); a type
 * sprout cannot compute is refused by name. */
static void test_rope_scaling_keys(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/rope.gguf", test_temp_dir());
    char *plain = greedy_text(model_path, 24), *factor = NULL, *legacy = NULL;
    CHECK(write_variant(path, "llama.rope.scaling.factor", 4.f, NULL, NULL, 0.f));
    factor = greedy_text(path, 24);
    CHECK(write_variant(path, "llama.rope.scale_linear", 4.f, NULL, NULL, 0.f));
    legacy = greedy_text(path, 24);
    CHECK_MSG(plain && factor && legacy && !strcmp(factor, legacy) && strcmp(factor, plain) && strstr(factor, "girloate old man"),
              "plain [%s], rope.scaling.factor 4 [%s], rope.scale_linear 4 [%s]", plain, factor, legacy);
    CHECK(write_variant(path, "llama.rope.scaling.type", 0.f, "longrope-2", NULL, 0.f));
    sprout_model *m = NULL;
    CHECK_MSG(sprout_model_load(path, NULL, &m) == SPROUT_ERR_UNSUPPORTED && strstr(sprout_last_error(), "longrope-2"), "%s",
              sprout_last_error());
    sprout_model_free(m);
    free(plain);
    free(factor);
    free(legacy);
}

static void test_accessors_and_config(void) {
    sprout_model *m = load(SPROUT_KV_F32, 2);
    if (!m) return;
    uint32_t ctx_train = 0;
    CHECK(sprout_gguf_get_u32(sprout_model_gguf(m), "llama.context_length", &ctx_train) == SPROUT_OK);
    CHECK_MSG(sprout_model_n_ctx_train(m) == (int32_t)ctx_train && ctx_train > 0, "n_ctx_train %d, file %u", sprout_model_n_ctx_train(m),
              ctx_train);
    CHECK(sprout_model_generates(m)); /* stories260K has its output head */
    CHECK(!sprout_model_generates(NULL) && sprout_model_n_ctx_train(NULL) == 0 && sprout_model_load_ms(NULL) == 0);
    CHECK_MSG(sprout_model_load_ms(m) > 0 && sprout_model_load_ms(m) < 60000, "load took %.3f ms", sprout_model_load_ms(m));

    /* the pipeline takes the model's defaults (n_ctx 512 and 2 threads, see load()) unless given its own */
    sprout_pipeline *p = NULL, *q = NULL;
    CHECK(sprout_pipeline_create(m, NULL, &p) == SPROUT_OK);
    CHECK(sprout_pipeline_n_ctx(p) == 512 && sprout_pipeline_n_threads(p) == 2);
    sprout_pipeline_params pp = {.struct_size = sizeof pp, .n_ctx = 128, .n_threads = 3};
    CHECK(sprout_pipeline_create(m, &pp, &q) == SPROUT_OK);
    CHECK(sprout_pipeline_n_ctx(q) == 128 && sprout_pipeline_n_threads(q) == 3);
    CHECK(sprout_pipeline_n_ctx(NULL) == 0 && sprout_pipeline_n_threads(NULL) == 0);

    /* a new pipeline's config is the defaults */
    sprout_generation_config defaults, c;
    sprout_generation_config_init(&defaults);
    c.struct_size = sizeof c;
    CHECK(sprout_pipeline_get_config(p, &c) == SPROUT_OK);
    CHECK(c.struct_size == sizeof c && c.max_new_tokens == defaults.max_new_tokens && c.temperature == defaults.temperature &&
          c.top_k == defaults.top_k && c.seed == defaults.seed);
    /* set: the calls without a config of their own use it; the caller's pointers are not kept */
    sprout_generation_config set = greedy(5);
    const char *stops[] = {"never appears"};
    set.stop_strings = stops;
    set.n_stop_strings = 1;
    CHECK(sprout_pipeline_set_config(p, &set) == SPROUT_OK);
    CHECK(sprout_pipeline_get_config(p, &c) == SPROUT_OK);
    CHECK(c.max_new_tokens == 5 && c.temperature == 0 && c.stop_strings == NULL && c.n_stop_strings == 0);
    sprout_result *by_pipeline = NULL, *by_call = NULL;
    CHECK(sprout_generate(p, "Once upon a time", NULL, NULL, NULL, &by_pipeline) == SPROUT_OK);
    sprout_generation_config explicit_cfg = greedy(5);
    CHECK(sprout_generate(q, "Once upon a time", &explicit_cfg, NULL, NULL, &by_call) == SPROUT_OK);
    size_t n1, n2;
    const sprout_token *t1 = sprout_result_tokens(by_pipeline, &n1), *t2 = sprout_result_tokens(by_call, &n2);
    CHECK_MSG(n1 == 5 && n2 == 5 && !memcmp(t1, t2, n1 * sizeof *t1), "the pipeline's config gave %zu tokens, the call's %zu", n1, n2);
    CHECK(sprout_result_finish_reason(by_pipeline) == SPROUT_FINISH_LENGTH);
    CHECK(!strcmp(sprout_finish_reason_str(sprout_result_finish_reason(by_pipeline)), "length"));
    sprout_result_free(by_pipeline);
    sprout_result_free(by_call);
    /* an older, shorter struct gets only its own fields */
    sprout_generation_config old, untouched;
    memset(&old, 0xAB, sizeof old);
    memset(&untouched, 0xAB, sizeof untouched);
    const size_t older = offsetof(sprout_generation_config, top_k);
    old.struct_size = older;
    CHECK(sprout_pipeline_get_config(p, &old) == SPROUT_OK);
    CHECK(old.struct_size == older && old.max_new_tokens == 5);
    CHECK_MSG(!memcmp((const char *)&old + older, (const char *)&untouched + older, sizeof old - older),
              "bytes past an older struct's size were written");
    CHECK(sprout_pipeline_get_config(NULL, &c) == SPROUT_ERR_INVALID_ARGUMENT);
    CHECK(sprout_pipeline_set_config(p, NULL) == SPROUT_ERR_INVALID_ARGUMENT);

    /* every finish reason's word */
    static const struct {
        sprout_finish_reason r;
        const char *word;
    } words[] = {{SPROUT_FINISH_NONE, "none"},       {SPROUT_FINISH_EOS, "eos"},         {SPROUT_FINISH_STOP_STRING, "stop"},
                 {SPROUT_FINISH_STOP_TOKEN, "stop"}, {SPROUT_FINISH_LENGTH, "length"},   {SPROUT_FINISH_STOPPED, "stopped"},
                 {SPROUT_FINISH_CANCELLED, "cancelled"}};
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
        CHECK_MSG(!strcmp(sprout_finish_reason_str(words[i].r), words[i].word), "%d: %s", (int)words[i].r,
                  sprout_finish_reason_str(words[i].r));
    CHECK(!strcmp(sprout_finish_reason_str((sprout_finish_reason)99), "none"));
    sprout_pipeline_free(q);
    sprout_pipeline_free(p);
    sprout_model_free(m);
}

/* A chat with a chosen template renders its turns with that template; a
 * template that does not parse is refused and the chosen one kept. The
 * model-level builder takes extra variables for the template. */
static void test_chat_template_choice(void) {
    sprout_model *m = load(SPROUT_KV_F32, 1);
    if (!m) return;
    sprout_pipeline *p = NULL;
    CHECK(sprout_pipeline_create(m, NULL, &p) == SPROUT_OK);
    const char *source = "{% for m in messages %}[{{ m.role }}] {{ m.content }}\n{% endfor %}[assistant]";
    CHECK(sprout_chat_set_template(p, source) == SPROUT_OK);
    CHECK(sprout_chat_set_template(p, "{% for %}") == SPROUT_ERR_FORMAT);
    CHECK(sprout_chat_set_template(NULL, "chatml") == SPROUT_ERR_INVALID_ARGUMENT);
    CHECK(sprout_chat_start(p, "You tell stories.") == SPROUT_OK);
    sprout_generation_config cfg = greedy(4);
    sprout_result *r = NULL;
    CHECK_MSG(sprout_chat_generate(p, "Once upon a time", &cfg, NULL, NULL, &r) == SPROUT_OK, "%s", sprout_last_error());
    const char *messages = "[{\"role\":\"system\",\"content\":\"You tell stories.\"},{\"role\":\"user\",\"content\":\"Once upon a time\"}]";
    char *text = NULL;
    size_t text_len = 0, n_want = 0, n_got = 0;
    sprout_token *want = NULL;
    CHECK(sprout_model_chat_prompt(m, source, messages, true, &text, &text_len, &want, &n_want) == SPROUT_OK);
    CHECK_MSG(text && !strcmp(text, "[system] You tell stories.\n[user] Once upon a time\n[assistant]"), "rendered [%s]", text ? text : "");
    const sprout_token *got = sprout_result_prompt_tokens(r, &n_got);
    CHECK_MSG(n_got == n_want && n_want > 0 && !memcmp(got, want, n_want * sizeof *got),
              "the chat's prompt (%zu ids) is not its template's (%zu)", n_got, n_want);
    sprout_free(text);
    sprout_free(want);
    sprout_result_free(r);

    /* extra variables reach the template; the ids are the rendered text's */
    const char *greeting = "{{ greeting }}{% for m in messages %}{{ m.content }}{% endfor %}";
    text = NULL;
    want = NULL;
    const char *dog = "[{\"role\":\"user\",\"content\":\"a dog\"}]";
    CHECK(sprout_model_chat_prompt_vars(m, greeting, dog, "{\"greeting\":\"Tell me about \"}", false, &text, &text_len, &want, &n_want) ==
          SPROUT_OK);
    CHECK_MSG(text && !strcmp(text, "Tell me about a dog") && text_len == strlen("Tell me about a dog"), "rendered [%s]", text ? text : "");
    sprout_token *plain = NULL;
    size_t n_plain = 0;
    CHECK(sprout_model_tokenize_prompt(m, "Tell me about a dog", strlen("Tell me about a dog"), true, &plain, &n_plain) == SPROUT_OK);
    CHECK(n_plain == n_want && n_want > 0 && !memcmp(plain, want, n_want * sizeof *want));
    sprout_free(plain);
    sprout_free(text);
    sprout_free(want);
    CHECK(sprout_model_chat_prompt_vars(m, greeting, "[]", "not json", false, &text, &text_len, NULL, NULL) == SPROUT_ERR_INVALID_ARGUMENT);
    CHECK_MSG(strstr(sprout_last_error(), "must be a JSON object"), "%s", sprout_last_error());
    CHECK(sprout_model_chat_prompt_vars(NULL, greeting, "[]", NULL, false, &text, &text_len, NULL, NULL) == SPROUT_ERR_INVALID_ARGUMENT);
    sprout_pipeline_free(p);
    sprout_model_free(m);
}

/* A model whose vocabulary has no FIM tokens cannot fill a middle; bad
 * arguments are refused. (With the tokens: test_server_fim.) */
static void test_fim_prompt(void) {
    sprout_model *m = load(SPROUT_KV_F16, 1);
    sprout_token *ids = (sprout_token *)1;
    size_t n = 7;
    CHECK(sprout_model_fim_prompt(m, "a", "b", &ids, &n) == SPROUT_ERR_UNSUPPORTED && !ids && n == 0);
    CHECK(strstr(sprout_last_error(), "fill-in-the-middle") != NULL);
    CHECK(sprout_model_fim_prompt(m, NULL, "b", &ids, &n) == SPROUT_ERR_INVALID_ARGUMENT);
    CHECK(sprout_model_fim_prompt(NULL, "a", "b", &ids, &n) == SPROUT_ERR_INVALID_ARGUMENT);
    sprout_model_free(m);
}

/* The library refuses what the pool cannot hold instead of clamping: the
 * pool itself, a model's default count, a pipeline and a scheduler. */
static void test_thread_pool_limit(void) {
    sp_threadpool *pool = NULL;
    CHECK(sp_threadpool_create(SPROUT_MAX_THREADS + 1, &pool) == SPROUT_ERR_OUT_OF_RANGE && !pool);
    CHECK_MSG(strstr(sprout_last_error(), "1 to 256"), "%s", sprout_last_error());
    CHECK(sp_threadpool_create(0, &pool) == SPROUT_ERR_OUT_OF_RANGE && !pool);
    CHECK(sp_threadpool_create(3, &pool) == SPROUT_OK && sp_threadpool_size(pool) == 3);
    sp_threadpool_free(pool);

    char path[1024];
    snprintf(path, sizeof path, "%s/models/stories260K.gguf", test_shared_dir());
    sprout_model *m = NULL;
    sprout_model_params mp = {.struct_size = sizeof mp, .n_threads = SPROUT_MAX_THREADS + 1, .n_ctx = 64};
    /* a default count the pool cannot hold is refused at once, not at the first pipeline */
    CHECK(sprout_model_load(path, &mp, &m) == SPROUT_ERR_OUT_OF_RANGE && !m);
    CHECK_MSG(strstr(sprout_last_error(), "1 to 256"), "%s", sprout_last_error());
    mp.n_threads = 0; /* all cores: at most what a pool holds */
    CHECK(sprout_model_load(path, &mp, &m) == SPROUT_OK);
    if (!m) return;
    sprout_pipeline *p = NULL;
    CHECK(sprout_pipeline_create(m, NULL, &p) == SPROUT_OK && sprout_pipeline_n_threads(p) >= 1 &&
          sprout_pipeline_n_threads(p) <= SPROUT_MAX_THREADS);
    sprout_pipeline_free(p);
    sprout_pipeline_params pp = {.struct_size = sizeof pp, .n_threads = SPROUT_MAX_THREADS + 1};
    for (int32_t n = SPROUT_MAX_THREADS + 1; n <= 100000; n *= 10) {
        pp.n_threads = n;
        CHECK(sprout_pipeline_create(m, &pp, &p) == SPROUT_ERR_OUT_OF_RANGE && !p);
        CHECK_MSG(strstr(sprout_last_error(), "threads"), "%s", sprout_last_error());
    }
    pp.n_threads = SPROUT_MAX_THREADS; /* the limit itself is taken as it is */
    CHECK(sprout_pipeline_create(m, &pp, &p) == SPROUT_OK && sprout_pipeline_n_threads(p) == SPROUT_MAX_THREADS);
    sprout_pipeline_free(p);
    sprout_scheduler *s = NULL;
    sprout_scheduler_params sp = {.struct_size = sizeof sp, .n_slots = 1, .n_threads = SPROUT_MAX_THREADS + 1};
    CHECK(sprout_scheduler_create(m, &sp, &s) == SPROUT_ERR_OUT_OF_RANGE && !s);
    /* and a KV type that is none */
    pp = (sprout_pipeline_params){.struct_size = sizeof pp, .n_threads = 1, .kv_type = (sprout_kv_type)5, .kv_type_set = true};
    CHECK(sprout_pipeline_create(m, &pp, &p) == SPROUT_ERR_INVALID_ARGUMENT && !p);
    sprout_model_free(m);
}

int main(void) {
    snprintf(model_path, sizeof model_path, "%s/models/stories260K.gguf", test_shared_dir());
    test_hostile_numbers();
    test_reference(SPROUT_KV_F32, 1);
    /* under an emulator (tests/cross/x86_levels.sh) the question is the
     * instructions of the arithmetic, which one thread and both cache types
     * answer; threads, batching and the text logic run natively */
    const char *quick = getenv("SPROUT_TEST_QUICK");
    if (quick && !strcmp(quick, "emulated")) {
        test_reference(SPROUT_KV_F16, 1);
        TEST_MAIN_END();
    }
    test_reference(SPROUT_KV_F32, 2);
    test_reference(SPROUT_KV_F16, 2);
    test_rope_scaling_keys();
    test_batching();
    test_token_kinds();
    test_chat();
    test_stops_and_limits();
    test_fim_prompt();
    test_accessors_and_config();
    test_chat_template_choice();
    test_thread_pool_limit();
    TEST_MAIN_END();
}
