/* The functions Go's text/template predefines that Ollama's templates use
 * (comparison, len, index, slice, print, printf, println) and the ones
 * Ollama adds (json, currentDate, yesterdayDate, toTypeScriptType), with
 * Go's argument checks and error texts. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "template/go_template.h"

enum {
    FN_EQ = GT_FN_NOT + 1,
    FN_NE,
    FN_LT,
    FN_LE,
    FN_GT,
    FN_GE,
    FN_LEN,
    FN_INDEX,
    FN_SLICE,
    FN_PRINT,
    FN_PRINTF,
    FN_PRINTLN,
    FN_HTML,
    FN_JS,
    FN_URLQUERY,
    FN_FIRST_OLLAMA, /* the rest exist only in Ollama's FuncMap */
    FN_JSON = FN_FIRST_OLLAMA,
    FN_CURRENT_DATE,
    FN_YESTERDAY_DATE,
    FN_TO_TS_TYPE,
    FN_COUNT,
};

static const char *const names[FN_COUNT] = {
    [GT_FN_AND] = "and",      [GT_FN_OR] = "or",         [GT_FN_NOT] = "not",          [FN_EQ] = "eq",
    [FN_NE] = "ne",           [FN_LT] = "lt",            [FN_LE] = "le",               [FN_GT] = "gt",
    [FN_GE] = "ge",           [FN_LEN] = "len",          [FN_INDEX] = "index",         [FN_SLICE] = "slice",
    [FN_PRINT] = "print",     [FN_PRINTF] = "printf",    [FN_PRINTLN] = "println",     [FN_HTML] = "html",
    [FN_JS] = "js",           [FN_URLQUERY] = "urlquery", [FN_JSON] = "json",
    [FN_CURRENT_DATE] = "currentDate", [FN_YESTERDAY_DATE] = "yesterdayDate", [FN_TO_TS_TYPE] = "toTypeScriptType",
};

int gt_func_lookup(const char *name) {
    for (int i = 0; i < FN_COUNT; i++)
        if (!strcmp(names[i], name)) return i;
    return -1;
}

/* --- comparison ------------------------------------------------------------------------ */

static bool basic(gt_value v) { return v.kind == GT_BOOL || v.kind == GT_INT || v.kind == GT_FLOAT || v.kind == GT_STRING; }

static int compare_same(gt_value a, gt_value b) {
    switch (a.kind) {
    case GT_INT: return (a.u.i > b.u.i) - (a.u.i < b.u.i);
    case GT_FLOAT: return (a.u.f > b.u.f) - (a.u.f < b.u.f);
    case GT_STRING: {
        size_t n = a.u.str.len < b.u.str.len ? a.u.str.len : b.u.str.len;
        int c = n ? memcmp(a.u.str.s, b.u.str.s, n) : 0;
        if (c) return c < 0 ? -1 : 1;
        return (a.u.str.len > b.u.str.len) - (a.u.str.len < b.u.str.len);
    }
    case GT_BOOL: return a.u.b != b.u.b;
    default: return 0;
    }
}

/* Go's eq: true if a equals any of the others; values of different basic
 * kinds are an error, nil equals only nil. */
static bool eq(gt_exec *ex, const gt_node *at, gt_value a, const gt_value *others, size_t n, bool *result) {
    *result = false;
    if (n == 0) return gt_exec_error(ex, at, "error calling eq: missing argument for comparison"), false;
    for (size_t i = 0; i < n; i++) {
        gt_value b = others[i];
        if (a.kind == GT_NIL || b.kind == GT_NIL) {
            if (a.kind == b.kind) *result = true;
        } else if (!basic(a) || !basic(b)) {
            gt_exec_error(ex, at, "error calling eq: non-comparable type %s", gt_type_name(basic(a) ? b : a));
            return false;
        } else if (a.kind != b.kind) {
            gt_exec_error(ex, at, "error calling eq: incompatible types for comparison");
            return false;
        } else if (compare_same(a, b) == 0) *result = true;
        if (*result) return true;
    }
    return true;
}

