/* The element-wise pieces of a layer, one token's row at a time: norms,
 * biases and rotary position embeddings. */
#ifndef SPROUT_RUNTIME_VECTOR_OPS_H
#define SPROUT_RUNTIME_VECTOR_OPS_H

#include <stdint.h>

#include "model/model.h"

/* out = x / rms(x) * w (w NULL: 1), n elements; out may be x. */
void sp_rms_norm(float *out, const float *x, const float *w, int64_t n, float eps);
/* The model's norm (RMS or layer norm, with its weight w and bias b) of
 * one n_embd row; out may be x. */
void sp_norm(const sp_hparams *hp, float *out, const float *x, const float *w, const float *b);
/* y[r][i] += b[i] for n_rows rows of `width` at `stride` (nothing where b is NULL). */
void sp_add_bias(float *y, const float *b, int64_t n_rows, int64_t width, int64_t stride);
/* Rotates the first n_rot dims of each of n_heads heads of size head_dim
 * for position pos (RoPE; YaRN where the model scales that way; per-dim
 * frequency divisors where `factors`). */
void sp_rope(const sp_hparams *hp, const float *factors, float *v, int n_heads, int head_dim, int32_t pos, float base, float freq_scale);
/* Turns vectors already rotated by sp_rope by `delta` more positions
 * (a context shift: a negative delta), without its magnitude factors,
 * which they carry already. */
void sp_rope_shift(const sp_hparams *hp, const float *factors, float *v, int n_heads, int head_dim, int32_t delta, float base,
                   float freq_scale);

#endif
