/* The adapters' low-rank term of a projection, added after W x by
 * sp_matmul: y[t] += s * B (A x[t]) for each adapter of row t's set that
 * carries a pair for w (model/lora.h). */
#ifndef SPROUT_RUNTIME_LORA_APPLY_H
#define SPROUT_RUNTIME_LORA_APPLY_H

#include "runtime/context.h"

/* Rows [0, n) of x (w->n_in wide) and y (w->n_out wide); nothing where no
 * row carries an adapter for w. */
void sp_lora_apply(const sp_context *ctx, const sp_weight *w, const float *x, float *y, int32_t n);

/* One weight's terms of several (the parts of sp_matmul_parts). */
typedef struct sp_lora_target {
    const sp_weight *w;
    const float *x;
    float *y;
} sp_lora_target;

/* sp_lora_apply for each target, the same numbers: where each target's
 * step is small enough to run on one thread (SP_LORA_PARALLEL_MIN_WORK)
 * and several have adapters, the targets spread over the threads in one
 * run of the pool (a decode step's q, k and v; gate and up), where one
 * after another they all ran on the calling thread. */
void sp_lora_apply_each(const sp_context *ctx, const sp_lora_target *targets, int n_targets, int32_t n);

/* The same for expert `expert` of layer il's `kind` tensor (w its matrix,
 * sp_expert's view), over the n rows that chose it, whose batch entries
 * (their adapter sets) are `rows`: what sp_matmul's call cannot find by
 * w's address (sp_moe_experts calls it after each expert matmul). */
void sp_lora_apply_expert(const sp_context *ctx, const sp_batch_token *rows, int32_t il, sp_lora_experts kind, int32_t expert,
                          const sp_weight *w, const float *x, float *y, int32_t n);

#endif