static bool less(gt_exec *ex, const gt_node *at, const char *fn, gt_value a, gt_value b, bool *result) {
    bool ordered_a = a.kind == GT_INT || a.kind == GT_FLOAT || a.kind == GT_STRING;
    bool ordered_b = b.kind == GT_INT || b.kind == GT_FLOAT || b.kind == GT_STRING;
    if (!ordered_a || !ordered_b) return gt_exec_error(ex, at, "error calling %s: invalid type for comparison", fn), false;
    if (a.kind != b.kind) return gt_exec_error(ex, at, "error calling %s: incompatible types for comparison", fn), false;
    *result = compare_same(a, b) < 0;
    return true;
}

/* --- fmt -------------------------------------------------------------------------------- */

/* fmt.Sprint: a space between operands when neither is a string. */
static void sprint(jbuf *b, const gt_value *args, size_t n, bool ln) {
    for (size_t i = 0; i < n; i++) {
        if (i && (ln || (args[i].kind != GT_STRING && args[i - 1].kind != GT_STRING))) jbuf_putc(b, ' ');
        if (args[i].kind == GT_NIL) jbuf_puts(b, "<nil>");
        else gt_write_value(b, args[i], 0);
    }
    if (ln) jbuf_putc(b, '\n');
}

/* strconv.Quote, for %q: Go's escapes; valid UTF-8 beyond ASCII stays. */
static void quote(jbuf *b, const char *s, size_t len) {
    jbuf_putc(b, '"');
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *esc = c == '"' ? "\\\"" : c == '\\' ? "\\\\" : c == '\n' ? "\\n" : c == '\t' ? "\\t" : c == '\r' ? "\\r"
                        : c == '\a' ? "\\a" : c == '\b' ? "\\b" : c == '\f' ? "\\f" : c == '\v' ? "\\v" : NULL;
        if (esc) jbuf_puts(b, esc);
        else if (c < 0x20 || c == 0x7F) {
            char hex[8];
            snprintf(hex, sizeof hex, "\\x%02x", c);
            jbuf_puts(b, hex);
        } else jbuf_putc(b, (char)c);
    }
    jbuf_putc(b, '"');
}

typedef struct spec {
    bool minus, plus, zero, sharp, space;
    int width, prec; /* -1: none */
    char verb;
} spec;

/* A width or precision (-1: none yet) with one more decimal digit, held at
 * FORMAT_MAX_FIELD however many digits a format has. */
enum { FORMAT_MAX_FIELD = 10000 };
static int with_digit(int n, char digit) {
    n = (n < 0 ? 0 : n) * 10 + (digit - '0');
    return n > FORMAT_MAX_FIELD ? FORMAT_MAX_FIELD : n;
}

static void pad(jbuf *out, const spec *sp, const char *s, size_t len, bool numeric) {
    size_t runes = 0;
    for (size_t i = 0; i < len; i++) runes += ((unsigned char)s[i] & 0xC0) != 0x80;
    size_t fill = sp->width > 0 && (size_t)sp->width > runes ? (size_t)sp->width - runes : 0;
    if (sp->minus) {
        jbuf_put(out, s, len);
        for (size_t i = 0; i < fill; i++) jbuf_putc(out, ' ');
    } else if (sp->zero && numeric) {
        size_t sign = len && (s[0] == '-' || s[0] == '+');
        jbuf_put(out, s, sign);
        for (size_t i = 0; i < fill; i++) jbuf_putc(out, '0');
        jbuf_put(out, s + sign, len - sign);
    } else {
        for (size_t i = 0; i < fill; i++) jbuf_putc(out, ' ');
        jbuf_put(out, s, len);
    }
}

static void bad_verb(jbuf *out, char verb, gt_value v) {
    jbuf_puts(out, "%!");
    jbuf_putc(out, verb);
    jbuf_putc(out, '(');
    if (v.kind == GT_NIL) jbuf_puts(out, "<nil>");
    else {
        jbuf_puts(out, gt_type_name(v));
        jbuf_putc(out, '=');
        gt_write_value(out, v, 1);
    }
    jbuf_putc(out, ')');
}

