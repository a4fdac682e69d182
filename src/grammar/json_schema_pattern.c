/* JSON Schema to GBNF: a `pattern` (a regex subset: anchors, literals,
 * escapes, `.`, classes, groups, alternation, `? * + {m,n}`) as GBNF that
 * never writes a raw quote, backslash or control character. */
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/json_schema_internal.h"

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
    int depth; /* groups open: at most MAX_GROUP_NESTING (a fuzzed pattern of thousands of '(' overflowed the stack) */
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

void put_class_char(sb *b, uint32_t cp) {
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
bool json_escaped(uint32_t cp) { return cp < 0x20 || cp == '"' || cp == '\\'; }

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

/* What a part of a pattern can match, as far as GBNF cares: the empty
 * string (nullable), or nothing else (only_empty). */
typedef struct matches {
    bool nullable, only_empty;
} matches;

static void parse_alternation(pat *x, sb *out, matches *m);

/* A quantifier after an atom, if any, appended to the atom's text; *part is
 * the atom's, then the quantified atom's. An unbounded repetition of a part
 * that can be empty is left recursion to a GBNF reader (llama.cpp's refuses
 * it too): where the part matches only the empty string so does the
 * repetition, which is dropped; otherwise the pattern is refused. */
static bool parse_quantifier(pat *x, sb *atom, matches *part) {
    if (x->p >= x->end) return true;
    const char q = *x->p;
    const char *start = x->p;
    long long min = 1, max = 1;
    if (q == '*' || q == '+' || q == '?') {
        x->p++;
        min = q == '+', max = q == '?' ? 1 : -1;
    } else if (q == '{') {
        x->p++;
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
        min = m, max = n;
    } else {
        return true;
    }
    if (max < 0 && part->nullable && !part->only_empty) {
        x->p = start;
        pat_fail(x, "a repetition without bound of a part that can be empty is not supported");
        return false;
    }
    if (max == 0) part->only_empty = true;
    if (min == 0) part->nullable = true;
    if (max < 0 && part->only_empty) {
        /* matches the empty string only, as the part does: left as the part */
    } else if (q != '{') {
        sb_putc(atom, q);
    } else if (max < 0) {
        sb_printf(atom, "{%lld,}", min);
    } else {
        sb_printf(atom, "{%lld,%lld}", min, max);
    }
    if (x->p < x->end && (*x->p == '?' || *x->p == '+' || *x->p == '*' || *x->p == '{')) {
        pat_fail(x, "lazy or stacked quantifiers are not supported");
        return false;
    }
    return true;
}

/* One branch: atoms with quantifiers, literals merged into one string. */
static void parse_sequence(pat *x, sb *out, matches *m) {
    *m = (matches){true, true};
    bool any = false;
    sb lit = {0}; /* the JSON text of the pending literal run */
    while (x->p < x->end && *x->p != '|' && *x->p != ')' && !failed(x->c)) {
        sb atom = {0};
        matches part = {false, false}; /* a character, unless a group says otherwise */
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
            if (++x->depth > MAX_GROUP_NESTING) {
                pat_fail(x, "groups nested deeper than %d", MAX_GROUP_NESTING);
                break;
            }
            sb inner = {0};
            parse_alternation(x, &inner, &part);
            x->depth--;
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
                m->nullable = m->only_empty = false;
                sb_putn(&lit, atom.p, atom.n);
                free(atom.p);
                continue;
            }
            sb quoted = {0};
            put_literal(&quoted, atom.p, atom.n);
            free(atom.p);
            atom = quoted;
        }
        if (!parse_quantifier(x, &atom, &part)) {
            free(atom.p);
            break;
        }
        m->nullable = m->nullable && part.nullable, m->only_empty = m->only_empty && part.only_empty;
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

static void parse_alternation(pat *x, sb *out, matches *m) {
    parse_sequence(x, out, m);
    while (!failed(x->c) && x->p < x->end && *x->p == '|') {
        x->p++;
        sb_puts(out, " | ");
        matches branch;
        parse_sequence(x, out, &branch);
        m->nullable = m->nullable || branch.nullable, m->only_empty = m->only_empty && branch.only_empty;
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
const char *visit_pattern(cv *c, json_t *v, const char *rule_name, const char *path) {
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
    pat x = {c, path, s, s, s + len, 0};
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
    matches whole;
    parse_alternation(&x, &body, &whole);
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
