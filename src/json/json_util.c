#include "json/json_util.h"

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

static json_t *scalar_json(const sprout_gguf_value *v) {
    switch (sprout_gguf_value_type(v)) {
    case SPROUT_GGUF_BOOL: {
        bool b = false;
        sprout_gguf_value_bool(v, &b);
        return json_boolean(b);
    }
    case SPROUT_GGUF_FLOAT32: {
        double d = 0;
        sprout_gguf_value_f64(v, &d);
        return json_float32((float)d);
    }
    case SPROUT_GGUF_FLOAT64: {
        double d = 0;
        sprout_gguf_value_f64(v, &d);
        return json_real(d);
    }
    case SPROUT_GGUF_STRING: {
        const char *s;
        size_t n;
        sprout_gguf_value_str(v, &s, &n);
        return json_string_lossy(s, n);
    }
    case SPROUT_GGUF_UINT64: {
        uint64_t u = 0;
        sprout_gguf_value_u64(v, &u);
        return u > (uint64_t)INT64_MAX ? json_real((double)u) : json_integer((json_int_t)u);
    }
    default: {
        int64_t i = 0;
        sprout_gguf_value_i64(v, &i);
        return json_integer((json_int_t)i);
    }
    }
}

static json_t *array_elem_json(const sprout_gguf_value *a, uint64_t i, uint64_t limit, bool described);

json_t *json_gguf_value(const sprout_gguf_value *v, uint64_t limit, bool described) {
    if (sprout_gguf_value_type(v) != SPROUT_GGUF_ARRAY) return scalar_json(v);
    uint64_t n = sprout_gguf_array_len(v);
    json_t *values = json_array();
    for (uint64_t i = 0; i < n && i < limit; i++) json_array_append_new(values, array_elem_json(v, i, limit, described));
    if (!described) return values;
    return json_pack("{s:s, s:s, s:I, s:o, s:b}", "type", "array", "element_type",
                     sprout_gguf_type_name(sprout_gguf_array_type(v)), "count", (json_int_t)n, "values", values,
                     "truncated", n > limit);
}

static json_t *array_elem_json(const sprout_gguf_value *a, uint64_t i, uint64_t limit, bool described) {
    switch (sprout_gguf_array_type(a)) {
    case SPROUT_GGUF_ARRAY: return json_gguf_value(sprout_gguf_array_elem(a, i), limit, described);
    case SPROUT_GGUF_STRING: {
        const char *s = "";
        size_t len = 0;
        sprout_gguf_array_str(a, i, &s, &len);
        return json_string_lossy(s, len);
    }
    case SPROUT_GGUF_BOOL: {
        bool b = false;
        sprout_gguf_array_bool(a, i, &b);
        return json_boolean(b);
    }
    case SPROUT_GGUF_FLOAT32: {
        double d = 0;
        sprout_gguf_array_f64(a, i, &d);
        return json_float32((float)d);
    }
    case SPROUT_GGUF_FLOAT64: {
        double d = 0;
        sprout_gguf_array_f64(a, i, &d);
        return json_real(d);
    }
    case SPROUT_GGUF_UINT64: {
        uint64_t u = 0;
        sprout_gguf_array_u64(a, i, &u);
        return u > (uint64_t)INT64_MAX ? json_real((double)u) : json_integer((json_int_t)u);
    }
    default: {
        int64_t x = 0;
        sprout_gguf_array_i64(a, i, &x);
        return json_integer((json_int_t)x);
    }
    }
}