/* One verb with its argument, into tmp (then padded by the caller). */
static bool format_one(jbuf *tmp, const spec *sp, gt_value v) {
    char buf[400];
    switch (sp->verb) {
    case 'v':
        if (v.kind == GT_NIL) jbuf_puts(tmp, "<nil>");
        else if (v.kind == GT_FLOAT && sp->prec >= 0) snprintf(buf, sizeof buf, "%.*g", sp->prec, v.u.f), jbuf_puts(tmp, buf);
        else gt_write_value(tmp, v, 0);
        return true;
    case 's':
        if (v.kind == GT_STRING) {
            size_t len = v.u.str.len;
            if (sp->prec >= 0) { /* precision counts runes */
                size_t runes = 0, k = 0;
                for (; k < len; k++) {
                    if (((unsigned char)v.u.str.s[k] & 0xC0) != 0x80 && runes++ == (size_t)sp->prec) break;
                }
                len = k;
            }
            jbuf_put(tmp, v.u.str.s, len);
            return true;
        }
        if (v.kind == GT_LIST || v.kind == GT_MAP || v.kind == GT_STRUCT) return gt_write_value(tmp, v, 0), true;
        return false;
    case 'q':
        if (v.kind == GT_STRING) return quote(tmp, v.u.str.s, v.u.str.len), true;
        return false;
    case 't':
        if (v.kind != GT_BOOL) return false;
        jbuf_puts(tmp, v.u.b ? "true" : "false");
        return true;
    case 'd':
    case 'x':
    case 'X':
    case 'o':
    case 'b':
    case 'c':
        if (v.kind == GT_STRING && (sp->verb == 'x' || sp->verb == 'X')) {
            for (size_t i = 0; i < v.u.str.len; i++) {
                snprintf(buf, sizeof buf, sp->verb == 'x' ? "%02x" : "%02X", (unsigned char)v.u.str.s[i]);
                jbuf_puts(tmp, buf);
            }
            return true;
        }
        if (v.kind != GT_INT) return false;
        if (sp->verb == 'c') {
            if (v.u.i < 0 || v.u.i > 0x10FFFF) return jbuf_puts(tmp, "\xEF\xBF\xBD"), true;
            uint32_t cp = (uint32_t)v.u.i;
            char u[4];
            size_t n = 0;
            if (cp < 0x80) u[n++] = (char)cp;
            else if (cp < 0x800) u[n++] = (char)(0xC0 | cp >> 6), u[n++] = (char)(0x80 | (cp & 0x3F));
            else if (cp < 0x10000)
                u[n++] = (char)(0xE0 | cp >> 12), u[n++] = (char)(0x80 | ((cp >> 6) & 0x3F)), u[n++] = (char)(0x80 | (cp & 0x3F));
            else
                u[n++] = (char)(0xF0 | cp >> 18), u[n++] = (char)(0x80 | ((cp >> 12) & 0x3F)),
                u[n++] = (char)(0x80 | ((cp >> 6) & 0x3F)), u[n++] = (char)(0x80 | (cp & 0x3F));
            jbuf_put(tmp, u, n);
            return true;
        }
        if (sp->verb == 'b') {
            uint64_t m = v.u.i < 0 ? (uint64_t)0 - (uint64_t)v.u.i : (uint64_t)v.u.i;
            char bits[72];
            int k = (int)sizeof bits;
            bits[--k] = '\0';
            do bits[--k] = (char)('0' + (m & 1)), m >>= 1;
            while (m);
            if (v.u.i < 0) bits[--k] = '-';
            jbuf_puts(tmp, bits + k);
            return true;
        }
        {
            long long i = (long long)v.u.i;
            unsigned long long m = i < 0 ? 0ull - (unsigned long long)i : (unsigned long long)i;
            const char *f = sp->verb == 'd' ? "%s%llu" : sp->verb == 'x' ? "%s%llx" : sp->verb == 'X' ? "%s%llX" : "%s%llo";
            snprintf(buf, sizeof buf, f, i < 0 ? "-" : sp->plus ? "+" : "", m);
            jbuf_puts(tmp, buf);
        }
        return true;
    case 'f':
    case 'F':
    case 'e':
    case 'E':
    case 'g':
    case 'G': {
        if (v.kind != GT_FLOAT) return false;
        if ((sp->verb == 'g' || sp->verb == 'G') && sp->prec < 0) {
            if (sp->plus && !signbit(v.u.f)) jbuf_putc(tmp, '+');
            gt_format_float(tmp, v.u.f, 'g');
            return true;
        }
        char f[16];
        snprintf(f, sizeof f, "%%%s.*%c", sp->plus ? "+" : "", sp->verb == 'F' ? 'f' : sp->verb);
        snprintf(buf, sizeof buf, f, sp->prec < 0 ? 6 : sp->prec > 60 ? 60 : sp->prec, v.u.f);
        jbuf_puts(tmp, buf);
        return true;
    }
    default: return false;
    }
}

