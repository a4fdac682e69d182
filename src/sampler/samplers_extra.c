/* llama.cpp's samplers beyond the classic filters: typical-p, top-n-sigma,
 * XTC, Mirostat v1 and v2, DRY, and the names of the chain's stages. Each
 * follows llama.cpp's definition (src/llama-sampling.cpp); sprout's one
 * seeded generator replaces llama.cpp's per-sampler ones. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sampler/sampler_internal.h"

/* --- typical-p ----------------------------------------------------------------------------- */

typedef struct typical_entry {
    float score; /* |surprisal - entropy| */
    int32_t rank; /* position in the sorted candidates */
} typical_entry;

static int by_score(const void *a, const void *b) {
    const typical_entry *x = a, *y = b;
    if (x->score != y->score) return x->score < y->score ? -1 : 1;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

static int by_rank(const void *a, const void *b) {
    const typical_entry *x = a, *y = b;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

/* Locally typical sampling (Meister et al.): the candidates whose surprisal
 * -log p is closest to the entropy, taken until their mass exceeds p. The
 * survivors stay in logit order (llama.cpp leaves them in typicality order;
 * only the draw's mapping of the uniform number differs). */
void sp_stage_typical(sp_sampler *s, float p) {
    if (!(p > 0.f && p < 1.f)) return;
    sp_chain_probs(s, s->n_cur);
    const int32_t n = s->n_cur;
    double entropy = 0;
    for (int32_t i = 0; i < n; i++)
        if (s->cand[i].p > 0.f) entropy -= s->cand[i].p * log(s->cand[i].p);
    typical_entry *e = s->scratch;
    for (int32_t i = 0; i < n; i++)
        e[i] = (typical_entry){s->cand[i].p > 0.f ? (float)fabs(-log(s->cand[i].p) - entropy) : INFINITY, i};
    qsort(e, (size_t)n, sizeof *e, by_score);
    double cum = 0;
    int32_t keep = n;
    for (int32_t i = 0; i < n; i++)
        if ((cum += s->cand[e[i].rank].p) > p) {
            keep = i + 1;
            break;
        }
    qsort(e, (size_t)keep, sizeof *e, by_rank);
    for (int32_t i = 0; i < keep; i++) s->cand[i] = s->cand[e[i].rank]; /* ranks ascend: never overwrites one still to move */
    s->n_cur = keep;
}

/* --- top-n-sigma ---------------------------------------------------------------------------- */

/* Top-nσ (Tang et al.): keeps the logits within n standard deviations of
 * the best, the mean and deviation taken over the finite logits left. */
void sp_stage_top_n_sigma(sp_sampler *s, float n) {
    if (!(n > 0.f) || s->n_cur <= 1) return;
    float max = -INFINITY;
    double sum = 0;
    int32_t count = 0;
    for (int32_t i = 0; i < s->n_cur; i++) {
        const float l = s->cand[i].logit;
        if (l == -INFINITY) continue;
        max = l > max ? l : max;
        sum += l;
        count++;
    }
    if (!count) return;
    const double mean = sum / count;
    double acc = 0;
    for (int32_t i = 0; i < s->n_cur; i++)
        if (s->cand[i].logit != -INFINITY) acc += (s->cand[i].logit - mean) * (s->cand[i].logit - mean);
    const float floor_logit = (float)(max - n * sqrt(acc / count));
    int32_t w = 0;
    for (int32_t i = 0; i < s->n_cur; i++)
        if (s->cand[i].logit >= floor_logit) s->cand[w++] = s->cand[i];
    if (w < s->n_cur) s->identity = false;
    s->n_cur = w;
    s->p_valid = false;
}

/* --- XTC ------------------------------------------------------------------------------------ */

/* Exclude Top Choices: with chance `probability`, every candidate of
 * probability >= threshold but the least likely of them leaves. */
void sp_stage_xtc(sp_sampler *s, float probability, float threshold) {
    if (!(probability > 0.f) || threshold > 0.5f || s->n_cur < 2) return;
    if (sp_sampler_uniform(s) > probability) return;
    sp_chain_probs(s, s->n_cur);
    int32_t last = 0;
    for (int32_t i = 0; i < s->n_cur && s->cand[i].p >= threshold; i++) last = i;
    if (last == 0) return;
    memmove(s->cand, s->cand + last, (size_t)(s->n_cur - last) * sizeof *s->cand);
    s->n_cur -= last;
}

/* --- Mirostat ------------------------------------------------------------------------------- */

/* Mirostat (Basu et al.), after temperature: v1 estimates the Zipf exponent
 * s from the 100 best and keeps the k best for which the expected surprise
 * is mu; v2 keeps the candidates of surprise -log2 p <= mu (at least the
 * best). Both draw, then move mu by eta times the error of the drawn
 * token's surprise (renormalised p) against tau. */
int32_t sp_mirostat(sp_sampler *s, const sp_sampling *cfg) {
    sp_candidate *c = s->cand;
    int32_t w = 0; /* banned (-inf) candidates out, one always left */
    for (int32_t i = 0; i < s->n_cur; i++)
        if (c[i].logit != -INFINITY) c[w++] = c[i];
    if (w == 0) w = 1;
    s->n_cur = w;
    s->identity = false;
    float max = -INFINITY;
    for (int32_t i = 0; i < s->n_cur; i++) max = c[i].logit > max ? c[i].logit : max;
    double sum = 0;
    for (int32_t i = 0; i < s->n_cur; i++) sum += (c[i].p = expf(c[i].logit - max));
    if (cfg->mirostat == 1) {
        const int32_t m = 100, top = s->n_cur < m ? s->n_cur : m;
        sp_select_top(c, s->n_cur, top);
        qsort(c, (size_t)top, sizeof *c, sp_by_logit);
        for (int32_t i = 0; i < top; i++) c[i].p = (float)(c[i].p / sum);
        double sum_tb = 0, sum_tt = 0;
        for (int32_t i = 0; i + 1 < top; i++) {
            const double t = log((double)(i + 2) / (i + 1)), b = log((double)c[i].p / c[i + 1].p);
            sum_tb += t * b;
            sum_tt += t * t;
        }
        const double s_hat = sum_tb / sum_tt, eps = s_hat - 1;
        const double k = pow(eps * pow(2, s->mu) / (1 - pow(s->n_vocab, -eps)), 1 / s_hat);
        const int32_t keep = !(k >= 1) ? 1 : k >= s->n_cur ? s->n_cur : (int32_t)k;
        if (keep > top) {
            sp_select_top(c, s->n_cur, keep);
            qsort(c, (size_t)keep, sizeof *c, sp_by_logit);
        }
        s->n_cur = keep;
    } else {
        /* p >= 2^-mu, a prefix of the sorted candidates */
        int32_t keep = 0;
        for (int32_t i = 0; i < s->n_cur; i++)
            if (!(-log2f((float)(c[i].p / sum)) > s->mu)) {
                const sp_candidate t = c[keep];
                c[keep++] = c[i];
                c[i] = t;
            }
        if (keep == 0) {
            sp_select_top(c, s->n_cur, 1);
            keep = 1;
        }
        qsort(c, (size_t)keep, sizeof *c, sp_by_logit);
        s->n_cur = keep;
    }
    s->sorted = true;
    s->p_valid = false;
    sp_chain_probs(s, s->n_cur);
    double u = sp_sampler_uniform(s), cum = 0;
    int32_t at = s->n_cur - 1;
    for (int32_t i = 0; i < s->n_cur; i++)
        if (u < (cum += c[i].p)) {
            at = i;
            break;
        }
    s->mu -= cfg->mirostat_eta * (-log2f(c[at].p) - cfg->mirostat_tau);
    return c[at].id;
}

/* --- DRY ------------------------------------------------------------------------------------ */

enum { DRY_BREAKER = 1, DRY_HEAD = 2, DRY_MAX_TAIL = 20 };

/* Whether text[pos..len) is a proper prefix of b (the start of b, which
 * later tokens may finish). */
static bool starts_breaker(const char *text, size_t len, size_t pos, const char *b, size_t bl) {
    return len - pos < bl && !memcmp(text + pos, b, len - pos);
}

bool sp_sampler_dry_prepare(sp_sampler *s, const char *const *breakers, size_t n_breakers) {
    if (!s->dry_kind) s->dry_kind = malloc((size_t)s->n_vocab);
    if (!s->dry_max) s->dry_max = calloc((size_t)s->n_vocab, sizeof *s->dry_max);
    if (!s->dry_kind || !s->dry_max) return false;
    for (int32_t id = 0; id < s->n_vocab; id++) {
        const char *w = s->piece ? s->piece[id] : NULL;
        const size_t wl = w ? s->piece_len[id] : 0;
        uint8_t kind = 0;
        for (size_t k = 0; k < n_breakers && wl; k++) {
            const char *b = breakers[k];
            const size_t bl = b ? strlen(b) : 0;
            if (!bl) continue;
            if (memmem(w, wl, b, bl)) kind |= DRY_BREAKER;
            for (size_t pos = 0; pos < wl && !(kind & DRY_HEAD); pos++)
                if (w[pos] == b[0] && starts_breaker(w, wl, pos, b, bl)) kind |= DRY_HEAD;
        }
        s->dry_kind[id] = kind;
    }
    return true;
}

/* The longest tail (in tokens, at most `room`) of a sequence breaker that
 * starts in the text of h[j] and ends exactly with a later token's; 0 for a
 * token that holds a whole breaker; -1 for none. Matching is on the tokens'
 * text, llama.cpp's on one tokenization of the breaker's rest. */
static int breaker_at(const sp_sampler *s, const sp_sampling *cfg, const int32_t *h, size_t n, size_t j, size_t room) {
    const int32_t t = h[j];
    if (t < 0 || t >= s->n_vocab || !s->dry_kind[t]) return -1;
    int longest = s->dry_kind[t] & DRY_BREAKER ? 0 : -1;
    if (!(s->dry_kind[t] & DRY_HEAD)) return longest;
    const char *w = s->piece[t];
    const size_t wl = s->piece_len[t];
    for (size_t k = 0; k < cfg->n_dry_breakers; k++) {
        const char *b = cfg->dry_breakers[k];
        const size_t bl = b ? strlen(b) : 0;
        for (size_t pos = 0; bl && pos < wl; pos++) {
            if (w[pos] != b[0] || !starts_breaker(w, wl, pos, b, bl)) continue;
            const char *rest = b + (wl - pos);
            size_t left = bl - (wl - pos), used = 0;
            while (left && used < room && used < DRY_MAX_TAIL && j + 1 + used < n) {
                const int32_t u = h[j + 1 + used];
                const size_t ul = u >= 0 && u < s->n_vocab ? s->piece_len[u] : 0;
                if (!ul || ul > left || memcmp(s->piece[u], rest, ul)) break;
                rest += ul, left -= ul, used++;
            }
            if (!left && (int)used > longest) longest = (int)used;
        }
    }
    return longest;
}

/* DRY, "don't repeat yourself" (pi6am's, as llama.cpp has it): a token that
 * would extend a sequence already seen in the window, once that repeat is
 * at least allowed_length tokens, loses multiplier * base^(length -
 * allowed_length) of logit (the exponent capped so the power stays finite).
 * A repeat cannot reach back past the latest sequence breaker, and a token
 * holding a breaker is never penalised. */
void sp_stage_dry(sp_sampler *s, const sp_sampling *cfg, const int32_t *history, size_t n_history) {
    if (cfg->dry_multiplier == 0.f || !(cfg->dry_base >= 1.f) || cfg->dry_penalty_last_n == 0 || !s->dry_kind || !s->dry_max) return;
    const size_t allowed = cfg->dry_allowed_length > 0 ? (size_t)cfg->dry_allowed_length : 0;
    const size_t n = cfg->dry_penalty_last_n < 0 || (size_t)cfg->dry_penalty_last_n > n_history ? n_history : (size_t)cfg->dry_penalty_last_n;
    if (n <= allowed) return;
    const int32_t *h = history + (n_history - n);
    /* the latest breaker, scanning back: repeats end after it */
    size_t limit = n;
    for (size_t i = 0; i < n; i++) {
        const int tail = breaker_at(s, cfg, h, n, n - 1 - i, i);
        if (tail >= 0) {
            limit = i - (size_t)tail;
            break;
        }
    }
    if (limit < allowed) return;
    if (s->dry_z_cap < n) {
        int32_t *z = realloc(s->dry_z, n * sizeof *z);
        if (!z) return;
        s->dry_z = z;
        s->dry_z_cap = n;
    }
    /* z[k]: how many tokens the window's end and the window cut k tokens
     * shorter end with in common (the Z-function of the reversed window) */
    int32_t *z = s->dry_z;
#define R(i) h[n - 1 - (i)]
    z[0] = (int32_t)n;
    size_t lo = 0, hi = 0; /* the rightmost match so far: [lo, hi) */
    for (size_t k = 1; k < n; k++) {
        size_t len = 0;
        if (k < hi) len = hi - k < (size_t)z[k - lo] ? hi - k : (size_t)z[k - lo];
        while (k + len < n && R(len) == R(k + len)) len++;
        if (k + len > hi) lo = k, hi = k + len;
        z[k] = (int32_t)len;
    }
#undef R
    /* the token after each earlier occurrence would extend a repeat of
     * that length: the longest per token */
    for (size_t at = 0; at + 1 < n; at++) {
        size_t len = (size_t)z[n - 1 - at];
        if (len > limit) len = limit;
        const int32_t next = h[at + 1];
        if (len < allowed || next < 0 || next >= s->n_vocab) continue;
        if ((size_t)s->dry_max[next] < len + 1) s->dry_max[next] = (int32_t)(len + 1);
    }
    const int max_exponent = cfg->dry_base > 1.000001f ? (int)(88.7228391f / logf(cfg->dry_base)) : 0;
    const size_t n_visit = s->identity ? n : (size_t)s->n_cur;
    for (size_t i = 0; i < n_visit; i++) {
        const int32_t id = s->identity ? (i + 1 < n ? h[i + 1] : -1) : s->cand[i].id;
        if (id < 0 || id >= s->n_vocab || !s->dry_max[id]) continue;
        if (!(s->dry_kind[id] & DRY_BREAKER)) {
            int exponent = s->dry_max[id] - 1 - (int)allowed;
            if (max_exponent > 0 && exponent > max_exponent) exponent = max_exponent;
            s->cand[s->identity ? id : (int32_t)i].logit -= cfg->dry_multiplier * powf(cfg->dry_base, (float)exponent);
        }
        if (s->identity) s->dry_max[id] = 0; /* each token once */
    }
    for (size_t at = 0; at + 1 < n; at++)
        if (h[at + 1] >= 0 && h[at + 1] < s->n_vocab) s->dry_max[h[at + 1]] = 0;
    s->sorted = false;
    s->p_valid = false;
}

/* --- the chain's order ---------------------------------------------------------------------- */

static const struct {
    const char *name;
    char letter;
    sp_stage stage;
} stage_names[] = {
    {"penalties", 'e', SP_STAGE_PENALTIES}, {"dry", 'd', SP_STAGE_DRY},         {"top_n_sigma", 's', SP_STAGE_TOP_N_SIGMA},
    {"top_k", 'k', SP_STAGE_TOP_K},         {"typ_p", 'y', SP_STAGE_TYPICAL_P}, {"top_p", 'p', SP_STAGE_TOP_P},
    {"min_p", 'm', SP_STAGE_MIN_P},         {"xtc", 'x', SP_STAGE_XTC},         {"temperature", 't', SP_STAGE_TEMPERATURE},
    /* llama.cpp's other spellings */
    {"top-k", 0, SP_STAGE_TOP_K},           {"top-p", 0, SP_STAGE_TOP_P},       {"nucleus", 0, SP_STAGE_TOP_P},
    {"top-n-sigma", 0, SP_STAGE_TOP_N_SIGMA}, {"typical-p", 0, SP_STAGE_TYPICAL_P}, {"typical", 0, SP_STAGE_TYPICAL_P},
    {"typ-p", 0, SP_STAGE_TYPICAL_P},       {"typ", 0, SP_STAGE_TYPICAL_P},     {"min-p", 0, SP_STAGE_MIN_P},
    {"temp", 0, SP_STAGE_TEMPERATURE},
};
enum { N_STAGE_NAMES = sizeof stage_names / sizeof *stage_names };

static int stage_by_name(const char *name, size_t len) {
    for (int i = 0; i < N_STAGE_NAMES; i++)
        if (strlen(stage_names[i].name) == len && !memcmp(stage_names[i].name, name, len)) return stage_names[i].stage;
    return -1;
}

static int stage_by_letter(char c) {
    for (int i = 0; i < N_STAGE_NAMES; i++)
        if (stage_names[i].letter && stage_names[i].letter == c) return stage_names[i].stage;
    return -1;
}

bool sp_sampler_parse_order(const char *text, uint8_t order[SP_MAX_STAGES], char *why, size_t why_size) {
    memset(order, SP_STAGE_END, SP_MAX_STAGES);
    if (!text || !*text) return true;
    int n = 0;
    bool names = strpbrk(text, ";,") != NULL || stage_by_name(text, strlen(text)) >= 0;
    if (!names) /* letters, unless some are not: then the names' error */
        for (const char *p = text; *p; p++)
            if (stage_by_letter(*p) < 0) names = true;
    if (!names) {
        for (const char *p = text; *p; p++) {
            if (n == SP_MAX_STAGES) {
                snprintf(why, why_size, "at most %d samplers", SP_MAX_STAGES);
                return false;
            }
            order[n++] = (uint8_t)stage_by_letter(*p);
        }
        return true;
    }
    for (const char *p = text; *p;) {
        size_t len = strcspn(p, ";,");
        const char *name = p;
        while (len && (*name == ' ' || *name == '\t')) name++, len--;
        while (len && (name[len - 1] == ' ' || name[len - 1] == '\t')) len--;
        p += strcspn(p, ";,");
        if (*p) p++;
        if (!len) continue;
        const int st = stage_by_name(name, len);
        if (st < 0) {
            const bool known = (len == 6 && !memcmp(name, "infill", 6)) || (len == 10 && !memcmp(name, "adaptive_p", 10));
            snprintf(why, why_size, "'%.*s' is %s (penalties, dry, top_n_sigma, top_k, typ_p, top_p, min_p, xtc, temperature)",
                     (int)(len > 40 ? 40 : len), name, known ? "not supported" : "no sampler");
            return false;
        }
        if (n == SP_MAX_STAGES) {
            snprintf(why, why_size, "at most %d samplers", SP_MAX_STAGES);
            return false;
        }
        order[n++] = (uint8_t)st;
    }
    if (!n) {
        snprintf(why, why_size, "names no sampler");
        return false;
    }
    return true;
}
