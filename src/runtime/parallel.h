/* How the forward pass spreads work that is not a matmul over the threads:
 * per-token stages (norms, RoPE, activations, residuals) take a slice of
 * the batch's tokens each, so that no core idles while one walks the batch.
 * A token's numbers do not depend on the split. */
#ifndef SPROUT_RUNTIME_PARALLEL_H
#define SPROUT_RUNTIME_PARALLEL_H

#include <stdint.h>

#include "runtime/context.h"

/* Below this many multiply-adds (or floats touched) a job is done on the
 * calling thread: handing it out would cost more than it saves. */
enum { SP_PARALLEL_MIN_WORK = 1 << 15 };

typedef void (*sp_token_range_fn)(sp_context *ctx, const void *arg, int32_t t0, int32_t t1);

/* fn over tokens [0, n), on every thread when there is enough work
 * (floats touched per token). */
void sp_for_each_token(sp_context *ctx, int32_t n, int64_t work_per_token, sp_token_range_fn fn, const void *arg);

#endif
