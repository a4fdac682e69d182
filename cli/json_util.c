#include "json_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sprout.h"

json_t *json_string_lossy(const char *s, size_t n) {
    char *clean = malloc(n * 3 + 1); /* each bad byte may become 3 bytes */
    if (!clean) return NULL;
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        size_t len = sprout_utf8_char_len(s + i, n - i);
        if (len == 0) {
            memcpy(clean + o, "\xEF\xBF\xBD", 3);
            o += 3;
            i += 1;
        } else {
            memcpy(clean + o, s + i, len);
            o += len;
            i += len;
        }
    }
    json_t *v = json_stringn(clean, o);
    free(clean);
    return v;
}

json_t *json_float32(float f) {
    if (!isfinite(f)) return json_null(); /* JSON has no inf or nan */
    char tmp[32];
    for (int digits = 6; digits <= 9; digits++) {
        snprintf(tmp, sizeof tmp, "%.*g", digits, (double)f);
        if (strtof(tmp, NULL) == f) break;
    }
    return json_real(strtod(tmp, NULL));
}

int json_print(json_t *v) {
    if (!v) return 1;
    int rc = json_dumpf(v, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(16));
    fputc('\n', stdout);
    return rc == 0 ? 0 : 1;
}
