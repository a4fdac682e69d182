/* The sampler on hand-made logits: which candidates each filter leaves, the
 * penalties' arithmetic, greedy ties, seeded reproducibility and the drawn
 * distribution. */
#include <math.h>

#include "sampler/sampler.h"
#include "test_util.h"

static const sp_sampling plain = {.temperature = 1.f, .top_k = 0, .top_p = 1.f, .min_p = 0.f, .repetition_penalty = 1.f,
                                  .repeat_last_n = 64};

static int survivors(sp_sampler *s, const float *logits, sp_sampling cfg, int32_t *ids) {
    sp_sample(s, logits, &cfg, NULL, 0, NULL, 0);
    const sp_candidate *c;
    int n = sp_sampler_last_candidates(s, &c);
    for (int i = 0; i < n; i++) ids[i] = c[i].id;
    return n;
}

static void test_filters(void) {
    sp_sampler s;
    CHECK(sp_sampler_init(&s, 5, 1) == SPROUT_OK);
    const float logits[5] = {1, 2, 3, 4, 5}; /* softmax: .636 .234 .086 .032 .012 (best first) */
    int32_t ids[5];
    sp_sampling c = plain;
    c.top_k = 3;
    CHECK(survivors(&s, logits, c, ids) == 3 && ids[0] == 4 && ids[1] == 3 && ids[2] == 2);
    c = plain;
    c.top_p = 0.8f;
    CHECK(survivors(&s, logits, c, ids) == 2 && ids[0] == 4 && ids[1] == 3);
    c.top_p = 0.5f;
    CHECK(survivors(&s, logits, c, ids) == 1);
    c = plain;
    c.min_p = 0.1f; /* keeps p >= 0.0636 */
    CHECK(survivors(&s, logits, c, ids) == 3);
    c.min_p = 0.5f;
    CHECK(survivors(&s, logits, c, ids) == 1);
    c = plain;
    c.temperature = 100.f; /* flat: all five stay, nearly equal */
    CHECK(survivors(&s, logits, c, ids) == 5);
    const sp_candidate *cand;
    sp_sampler_last_candidates(&s, &cand);
    CHECK(fabsf(cand[0].p - 0.2f) < 0.01f);
    /* the probabilities left are renormalised */
    c = plain;
    c.top_k = 2;
    survivors(&s, logits, c, ids);
    sp_sampler_last_candidates(&s, &cand);
    CHECK(fabsf(cand[0].p - 0.7311f) < 1e-3f && fabsf(cand[0].p + cand[1].p - 1.f) < 1e-6f);
    sp_sampler_free(&s);
}

