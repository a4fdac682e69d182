/* Logits against a reference kept as a JSON array (llama.cpp's, in the
 * tests' data): the largest absolute difference and the relative RMS error,
 * the two figures every reference's tolerance names. */
#ifndef SPROUT_TESTS_LOGIT_REF_H
#define SPROUT_TESTS_LOGIT_REF_H

#include <jansson.h>
#include <math.h>
#include <stdint.h>

/* max |x[v] - ref[v]| over v < n; *rel = the RMS of the differences over
 * the RMS of ref (0 for a reference of zeros). */
static inline double logits_vs_ref(const float *x, const json_t *ref, int32_t n, double *rel) {
    double most = 0, err2 = 0, ref2 = 0;
    for (int32_t v = 0; v < n; v++) {
        const double r = json_number_value(json_array_get(ref, (size_t)v)), d = fabs(x[v] - r);
        most = fmax(most, d);
        err2 += d * d;
        ref2 += r * r;
    }
    *rel = ref2 > 0 ? sqrt(err2 / ref2) : 0;
    return most;
}

#endif
