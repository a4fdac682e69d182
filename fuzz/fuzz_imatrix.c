/* libFuzzer target over the importance-matrix reader (llama-imatrix's GGUF
 * and legacy .dat): any bytes parse or fail with a message, never a crash,
 * and every value of a parsed matrix is readable, finite and not negative. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "quantize/imatrix.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    sp_imatrix *m = NULL;
    if (sp_imatrix_parse(data, size, "fuzz", &m) != SPROUT_OK) {
        if (m || !*sprout_last_error()) abort();
        return 0;
    }
    for (int64_t i = 0; i < sp_imatrix_count(m); i++) {
        int64_t n = 0;
        const float *v = sp_imatrix_find(m, sp_imatrix_name(m, i), &n);
        if (!v || n < 1) abort();
        for (int64_t k = 0; k < n; k++)
            if (!isfinite(v[k]) || v[k] < 0) abort();
    }
    sp_imatrix_free(m);
    return 0;
}