static void test_greedy_bias_and_penalties(void) {
    sp_sampler s;
    CHECK(sp_sampler_init(&s, 3, 1) == SPROUT_OK);
    sp_sampling g = plain;
    g.temperature = 0.f;
    const float ties[3] = {3, 5, 5};
    CHECK(sp_sample(&s, ties, &g, NULL, 0, NULL, 0) == 1); /* ties go to the lowest id */
    const int32_t banned[] = {1};
    CHECK(sp_sample(&s, ties, &g, NULL, 0, banned, 1) == 2);
    /* logit biases come first: they move the greedy choice, -100 all but bans, and ids outside the
     * vocabulary or biases that are not finite are ignored */
    const float scores[3] = {1, 3, 2};
    const sprout_logit_bias up[] = {{0, 5.f}}, ban[] = {{1, -100.f}}, odd[] = {{7, 50.f}, {-1, 50.f}, {2, NAN}, {0, INFINITY}};
    g.bias = up, g.n_bias = 1;
    CHECK(sp_sample(&s, scores, &g, NULL, 0, NULL, 0) == 0);
    g.bias = ban, g.n_bias = 1;
    CHECK(sp_sample(&s, scores, &g, NULL, 0, NULL, 0) == 2);
    g.bias = odd, g.n_bias = 4;
    CHECK(sp_sample(&s, scores, &g, NULL, 0, NULL, 0) == 1);

    const float logits[3] = {2, -2, 1};
    const int32_t history[] = {0, 1};
    sp_sampling c = plain;
    c.repetition_penalty = 2.f; /* positive logits divided, negative ones multiplied */
    sp_sample(&s, logits, &c, history, 2, NULL, 0);
    const sp_candidate *cand;
    int n = sp_sampler_last_candidates(&s, &cand);
    float got[3] = {0, 0, 0};
    for (int i = 0; i < n; i++) got[cand[i].id] = cand[i].logit;
    CHECK_MSG(n == 3 && got[0] == 1.f && got[1] == -4.f && got[2] == 1.f, "%g %g %g", got[0], got[1], got[2]);
    c = plain;
    c.presence_penalty = 0.5f;
    c.frequency_penalty = 0.25f;
    const int32_t h2[] = {0, 0, 1};
    sp_sample(&s, logits, &c, h2, 3, NULL, 0);
    n = sp_sampler_last_candidates(&s, &cand);
    for (int i = 0; i < n; i++) got[cand[i].id] = cand[i].logit;
    CHECK_MSG(got[0] == 1.0f && got[1] == -2.75f && got[2] == 1.f, "%g %g %g", got[0], got[1], got[2]);
    /* repeat_last_n limits the window: only the last token counts */
    c.repeat_last_n = 1;
    sp_sample(&s, logits, &c, h2, 3, NULL, 0);
    n = sp_sampler_last_candidates(&s, &cand);
    for (int i = 0; i < n; i++) got[cand[i].id] = cand[i].logit;
    CHECK(got[0] == 2.f && got[1] == -2.75f);
    /* the penalties apply on top of a bias */
    c = plain;
    c.bias = up, c.n_bias = 1;
    c.presence_penalty = 1.f;
    sp_sample(&s, scores, &c, history, 1, NULL, 0);
    n = sp_sampler_last_candidates(&s, &cand);
    for (int i = 0; i < n; i++) got[cand[i].id] = cand[i].logit;
    CHECK_MSG(n == 3 && got[0] == 5.f && got[1] == 3.f, "%g %g %g", got[0], got[1], got[2]);
    sp_sampler_free(&s);
}

static void test_seed_and_distribution(void) {
    sp_sampler a, b;
    CHECK(sp_sampler_init(&a, 4, 123) == SPROUT_OK && sp_sampler_init(&b, 4, 123) == SPROUT_OK);
    const float logits[4] = {0.f, 1.f, 2.f, 3.f};
    int same = 0;
    for (int i = 0; i < 200; i++) same += sp_sample(&a, logits, &plain, NULL, 0, NULL, 0) == sp_sample(&b, logits, &plain, NULL, 0, NULL, 0);
    CHECK(same == 200);
    sp_sampler_seed(&b, 124);
    int differ = 0;
    for (int i = 0; i < 200; i++) differ += sp_sample(&a, logits, &plain, NULL, 0, NULL, 0) != sp_sample(&b, logits, &plain, NULL, 0, NULL, 0);
    CHECK(differ > 20);
    /* the same seed gives the same numbers on every machine: fixed values */
    sp_sampler_seed(&a, 42);
    double u = sp_sampler_uniform(&a);
    CHECK(u >= 0 && u < 1);
    sp_sampler_seed(&b, 42);
    CHECK(sp_sampler_uniform(&b) == u);
    /* frequencies follow softmax */
    int counts[4] = {0};
    const int draws = 200000;
    sp_sampler_seed(&a, 9);
    for (int i = 0; i < draws; i++) counts[sp_sample(&a, logits, &plain, NULL, 0, NULL, 0)]++;
    double z = exp(0) + exp(1) + exp(2) + exp(3);
    for (int k = 0; k < 4; k++) CHECK_MSG(fabs(counts[k] / (double)draws - exp(k) / z) < 0.005, "token %d: %g vs %g", k, counts[k] / (double)draws, exp(k) / z);
    sp_sampler_free(&a);
    sp_sampler_free(&b);
}

