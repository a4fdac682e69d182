/* The lexer of Go's text/template: text and actions, "{{- " and " -}}"
 * trimming the white space beside them, comments, and inside actions the
 * tokens of Go's template grammar with Go's string and number syntax. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "template/go_template.h"

typedef struct gt_lexer {
    const char *src;
    size_t len, pos;
    size_t lc_pos; /* where line/column were last computed */
    int line, column;
    sp_arena *arena;
    gt_token *toks;
    size_t n, cap;
    bool space; /* white space since the last token inside an action */
    gt_error *err;
} gt_lexer;

static void locate(gt_lexer *lx, size_t pos, int *line, int *column) {
    if (pos < lx->lc_pos) lx->lc_pos = 0, lx->line = 1, lx->column = 1;
    for (; lx->lc_pos < pos; lx->lc_pos++) {
        if (lx->src[lx->lc_pos] == '\n') lx->line++, lx->column = 1;
        else if ((lx->src[lx->lc_pos] & 0xC0) != 0x80) lx->column++;
    }
    *line = lx->line;
    *column = lx->column;
}

static bool fail_at(gt_lexer *lx, size_t pos, const char *fmt, ...) SP_PRINTF(3, 4);
static bool fail_at(gt_lexer *lx, size_t pos, const char *fmt, ...) {
    int line, column;
    locate(lx, pos, &line, &column);
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    tpl_set_error(lx->err, SPROUT_ERR_FORMAT, line, column, "%s", msg);
    return false;
}

static bool emit(gt_lexer *lx, gt_token_kind kind, size_t pos, const char *text, size_t len) {
    if (lx->n == lx->cap) {
        size_t cap = lx->cap ? lx->cap * 2 : 64;
        gt_token *t = sp_arena_alloc(lx->arena, cap * sizeof *t);
        if (!t) return fail_at(lx, pos, "out of memory");
        if (lx->n) memcpy(t, lx->toks, lx->n * sizeof *t);
        lx->toks = t;
        lx->cap = cap;
    }
    gt_token *t = &lx->toks[lx->n++];
    *t = (gt_token){.kind = kind, .space_before = lx->space, .text = text, .len = len};
    locate(lx, pos, &t->line, &t->column);
    lx->space = false;
    return true;
}

static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }
static bool is_alnum(unsigned char c) {
    return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c >= 0x80;
}
static bool starts(const gt_lexer *lx, size_t pos, const char *s) {
    size_t n = strlen(s);
    return pos + n <= lx->len && !memcmp(lx->src + pos, s, n);
}

/* "-}}" preceded by white space closes an action and trims what follows. */
static size_t right_delim_at(const gt_lexer *lx, size_t pos, bool *trim) {
    if (pos < lx->len && is_space(lx->src[pos]) && starts(lx, pos + 1, "-}}")) {
        *trim = true;
        return 4;
    }
    *trim = false;
    return starts(lx, pos, "}}") ? 2 : 0;
}

