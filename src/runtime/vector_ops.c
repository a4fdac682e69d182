#include "runtime/vector_ops.h"

#include <math.h>

void sp_rms_norm(float *out, const float *x, const float *w, int64_t n, float eps) {
    double ss = 0;
    for (int64_t i = 0; i < n; i++) ss += (double)x[i] * x[i];
    const float scale = 1.f / sqrtf((float)(ss / (double)n) + eps);
    for (int64_t i = 0; i < n; i++) out[i] = x[i] * scale * (w ? w[i] : 1.f);
}

static void layer_norm(float *out, const float *x, const float *w, const float *b, int64_t n, float eps) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < n; i++) mean += x[i];
    mean /= (double)n;
    for (int64_t i = 0; i < n; i++) var += ((double)x[i] - mean) * ((double)x[i] - mean);
    const float scale = 1.f / sqrtf((float)(var / (double)n) + eps);
    for (int64_t i = 0; i < n; i++) out[i] = ((float)(x[i] - mean)) * scale * (w ? w[i] : 1.f) + (b ? b[i] : 0.f);
}

void sp_norm(const sp_hparams *hp, float *out, const float *x, const float *w, const float *b) {
    if (hp->norm_kind == SP_NORM_RMS) sp_rms_norm(out, x, w, hp->n_embd, hp->norm_eps);
    else layer_norm(out, x, w, b, hp->n_embd, hp->norm_eps);
}

void sp_add_bias(float *y, const float *b, int64_t n_rows, int64_t width, int64_t stride) {
    if (!b) return;
    for (int64_t r = 0; r < n_rows; r++)
        for (int64_t i = 0; i < width; i++) y[r * stride + i] += b[i];
}

static float yarn_corr_dim(int n_rot, int ctx_orig, float beta, float base) {
    return (float)n_rot * logf((float)ctx_orig / (beta * 2.f * (float)M_PI)) / (2.f * logf(base));
}

/* scaled: with the magnitude factors (YaRN's, the attention factor); a
 * shift by a number of positions is the bare rotation. */
static void rope(const sp_hparams *hp, const float *factors, float *v, int n_heads, int head_dim, int32_t pos, float base,
                 float freq_scale, bool scaled) {
    if (hp->rope_kind == SP_ROPE_NONE) return; /* positions came with the embeddings */
    const int n_rot = hp->n_rot, half = n_rot / 2;
    float corr[2] = {0, 0};
    const float ext = hp->rope_scaling == SP_ROPE_SCALING_YARN ? hp->yarn_ext_factor : 0.f;
    if (ext != 0.f) {
        corr[0] = fmaxf(0.f, floorf(yarn_corr_dim(n_rot, hp->rope_ctx_orig, hp->yarn_beta_fast, base)));
        corr[1] = fminf((float)(n_rot - 1), ceilf(yarn_corr_dim(n_rot, hp->rope_ctx_orig, hp->yarn_beta_slow, base)));
    }
    for (int i = 0; i < half; i++) {
        float theta_extrap = (float)pos * powf(base, -2.f * (float)i / (float)n_rot);
        if (factors) theta_extrap /= factors[i];
        const float theta_interp = freq_scale * theta_extrap;
        float theta = theta_interp, mscale = hp->rope_attn_factor;
        if (ext != 0.f) { /* YaRN: blend interpolation and extrapolation per dimension */
            float y = ((float)i - corr[0]) / fmaxf(0.001f, corr[1] - corr[0]);
            float ramp = (1.f - fminf(1.f, fmaxf(0.f, y))) * ext;
            theta = theta_interp * (1.f - ramp) + theta_extrap * ramp;
            mscale *= 1.f + 0.1f * logf(1.f / freq_scale);
        }
        if (!scaled) mscale = 1.f;
        const float c = cosf(theta) * mscale, s = sinf(theta) * mscale;
        for (int hh = 0; hh < n_heads; hh++) {
            float *x = v + (int64_t)hh * head_dim;
            const int a = hp->rope_kind == SP_ROPE_NORM ? 2 * i : i, b = hp->rope_kind == SP_ROPE_NORM ? 2 * i + 1 : i + half;
            const float x0 = x[a], x1 = x[b];
            x[a] = x0 * c - x1 * s;
            x[b] = x0 * s + x1 * c;
        }
    }
}

void sp_rope(const sp_hparams *hp, const float *factors, float *v, int n_heads, int head_dim, int32_t pos, float base, float freq_scale) {
    rope(hp, factors, v, n_heads, head_dim, pos, base, freq_scale, true);
}

void sp_rope_shift(const sp_hparams *hp, const float *factors, float *v, int n_heads, int head_dim, int32_t delta, float base,
                   float freq_scale) {
    rope(hp, factors, v, n_heads, head_dim, delta, base, freq_scale, false);
}
