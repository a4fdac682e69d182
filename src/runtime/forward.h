/* forward(batch) -> logits. A batch is up to n_batch tokens, each with its
 * id, position, sequence and whether its logits are wanted; tokens of
 * different sequences at different positions mix freely. All buffers are
 * sized when the context is created: a forward pass allocates nothing. */
#ifndef SPROUT_RUNTIME_FORWARD_H
#define SPROUT_RUNTIME_FORWARD_H

#include "runtime/context.h"

/* Runs the batch; logits of the tokens that want them go to `logits`, one
 * row of n_vocab per such token, in batch order. On error the KV cache is
 * left without this batch's cells. */
sprout_status sp_forward(sp_context *ctx, const sp_batch_token *batch, int32_t n, float *logits);
/* The same, and the final-norm hidden states of the tokens marked embd go
 * to `embd`, one row of n_embd per such token, in batch order (either
 * output may be NULL). */
sprout_status sp_forward_out(sp_context *ctx, const sp_batch_token *batch, int32_t n, float *logits, float *embd);

#endif
