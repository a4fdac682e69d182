#include "template/value.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "core/utf8.h"

void *jv_alloc(jv_heap *h, size_t size) {
    if (h->exhausted || size > h->limit - h->used) {
        h->exhausted = true;
        return NULL;
    }
    void *p = sp_arena_alloc(&h->arena, size);
    if (!p) h->exhausted = h->out_of_memory = true;
    else h->used += size;
    return p;
}

jv jv_str(jv_heap *h, const char *data, size_t len) {
    jstr *s = jv_alloc(h, sizeof *s + len + 1);
    if (!s) return jv_undefined(NULL);
    s->len = len;
    if (len) memcpy(s->data, data, len);
    s->data[len] = 0;
    return (jv){.type = JV_STR, .u.s = s};
}

jv jv_cstr(jv_heap *h, const char *s) { return jv_str(h, s, strlen(s)); }

jv jv_list(jv_heap *h, const jv *items, size_t n, bool tuple) {
    jlist *l = jv_alloc(h, sizeof *l + n * sizeof(jv));
    if (!l) return jv_undefined(NULL);
    l->n = n;
    if (items && n) memcpy(l->items, items, n * sizeof(jv));
    return (jv){.type = tuple ? JV_TUPLE : JV_LIST, .u.l = l};
}

jv jv_dict(jv_heap *h, size_t cap_hint) {
    jdict *d = jv_alloc(h, sizeof *d);
    if (!d) return jv_undefined(NULL);
    d->cap = cap_hint ? cap_hint : 4;
    d->keys = jv_alloc(h, d->cap * sizeof(jv));
    d->values = jv_alloc(h, d->cap * sizeof(jv));
    if (!d->keys || !d->values) return jv_undefined(NULL);
    return (jv){.type = JV_DICT, .u.d = d};
}

static bool key_is(jv k, const char *key, size_t len) {
    return k.type == JV_STR && k.u.s->len == len && memcmp(k.u.s->data, key, len) == 0;
}

const jv *jv_dict_get(const jdict *d, const char *key, size_t len) {
    for (size_t i = 0; i < d->n; i++)
        if (key_is(d->keys[i], key, len)) return &d->values[i];
    return NULL;
}

const jv *jv_dict_get_value(const jdict *d, jv key) {
    if (key.type == JV_STR) return jv_dict_get(d, key.u.s->data, key.u.s->len);
    for (size_t i = 0; i < d->n; i++)
        if (jv_equal(d->keys[i], key)) return &d->values[i];
    return NULL;
}

bool jv_dict_set(jv_heap *h, jdict *d, jv key, jv value) {
    for (size_t i = 0; i < d->n; i++) {
        if (jv_equal(d->keys[i], key)) {
            d->values[i] = value;
            return true;
        }
    }
    if (d->n == d->cap) {
        size_t cap = d->cap * 2;
        jv *keys = jv_alloc(h, cap * sizeof(jv)), *values = jv_alloc(h, cap * sizeof(jv));
        if (!keys || !values) return false;
        memcpy(keys, d->keys, d->n * sizeof(jv));
        memcpy(values, d->values, d->n * sizeof(jv));
        d->keys = keys;
        d->values = values;
        d->cap = cap;
    }
    d->keys[d->n] = key;
    d->values[d->n] = value;
    d->n++;
    return true;
}

bool jv_truthy(jv v) {
    switch (v.type) {
    case JV_UNDEFINED:
    case JV_NONE: return false;
    case JV_BOOL: return v.u.b;
    case JV_INT: return v.u.i != 0;
    case JV_FLOAT: return v.u.f != 0.0;
    case JV_STR: return v.u.s->len > 0;
    case JV_LIST:
    case JV_TUPLE: return v.u.l->n > 0;
    case JV_DICT: return v.u.d->n > 0;
    default: return true;
    }
}

static bool is_number(jv v) { return v.type == JV_INT || v.type == JV_FLOAT || v.type == JV_BOOL; }
static double as_double(jv v) { return v.type == JV_FLOAT ? v.u.f : v.type == JV_INT ? (double)v.u.i : (double)v.u.b; }

