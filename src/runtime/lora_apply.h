/* The adapters' low-rank term of a projection, added after W x by
 * sp_matmul: y[t] += s * B (A x[t]) for each adapter of row t's set that
 * carries a pair for w (model/lora.h). */
#ifndef SPROUT_RUNTIME_LORA_APPLY_H
#define SPROUT_RUNTIME_LORA_APPLY_H

#include "runtime/context.h"

/* Rows [0, n) of x (w->n_in wide) and y (w->n_out wide); nothing where no
 * row carries an adapter for w. */
void sp_lora_apply(const sp_context *ctx, const sp_weight *w, const float *x, float *y, int32_t n);

#endif
