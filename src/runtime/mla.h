/* Multi-head latent attention (DeepSeek-V2/V3, llama.cpp's deepseek2) in
 * its absorbed form: the cache holds, per token and layer, one row
 * [latent (n_lora_kv) | k_pe (n_rot)], and the query heads are brought
 * into that space, so attention is multi-query attention over those rows
 * with the latent as the values (runtime/attention.c); the output comes
 * back from the latent through each head's v_b. */
#ifndef SPROUT_RUNTIME_MLA_H
#define SPROUT_RUNTIME_MLA_H

#include "runtime/context.h"

/* ctx->q[n][n_head * head_dim_k] = the absorbed queries (each head
 * [q_nope k_b | rope(q_pe)]) of ctx->h, and every token's cache row
 * [norm(latent) | rope(k_pe)] written, for layer il. */
void sp_mla_inputs(sp_context *ctx, const sp_layer *ly, const sp_batch_token *batch, int il, int32_t n);

/* ctx->attn[n][n_head * head_dim_v_mla] (and its blocks) = each head's
 * latent output (ctx->mla.latent) through its v_b: the output
 * projection's input. */
void sp_mla_values(sp_context *ctx, const sp_layer *ly, int32_t n);

#endif
