#include "grammar/gbnf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/strmap.h"

/* A rule while it is being parsed: its own growing element list. */
typedef struct prule {
    char *name;
    sp_gbnf_elem *elems;
    size_t n, cap;
    bool defined, generated;
    size_t ref_at; /* offset of the first reference, for "undefined rule" */
} prule;

typedef struct parser {
    const char *s;
    size_t len, pos;
    prule *rules;
    size_t n_rules, cap_rules;
    sp_strmap names;
    size_t total; /* elements in all rules */
    int depth;
    sprout_status status; /* the first error, SPROUT_OK until then */
} parser;

/* Line and column (both from 1, the column in bytes) of an offset. */
static void line_col(const parser *p, size_t at, size_t *line, size_t *col) {
    *line = 1, *col = 1;
    for (size_t i = 0; i < at && i < p->len; i++) {
        if (p->s[i] == '\n') (*line)++, *col = 1;
        else (*col)++;
    }
}

/* Records the first error, at offset `at`. Later errors keep the first. */
static bool fail_at(parser *p, size_t at, const char *what) {
    if (p->status != SPROUT_OK) return false;
    size_t line, col;
    line_col(p, at, &line, &col);
    p->status = sp_fail(SPROUT_ERR_FORMAT, "grammar:%zu:%zu: %s", line, col, what);
    return false;
}

static bool at_end(const parser *p) { return p->pos >= p->len; }
static char peek(const parser *p) { return at_end(p) ? 0 : p->s[p->pos]; }
static char peek_at(const parser *p, size_t k) { return p->pos + k < p->len ? p->s[p->pos + k] : 0; }

static bool is_word(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

/* Spaces, tabs and comments; newlines too when newline_ok (inside groups,
 * after "::=" and between rules). */
static void skip_space(parser *p, bool newline_ok) {
    while (!at_end(p)) {
        char c = peek(p);
        if (c == ' ' || c == '\t') p->pos++;
        else if (c == '#')
            while (!at_end(p) && peek(p) != '\n' && peek(p) != '\r') p->pos++;
        else if (newline_ok && (c == '\n' || c == '\r')) p->pos++;
        else break;
    }
}

/* --- rules ----------------------------------------------------------------- */

static int64_t add_rule(parser *p, const char *name, size_t n, bool generated) {
    if (p->n_rules == p->cap_rules) {
        size_t cap = p->cap_rules ? p->cap_rules * 2 : 16;
        prule *r = realloc(p->rules, cap * sizeof *r);
        if (!r) return -1;
        p->rules = r, p->cap_rules = cap;
    }
    char *copy = malloc(n + 1);
    if (!copy) return -1;
    memcpy(copy, name, n);
    copy[n] = 0;
    const int64_t id = (int64_t)p->n_rules;
    if (sp_strmap_insert(&p->names, copy, n, id, NULL) < 0) {
        free(copy);
        return -1;
    }
    p->rules[p->n_rules++] = (prule){.name = copy, .generated = generated, .ref_at = SIZE_MAX};
    return id;
}

/* The index of the rule named s[0..n), made (undefined) if new; -1 when out of memory. */
static int64_t rule_named(parser *p, const char *s, size_t n) {
    int64_t id = sp_strmap_find(&p->names, s, n);
    return id >= 0 ? id : add_rule(p, s, n, false);
}

/* A new generated rule named after the rule `parent`. */
static int64_t generated_rule(parser *p, int64_t parent) {
    char name[96];
    int k = snprintf(name, sizeof name, "%.60s/%zu", p->rules[parent].name, p->n_rules);
    return add_rule(p, name, (size_t)k, true);
}

static bool push(parser *p, prule *r, uint32_t type, uint32_t value) {
    if (p->total >= SP_GBNF_MAX_ELEMENTS) return fail_at(p, p->pos, "grammar too large (over 1048576 elements)");
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 16;
        sp_gbnf_elem *e = realloc(r->elems, cap * sizeof *e);
        if (!e) {
            if (p->status == SPROUT_OK) p->status = sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "grammar: out of memory");
            return false;
        }
        r->elems = e, r->cap = cap;
    }
    r->elems[r->n++] = (sp_gbnf_elem){type, value};
    p->total++;
    return true;
}

