/* Attention over the KV cache: each token's query heads against the cells
 * its sequence has (all of them for bidirectional models, a window on
 * sliding layers), split among the threads in jobs of a window of tokens,
 * a KV head and a run of its query heads. */
#ifndef SPROUT_RUNTIME_ATTENTION_H
#define SPROUT_RUNTIME_ATTENTION_H

#include "runtime/context.h"

/* Token t's k and v (rows of ctx->k, ctx->v) into its cache cell of layer il. */
void sp_attention_store_kv(sp_context *ctx, int il, int32_t t);

/* ctx->attn (and its blocks) for the batch's n tokens at layer il, from
 * ctx->q and the cache (which holds the batch's own k and v already). */
void sp_attention(sp_context *ctx, int il, const sp_batch_token *batch, int32_t n);

#endif
