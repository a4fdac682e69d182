/* Go values as templates see them: truth, length, fmt's %v printing (with
 * the String() methods Ollama's template types have) and encoding/json's
 * Marshal, byte for byte. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "template/go_template.h"

enum { GT_MAX_PRINT_DEPTH = 64 };

void *gt_alloc(gt_heap *h, size_t size) {
    if (size > h->limit || h->used > h->limit - size) return NULL;
    void *p = sp_arena_alloc(&h->arena, size ? size : 1);
    if (p) h->used += size;
    return p;
}

gt_value gt_str(gt_heap *h, const char *s, size_t len) {
    char *p = gt_alloc(h, len + 1);
    if (!p) return gt_nil();
    if (len) memcpy(p, s, len);
    p[len] = '\0';
    return gt_str_ref(p, len);
}

gt_agg *gt_agg_new(gt_heap *h, size_t n, bool with_keys) {
    gt_agg *a = gt_alloc(h, sizeof *a);
    if (!a) return NULL;
    a->n = n;
    a->items = gt_alloc(h, (n ? n : 1) * sizeof *a->items);
    if (with_keys) a->keys = gt_alloc(h, (n ? n : 1) * sizeof *a->keys);
    return a->items && (!with_keys || a->keys) ? a : NULL;
}

void gt_map_sort(gt_agg *a) {
    /* insertion sort: maps here are tool arguments and schemas, a handful of keys */
    for (size_t i = 1; i < a->n; i++) {
        const char *k = a->keys[i];
        gt_value v = a->items[i];
        size_t j = i;
        for (; j > 0 && strcmp(a->keys[j - 1], k) > 0; j--) {
            a->keys[j] = a->keys[j - 1];
            a->items[j] = a->items[j - 1];
        }
        a->keys[j] = k;
        a->items[j] = v;
    }
}

const gt_value *gt_map_get(const gt_agg *a, const char *key, size_t len) {
    for (size_t i = 0; i < a->n; i++)
        if (strlen(a->keys[i]) == len && !memcmp(a->keys[i], key, len)) return &a->items[i];
    return NULL;
}

const gt_value *gt_struct_get(const gt_agg *a, const char *name) {
    for (size_t i = 0; i < a->n; i++)
        if (!strcmp(a->fields[i].name, name)) return &a->items[i];
    return NULL;
}

bool gt_truth(gt_value v) {
    switch (v.kind) {
    case GT_NIL: return false;
    case GT_BOOL: return v.u.b;
    case GT_INT: return v.u.i != 0;
    case GT_FLOAT: return v.u.f != 0;
    case GT_STRING: return v.u.str.len > 0;
    case GT_LIST:
    case GT_MAP: return v.u.agg->n > 0;
    case GT_STRUCT: return true;
    }
    return false;
}

int64_t gt_len(gt_value v) {
    if (v.kind == GT_STRING) return (int64_t)v.u.str.len;
    if (v.kind == GT_LIST || v.kind == GT_MAP) return (int64_t)v.u.agg->n;
    return -1;
}

const char *gt_type_name(gt_value v) {
    switch (v.kind) {
    case GT_NIL: return "<nil>";
    case GT_BOOL: return "bool";
    case GT_INT: return "int";
    case GT_FLOAT: return "float64";
    case GT_STRING: return "string";
    case GT_LIST:
    case GT_MAP:
    case GT_STRUCT: return v.u.agg->type_name ? v.u.agg->type_name : v.kind == GT_LIST ? "[]interface {}" : "map[string]interface {}";
    }
    return "?";
}

/* --- floats ------------------------------------------------------------------------- */

/* The shortest decimal digits that read back as f (as strconv finds them):
 * digits without a point, and the exponent of the first digit. */
static int shortest_digits(double f, char digits[24], int *exp10) {
    char buf[40];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*e", prec - 1, f);
        if (strtod(buf, NULL) == f || prec == 17) break;
    }
    int n = 0;
    const char *p = buf;
    if (*p == '-') p++;
    for (; *p && *p != 'e'; p++)
        if (*p >= '0' && *p <= '9') digits[n++] = *p;
    while (n > 1 && digits[n - 1] == '0') n--;
    digits[n] = '\0';
    *exp10 = *p == 'e' ? atoi(p + 1) : 0;
    return n;
}

static void put_exp(jbuf *b, int e) {
    char buf[16];
    snprintf(buf, sizeof buf, "e%c%02d", e < 0 ? '-' : '+', e < 0 ? -e : e);
    jbuf_puts(b, buf);
}

