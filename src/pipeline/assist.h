/* Assisted generation's proposals: from a draft pipeline (its greedy
 * continuation, while it is confident enough) or by prompt lookup
 * (lookup.h). The generation loop (generate.c) verifies them. */
#ifndef SPROUT_PIPELINE_ASSIST_H
#define SPROUT_PIPELINE_ASSIST_H

#include "pipeline/pipeline_internal.h"

/* Makes room for verifying up to cfg->num_assistant_tokens proposals and
 * starts the n-gram index afresh; the number of proposals a pass may
 * verify (0: plain decoding) in *cap. */
sprout_status sp_assist_begin(sprout_pipeline *p, const sprout_generation_config *cfg, int32_t *cap);

/* Up to max tokens that may follow text[0, n) into p->proposal; fewer than
 * cfg->min_assistant_tokens count as none. */
sprout_status sp_assist_propose(sprout_pipeline *p, const sprout_generation_config *cfg, const int32_t *text, int32_t n, int32_t max,
                                int32_t *n_proposed);

/* How many proposals the next pass asks for (at most cap; 0 or less: none,
 * resting), after a pass that asked for `budget`, verified `proposed` and
 * kept `kept`: twice as many after a pass that kept them all, one more
 * than were kept after one that kept some, one after one that kept none,
 * and after a single one missed a rest of SP_ASSIST_REST passes without
 * any, then a single one again: text the
 * proposals do not foresee costs few wasted rows (where a pass of several
 * tokens costs several single ones, int8 weights on few cores, a rejected
 * proposal costs a token's time), and text they do goes in long runs. */
enum { SP_ASSIST_REST = 4 };
int32_t sp_assist_next_budget(int32_t budget, int32_t cap, int32_t proposed, int32_t kept);
/* The pipeline's budget after a pass (sp_assist_next_budget). */
void sp_assist_done(sprout_pipeline *p, int32_t proposed, int32_t kept);

/* Whether a draft model's vocabulary is the target's, as llama.cpp checks
 * it; SPROUT_ERR_UNSUPPORTED naming the difference. */
sprout_status sp_vocab_compatible(const sprout_model *target, const sprout_model *draft);

/* Prompt lookup's longest n-gram: the config's, else 3. */
int32_t sp_assist_ngram(const sprout_generation_config *cfg);

/* The draft's greedy token after a row of its logits (n_vocab of them) in
 * *best; whether it may be proposed: inside the target's vocabulary and,
 * with cfg->assistant_confidence_threshold > 0, given at least that
 * probability. */
bool sp_draft_confident(const sprout_generation_config *cfg, const float *logits, int32_t n_vocab, int32_t n_vocab_target, int32_t *best);

#endif