bool jv_equal(jv a, jv b) {
    if (is_number(a) && is_number(b)) {
        if (a.type != JV_FLOAT && b.type != JV_FLOAT) return (a.type == JV_INT ? a.u.i : a.u.b) == (b.type == JV_INT ? b.u.i : b.u.b);
        return as_double(a) == as_double(b);
    }
    if ((a.type == JV_LIST || a.type == JV_TUPLE) && (b.type == JV_LIST || b.type == JV_TUPLE)) {
        if (a.type != b.type || a.u.l->n != b.u.l->n) return false; /* Python: [1] != (1,) */
        for (size_t i = 0; i < a.u.l->n; i++)
            if (!jv_equal(a.u.l->items[i], b.u.l->items[i])) return false;
        return true;
    }
    if (a.type != b.type) return false;
    switch (a.type) {
    case JV_UNDEFINED:
    case JV_NONE: return true;
    case JV_STR: return a.u.s->len == b.u.s->len && memcmp(a.u.s->data, b.u.s->data, a.u.s->len) == 0;
    case JV_DICT: {
        if (a.u.d->n != b.u.d->n) return false;
        for (size_t i = 0; i < a.u.d->n; i++) {
            const jv *other = jv_dict_get_value(b.u.d, a.u.d->keys[i]);
            if (!other || !jv_equal(a.u.d->values[i], *other)) return false;
        }
        return true;
    }
    case JV_NAMESPACE: return a.u.d == b.u.d;
    case JV_MACRO: return a.u.macro == b.u.macro;
    case JV_BUILTIN: return a.u.fn.id == b.u.fn.id && a.u.fn.self == b.u.fn.self;
    default: return false;
    }
}

const char *jv_type_name(jv v) {
    switch (v.type) {
    case JV_UNDEFINED: return "undefined";
    case JV_NONE: return "NoneType";
    case JV_BOOL: return "bool";
    case JV_INT: return "int";
    case JV_FLOAT: return "float";
    case JV_STR: return "str";
    case JV_LIST: return "list";
    case JV_TUPLE: return "tuple";
    case JV_DICT: return "dict";
    case JV_NAMESPACE: return "Namespace";
    case JV_MACRO: return "Macro";
    case JV_BUILTIN: return "builtin_function_or_method";
    }
    return "object";
}

/* --- buffers -------------------------------------------------------------------------- */

void jbuf_put(jbuf *b, const char *s, size_t n) {
    if (b->oom || n == 0) return;
    if (b->cap - b->len < n + 1) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap - b->len < n + 1) {
            if (cap > SIZE_MAX / 4) {
                b->oom = true;
                return;
            }
            cap *= 2;
        }
        char *p = realloc(b->data, cap);
        if (!p) {
            b->oom = true;
            return;
        }
        b->data = p;
        b->cap = cap;
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = 0;
}

void jbuf_puts(jbuf *b, const char *s) { jbuf_put(b, s, strlen(s)); }

void jbuf_free(jbuf *b) {
    free(b->data);
    memset(b, 0, sizeof *b);
}

/* --- str(), repr(), json ---------------------------------------------------------------- */

void jv_format_float(double f, char out[40]) {
    if (isnan(f)) {
        strcpy(out, "nan");
        return;
    }
    if (isinf(f)) {
        strcpy(out, f < 0 ? "-inf" : "inf");
        return;
    }
    /* the shortest %.*e that reads back exactly, then Python's layout:
     * positional for exponents in [-4, 16), scientific otherwise */
    char e[40];
    int digits;
    for (digits = 1; digits <= 17; digits++) {
        snprintf(e, sizeof e, "%.*e", digits - 1, f);
        if (strtod(e, NULL) == f) break;
    }
    const char *mant = e + (e[0] == '-');
    const char *epos = strchr(mant, 'e');
    int exp10 = atoi(epos + 1);
    char ds[24];
    int nd = 0;
    for (const char *p = mant; p < epos; p++)
        if (*p >= '0' && *p <= '9') ds[nd++] = *p;
    ds[nd] = 0;
    char *o = out;
    if (f < 0 || (f == 0 && signbit(f))) *o++ = '-';
    if (exp10 >= -4 && exp10 < 16) {
        if (exp10 < 0) {
            *o++ = '0';
            *o++ = '.';
            for (int k = 0; k < -exp10 - 1; k++) *o++ = '0';
            memcpy(o, ds, (size_t)nd);
            o += nd;
        } else {
            for (int k = 0; k <= exp10; k++) *o++ = k < nd ? ds[k] : '0';
            *o++ = '.';
            if (nd > exp10 + 1) {
                memcpy(o, ds + exp10 + 1, (size_t)(nd - exp10 - 1));
                o += nd - exp10 - 1;
            } else {
                *o++ = '0';
            }
        }
        *o = 0;
        return;
    }
    *o++ = ds[0];
    if (nd > 1) {
        *o++ = '.';
        memcpy(o, ds + 1, (size_t)(nd - 1));
        o += nd - 1;
    }
    sprintf(o, "e%c%02d", exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
}

/* Python's str.isprintable for one code point (repr escapes the others). */
static bool printable(int32_t c) {
    if (c == ' ') return true;
    switch (utf8proc_category(c)) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CN:
    case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP:
    case UTF8PROC_CATEGORY_ZS: return false;
    default: return true;
    }
}

