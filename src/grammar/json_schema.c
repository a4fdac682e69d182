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
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/json_schema_internal.h"

/* ---- the converter's state ---------------------------------------------- */

bool failed(const cv *c) { return c->status != SPROUT_OK; }

void fail_oom(cv *c) {
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
void fail_keyword(cv *c, const char *path, const char *key, const char *fmt, ...) {
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

void fail_format(cv *c, const char *path, const char *fmt, ...) {
    if (failed(c)) return;
    va_list ap;
    va_start(ap, fmt);
    vfail(c, SPROUT_ERR_FORMAT, "malformed JSON schema", path, fmt, ap);
    va_end(ap);
}

char *take(cv *c, sb *b) {
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
void put_rule_name(sb *b, const char *s) {
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
const char *add_builtin(cv *c, const char *name) {
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

bool in_list(const char *key, const char *const *list, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!strcmp(key, list[i])) return true;
    return false;
}

bool is_annotation(const char *key) { return in_list(key, ANNOTATIONS, sizeof ANNOTATIONS / sizeof ANNOTATIONS[0]); }

const char *const TYPE_NAMES[7] = {"null", "boolean", "object", "array", "string", "number", "integer"};

int type_bit(const char *name) {
    for (int i = 0; i < 7; i++)
        if (!strcmp(name, TYPE_NAMES[i])) return 1 << i;
    return 0;
}

/* The family of types a keyword constrains (0: none or several). */
int keyword_family(const char *key) {
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
int parse_type(cv *c, json_t *t, const char *path) {
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
bool value_has_type(json_t *v, int mask) {
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
bool get_count(cv *c, json_t *s, const char *key, const char *path, long long *out) {
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
char *child_path(cv *c, const char *path, const char *key) {
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

char *child_path_index(cv *c, const char *path, const char *key, size_t i) {
    sb b = {0};
    sb_printf(&b, "%s/%s/%zu", path, key, i);
    return take(c, &b);
}

/* name-suffix, or suffix alone at the top (llama.cpp's child names). */
char *child_name(cv *c, const char *name, const char *suffix) {
    sb b = {0};
    sb_puts(&b, name);
    if (*name) sb_putc(&b, '-');
    sb_puts(&b, suffix);
    return take(c, &b);
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

const char *visit(cv *c, json_t *s, const char *name, const char *path) {
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
                else set_rule_body(&c, rr, strdup(got));
            }
        }
    }
    free_rule_indices(&c); /* the sort below moves the rules */
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