static void test_logprobs(void) {
    const float logits[4] = {0.f, 1.f, 2.f, 3.f};
    int32_t ids[3];
    float lps[3];
    float lp = sp_logprob_top(logits, 4, 1, 3, ids, lps);
    double lse = log(exp(0) + exp(1) + exp(2) + exp(3));
    CHECK(fabs(lp - (1 - lse)) < 1e-6);
    CHECK(ids[0] == 3 && ids[1] == 2 && ids[2] == 1 && fabs(lps[0] - (3 - lse)) < 1e-6);
    const float ties[3] = {1.f, 1.f, 1.f};
    sp_logprob_top(ties, 3, 0, 2, ids, lps);
    CHECK(ids[0] == 0 && ids[1] == 1); /* ties: the lower id first */
}

/* Logits a broken model gives (NaN, infinities): NaN never wins, +inf
 * does, and every setting returns an id in range. */
static void test_non_finite_logits(void) {
    sp_sampler s;
    CHECK(sp_sampler_init(&s, 6, 3) == SPROUT_OK);
    sp_sampling g = plain;
    g.temperature = 0.f;
    const float some_nan[6] = {NAN, 1, 5, NAN, 2, NAN};
    CHECK(sp_sample(&s, some_nan, &g, NULL, 0, NULL, 0) == 2);
    const float with_inf[6] = {1, INFINITY, 5, NAN, INFINITY, -INFINITY};
    CHECK(sp_sample(&s, with_inf, &g, NULL, 0, NULL, 0) == 1);
    const float all_nan[6] = {NAN, NAN, NAN, NAN, NAN, NAN};
    for (int k = 0; k <= 3; k += 3) {
        sp_sampling c = plain;
        c.top_k = k;
        c.top_p = 0.9f;
        c.min_p = 0.05f;
        for (int draw = 0; draw < 50; draw++) {
            const int32_t a = sp_sample(&s, some_nan, &c, NULL, 0, NULL, 0);
            CHECK_MSG(a == 1 || a == 2 || a == 4, "top_k %d drew %d, a NaN", k, a);
            const int32_t b = sp_sample(&s, with_inf, &c, NULL, 0, NULL, 0);
            CHECK_MSG(b == 1 || b == 4, "top_k %d drew %d beside +inf", k, b);
            const int32_t z = sp_sample(&s, all_nan, &c, NULL, 0, NULL, 0);
            CHECK_MSG(z >= 0 && z < 6, "top_k %d drew %d", k, z);
        }
    }
    sp_sampler_free(&s);
}

/* The filters as their definition reads, for checking the sampler's
 * shortcuts (a heap for top-k, sorting only what top-p and min-p can keep):
 * every candidate divided by the temperature and sorted (higher first, ties
 * to the lower id), top-k, softmax over what is left, top-p's prefix,
 * min-p, renormalised. Returns how many survive, their ids and p. */
typedef struct ref_cand {
    int32_t id;
    float logit;
} ref_cand;

