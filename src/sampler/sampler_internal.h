/* What the chain's files share: the candidates' bookkeeping (sampler.c)
 * and llama.cpp's other samplers (samplers_extra.c), each a stage over
 * s->cand[0..n_cur). */
#ifndef SPROUT_SAMPLER_INTERNAL_H
#define SPROUT_SAMPLER_INTERNAL_H

#include "sampler/sampler.h"

/* Higher logit first, equal logits in id order (qsort's comparison). */
int sp_by_logit(const void *a, const void *b);

/* Moves the k best candidates of c[0..n) to the front, in no order. */
void sp_select_top(sp_candidate *c, int32_t n, int32_t k);

/* Sorts the first `front` candidates best first (all n_cur when front is
 * n_cur: then s->sorted) and sets their p to the softmax over all n_cur;
 * the rest must rank below them. A fully sorted list loses its -inf tail
 * (one candidate always stays). */
void sp_chain_probs(sp_sampler *s, int32_t front);

/* A draw from cand[0..n_cur) by their p (which sum to 1). */
int32_t sp_chain_draw(sp_sampler *s);

void sp_stage_typical(sp_sampler *s, float p);
void sp_stage_top_n_sigma(sp_sampler *s, float n);
void sp_stage_xtc(sp_sampler *s, float probability, float threshold);
void sp_stage_dry(sp_sampler *s, const sp_sampling *cfg, const int32_t *history, size_t n_history);

/* Mirostat v1 or v2 over the candidates (temperature applied): truncates,
 * draws, updates s->mu; returns the token. */
int32_t sp_mirostat(sp_sampler *s, const sp_sampling *cfg);

#endif