/* Appends the elements of a sequence (a copy: the source may move). */
static bool push_all(parser *p, int64_t rule, const sp_gbnf_elem *e, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!push(p, &p->rules[rule], e[i].type, e[i].value)) return false;
    return true;
}

static bool oom(parser *p) {
    if (p->status == SPROUT_OK) p->status = sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "grammar: out of memory");
    return false;
}

/* --- characters ------------------------------------------------------------ */

static int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* One UTF-8 code point of the text; false (an error) when it is not valid UTF-8. */
static bool read_utf8(parser *p, uint32_t *cp) {
    const unsigned char *u = (const unsigned char *)p->s + p->pos;
    const size_t left = p->len - p->pos;
    const unsigned char c = u[0];
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || n > left) return fail_at(p, p->pos, "invalid UTF-8");
    uint32_t v = n == 1 ? c : n == 2 ? c & 0x1F : n == 3 ? c & 0x0F : c & 0x07;
    for (size_t i = 1; i < n; i++) {
        if ((u[i] & 0xC0) != 0x80) return fail_at(p, p->pos, "invalid UTF-8");
        v = v << 6 | (u[i] & 0x3F);
    }
    static const uint32_t min[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (v < min[n] || v > 0x10FFFF) return fail_at(p, p->pos, "invalid UTF-8");
    p->pos += n;
    *cp = v;
    return true;
}

/* One character of a string literal or class: an escape or a UTF-8 code point. */
static bool read_char(parser *p, uint32_t *cp) {
    if (at_end(p)) return fail_at(p, p->pos, "unexpected end of input");
    if (peek(p) != '\\') return read_utf8(p, cp);
    const size_t start = p->pos;
    const char e = peek_at(p, 1);
    int digits = 0;
    switch (e) {
    case 'n': *cp = '\n'; break;
    case 'r': *cp = '\r'; break;
    case 't': *cp = '\t'; break;
    case '\\': case '"': case '[': case ']': *cp = (uint32_t)e; break;
    case 'x': digits = 2; break;
    case 'u': digits = 4; break;
    case 'U': digits = 8; break;
    default: {
        char msg[64];
        if (e >= 0x21 && e < 0x7F) snprintf(msg, sizeof msg, "unknown escape \"\\%c\"", e);
        else snprintf(msg, sizeof msg, "unknown escape");
        return fail_at(p, start, msg);
    }
    }
    p->pos += 2;
    if (digits) {
        uint32_t v = 0;
        for (int i = 0; i < digits; i++) {
            int h = hex_value(peek(p));
            if (h < 0) return fail_at(p, start, "bad escape: expected hex digits");
            v = v << 4 | (uint32_t)h;
            p->pos++;
        }
        if (v > 0x10FFFF) return fail_at(p, start, "bad escape: code point past U+10FFFF");
        *cp = v;
    }
    return true;
}

/* --- expressions ----------------------------------------------------------- */

static bool parse_alternates(parser *p, int64_t rule, bool nested);

static bool parse_int(parser *p, uint32_t *v) {
    const size_t start = p->pos;
    uint32_t x = 0;
    while (peek(p) >= '0' && peek(p) <= '9') {
        x = x * 10 + (uint32_t)(peek(p) - '0');
        if (x > SP_GBNF_MAX_REPEAT) return fail_at(p, start, "repetition bound too large (over 1000)");
        p->pos++;
    }
    if (p->pos == start) return fail_at(p, start, "expected a number");
    *v = x;
    return true;
}

/* The symbol rule->elems[sym..] repeated from min to max times (max
 * UINT32_MAX: unbounded), in place of itself. */