static int ref_order(const void *a, const void *b) {
    const ref_cand *x = a, *y = b;
    if (x->logit != y->logit) return x->logit > y->logit ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

static int reference_survivors(const float *logits, int n, const sp_sampling *c, int32_t *ids, float *p) {
    ref_cand *r = malloc((size_t)n * sizeof *r);
    float *q = malloc((size_t)n * sizeof *q);
    for (int i = 0; i < n; i++) r[i] = (ref_cand){i, logits[i] / c->temperature};
    qsort(r, (size_t)n, sizeof *r, ref_order);
    const int pool = c->top_k > 0 && c->top_k < n ? c->top_k : n;
    /* the sampler's own rounding: exponentials in float, sums in double */
    double sum = 0;
    for (int i = 0; i < pool; i++) sum += (q[i] = expf(r[i].logit - r[0].logit));
    for (int i = 0; i < pool; i++) q[i] = (float)(q[i] / sum);
    int keep = pool;
    if (c->top_p < 1.f) {
        double cum = 0;
        for (int i = 0; i < pool; i++)
            if ((cum += q[i]) >= c->top_p) {
                keep = i + 1;
                break;
            }
    }
    if (c->min_p > 0.f) {
        const float floor_p = c->min_p * q[0];
        int k = 1;
        while (k < keep && q[k] >= floor_p) k++;
        keep = k;
    }
    double kept = 0;
    for (int i = 0; i < keep; i++) kept += q[i];
    for (int i = 0; i < keep; i++) {
        ids[i] = r[i].id;
        p[i] = (float)(q[i] / kept);
    }
    free(r);
    free(q);
    return keep;
}

static void test_filters_against_definition(void) {
    enum { N = 3000 };
    sp_sampler s;
    CHECK(sp_sampler_init(&s, N, 1) == SPROUT_OK);
    static float logits[N], want_p[N];
    static int32_t want_ids[N];
    uint64_t r = 12345;
    int cases = 0, same = 0, worst_case = -1;
    double worst = 0;
    for (int round = 0; round < 360; round++) {
        const float spread = 0.5f + (float)(round % 7) * 3.f; /* flat to peaked */
        for (int i = 0; i < N; i++) {
            r ^= r << 13, r ^= r >> 7, r ^= r << 17;
            logits[i] = spread * (float)((double)(r % 100000) / 100000.0 - 0.5);
            if (round % 5 == 0) logits[i] = roundf(logits[i]); /* many ties */
        }
        if (round >= 300) { /* three leaders above a plateau of 2997 that holds most of the mass, or some, or none */
            const float depth = (float[]){4.5f, 6.f, 9.f, 17.f}[round % 4];
            for (int i = 0; i < N; i++) logits[i] = i % 1000 == 7 ? 0.f : -depth + 0.01f * (float)(i % 13);
        }
        static const int32_t ks[] = {0, 1, 5, 40, N - 1, N};
        static const float ps[] = {1.f, 0.95f, 0.5f, 0.1f}, mins[] = {0.f, 0.05f, 0.2f}, temps[] = {1.f, 0.3f, 1.7f};
        sp_sampling c = plain;
        c.top_k = ks[round % 6];
        c.top_p = ps[(round / 6) % 4];
        c.min_p = mins[(round / 24) % 3];
        c.temperature = temps[(round / 72) % 3];
        if (round >= 300) { /* the plateau cases without top-k: only top-p (and a tiny min-p) decide */
            c.top_k = round % 2 ? 0 : N;
            c.top_p = (float[]){0.5f, 0.9f, 0.95f}[(round / 4) % 3];
            c.min_p = round % 3 ? 0.f : 1e-6f;
            c.temperature = 1.f;
        }
        const int want = reference_survivors(logits, N, &c, want_ids, want_p);
        sp_sample(&s, logits, &c, NULL, 0, NULL, 0);
        const sp_candidate *got;
        const int n = sp_sampler_last_candidates(&s, &got);
        bool ok = n == want;
        double diff = 0;
        for (int i = 0; ok && i < n; i++) {
            ok = got[i].id == want_ids[i];
            diff = fmax(diff, fabs((double)got[i].p - want_p[i]));
        }
        cases++;
        same += ok && diff < 1e-5;
        if (diff > worst) worst = diff, worst_case = round;
        if (!ok) fprintf(stderr, "round %d (top_k %d, top_p %g, min_p %g, temp %g): %d survivors, the definition %d\n", round, c.top_k,
                         (double)c.top_p, (double)c.min_p, (double)c.temperature, n, want);
    }
    CHECK_MSG(same == cases, "%d of %d cases match the definition (worst p difference %g, round %d)", same, cases, worst, worst_case);
    sp_sampler_free(&s);
}

int main(void) {
    test_non_finite_logits();
    test_filters();
    test_filters_against_definition();
    test_greedy_bias_and_penalties();
    test_seed_and_distribution();
    test_logprobs();
    TEST_MAIN_END();
}
