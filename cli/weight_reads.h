/* What one token reads of a model's weights, from its GGUF's tensors: the
 * figure `sprout info` shows as active parameters and `sprout bench` holds
 * decode's speed against (its memory roofline). */
#ifndef SPROUT_CLI_WEIGHT_READS_H
#define SPROUT_CLI_WEIGHT_READS_H

#include <stdbool.h>
#include <stdint.h>

#include "sprout.h"

typedef struct cli_weight_reads {
    int64_t params;          /* every tensor's elements */
    int64_t expert_params;   /* those of the experts' 3-D tensors (ffn_*_exps) */
    int64_t active_params;   /* params with the experts' share cut to expert_used_count of expert_count */
    uint64_t active_bytes;   /* the bytes a decoded token reads: see weight_reads.c */
    uint32_t n_expert, n_expert_used; /* 0 for a dense model */
    bool shared_expert;      /* ffn_*_shexp tensors: an expert every token uses */
} cli_weight_reads;

/* The counts of g's tensors under its architecture's expert counts. */
void cli_weight_reads_of(const sprout_gguf *g, cli_weight_reads *out);

#endif
