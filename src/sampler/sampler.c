#include "sampler/sampler.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "sampler/sampler_internal.h"

/* xoshiro256** seeded through splitmix64: fast, and defined bit for bit. */
static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t next_u64(sp_sampler *s) {
    uint64_t *r = s->rng;
    const uint64_t result = rotl(r[1] * 5, 7) * 9, t = r[1] << 17;
    r[2] ^= r[0];
    r[3] ^= r[1];
    r[1] ^= r[2];
    r[0] ^= r[3];
    r[2] ^= t;
    r[3] = rotl(r[3], 45);
    return result;
}

double sp_sampler_uniform(sp_sampler *s) { return (double)(next_u64(s) >> 11) * 0x1.0p-53; }

void sp_sampler_seed(sp_sampler *s, uint64_t seed) {
    for (int i = 0; i < 4; i++) s->rng[i] = splitmix64(&seed);
}

sprout_status sp_sampler_init(sp_sampler *s, int32_t n_vocab, uint64_t seed) {
    memset(s, 0, sizeof *s);
    s->n_vocab = n_vocab;
    s->cand = malloc((size_t)n_vocab * sizeof *s->cand);
    s->counts = calloc((size_t)n_vocab, sizeof *s->counts);
    s->scratch = malloc((size_t)n_vocab * 8);
    if (!s->cand || !s->counts || !s->scratch) {
        sp_sampler_free(s);
        return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory for the sampler");
    }
    sp_sampler_seed(s, seed);
    return SPROUT_OK;
}

void sp_sampler_reset(sp_sampler *s, const sp_sampling *cfg, uint64_t seed) {
    sp_sampler_seed(s, seed);
    s->mu = 2.f * cfg->mirostat_tau;
}

void sp_sampler_free(sp_sampler *s) {
    free(s->cand);
    free(s->counts);
    free(s->piece);
    free(s->piece_len);
    free(s->scratch);
    free(s->dry_kind);
    free(s->dry_max);
    free(s->dry_z);
    memset(s, 0, sizeof *s);
}

/* Higher logit first; equal logits in id order, so results never depend on
 * the sort's stability. */