static bool repeat(parser *p, int64_t rule, size_t sym, uint32_t min, uint32_t max) {
    prule *r = &p->rules[rule];
    const size_t n = r->n - sym;
    sp_gbnf_elem *copy = malloc(n * sizeof *copy + 1);
    if (!copy) return oom(p);
    if (n) memcpy(copy, r->elems + sym, n * sizeof *copy);
    p->total -= n;
    r->n = sym;
    bool ok = true;
    for (uint32_t i = 0; ok && i < min; i++) ok = push_all(p, rule, copy, n);
    if (ok && max == UINT32_MAX) {
        /* tail ::= symbol tail | */
        int64_t tail = generated_rule(p, rule);
        ok = tail >= 0 || oom(p);
        ok = ok && push_all(p, tail, copy, n) && push(p, &p->rules[tail], SP_GBNF_REF, (uint32_t)tail) &&
             push(p, &p->rules[tail], SP_GBNF_ALT, 0) && push(p, &p->rules[tail], SP_GBNF_END, 0);
        if (ok) p->rules[tail].defined = true;
        ok = ok && push(p, &p->rules[rule], SP_GBNF_REF, (uint32_t)tail);
    } else if (ok && max > min) {
        /* opt_1 ::= symbol opt_2 | ; ... ; opt_k ::= symbol | */
        int64_t prev = rule;
        for (uint32_t i = min; ok && i < max; i++) {
            int64_t opt = generated_rule(p, rule);
            ok = (opt >= 0 || oom(p)) && push(p, &p->rules[prev], SP_GBNF_REF, (uint32_t)opt);
            if (ok && prev != rule) ok = push(p, &p->rules[prev], SP_GBNF_ALT, 0) && push(p, &p->rules[prev], SP_GBNF_END, 0);
            ok = ok && push_all(p, opt, copy, n);
            if (ok) p->rules[opt].defined = true;
            prev = opt;
        }
        if (ok) ok = push(p, &p->rules[prev], SP_GBNF_ALT, 0) && push(p, &p->rules[prev], SP_GBNF_END, 0);
    }
    free(copy);
    return ok;
}

static bool parse_literal(parser *p, int64_t rule) {
    const size_t start = p->pos;
    p->pos++; /* the quote */
    while (peek(p) != '"') {
        if (at_end(p) || peek(p) == '\n' || peek(p) == '\r') return fail_at(p, start, "unterminated string");
        uint32_t cp;
        if (!read_char(p, &cp) || !push(p, &p->rules[rule], SP_GBNF_CHAR, cp)) return false;
    }
    p->pos++;
    return true;
}

static bool parse_class(parser *p, int64_t rule) {
    const size_t start = p->pos;
    p->pos++; /* [ */
    uint32_t first = SP_GBNF_CHAR;
    if (peek(p) == '^') first = SP_GBNF_CHAR_NOT, p->pos++;
    if (peek(p) == ']') return fail_at(p, start, "empty character class");
    bool any = false;
    while (peek(p) != ']') {
        if (at_end(p)) return fail_at(p, start, "unbalanced bracket: '[' without ']'");
        uint32_t lo, hi;
        if (!read_char(p, &lo) || !push(p, &p->rules[rule], any ? SP_GBNF_CHAR_ALT : first, lo)) return false;
        any = true;
        if (peek(p) == '-' && peek_at(p, 1) != ']' && p->pos + 1 < p->len) {
            const size_t at = p->pos;
            p->pos++;
            if (!read_char(p, &hi)) return false;
            if (hi < lo) return fail_at(p, at, "character range out of order");
            if (!push(p, &p->rules[rule], SP_GBNF_RANGE_UPPER, hi)) return false;
        }
    }
    p->pos++;
    return true;
}

/* A sequence of symbols with their repetition marks, up to '|', ')', the
 * end of the line (outside groups) or of the input. */
