/* Choosing the next token from logits: logit biases, then llama.cpp's
 * chain (penalties, DRY, top-n-sigma, top-k, typical-p, top-p, min-p, XTC,
 * temperature by default; the order is settable), then a draw from a seeded
 * generator whose sequence is the same on every machine; or, with Mirostat,
 * temperature and Mirostat's own truncation and draw. Temperature 0 is
 * greedy (ties go to the lowest id). Scratch space is allocated once per
 * sampler. */
#ifndef SPROUT_SAMPLER_H
#define SPROUT_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sprout.h"

/* The stages of the chain, llama.cpp's sampler types (--samplers). */
typedef enum sp_stage {
    SP_STAGE_END = 0, /* ends a shorter order */
    SP_STAGE_PENALTIES,
    SP_STAGE_DRY,
    SP_STAGE_TOP_N_SIGMA,
    SP_STAGE_TOP_K,
    SP_STAGE_TYPICAL_P,
    SP_STAGE_TOP_P,
    SP_STAGE_MIN_P,
    SP_STAGE_XTC,
    SP_STAGE_TEMPERATURE,
} sp_stage;
enum { SP_MAX_STAGES = 16 };

/* A zeroed struct (temperature aside) is the plain chain in llama.cpp's
 * order: every sampler below turns itself off at 0. */
typedef struct sp_sampling {
    float temperature;
    int32_t top_k;
    float top_p, min_p;
    float repetition_penalty;
    int32_t repeat_last_n; /* -1: all of the history */
    float presence_penalty, frequency_penalty;
    const sprout_logit_bias *bias; /* added first */
    size_t n_bias;
    float typical_p;                 /* off unless 0 < typical_p < 1 */
    float top_n_sigma;               /* <= 0: off */
    float xtc_probability;           /* <= 0: off */
    float xtc_threshold;             /* > 0.5: off */
    int32_t mirostat;                /* 1, 2: Mirostat v1, v2 instead of the chain; 0: off */
    float mirostat_tau, mirostat_eta;
    float dry_multiplier;            /* 0: off */
    float dry_base;                  /* < 1: off */
    int32_t dry_allowed_length;
    int32_t dry_penalty_last_n;      /* -1: all of the history; 0: off */
    const char *const *dry_breakers; /* the sequence breakers (sp_sampler_dry_prepare saw the same) */
    size_t n_dry_breakers;
    uint8_t order[SP_MAX_STAGES];    /* sp_stage values; all SP_STAGE_END: llama.cpp's default order */
} sp_sampling;

typedef struct sp_candidate {
    int32_t id;
    float logit;
    float p;
} sp_candidate;

typedef struct sp_sampler {
    int32_t n_vocab;
    sp_candidate *cand;
    int32_t *counts;   /* per token, for penalties */
    /* each token's text, filled on first use by DRY (a sampler serves one model) */
    const char **piece;
    uint32_t *piece_len;
    uint64_t rng[4];
    int32_t n_last; /* candidates left by the last draw */
    /* the chain's working state: cand[0..n_cur) are the candidates left;
     * sorted: best first; identity: cand[i].id == i for every token (nothing
     * moved yet); p_valid: p holds a softmax over a superset of them */
    int32_t n_cur;
    bool sorted, identity, p_valid;
    float mu;           /* Mirostat's surprise bound, per generation (sp_sampler_reset) */
    void *scratch;      /* n_vocab entries for typical-p's ordering */
    /* DRY: per token, whether its text holds a sequence breaker (1) or ends
     * with the start of one (2); the longest repeat each token would extend
     * (+1, 0: none); the Z-array of the history's window */
    uint8_t *dry_kind;
    int32_t *dry_max;
    int32_t *dry_z;
    size_t dry_z_cap;
} sp_sampler;

sprout_status sp_sampler_init(sp_sampler *s, int32_t n_vocab, uint64_t seed);
void sp_sampler_free(sp_sampler *s);
void sp_sampler_seed(sp_sampler *s, uint64_t seed);

/* A new generation: seeds the generator and resets Mirostat's state (mu =
 * 2 tau). */
void sp_sampler_reset(sp_sampler *s, const sp_sampling *cfg, uint64_t seed);

/* DRY's view of the vocabulary for these sequence breakers: s->piece and
 * s->piece_len must be filled (n_vocab tokens' text). False when out of
 * memory. */
bool sp_sampler_dry_prepare(sp_sampler *s, const char *const *breakers, size_t n_breakers);

/* llama.cpp's --samplers text ("penalties;dry;top_k;...", names split by
 * ';' or ',', its other spellings "top-k", "temp", "typical" ... too) or
 * --sampling-seq letters ("edskypmxt") into order. NULL or "" gives the
 * default order. False with the reason in why. */
bool sp_sampler_parse_order(const char *text, uint8_t order[SP_MAX_STAGES], char *why, size_t why_size);

/* The next token. `banned` (n_banned ids) get -inf first (end-of-generation
 * tokens under ignore_eos or min_new_tokens); `history` is what the
 * penalties look at. The logits are not modified. */
int32_t sp_sample(sp_sampler *s, const float *logits, const sp_sampling *cfg, const int32_t *history, size_t n_history,
                  const int32_t *banned, size_t n_banned);
/* The same among the tokens of `allowed` only (bit t of allowed[t / 64];
 * NULL: all): constrained decoding's mask. It must allow some token. */
int32_t sp_sample_allowed(sp_sampler *s, const float *logits, const sp_sampling *cfg, const int32_t *history, size_t n_history,
                          const int32_t *banned, size_t n_banned, const uint64_t *allowed);

/* The candidates that survived the last sp_sample's filters (best first)
 * with their final probabilities; for tests and for diagnostics. */
int32_t sp_sampler_last_candidates(const sp_sampler *s, const sp_candidate **cand);

/* log-softmax of raw logits: the log-probability of `token` and the k best
 * (ids and values, best first, ties to the lower id). */
float sp_logprob_top(const float *logits, int32_t n_vocab, int32_t token, int32_t k, int32_t *top_ids, float *top_lp);

/* A uniform double in [0, 1) from the generator (exposed for tests). */
double sp_sampler_uniform(sp_sampler *s);

#endif