static bool sprintf_go(gt_exec *ex, const gt_node *at, jbuf *out, const gt_value *args, size_t n) {
    if (n == 0 || args[0].kind != GT_STRING) {
        gt_exec_error(ex, at, "wrong type for value; expected string; got %s", n ? gt_type_name(args[0]) : "nothing");
        return false;
    }
    const char *f = args[0].u.str.s;
    size_t len = args[0].u.str.len, arg = 1;
    for (size_t i = 0; i < len; i++) {
        if (f[i] != '%') {
            jbuf_putc(out, f[i]);
            continue;
        }
        spec sp = {.width = -1, .prec = -1};
        for (i++; i < len && strchr("+-# 0", f[i]); i++) {
            if (f[i] == '+') sp.plus = true;
            else if (f[i] == '-') sp.minus = true;
            else if (f[i] == '#') sp.sharp = true;
            else if (f[i] == ' ') sp.space = true;
            else sp.zero = true;
        }
        for (; i < len && f[i] >= '0' && f[i] <= '9'; i++) sp.width = with_digit(sp.width, f[i]);
        if (i < len && f[i] == '.') {
            sp.prec = 0;
            for (i++; i < len && f[i] >= '0' && f[i] <= '9'; i++) sp.prec = with_digit(sp.prec, f[i]);
        }
        if (i >= len) {
            jbuf_puts(out, "%!(NOVERB)");
            break;
        }
        sp.verb = f[i];
        if (sp.verb == '%') {
            jbuf_putc(out, '%');
            continue;
        }
        if (arg >= n) {
            jbuf_puts(out, "%!");
            jbuf_putc(out, sp.verb);
            jbuf_puts(out, "(MISSING)");
            continue;
        }
        gt_value v = args[arg++];
        jbuf tmp = {0};
        if (format_one(&tmp, &sp, v)) {
            pad(out, &sp, tmp.data ? tmp.data : "", tmp.len, v.kind == GT_INT || v.kind == GT_FLOAT);
        } else bad_verb(out, sp.verb, v);
        bool oom = tmp.oom;
        jbuf_free(&tmp);
        if (oom) out->oom = true;
    }
    if (arg < n) {
        jbuf_puts(out, "%!(EXTRA ");
        for (size_t k = arg; k < n; k++) {
            if (k > arg) jbuf_puts(out, ", ");
            jbuf_puts(out, args[k].kind == GT_NIL ? "<nil>" : gt_type_name(args[k]));
            if (args[k].kind != GT_NIL) jbuf_putc(out, '='), gt_write_value(out, args[k], 1);
        }
        jbuf_putc(out, ')');
    }
    return true;
}

/* --- index and slice ----------------------------------------------------------------------- */

