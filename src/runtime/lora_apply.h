/* The adapters' low-rank term of a projection, added after W x by
 * sp_matmul: y[t] += s * B (A x[t]) for each adapter of row t's set that
 * carries a pair for w (model/lora.h). */
#ifndef SPROUT_RUNTIME_LORA_APPLY_H
#define SPROUT_RUNTIME_LORA_APPLY_H

#include <stdatomic.h>

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

/* The terms of a decode batch's projections computed inside their
 * matmul's run of the pool (sp_matmul_parts), not in runs of their own
 * after it: each thread first takes units of A x (a target's adapter slot
 * over a run of tokens with the same pair) as they come, then adds the B
 * terms of the rows it computed right after them: no run of the pool of
 * their own per projection group. The same operations in the same order
 * per output as sp_lora_apply's, so the same bits. */
enum { SP_LORA_FUSED_TARGETS = 16, SP_LORA_FUSED_LANES = 32, SP_LORA_FUSED_UNITS = 128, SP_LORA_FUSED_AX = 8192 };

typedef struct sp_lora_fused_lane {
    int target;
    size_t u;
    int64_t stride, ax_at; /* its tokens' A x, stride apart from ax_at */
} sp_lora_fused_lane;

typedef struct sp_lora_fused_unit {
    int lane;
    int32_t t0, t1, r0, r1; /* tokens [t0, t1) (one pair), rows [r0, r1) of its A */
} sp_lora_fused_unit;

typedef struct sp_lora_fused {
    const sp_context *ctx;
    sp_lora_target target[SP_LORA_FUSED_TARGETS];
    int32_t n[SP_LORA_FUSED_TARGETS];     /* the target's rows [0, n) */
    int64_t index[SP_LORA_FUSED_TARGETS]; /* its pairs' index; -1: no terms */
    int first_lane[SP_LORA_FUSED_TARGETS + 1];
    sp_lora_fused_lane lane[SP_LORA_FUSED_LANES]; /* a target's adapter slots, in order */
    sp_lora_fused_unit unit[SP_LORA_FUSED_UNITS];
    int n_units;
    atomic_int next_unit, units_done;
    float ax[SP_LORA_FUSED_AX];
} sp_lora_fused;

/* Plans the terms of targets [0, n_targets) over their n[i] rows (a
 * target with a NULL weight has none); false where no row has an adapter
 * or the plan cannot hold them (the caller then applies them after, as
 * sp_lora_apply_each). */
bool sp_lora_fused_plan(const sp_context *ctx, const sp_lora_target *targets, const int32_t *n, int n_targets, sp_lora_fused *f);
/* Thread ith's share of the A x units (every thread of the run calls it first). */
void sp_lora_fused_ax(sp_lora_fused *f, int ith);
/* y rows [o0, o1) of target i += their terms (once W x is there), after
 * waiting for every A x. */
void sp_lora_fused_terms(sp_lora_fused *f, int i, int64_t o0, int64_t o1);

/* The same for expert `expert` of layer il's `kind` tensor (w its matrix,
 * sp_expert's view), over the n rows that chose it, whose batch entries
 * (their adapter sets) are `rows`: what sp_matmul's call cannot find by
 * w's address (sp_moe_experts calls it after each expert matmul). */
void sp_lora_apply_expert(const sp_context *ctx, const sp_batch_token *rows, int32_t il, sp_lora_experts kind, int32_t expert,
                          const sp_weight *w, const float *x, float *y, int32_t n);

#endif
