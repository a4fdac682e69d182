/* What a generation or an embedding hands back (result.c: its accessors). */
#ifndef SPROUT_PIPELINE_RESULT_H
#define SPROUT_PIPELINE_RESULT_H

#include <stddef.h>
#include <stdint.h>

#include "sprout.h"

struct sprout_result {
    char *text;
    size_t text_len;
    int32_t *tokens;
    size_t n_tokens;
    int32_t *prompt_tokens;
    size_t n_prompt_tokens;
    sprout_finish_reason finish;
    int32_t top_k;          /* logprobs per token */
    float *logprob;         /* n_tokens */
    int32_t *top_ids;       /* n_tokens * top_k */
    float *top_logprobs;
    float *embedding;       /* embedding requests: n_embedding floats */
    size_t n_embedding;
    sprout_perf_metrics metrics;
};

#endif