static bool parse_sequence(parser *p, int64_t rule, bool nested) {
    size_t sym = SIZE_MAX; /* where the last symbol starts */
    for (;;) {
        const char c = peek(p);
        const size_t at = p->pos;
        if (at_end(p) || c == '|' || c == ')' || c == '\n' || c == '\r') break;
        if (c == '"') {
            sym = p->rules[rule].n;
            if (!parse_literal(p, rule)) return false;
        } else if (c == '[') {
            sym = p->rules[rule].n;
            if (!parse_class(p, rule)) return false;
        } else if (c == '.') {
            sym = p->rules[rule].n;
            p->pos++;
            if (!push(p, &p->rules[rule], SP_GBNF_ANY, 0)) return false;
        } else if (is_word(c)) {
            const size_t s = p->pos;
            while (is_word(peek(p))) p->pos++;
            int64_t ref = rule_named(p, p->s + s, p->pos - s);
            if (ref < 0) return oom(p);
            if (p->rules[ref].ref_at == SIZE_MAX) p->rules[ref].ref_at = s;
            sym = p->rules[rule].n;
            if (!push(p, &p->rules[rule], SP_GBNF_REF, (uint32_t)ref)) return false;
        } else if (c == '(') {
            if (p->depth >= SP_GBNF_MAX_NESTING) return fail_at(p, at, "groups nested too deeply (over 64)");
            p->pos++;
            skip_space(p, true);
            int64_t sub = generated_rule(p, rule);
            if (sub < 0) return oom(p);
            p->depth++;
            bool ok = parse_alternates(p, sub, true);
            p->depth--;
            if (!ok) return false;
            if (peek(p) != ')') return fail_at(p, at, "unbalanced group: '(' without ')'");
            p->pos++;
            p->rules[sub].defined = true;
            sym = p->rules[rule].n;
            if (!push(p, &p->rules[rule], SP_GBNF_REF, (uint32_t)sub)) return false;
        } else if (c == '*' || c == '+' || c == '?' || c == '{') {
            if (sym == SIZE_MAX) return fail_at(p, at, "repetition mark without a symbol before it");
            uint32_t min = 0, max = UINT32_MAX;
            p->pos++;
            if (c == '+') min = 1;
            else if (c == '?') max = 1;
            else if (c == '{') {
                skip_space(p, false);
                if (!parse_int(p, &min)) return false;
                skip_space(p, false);
                max = min;
                if (peek(p) == ',') {
                    p->pos++;
                    skip_space(p, false);
                    max = UINT32_MAX;
                    if (peek(p) >= '0' && peek(p) <= '9' && !parse_int(p, &max)) return false;
                    skip_space(p, false);
                }
                if (peek(p) != '}') return fail_at(p, at, "expected '}' after a repetition's bounds");
                p->pos++;
                if (max < min) return fail_at(p, at, "repetition bounds out of order: m > n in {m,n}");
            }
            if (!repeat(p, rule, sym, min, max)) return false;
            sym = SIZE_MAX;
        } else {
            char msg[64];
            if (c >= 0x21 && c < 0x7F) snprintf(msg, sizeof msg, "unexpected '%c'", c);
            else snprintf(msg, sizeof msg, "unexpected byte 0x%02X", (unsigned char)c);
            return fail_at(p, at, msg);
        }
        skip_space(p, nested);
    }
    return true;
}

static bool parse_alternates(parser *p, int64_t rule, bool nested) {
    if (!parse_sequence(p, rule, nested)) return false;
    while (peek(p) == '|') {
        p->pos++;
        skip_space(p, true);
        if (!push(p, &p->rules[rule], SP_GBNF_ALT, 0) || !parse_sequence(p, rule, nested)) return false;
    }
    return push(p, &p->rules[rule], SP_GBNF_END, 0);
}