void gt_format_float(jbuf *b, double f, char fmt) {
    if (isnan(f)) return jbuf_puts(b, "NaN");
    if (isinf(f)) return jbuf_puts(b, f > 0 ? "+Inf" : "-Inf");
    if (signbit(f)) jbuf_putc(b, '-'), f = -f;
    if (f == 0) {
        jbuf_puts(b, fmt == 'e' ? "0e+00" : "0");
        return;
    }
    char d[24];
    int e, n = shortest_digits(f, d, &e);
    if (fmt == 'g') fmt = (e < -4 || e >= 6) ? 'e' : 'f'; /* strconv: shortest 'g' decides with precision 6 */
    if (fmt == 'e') {
        jbuf_putc(b, d[0]);
        if (n > 1) jbuf_putc(b, '.'), jbuf_put(b, d + 1, (size_t)n - 1);
        put_exp(b, e);
        return;
    }
    if (e < 0) {
        jbuf_puts(b, "0.");
        for (int i = -1; i > e; i--) jbuf_putc(b, '0');
        jbuf_put(b, d, (size_t)n);
    } else if (e + 1 >= n) {
        jbuf_put(b, d, (size_t)n);
        for (int i = n; i <= e; i++) jbuf_putc(b, '0');
    } else {
        jbuf_put(b, d, (size_t)e + 1);
        jbuf_putc(b, '.');
        jbuf_put(b, d + e + 1, (size_t)(n - e - 1));
    }
}

/* fmt's %v of a float64 is strconv's shortest 'g'. */
void gt_format_float_v(jbuf *b, double f) { gt_format_float(b, f, 'g'); }

/* encoding/json's float64: 'f' unless tiny or huge, then 'e' with "e-07" cut to "e-7". */
static void json_float(jbuf *b, double f) {
    double a = fabs(f);
    if (a != 0 && (a < 1e-6 || a >= 1e21)) {
        size_t start = b->len;
        gt_format_float(b, f, 'e');
        if (!b->oom && b->len - start >= 4 && b->data[b->len - 4] == 'e' && b->data[b->len - 3] == '-' &&
            b->data[b->len - 2] == '0') {
            b->data[b->len - 2] = b->data[b->len - 1];
            b->data[--b->len] = '\0';
        }
        return;
    }
    gt_format_float(b, f, 'f');
}

/* --- fmt's %v ------------------------------------------------------------------------ */

static void write_int(jbuf *b, int64_t i) {
    char buf[32];
    snprintf(buf, sizeof buf, "%lld", (long long)i);
    jbuf_puts(b, buf);
}

/* api.PropertyType's String(): one type alone, several as a []string. */
static void write_prop_type(jbuf *b, const gt_agg *a, int depth) {
    if (a->n == 1 && a->items[0].kind == GT_STRING) {
        jbuf_put(b, a->items[0].u.str.s, a->items[0].u.str.len);
        return;
    }
    if (a->n == 0) return;
    jbuf_putc(b, '[');
    for (size_t i = 0; i < a->n; i++) {
        if (i) jbuf_putc(b, ' ');
        gt_write_value(b, a->items[i], depth + 1);
    }
    jbuf_putc(b, ']');
}

void gt_write_value(jbuf *b, gt_value v, int depth) {
    if (depth > GT_MAX_PRINT_DEPTH) return jbuf_puts(b, "...");
    if (v.flags & GT_STRINGER) {
        if (v.kind == GT_MAP && (v.flags & GT_NIL_AGG)) return jbuf_puts(b, "{}"); /* templateArgs' String() on nil */
        return gt_write_json(b, v, 0);
    }
    switch (v.kind) {
    case GT_NIL: jbuf_puts(b, depth ? "<nil>" : "<no value>"); return;
    case GT_BOOL: jbuf_puts(b, v.u.b ? "true" : "false"); return;
    case GT_INT: write_int(b, v.u.i); return;
    case GT_FLOAT: gt_format_float_v(b, v.u.f); return;
    case GT_STRING: jbuf_put(b, v.u.str.s, v.u.str.len); return;
    case GT_LIST:
        if (v.flags & GT_PROP_TYPE) return write_prop_type(b, v.u.agg, depth);
        jbuf_putc(b, '[');
        for (size_t i = 0; i < v.u.agg->n; i++) {
            if (i) jbuf_putc(b, ' ');
            gt_write_value(b, v.u.agg->items[i], depth + 1);
        }
        jbuf_putc(b, ']');
        return;
    case GT_MAP:
        jbuf_puts(b, "map[");
        for (size_t i = 0; i < v.u.agg->n; i++) {
            if (i) jbuf_putc(b, ' ');
            jbuf_puts(b, v.u.agg->keys[i]);
            jbuf_putc(b, ':');
            gt_write_value(b, v.u.agg->items[i], depth + 1);
        }
        jbuf_putc(b, ']');
        return;
    case GT_STRUCT:
        /* a pointer to a struct prints as &{...} at the top, as its address below */
        if (depth == 0 && v.u.agg->type_name && v.u.agg->type_name[0] == '*') jbuf_putc(b, '&');
        jbuf_putc(b, '{');
        for (size_t i = 0; i < v.u.agg->n; i++) {
            if (i) jbuf_putc(b, ' ');
            gt_write_value(b, v.u.agg->items[i], depth + 1);
        }
        jbuf_putc(b, '}');
        return;
    }
}

/* --- encoding/json --------------------------------------------------------------------- */