static void write_str_repr(jbuf *b, const char *s, size_t n) {
    bool has_single = memchr(s, '\'', n) != NULL, has_double = memchr(s, '"', n) != NULL;
    char quote = has_single && !has_double ? '"' : '\'';
    jbuf_putc(b, quote);
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        size_t cl = sp_utf8_valid_prefix_len((const unsigned char *)s + i, n - i);
        char esc[16];
        if (c == '\\' || c == (unsigned char)quote) {
            jbuf_putc(b, '\\');
            jbuf_putc(b, (char)c);
        } else if (c == '\n') jbuf_puts(b, "\\n");
        else if (c == '\r') jbuf_puts(b, "\\r");
        else if (c == '\t') jbuf_puts(b, "\\t");
        else if (cl == 0) {
            snprintf(esc, sizeof esc, "\\x%02x", c); /* not reachable for valid text */
            jbuf_puts(b, esc);
            i++;
            continue;
        } else if (cl == 1 && (c < 0x20 || c == 0x7F)) {
            snprintf(esc, sizeof esc, "\\x%02x", c);
            jbuf_puts(b, esc);
        } else if (cl > 1) {
            utf8proc_int32_t cp;
            utf8proc_iterate((const utf8proc_uint8_t *)s + i, (utf8proc_ssize_t)cl, &cp);
            if (printable(cp)) jbuf_put(b, s + i, cl);
            else {
                if (cp <= 0xFF) snprintf(esc, sizeof esc, "\\x%02x", (unsigned)cp);
                else if (cp <= 0xFFFF) snprintf(esc, sizeof esc, "\\u%04x", (unsigned)cp);
                else snprintf(esc, sizeof esc, "\\U%08x", (unsigned)cp);
                jbuf_puts(b, esc);
            }
        } else jbuf_putc(b, (char)c);
        i += cl ? cl : 1;
    }
    jbuf_putc(b, quote);
}

static void write_scalar(jbuf *b, jv v) {
    char tmp[40];
    switch (v.type) {
    case JV_NONE: jbuf_puts(b, "None"); break;
    case JV_BOOL: jbuf_puts(b, v.u.b ? "True" : "False"); break;
    case JV_INT:
        snprintf(tmp, sizeof tmp, "%" PRId64, v.u.i);
        jbuf_puts(b, tmp);
        break;
    case JV_FLOAT:
        jv_format_float(v.u.f, tmp);
        jbuf_puts(b, tmp);
        break;
    case JV_NAMESPACE: jbuf_puts(b, "<Namespace>"); break;
    case JV_MACRO: jbuf_puts(b, "<Macro>"); break;
    case JV_BUILTIN: jbuf_puts(b, "<built-in function>"); break;
    default: break;
    }
}

void jv_write_repr(jbuf *b, jv v) {
    switch (v.type) {
    case JV_STR: write_str_repr(b, v.u.s->data, v.u.s->len); break;
    case JV_UNDEFINED: break; /* jinja2's Undefined: repr is "Undefined", str is ""; only str is reachable */
    case JV_LIST:
    case JV_TUPLE:
        jbuf_putc(b, v.type == JV_LIST ? '[' : '(');
        for (size_t i = 0; i < v.u.l->n; i++) {
            if (i) jbuf_puts(b, ", ");
            jv_write_repr(b, v.u.l->items[i]);
        }
        if (v.type == JV_TUPLE && v.u.l->n == 1) jbuf_putc(b, ',');
        jbuf_putc(b, v.type == JV_LIST ? ']' : ')');
        break;
    case JV_DICT:
        jbuf_putc(b, '{');
        for (size_t i = 0; i < v.u.d->n; i++) {
            if (i) jbuf_puts(b, ", ");
            jv_write_repr(b, v.u.d->keys[i]);
            jbuf_puts(b, ": ");
            jv_write_repr(b, v.u.d->values[i]);
        }
        jbuf_putc(b, '}');
        break;
    default: write_scalar(b, v); break;
    }
}