static bool index_of(gt_exec *ex, const gt_node *at, gt_value item, const gt_value *idx, size_t n, gt_value *out) {
    for (size_t k = 0; k < n; k++) {
        gt_value i = idx[k];
        if (item.kind == GT_NIL) return gt_exec_error(ex, at, "error calling index: index of untyped nil"), false;
        if (item.kind == GT_MAP) {
            if (i.kind != GT_STRING)
                return gt_exec_error(ex, at, "error calling index: value has type %s; should be string", gt_type_name(i)), false;
            const gt_value *v = gt_map_get(item.u.agg, i.u.str.s, i.u.str.len);
            item = v ? *v : gt_nil();
            continue;
        }
        if (item.kind != GT_LIST && item.kind != GT_STRING)
            return gt_exec_error(ex, at, "error calling index: can't index item of type %s", gt_type_name(item)), false;
        if (i.kind != GT_INT)
            return gt_exec_error(ex, at, "error calling index: cannot index slice/array with type %s", gt_type_name(i)), false;
        int64_t len = gt_len(item);
        if (i.u.i < 0 || i.u.i >= len)
            return gt_exec_error(ex, at, "error calling index: index out of range: %lld", (long long)i.u.i), false;
        item = item.kind == GT_LIST ? item.u.agg->items[i.u.i] : gt_int((unsigned char)item.u.str.s[i.u.i]);
    }
    *out = item;
    return true;
}

static bool slice_of(gt_exec *ex, const gt_node *at, gt_value item, const gt_value *idx, size_t n, gt_value *out) {
    if (item.kind == GT_NIL) return gt_exec_error(ex, at, "error calling slice: slice of untyped nil"), false;
    if (item.kind != GT_LIST && item.kind != GT_STRING)
        return gt_exec_error(ex, at, "error calling slice: can't slice item of type %s", gt_type_name(item)), false;
    if (n > 3) return gt_exec_error(ex, at, "error calling slice: too many slice indexes: %zu", n), false;
    if (n == 3 && item.kind == GT_STRING) return gt_exec_error(ex, at, "error calling slice: cannot 3-index slice a string"), false;
    int64_t len = gt_len(item), bounds[3] = {0, len, len};
    for (size_t k = 0; k < n; k++) {
        if (idx[k].kind != GT_INT)
            return gt_exec_error(ex, at, "error calling slice: cannot index slice/array with type %s", gt_type_name(idx[k])), false;
        if (idx[k].u.i < 0 || idx[k].u.i > len)
            return gt_exec_error(ex, at, "error calling slice: index out of range: %lld", (long long)idx[k].u.i), false;
        bounds[k] = idx[k].u.i;
    }
    if (bounds[0] > bounds[1])
        return gt_exec_error(ex, at, "error calling slice: invalid slice index: %lld > %lld", (long long)bounds[0], (long long)bounds[1]), false;
    if (n == 3 && bounds[1] > bounds[2])
        return gt_exec_error(ex, at, "error calling slice: invalid slice index: %lld > %lld", (long long)bounds[1], (long long)bounds[2]), false;
    if (item.kind == GT_STRING) {
        *out = gt_str_ref(item.u.str.s + bounds[0], (size_t)(bounds[1] - bounds[0]));
        return true;
    }
    gt_agg *a = gt_alloc(ex->heap, sizeof *a);
    if (!a) return gt_exec_error(ex, at, "template used too much memory"), false;
    *a = *item.u.agg;
    a->items = item.u.agg->items + bounds[0];
    a->n = (size_t)(bounds[1] - bounds[0]);
    *out = item;
    out->u.agg = a;
    out->flags &= ~(unsigned)GT_NIL_AGG;
    return true;
}

/* --- Ollama's functions --------------------------------------------------------------------- */

static const char *ts_type(const char *json_type) {
    static const char *const map[][2] = {{"string", "string"},   {"number", "number"},  {"integer", "number"},
                                         {"boolean", "boolean"}, {"array", "any[]"},    {"object", "Record<string, any>"},
                                         {"null", "null"}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(map[i][0], json_type)) return map[i][1];
    return "any";
}

