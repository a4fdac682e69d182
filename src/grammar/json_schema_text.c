/* JSON Schema to GBNF: the text the converter writes: a growable buffer,
 * GBNF literals and JSON text, bounded repetitions, and exact integer
 * ranges as rules. */
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/json_schema_internal.h"

void sb_putn(sb *b, const char *s, size_t n) {
    if (b->oom) return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 64;
        while (cap < b->n + n + 1) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

void sb_puts(sb *b, const char *s) { sb_putn(b, s, strlen(s)); }
void sb_putc(sb *b, char c) { sb_putn(b, &c, 1); }

void sb_printf(sb *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    const int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || b->oom) {
        b->oom = true;
        return;
    }
    char *tmp = malloc((size_t)n + 1);
    if (!tmp) {
        b->oom = true;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(tmp, (size_t)n + 1, fmt, ap);
    va_end(ap);
    sb_putn(b, tmp, (size_t)n);
    free(tmp);
}


/* ---- JSON text and GBNF literals -------------------------------------- */

/* Puts a GBNF string literal of bytes s[0..n). */
void put_literal(sb *b, const char *s, size_t n) {
    sb_putc(b, '"');
    for (size_t i = 0; i < n; i++) {
        const unsigned char ch = (unsigned char)s[i];
        if (ch == '"') sb_puts(b, "\\\"");
        else if (ch == '\\') sb_puts(b, "\\\\");
        else if (ch == '\n') sb_puts(b, "\\n");
        else if (ch == '\r') sb_puts(b, "\\r");
        else if (ch == '\t') sb_puts(b, "\\t");
        else if (ch < 0x20 || ch == 0x7F) sb_printf(b, "\\x%02X", ch);
        else sb_putc(b, (char)ch);
    }
    sb_putc(b, '"');
}

/* JSON text of one code point inside a string (escaped where JSON must). */
void put_json_char(sb *b, uint32_t cp) {
    switch (cp) {
    case '"': sb_puts(b, "\\\""); return;
    case '\\': sb_puts(b, "\\\\"); return;
    case '\b': sb_puts(b, "\\b"); return;
    case '\f': sb_puts(b, "\\f"); return;
    case '\n': sb_puts(b, "\\n"); return;
    case '\r': sb_puts(b, "\\r"); return;
    case '\t': sb_puts(b, "\\t"); return;
    default: break;
    }
    if (cp < 0x20) {
        sb_printf(b, "\\u%04x", (unsigned)cp);
        return;
    }
    char u[4];
    size_t n;
    if (cp < 0x80) {
        u[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        u[0] = (char)(0xC0 | (cp >> 6));
        u[1] = (char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        u[0] = (char)(0xE0 | (cp >> 12));
        u[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        u[2] = (char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        u[0] = (char)(0xF0 | (cp >> 18));
        u[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        u[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        u[3] = (char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    sb_putn(b, u, n);
}

/* Decodes one code point of valid UTF-8 (jansson checked it). */
uint32_t next_cp(const char **s) {
    const unsigned char *p = (const unsigned char *)*s;
    uint32_t cp;
    int extra;
    if (p[0] < 0x80) cp = p[0], extra = 0;
    else if (p[0] < 0xE0) cp = p[0] & 0x1F, extra = 1;
    else if (p[0] < 0xF0) cp = p[0] & 0x0F, extra = 2;
    else cp = p[0] & 0x07, extra = 3;
    int i = 1;
    for (; i <= extra && (p[i] & 0xC0) == 0x80; i++) cp = (cp << 6) | (p[i] & 0x3F);
    *s += i;
    return cp;
}

static void put_json_string(sb *b, const char *s, size_t n) {
    const char *end = s + n;
    sb_putc(b, '"');
    while (s < end) {
        if (*s == '\0') { /* jansson strings may hold NUL */
            sb_puts(b, "\\u0000");
            s++;
            continue;
        }
        put_json_char(b, next_cp(&s));
    }
    sb_putc(b, '"');
}

/* The shortest decimal that reads back as d. */
static void put_json_real(sb *b, double d) {
    char tmp[40];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*g", prec, d);
        if (strtod(tmp, NULL) == d) break;
    }
    sb_puts(b, tmp);
    if (!strpbrk(tmp, ".eE")) sb_puts(b, ".0"); /* jansson keeps it a real */
}

/* Compact JSON text of a value, object members in their order. */
static void put_json(sb *b, json_t *v) {
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        sb_putc(b, '{');
        const char *k;
        json_t *x;
        bool first = true;
        json_object_foreach(v, k, x) {
            if (!first) sb_putc(b, ',');
            first = false;
            put_json_string(b, k, strlen(k));
            sb_putc(b, ':');
            put_json(b, x);
        }
        sb_putc(b, '}');
        break;
    }
    case JSON_ARRAY: {
        sb_putc(b, '[');
        for (size_t i = 0; i < json_array_size(v); i++) {
            if (i) sb_putc(b, ',');
            put_json(b, json_array_get(v, i));
        }
        sb_putc(b, ']');
        break;
    }
    case JSON_STRING: put_json_string(b, json_string_value(v), json_string_length(v)); break;
    case JSON_INTEGER: sb_printf(b, "%lld", (long long)json_integer_value(v)); break;
    case JSON_REAL: put_json_real(b, json_real_value(v)); break;
    case JSON_TRUE: sb_puts(b, "true"); break;
    case JSON_FALSE: sb_puts(b, "false"); break;
    case JSON_NULL: sb_puts(b, "null"); break;
    }
}

/* The GBNF literal of a constant's JSON text. */
void put_constant(sb *b, json_t *v) {
    sb t = {0};
    put_json(&t, v);
    if (t.oom) b->oom = true;
    else put_literal(b, t.p, t.n);
    free(t.p);
}

/* The GBNF literal of a property name's JSON text. */
void put_key_literal(sb *b, const char *key) {
    sb js = {0};
    put_json_string(&js, key, strlen(key));
    if (js.oom) b->oom = true;
    else put_literal(b, js.p, js.n);
    free(js.p);
}


/* ---- repetition ------------------------------------------------------------- */

/* item repeated min..max times (max < 0: unbounded), with a separator
 * between the items when sep is given: llama.cpp's _build_repetition. */
void put_repetition(sb *b, const char *item, long long min, long long max, const char *sep) {
    if (max == 0) return;
    if (!sep) {
        if (min == 0 && max == 1) sb_printf(b, "%s?", item);
        else if (min == 1 && max < 0) sb_printf(b, "%s+", item);
        else if (min == 0 && max < 0) sb_printf(b, "%s*", item);
        else if (max < 0) sb_printf(b, "%s{%lld,}", item, min);
        else sb_printf(b, "%s{%lld,%lld}", item, min, max);
        return;
    }
    if (min == 0) sb_putc(b, '(');
    sb_puts(b, item);
    sb_putc(b, ' ');
    sb tail = {0};
    sb_printf(&tail, "(%s %s)", sep, item);
    if (tail.oom) b->oom = true;
    else put_repetition(b, tail.p, min > 0 ? min - 1 : 0, max < 0 ? -1 : max - 1, NULL);
    free(tail.p);
    if (min == 0) sb_puts(b, ")?");
}

/* ---- integer ranges ----------------------------------------------------------- */

/* Decimal numbers from..to of the same length (from <= to): the prefix they
 * share, then a range on the first digit that differs. */
static void put_same_length_range(sb *b, const char *from, const char *to) {
    size_t n = strlen(from), i = 0;
    while (i < n && from[i] == to[i]) i++;
    if (i > 0) {
        sb_putc(b, '"');
        sb_putn(b, from, i);
        sb_putc(b, '"');
    }
    if (i == n) return;
    if (i > 0) sb_putc(b, ' ');
    const size_t rest = n - i - 1;
    if (rest == 0) {
        sb_printf(b, "[%c-%c]", from[i], to[i]);
        return;
    }
    bool from_zeros = true, to_nines = true;
    for (size_t k = i + 1; k < n; k++) {
        from_zeros &= from[k] == '0';
        to_nines &= to[k] == '9';
    }
    /* first digit lo..hi takes any rest; the ends that take part of it */
    char lo = from_zeros ? from[i] : (char)(from[i] + 1);
    char hi = to_nines ? to[i] : (char)(to[i] - 1);
    bool any = false;
    sb_putc(b, '(');
    if (!from_zeros) {
        char nines[24];
        memset(nines, '9', rest);
        nines[rest] = '\0';
        sb_printf(b, "\"%c\" (", from[i]);
        put_same_length_range(b, from + i + 1, nines);
        sb_putc(b, ')');
        any = true;
    }
    if (lo <= hi) {
        if (any) sb_puts(b, " | ");
        if (lo == hi) sb_printf(b, "\"%c\"", lo);
        else sb_printf(b, "[%c-%c]", lo, hi);
        if (rest == 1) sb_puts(b, " [0-9]");
        else sb_printf(b, " [0-9]{%zu}", rest);
        any = true;
    }
    if (!to_nines) {
        char zeros[24];
        memset(zeros, '0', rest);
        zeros[rest] = '\0';
        if (any) sb_puts(b, " | ");
        sb_printf(b, "\"%c\" (", to[i]);
        put_same_length_range(b, zeros, to + i + 1);
        sb_putc(b, ')');
    }
    sb_putc(b, ')');
}

static long long pow10ll(int e) {
    long long p = 1;
    while (e-- > 0) p *= 10;
    return p;
}

static int digit_count(long long v) {
    int n = 1;
    while (v >= 10) v /= 10, n++;
    return n;
}

/* Non-negative integers lo..hi in canonical form (no leading zeros). */
static void put_unsigned_range(sb *b, long long lo, long long hi) {
    const int la = digit_count(lo), lb = digit_count(hi);
    char from[24], to[24];
    /* the numbers with as many digits as lo */
    snprintf(from, sizeof from, "%lld", lo);
    snprintf(to, sizeof to, "%lld", la == lb ? hi : pow10ll(la) - 1);
    put_same_length_range(b, from, to);
    if (la == lb) return;
    /* every number of the lengths between */
    if (lb - la >= 2) {
        sb_puts(b, " | [1-9] [0-9]");
        if (la != lb - 2 || la != 1) {
            if (la == lb - 2) sb_printf(b, "{%d}", la);
            else sb_printf(b, "{%d,%d}", la, lb - 2);
        }
    }
    /* the numbers with as many digits as hi */
    snprintf(from, sizeof from, "%lld", pow10ll(lb - 1));
    snprintf(to, sizeof to, "%lld", hi);
    sb_puts(b, " | ");
    put_same_length_range(b, from, to);
}

/* Integers lo..hi (both within +-INT_LIMIT, lo <= hi). */
void put_int_range(sb *b, long long lo, long long hi) {
    bool any = false;
    if (lo < 0) {
        const long long nlo = hi < 0 ? -hi : 1, nhi = -lo;
        sb_puts(b, "\"-\" (");
        put_unsigned_range(b, nlo, nhi);
        sb_putc(b, ')');
        any = true;
    }
    if (hi >= 0) {
        if (any) sb_puts(b, " | ");
        put_unsigned_range(b, lo < 0 ? 0 : lo, hi);
    }
}