int sp_by_logit(const void *a, const void *b) {
    const sp_candidate *x = a, *y = b;
    if (x->logit != y->logit) return x->logit > y->logit ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* by_logit's order as a test: a ranks before b. */
static inline bool ranks_before(const sp_candidate *a, const sp_candidate *b) {
    return a->logit > b->logit || (a->logit == b->logit && a->id < b->id);
}

/* c[0..k) as a heap whose root ranks last among them. */
static void sift_down(sp_candidate *c, int32_t k, int32_t i) {
    for (;;) {
        int32_t worst = i;
        const int32_t l = 2 * i + 1, r = l + 1;
        if (l < k && ranks_before(&c[worst], &c[l])) worst = l;
        if (r < k && ranks_before(&c[worst], &c[r])) worst = r;
        if (worst == i) return;
        const sp_candidate t = c[i];
        c[i] = c[worst];
        c[worst] = t;
        i = worst;
    }
}

/* Moves the k best candidates to the front (in no order) in one pass: a
 * heap of the best so far, which almost every token of a large vocabulary
 * leaves with one comparison against its worst (a quarter of a
 * quickselect's time on a 152k vocabulary). */
void sp_select_top(sp_candidate *c, int32_t n, int32_t k) {
    for (int32_t i = k / 2 - 1; i >= 0; i--) sift_down(c, k, i);
    for (int32_t i = k; i < n; i++)
        if (ranks_before(&c[i], &c[0])) {
            const sp_candidate t = c[0];
            c[0] = c[i];
            c[i] = t;
            sift_down(c, k, 0);
        }
}

/* --- the chain's bookkeeping ------------------------------------------------------------- */

void sp_chain_probs(sp_sampler *s, int32_t front) {
    sp_candidate *c = s->cand;
    if (!s->sorted) {
        qsort(c, (size_t)front, sizeof *c, sp_by_logit);
        if (front == s->n_cur) s->sorted = true;
        s->identity = false;
    }
    /* drop banned (-inf) tails so they never get a share */
    if (s->sorted) {
        while (s->n_cur > 1 && isinf(c[s->n_cur - 1].logit) && c[s->n_cur - 1].logit < 0) s->n_cur--;
        if (front > s->n_cur) front = s->n_cur;
    }
    const float max = c[0].logit;
    if (max == -INFINITY) { /* nothing has any weight: the first in id order */
        s->n_cur = 1;
        c[0].p = 1.f;
        s->p_valid = true;
        return;
    }
    double sum = 0;
    for (int32_t i = 0; i < s->n_cur; i++) sum += (c[i].p = expf(c[i].logit - max));
    for (int32_t i = 0; i < front; i++) c[i].p = (float)(c[i].p / sum);
    s->p_valid = true;
}

int32_t sp_chain_draw(sp_sampler *s) {
    double u = sp_sampler_uniform(s), cum = 0;
    for (int32_t i = 0; i < s->n_cur; i++) {
        cum += s->cand[i].p;
        if (u < cum) return s->cand[i].id;
    }
    return s->cand[s->n_cur - 1].id;
}

/* The best candidate (the lower id among equals). */
static int32_t best_index(const sp_sampler *s) {
    int32_t best = 0;
    for (int32_t i = 1; i < s->n_cur; i++) {
        const sp_candidate *a = &s->cand[i], *b = &s->cand[best];
        if (a->logit > b->logit || (a->logit == b->logit && a->id < b->id)) best = i;
    }
    return best;
}

/* --- the stages ---------------------------------------------------------------------------- */

static void stage_penalties(sp_sampler *s, const sp_sampling *cfg, const int32_t *history, size_t n_history) {
    /* a penalty of 0 or less (or NaN) would divide by zero: it means "off" */
    const float rep = cfg->repetition_penalty > 0.f ? cfg->repetition_penalty : 1.f;
    const bool any = rep != 1.f || cfg->presence_penalty != 0.f || cfg->frequency_penalty != 0.f;
    if (!any || n_history == 0 || cfg->repeat_last_n == 0) return;
    size_t window = cfg->repeat_last_n < 0 || (size_t)cfg->repeat_last_n > n_history ? n_history : (size_t)cfg->repeat_last_n;
    const int32_t *h = history + (n_history - window);
    for (size_t i = 0; i < window; i++)
        if (h[i] >= 0 && h[i] < s->n_vocab) s->counts[h[i]]++;
    /* untouched candidates: each token of the window once, found by its id;
     * else a pass over the candidates left */
    const size_t n_visit = s->identity ? window : (size_t)s->n_cur;
    for (size_t i = 0; i < n_visit; i++) {
        const int32_t id = s->identity ? h[i] : s->cand[i].id;
        if (id < 0 || id >= s->n_vocab || s->counts[id] == 0) continue;
        float *l = &s->cand[s->identity ? id : (int32_t)i].logit;
        if (rep != 1.f) *l = *l > 0 ? *l / rep : *l * rep;
        *l -= cfg->presence_penalty + cfg->frequency_penalty * (float)s->counts[id];
        if (s->identity) s->counts[id] = 0; /* each token once */
    }
    for (size_t i = 0; i < window; i++)
        if (h[i] >= 0 && h[i] < s->n_vocab) s->counts[h[i]] = 0;
    s->sorted = false;
    s->p_valid = false;
}

static void stage_top_k(sp_sampler *s, int32_t k) {
    if (k <= 0 || k >= s->n_cur) return;
    sp_select_top(s->cand, s->n_cur, k);
    s->n_cur = k;
    s->sorted = s->identity = s->p_valid = false;
    sp_chain_probs(s, k);
}

/* Without top-k, the candidates that can survive top-p and min-p moved to
 * the front (returns how many; the rest rank below all of them), so that
 * only those are sorted: at least min_p of the best probability (with a
 * margin: the exact test comes later), and (top_p < 1) logits down to where
 * the candidates hold more than top_p of the mass (each try twice as deep).
 * Sorting a large vocabulary whole for every token cost more than the
 * forward pass of a small model. */
static int32_t front_survivors(sp_candidate *c, int32_t n, float top_p, float min_p) {
    float max = -INFINITY;
    for (int32_t i = 0; i < n; i++) max = c[i].logit > max ? c[i].logit : max;
    if (max == -INFINITY) return n;
    float floor_logit = min_p > 0.f ? max + logf(min_p) - 1e-3f : -INFINITY;
    if (top_p > 0.f && top_p < 1.f) {
        double total = 0;
        for (int32_t i = 0; i < n; i++) total += (c[i].p = expf(c[i].logit - max));
        for (float depth = 4.f;; depth *= 2.f) {
            const float cut = max - depth;
            if (cut <= floor_logit || !isfinite(cut)) break;
            double mass = 0;
            for (int32_t i = 0; i < n; i++)
                if (c[i].logit >= cut) mass += c[i].p;
            if (mass >= (top_p + 1e-3) * total) {
                floor_logit = cut;
                break;
            }
        }
    }
    if (floor_logit == -INFINITY) return n;
    int32_t front = 0;
    for (int32_t i = 0; i < n; i++)
        if (c[i].logit >= floor_logit) {
            const sp_candidate t = c[front];
            c[front++] = c[i];
            c[i] = t;
        }
    return front;
}

/* The smallest prefix holding top_p of the mass. min_p: the min-p stage
 * that follows (0: none), whose floor bounds what needs sorting: should
 * top-p's cut lie below it, min-p cuts there anyway. */
static void stage_top_p(sp_sampler *s, float top_p, float min_p) {
    if (!(top_p > 0.f && top_p < 1.f)) return;
    int32_t front = s->sorted ? s->n_cur : front_survivors(s->cand, s->n_cur, top_p, min_p);
    if (front < s->n_cur) s->identity = false;
    sp_chain_probs(s, front);
    if (front > s->n_cur) front = s->n_cur;
    double cum = 0;
    int32_t keep = front;
    for (int32_t i = 0; i < front; i++)
        if ((cum += s->cand[i].p) >= top_p) {
            keep = i + 1;
            break;
        }
    s->n_cur = keep;
    s->sorted = true; /* what is left lies in the sorted front */
}

/* At least min_p times the best probability. */
static void stage_min_p(sp_sampler *s, float min_p) {
    if (!(min_p > 0.f)) return;
    int32_t front = s->sorted ? s->n_cur : front_survivors(s->cand, s->n_cur, 1.f, min_p);
    if (front < s->n_cur) s->identity = false;
    sp_chain_probs(s, front);
    if (front > s->n_cur) front = s->n_cur;
    const float floor_p = min_p * s->cand[0].p;
    int32_t k = 1;
    while (k < front && s->cand[k].p >= floor_p) k++;
    s->n_cur = k;
    s->sorted = true;
}

/* Divides the logits; below 1e-6 (dividing would overflow) only the best
 * stays, as llama.cpp's temperature 0 does. */
static void stage_temperature(sp_sampler *s, float t) {
    if (!(t >= 1e-6f)) {
        const int32_t best = best_index(s);
        s->cand[0] = s->cand[best];
        s->cand[0].p = 1.f;
        s->n_cur = 1;
        s->sorted = s->p_valid = true;
        s->identity = false;
        return;
    }
    if (t == 1.f) return;
    for (int32_t i = 0; i < s->n_cur; i++) s->cand[i].logit /= t;
    s->p_valid = false;
}

/* llama.cpp's default order (common.h's common_params_sampling.samplers). */
static const uint8_t default_order[] = {SP_STAGE_PENALTIES, SP_STAGE_DRY,   SP_STAGE_TOP_N_SIGMA, SP_STAGE_TOP_K,      SP_STAGE_TYPICAL_P,
                                        SP_STAGE_TOP_P,     SP_STAGE_MIN_P, SP_STAGE_XTC,         SP_STAGE_TEMPERATURE, SP_STAGE_END};

static bool in_order(const uint8_t *order, sp_stage st) {
    for (int i = 0; i < SP_MAX_STAGES && order[i] != SP_STAGE_END; i++)
        if (order[i] == st) return true;
    return false;
}

int32_t sp_sample(sp_sampler *s, const float *logits, const sp_sampling *cfg, const int32_t *history, size_t n_history,
                  const int32_t *banned, size_t n_banned) {
    return sp_sample_allowed(s, logits, cfg, history, n_history, banned, n_banned, NULL);
}

int32_t sp_sample_allowed(sp_sampler *s, const float *logits, const sp_sampling *cfg, const int32_t *history, size_t n_history,
                          const int32_t *banned, size_t n_banned, const uint64_t *allowed) {
    const int32_t n = s->n_vocab;
    /* a broken model (NaN or infinite weights) must still give a token in
     * range: NaN counts as the lowest logit, +inf as the highest finite one,
     * so that every comparison below is a total order */
    for (int32_t i = 0; i < n; i++) {
        const float l = logits[i];
        s->cand[i] = (sp_candidate){i, isnan(l) ? -INFINITY : l > FLT_MAX ? FLT_MAX : l, 0.f};
    }
    for (size_t i = 0; i < cfg->n_bias; i++) {
        const sprout_logit_bias *b = &cfg->bias[i];
        if (b->token >= 0 && b->token < n && isfinite(b->bias)) s->cand[b->token].logit += b->bias;
    }
    for (size_t i = 0; i < n_banned; i++)
        if (banned[i] >= 0 && banned[i] < n) s->cand[banned[i]].logit = -INFINITY;
    for (int32_t w = 0; allowed && w < (n + 63) / 64; w++) /* a word at a time: most of a mask is whole words */
        if (allowed[w] != UINT64_MAX)
            for (int32_t i = 64 * w; i < n && i < 64 * (w + 1); i++)
                if (!(allowed[w] >> (i % 64) & 1)) s->cand[i].logit = -INFINITY;
    s->n_cur = n;
    s->sorted = s->p_valid = false;
    s->identity = true;

    if (cfg->mirostat == 1 || cfg->mirostat == 2) { /* llama.cpp: temperature, then Mirostat; no other stage */
        stage_temperature(s, cfg->temperature);
        const int32_t id = sp_mirostat(s, cfg);
        s->n_last = s->n_cur;
        return id;
    }
    const uint8_t *order = cfg->order[0] != SP_STAGE_END ? cfg->order : default_order;
    const bool typical = cfg->typical_p > 0.f && cfg->typical_p < 1.f && in_order(order, SP_STAGE_TYPICAL_P);
    const bool xtc = cfg->xtc_probability > 0.f && cfg->xtc_threshold <= 0.5f && in_order(order, SP_STAGE_XTC);
    /* greedy (temperature 0, or so small that dividing by it would overflow
     * to infinity): temperature keeps the first of the maximal; the filters
     * before it would keep that one too (typical-p and XTC aside), so they
     * are skipped */
    const bool greedy = !(cfg->temperature >= 1e-6f) && in_order(order, SP_STAGE_TEMPERATURE) && !typical && !xtc;
    for (int i = 0; i < SP_MAX_STAGES && order[i] != SP_STAGE_END; i++) {
        switch ((sp_stage)order[i]) {
        case SP_STAGE_PENALTIES: stage_penalties(s, cfg, history, n_history); break;
        case SP_STAGE_DRY: sp_stage_dry(s, cfg, history, n_history); break;
        case SP_STAGE_TOP_N_SIGMA:
            if (!greedy) sp_stage_top_n_sigma(s, cfg->top_n_sigma);
            break;
        case SP_STAGE_TOP_K:
            if (!greedy) stage_top_k(s, cfg->top_k);
            break;
        case SP_STAGE_TYPICAL_P: sp_stage_typical(s, cfg->typical_p); break;
        case SP_STAGE_TOP_P:
            if (!greedy) stage_top_p(s, cfg->top_p, i + 1 < SP_MAX_STAGES && order[i + 1] == SP_STAGE_MIN_P ? cfg->min_p : 0.f);
            break;
        case SP_STAGE_MIN_P:
            if (!greedy) stage_min_p(s, cfg->min_p);
            break;
        case SP_STAGE_XTC: sp_stage_xtc(s, cfg->xtc_probability, cfg->xtc_threshold); break;
        case SP_STAGE_TEMPERATURE: stage_temperature(s, cfg->temperature); break;
        case SP_STAGE_END: break;
        }
    }
    /* the draw: by the probabilities the last filter left, renormalised
     * (or, after temperature moved the logits, a softmax again) */
    if (s->p_valid && s->sorted) {
        double sum = 0;
        for (int32_t i = 0; i < s->n_cur; i++) sum += s->cand[i].p;
        for (int32_t i = 0; i < s->n_cur; i++) s->cand[i].p = (float)(s->cand[i].p / sum);
    } else {
        sp_chain_probs(s, s->n_cur);
    }
    s->n_last = s->n_cur;
    return sp_chain_draw(s);
}

int32_t sp_sampler_last_candidates(const sp_sampler *s, const sp_candidate **cand) {
    *cand = s->cand;
    return s->n_last;
}

float sp_logprob_top(const float *logits, int32_t n_vocab, int32_t token, int32_t k, int32_t *top_ids, float *top_lp) {
    float max = logits[0];
    for (int32_t i = 1; i < n_vocab; i++)
        if (logits[i] > max) max = logits[i];
    double sum = 0;
    for (int32_t i = 0; i < n_vocab; i++) sum += exp((double)logits[i] - max);
    const double lse = max + log(sum);
    /* the k best by insertion into a small sorted list */
    int32_t filled = 0;
    for (int32_t i = 0; i < n_vocab && k > 0; i++) {
        if (filled == k && !(logits[i] > logits[top_ids[k - 1]])) continue;
        int32_t j = filled < k ? filled++ : k - 1;
        while (j > 0 && logits[i] > logits[top_ids[j - 1]]) {
            top_ids[j] = top_ids[j - 1];
            j--;
        }
        top_ids[j] = i;
    }
    for (int32_t j = 0; j < filled; j++) top_lp[j] = (float)(logits[top_ids[j]] - lse);
    return (float)(logits[token] - lse);
}
