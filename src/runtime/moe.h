/* A layer's mixture of experts: the router picks each token's experts, the
 * tokens are grouped by expert, and each chosen expert runs as a dense FFN
 * over its tokens through sp_matmul (ggml's mul_mat_id). Experts no token
 * chose are never read. */
#ifndef SPROUT_RUNTIME_MOE_H
#define SPROUT_RUNTIME_MOE_H

#include "runtime/context.h"

/* ctx->ff_out[n][e] = the layer's mixture of experts (and shared expert)
 * of ctx->h, for the tokens ctx->rows describes. */
void sp_moe_ffn(sp_context *ctx, const sp_layer *ly, int32_t n);

/* Its two halves. Routing: ctx->moe.ids and .weights for tokens [0, n)
 * from ctx->h. Experts: ctx->ff_out[t] = the sum over token t's experts,
 * in the order of their index, of weight × expert(h[t]); each expert reads
 * its weights once for all its tokens. */
void sp_moe_route(sp_context *ctx, const sp_layer *ly, int32_t n);
void sp_moe_experts(sp_context *ctx, const sp_layer *ly, int32_t n);

#endif
