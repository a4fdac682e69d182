/* JSON Schema to GBNF (see json_schema.h). The rules follow llama.cpp's
 * converter (examples/json_schema_to_grammar.py): the same primitive rules,
 * the same whitespace rule, the same object layout (required properties
 * first, then optional ones, in `properties` order; no extra properties
 * unless additionalProperties allows them) and the same rule names, so that
 * grammars can be compared. Where llama.cpp quietly drops a keyword or
 * accepts text the schema rejects, this file refuses or tightens: keywords
 * it cannot honour (or combinations, like pattern with minLength) fail with
 * SPROUT_ERR_UNSUPPORTED; oneOf must have branches no value can match
 * twice; pattern classes never write a raw quote, backslash or control
 * character; dates never name a day the month lacks; integer ranges are
 * exact; a $ref that comes back to itself before any character (left
 * recursion, which GBNF engines refuse) is refused here. */
#include "grammar/json_schema.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

/* The largest count a length, item count or pattern repetition may ask
 * for: the engine unrolls a bounded repetition into that many rules. */
#define MAX_REPEAT 10000
/* Nesting of schemas (and of allOf merges) before the call gives up. */
#define MAX_DEPTH 64
/* Integers have at most 16 digits, as llama.cpp's `integer` rule. */
#define INT_LIMIT 9999999999999999LL

/* ---- text building ------------------------------------------------------ */

typedef struct sb {
    char *p;
    size_t n, cap;
    bool oom;
} sb;