static int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static void put_utf8(char *out, size_t *n, uint32_t cp) {
    if (cp < 0x80) out[(*n)++] = (char)cp;
    else if (cp < 0x800) {
        out[(*n)++] = (char)(0xC0 | cp >> 6);
        out[(*n)++] = (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out[(*n)++] = (char)(0xE0 | cp >> 12);
        out[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[(*n)++] = (char)(0x80 | (cp & 0x3F));
    } else {
        out[(*n)++] = (char)(0xF0 | cp >> 18);
        out[(*n)++] = (char)(0x80 | ((cp >> 12) & 0x3F));
        out[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[(*n)++] = (char)(0x80 | (cp & 0x3F));
    }
}

/* One escape after a backslash at src[*i] (strconv.Unquote's rules);
 * appends its bytes to out. */
static bool unescape(gt_lexer *lx, size_t *i, char quote, char *out, size_t *n) {
    const char *s = lx->src;
    size_t at = *i;
    if (at + 1 >= lx->len) return fail_at(lx, at, "unterminated quoted string");
    char c = s[at + 1];
    static const char simple_in[] = "abfnrtv\\", simple_out[] = "\a\b\f\n\r\t\v\\";
    const char *k = strchr(simple_in, c);
    if (c && k) {
        out[(*n)++] = simple_out[k - simple_in];
        *i = at + 2;
        return true;
    }
    if (c == quote) {
        out[(*n)++] = c;
        *i = at + 2;
        return true;
    }
    int digits = c == 'x' ? 2 : c == 'u' ? 4 : c == 'U' ? 8 : (c >= '0' && c <= '7') ? 3 : 0;
    if (!digits) return fail_at(lx, at, "invalid escape sequence \\%c in quoted string", c);
    size_t start = c >= '0' && c <= '7' ? at + 1 : at + 2;
    uint32_t v = 0;
    for (int d = 0; d < digits; d++) {
        int h = start + d < lx->len ? hex_digit(s[start + d]) : -1;
        if (h < 0 || (digits == 3 && h > 7)) return fail_at(lx, at, "invalid escape sequence in quoted string");
        v = v * (digits == 3 ? 8 : 16) + (uint32_t)h;
    }
    if (digits == 2 || digits == 3) {
        if (v > 255) return fail_at(lx, at, "octal escape value > 255");
        out[(*n)++] = (char)v;
    } else {
        if (v > 0x10FFFF || (v >= 0xD800 && v < 0xE000)) return fail_at(lx, at, "invalid Unicode escape in quoted string");
        put_utf8(out, n, v);
    }
    *i = start + (size_t)digits;
    return true;
}

static bool lex_quote(gt_lexer *lx) {
    size_t start = lx->pos, i = start + 1;
    char *out = sp_arena_alloc(lx->arena, lx->len - start + 1);
    if (!out) return fail_at(lx, start, "out of memory");
    size_t n = 0;
    for (;;) {
        if (i >= lx->len || lx->src[i] == '\n') return fail_at(lx, start, "unterminated quoted string");
        char c = lx->src[i];
        if (c == '"') break;
        if (c == '\\') {
            if (!unescape(lx, &i, '"', out, &n)) return false;
        } else out[n++] = c, i++;
    }
    lx->pos = i + 1;
    return emit(lx, GK_STRING, start, out, n);
}

static bool lex_raw(gt_lexer *lx) {
    size_t start = lx->pos;
    const char *end = memchr(lx->src + start + 1, '`', lx->len - start - 1);
    if (!end) return fail_at(lx, start, "unterminated raw quoted string");
    size_t len = (size_t)(end - (lx->src + start + 1));
    char *out = sp_arena_alloc(lx->arena, len + 1);
    if (!out) return fail_at(lx, start, "out of memory");
    size_t n = 0;
    for (size_t k = 0; k < len; k++) /* strconv.Unquote drops carriage returns from raw strings */
        if (lx->src[start + 1 + k] != '\r') out[n++] = lx->src[start + 1 + k];
    lx->pos = start + len + 2;
    return emit(lx, GK_STRING, start, out, n);
}

static bool lex_char(gt_lexer *lx) {
    size_t start = lx->pos, i = start + 1;
    char buf[8];
    size_t n = 0;
    if (i < lx->len && lx->src[i] == '\\') {
        if (!unescape(lx, &i, '\'', buf, &n)) return false;
    } else if (i < lx->len) {
        /* one UTF-8 sequence */
        do n++, i++;
        while (i < lx->len && n < 4 && (lx->src[i] & 0xC0) == 0x80);
        memcpy(buf, lx->src + start + 1, n);
    }
    if (i >= lx->len || lx->src[i] != '\'' || n == 0) return fail_at(lx, start, "unterminated character constant");
    /* decode the rune the bytes spell */
    unsigned char b0 = (unsigned char)buf[0];
    int64_t rune = b0;
    if (n > 1) {
        rune = b0 & (n == 2 ? 0x1F : n == 3 ? 0x0F : 0x07);
        for (size_t k = 1; k < n; k++) rune = rune << 6 | (buf[k] & 0x3F);
    }
    lx->pos = i + 1;
    if (!emit(lx, GK_CHAR, start, lx->src + start, lx->pos - start)) return false;
    lx->toks[lx->n - 1].len = (size_t)rune; /* the parser reads the rune from len */
    return true;
}

/* Go's number syntax, loosely: the parser checks the text. A sign may
 * follow e/E (decimal) or p/P (hexadecimal) as an exponent's. */
static bool lex_number(gt_lexer *lx) {
    size_t start = lx->pos, i = start;
    if (lx->src[i] == '+' || lx->src[i] == '-') i++;
    bool hex = i + 1 < lx->len && lx->src[i] == '0' && (lx->src[i + 1] == 'x' || lx->src[i + 1] == 'X');
    while (i < lx->len) {
        char c = lx->src[i], prev = lx->src[i - 1];
        bool exp_sign = (c == '+' || c == '-') && (hex ? (prev == 'p' || prev == 'P') : (prev == 'e' || prev == 'E'));
        if (is_alnum((unsigned char)c) || c == '.' || exp_sign) i++;
        else break;
    }
    lx->pos = i;
    return emit(lx, GK_NUMBER, start, lx->src + start, i - start);
}

static bool lex_inside(gt_lexer *lx, size_t action_start) {
    int parens = 0;
    for (;;) {
        if (lx->pos >= lx->len) return fail_at(lx, action_start, "unclosed action");
        bool trim;
        size_t dl = right_delim_at(lx, lx->pos, &trim);
        if (dl && parens == 0) {
            if (!emit(lx, GK_RIGHT, lx->pos, NULL, 0)) return false;
            lx->pos += dl;
            if (trim)
                while (lx->pos < lx->len && is_space(lx->src[lx->pos])) lx->pos++;
            return true;
        }
        size_t p = lx->pos;
        char c = lx->src[p];
        if (is_space(c)) { /* up to the space of a " -}}" */
            while (lx->pos < lx->len && is_space(lx->src[lx->pos]) && !starts(lx, lx->pos + 1, "-}}")) lx->pos++;
            if (lx->pos == p) return fail_at(lx, p, "unclosed left paren"); /* " -}}" inside ( ) */
            lx->space = true;
            continue;
        }
        if (dl) return fail_at(lx, p, "unclosed left paren");
        bool ok;
        switch (c) {
        case '=': lx->pos++; ok = emit(lx, GK_ASSIGN, p, "=", 1); break;
        case ':':
            if (!starts(lx, p, ":=")) return fail_at(lx, p, "expected :=");
            lx->pos += 2;
            ok = emit(lx, GK_DECLARE, p, ":=", 2);
            break;
        case '|': lx->pos++; ok = emit(lx, GK_PIPE, p, "|", 1); break;
        case ',': lx->pos++; ok = emit(lx, GK_COMMA, p, ",", 1); break;
        case '(': lx->pos++; parens++; ok = emit(lx, GK_LPAREN, p, "(", 1); break;
        case ')':
            if (--parens < 0) return fail_at(lx, p, "unexpected right paren");
            lx->pos++;
            ok = emit(lx, GK_RPAREN, p, ")", 1);
            break;
        case '"': ok = lex_quote(lx); break;
        case '`': ok = lex_raw(lx); break;
        case '\'': ok = lex_char(lx); break;
        case '$':
        case '.': {
            size_t q = p + 1;
            if (c == '.' && q < lx->len && lx->src[q] >= '0' && lx->src[q] <= '9') {
                ok = lex_number(lx);
                break;
            }
            while (q < lx->len && is_alnum((unsigned char)lx->src[q])) q++;
            lx->pos = q;
            if (c == '$') ok = emit(lx, GK_VAR, p, lx->src + p, q - p);
            else if (q == p + 1) ok = emit(lx, GK_DOT, p, ".", 1);
            else ok = emit(lx, GK_FIELD, p, lx->src + p + 1, q - p - 1);
            break;
        }
        default:
            if ((c >= '0' && c <= '9') || ((c == '-' || c == '+') && p + 1 < lx->len && lx->src[p + 1] >= '0' &&
                                           lx->src[p + 1] <= '9')) {
                ok = lex_number(lx);
            } else if (is_alnum((unsigned char)c)) {
                size_t q = p;
                while (q < lx->len && is_alnum((unsigned char)lx->src[q])) q++;
                lx->pos = q;
                size_t n = q - p;
                gt_token_kind kind = GK_IDENT;
                if ((n == 4 && !memcmp(lx->src + p, "true", 4)) || (n == 5 && !memcmp(lx->src + p, "false", 5))) kind = GK_BOOL;
                else if (n == 3 && !memcmp(lx->src + p, "nil", 3)) kind = GK_NIL;
                ok = emit(lx, kind, p, lx->src + p, n);
            } else {
                return fail_at(lx, p, "unrecognized character in action: U+%04X", (unsigned char)c);
            }
        }
        if (!ok) return false;
    }
}

/* A comment: "/ *" right after the delimiter, closed by "* /" right before one. */
static bool lex_comment(gt_lexer *lx, size_t action_start) {
    size_t p = lx->pos + 2;
    const char *end = NULL;
    for (size_t q = p; q + 1 < lx->len; q++)
        if (lx->src[q] == '*' && lx->src[q + 1] == '/') {
            end = lx->src + q;
            break;
        }
    if (!end) return fail_at(lx, action_start, "unclosed comment");
    lx->pos = (size_t)(end - lx->src) + 2;
    bool trim;
    size_t dl = right_delim_at(lx, lx->pos, &trim);
    if (!dl) return fail_at(lx, action_start, "comment ends before closing delimiter");
    lx->pos += dl;
    if (trim)
        while (lx->pos < lx->len && is_space(lx->src[lx->pos])) lx->pos++;
    return true;
}

bool gt_lex(const char *src, size_t len, sp_arena *arena, gt_token **toks, size_t *n, gt_error *err) {
    gt_lexer lx = {.src = src, .len = len, .line = 1, .column = 1, .arena = arena, .err = err};
    while (lx.pos < len) {
        const char *open = NULL;
        for (size_t q = lx.pos; q + 1 < len; q++)
            if (src[q] == '{' && src[q + 1] == '{') {
                open = src + q;
                break;
            }
        size_t text_end = open ? (size_t)(open - src) : len;
        size_t action = text_end;
        bool trim_left = open && text_end + 3 < len && src[text_end + 2] == '-' && is_space(src[text_end + 3]);
        size_t kept = text_end;
        if (trim_left)
            while (kept > lx.pos && is_space(src[kept - 1])) kept--;
        if (kept > lx.pos && !emit(&lx, GK_TEXT, lx.pos, src + lx.pos, kept - lx.pos)) return false;
        if (!open) break;
        lx.pos = action + (trim_left ? 4 : 2);
        if (trim_left) /* "{{- " then any more white space */
            while (lx.pos < len && is_space(src[lx.pos])) lx.pos++;
        if (starts(&lx, lx.pos, "/*")) {
            if (!lex_comment(&lx, action)) return false;
            continue;
        }
        lx.space = false;
        if (!emit(&lx, GK_LEFT, action, NULL, 0) || !lex_inside(&lx, action)) return false;
    }
    if (!emit(&lx, GK_EOF, len, NULL, 0)) return false;
    *toks = lx.toks;
    *n = lx.n;
    return true;
}
