/* DecodedResults through the C API: the text of one generation and its
 * metrics, owned by the result (independent of the pipeline). */
#include <stdlib.h>
#include <string.h>

#include "ovc_internal.h"

ov_status_e ovc_results_make(const char *text, size_t len, const struct ov_genai_perf_metrics_opaque *metrics,
                             ov_genai_decoded_results **out) {
    ov_genai_decoded_results *r = calloc(1, sizeof *r);
    char *copy = malloc(len + 1);
    if (!r || !copy) {
        free(r);
        free(copy);
        return ovc_fail(NOT_ALLOCATED, "out of memory");
    }
    if (len) memcpy(copy, text, len);
    copy[len] = '\0';
    r->text = copy;
    r->len = len;
    if (metrics) r->metrics = *metrics;
    *out = r;
    return OK;
}

ov_status_e ov_genai_decoded_results_create(ov_genai_decoded_results **results) {
    if (!results) return ovc_fail(INVALID_C_PARAM, "decoded_results_create: NULL output");
    return ovc_results_make("", 0, NULL, results);
}

void ov_genai_decoded_results_free(ov_genai_decoded_results *results) {
    if (!results) return;
    free(results->text);
    free(results);
}

ov_status_e ov_genai_decoded_results_get_perf_metrics(const ov_genai_decoded_results *results, ov_genai_perf_metrics **metrics) {
    if (!results || !metrics) return ovc_fail(INVALID_C_PARAM, "get_perf_metrics: NULL results or output");
    ov_genai_perf_metrics *m = malloc(sizeof *m);
    if (!m) return ovc_fail(NOT_ALLOCATED, "out of memory");
    *m = results->metrics;
    *metrics = m;
    return OK;
}

void ov_genai_decoded_results_perf_metrics_free(ov_genai_perf_metrics *metrics) { free(metrics); }

ov_status_e ov_genai_decoded_results_get_string(const ov_genai_decoded_results *results, char *output, size_t *output_size) {
    if (!results || !output_size) return ovc_fail(INVALID_C_PARAM, "get_string: NULL results or size");
    if (ovc_copy_out(results->text, results->len, output, output_size) == OVC_COPY_SHORT)
        return ovc_fail(OUT_OF_BOUNDS, "get_string: the buffer holds less than the %zu bytes needed", *output_size);
    return OK;
}