void jv_write_str(jbuf *b, jv v) {
    if (v.type == JV_STR) jbuf_put(b, v.u.s->data, v.u.s->len);
    else if (v.type == JV_UNDEFINED) return;
    else jv_write_repr(b, v);
}

static void write_json_string(jbuf *b, const char *s, size_t n, bool ensure_ascii) {
    jbuf_putc(b, '"');
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        char esc[16];
        switch (c) {
        case '"': jbuf_puts(b, "\\\""); break;
        case '\\': jbuf_puts(b, "\\\\"); break;
        case '\n': jbuf_puts(b, "\\n"); break;
        case '\r': jbuf_puts(b, "\\r"); break;
        case '\t': jbuf_puts(b, "\\t"); break;
        case '\b': jbuf_puts(b, "\\b"); break;
        case '\f': jbuf_puts(b, "\\f"); break;
        default:
            if (c < 0x20 || (c == 0x7F && ensure_ascii)) {
                snprintf(esc, sizeof esc, "\\u%04x", c);
                jbuf_puts(b, esc);
            } else if (c >= 0x80 && ensure_ascii && sp_utf8_valid_prefix_len((const unsigned char *)s + i, n - i)) {
                /* a code point as \uXXXX, past the BMP as a surrogate pair */
                const size_t len = sp_utf8_valid_prefix_len((const unsigned char *)s + i, n - i);
                uint32_t cp = c & (0xFF >> (len + 1));
                for (size_t k = 1; k < len; k++) cp = (cp << 6) | ((unsigned char)s[i + k] & 0x3F);
                if (cp >= 0x10000) snprintf(esc, sizeof esc, "\\u%04x\\u%04x", 0xD800 + ((cp - 0x10000) >> 10), 0xDC00 + ((cp - 0x10000) & 0x3FF));
                else snprintf(esc, sizeof esc, "\\u%04x", cp);
                jbuf_puts(b, esc);
                i += len - 1;
            } else jbuf_putc(b, (char)c);
        }
    }
    jbuf_putc(b, '"');
}

static void json_newline(jbuf *b, int indent, int depth) {
    jbuf_putc(b, '\n');
    for (int i = 0; i < indent * depth; i++) jbuf_putc(b, ' ');
}

/* Python's key order for sort_keys: strings by code point (UTF-8 bytes
 * sort the same), numbers by value; other mixes cannot be sorted. */
static bool json_key_less(jv a, jv b, bool *less) {
    if (a.type == JV_STR && b.type == JV_STR) {
        const size_t n = a.u.s->len < b.u.s->len ? a.u.s->len : b.u.s->len;
        const int c = memcmp(a.u.s->data, b.u.s->data, n);
        *less = c < 0 || (c == 0 && a.u.s->len < b.u.s->len);
        return true;
    }
    const bool na = a.type == JV_INT || a.type == JV_FLOAT || a.type == JV_BOOL, nb = b.type == JV_INT || b.type == JV_FLOAT || b.type == JV_BOOL;
    if (!na || !nb) return false;
    const double x = a.type == JV_FLOAT ? a.u.f : a.type == JV_INT ? (double)a.u.i : a.u.b;
    const double y = b.type == JV_FLOAT ? b.u.f : b.type == JV_INT ? (double)b.u.i : b.u.b;
    *less = x < y;
    return true;
}

static bool write_json_key(jbuf *b, jv k, const jv_json_style *style) {
    if (k.type == JV_STR) write_json_string(b, k.u.s->data, k.u.s->len, style->ensure_ascii);
    else if (k.type == JV_INT || k.type == JV_FLOAT || k.type == JV_BOOL || k.type == JV_NONE) {
        /* json.dumps turns these keys into strings */
        jbuf tmpb = {0};
        if (k.type == JV_BOOL) jbuf_puts(&tmpb, k.u.b ? "true" : "false");
        else if (k.type == JV_NONE) jbuf_puts(&tmpb, "null");
        else jv_write_json(&tmpb, k, style, 0);
        write_json_string(b, tmpb.data ? tmpb.data : "", tmpb.len, false);
        jbuf_free(&tmpb);
    } else return false;
    return true;
}