static bool parse_rule(parser *p) {
    const size_t start = p->pos;
    while (is_word(peek(p))) p->pos++;
    if (p->pos == start) {
        if (peek(p) == ')') return fail_at(p, start, "unbalanced group: ')' without '('");
        return fail_at(p, start, "expected a rule name");
    }
    int64_t rule = rule_named(p, p->s + start, p->pos - start);
    if (rule < 0) return oom(p);
    if (p->rules[rule].defined) {
        char msg[128];
        snprintf(msg, sizeof msg, "rule '%.80s' defined twice", p->rules[rule].name);
        return fail_at(p, start, msg);
    }
    p->rules[rule].defined = true;
    skip_space(p, false);
    if (p->pos + 3 > p->len || memcmp(p->s + p->pos, "::=", 3) != 0) return fail_at(p, p->pos, "expected '::='");
    p->pos += 3;
    skip_space(p, true);
    if (!parse_alternates(p, rule, false)) return false;
    if (peek(p) == ')') return fail_at(p, p->pos, "unbalanced group: ')' without '('");
    if (!at_end(p) && peek(p) != '\n' && peek(p) != '\r') return fail_at(p, p->pos, "expected the end of the line");
    skip_space(p, true);
    return true;
}

/* --- the result -------------------------------------------------------------- */

void sp_gbnf_free(sp_gbnf *g) {
    if (!g) return;
    for (size_t i = 0; g->names && i < g->n_rules; i++) free(g->names[i]); /* NULL: its allocation failed */
    free(g->names);
    free(g->generated);
    free(g->first);
    free(g->elems);
    free(g);
}

int64_t sp_gbnf_find(const sp_gbnf *g, const char *name) {
    for (size_t i = 0; i < g->n_rules; i++)
        if (!strcmp(g->names[i], name)) return (int64_t)i;
    return -1;
}

static void parser_free(parser *p) {
    for (size_t i = 0; i < p->n_rules; i++) {
        free(p->rules[i].name);
        free(p->rules[i].elems);
    }
    free(p->rules);
    sp_strmap_free(&p->names);
}

sprout_status sp_gbnf_parse(const char *text, size_t len, sp_gbnf **out) {
    *out = NULL;
    parser p = {.s = text, .len = len};
    if (!sp_strmap_init(&p.names, 64)) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "grammar: out of memory");
    skip_space(&p, true);
    if (at_end(&p)) {
        parser_free(&p);
        return sp_fail(SPROUT_ERR_FORMAT, "grammar:1:1: empty grammar");
    }
    while (!at_end(&p) && parse_rule(&p)) {}
    for (size_t i = 0; p.status == SPROUT_OK && i < p.n_rules; i++)
        if (!p.rules[i].defined) {
            char msg[128];
            snprintf(msg, sizeof msg, "undefined rule '%.80s'", p.rules[i].name);
            fail_at(&p, p.rules[i].ref_at, msg);
        }
    sp_gbnf *g = NULL;
    if (p.status == SPROUT_OK) {
        g = calloc(1, sizeof *g);
        if (g) {
            g->n_rules = p.n_rules;
            g->names = calloc(p.n_rules, sizeof *g->names);
            g->generated = calloc(p.n_rules, sizeof *g->generated);
            g->first = calloc(p.n_rules, sizeof *g->first);
            g->elems = malloc((p.total ? p.total : 1) * sizeof *g->elems);
        }
        if (!g || !g->names || !g->generated || !g->first || !g->elems) {
            sp_gbnf_free(g);
            g = NULL;
            oom(&p);
        } else {
            for (size_t i = 0; i < p.n_rules; i++) {
                g->names[i] = p.rules[i].name;
                p.rules[i].name = NULL;
                g->generated[i] = p.rules[i].generated;
                g->first[i] = g->n_elems;
                memcpy(g->elems + g->n_elems, p.rules[i].elems, p.rules[i].n * sizeof *g->elems);
                g->n_elems += p.rules[i].n;
            }
        }
    }
    const sprout_status st = p.status;
    parser_free(&p);
    *out = g;
    return st;
}