static size_t utf8_valid_len(const unsigned char *s, size_t n) {
    unsigned c = s[0];
    size_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
    if (c >= 0xF5 || len == 0 || len > n) return 0;
    for (size_t k = 1; k < len; k++)
        if ((s[k] & 0xC0) != 0x80) return 0;
    if (len == 3 && ((c == 0xE0 && s[1] < 0xA0) || (c == 0xED && s[1] >= 0xA0))) return 0;
    if (len == 4 && ((c == 0xF0 && s[1] < 0x90) || (c == 0xF4 && s[1] >= 0x90))) return 0;
    return len;
}

void gt_write_json_string(jbuf *b, const char *str, size_t len) {
    const unsigned char *s = (const unsigned char *)str;
    static const char hex[] = "0123456789abcdef";
    jbuf_putc(b, '"');
    for (size_t i = 0; i < len;) {
        unsigned c = s[i];
        if (c < 0x80) {
            char esc[8] = {0};
            switch (c) {
            case '"': strcpy(esc, "\\\""); break;
            case '\\': strcpy(esc, "\\\\"); break;
            case '\n': strcpy(esc, "\\n"); break;
            case '\r': strcpy(esc, "\\r"); break;
            case '\t': strcpy(esc, "\\t"); break;
            case '\b': strcpy(esc, "\\b"); break;
            case '\f': strcpy(esc, "\\f"); break;
            default:
                /* Go's HTML-safe encoding: <, > and & as \u00XX, like control characters */
                if (c < 0x20 || c == '<' || c == '>' || c == '&') {
                    esc[0] = '\\', esc[1] = 'u', esc[2] = '0', esc[3] = '0', esc[4] = hex[c >> 4], esc[5] = hex[c & 15];
                }
            }
            if (esc[0]) jbuf_puts(b, esc);
            else jbuf_putc(b, (char)c);
            i++;
            continue;
        }
        size_t n = utf8_valid_len(s + i, len - i);
        if (!n) {
            jbuf_puts(b, "\\ufffd");
            i++;
        } else if (n == 3 && s[i] == 0xE2 && s[i + 1] == 0x80 && (s[i + 2] == 0xA8 || s[i + 2] == 0xA9)) {
            jbuf_puts(b, s[i + 2] == 0xA8 ? "\\u2028" : "\\u2029");
            i += 3;
        } else {
            jbuf_put(b, str + i, n);
            i += n;
        }
    }
    jbuf_putc(b, '"');
}

static bool json_empty(gt_value v) {
    switch (v.kind) {
    case GT_NIL: return true;
    case GT_BOOL: return !v.u.b;
    case GT_INT: return v.u.i == 0;
    case GT_FLOAT: return v.u.f == 0;
    case GT_STRING: return v.u.str.len == 0;
    case GT_LIST:
    case GT_MAP: return v.u.agg->n == 0;
    case GT_STRUCT: return false;
    }
    return true;
}

void gt_write_json(jbuf *b, gt_value v, int depth) {
    if (depth > GT_MAX_PRINT_DEPTH) return jbuf_puts(b, "null");
    switch (v.kind) {
    case GT_NIL: jbuf_puts(b, "null"); return;
    case GT_BOOL: jbuf_puts(b, v.u.b ? "true" : "false"); return;
    case GT_INT: write_int(b, v.u.i); return;
    case GT_FLOAT: json_float(b, v.u.f); return;
    case GT_STRING: gt_write_json_string(b, v.u.str.s, v.u.str.len); return;
    case GT_LIST:
        if (v.flags & GT_NIL_AGG) return jbuf_puts(b, "null");
        if ((v.flags & GT_PROP_TYPE) && v.u.agg->n == 1) return gt_write_json(b, v.u.agg->items[0], depth + 1);
        jbuf_putc(b, '[');
        for (size_t i = 0; i < v.u.agg->n; i++) {
            if (i) jbuf_putc(b, ',');
            gt_write_json(b, v.u.agg->items[i], depth + 1);
        }
        jbuf_putc(b, ']');
        return;
    case GT_MAP:
        if (v.flags & GT_NIL_AGG) return jbuf_puts(b, "null");
        jbuf_putc(b, '{');
        for (size_t i = 0; i < v.u.agg->n; i++) {
            if (i) jbuf_putc(b, ',');
            gt_write_json_string(b, v.u.agg->keys[i], strlen(v.u.agg->keys[i]));
            jbuf_putc(b, ':');
            gt_write_json(b, v.u.agg->items[i], depth + 1);
        }
        jbuf_putc(b, '}');
        return;
    case GT_STRUCT: {
        jbuf_putc(b, '{');
        bool first = true;
        for (size_t i = 0; i < v.u.agg->n; i++) {
            const gt_field *f = &v.u.agg->fields[i];
            if (f->omitempty && json_empty(v.u.agg->items[i])) continue;
            if (!first) jbuf_putc(b, ',');
            first = false;
            gt_write_json_string(b, f->json_name, strlen(f->json_name));
            jbuf_putc(b, ':');
            gt_write_json(b, v.u.agg->items[i], depth + 1);
        }
        jbuf_putc(b, '}');
        return;
    }
    }
}