static void sb_putn(sb *b, const char *s, size_t n) {
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

static void sb_puts(sb *b, const char *s) { sb_putn(b, s, strlen(s)); }
static void sb_putc(sb *b, char c) { sb_putn(b, &c, 1); }

static void sb_printf(sb *b, const char *fmt, ...) SP_PRINTF(2, 3);
static void sb_printf(sb *b, const char *fmt, ...) {
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

/* ---- the converter's state ---------------------------------------------- */

typedef struct rule {
    char *name;
    char *body; /* NULL: reserved for a $ref whose schema is being visited */
    int nesting; /* cv.nesting when it was reserved */
} rule;

typedef struct ref_entry {
    char *ref;
    const char *name; /* owned by the rule table */
} ref_entry;

typedef struct cv {
    json_t *root;
    rule *rules;
    size_t n_rules, cap_rules;
    ref_entry *refs;
    size_t n_refs, cap_refs;
    int depth;
    int nesting; /* values inside objects and arrays being visited */
    sprout_status status; /* the first failure; later ones keep its message */
} cv;

static bool failed(const cv *c) { return c->status != SPROUT_OK; }

static void fail_oom(cv *c) {
    if (!failed(c)) c->status = sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "JSON schema: out of memory");
}

/* The conversion's first failure: st, "WHAT at PATH: why" (PATH "/" for
 * the root). */
static void vfail(cv *c, sprout_status st, const char *what, const char *path, const char *fmt, va_list ap) {
    char why[256];
    vsnprintf(why, sizeof why, fmt, ap);
    c->status = sp_fail(st, "%s at %s: %s", what, *path ? path : "/", why);
}

/* "unsupported keyword K at PATH/K: why" */
static void fail_keyword(cv *c, const char *path, const char *key, const char *fmt, ...) SP_PRINTF(4, 5);
static void fail_keyword(cv *c, const char *path, const char *key, const char *fmt, ...) {
    if (failed(c)) return;
    char what[192], at[1024];
    snprintf(what, sizeof what, "unsupported keyword %s", key);
    snprintf(at, sizeof at, "%s/%s", path, key);
    va_list ap;
    va_start(ap, fmt);
    vfail(c, SPROUT_ERR_UNSUPPORTED, what, at, fmt, ap);
    va_end(ap);
}

static void fail_unsupported(cv *c, const char *path, const char *fmt, ...) SP_PRINTF(3, 4);
static void fail_unsupported(cv *c, const char *path, const char *fmt, ...) {
    if (failed(c)) return;
    va_list ap;
    va_start(ap, fmt);
    vfail(c, SPROUT_ERR_UNSUPPORTED, "unsupported schema", path, fmt, ap);
    va_end(ap);
}

static void fail_format(cv *c, const char *path, const char *fmt, ...) SP_PRINTF(3, 4);
static void fail_format(cv *c, const char *path, const char *fmt, ...) {
    if (failed(c)) return;
    va_list ap;
    va_start(ap, fmt);
    vfail(c, SPROUT_ERR_FORMAT, "malformed JSON schema", path, fmt, ap);
    va_end(ap);
}

static char *take(cv *c, sb *b) {
    if (b->oom) {
        free(b->p);
        fail_oom(c);
        return NULL;
    }
    if (!b->p) {
        b->p = malloc(1);
        if (!b->p) {
            fail_oom(c);
            return NULL;
        }
        b->p[0] = '\0';
    }
    return b->p;
}

/* A rule name from any text: runs of characters outside [a-zA-Z0-9-]
 * become one '-', as llama.cpp names them. */
static void put_rule_name(sb *b, const char *s) {
    bool in_run = false;
    for (; *s; s++) {
        const char ch = *s;
        const bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '-';
        if (ok) {
            sb_putc(b, ch);
            in_run = false;
        } else if (!in_run) {
            sb_putc(b, '-');
            in_run = true;
        }
    }
}

static rule *find_rule(cv *c, const char *name) {
    for (size_t i = 0; i < c->n_rules; i++)
        if (!strcmp(c->rules[i].name, name)) return &c->rules[i];
    return NULL;
}

/* Whether naming `name` first in an alternative (a union's branch, an
 * alias) would be left recursion, which a GBNF engine cannot run: it is a
 * $ref still being visited, and no object or array (which start with a
 * character) lies between it and here. */
static bool left_recursive(cv *c, const char *name) {
    const rule *r = find_rule(c, name);
    return r && !r->body && r->nesting == c->nesting;
}

/* Appends a rule, taking name and body; a NULL name is out of memory. */
static rule *push_rule(cv *c, char *name, char *body) {
    if (!name) {
        free(body);
        fail_oom(c);
        return NULL;
    }
    if (c->n_rules == c->cap_rules) {
        const size_t cap = c->cap_rules ? c->cap_rules * 2 : 32;
        rule *r = realloc(c->rules, cap * sizeof *r);
        if (!r) {
            free(name);
            free(body);
            fail_oom(c);
            return NULL;
        }
        c->rules = r;
        c->cap_rules = cap;
    }
    c->rules[c->n_rules] = (rule){name, body, c->nesting};
    return &c->rules[c->n_rules++];
}

/* Adds `name ::= body` (body is taken) and returns the name it got: the
 * name itself when free, reserved, or already holding the same body, else
 * the name with the first free number appended. */
static const char *add_rule(cv *c, const char *raw_name, char *body) {
    if (!body || failed(c)) {
        free(body);
        return NULL;
    }
    sb nb = {0};
    put_rule_name(&nb, raw_name);
    char *base = take(c, &nb);
    if (!base) {
        free(body);
        return NULL;
    }
    rule *r = find_rule(c, base);
    if (!r || !r->body || !strcmp(r->body, body)) {
        if (!r) return (r = push_rule(c, base, body)) ? r->name : NULL;
        free(base);
        if (!r->body) r->body = body;
        else free(body);
        return r->name;
    }
    for (unsigned i = 0;; i++) {
        sb kb = {0};
        sb_printf(&kb, "%s%u", base, i);
        char *key = take(c, &kb);
        if (!key) break;
        r = find_rule(c, key);
        if (!r || (r->body && !strcmp(r->body, body))) {
            free(base);
            if (!r) return (r = push_rule(c, key, body)) ? r->name : NULL;
            free(key);
            free(body);
            return r->name;
        }
        free(key);
    }
    free(base);
    free(body);
    return NULL;
}

static const char *add_rule_str(cv *c, const char *name, const char *body) {
    char *copy = strdup(body);
    if (!copy) {
        fail_oom(c);
        return NULL;
    }
    return add_rule(c, name, copy);
}

/* ---- the fixed rules ------------------------------------------------------ */

typedef struct builtin {
    const char *name, *body, *deps[6];
} builtin;

/* Whitespace as llama.cpp's SPACE_RULE: none, one space, or one or two
 * newlines and up to 20 blanks (a model cannot run away in it). */
static const char SPACE_BODY[] = "| \" \" | \"\\n\"{1,2} [ \\t]{0,20}";

/* llama.cpp's primitives, with one change: `char`'s \u escapes leave out
 * the surrogates, so that a string's characters are code points (minLength
 * and maxLength count code points). */
static const builtin BUILTINS[] = {
    {"boolean", "(\"true\" | \"false\")", {0}},
    {"decimal-part", "[0-9]{1,16}", {0}},
    {"integral-part", "[0] | [1-9] [0-9]{0,15}", {0}},
    {"number", "(\"-\"? integral-part) (\".\" decimal-part)? ([eE] [-+]? integral-part)?", {"integral-part", "decimal-part"}},
    {"integer", "(\"-\"? integral-part)", {"integral-part"}},
    {"value", "object | array | string | number | boolean | null", {"object", "array", "string", "number", "boolean", "null"}},
    {"object", "\"{\" space ( string \":\" space value (\",\" space string \":\" space value)* )? space \"}\"", {"string", "value"}},
    {"array", "\"[\" space ( value (\",\" space value)* )? space \"]\"", {"value"}},
    {"uuid",
     "\"\\\"\" [0-9a-fA-F]{8} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{12} \"\\\"\"",
     {0}},
    {"char", "[^\"\\\\\\x7F\\x00-\\x1F] | [\\\\] ([\"\\\\bfnrt] | \"u\" ([0-9a-cA-CefEF] [0-9a-fA-F]{3} | [dD] [0-7] [0-9a-fA-F]{2}))", {0}},
    {"string", "\"\\\"\" char* \"\\\"\"", {"char"}},
    {"null", "\"null\"", {0}},
    /* dates: no day 29 in February, no 31st in a month of 30 days */
    {"date",
     "[0-9]{4} \"-\" ( ( \"0\" [13578] | \"1\" [02] ) \"-\" ( \"0\" [1-9] | [12] [0-9] | \"3\" [01] ) | ( \"0\" [469] | \"11\" ) "
     "\"-\" ( \"0\" [1-9] | [12] [0-9] | \"30\" ) | \"02-\" ( \"0\" [1-9] | \"1\" [0-9] | \"2\" [0-8] ) )",
     {0}},
    {"time",
     "([01] [0-9] | \"2\" [0-3]) \":\" [0-5] [0-9] \":\" [0-5] [0-9] ( \".\" [0-9]{3} )? ( \"Z\" | ( \"+\" | \"-\" ) ( [01] [0-9] | "
     "\"2\" [0-3] ) \":\" [0-5] [0-9] )",
     {0}},
    {"date-time", "date \"T\" time", {"date", "time"}},
    {"date-string", "\"\\\"\" date \"\\\"\"", {"date"}},
    {"time-string", "\"\\\"\" time \"\\\"\"", {"time"}},
    {"date-time-string", "\"\\\"\" date-time \"\\\"\"", {"date-time"}},
    /* ajv-formats' email: dot-atom local part, host labels of up to 63 */
    {"email-string", "\"\\\"\" email-atom (\".\" email-atom)* \"@\" (email-label \".\")+ email-label \"\\\"\"",
     {"email-atom", "email-label"}},
    {"email-atom", "[a-zA-Z0-9!#$%&'*+/=?^_`{|}~\\x2D]+", {0}},
    {"email-label", "[a-zA-Z0-9] ([a-zA-Z0-9\\x2D]{0,61} [a-zA-Z0-9])?", {0}},
    /* a key character without escapes (extra property names) */
    {"kchar", "[^\"\\\\\\x7F\\x00-\\x1F]", {0}},
    /* `.` of a pattern: what ECMAScript's dot matches, less what JSON must escape */
    {"dot", "[^\"\\\\\\x7F\\x00-\\x1F\\u2028\\u2029]", {0}},
};

static const builtin *find_builtin(const char *name) {
    for (size_t i = 0; i < sizeof BUILTINS / sizeof BUILTINS[0]; i++)
        if (!strcmp(BUILTINS[i].name, name)) return &BUILTINS[i];
    return NULL;
}

/* Adds a fixed rule and those it uses; returns its name. */
static const char *add_builtin(cv *c, const char *name) {
    const builtin *b = find_builtin(name);
    if (!b) return NULL;
    const char *got = add_rule_str(c, b->name, b->body);
    for (size_t i = 0; got && i < 6 && b->deps[i]; i++)
        if (!find_rule(c, b->deps[i]) && !add_builtin(c, b->deps[i])) return NULL;
    return got;
}

static bool reserved_name(const char *name) {
    return !strcmp(name, "root") || !strcmp(name, "space") || find_builtin(name) != NULL;
}

/* ---- JSON text and GBNF literals -------------------------------------- */

/* Puts a GBNF string literal of bytes s[0..n). */
static void put_literal(sb *b, const char *s, size_t n) {
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
static void put_json_char(sb *b, uint32_t cp) {
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
static uint32_t next_cp(const char **s) {
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
static void put_constant(sb *b, json_t *v) {
    sb t = {0};
    put_json(&t, v);
    if (t.oom) b->oom = true;
    else put_literal(b, t.p, t.n);
    free(t.p);
}

/* The GBNF literal of a property name's JSON text. */
static void put_key_literal(sb *b, const char *key) {
    sb js = {0};
    put_json_string(&js, key, strlen(key));
    if (js.oom) b->oom = true;
    else put_literal(b, js.p, js.n);
    free(js.p);
}

/* ---- keywords ------------------------------------------------------------- */

/* Ignored: they describe, they do not constrain. */
static const char *const ANNOTATIONS[] = {
    "description", "title", "$schema", "$id", "default", "examples", "$comment", "deprecated", "readOnly", "writeOnly",
    "$defs", "definitions", "contentMediaType", "contentEncoding", "discriminator", /* OpenAPI's, as pydantic writes it */
};

static const char *const SUPPORTED[] = {
    "type", "properties", "required", "additionalProperties", "enum", "const", "items", "prefixItems", "minItems", "maxItems",
    "minLength", "maxLength", "pattern", "format", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "anyOf",
    "oneOf", "allOf", "$ref",
};

static bool in_list(const char *key, const char *const *list, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!strcmp(key, list[i])) return true;
    return false;
}

static bool is_annotation(const char *key) { return in_list(key, ANNOTATIONS, sizeof ANNOTATIONS / sizeof ANNOTATIONS[0]); }

enum {
    T_NULL = 1,
    T_BOOLEAN = 2,
    T_OBJECT = 4,
    T_ARRAY = 8,
    T_STRING = 16,
    T_NUMBER = 32,
    T_INTEGER = 64,
};

static const char *const TYPE_NAMES[] = {"null", "boolean", "object", "array", "string", "number", "integer"};

static int type_bit(const char *name) {
    for (int i = 0; i < 7; i++)
        if (!strcmp(name, TYPE_NAMES[i])) return 1 << i;
    return 0;
}

/* The family of types a keyword constrains (0: none or several). */
static int keyword_family(const char *key) {
    static const char *const obj[] = {"properties", "required", "additionalProperties"};
    static const char *const arr[] = {"items", "prefixItems", "minItems", "maxItems"};
    static const char *const str[] = {"minLength", "maxLength", "pattern", "format"};
    static const char *const num[] = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"};
    if (in_list(key, obj, 3)) return T_OBJECT;
    if (in_list(key, arr, 4)) return T_ARRAY;
    if (in_list(key, str, 4)) return T_STRING;
    if (in_list(key, num, 4)) return T_NUMBER | T_INTEGER;
    return 0;
}

/* The type keyword as a mask of T_*; 0 with a failure when malformed. */
static int parse_type(cv *c, json_t *t, const char *path) {
    if (json_is_string(t)) {
        const int bit = type_bit(json_string_value(t));
        if (!bit) fail_format(c, path, "unknown type \"%s\"", json_string_value(t));
        return bit;
    }
    if (!json_is_array(t) || json_array_size(t) == 0) {
        fail_format(c, path, "type is neither a type name nor a list of them");
        return 0;
    }
    int mask = 0;
    for (size_t i = 0; i < json_array_size(t); i++) {
        json_t *e = json_array_get(t, i);
        const int bit = json_is_string(e) ? type_bit(json_string_value(e)) : 0;
        if (!bit) {
            fail_format(c, path, "type list holds something that is no type name");
            return 0;
        }
        mask |= bit;
    }
    return mask;
}

/* Whether a constant is of one of the types in mask. */
static bool value_has_type(json_t *v, int mask) {
    switch (json_typeof(v)) {
    case JSON_NULL: return mask & T_NULL;
    case JSON_TRUE:
    case JSON_FALSE: return mask & T_BOOLEAN;
    case JSON_OBJECT: return mask & T_OBJECT;
    case JSON_ARRAY: return mask & T_ARRAY;
    case JSON_STRING: return mask & T_STRING;
    case JSON_INTEGER: return mask & (T_NUMBER | T_INTEGER);
    case JSON_REAL: {
        const double d = json_real_value(v);
        return (mask & T_NUMBER) || ((mask & T_INTEGER) && d == floor(d));
    }
    }
    return false;
}

/* A non-negative count keyword (minLength, maxItems, ...). */
static bool get_count(cv *c, json_t *s, const char *key, const char *path, long long *out) {
    json_t *v = json_object_get(s, key);
    if (!v) return false;
    double d = json_is_integer(v) ? (double)json_integer_value(v) : json_is_real(v) ? json_real_value(v) : -1;
    if (d < 0 || d != floor(d)) {
        fail_format(c, path, "%s is not a non-negative integer", key);
        return false;
    }
    if (d > MAX_REPEAT) {
        fail_keyword(c, path, key, "counts above %d are not supported", MAX_REPEAT);
        return false;
    }
    *out = (long long)d;
    return true;
}

/* The JSON pointer of a child: path + "/" + key with ~ and / escaped. */
static char *child_path(cv *c, const char *path, const char *key) {
    sb b = {0};
    sb_puts(&b, path);
    sb_putc(&b, '/');
    for (const char *k = key; *k; k++) {
        if (*k == '~') sb_puts(&b, "~0");
        else if (*k == '/') sb_puts(&b, "~1");
        else sb_putc(&b, *k);
    }
    return take(c, &b);
}

static char *child_path_index(cv *c, const char *path, const char *key, size_t i) {
    sb b = {0};
    sb_printf(&b, "%s/%s/%zu", path, key, i);
    return take(c, &b);
}

/* name-suffix, or suffix alone at the top (llama.cpp's child names). */
static char *child_name(cv *c, const char *name, const char *suffix) {
    sb b = {0};
    sb_puts(&b, name);
    if (*name) sb_putc(&b, '-');
    sb_puts(&b, suffix);
    return take(c, &b);
}

/* ---- repetition ------------------------------------------------------------- */

/* item repeated min..max times (max < 0: unbounded), with a separator
 * between the items when sep is given: llama.cpp's _build_repetition. */
static void put_repetition(sb *b, const char *item, long long min, long long max, const char *sep) {
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
static void put_int_range(sb *b, long long lo, long long hi) {
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

/* ---- patterns --------------------------------------------------------------- */

typedef struct range {
    uint32_t lo, hi;
} range;

typedef struct cls {
    range r[64];
    int n;
    bool negated;
} cls;

typedef struct pat {
    cv *c;
    const char *path;
    const char *s, *p, *end;
} pat;

static void pat_fail(pat *x, const char *fmt, ...) SP_PRINTF(2, 3);
static void pat_fail(pat *x, const char *fmt, ...) {
    char why[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    fail_keyword(x->c, x->path, "pattern", "%s at offset %d of /%s/", why, (int)(x->p - x->s), x->s);
}

static bool cls_add(pat *x, cls *k, uint32_t lo, uint32_t hi) {
    if (k->n == (int)(sizeof k->r / sizeof k->r[0])) {
        pat_fail(x, "too many ranges in a class");
        return false;
    }
    k->r[k->n++] = (range){lo, hi};
    return true;
}

static int hex_value(char ch) {
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    return -1;
}

static bool read_hex(pat *x, int digits, uint32_t *out) {
    uint32_t v = 0;
    for (int i = 0; i < digits; i++) {
        const int h = x->p < x->end ? hex_value(*x->p) : -1;
        if (h < 0) {
            pat_fail(x, "bad hex escape");
            return false;
        }
        v = v * 16 + (uint32_t)h;
        x->p++;
    }
    *out = v;
    return true;
}

/* ECMAScript's \s */
static const range SPACES[] = {{0x09, 0x0D}, {0x20, 0x20}, {0xA0, 0xA0}, {0x1680, 0x1680}, {0x2000, 0x200A},
                               {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F}, {0x3000, 0x3000}, {0xFEFF, 0xFEFF}};
static const range DIGITS[] = {{'0', '9'}};
static const range WORD[] = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};

/* After a backslash: a class escape (\d \w \s and negations) into k, or a
 * single code point into *cp (return 1), 2 for a class, 0 on failure. */
static int read_escape(pat *x, cls *k, uint32_t *cp, bool in_class) {
    if (x->p >= x->end) {
        pat_fail(x, "trailing backslash");
        return 0;
    }
    const char e = *x->p++;
    const range *set = NULL;
    int n = 0;
    switch (e) {
    case 'd':
    case 'D': set = DIGITS, n = 1; break;
    case 'w':
    case 'W': set = WORD, n = 4; break;
    case 's':
    case 'S': set = SPACES, n = (int)(sizeof SPACES / sizeof SPACES[0]); break;
    case 'n': *cp = '\n'; return 1;
    case 'r': *cp = '\r'; return 1;
    case 't': *cp = '\t'; return 1;
    case 'f': *cp = '\f'; return 1;
    case 'v': *cp = '\v'; return 1;
    case '0': *cp = 0; return 1;
    case 'x': return read_hex(x, 2, cp) ? 1 : 0;
    case 'u':
        if (!read_hex(x, 4, cp)) return 0;
        if (*cp >= 0xD800 && *cp <= 0xDFFF) {
            pat_fail(x, "surrogate escapes are not supported");
            return 0;
        }
        return 1;
    case 'b':
        if (in_class) {
            *cp = '\b';
            return 1;
        }
        break;
    default:
        if (!((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') || (e >= '0' && e <= '9')) && (unsigned char)e < 0x80) {
            *cp = (uint32_t)(unsigned char)e; /* an escaped punctuation mark */
            return 1;
        }
        break;
    }
    if (!set) {
        x->p--;
        pat_fail(x, "escape \\%c is not supported", e);
        return 0;
    }
    if (e >= 'A' && e <= 'Z') { /* a negation */
        if (in_class) {
            pat_fail(x, "\\%c inside a class is not supported", e);
            return 0;
        }
        k->negated = true;
    }
    for (int i = 0; i < n; i++)
        if (!cls_add(x, k, set[i].lo, set[i].hi)) return 0;
    return 2;
}

static void put_class_char(sb *b, uint32_t cp) {
    if ((cp >= '0' && cp <= '9') || (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z')) sb_putc(b, (char)cp);
    else if (cp < 0x80) sb_printf(b, "\\x%02X", (unsigned)cp);
    else if (cp < 0x10000) sb_printf(b, "\\u%04X", (unsigned)cp);
    else sb_printf(b, "\\U%08X", (unsigned)cp);
}

static void put_class_range(sb *b, uint32_t lo, uint32_t hi) {
    put_class_char(b, lo);
    if (hi != lo) {
        sb_putc(b, '-');
        put_class_char(b, hi);
    }
}

/* The characters a JSON string holds only escaped: '"', '\' and controls. */
static bool json_escaped(uint32_t cp) { return cp < 0x20 || cp == '"' || cp == '\\'; }

/* GBNF of one class. A negated class (and `.`) leaves out what JSON must
 * escape; a plain one writes those characters as their JSON escapes. */
static void put_class(sb *b, const cls *k) {
    if (k->negated) {
        sb_puts(b, "[^\"\\\\\\x7F\\x00-\\x1F");
        for (int i = 0; i < k->n; i++) put_class_range(b, k->r[i].lo, k->r[i].hi);
        sb_putc(b, ']');
        return;
    }
    sb plain = {0}, alts = {0};
    int n_alts = 0;
    for (int i = 0; i < k->n; i++) {
        uint32_t lo = k->r[i].lo;
        const uint32_t hi = k->r[i].hi;
        while (lo <= hi) {
            if (json_escaped(lo)) {
                sb lit = {0};
                put_json_char(&lit, lo);
                if (n_alts++) sb_puts(&alts, " | ");
                if (lit.p) put_literal(&alts, lit.p, lit.n);
                free(lit.p);
                lo++;
                continue;
            }
            uint32_t top = lo;
            while (top < hi && !json_escaped(top + 1)) top++;
            put_class_range(&plain, lo, top);
            if (top == hi) break;
            lo = top + 1;
        }
    }
    if (plain.oom || alts.oom) b->oom = true;
    const bool has_plain = plain.n > 0;
    if (n_alts && has_plain) sb_putc(b, '(');
    else if (n_alts > 1) sb_putc(b, '(');
    if (has_plain) {
        sb_putc(b, '[');
        sb_puts(b, plain.p);
        sb_putc(b, ']');
        if (n_alts) sb_puts(b, " | ");
    }
    if (n_alts) sb_puts(b, alts.p);
    if (n_alts && (has_plain || n_alts > 1)) sb_putc(b, ')');
    if (!has_plain && !n_alts) sb_puts(b, "[^\\x00-\\U0010FFFF]"); /* matches nothing */
    free(plain.p);
    free(alts.p);
}

static bool parse_class(pat *x, cls *k) {
    /* x->p is past '[' */
    if (x->p < x->end && *x->p == '^') {
        k->negated = true;
        x->p++;
    }
    while (x->p < x->end && *x->p != ']') {
        uint32_t lo;
        if (*x->p == '\\') {
            x->p++;
            const int r = read_escape(x, k, &lo, true);
            if (!r) return false;
            if (r == 2) continue;
        } else {
            lo = next_cp(&x->p);
        }
        uint32_t hi = lo;
        if (x->p + 1 < x->end && *x->p == '-' && x->p[1] != ']') {
            x->p++;
            if (*x->p == '\\') {
                x->p++;
                cls dummy = {0};
                const int r = read_escape(x, &dummy, &hi, true);
                if (r != 1) {
                    if (r) pat_fail(x, "a class escape ends a range");
                    return false;
                }
            } else {
                hi = next_cp(&x->p);
            }
            if (hi < lo) {
                pat_fail(x, "range out of order");
                return false;
            }
        }
        if (!cls_add(x, k, lo, hi)) return false;
    }
    if (x->p >= x->end) {
        pat_fail(x, "unterminated class");
        return false;
    }
    x->p++; /* ']' */
    return true;
}

static void parse_alternation(pat *x, sb *out);

/* A quantifier after an atom, if any, appended to the atom's text. */
static bool parse_quantifier(pat *x, sb *atom) {
    if (x->p >= x->end) return true;
    const char q = *x->p;
    if (q == '*' || q == '+' || q == '?') {
        x->p++;
        sb_putc(atom, q);
    } else if (q == '{') {
        const char *start = x->p++;
        long long m = -1, n = -1;
        char *endp;
        if (x->p < x->end && *x->p >= '0' && *x->p <= '9') m = strtoll(x->p, &endp, 10), x->p = endp;
        bool comma = false;
        if (x->p < x->end && *x->p == ',') {
            comma = true;
            x->p++;
            if (x->p < x->end && *x->p >= '0' && *x->p <= '9') n = strtoll(x->p, &endp, 10), x->p = endp;
        }
        if (m < 0 || x->p >= x->end || *x->p != '}') {
            x->p = start;
            pat_fail(x, "bad or literal { quantifier");
            return false;
        }
        x->p++;
        if (!comma) n = m;
        if (m > MAX_REPEAT || n > MAX_REPEAT || (n >= 0 && n < m)) {
            x->p = start;
            pat_fail(x, "repetition count out of range");
            return false;
        }
        if (n < 0) sb_printf(atom, "{%lld,}", m);
        else sb_printf(atom, "{%lld,%lld}", m, n);
    } else {
        return true;
    }
    if (x->p < x->end && (*x->p == '?' || *x->p == '+' || *x->p == '*' || *x->p == '{')) {
        pat_fail(x, "lazy or stacked quantifiers are not supported");
        return false;
    }
    return true;
}

/* One branch: atoms with quantifiers, literals merged into one string. */
static void parse_sequence(pat *x, sb *out) {
    bool any = false;
    sb lit = {0}; /* the JSON text of the pending literal run */
    while (x->p < x->end && *x->p != '|' && *x->p != ')' && !failed(x->c)) {
        sb atom = {0};
        bool literal = false;
        uint32_t cp = 0;
        const char ch = *x->p;
        if (ch == '(') {
            x->p++;
            if (x->p + 1 < x->end && x->p[0] == '?' && x->p[1] == ':') x->p += 2;
            else if (x->p < x->end && *x->p == '?') {
                pat_fail(x, "lookaround and named groups are not supported");
                break;
            }
            sb inner = {0};
            parse_alternation(x, &inner);
            if (failed(x->c)) {
                free(inner.p);
                break;
            }
            if (x->p >= x->end || *x->p != ')') {
                free(inner.p);
                pat_fail(x, "unbalanced parenthesis");
                break;
            }
            x->p++;
            sb_putc(&atom, '(');
            if (inner.p) sb_puts(&atom, inner.p);
            sb_putc(&atom, ')');
            if (inner.oom) atom.oom = true;
            free(inner.p);
        } else if (ch == '[') {
            x->p++;
            cls k = {0};
            if (!parse_class(x, &k)) break;
            put_class(&atom, &k);
        } else if (ch == '.') {
            x->p++;
            sb_puts(&atom, "dot");
            add_builtin(x->c, "dot");
        } else if (ch == '\\') {
            x->p++;
            cls k = {0};
            const int r = read_escape(x, &k, &cp, false);
            if (!r) break;
            if (r == 2) put_class(&atom, &k);
            else literal = true;
        } else if (ch == '^' || ch == '$') {
            pat_fail(x, "anchors inside the pattern are not supported");
            break;
        } else if (ch == '*' || ch == '+' || ch == '?' || ch == '{') {
            pat_fail(x, "quantifier without an atom");
            break;
        } else {
            cp = next_cp(&x->p);
            literal = true;
        }
        if (literal) {
            put_json_char(&atom, cp);
            const bool quantified = x->p < x->end && strchr("*+?{", *x->p);
            if (!quantified) { /* joins the run */
                sb_putn(&lit, atom.p, atom.n);
                free(atom.p);
                continue;
            }
            sb quoted = {0};
            put_literal(&quoted, atom.p, atom.n);
            free(atom.p);
            atom = quoted;
        }
        if (!parse_quantifier(x, &atom)) {
            free(atom.p);
            break;
        }
        if (lit.n) {
            if (any) sb_putc(out, ' ');
            put_literal(out, lit.p, lit.n);
            lit.n = 0;
            any = true;
        }
        if (any) sb_putc(out, ' ');
        sb_putn(out, atom.p, atom.n);
        if (atom.oom) out->oom = true;
        free(atom.p);
        any = true;
    }
    if (lit.n) {
        if (any) sb_putc(out, ' ');
        put_literal(out, lit.p, lit.n);
        any = true;
    }
    if (lit.oom) out->oom = true;
    free(lit.p);
    if (!any) sb_puts(out, "\"\"");
}

static void parse_alternation(pat *x, sb *out) {
    parse_sequence(x, out);
    while (!failed(x->c) && x->p < x->end && *x->p == '|') {
        x->p++;
        sb_puts(out, " | ");
        parse_sequence(x, out);
    }
}

/* Whether the pattern has a '|' outside every group and class. */
static bool top_level_bar(const char *s, const char *end) {
    int depth = 0;
    bool in_class = false;
    for (const char *p = s; p < end; p++) {
        if (*p == '\\') {
            p++;
            continue;
        }
        if (in_class) {
            if (*p == ']') in_class = false;
        } else if (*p == '[') {
            in_class = true;
        } else if (*p == '(') {
            depth++;
        } else if (*p == ')') {
            depth--;
        } else if (*p == '|' && depth == 0) {
            return true;
        }
    }
    return false;
}

/* A string matching an ECMAScript pattern (a search: an unanchored side
 * takes any characters). */
static const char *visit_pattern(cv *c, json_t *v, const char *rule_name, const char *path) {
    if (!json_is_string(v)) {
        fail_format(c, path, "pattern is not a string");
        return NULL;
    }
    const char *s = json_string_value(v);
    const size_t len = json_string_length(v);
    if (strlen(s) != len) {
        fail_keyword(c, path, "pattern", "NUL in a pattern is not supported");
        return NULL;
    }
    pat x = {c, path, s, s, s + len};
    const bool head = len > 0 && s[0] == '^';
    size_t slashes = 0; /* before a final '$': an odd count escapes it */
    while (len >= 2 + slashes && s[len - 2 - slashes] == '\\') slashes++;
    const bool tail = len > (size_t)head && s[len - 1] == '$' && slashes % 2 == 0;
    if (head) x.p++;
    if (tail) x.end--;
    if ((head || tail) && top_level_bar(x.p, x.end)) {
        fail_keyword(c, path, "pattern", "an anchored pattern with '|' outside a group is not supported: /%s/", s);
        return NULL;
    }
    sb body = {0};
    sb_puts(&body, "\"\\\"\" ");
    if (!head) {
        sb_puts(&body, "char* ");
        add_builtin(c, "char");
    }
    sb_putc(&body, '(');
    parse_alternation(&x, &body);
    if (!failed(c) && x.p != x.end) pat_fail(&x, "unbalanced parenthesis");
    sb_putc(&body, ')');
    if (!tail) {
        sb_puts(&body, " char*");
        add_builtin(c, "char");
    }
    sb_puts(&body, " \"\\\"\"");
    if (failed(c)) {
        free(body.p);
        return NULL;
    }
    return add_rule(c, rule_name, take(c, &body));
}

/* ---- schemas ------------------------------------------------------------------ */

static const char *visit(cv *c, json_t *s, const char *name, const char *path);

/* The schema a local $ref names; NULL with a failure. */
static json_t *resolve_pointer(cv *c, const char *ref, const char *path) {
    if (ref[0] != '#') {
        fail_keyword(c, path, "$ref", "only local references (#...) are supported, not \"%s\"", ref);
        return NULL;
    }
    if (strchr(ref, '%')) {
        fail_keyword(c, path, "$ref", "percent-encoded references are not supported: \"%s\"", ref);
        return NULL;
    }
    json_t *t = c->root;
    const char *p = ref + 1;
    if (*p && *p != '/') {
        fail_keyword(c, path, "$ref", "anchors are not supported: \"%s\"", ref);
        return NULL;
    }
    while (*p == '/' && t) {
        p++;
        sb seg = {0};
        while (*p && *p != '/') {
            if (p[0] == '~' && p[1] == '0') sb_putc(&seg, '~'), p += 2;
            else if (p[0] == '~' && p[1] == '1') sb_putc(&seg, '/'), p += 2;
            else sb_putc(&seg, *p++);
        }
        char *key = take(c, &seg);
        if (!key) return NULL;
        if (json_is_object(t)) {
            t = json_object_get(t, key);
        } else if (json_is_array(t)) {
            char *endp;
            const unsigned long i = strtoul(key, &endp, 10);
            t = *key && !*endp ? json_array_get(t, i) : NULL;
        } else {
            t = NULL;
        }
        free(key);
    }
    if (!t) fail_format(c, path, "$ref \"%s\" points nowhere", ref);
    return t;
}

static const char *visit_ref(cv *c, const char *ref, const char *path) {
    for (size_t i = 0; i < c->n_refs; i++)
        if (!strcmp(c->refs[i].ref, ref)) return c->refs[i].name;
    json_t *target = resolve_pointer(c, ref, path);
    if (!target) return NULL;
    /* reserve the rule's name first: a recursive reference uses it */
    sb nb = {0};
    sb_puts(&nb, "ref");
    put_rule_name(&nb, ref + 1);
    char *want = take(c, &nb);
    if (!want) return NULL;
    char *name = NULL;
    for (unsigned i = 0; !failed(c); i++) {
        sb kb = {0};
        if (i == 0) sb_puts(&kb, want);
        else sb_printf(&kb, "%s%u", want, i - 1);
        name = take(c, &kb);
        if (!name || !find_rule(c, name)) break;
        free(name);
        name = NULL;
    }
    free(want);
    if (!name) return NULL;
    rule *r = push_rule(c, name, NULL);
    if (!r) return NULL;
    const char *kept = r->name; /* the table may move; the name does not */
    if (c->n_refs == c->cap_refs) {
        const size_t cap = c->cap_refs ? c->cap_refs * 2 : 8;
        ref_entry *e = realloc(c->refs, cap * sizeof *e);
        if (!e) {
            fail_oom(c);
            return NULL;
        }
        c->refs = e;
        c->cap_refs = cap;
    }
    char *ref_copy = strdup(ref);
    if (!ref_copy) {
        fail_oom(c);
        return NULL;
    }
    c->refs[c->n_refs++] = (ref_entry){ref_copy, kept};
    const char *got = visit(c, target, kept, ref + 1);
    if (!got) return NULL;
    r = find_rule(c, kept);
    if (!r->body) {
        if (left_recursive(c, got)) {
            fail_keyword(c, path, "$ref", "\"%s\" refers back to itself before any character (left recursion)", ref);
            return NULL;
        }
        r->body = strdup(got);
        if (!r->body) {
            fail_oom(c);
            return NULL;
        }
    }
    return kept;
}

/* Merges one part of an allOf (or an anyOf branch's context) into dst:
 * properties joined, required lists joined, types intersected; any other
 * keyword must not appear twice with different values. */
static void merge_part(cv *c, json_t *dst, json_t *part, const char *path) {
    if (failed(c)) return;
    if (++c->depth > MAX_DEPTH) {
        fail_keyword(c, path, "allOf", "nests or recurses more than %d deep", MAX_DEPTH);
        c->depth--;
        return;
    }
    if (json_is_true(part)) goto done;
    if (json_is_false(part)) {
        fail_keyword(c, path, "allOf", "a false schema (nothing matches) cannot be a grammar");
        goto done;
    }
    if (!json_is_object(part)) {
        fail_format(c, path, "an allOf part is not a schema");
        goto done;
    }
    json_t *ref = json_object_get(part, "$ref");
    if (ref) {
        if (!json_is_string(ref)) {
            fail_format(c, path, "$ref is not a string");
            goto done;
        }
        const char *k;
        json_t *v;
        json_object_foreach(part, k, v) {
            if (strcmp(k, "$ref") && !is_annotation(k)) {
                fail_keyword(c, path, k, "keywords beside $ref are not supported");
                goto done;
            }
        }
        json_t *t = resolve_pointer(c, json_string_value(ref), path);
        if (t) merge_part(c, dst, t, path);
        goto done;
    }
    json_t *all = json_object_get(part, "allOf");
    if (all) {
        if (!json_is_array(all) || json_array_size(all) == 0) {
            fail_format(c, path, "allOf is not a non-empty list");
            goto done;
        }
        for (size_t i = 0; i < json_array_size(all) && !failed(c); i++) {
            char *sub = child_path_index(c, path, "allOf", i);
            if (sub) merge_part(c, dst, json_array_get(all, i), sub);
            free(sub);
        }
    }
    const bool dst_shape = json_object_get(dst, "properties") || json_object_get(dst, "additionalProperties");
    const bool part_shape = json_object_get(part, "properties") || json_object_get(part, "additionalProperties");
    json_t *dap = json_object_get(dst, "additionalProperties"), *pap = json_object_get(part, "additionalProperties");
    if (dst_shape && part_shape && ((dap && !json_is_true(dap)) || (pap && !json_is_true(pap)))) {
        fail_keyword(c, path, "additionalProperties", "combined with properties of another part of allOf/anyOf");
        goto done;
    }
    if ((json_object_get(dst, "items") && json_object_get(part, "prefixItems")) ||
        (json_object_get(dst, "prefixItems") && json_object_get(part, "items"))) {
        fail_keyword(c, path, "items", "items and prefixItems from different parts of allOf/anyOf");
        goto done;
    }
    const char *k;
    json_t *v;
    json_object_foreach(part, k, v) {
        if (failed(c)) break;
        if (!strcmp(k, "allOf") || is_annotation(k)) continue;
        json_t *have = json_object_get(dst, k);
        if (!have) {
            json_object_set(dst, k, v);
            continue;
        }
        if (!strcmp(k, "properties") && json_is_object(have) && json_is_object(v)) {
            json_t *merged = json_copy(have);
            const char *pk;
            json_t *pv;
            json_object_foreach(v, pk, pv) {
                json_t *old = json_object_get(merged, pk);
                if (old && !json_equal(old, pv)) {
                    fail_keyword(c, path, "allOf", "property \"%s\" is defined twice, differently", pk);
                    break;
                }
                json_object_set(merged, pk, pv);
            }
            json_object_set_new(dst, k, merged);
        } else if (!strcmp(k, "required") && json_is_array(have) && json_is_array(v)) {
            json_t *merged = json_copy(have);
            for (size_t i = 0; i < json_array_size(v); i++) json_array_append(merged, json_array_get(v, i));
            json_object_set_new(dst, k, merged);
        } else if (!strcmp(k, "type")) {
            const int a = parse_type(c, have, path), b = parse_type(c, v, path);
            if (failed(c)) break;
            int m = a & b;
            if (((a & T_NUMBER) && (b & T_INTEGER)) || ((a & T_INTEGER) && (b & T_NUMBER))) m |= T_INTEGER;
            if (m & T_INTEGER) m &= ~T_NUMBER | (a & b & T_NUMBER);
            if (!m) {
                fail_keyword(c, path, "type", "the parts of allOf/anyOf share no type");
                break;
            }
            json_t *list = json_array();
            for (int i = 0; i < 7; i++)
                if (m & (1 << i)) json_array_append_new(list, json_string(TYPE_NAMES[i]));
            json_object_set_new(dst, k, list);
        } else if (!json_equal(have, v)) {
            fail_keyword(c, path, k, "given twice with different values across allOf/anyOf");
        }
    }
done:
    c->depth--;
}

/* Whether s has a keyword other than annotations and those in skip. */
static const char *first_constraint(json_t *s, const char *const *skip, size_t n_skip) {
    const char *k;
    json_t *v;
    json_object_foreach(s, k, v) {
        if (!is_annotation(k) && !in_list(k, skip, n_skip)) return k;
    }
    return NULL;
}

/* s with its $ref chain followed (NULL with a failure). */
static json_t *deref(cv *c, json_t *s, const char *path) {
    for (int hops = 0; s && json_is_object(s) && json_is_string(json_object_get(s, "$ref")); hops++) {
        if (hops == MAX_DEPTH) {
            fail_format(c, path, "$ref chain longer than %d", MAX_DEPTH);
            return NULL;
        }
        s = resolve_pointer(c, json_string_value(json_object_get(s, "$ref")), path);
    }
    return s;
}

/* The types a schema's values may have (declared), widened so that an
 * integer is also a number and back; with infer, a schema without type
 * counts as the one type its keywords constrain (the type its grammar
 * writes). */
static int value_types(json_t *s, bool infer) {
    const int all = 0x7F;
    if (!json_is_object(s)) return all;
    int mask = all;
    json_t *t = json_object_get(s, "type");
    if (json_is_string(t)) {
        mask = type_bit(json_string_value(t));
    } else if (json_is_array(t)) {
        mask = 0;
        for (size_t i = 0; i < json_array_size(t); i++) {
            json_t *e = json_array_get(t, i);
            mask |= json_is_string(e) ? type_bit(json_string_value(e)) : 0x7F;
        }
    } else if (infer) {
        int families = 0;
        const char *k;
        json_t *v;
        json_object_foreach(s, k, v) families |= keyword_family(k);
        if (families) mask = families;
    }
    json_t *cst = json_object_get(s, "const"), *en = json_object_get(s, "enum");
    if (cst || json_is_array(en)) {
        int of_values = 0;
        for (size_t i = 0; i < (cst ? 1 : json_array_size(en)); i++) {
            json_t *v = cst ? cst : json_array_get(en, i);
            for (int b = 1; b <= T_INTEGER; b <<= 1)
                if (value_has_type(v, b)) of_values |= b;
        }
        mask &= of_values;
    }
    if (mask & (T_NUMBER | T_INTEGER)) mask |= T_NUMBER | T_INTEGER;
    return mask;
}

static bool values_equal(json_t *a, json_t *b) {
    if (json_is_number(a) && json_is_number(b)) return json_number_value(a) == json_number_value(b);
    return json_equal(a, b);
}

/* Whether two schemas' const/enum lists share no value (false when either
 * has none). */
static bool constants_disjoint(json_t *a, json_t *b) {
    json_t *ca = json_object_get(a, "const"), *ea = json_object_get(a, "enum");
    json_t *cb = json_object_get(b, "const"), *eb = json_object_get(b, "enum");
    if (!json_is_object(a) || !json_is_object(b) || (!ca && !json_is_array(ea)) || (!cb && !json_is_array(eb))) return false;
    const size_t na = ca ? 1 : json_array_size(ea), nb = cb ? 1 : json_array_size(eb);
    for (size_t i = 0; i < na; i++)
        for (size_t j = 0; j < nb; j++)
            if (values_equal(ca ? ca : json_array_get(ea, i), cb ? cb : json_array_get(eb, j))) return false;
    return true;
}

static bool requires(json_t *s, const char *prop) {
    json_t *req = json_object_get(s, "required");
    for (size_t i = 0; i < json_array_size(req); i++)
        if (json_is_string(json_array_get(req, i)) && !strcmp(json_string_value(json_array_get(req, i)), prop)) return true;
    return false;
}

/* Whether no value that a's grammar writes matches b, and the other way:
 * types apart, constants apart, or a property both require whose
 * constants differ (a discriminator). */
static bool branches_disjoint(cv *c, json_t *a, json_t *b, const char *path) {
    if (!(value_types(a, true) & value_types(b, false)) && !(value_types(b, true) & value_types(a, false))) return true;
    if (constants_disjoint(a, b)) return true;
    json_t *pa = json_object_get(a, "properties"), *pb = json_object_get(b, "properties");
    if (!json_is_object(pa) || !json_is_object(pb)) return false;
    if ((value_types(a, true) | value_types(b, true)) != T_OBJECT) return false;
    const char *k;
    json_t *v;
    json_object_foreach(pa, k, v) {
        json_t *w = json_object_get(pb, k);
        if (!w || !requires(a, k) || !requires(b, k)) continue;
        json_t *x = deref(c, v, path), *y = deref(c, w, path);
        if (x && y && constants_disjoint(x, y)) return true;
    }
    return false;
}

static const char *visit_union(cv *c, json_t *s, const char *key, const char *name, const char *rule_name,
                               const char *path) {
    json_t *alts = json_object_get(s, key);
    if (!json_is_array(alts) || json_array_size(alts) == 0) {
        fail_format(c, path, "%s is not a non-empty list", key);
        return NULL;
    }
    static const char *const skip[] = {"anyOf", "oneOf"};
    const bool siblings = first_constraint(s, skip, 2) != NULL;
    /* each branch as it holds: with the keywords beside anyOf merged in */
    const size_t n_alts = json_array_size(alts);
    json_t **eff = calloc(n_alts, sizeof *eff);
    if (!eff) {
        fail_oom(c);
        return NULL;
    }
    for (size_t i = 0; i < n_alts && !failed(c); i++) {
        json_t *alt = json_array_get(alts, i);
        if (json_is_false(alt)) continue; /* matches nothing: no branch */
        if (!siblings) {
            eff[i] = json_incref(alt);
            continue;
        }
        char *sub_path = child_path_index(c, path, key, i);
        json_t *merged = json_object();
        if (!merged || !sub_path) fail_oom(c);
        const char *k;
        json_t *v;
        json_object_foreach(s, k, v) {
            if (merged && strcmp(k, "anyOf") && strcmp(k, "oneOf") && !is_annotation(k)) json_object_set(merged, k, v);
        }
        if (merged && sub_path) merge_part(c, merged, alt, sub_path);
        eff[i] = merged;
        free(sub_path);
    }
    /* oneOf is anyOf only when no value can match two branches */
    for (size_t i = 0; !strcmp(key, "oneOf") && i < n_alts && !failed(c); i++) {
        for (size_t j = i + 1; eff[i] && j < n_alts && !failed(c); j++) {
            json_t *a = eff[j] ? deref(c, eff[i], path) : NULL, *b = a ? deref(c, eff[j], path) : NULL;
            if (a && b && !branches_disjoint(c, a, b, path))
                fail_keyword(c, path, key, "branches %zu and %zu may both match a value (use anyOf if that is meant)", i, j);
        }
    }
    sb body = {0};
    size_t n = 0;
    for (size_t i = 0; i < n_alts && !failed(c); i++) {
        if (!eff[i]) continue;
        char *sub_path = child_path_index(c, path, key, i);
        sb nb = {0};
        sb_printf(&nb, "%s%s%zu", name, *name ? "-" : "alternative-", i);
        char *sub_name = take(c, &nb);
        const char *got = sub_path && sub_name ? visit(c, eff[i], sub_name, sub_path) : NULL;
        if (got && left_recursive(c, got))
            fail_keyword(c, path, key, "branch %zu refers back to the schema it is in before any character (left recursion)", i);
        free(sub_path);
        free(sub_name);
        if (!got || failed(c)) break;
        if (n++) sb_puts(&body, " | ");
        sb_puts(&body, got);
    }
    for (size_t i = 0; i < n_alts; i++) json_decref(eff[i]);
    free(eff);
    if (failed(c)) {
        free(body.p);
        return NULL;
    }
    if (n == 0) {
        free(body.p);
        fail_keyword(c, path, key, "every branch is false (nothing matches)");
        return NULL;
    }
    return add_rule(c, rule_name, take(c, &body));
}

static const char *visit_constants(cv *c, json_t *s, const char *rule_name, const char *path) {
    static const char *const skip[] = {"const", "enum", "type"};
    const char *other = first_constraint(s, skip, 3);
    if (other) {
        fail_keyword(c, path, other, "beside enum/const only type is supported");
        return NULL;
    }
    int mask = 0x7F;
    json_t *type = json_object_get(s, "type");
    if (type && !(mask = parse_type(c, type, path))) return NULL;
    json_t *cst = json_object_get(s, "const"), *en = json_object_get(s, "enum");
    if (en && (!json_is_array(en) || json_array_size(en) == 0)) {
        fail_format(c, path, "enum is not a non-empty list");
        return NULL;
    }
    sb body = {0};
    size_t n = 0;
    const size_t count = cst ? 1 : json_array_size(en);
    for (size_t i = 0; i < count; i++) {
        json_t *v = cst ? cst : json_array_get(en, i);
        if (!value_has_type(v, mask)) continue;
        if (cst && en) {
            bool found = false;
            for (size_t j = 0; j < json_array_size(en); j++) found |= json_equal(json_array_get(en, j), v);
            if (!found) continue;
        }
        sb_puts(&body, n++ ? " | " : "");
        put_constant(&body, v);
    }
    if (n == 0) {
        free(body.p);
        fail_keyword(c, path, cst ? "const" : "enum", "no value is left for the given type (nothing matches)");
        return NULL;
    }
    if (cst) return add_rule(c, rule_name, take(c, &body));
    sb wrapped = {0};
    sb_printf(&wrapped, "(%s)", body.p ? body.p : "");
    if (body.oom) wrapped.oom = true;
    free(body.p);
    return add_rule(c, rule_name, take(c, &wrapped));
}

/* A key that is none of names: llama.cpp's _not_strings, over a trie of
 * the names' code points, with keys written without escapes. */
typedef struct trie {
    uint32_t cp;
    bool end;
    struct trie *kids;
    size_t n_kids;
} trie;

static void trie_free(trie *t) {
    for (size_t i = 0; i < t->n_kids; i++) trie_free(&t->kids[i]);
    free(t->kids);
}

static bool trie_insert(trie *t, const char *s) {
    while (*s) {
        const uint32_t cp = next_cp(&s);
        size_t i = 0;
        while (i < t->n_kids && t->kids[i].cp < cp) i++;
        if (i == t->n_kids || t->kids[i].cp != cp) {
            trie *k = realloc(t->kids, (t->n_kids + 1) * sizeof *k);
            if (!k) return false;
            t->kids = k;
            memmove(&k[i + 1], &k[i], (t->n_kids - i) * sizeof *k);
            k[i] = (trie){cp, false, NULL, 0};
            t->n_kids++;
        }
        t = &t->kids[i];
    }
    t->end = true;
    return true;
}

/* Alternatives for a non-empty rest of a key, after the path to t, such
 * that the whole key is none of the names. */
static void put_trie(sb *b, const trie *t) {
    size_t n = 0;
    for (size_t i = 0; i < t->n_kids; i++) {
        const trie *k = &t->kids[i];
        if (json_escaped(k->cp)) continue; /* such a name is never a bare key */
        if (n++) sb_puts(b, " | ");
        sb_putc(b, '[');
        put_class_char(b, k->cp);
        sb_putc(b, ']');
        if (k->n_kids) {
            sb_puts(b, " (");
            put_trie(b, k);
            sb_puts(b, k->end ? ")" : ")?");
        } else {
            sb_puts(b, " kchar+");
        }
    }
    if (n) sb_puts(b, " | ");
    sb_puts(b, "[^\"\\\\\\x7F\\x00-\\x1F");
    for (size_t i = 0; i < t->n_kids; i++)
        if (!json_escaped(t->kids[i].cp)) put_class_char(b, t->kids[i].cp);
    sb_puts(b, "] kchar*");
}

static const char *visit_object(cv *c, json_t *s, const char *name, const char *rule_name, const char *path) {
    json_t *props = json_object_get(s, "properties"), *req = json_object_get(s, "required");
    json_t *addl = json_object_get(s, "additionalProperties");
    if (props && !json_is_object(props)) {
        fail_format(c, path, "properties is not an object");
        return NULL;
    }
    if (req && !json_is_array(req)) {
        fail_format(c, path, "required is not a list");
        return NULL;
    }
    for (size_t i = 0; req && i < json_array_size(req); i++) {
        if (!json_is_string(json_array_get(req, i))) {
            fail_format(c, path, "required holds something that is no property name");
            return NULL;
        }
    }
    if (addl && !json_is_boolean(addl) && !json_is_object(addl)) {
        fail_format(c, path, "additionalProperties is not a schema");
        return NULL;
    }
    if (!props && !req && (!addl || json_is_true(addl))) return add_builtin(c, "object");
    /* llama.cpp: with properties and no additionalProperties, none extra */
    if (!addl && !props) addl = json_true();

    /* the properties, then required names that no property lists */
    size_t n = (props ? json_object_size(props) : 0) + (req ? json_array_size(req) : 0);
    const char **keys = calloc(n ? n : 1, sizeof *keys);
    json_t **schemas = calloc(n ? n : 1, sizeof *schemas);
    bool *required = calloc(n ? n : 1, sizeof *required);
    const char **kv = calloc(n ? n : 1, sizeof *kv);
    const char *result = NULL;
    if (!keys || !schemas || !required || !kv) {
        fail_oom(c);
        goto out;
    }
    n = 0;
    const char *k;
    json_t *v;
    if (props) {
        json_object_foreach(props, k, v) {
            keys[n] = k;
            schemas[n++] = v;
        }
    }
    for (size_t i = 0; req && i < json_array_size(req); i++) {
        const char *r = json_string_value(json_array_get(req, i));
        size_t j = 0;
        while (j < n && strcmp(keys[j], r)) j++;
        if (j == n) {
            if (json_is_false(addl)) {
                fail_keyword(c, path, "required", "\"%s\" is required but additionalProperties is false", r);
                goto out;
            }
            keys[n] = r;
            schemas[n++] = json_true();
        }
        required[j] = true;
    }
    /* one rule per property: "name" space ":" space value */
    for (size_t i = 0; i < n && !failed(c); i++) {
        char *pname = child_name(c, name, keys[i]);
        char *ppath = props && json_object_get(props, keys[i]) ? child_path(c, path, "properties") : NULL;
        char *pppath = ppath ? child_path(c, ppath, keys[i]) : NULL;
        const char *value = pname ? visit(c, schemas[i], pname, pppath ? pppath : path) : NULL;
        sb body = {0};
        if (value) {
            put_key_literal(&body, keys[i]);
            sb_printf(&body, " space \":\" space %s", value);
            sb kn = {0};
            sb_printf(&kn, "%s-kv", pname);
            char *kvname = take(c, &kn);
            if (kvname) kv[i] = add_rule(c, kvname, take(c, &body));
            else free(body.p);
            free(kvname);
        }
        free(pname);
        free(ppath);
        free(pppath);
    }
    if (failed(c)) goto out;
    /* the order: required first, then optional, each in schema order */
    size_t n_order = 0;
    const char **order_kv = calloc(n + 1, sizeof *order_kv);
    const char **order_key = calloc(n + 1, sizeof *order_key);
    if (!order_kv || !order_key) {
        free(order_kv);
        free(order_key);
        fail_oom(c);
        goto out;
    }
    size_t n_req = 0;
    for (size_t i = 0; i < n; i++)
        if (required[i]) order_kv[n_order] = kv[i], order_key[n_order++] = keys[i], n_req++;
    for (size_t i = 0; i < n; i++)
        if (!required[i]) order_kv[n_order] = kv[i], order_key[n_order++] = keys[i];
    if (addl && !json_is_false(addl)) {
        char *sub = child_name(c, name, "additional");
        char *vname = sub ? child_name(c, sub, "value") : NULL;
        char *apath = child_path(c, path, "additionalProperties");
        const char *value = NULL, *key = NULL;
        if (vname && apath) value = json_is_object(addl) ? visit(c, addl, vname, apath) : add_builtin(c, "value");
        if (value && n == 0) {
            key = add_builtin(c, "string");
        } else if (value) {
            trie t = {0};
            bool ok = true;
            for (size_t i = 0; i < n && ok; i++) ok = trie_insert(&t, keys[i]);
            if (!ok) fail_oom(c);
            sb kb = {0};
            sb_puts(&kb, "[\"] ( ");
            if (t.n_kids) put_trie(&kb, &t);
            else sb_puts(&kb, "kchar+");
            sb_printf(&kb, " )%s [\"]", t.end ? "" : "?");
            trie_free(&t);
            add_builtin(c, "kchar");
            char *kname = child_name(c, sub, "k");
            if (ok && kname) key = add_rule(c, kname, take(c, &kb));
            else free(kb.p);
            free(kname);
        }
        if (key) {
            sb body = {0};
            sb_printf(&body, "%s \":\" space %s", key, value);
            char *kvname = child_name(c, sub, "kv");
            if (kvname) {
                order_kv[n_order] = add_rule(c, kvname, take(c, &body));
                order_key[n_order++] = "*";
            } else {
                free(body.p);
            }
            free(kvname);
        }
        free(sub);
        free(vname);
        free(apath);
    }
    if (!failed(c)) {
        sb body = {0};
        sb_puts(&body, "\"{\" space ");
        for (size_t i = 0; i < n_req; i++) {
            if (i) sb_puts(&body, " \",\" space ");
            sb_puts(&body, order_kv[i]);
        }
        if (n_order > n_req) {
            sb_puts(&body, " (");
            if (n_req) sb_puts(&body, " \",\" space ( ");
            /* alternatives: the first optional property present is i */
            for (size_t i = n_req; i < n_order && !failed(c); i++) {
                if (i > n_req) sb_puts(&body, " | ");
                const bool star = !strcmp(order_key[i], "*");
                sb_puts(&body, order_kv[i]);
                if (star) sb_printf(&body, " ( \",\" space %s )*", order_kv[i]);
                if (i + 1 == n_order) continue;
                /* the rest after i: each later one optional, in order */
                const char *rest_name = NULL;
                for (size_t j = n_order - 1; j > i && !failed(c); j--) {
                    sb rb = {0};
                    const bool jstar = !strcmp(order_key[j], "*");
                    sb_printf(&rb, "( \",\" space %s )%s", order_kv[j], jstar ? "*" : "?");
                    if (rest_name) sb_printf(&rb, " %s", rest_name);
                    char *raw = child_name(c, name, order_key[j - 1]);
                    sb nb = {0};
                    if (raw) sb_printf(&nb, "%s-rest", raw);
                    free(raw);
                    char *rn = take(c, &nb);
                    rest_name = rn ? add_rule(c, rn, take(c, &rb)) : NULL;
                    if (!rn) free(rb.p);
                    free(rn);
                }
                if (rest_name) sb_printf(&body, " %s", rest_name);
            }
            if (n_req) sb_puts(&body, " )");
            sb_puts(&body, " )?");
        }
        sb_puts(&body, " space \"}\"");
        if (!failed(c)) result = add_rule(c, rule_name, take(c, &body));
        else free(body.p);
    }
    free(order_kv);
    free(order_key);
out:
    free(keys);
    free(schemas);
    free(required);
    free(kv);
    return result;
}

static const char *visit_array(cv *c, json_t *s, const char *name, const char *rule_name, const char *path) {
    json_t *items = json_object_get(s, "items"), *prefix = json_object_get(s, "prefixItems");
    long long min = 0, max = -1;
    get_count(c, s, "minItems", path, &min);
    get_count(c, s, "maxItems", path, &max);
    if (failed(c)) return NULL;
    if (max >= 0 && min > max) {
        fail_keyword(c, path, "minItems", "above maxItems (nothing matches)");
        return NULL;
    }
    json_t *tuple = NULL, *rest = items;
    const char *tuple_key = "prefixItems";
    if (prefix) {
        if (!json_is_array(prefix)) {
            fail_format(c, path, "prefixItems is not a list");
            return NULL;
        }
        if (items && json_is_array(items)) {
            fail_format(c, path, "items is a list beside prefixItems");
            return NULL;
        }
        tuple = prefix;
    } else if (items && json_is_array(items)) { /* draft 7's tuples */
        tuple = items;
        tuple_key = "items";
        rest = NULL;
    }
    if (rest && !json_is_boolean(rest) && !json_is_object(rest)) {
        fail_format(c, path, "items is not a schema");
        return NULL;
    }
    sb body = {0};
    sb_puts(&body, "\"[\" space ");
    const size_t n = tuple ? json_array_size(tuple) : 0;
    if (n > 0) {
        /* every tuple item present (llama.cpp), then the rest if allowed */
        if (max >= 0 && (size_t)max < n) {
            free(body.p);
            fail_keyword(c, path, "maxItems", "below the number of prefixItems is not supported");
            return NULL;
        }
        for (size_t i = 0; i < n && !failed(c); i++) {
            sb nb = {0};
            sb_printf(&nb, "tuple-%zu", i);
            char *suffix = take(c, &nb);
            char *tname = suffix ? child_name(c, name, suffix) : NULL;
            char *tpath = child_path_index(c, path, tuple_key, i);
            const char *got = tname && tpath ? visit(c, json_array_get(tuple, i), tname, tpath) : NULL;
            free(suffix);
            free(tname);
            free(tpath);
            if (!got) break;
            if (i) sb_puts(&body, " \",\" space ");
            sb_puts(&body, got);
        }
        const long long rmin = min > (long long)n ? min - (long long)n : 0;
        const long long rmax = max < 0 ? -1 : max - (long long)n;
        if (!failed(c) && rest && !json_is_false(rest) && rmax != 0) {
            char *iname = child_name(c, name, "item");
            char *ipath = child_path(c, path, "items");
            const char *item = iname && ipath ? (json_is_true(rest) ? add_builtin(c, "value") : visit(c, rest, iname, ipath)) : NULL;
            free(iname);
            free(ipath);
            if (item) {
                sb one = {0};
                sb_printf(&one, "( \",\" space %s )", item);
                sb_putc(&body, ' ');
                if (one.p) put_repetition(&body, one.p, rmin, rmax, NULL);
                free(one.p);
            }
        } else if (!failed(c) && !rest && rmin > 0) { /* items absent: any extra items */
            const char *item = add_builtin(c, "value");
            sb_printf(&body, " ( \",\" space %s ){%lld,", item ? item : "", rmin);
            if (rmax >= 0) sb_printf(&body, "%lld", rmax);
            sb_putc(&body, '}');
        } else if (!failed(c) && rmin > 0) {
            free(body.p);
            fail_keyword(c, path, "minItems", "more items than prefixItems while items is false (nothing matches)");
            return NULL;
        }
    } else {
        const char *item = NULL;
        if (!rest || json_is_true(rest)) {
            if (min == 0 && max < 0) {
                free(body.p);
                return add_builtin(c, "array");
            }
            item = add_builtin(c, "value");
        } else if (json_is_false(rest)) {
            if (min > 0) {
                free(body.p);
                fail_keyword(c, path, "items", "false with minItems above 0 (nothing matches)");
                return NULL;
            }
            max = 0;
        } else {
            char *iname = child_name(c, name, "item");
            char *ipath = child_path(c, path, "items");
            item = iname && ipath ? visit(c, rest, iname, ipath) : NULL;
            free(iname);
            free(ipath);
        }
        if (item || max == 0) put_repetition(&body, item ? item : "", min, max, "\",\" space");
    }
    sb_puts(&body, " space \"]\"");
    if (failed(c)) {
        free(body.p);
        return NULL;
    }
    return add_rule(c, rule_name, take(c, &body));
}

static const char *visit_string(cv *c, json_t *s, const char *rule_name, const char *path) {
    json_t *pattern = json_object_get(s, "pattern"), *format = json_object_get(s, "format");
    const bool lengths = json_object_get(s, "minLength") || json_object_get(s, "maxLength");
    if (pattern && (format || lengths)) {
        fail_keyword(c, path, format ? "format" : json_object_get(s, "minLength") ? "minLength" : "maxLength",
                     "together with pattern is not supported");
        return NULL;
    }
    if (format && lengths) {
        fail_keyword(c, path, json_object_get(s, "minLength") ? "minLength" : "maxLength",
                     "together with format is not supported");
        return NULL;
    }
    if (pattern) return visit_pattern(c, pattern, rule_name, path);
    if (format) {
        if (!json_is_string(format)) {
            fail_format(c, path, "format is not a string");
            return NULL;
        }
        const char *f = json_string_value(format);
        if (!strcmp(f, "uuid") || (!strncmp(f, "uuid", 4) && f[4] >= '1' && f[4] <= '5' && !f[5]))
            return add_builtin(c, "uuid");
        static const char *const formats[] = {"date", "time", "date-time", "email"};
        for (size_t i = 0; i < 4; i++) {
            if (!strcmp(f, formats[i])) {
                char prim[32];
                snprintf(prim, sizeof prim, "%s-string", f);
                return add_builtin(c, prim);
            }
        }
        fail_keyword(c, path, "format", "format \"%s\" is not supported", f);
        return NULL;
    }
    if (lengths) {
        long long min = 0, max = -1;
        get_count(c, s, "minLength", path, &min);
        get_count(c, s, "maxLength", path, &max);
        if (failed(c)) return NULL;
        if (max >= 0 && min > max) {
            fail_keyword(c, path, "minLength", "above maxLength (nothing matches)");
            return NULL;
        }
        const char *ch = add_builtin(c, "char");
        sb body = {0};
        sb_puts(&body, "\"\\\"\" ");
        put_repetition(&body, ch ? ch : "char", min, max, NULL);
        sb_puts(&body, " \"\\\"\"");
        return add_rule(c, rule_name, take(c, &body));
    }
    return add_builtin(c, "string");
}

/* An integer bound keyword as the nearest whole number inside it (a lower
 * bound rounds up, an upper one down; exclusive ones step past). */
static bool int_bound(cv *c, json_t *s, const char *key, const char *path, bool lower, long long *out) {
    json_t *v = json_object_get(s, key);
    if (!v) return false;
    if (!json_is_number(v)) {
        fail_format(c, path, "%s is not a number", key);
        return false;
    }
    const bool exclusive = !strncmp(key, "exclusive", 9);
    double d = json_number_value(v);
    if (json_is_integer(v)) {
        long long i = json_integer_value(v);
        if (i > INT_LIMIT + 1) i = INT_LIMIT + 1;
        if (i < -INT_LIMIT - 1) i = -INT_LIMIT - 1;
        if (exclusive) i += lower ? 1 : -1;
        *out = i;
        return true;
    }
    if (d > (double)INT_LIMIT) d = (double)INT_LIMIT + 2;
    if (d < -(double)INT_LIMIT) d = -(double)INT_LIMIT - 2;
    double r = lower ? ceil(d) : floor(d);
    if (exclusive && r == d) r += lower ? 1 : -1;
    *out = (long long)r;
    return true;
}

static const char *visit_integer(cv *c, json_t *s, const char *rule_name, const char *path) {
    long long lo = -INT_LIMIT, hi = INT_LIMIT, v;
    bool bounded = false;
    static const char *const lows[] = {"minimum", "exclusiveMinimum"}, *const highs[] = {"maximum", "exclusiveMaximum"};
    for (int i = 0; i < 2; i++) {
        if (int_bound(c, s, lows[i], path, true, &v)) {
            bounded = true;
            if (v > lo) lo = v;
        }
        if (int_bound(c, s, highs[i], path, false, &v)) {
            bounded = true;
            if (v < hi) hi = v;
        }
    }
    if (failed(c)) return NULL;
    if (!bounded) return add_builtin(c, "integer");
    if (lo > hi) {
        fail_keyword(c, path, "minimum", "no integer within the bounds (or beyond 16 digits)");
        return NULL;
    }
    sb body = {0};
    sb_putc(&body, '(');
    put_int_range(&body, lo, hi);
    sb_putc(&body, ')');
    return add_rule(c, rule_name, take(c, &body));
}

/* The rule for s taken as one type; keywords of other types do not apply. */
static const char *visit_typed(cv *c, json_t *s, int type, const char *name, const char *rule_name, const char *path) {
    switch (type) {
    case T_NULL: return add_builtin(c, "null");
    case T_BOOLEAN: return add_builtin(c, "boolean");
    case T_OBJECT:
    case T_ARRAY: { /* what they hold comes after their bracket */
        c->nesting++;
        const char *got = type == T_OBJECT ? visit_object(c, s, name, rule_name, path)
                                           : visit_array(c, s, name, rule_name, path);
        c->nesting--;
        return got;
    }
    case T_STRING: return visit_string(c, s, rule_name, path);
    case T_INTEGER: return visit_integer(c, s, rule_name, path);
    default: break;
    }
    static const char *const bounds[] = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"};
    for (size_t i = 0; i < 4; i++) {
        if (json_object_get(s, bounds[i])) {
            fail_keyword(c, path, bounds[i], "bounds are supported on integers only, not on numbers");
            return NULL;
        }
    }
    return add_builtin(c, "number");
}

static const char *visit(cv *c, json_t *s, const char *name, const char *path) {
    if (failed(c)) return NULL;
    if (json_is_true(s)) return add_builtin(c, "value");
    if (json_is_false(s)) {
        fail_unsupported(c, path, "false (nothing matches) cannot be a grammar");
        return NULL;
    }
    if (!json_is_object(s)) {
        fail_format(c, path, "a schema is an object or a boolean");
        return NULL;
    }
    if (c->depth >= MAX_DEPTH) {
        fail_unsupported(c, path, "schemas nest more than %d deep", MAX_DEPTH);
        return NULL;
    }
    const char *k;
    json_t *v;
    json_object_foreach(s, k, v) {
        if (!is_annotation(k) && !in_list(k, SUPPORTED, sizeof SUPPORTED / sizeof SUPPORTED[0])) {
            fail_keyword(c, path, k, "not supported by the grammar converter");
            return NULL;
        }
    }
    sb rn = {0};
    if (!*name) sb_puts(&rn, "root");
    else sb_printf(&rn, "%s%s", name, reserved_name(name) ? "-" : "");
    char *rule_name = take(c, &rn);
    if (!rule_name) return NULL;
    const char *result = NULL;
    c->depth++;
    json_t *ref = json_object_get(s, "$ref");
    if (ref) {
        static const char *const skip[] = {"$ref"};
        const char *other = first_constraint(s, skip, 1);
        if (!json_is_string(ref)) fail_format(c, path, "$ref is not a string");
        else if (other) fail_keyword(c, path, other, "keywords beside $ref are not supported");
        else result = visit_ref(c, json_string_value(ref), path);
    } else if (json_object_get(s, "allOf")) {
        json_t *merged = json_object();
        if (!merged) fail_oom(c);
        else merge_part(c, merged, s, path);
        if (!failed(c)) result = visit(c, merged, name, path);
        json_decref(merged);
    } else if (json_object_get(s, "anyOf") || json_object_get(s, "oneOf")) {
        if (json_object_get(s, "anyOf") && json_object_get(s, "oneOf"))
            fail_keyword(c, path, "oneOf", "beside anyOf is not supported");
        else
            result = visit_union(c, s, json_object_get(s, "anyOf") ? "anyOf" : "oneOf", name, rule_name, path);
    } else if (json_object_get(s, "const") || json_object_get(s, "enum")) {
        result = visit_constants(c, s, rule_name, path);
    } else {
        json_t *type = json_object_get(s, "type");
        int mask = 0;
        if (type) {
            mask = parse_type(c, type, path);
        } else { /* no type: the one the keywords constrain, else any value */
            int families = 0;
            json_object_foreach(s, k, v) families |= keyword_family(k);
            if (families == (T_NUMBER | T_INTEGER)) families = T_INTEGER; /* as llama.cpp */
            if (families && (families & (families - 1)))
                fail_keyword(c, path, "type", "absent while keywords of several types are given");
            mask = families;
        }
        if (failed(c)) {
        } else if (!mask) {
            result = add_builtin(c, "value");
        } else if (!(mask & (mask - 1))) {
            result = visit_typed(c, s, mask, name, rule_name, path);
        } else { /* several types: one branch each, in the listed order */
            sb body = {0};
            size_t n = 0;
            for (size_t i = 0; i < json_array_size(type) && !failed(c); i++) {
                const int bit = type_bit(json_string_value(json_array_get(type, i)));
                if (!(mask & bit)) continue;
                mask &= ~bit;
                sb nb = {0};
                sb_printf(&nb, "%s%s%zu", name, *name ? "-" : "alternative-", i);
                char *sub = take(c, &nb);
                sb rb = {0};
                if (sub) sb_printf(&rb, "%s%s", sub, reserved_name(sub) ? "-" : "");
                char *sub_rule = take(c, &rb);
                const char *got = sub && sub_rule ? visit_typed(c, s, bit, sub, sub_rule, path) : NULL;
                free(sub);
                free(sub_rule);
                if (!got) break;
                if (n++) sb_puts(&body, " | ");
                sb_puts(&body, got);
            }
            if (!failed(c)) result = add_rule(c, rule_name, take(c, &body));
            else free(body.p);
        }
    }
    c->depth--;
    free(rule_name);
    return result;
}

static int rule_cmp(const void *a, const void *b) { return strcmp(((const rule *)a)->name, ((const rule *)b)->name); }

sprout_status sp_json_schema_to_gbnf(const char *schema_json, size_t len, char **gbnf_out) {
    if (!gbnf_out) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "JSON schema: no output pointer");
    *gbnf_out = NULL;
    if (!schema_json) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "JSON schema: no text");
    json_error_t err;
    json_t *root = json_loadb(schema_json, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &err);
    if (!root) return sp_fail(SPROUT_ERR_FORMAT, "JSON schema: line %d, column %d: %s", err.line, err.column, err.text);
    cv c = {.root = root};
    if (!json_is_object(root) && !json_is_boolean(root)) {
        fail_format(&c, "", "a schema is an object or a boolean");
    } else {
        /* "root" is reserved first, as the rule that "$ref": "#" names */
        rule *r = push_rule(&c, strdup("root"), NULL);
        c.refs = malloc(sizeof *c.refs);
        char *hash = strdup("#");
        if (!r || !c.refs || !hash) {
            free(hash);
            fail_oom(&c);
        } else {
            c.cap_refs = 1;
            c.refs[c.n_refs++] = (ref_entry){hash, r->name};
        }
        if (!failed(&c) && add_rule_str(&c, "space", SPACE_BODY)) {
            const char *got = visit(&c, root, "", "");
            rule *rr = got ? find_rule(&c, "root") : NULL;
            if (rr && !rr->body) {
                if (left_recursive(&c, got)) fail_keyword(&c, "", "$ref", "the schema refers to itself before any character (left recursion)");
                else if (!(rr->body = strdup(got))) fail_oom(&c);
            }
        }
    }
    sb out = {0};
    if (!failed(&c)) {
        qsort(c.rules, c.n_rules, sizeof *c.rules, rule_cmp);
        for (size_t i = 0; i < c.n_rules; i++) {
            if (!c.rules[i].body) { /* a reference never filled: a bug */
                c.status = sp_fail(SPROUT_ERR_INTERNAL, "JSON schema: rule %s left empty", c.rules[i].name);
                break;
            }
            sb_printf(&out, "%s ::= ", c.rules[i].name);
            sb_puts(&out, c.rules[i].body);
            sb_putc(&out, '\n');
        }
        if (out.oom) fail_oom(&c);
    }
    for (size_t i = 0; i < c.n_rules; i++) {
        free(c.rules[i].name);
        free(c.rules[i].body);
    }
    free(c.rules);
    for (size_t i = 0; i < c.n_refs; i++) free(c.refs[i].ref);
    free(c.refs);
    json_decref(root);
    if (failed(&c)) {
        free(out.p);
        return c.status;
    }
    *gbnf_out = out.p;
    return SPROUT_OK;
}
