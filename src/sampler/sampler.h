/* Choosing the next token from logits: logit biases, penalties, then temperature, top-k,
 * top-p and min-p, then a draw from a seeded generator whose sequence is the
 * same on every machine. Temperature 0 is greedy (ties go to the lowest id).
 * Scratch space is allocated once per sampler. */
#ifndef SPROUT_SAMPLER_H
#define SPROUT_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sampler/json_constraint.h"
#include "sprout.h"

typedef struct sp_sampling {
    float temperature;
    int32_t top_k;
    float top_p, min_p;
    float repetition_penalty;
    int32_t repeat_last_n; /* -1: all of the history */
    float presence_penalty, frequency_penalty;
    const sprout_logit_bias *bias; /* added first */
    size_t n_bias;
} sp_sampling;

typedef struct sp_candidate {
    int32_t id;
    float logit;
    float p;
} sp_candidate;

/* JSON mode's masks of the last reader states seen (sequence.c's
 * json_banned): the ids a state bans, as a bitset, reused whenever the
 * output comes back to that state (a string's text keeps it in one). */
enum { SP_JSON_MEMO = 8 };
typedef struct sp_json_memo {
    sp_json_state state;
    uint64_t *bits; /* n_vocab bits; NULL: an empty entry */
    uint64_t last_used;
} sp_json_memo;

typedef struct sp_sampler {
    int32_t n_vocab;
    sp_candidate *cand;
    int32_t *counts;   /* per token, for penalties */
    int32_t *masked;   /* per token: room for a list of ids to ban (JSON mode's) */
    /* JSON mode's view of the vocabulary, filled on first use (a sampler serves one model) */
    const char **piece;
    uint32_t *piece_len;
    bool *plain_text;
    sp_json_memo json_memo[SP_JSON_MEMO];
    uint64_t json_clock;
    uint64_t rng[4];
    int32_t n_last; /* candidates left by the last draw */
} sp_sampler;

sprout_status sp_sampler_init(sp_sampler *s, int32_t n_vocab, uint64_t seed);
void sp_sampler_free(sp_sampler *s);
void sp_sampler_seed(sp_sampler *s, uint64_t seed);

/* The next token. `banned` (n_banned ids) get -inf first (end-of-generation
 * tokens under ignore_eos or min_new_tokens); `history` is what the
 * penalties look at. The logits are not modified. */
int32_t sp_sample(sp_sampler *s, const float *logits, const sp_sampling *cfg, const int32_t *history, size_t n_history,
                  const int32_t *banned, size_t n_banned);

/* The candidates that survived the last sp_sample's filters (best first)
 * with their final probabilities; for tests and for diagnostics. */
int32_t sp_sampler_last_candidates(const sp_sampler *s, const sp_candidate **cand);

/* log-softmax of raw logits: the log-probability of `token` and the k best
 * (ids and values, best first, ties to the lower id). */
float sp_logprob_top(const float *logits, int32_t n_vocab, int32_t token, int32_t k, int32_t *top_ids, float *top_lp);

/* A uniform double in [0, 1) from the generator (exposed for tests). */
double sp_sampler_uniform(sp_sampler *s);

#endif