bool jv_write_json(jbuf *b, jv v, const jv_json_style *style, int depth) {
    if (depth > 256) return false;
    const int indent = style->indent;
    const char *item_sep = style->item_sep ? style->item_sep : indent >= 0 ? "," : ", ";
    const char *key_sep = style->key_sep ? style->key_sep : ": ";
    char tmp[40];
    switch (v.type) {
    case JV_NONE: jbuf_puts(b, "null"); return true;
    case JV_BOOL: jbuf_puts(b, v.u.b ? "true" : "false"); return true;
    case JV_INT: write_scalar(b, v); return true;
    case JV_FLOAT:
        if (isnan(v.u.f)) jbuf_puts(b, "NaN");
        else if (isinf(v.u.f)) jbuf_puts(b, v.u.f < 0 ? "-Infinity" : "Infinity");
        else {
            jv_format_float(v.u.f, tmp);
            jbuf_puts(b, tmp);
        }
        return true;
    case JV_STR: write_json_string(b, v.u.s->data, v.u.s->len, style->ensure_ascii); return true;
    case JV_LIST:
    case JV_TUPLE:
        if (v.u.l->n == 0) {
            jbuf_puts(b, "[]");
            return true;
        }
        jbuf_putc(b, '[');
        for (size_t i = 0; i < v.u.l->n; i++) {
            if (i) jbuf_puts(b, item_sep);
            if (indent >= 0) json_newline(b, indent, depth + 1);
            if (!jv_write_json(b, v.u.l->items[i], style, depth + 1)) return false;
        }
        if (indent >= 0) json_newline(b, indent, depth);
        jbuf_putc(b, ']');
        return true;
    case JV_DICT: {
        const size_t n = v.u.d->n;
        if (n == 0) {
            jbuf_puts(b, "{}");
            return true;
        }
        size_t *order = malloc(n * sizeof *order);
        if (!order) return false;
        for (size_t i = 0; i < n; i++) order[i] = i;
        for (size_t i = 1; style->sort_keys && i < n; i++) /* insertion sort: stable, and dicts here are small */
            for (size_t j = i; j > 0; j--) {
                bool less;
                if (!json_key_less(v.u.d->keys[order[j]], v.u.d->keys[order[j - 1]], &less)) {
                    free(order);
                    return false;
                }
                if (!less) break;
                const size_t t = order[j];
                order[j] = order[j - 1];
                order[j - 1] = t;
            }
        bool ok = true;
        jbuf_putc(b, '{');
        for (size_t i = 0; i < n && ok; i++) {
            if (i) jbuf_puts(b, item_sep);
            if (indent >= 0) json_newline(b, indent, depth + 1);
            ok = write_json_key(b, v.u.d->keys[order[i]], style);
            jbuf_puts(b, key_sep);
            ok = ok && jv_write_json(b, v.u.d->values[order[i]], style, depth + 1);
        }
        free(order);
        if (!ok) return false;
        if (indent >= 0) json_newline(b, indent, depth);
        jbuf_putc(b, '}');
        return true;
    }
    default: return false;
    }
}

static bool buf_to_value(jv_heap *h, jbuf *b, jv *out) {
    bool ok = !b->oom;
    if (ok) {
        *out = jv_str(h, b->data, b->len);
        ok = out->type == JV_STR;
    }
    jbuf_free(b);
    return ok;
}

bool jv_to_str(jv_heap *h, jv v, jv *out) {
    if (v.type == JV_STR) {
        *out = v;
        return true;
    }
    jbuf b = {0};
    jv_write_str(&b, v);
    return buf_to_value(h, &b, out);
}

bool jv_repr(jv_heap *h, jv v, jv *out) {
    jbuf b = {0};
    jv_write_repr(&b, v);
    return buf_to_value(h, &b, out);
}

bool jv_to_json(jv_heap *h, jv v, const jv_json_style *style, jv *out) {
    jbuf b = {0};
    if (!jv_write_json(&b, v, style, 0)) {
        jbuf_free(&b);
        return false;
    }
    return buf_to_value(h, &b, out);
}
