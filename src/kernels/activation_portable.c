/* The FFN's activations, element by element: the reference the vector
 * versions are tested against. */
#include <math.h>

#include "kernels/kernels.h"

static inline float silu(float x) { return x / (1.f + expf(-x)); }

static inline float gelu(float x) { /* the tanh form, as the models were trained */
    return 0.5f * x * (1.f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
}

void sp_activation_portable(sp_activation kind, const float *x, const float *up, float *out, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        const float a = kind == SP_ACT_SILU ? silu(x[i]) : gelu(x[i]);
        out[i] = up ? a * up[i] : a;
    }
}
