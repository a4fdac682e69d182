/* How many prompt tokens a scheduler step may carry while requests are
 * generating (chunked prefill with a token budget, as Sarathi-Serve and
 * vLLM do): a prompt chunk makes every generating request wait for the
 * whole pass, so its cost is held to about one decode-only pass. The cost
 * of a prompt token is learnt as the scheduler runs: running averages of
 * a decode-only pass and of what each prompt token adds to a pass. With
 * nothing generating a prompt goes at the full chunk. Engine thread only. */
#ifndef SPROUT_PIPELINE_PREFILL_BUDGET_H
#define SPROUT_PIPELINE_PREFILL_BUDGET_H

#include <stdint.h>

/* The fewest prompt tokens a step beside generating requests may carry:
 * they make progress, and a pass of a few tokens costs about what one of
 * one token does. */
#define SP_PREFILL_BUDGET_MIN 4

typedef struct sp_prefill_budget {
    int32_t fixed;    /* > 0: this many tokens whatever the timings; < 0: no cap (chunk per request) */
    int32_t chunk;    /* prompt tokens one request may add to a step */
    double decode_ms; /* a decode-only pass, averaged; 0: none seen yet */
    double token_ms;  /* what one prompt token adds to a pass, averaged; 0: not known yet */
} sp_prefill_budget;

void sp_prefill_budget_init(sp_prefill_budget *b, int32_t fixed, int32_t chunk);
/* The prompt tokens, all prefilling requests together, that the next step
 * may carry beside n_decode generated tokens; INT32_MAX: no cap. */
int32_t sp_prefill_budget_tokens(const sp_prefill_budget *b, int32_t n_decode);
/* A pass over n_decode generated and n_prompt prompt tokens took ms. */
void sp_prefill_budget_observe(sp_prefill_budget *b, int32_t n_decode, int32_t n_prompt, double ms);

#endif /* SPROUT_PIPELINE_PREFILL_BUDGET_H */