/* api.ToolProperty's ToTypeScriptType: anyOf members or the types joined by " | ". */
static void to_ts_type(jbuf *b, gt_value v, int depth) {
    if (v.kind != GT_STRUCT || !(v.flags & GT_TOOL_PROP) || depth > 32) return jbuf_puts(b, "any");
    const gt_value *any_of = gt_struct_get(v.u.agg, "AnyOf"), *type = gt_struct_get(v.u.agg, "Type");
    if (any_of && any_of->kind == GT_LIST && any_of->u.agg->n) {
        for (size_t i = 0; i < any_of->u.agg->n; i++) {
            if (i) jbuf_puts(b, " | ");
            to_ts_type(b, any_of->u.agg->items[i], depth + 1);
        }
        return;
    }
    if (!type || type->kind != GT_LIST || type->u.agg->n == 0) return jbuf_puts(b, "any");
    for (size_t i = 0; i < type->u.agg->n; i++) {
        if (i) jbuf_puts(b, " | ");
        gt_value t = type->u.agg->items[i];
        jbuf_puts(b, t.kind == GT_STRING ? ts_type(t.u.str.s) : "any");
    }
}

static void date(jbuf *b, const struct tm *now, int days_back) {
    struct tm t = *now;
    t.tm_mday -= days_back;
    time_t s = timegm(&t);
    gmtime_r(&s, &t);
    char buf[32];
    snprintf(buf, sizeof buf, "%04d-%02d-%02d", t.tm_year + 1900, t.tm_mon + 1, t.tm_mday);
    jbuf_puts(b, buf);
}

/* --- html, js, urlquery --------------------------------------------------------------------- */

/* text/template's evalArgs: one string as it is, anything else as fmt.Sprint. */
static void args_text(jbuf *b, const gt_value *args, size_t n) {
    if (n == 1 && args[0].kind == GT_STRING) jbuf_put(b, args[0].u.str.s, args[0].u.str.len);
    else sprint(b, args, n, false);
}

static void escape(jbuf *out, const jbuf *in, int id) {
    static const char hex[] = "0123456789ABCDEF";
    for (size_t i = 0; i < in->len; i++) {
        unsigned char c = (unsigned char)in->data[i];
        char buf[8] = {0};
        if (id == FN_HTML) { /* template.HTMLEscapeString */
            const char *e = c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '&' ? "&amp;" : c == '\'' ? "&#39;" : c == '"' ? "&#34;"
                          : c == 0 ? "\xEF\xBF\xBD" : NULL;
            if (e) jbuf_puts(out, e);
            else jbuf_putc(out, (char)c);
        } else if (id == FN_JS) { /* template.JSEscapeString */
            if (c == '\\' || c == '\'' || c == '"') buf[0] = '\\', buf[1] = (char)c;
            else if (c < 0x20 || c == '<' || c == '>' || c == '&' || c == '=')
                snprintf(buf, sizeof buf, "\\u00%c%c", hex[c >> 4], hex[c & 15]);
            else buf[0] = (char)c;
            jbuf_puts(out, buf);
        } else { /* url.QueryEscape */
            bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
                        c == '.' || c == '~';
            if (keep) jbuf_putc(out, (char)c);
            else if (c == ' ') jbuf_putc(out, '+');
            else buf[0] = '%', buf[1] = hex[c >> 4], buf[2] = hex[c & 15], jbuf_puts(out, buf);
        }
    }
}

/* --- dispatch --------------------------------------------------------------------------------- */

static bool want_args(gt_exec *ex, const gt_node *at, int id, size_t n, size_t min, size_t max) {
    if (n >= min && n <= max) return true;
    if (min == max) gt_exec_error(ex, at, "wrong number of args for %s: want %zu got %zu", names[id], min, n);
    else gt_exec_error(ex, at, "wrong number of args for %s: want at least %zu got %zu", names[id], min, n);
    return false;
}

/* A string result built in scratch space, copied into the heap. */
static bool string_result(gt_exec *ex, const gt_node *at, jbuf *b, gt_value *result) {
    if (b->oom || b->len > ex->limits->max_output) {
        jbuf_free(b);
        return gt_exec_error(ex, at, "string too large"), false;
    }
    *result = gt_str(ex->heap, b->data ? b->data : "", b->len);
    jbuf_free(b);
    if (result->kind != GT_STRING) return gt_exec_error(ex, at, "template used too much memory"), false;
    return true;
}

