/* The sampler on hand-made logits: which candidates each filter leaves, the
 * penalties' arithmetic, greedy ties, seeded reproducibility and the drawn
 * distribution. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

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

/* The filters as their definition reads, in llama.cpp's order, for
 * checking the sampler's shortcuts (a heap for top-k, sorting only what
 * top-p and min-p can keep): every candidate sorted (higher first, ties to
 * the lower id), top-k, softmax over what is left, top-p's prefix, min-p,
 * then the temperature on the survivors' logits and a softmax of them.
 * Returns how many survive, their ids and p. */
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
    for (int i = 0; i < n; i++) r[i] = (ref_cand){i, logits[i]};
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
    for (int i = 0; i < keep; i++) kept += c->temperature == 1.f ? q[i] : exp(((double)r[i].logit - r[0].logit) / c->temperature);
    for (int i = 0; i < keep; i++) {
        ids[i] = r[i].id;
        p[i] = (float)((c->temperature == 1.f ? q[i] : exp(((double)r[i].logit - r[0].logit) / c->temperature)) / kept);
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


/* --- llama.cpp's other samplers, each against its definition ------------------------------- */

/* The survivors' ids (in the order given) and p, after one sp_sample. */
static int after(sp_sampler *s, const float *logits, const sp_sampling *cfg, const int32_t *h, size_t n_h, int32_t *ids, float *p) {
    sp_sample(s, logits, cfg, h, n_h, NULL, 0);
    const sp_candidate *c;
    const int n = sp_sampler_last_candidates(s, &c);
    for (int i = 0; i < n; i++) {
        if (ids) ids[i] = c[i].id;
        if (p) p[i] = c[i].p;
    }
    return n;
}

static bool has(const int32_t *ids, int n, int32_t id) {
    for (int i = 0; i < n; i++)
        if (ids[i] == id) return true;
    return false;
}

/* Typical-p: the tokens whose surprisal -ln p is nearest the entropy H,
 * until their mass exceeds p. With p = (.4, .3, .3), H = 1.0889 nats: the
 * two at .3 (surprisal 1.204) are more typical than the best (0.916), so
 * typical_p 0.5 keeps them and drops the best; 0.65 needs all three. */
static void test_typical(void) {
    sp_sampler s;
    CHECK(sp_sampler_init(&s, 3, 1) == SPROUT_OK);
    const float logits[3] = {logf(0.4f), logf(0.3f), logf(0.3f)};
    const double h = -(0.4 * log(0.4) + 2 * 0.3 * log(0.3));
    CHECK(fabs(fabs(-log(0.3) - h) - 0.1150) < 1e-3 && fabs(fabs(-log(0.4) - h) - 0.1726) < 1e-3);
    sp_sampling c = plain;
    c.typical_p = 0.5f;
    int32_t ids[3];
    float p[3];
    int n = after(&s, logits, &c, NULL, 0, ids, p);
    CHECK_MSG(n == 2 && has(ids, n, 1) && has(ids, n, 2) && fabsf(p[0] - 0.5f) < 1e-5f, "%d survivors", n);
    c.typical_p = 0.65f;
    CHECK(after(&s, logits, &c, NULL, 0, ids, p) == 3);
    c.typical_p = 1.f; /* off */
    CHECK(after(&s, logits, &c, NULL, 0, ids, p) == 3);
    sp_sampler_free(&s);

    /* a longer distribution against the definition computed here in double */
    enum { N = 50 };
    CHECK(sp_sampler_init(&s, N, 1) == SPROUT_OK);
    float l[N];
    double q[N], sum = 0, ent = 0;
    for (int i = 0; i < N; i++) l[i] = 3.f * sinf((float)i * 1.7f) + 0.05f * (float)i;
    for (int i = 0; i < N; i++) sum += (q[i] = exp(l[i]));
    for (int i = 0; i < N; i++) q[i] /= sum;
    for (int i = 0; i < N; i++) ent -= q[i] * log(q[i]);
    for (int t = 0; t < 3; t++) {
        const float tp = (float[]){0.2f, 0.6f, 0.9f}[t];
        /* the most typical first, until the mass passes tp */
        bool taken[N] = {false};
        double mass = 0;
        int want = 0;
        while (mass <= tp) {
            int best = -1;
            for (int i = 0; i < N; i++)
                if (!taken[i] && (best < 0 || fabs(-log(q[i]) - ent) < fabs(-log(q[best]) - ent))) best = i;
            taken[best] = true;
            mass += q[best];
            want++;
        }
        c = plain;
        c.typical_p = tp;
        int32_t got[N];
        n = after(&s, l, &c, NULL, 0, got, NULL);
        bool same = n == want;
        for (int i = 0; same && i < n; i++) same = taken[got[i]];
        CHECK_MSG(same, "typical_p %g: %d survivors, the definition %d", (double)tp, n, want);
    }
    sp_sampler_free(&s);
}

/* Top-n-sigma keeps logits >= max - n * sigma (sigma: the population
 * standard deviation of the logits): 10 9 8 5 0 have mean 6.4 and sigma
 * sqrt(13.04) = 3.611, so n = 1 keeps 10 9 8 and n = 0.5 keeps 10 9. */
static void test_top_n_sigma(void) {
    sp_sampler s;
    CHECK(sp_sampler_init(&s, 5, 1) == SPROUT_OK);
    const float logits[5] = {10, 9, 8, 5, 0};
    double mean = 6.4, var = 0;
    for (int i = 0; i < 5; i++) var += (logits[i] - mean) * (logits[i] - mean) / 5;
    CHECK(fabs(sqrt(var) - 3.6111) < 1e-3);
    sp_sampling c = plain;
    int32_t ids[5];
    c.top_n_sigma = 1.f;
    CHECK(after(&s, logits, &c, NULL, 0, ids, NULL) == 3 && ids[0] == 0 && ids[2] == 2);
    c.top_n_sigma = 0.5f;
    CHECK(after(&s, logits, &c, NULL, 0, ids, NULL) == 2);
    c.top_n_sigma = 3.f;
    CHECK(after(&s, logits, &c, NULL, 0, ids, NULL) == 5);
    c.top_n_sigma = -1.f; /* off */
    CHECK(after(&s, logits, &c, NULL, 0, ids, NULL) == 5);
    sp_sampler_free(&s);
}

/* XTC: p = (.5 .3 .15 .05) and threshold .1: the three at or above it but
 * the least likely of them (p .15) leave; threshold .4: one token above it,
 * none leaves; with probability .5, half of the draws cut (seeded: the
 * same seed, the same cuts). */
static void test_xtc(void) {
    sp_sampler s;
    CHECK(sp_sampler_init(&s, 4, 5) == SPROUT_OK);
    const float logits[4] = {logf(0.5f), logf(0.3f), logf(0.15f), logf(0.05f)};
    sp_sampling c = plain;
    c.xtc_probability = 1.f;
    c.xtc_threshold = 0.1f;
    int32_t ids[4];
    float p[4];
    CHECK(after(&s, logits, &c, NULL, 0, ids, p) == 2 && ids[0] == 2 && ids[1] == 3 && fabsf(p[0] - 0.75f) < 1e-5f);
    c.xtc_threshold = 0.4f;
    CHECK(after(&s, logits, &c, NULL, 0, ids, NULL) == 4);
    c.xtc_threshold = 0.6f; /* > 0.5: off */
    CHECK(after(&s, logits, &c, NULL, 0, ids, NULL) == 4);
    c.xtc_threshold = 0.1f;
    c.xtc_probability = 0.5f;
    int cut = 0, pattern[64];
    sp_sampler_seed(&s, 77);
    for (int i = 0; i < 2000; i++) {
        const int n = after(&s, logits, &c, NULL, 0, NULL, NULL);
        cut += n == 2;
        if (i < 64) pattern[i] = n;
    }
    CHECK_MSG(cut > 900 && cut < 1100, "%d of 2000 cut", cut);
    sp_sampler_seed(&s, 77);
    int same = 0;
    for (int i = 0; i < 64; i++) same += after(&s, logits, &c, NULL, 0, NULL, NULL) == pattern[i];
    CHECK(same == 64);
    sp_sampler_free(&s);
}

/* Mirostat 2.0: keep the tokens of surprise -log2 p <= mu, draw, then mu -=
 * eta (surprise of the drawn token, renormalised - tau). p = (.5 .25 .125
 * .125) is 1, 2, 3, 3 bits; tau 1.25 starts mu at 2.5: two tokens stay, at
 * 2/3 and 1/3. */
static void test_mirostat_v2(void) {
    sp_sampler s;
    CHECK(sp_sampler_init(&s, 4, 3) == SPROUT_OK);
    const float logits[4] = {logf(0.5f), logf(0.25f), logf(0.125f), logf(0.125f)};
    sp_sampling c = plain;
    c.mirostat = 2;
    c.mirostat_tau = 1.25f;
    c.mirostat_eta = 0.1f;
    sp_sampler_reset(&s, &c, 3);
    CHECK(s.mu == 2.5f);
    for (int step = 0; step < 20; step++) {
        const float mu = s.mu;
        const int32_t id = sp_sample(&s, logits, &c, NULL, 0, NULL, 0);
        const sp_candidate *cand;
        const int n = sp_sampler_last_candidates(&s, &cand);
        /* which tokens mu keeps, from the surprisals 1 2 3 3 */
        const int want = mu >= 3.f ? 4 : mu >= 2.f ? 2 : 1;
        CHECK_MSG(n == want, "mu %g: %d survivors, want %d", (double)mu, n, want);
        const double kept = want == 4 ? 1.0 : want == 2 ? 0.75 : 0.5;
        const double p = (id == 0 ? 0.5 : id == 1 ? 0.25 : 0.125) / kept;
        CHECK_MSG(fabs(s.mu - (mu - 0.1 * (-log2(p) - 1.25))) < 1e-4, "mu %g after %g", (double)s.mu, (double)mu);
    }
    /* a small tau keeps the best alone; a new generation resets mu */
    c.mirostat_tau = 0.6f;
    sp_sampler_reset(&s, &c, 3);
    CHECK(sp_sample(&s, logits, &c, NULL, 0, NULL, 0) == 0);
    sp_sampler_free(&s);
}

/* Mirostat 1: the Zipf exponent s estimated from the 100 best (exact here:
 * p_i ~ 1/(i+1)^1.2 over 200 tokens), then the k best with k = (e 2^mu /
 * (1 - N^-e))^(1/s), e = s - 1. */
static void test_mirostat_v1(void) {
    enum { N = 200 };
    sp_sampler s;
    CHECK(sp_sampler_init(&s, N, 3) == SPROUT_OK);
    float logits[N];
    for (int i = 0; i < N; i++) logits[i] = -1.2f * logf((float)(i + 1));
    sp_sampling c = plain;
    c.mirostat = 1;
    c.mirostat_tau = 5.f;
    c.mirostat_eta = 0.1f;
    for (int t = 0; t < 3; t++) {
        const float tau = (float[]){5.f, 3.f, 2.f}[t];
        c.mirostat_tau = tau;
        sp_sampler_reset(&s, &c, 3);
        const double e = 0.2, k = pow(e * pow(2, 2 * tau) / (1 - pow(N, -e)), 1 / 1.2);
        sp_sample(&s, logits, &c, NULL, 0, NULL, 0);
        const sp_candidate *cand;
        const int n = sp_sampler_last_candidates(&s, &cand);
        CHECK_MSG(abs(n - (int)k) <= 1 && n >= 1, "tau %g: %d survivors, k %g", (double)tau, n, k);
    }
    sp_sampler_free(&s);
}

/* DRY on a vocabulary of letters: the token that would extend a repeat of
 * n >= allowed_length tokens loses multiplier * base^(n - allowed) of
 * logit; a sequence breaker (also one spread over tokens) ends repeats. */
static void test_dry(void) {
    enum { V = 8, A, B, C, D, NL, X, EC, Y };
    static const char *const text[V] = {"a", "b", "c", "d", "\n", "x", "e:", "y"};
    sp_sampler s;
    CHECK(sp_sampler_init(&s, V, 1) == SPROUT_OK);
    s.piece = malloc(V * sizeof *s.piece);
    s.piece_len = malloc(V * sizeof *s.piece_len);
    for (int i = 0; i < V; i++) s.piece[i] = text[i], s.piece_len[i] = (uint32_t)strlen(text[i]);
    static const char *const breakers[] = {"\n", ":", "\"", "*"};
    CHECK(sp_sampler_dry_prepare(&s, breakers, 4));
    sp_sampling c = plain;
    c.dry_multiplier = 0.8f;
    c.dry_base = 1.75f;
    c.dry_allowed_length = 2;
    c.dry_penalty_last_n = -1;
    c.dry_breakers = breakers;
    c.n_dry_breakers = 4;
    const float zero[V] = {0};
    float got[V];
#define DRY_LOGITS(h)                                                                    \
    do {                                                                                 \
        sp_sample(&s, zero, &c, h, sizeof h / sizeof *h, NULL, 0);                      \
        const sp_candidate *cand;                                                        \
        const int n_ = sp_sampler_last_candidates(&s, &cand);                            \
        for (int i = 0; i < V; i++) got[i] = 0;                                          \
        for (int i = 0; i < n_; i++) got[cand[i].id] = cand[i].logit;                    \
    } while (0)
    /* "a b c d x a b c": d would make "a b c" (3) a repeat of 4 */
    const int32_t h1[] = {A - A, B - A, C - A, D - A, X - A, A - A, B - A, C - A};
    DRY_LOGITS(h1);
    const float pen3 = 0.8f * powf(1.75f, 3 - 2);
    CHECK_MSG(fabsf(got[D - A] + pen3) < 1e-5f && got[A - A] == 0 && got[X - A] == 0, "d %g (want %g)", (double)got[D - A], -(double)pen3);
    /* the window: the last 4 tokens hold no earlier "a b c" */
    c.dry_penalty_last_n = 4;
    DRY_LOGITS(h1);
    CHECK(got[D - A] == 0);
    c.dry_penalty_last_n = -1;
    /* "a \n b c d a \n b c": the repeat "a \n b c" (4) is cut at the "\n" to "b c" (2): 0.8 * 1.75^0 */
    const int32_t h2[] = {A - A, NL - A, B - A, C - A, D - A, A - A, NL - A, B - A, C - A};
    DRY_LOGITS(h2);
    CHECK_MSG(fabsf(got[D - A] + 0.8f) < 1e-5f, "d %g", (double)got[D - A]);
    /* without breakers the whole repeat counts: 0.8 * 1.75^2 */
    c.n_dry_breakers = 0;
    CHECK(sp_sampler_dry_prepare(&s, breakers, 0));
    DRY_LOGITS(h2);
    CHECK_MSG(fabsf(got[D - A] + 0.8f * 1.75f * 1.75f) < 1e-4f, "d %g", (double)got[D - A]);
    /* a breaker spread over two tokens ("x" "y" spell "xy"): "a x y b a x y b"
     * would repeat in full with "a" (4 tokens), but the repeat cannot reach
     * back past the "xy", which leaves 1 < allowed: no penalty */
    static const char *const xy[] = {"xy"};
    const int32_t h3[] = {A - A, X - A, Y - A, B - A, A - A, X - A, Y - A, B - A};
    DRY_LOGITS(h3);
    CHECK_MSG(fabsf(got[A - A] + 0.8f * 1.75f * 1.75f) < 1e-4f, "a %g", (double)got[A - A]);
    c.dry_breakers = xy, c.n_dry_breakers = 1;
    CHECK(sp_sampler_dry_prepare(&s, xy, 1));
    DRY_LOGITS(h3);
    CHECK_MSG(got[A - A] == 0, "a %g", (double)got[A - A]);
    /* a token holding a breaker is never penalised: "e:" after "c" */
    c.dry_breakers = breakers, c.n_dry_breakers = 4;
    CHECK(sp_sampler_dry_prepare(&s, breakers, 4));
    const int32_t h4[] = {A - A, B - A, C - A, EC - A, X - A, A - A, B - A, C - A};
    DRY_LOGITS(h4);
    CHECK(got[EC - A] == 0);
    /* off: a multiplier of 0, a base below 1 */
    c.dry_multiplier = 0.f;
    DRY_LOGITS(h1);
    CHECK(got[D - A] == 0);
    c.dry_multiplier = 0.8f, c.dry_base = 0.5f;
    DRY_LOGITS(h1);
    CHECK(got[D - A] == 0);
    /* a long window against the definition: every earlier occurrence of
     * the text's last n tokens, counted directly */
    c.dry_base = 1.75f, c.n_dry_breakers = 0;
    CHECK(sp_sampler_dry_prepare(&s, breakers, 0));
    int32_t h5[300];
    uint64_t r = 99;
    for (int i = 0; i < 300; i++) {
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        h5[i] = i >= 150 && i < 200 ? h5[i - 100] : i >= 260 ? h5[i - 200] : (int32_t)(r % 3); /* copies and noise */
    }
    DRY_LOGITS(h5);
    float want[V] = {0};
    int longest[V] = {0};
    for (int at = 0; at + 1 < 300; at++) {
        int len = 0;
        while (len <= at && h5[at - len] == h5[299 - len]) len++;
        if (len >= 2 && len + 1 > longest[h5[at + 1]]) longest[h5[at + 1]] = len + 1;
    }
    for (int t = 0; t < V; t++)
        if (longest[t]) want[t] = -0.8f * powf(1.75f, (float)(longest[t] - 1 - 2 > 158 ? 158 : longest[t] - 1 - 2));
    for (int t = 0; t < V; t++) CHECK_MSG(fabsf(got[t] - want[t]) <= 1e-4f * fabsf(want[t]) + 1e-5f, "token %d: %g, the definition %g", t, (double)got[t], (double)want[t]);
#undef DRY_LOGITS
    sp_sampler_free(&s);
}

/* The chain's order: llama.cpp's names and letters, and an order that
 * matters (temperature before top-p sharpens what top-p sees). */
static void test_order(void) {
    uint8_t order[SP_MAX_STAGES];
    char why[160];
    CHECK(sp_sampler_parse_order(NULL, order, why, sizeof why) && order[0] == SP_STAGE_END);
    CHECK(sp_sampler_parse_order("top_k;temperature", order, why, sizeof why) && order[0] == SP_STAGE_TOP_K &&
          order[1] == SP_STAGE_TEMPERATURE && order[2] == SP_STAGE_END);
    CHECK(sp_sampler_parse_order("top-k, temp", order, why, sizeof why) && order[0] == SP_STAGE_TOP_K && order[1] == SP_STAGE_TEMPERATURE);
    CHECK(sp_sampler_parse_order("edskypmxt", order, why, sizeof why) && order[0] == SP_STAGE_PENALTIES && order[2] == SP_STAGE_TOP_N_SIGMA &&
          order[8] == SP_STAGE_TEMPERATURE);
    CHECK(!sp_sampler_parse_order("top_k;bogus", order, why, sizeof why) && strstr(why, "'bogus' is no sampler"));
    CHECK(!sp_sampler_parse_order("infill", order, why, sizeof why) && strstr(why, "not supported"));
    CHECK(!sp_sampler_parse_order("kq", order, why, sizeof why));

    sp_sampler s;
    CHECK(sp_sampler_init(&s, 5, 1) == SPROUT_OK);
    const float logits[5] = {1, 2, 3, 4, 5}; /* softmax .636 .234 ...; at temperature 0.5: .867 .117 ... */
    sp_sampling c = plain;
    c.temperature = 0.5f;
    c.top_p = 0.8f;
    int32_t ids[5];
    float p[5];
    CHECK(after(&s, logits, &c, NULL, 0, ids, p) == 2);
    /* the survivors' p at the temperature: e^(2*1) against 1 */
    CHECK(fabsf(p[0] - (float)(exp(2.0) / (exp(2.0) + 1))) < 1e-5f);
    CHECK(sp_sampler_parse_order("temperature;top_p", c.order, why, sizeof why));
    CHECK(after(&s, logits, &c, NULL, 0, ids, p) == 1);
    /* top-k before top-p renormalises over the k: .731 passes 0.7 alone */
    c = plain;
    c.top_k = 2;
    c.top_p = 0.7f;
    CHECK(after(&s, logits, &c, NULL, 0, ids, p) == 1);
    CHECK(sp_sampler_parse_order("top_p;top_k", c.order, why, sizeof why));
    CHECK(after(&s, logits, &c, NULL, 0, ids, p) == 2);
    /* a stage left out is not applied: no temperature, no greedy */
    c = plain;
    c.temperature = 0.f;
    CHECK(sp_sampler_parse_order("top_k", c.order, why, sizeof why));
    CHECK(after(&s, logits, &c, NULL, 0, ids, p) == 5);
    sp_sampler_free(&s);
}

/* --- end to end on stories260K -------------------------------------------------------------- */

static char *generate(sprout_pipeline *p, const char *prompt, const sprout_generation_config *cfg, sprout_status *st) {
    sprout_result *r = NULL;
    *st = sprout_generate(p, prompt, cfg, NULL, NULL, &r);
    char *text = r ? strdup(sprout_result_text(r, NULL)) : NULL;
    sprout_result_free(r);
    return text;
}

static void test_stories(void) {
    char path[1024];
    snprintf(path, sizeof path, "%s/models/stories260K.gguf", test_shared_dir());
    sprout_model *m = NULL;
    sprout_pipeline *p = NULL;
    if (sprout_model_load(path, NULL, &m) != SPROUT_OK || sprout_pipeline_create(m, NULL, &p) != SPROUT_OK) {
        CHECK_MSG(false, "%s", sprout_last_error());
        sprout_model_free(m);
        return;
    }
    const char *prompt = "Lily and Tom. Lily and Tom. Lily and Tom. Lily and Tom.";
    sprout_generation_config cfg;
    sprout_generation_config_init(&cfg);
    cfg.max_new_tokens = 60;
    cfg.temperature = 0;
    sprout_status st;
    /* DRY steers greedy decoding off the repetition */
    char *greedy = generate(p, prompt, &cfg, &st);
    cfg.dry_multiplier = 0.8f;
    char *dry = generate(p, prompt, &cfg, &st);
    CHECK_MSG(greedy && dry && strcmp(greedy, dry) != 0, "DRY changed nothing: [%s]", dry ? dry : "");
    /* an empty list of breakers (not NULL: the default four) is allowed */
    static const char *const none[] = {NULL};
    cfg.dry_sequence_breakers = none;
    cfg.n_dry_sequence_breakers = 0;
    char *dry_nobreak = generate(p, prompt, &cfg, &st);
    CHECK(dry_nobreak && st == SPROUT_OK);
    free(greedy), free(dry), free(dry_nobreak);

    /* seeded runs of every sampler are reproducible */
    sprout_generation_config_init(&cfg);
    cfg.max_new_tokens = 40;
    cfg.temperature = 1.f;
    cfg.seed = 11;
    cfg.dry_multiplier = 0.5f;
    cfg.typical_p = 0.9f;
    cfg.xtc_probability = 0.5f;
    cfg.top_n_sigma = 2.f;
    char *a = generate(p, "Once upon a time", &cfg, &st), *b = generate(p, "Once upon a time", &cfg, &st);
    CHECK(a && b && !strcmp(a, b));
    free(a), free(b);
    for (int v = 1; v <= 2; v++) {
        sprout_generation_config_init(&cfg);
        cfg.max_new_tokens = 40;
        cfg.mirostat = v;
        cfg.seed = 3;
        a = generate(p, "Once upon a time", &cfg, &st), b = generate(p, "Once upon a time", &cfg, &st);
        CHECK_MSG(a && b && !strcmp(a, b), "mirostat %d: [%s] then [%s]", v, a ? a : "", b ? b : ""); /* mu starts anew */
        free(a), free(b);
    }

    /* the order: where temperature goes matters to top-p; an order that
     * only spells the default does not */
    sprout_generation_config_init(&cfg);
    cfg.max_new_tokens = 40;
    cfg.temperature = 1.f;
    cfg.seed = 5;
    a = generate(p, "Once upon a time", &cfg, &st);
    cfg.samplers = "top_k;top_p;min_p;temperature";
    b = generate(p, "Once upon a time", &cfg, &st);
    CHECK(a && b && !strcmp(a, b));
    free(a), free(b);
    cfg.temperature = 2.f;
    cfg.top_k = 0;
    cfg.min_p = 0;
    cfg.top_p = 0.5f;
    cfg.samplers = NULL;
    a = generate(p, "Once upon a time", &cfg, &st);
    cfg.samplers = "temperature;top_p";
    b = generate(p, "Once upon a time", &cfg, &st);
    CHECK_MSG(a && b && strcmp(a, b) != 0, "temperature first changed nothing: [%s]", a ? a : "");
    free(a), free(b);
    cfg.samplers = "top_k;nope";
    a = generate(p, "Once upon a time", &cfg, &st);
    CHECK(st == SPROUT_ERR_INVALID_ARGUMENT && strstr(sprout_last_error(), "samplers: 'nope'"));
    free(a);
    sprout_pipeline_free(p);
    sprout_model_free(m);
}

int main(void) {
    test_non_finite_logits();
    test_filters();
    test_filters_against_definition();
    test_greedy_bias_and_penalties();
    test_seed_and_distribution();
    test_logprobs();
    test_typical();
    test_top_n_sigma();
    test_xtc();
    test_mirostat_v2();
    test_mirostat_v1();
    test_dry();
    test_order();
    test_stories();
    TEST_MAIN_END();
}