bool gt_call_func(gt_exec *ex, const gt_node *at, int id, const gt_value *args, size_t n, gt_value *result) {
    if (id >= FN_FIRST_OLLAMA && !ex->ollama_funcs)
        return gt_exec_error(ex, at, "\"%s\" is not a defined function", names[id]), false;
    jbuf b = {0};
    bool truth;
    switch (id) {
    case GT_FN_NOT:
        if (!want_args(ex, at, id, n, 1, 1)) return false;
        *result = gt_bool(!gt_truth(args[0]));
        return true;
    case FN_EQ:
        if (!want_args(ex, at, id, n, 1, SIZE_MAX) || !eq(ex, at, args[0], args + 1, n - 1, &truth)) return false;
        *result = gt_bool(truth);
        return true;
    case FN_NE:
        if (!want_args(ex, at, id, n, 2, 2) || !eq(ex, at, args[0], args + 1, 1, &truth)) return false;
        *result = gt_bool(!truth);
        return true;
    case FN_LT:
    case FN_GE:
        if (!want_args(ex, at, id, n, 2, 2) || !less(ex, at, names[id], args[0], args[1], &truth)) return false;
        *result = gt_bool(id == FN_LT ? truth : !truth);
        return true;
    case FN_LE:
    case FN_GT: {
        bool equal = false;
        if (!want_args(ex, at, id, n, 2, 2) || !less(ex, at, names[id], args[0], args[1], &truth)) return false;
        equal = compare_same(args[0], args[1]) == 0;
        *result = gt_bool(id == FN_LE ? truth || equal : !(truth || equal));
        return true;
    }
    case FN_LEN: {
        if (!want_args(ex, at, id, n, 1, 1)) return false;
        int64_t len = gt_len(args[0]);
        if (len < 0) {
            if (args[0].kind == GT_NIL) return gt_exec_error(ex, at, "error calling len: len of nil pointer"), false;
            return gt_exec_error(ex, at, "error calling len: len of type %s", gt_type_name(args[0])), false;
        }
        *result = gt_int(len);
        return true;
    }
    case FN_INDEX: return want_args(ex, at, id, n, 1, SIZE_MAX) && index_of(ex, at, args[0], args + 1, n - 1, result);
    case FN_SLICE: return want_args(ex, at, id, n, 1, SIZE_MAX) && slice_of(ex, at, args[0], args + 1, n - 1, result);
    case FN_PRINT:
    case FN_PRINTLN: sprint(&b, args, n, id == FN_PRINTLN); return string_result(ex, at, &b, result);
    case FN_PRINTF:
        if (!sprintf_go(ex, at, &b, args, n)) return jbuf_free(&b), false;
        return string_result(ex, at, &b, result);
    case FN_HTML:
    case FN_JS:
    case FN_URLQUERY: {
        jbuf text = {0};
        args_text(&text, args, n);
        escape(&b, &text, id);
        if (text.oom) b.oom = true;
        jbuf_free(&text);
        return string_result(ex, at, &b, result);
    }
    case FN_JSON:
        if (!want_args(ex, at, id, n, 1, 1)) return false;
        gt_write_json(&b, args[0], 0);
        return string_result(ex, at, &b, result);
    case FN_CURRENT_DATE:
    case FN_YESTERDAY_DATE:
        for (size_t i = 0; i < n; i++)
            if (args[i].kind != GT_STRING)
                return gt_exec_error(ex, at, "wrong type for value; expected string; got %s", gt_type_name(args[i])), false;
        date(&b, ex->now, id == FN_YESTERDAY_DATE);
        return string_result(ex, at, &b, result);
    case FN_TO_TS_TYPE:
        if (!want_args(ex, at, id, n, 1, 1)) return false;
        to_ts_type(&b, args[0], 0);
        return string_result(ex, at, &b, result);
    default: return gt_exec_error(ex, at, "function %s cannot be called here", names[id]), false;
    }
}
