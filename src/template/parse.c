/* Lexer and parser. The lexer applies jinja2's whitespace rules as it cuts
 * the source into text and tags (trim_blocks and lstrip_blocks on, "-" and
 * "+" modifiers, one trailing newline of the source dropped, "\r\n" read as
 * "\n"); the parser is jinja2's grammar by recursive descent, with the same
 * operator precedence. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "template/template_internal.h"

/* --- tokens --------------------------------------------------------------------------- */

typedef enum tok_kind {
    T_TEXT,
    T_VAR_BEGIN,
    T_VAR_END,
    T_BLOCK_BEGIN,
    T_BLOCK_END,
    T_NAME,
    T_STRING,
    T_INT,
    T_FLOAT,
    T_OP,
    T_EOF
} tok_kind;

typedef struct token {
    tok_kind kind;
    int line, column;
    const char *text; /* NAME, OP: in the source; STRING, TEXT: decoded, in the arena */
    size_t len;
    int64_t i;
    double f;
} token;

typedef struct lexer {
    const char *src;
    size_t len;
    size_t pos;
    /* line/column bookkeeping: the position they describe */
    size_t lc_pos;
    int line, column;
    token *toks;
    size_t n, cap;
    tpl_program *prog;
    tpl_error *err;
    bool failed;
} lexer;

static void set_error(tpl_error *err, sprout_status st, int line, int column, const char *fmt, ...) {
    if (err->status != SPROUT_OK) return;
    err->status = st;
    err->line = line;
    err->column = column;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
}

static void locate(lexer *lx, size_t pos, int *line, int *column) {
    if (pos < lx->lc_pos) { /* rewind: recount from the start */
        lx->lc_pos = 0;
        lx->line = 1;
        lx->column = 1;
    }
    for (; lx->lc_pos < pos; lx->lc_pos++) {
        if (lx->src[lx->lc_pos] == '\n') {
            lx->line++;
            lx->column = 1;
        } else if (((unsigned char)lx->src[lx->lc_pos] & 0xC0) != 0x80) {
            lx->column++;
        }
    }
    *line = lx->line;
    *column = lx->column;
}

static void lex_fail(lexer *lx, size_t pos, const char *fmt, const char *arg) {
    int line, column;
    locate(lx, pos, &line, &column);
    set_error(lx->err, SPROUT_ERR_FORMAT, line, column, fmt, arg);
    lx->failed = true;
}

static token *push_token(lexer *lx, tok_kind kind, size_t pos) {
    if (lx->n == lx->cap) {
        size_t cap = lx->cap ? 2 * lx->cap : 256;
        token *t = realloc(lx->toks, cap * sizeof *t);
        if (!t) {
            set_error(lx->err, SPROUT_ERR_OUT_OF_MEMORY, 0, 0, "out of memory");
            lx->failed = true;
            return NULL;
        }
        lx->toks = t;
        lx->cap = cap;
    }
    token *t = &lx->toks[lx->n++];
    memset(t, 0, sizeof *t);
    t->kind = kind;
    locate(lx, pos, &t->line, &t->column);
    return t;
}

/* Python's str.isspace for the code point at s (its length in *cl). */
static bool py_space_at(const char *s, size_t n, size_t *cl) {
    unsigned char c = (unsigned char)s[0];
    *cl = 1;
    if (c == ' ' || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F)) return true;
    if (c == 0xC2 && n >= 2 && (s[1] == (char)0x85 || s[1] == (char)0xA0)) {
        *cl = 2;
        return true;
    }
    if ((c == 0xE1 || c == 0xE2 || c == 0xE3) && n >= 3) {
        unsigned cp = (unsigned)(c & 0x0F) << 12 | (unsigned)(s[1] & 0x3F) << 6 | (unsigned)(s[2] & 0x3F);
        if (cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F ||
            cp == 0x3000) {
            *cl = 3;
            return true;
        }
    }
    return false;
}

/* Length of s[0..n) without trailing whitespace (Python's rstrip). */
static size_t rstrip_len(const char *s, size_t n) {
    size_t end = n;
    while (end > 0) {
        size_t start = end - 1;
        while (start > 0 && ((unsigned char)s[start] & 0xC0) == 0x80 && end - start < 4) start--;
        size_t cl;
        if (!py_space_at(s + start, end - start, &cl) || start + cl != end) break;
        end = start;
    }
    return end;
}

/* Bytes of leading whitespace (Python's lstrip). */
static size_t lstrip_len(const char *s, size_t n) {
    size_t i = 0, cl;
    while (i < n && py_space_at(s + i, n - i, &cl)) i += cl;
    return i;
}

/* Emits a text token, with "\r\n" and "\r" turned into "\n" as jinja2's
 * lexer does. */
static void emit_text(lexer *lx, size_t start, size_t len) {
    if (len == 0) return;
    char *buf = sp_arena_alloc(&lx->prog->arena, len + 1);
    if (!buf) {
        set_error(lx->err, SPROUT_ERR_OUT_OF_MEMORY, 0, 0, "out of memory");
        lx->failed = true;
        return;
    }
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        char c = lx->src[start + i];
        if (c == '\r') {
            buf[o++] = '\n';
            if (i + 1 < len && lx->src[start + i + 1] == '\n') i++;
        } else buf[o++] = c;
    }
    token *t = push_token(lx, T_TEXT, start);
    if (t) {
        t->text = buf;
        t->len = o;
    }
}

static const char *const operators[] = {"**", "//", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~", "<", ">",
                                        "(",  ")",  "[",  "]",  "{",  "}",  ",", ".", ":", "|", "=", ";"};

static void put_utf8(char *out, size_t *o, uint32_t cp) {
    if (cp < 0x80) out[(*o)++] = (char)cp;
    else if (cp < 0x800) {
        out[(*o)++] = (char)(0xC0 | (cp >> 6));
        out[(*o)++] = (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out[(*o)++] = (char)(0xE0 | (cp >> 12));
        out[(*o)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[(*o)++] = (char)(0x80 | (cp & 0x3F));
    } else {
        out[(*o)++] = (char)(0xF0 | (cp >> 18));
        out[(*o)++] = (char)(0x80 | ((cp >> 12) & 0x3F));
        out[(*o)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[(*o)++] = (char)(0x80 | (cp & 0x3F));
    }
}

static int hexval(char c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* A string literal at lx->pos (its quote); decodes Python escapes. */
static void lex_string(lexer *lx) {
    const char quote = lx->src[lx->pos];
    size_t start = lx->pos, i = lx->pos + 1;
    while (i < lx->len && lx->src[i] != quote) i += lx->src[i] == '\\' && i + 1 < lx->len ? 2 : 1;
    if (i >= lx->len) {
        lex_fail(lx, start, "unterminated string%s", "");
        return;
    }
    const char *s = lx->src + start + 1;
    size_t n = i - start - 1;
    char *buf = sp_arena_alloc(&lx->prog->arena, n * 2 + 1);
    if (!buf) {
        lex_fail(lx, start, "out of memory%s", "");
        return;
    }
    size_t o = 0;
    for (size_t k = 0; k < n; k++) {
        char c = s[k];
        if (c == '\r') { /* newlines are normalised inside strings too */
            buf[o++] = '\n';
            if (k + 1 < n && s[k + 1] == '\n') k++;
            continue;
        }
        if (c != '\\' || k + 1 >= n) {
            buf[o++] = c;
            continue;
        }
        char e = s[++k];
        int digits = 0;
        switch (e) {
        case '\n': break; /* line continuation */
        case '\\': buf[o++] = '\\'; break;
        case '\'': buf[o++] = '\''; break;
        case '"': buf[o++] = '"'; break;
        case 'n': buf[o++] = '\n'; break;
        case 't': buf[o++] = '\t'; break;
        case 'r': buf[o++] = '\r'; break;
        case 'a': buf[o++] = '\a'; break;
        case 'b': buf[o++] = '\b'; break;
        case 'f': buf[o++] = '\f'; break;
        case 'v': buf[o++] = '\v'; break;
        case 'x': digits = 2; break;
        case 'u': digits = 4; break;
        case 'U': digits = 8; break;
        default:
            if (e >= '0' && e <= '7') {
                uint32_t v = (uint32_t)(e - '0');
                for (int d = 0; d < 2 && k + 1 < n && s[k + 1] >= '0' && s[k + 1] <= '7'; d++) v = v * 8 + (uint32_t)(s[++k] - '0');
                put_utf8(buf, &o, v);
            } else { /* unknown escapes keep their backslash, as in Python */
                buf[o++] = '\\';
                buf[o++] = e;
            }
        }
        if (digits) {
            uint32_t v = 0;
            int d = 0;
            for (; d < digits && k + 1 < n && hexval(s[k + 1]) >= 0; d++) v = v * 16 + (uint32_t)hexval(s[++k]);
            if (d < digits || v > 0x10FFFF) {
                lex_fail(lx, start, "truncated or invalid \\%s escape in a string", e == 'x' ? "x" : e == 'u' ? "u" : "U");
                return;
            }
            put_utf8(buf, &o, v);
        }
    }
    token *t = push_token(lx, T_STRING, start);
    if (t) {
        t->text = buf;
        t->len = o;
    }
    lx->pos = i + 1;
}

static void lex_number(lexer *lx) {
    size_t start = lx->pos, i = start;
    bool is_float = false;
    while (i < lx->len && (isdigit((unsigned char)lx->src[i]) || lx->src[i] == '_')) i++;
    bool after_dot = lx->n > 0 && lx->toks[lx->n - 1].kind == T_OP && lx->toks[lx->n - 1].text[0] == '.';
    if (!after_dot && i + 1 < lx->len && lx->src[i] == '.' && isdigit((unsigned char)lx->src[i + 1])) {
        is_float = true;
        i++;
        while (i < lx->len && (isdigit((unsigned char)lx->src[i]) || lx->src[i] == '_')) i++;
    }
    if (!after_dot && i < lx->len && (lx->src[i] == 'e' || lx->src[i] == 'E')) {
        size_t j = i + 1;
        if (j < lx->len && (lx->src[j] == '+' || lx->src[j] == '-')) j++;
        if (j < lx->len && isdigit((unsigned char)lx->src[j])) {
            is_float = true;
            i = j;
            while (i < lx->len && isdigit((unsigned char)lx->src[i])) i++;
        }
    }
    char tmp[64];
    size_t k = 0;
    for (size_t p = start; p < i && k < sizeof tmp - 1; p++)
        if (lx->src[p] != '_') tmp[k++] = lx->src[p];
    tmp[k] = 0;
    token *t = push_token(lx, is_float ? T_FLOAT : T_INT, start);
    if (!t) return;
    if (is_float) t->f = strtod(tmp, NULL);
    else {
        errno = 0;
        unsigned long long v = strtoull(tmp, NULL, 10);
        if (errno || v > INT64_MAX) {
            lex_fail(lx, start, "integer literal too large%s", "");
            return;
        }
        t->i = (int64_t)v;
    }
    lx->pos = i;
}

/* Expression tokens up to the tag's end ("}}" or "%}" outside brackets).
 * Returns the modifier before the end ('-', '+' or 0); sets lx->pos past it. */
static char lex_tag(lexer *lx, char end_char, size_t tag_pos) {
    int depth = 0;
    for (;;) {
        while (lx->pos < lx->len && isspace((unsigned char)lx->src[lx->pos])) lx->pos++;
        if (lx->pos >= lx->len) {
            lex_fail(lx, tag_pos, end_char == '}' ? "unexpected end of template, expected '}}'%s" : "unexpected end of template, expected '%%}'%s", "");
            return 0;
        }
        const char *p = lx->src + lx->pos;
        size_t left = lx->len - lx->pos;
        if (depth == 0) {
            if (left >= 3 && (p[0] == '-' || p[0] == '+') && p[1] == end_char && p[2] == '}') {
                if (p[0] == '+' && end_char == '}') goto ops; /* "+}}" is not a modifier */
                lx->pos += 3;
                return p[0];
            }
            if (left >= 2 && p[0] == end_char && p[1] == '}') {
                lx->pos += 2;
                return 0;
            }
        }
        if (isalpha((unsigned char)p[0]) || p[0] == '_') {
            size_t i = 0;
            while (i < left && (isalnum((unsigned char)p[i]) || p[i] == '_')) i++;
            token *t = push_token(lx, T_NAME, lx->pos);
            if (!t) return 0;
            t->text = p;
            t->len = i;
            lx->pos += i;
            continue;
        }
        if (isdigit((unsigned char)p[0])) {
            lex_number(lx);
            if (lx->failed) return 0;
            continue;
        }
        if (p[0] == '\'' || p[0] == '"') {
            lex_string(lx);
            if (lx->failed) return 0;
            continue;
        }
    ops:
        for (size_t k = 0; k < sizeof operators / sizeof operators[0]; k++) {
            size_t ol = strlen(operators[k]);
            if (left >= ol && memcmp(p, operators[k], ol) == 0) {
                token *t = push_token(lx, T_OP, lx->pos);
                if (!t) return 0;
                t->text = operators[k];
                t->len = ol;
                lx->pos += ol;
                if (ol == 1 && strchr("([{", p[0])) depth++;
                if (ol == 1 && strchr(")]}", p[0])) {
                    if (depth == 0) {
                        char tmp[2] = {p[0], 0};
                        lex_fail(lx, lx->pos - 1, "unexpected '%s'", tmp);
                        return 0;
                    }
                    depth--;
                }
                goto next;
            }
        }
        {
            char tmp[8];
            snprintf(tmp, sizeof tmp, "%c", p[0]);
            lex_fail(lx, lx->pos, "unexpected character '%s'", tmp);
            return 0;
        }
    next:;
    }
}

/* After a tag: "-" strips all following whitespace; otherwise block tags
 * and comments eat one newline (trim_blocks) unless marked "+". Returns
 * whether the consumed text ended a line (for lstrip_blocks). */
static bool after_tag(lexer *lx, char modifier, bool block_like) {
    if (modifier == '-') {
        size_t skip = lstrip_len(lx->src + lx->pos, lx->len - lx->pos);
        lx->pos += skip;
        return skip > 0 && lx->src[lx->pos - 1] == '\n';
    }
    if (modifier != '+' && block_like && lx->pos < lx->len && lx->src[lx->pos] == '\n') {
        lx->pos++;
        return true;
    }
    return false;
}

static bool is_name_token(const token *t, const char *name) {
    return t->kind == T_NAME && t->len == strlen(name) && memcmp(t->text, name, t->len) == 0;
}

/* {% raw %} ... {% endraw %}: the body is text, verbatim. */
static bool lex_raw(lexer *lx, size_t tag_pos, bool *line_starting) {
    for (size_t i = lx->pos; i + 1 < lx->len; i++) {
        if (lx->src[i] != '{' || lx->src[i + 1] != '%') continue;
        size_t j = i + 2;
        char lmod = 0;
        if (j < lx->len && (lx->src[j] == '-' || lx->src[j] == '+')) lmod = lx->src[j++];
        while (j < lx->len && isspace((unsigned char)lx->src[j])) j++;
        if (lx->len - j < 6 || memcmp(lx->src + j, "endraw", 6) != 0) continue;
        j += 6;
        while (j < lx->len && isspace((unsigned char)lx->src[j])) j++;
        char rmod = 0;
        if (j < lx->len && (lx->src[j] == '-' || lx->src[j] == '+')) rmod = lx->src[j++];
        if (lx->len - j < 2 || lx->src[j] != '%' || lx->src[j + 1] != '}') continue;
        size_t body_len = i - lx->pos;
        if (lmod == '-') body_len = rstrip_len(lx->src + lx->pos, body_len);
        emit_text(lx, lx->pos, body_len);
        lx->pos = j + 2;
        *line_starting = after_tag(lx, rmod, true);
        return true;
    }
    lex_fail(lx, tag_pos, "missing end of raw directive%s", "");
    return false;
}

static bool lex(lexer *lx) {
    /* keep_trailing_newline is off: one newline at the very end goes */
    if (lx->len && lx->src[lx->len - 1] == '\n') lx->len -= lx->len > 1 && lx->src[lx->len - 2] == '\r' ? 2 : 1;
    else if (lx->len && lx->src[lx->len - 1] == '\r') lx->len--;
    bool line_starting = true;
    while (!lx->failed && lx->pos < lx->len) {
        /* the next tag start */
        size_t tag = lx->pos;
        char kind = 0;
        for (; tag + 1 < lx->len; tag++) {
            if (lx->src[tag] == '{' && (lx->src[tag + 1] == '{' || lx->src[tag + 1] == '%' || lx->src[tag + 1] == '#')) {
                kind = lx->src[tag + 1];
                break;
            }
        }
        if (!kind) {
            emit_text(lx, lx->pos, lx->len - lx->pos);
            break;
        }
        size_t text_len = tag - lx->pos;
        char lmod = tag + 2 < lx->len && (lx->src[tag + 2] == '-' || lx->src[tag + 2] == '+') ? lx->src[tag + 2] : 0;
        if (lmod == '+' && kind == '{') lmod = 0;
        if (lmod == '-') {
            text_len = rstrip_len(lx->src + lx->pos, text_len);
        } else if (lmod != '+' && kind != '{') {
            /* lstrip_blocks: only whitespace between the line start and the tag */
            size_t l_pos = text_len;
            while (l_pos > 0 && lx->src[lx->pos + l_pos - 1] != '\n') l_pos--;
            if ((l_pos > 0 || line_starting) && l_pos < text_len &&
                lstrip_len(lx->src + lx->pos + l_pos, text_len - l_pos) == text_len - l_pos)
                text_len = l_pos;
        }
        emit_text(lx, lx->pos, text_len);
        lx->pos = tag + 2 + (lmod != 0);
        if (kind == '#') {
            size_t end = lx->pos;
            while (end + 1 < lx->len && !(lx->src[end] == '#' && lx->src[end + 1] == '}')) end++;
            if (end + 1 >= lx->len) {
                lex_fail(lx, tag, "missing end of comment tag%s", "");
                break;
            }
            char rmod = end > lx->pos && (lx->src[end - 1] == '-' || lx->src[end - 1] == '+') ? lx->src[end - 1] : 0;
            lx->pos = end + 2;
            line_starting = after_tag(lx, rmod, true);
            continue;
        }
        size_t first_tok = lx->n;
        if (!push_token(lx, kind == '{' ? T_VAR_BEGIN : T_BLOCK_BEGIN, tag)) break;
        char rmod = lex_tag(lx, kind == '{' ? '}' : '%', tag);
        if (lx->failed) break;
        if (kind == '%' && lx->n == first_tok + 2 && is_name_token(&lx->toks[first_tok + 1], "raw")) {
            lx->n = first_tok; /* the raw tag itself produces nothing */
            after_tag(lx, rmod, true);
            if (!lex_raw(lx, tag, &line_starting)) break;
            continue;
        }
        if (!push_token(lx, kind == '{' ? T_VAR_END : T_BLOCK_END, lx->pos)) break;
        line_starting = after_tag(lx, rmod, kind == '%');
    }
    if (!lx->failed) push_token(lx, T_EOF, lx->len);
    return !lx->failed;
}

/* --- parser ----------------------------------------------------------------------------- */

typedef struct parser {
    token *toks;
    size_t pos;
    tpl_program *prog;
    tpl_error *err;
    int depth;
    int loop_depth;
    bool failed;
} parser;

static token *peek(parser *p) { return &p->toks[p->pos]; }
static token *peek2(parser *p) { return p->toks[p->pos].kind == T_EOF ? &p->toks[p->pos] : &p->toks[p->pos + 1]; }
static token *advance(parser *p) {
    token *t = &p->toks[p->pos];
    if (t->kind != T_EOF) p->pos++;
    return t;
}

static bool is_op(const token *t, const char *op) { return t->kind == T_OP && !strcmp(t->text, op); }
static bool is_name(const token *t, const char *name) { return is_name_token(t, name); }

static const char *describe(const token *t, char *buf, size_t cap) {
    switch (t->kind) {
    case T_EOF: return "end of template";
    case T_BLOCK_END: return "end of statement block";
    case T_VAR_END: return "end of print statement";
    case T_TEXT: return "template data";
    case T_STRING: return "string";
    case T_INT:
    case T_FLOAT: return "number";
    default: snprintf(buf, cap, "'%.*s'", (int)(t->len > 40 ? 40 : t->len), t->text); return buf;
    }
}

static void fail_at(parser *p, const token *t, const char *fmt, ...) {
    if (!p->failed) {
        char msg[400];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        set_error(p->err, SPROUT_ERR_FORMAT, t->line, t->column, "%s", msg);
    }
    p->failed = true;
}

static void fail_unexpected(parser *p, const token *t, const char *expected) {
    char buf[64];
    if (expected) fail_at(p, t, "expected %s, got %s", expected, describe(t, buf, sizeof buf));
    else fail_at(p, t, "unexpected %s", describe(t, buf, sizeof buf));
}

static bool expect_op(parser *p, const char *op) {
    if (is_op(peek(p), op)) {
        advance(p);
        return true;
    }
    char want[16];
    snprintf(want, sizeof want, "'%s'", op);
    fail_unexpected(p, peek(p), want);
    return false;
}

static bool expect_kind(parser *p, tok_kind kind, const char *what) {
    if (peek(p)->kind == kind) {
        advance(p);
        return true;
    }
    fail_unexpected(p, peek(p), what);
    return false;
}

static node *new_node(parser *p, node_kind kind, const token *at) {
    node *n = sp_arena_alloc(&p->prog->arena, sizeof *n);
    if (!n) {
        fail_at(p, at, "out of memory");
        return NULL;
    }
    n->kind = kind;
    n->line = at->line;
    n->column = at->column;
    return n;
}

static const char *intern(parser *p, const char *s, size_t len) {
    char *c = sp_arena_strndup(&p->prog->arena, s, len);
    if (!c) p->failed = true;
    return c;
}

/* A growable node list built on the malloc heap, copied to the arena. */
typedef struct nvec {
    node **items;
    size_t n, cap;
} nvec;

static void nvec_push(parser *p, nvec *v, node *n) {
    if (v->n == v->cap) {
        size_t cap = v->cap ? 2 * v->cap : 8;
        node **items = realloc(v->items, cap * sizeof *items);
        if (!items) {
            p->failed = true;
            return;
        }
        v->items = items;
        v->cap = cap;
    }
    v->items[v->n++] = n;
}

static node_list nvec_finish(parser *p, nvec *v) {
    node_list l = {NULL, v->n};
    if (v->n) {
        l.items = sp_arena_alloc(&p->prog->arena, v->n * sizeof *l.items);
        if (l.items) memcpy(l.items, v->items, v->n * sizeof *l.items);
        else p->failed = true;
    }
    free(v->items);
    v->items = NULL;
    v->n = v->cap = 0;
    return l;
}

/* Appends a name token's text to a malloc'd list of names; false (the
 * parse failed) when out of memory. */
static bool push_name(parser *p, const char ***names, size_t *count, const token *t) {
    const char **grown = realloc(*names, (*count + 1) * sizeof *grown);
    if (!grown) {
        p->failed = true;
        return false;
    }
    *names = grown;
    grown[(*count)++] = intern(p, t->text, t->len);
    return true;
}

static bool enter(parser *p) {
    if (++p->depth > TPL_MAX_PARSE_DEPTH) {
        fail_at(p, peek(p), "template nested too deeply (more than %d levels)", TPL_MAX_PARSE_DEPTH);
        return false;
    }
    return true;
}
static void leave(parser *p) { p->depth--; }

static node *parse_expression(parser *p, bool with_condexpr);
static node *parse_tuple(parser *p, bool with_condexpr, bool explicit_parens);
static node *parse_unary(parser *p, bool with_filter);
static node *parse_primary(parser *p);
static node *parse_postfix(parser *p, node *n);

/* Call arguments after '(': positional and name=value. */
static bool parse_call_args(parser *p, node *call) {
    nvec args = {0}, kwargs = {0};
    const char **kwnames = NULL;
    size_t n_kw = 0;
    advance(p); /* ( */
    while (!p->failed && !is_op(peek(p), ")")) {
        if (args.n || kwargs.n) {
            if (!expect_op(p, ",")) break;
            if (is_op(peek(p), ")")) break;
        }
        if (peek(p)->kind == T_NAME && is_op(peek2(p), "=")) {
            token *name = advance(p);
            advance(p);
            if (!push_name(p, &kwnames, &n_kw, name)) break;
            nvec_push(p, &kwargs, parse_expression(p, true));
        } else {
            if (kwargs.n) {
                fail_at(p, peek(p), "positional argument follows keyword argument");
                break;
            }
            nvec_push(p, &args, parse_expression(p, true));
        }
    }
    if (!p->failed) expect_op(p, ")");
    call->u.call.args = nvec_finish(p, &args);
    call->u.call.kwargs = nvec_finish(p, &kwargs);
    if (n_kw) {
        call->u.call.kwnames = sp_arena_alloc(&p->prog->arena, n_kw * sizeof *kwnames);
        if (call->u.call.kwnames) memcpy(call->u.call.kwnames, kwnames, n_kw * sizeof *kwnames);
    }
    free(kwnames);
    return !p->failed;
}

/* A dotted name after '|' or 'is'. */
static const char *parse_dotted_name(parser *p) {
    token *t = peek(p);
    if (t->kind != T_NAME) {
        fail_unexpected(p, t, "a name");
        return NULL;
    }
    advance(p);
    size_t len = t->len;
    char buf[256];
    snprintf(buf, sizeof buf, "%.*s", (int)(len > 200 ? 200 : len), t->text);
    while (is_op(peek(p), ".") && peek2(p)->kind == T_NAME) {
        advance(p);
        token *part = advance(p);
        size_t used = strlen(buf);
        snprintf(buf + used, sizeof buf - used, ".%.*s", (int)(part->len > 50 ? 50 : part->len), part->text);
    }
    return intern(p, buf, strlen(buf));
}

static node *parse_filter(parser *p, node *operand) {
    token *at = advance(p); /* | */
    node *f = new_node(p, N_FILTER, at);
    if (!f) return NULL;
    f->u.call.callee = operand;
    f->u.call.name = parse_dotted_name(p);
    if (!p->failed && is_op(peek(p), "(")) parse_call_args(p, f);
    return f;
}

static node *parse_test(parser *p, node *operand) {
    token *at = advance(p); /* is */
    node *t = new_node(p, N_TEST, at);
    if (!t) return NULL;
    t->u.call.callee = operand;
    if (is_name(peek(p), "not")) {
        advance(p);
        t->u.call.negated = true;
    }
    t->u.call.name = parse_dotted_name(p);
    if (p->failed) return t;
    token *next = peek(p);
    if (is_op(next, "(")) {
        parse_call_args(p, t);
    } else if ((next->kind == T_NAME || next->kind == T_STRING || next->kind == T_INT || next->kind == T_FLOAT ||
                is_op(next, "[") || is_op(next, "{")) &&
               !is_name(next, "else") && !is_name(next, "or") && !is_name(next, "and")) {
        if (is_name(next, "is")) {
            fail_at(p, next, "You cannot chain multiple tests with is");
            return t;
        }
        nvec args = {0};
        node *arg = parse_primary(p);
        nvec_push(p, &args, parse_postfix(p, arg));
        t->u.call.args = nvec_finish(p, &args);
    }
    return t;
}

static node *parse_filter_expr(parser *p, node *n) {
    while (!p->failed && n) {
        token *t = peek(p);
        if (is_op(t, "|")) n = parse_filter(p, n);
        else if (is_name(t, "is")) n = parse_test(p, n);
        else if (is_op(t, "(")) {
            node *call = new_node(p, N_CALL, t);
            if (!call) return NULL;
            call->u.call.callee = n;
            parse_call_args(p, call);
            n = call;
        } else break;
    }
    return n;
}

static node *parse_subscript(parser *p, node *obj) {
    token *at = advance(p); /* [ */
    node *start = NULL;
    if (!is_op(peek(p), ":")) {
        start = parse_expression(p, true);
        if (p->failed) return NULL;
        if (is_op(peek(p), "]")) {
            advance(p);
            node *n = new_node(p, N_GETITEM, at);
            if (n) {
                n->u.item.obj = obj;
                n->u.item.index = start;
            }
            return n;
        }
    }
    node *n = new_node(p, N_SLICE, at);
    if (!n) return NULL;
    n->u.slice.obj = obj;
    n->u.slice.start = start;
    if (!expect_op(p, ":")) return NULL;
    if (!is_op(peek(p), "]") && !is_op(peek(p), ":")) n->u.slice.stop = parse_expression(p, true);
    if (is_op(peek(p), ":")) {
        advance(p);
        if (!is_op(peek(p), "]")) n->u.slice.step = parse_expression(p, true);
    }
    expect_op(p, "]");
    return n;
}

static node *parse_postfix(parser *p, node *n) {
    while (!p->failed && n) {
        token *t = peek(p);
        if (is_op(t, ".")) {
            advance(p);
            token *name = peek(p);
            if (name->kind == T_NAME) {
                advance(p);
                node *g = new_node(p, N_GETATTR, t);
                if (!g) return NULL;
                g->u.attr.obj = n;
                g->u.attr.name = intern(p, name->text, name->len);
                n = g;
            } else if (name->kind == T_INT) {
                advance(p);
                node *idx = new_node(p, N_LITERAL, name);
                node *g = new_node(p, N_GETITEM, t);
                if (!idx || !g) return NULL;
                idx->u.literal = jv_int(name->i);
                g->u.item.obj = n;
                g->u.item.index = idx;
                n = g;
            } else {
                fail_unexpected(p, name, "an attribute name");
                return NULL;
            }
        } else if (is_op(t, "[")) {
            n = parse_subscript(p, n);
        } else if (is_op(t, "(")) {
            node *call = new_node(p, N_CALL, t);
            if (!call) return NULL;
            call->u.call.callee = n;
            parse_call_args(p, call);
            n = call;
        } else break;
    }
    return n;
}

static node *literal_node(parser *p, const token *at, jv v) {
    node *n = new_node(p, N_LITERAL, at);
    if (n) n->u.literal = v;
    return n;
}

static node *parse_primary(parser *p) {
    if (!enter(p)) return NULL;
    token *t = peek(p);
    node *n = NULL;
    if (t->kind == T_NAME) {
        advance(p);
        if (is_name(t, "true") || is_name(t, "True")) n = literal_node(p, t, jv_bool(true));
        else if (is_name(t, "false") || is_name(t, "False")) n = literal_node(p, t, jv_bool(false));
        else if (is_name(t, "none") || is_name(t, "None")) n = literal_node(p, t, jv_none());
        else {
            n = new_node(p, N_NAME, t);
            if (n) n->u.name = intern(p, t->text, t->len);
        }
    } else if (t->kind == T_STRING) {
        /* adjacent literals join: "a" "b" is "ab" */
        jbuf b = {0};
        while (peek(p)->kind == T_STRING) {
            token *s = advance(p);
            jbuf_put(&b, s->text, s->len);
        }
        jv v = jv_str(&p->prog->literals, b.data, b.len);
        jbuf_free(&b);
        if (v.type != JV_STR) fail_at(p, t, "out of memory");
        else n = literal_node(p, t, v);
    } else if (t->kind == T_INT) {
        advance(p);
        n = literal_node(p, t, jv_int(t->i));
    } else if (t->kind == T_FLOAT) {
        advance(p);
        n = literal_node(p, t, jv_float(t->f));
    } else if (is_op(t, "(")) {
        advance(p);
        n = parse_tuple(p, true, true);
        expect_op(p, ")");
    } else if (is_op(t, "[")) {
        advance(p);
        nvec items = {0};
        while (!p->failed && !is_op(peek(p), "]")) {
            if (items.n && (!expect_op(p, ",") || is_op(peek(p), "]"))) break;
            nvec_push(p, &items, parse_expression(p, true));
        }
        expect_op(p, "]");
        n = new_node(p, N_LIST, t);
        if (n) n->u.items = nvec_finish(p, &items);
        else free(items.items);
    } else if (is_op(t, "{")) {
        advance(p);
        nvec keys = {0}, values = {0};
        while (!p->failed && !is_op(peek(p), "}")) {
            if (keys.n && (!expect_op(p, ",") || is_op(peek(p), "}"))) break;
            nvec_push(p, &keys, parse_expression(p, true));
            if (!expect_op(p, ":")) break;
            nvec_push(p, &values, parse_expression(p, true));
        }
        expect_op(p, "}");
        n = new_node(p, N_DICT, t);
        if (n) {
            n->u.dict.keys = nvec_finish(p, &keys);
            n->u.dict.values = nvec_finish(p, &values);
        } else {
            free(keys.items);
            free(values.items);
        }
    } else {
        fail_unexpected(p, t, NULL);
    }
    leave(p);
    return p->failed ? NULL : n;
}

static node *binary(parser *p, node_kind kind, int op, const token *at, node *a, node *b) {
    node *n = new_node(p, kind, at);
    if (!n) return NULL;
    n->u.op.op = op;
    n->u.op.a = a;
    n->u.op.b = b;
    return n;
}

static node *parse_unary(parser *p, bool with_filter) {
    if (!enter(p)) return NULL;
    token *t = peek(p);
    node *n;
    if (is_op(t, "-") || is_op(t, "+")) {
        advance(p);
        n = binary(p, N_UNARY, t->text[0], t, parse_unary(p, false), NULL);
    } else {
        n = parse_primary(p);
    }
    n = parse_postfix(p, n);
    if (with_filter) n = parse_filter_expr(p, n);
    leave(p);
    return p->failed ? NULL : n;
}

static node *parse_pow(parser *p) {
    node *n = parse_unary(p, true);
    while (!p->failed && is_op(peek(p), "**")) {
        token *t = advance(p);
        n = binary(p, N_BINARY, 'P', t, n, parse_unary(p, true));
    }
    return n;
}

static node *parse_math2(parser *p) {
    node *n = parse_pow(p);
    for (;;) {
        token *t = peek(p);
        int op = is_op(t, "*") ? '*' : is_op(t, "/") ? '/' : is_op(t, "//") ? 'F' : is_op(t, "%") ? '%' : 0;
        if (!op || p->failed) break;
        advance(p);
        n = binary(p, N_BINARY, op, t, n, parse_pow(p));
    }
    return n;
}

static node *parse_concat(parser *p) {
    node *n = parse_math2(p);
    while (!p->failed && is_op(peek(p), "~")) {
        token *t = advance(p);
        n = binary(p, N_BINARY, '~', t, n, parse_math2(p));
    }
    return n;
}

static node *parse_math1(parser *p) {
    node *n = parse_concat(p);
    for (;;) {
        token *t = peek(p);
        int op = is_op(t, "+") ? '+' : is_op(t, "-") ? '-' : 0;
        if (!op || p->failed) break;
        advance(p);
        n = binary(p, N_BINARY, op, t, n, parse_concat(p));
    }
    return n;
}

/* Comparisons chain as in Python: a < b < c is (a < b) and (b < c). */
static node *parse_compare(parser *p) {
    node *n = parse_math1(p), *chain = NULL, *prev = n;
    for (;;) {
        token *t = peek(p);
        int op = is_op(t, "==") ? 'E' : is_op(t, "!=") ? 'N' : is_op(t, "<") ? '<' : is_op(t, ">") ? '>' :
                 is_op(t, "<=") ? 'L' : is_op(t, ">=") ? 'G' : is_name(t, "in") ? 'I' :
                 is_name(t, "not") && is_name(peek2(p), "in") ? 'J' : 0;
        if (!op || p->failed) break;
        advance(p);
        if (op == 'J') advance(p);
        node *rhs = parse_math1(p);
        node *cmp = binary(p, N_BINARY, op, t, prev, rhs);
        chain = chain ? binary(p, N_AND, 0, t, chain, cmp) : cmp;
        prev = rhs;
    }
    return chain ? chain : n;
}

static node *parse_not(parser *p) {
    if (is_name(peek(p), "not")) {
        token *t = advance(p);
        if (!enter(p)) return NULL;
        node *n = binary(p, N_UNARY, '!', t, parse_not(p), NULL);
        leave(p);
        return n;
    }
    return parse_compare(p);
}

static node *parse_and(parser *p) {
    node *n = parse_not(p);
    while (!p->failed && is_name(peek(p), "and")) {
        token *t = advance(p);
        n = binary(p, N_AND, 0, t, n, parse_not(p));
    }
    return n;
}

static node *parse_or(parser *p) {
    node *n = parse_and(p);
    while (!p->failed && is_name(peek(p), "or")) {
        token *t = advance(p);
        n = binary(p, N_OR, 0, t, n, parse_and(p));
    }
    return n;
}

static node *parse_expression(parser *p, bool with_condexpr) {
    if (!enter(p)) return NULL;
    node *n = parse_or(p);
    while (with_condexpr && !p->failed && is_name(peek(p), "if")) {
        token *t = advance(p);
        node *c = new_node(p, N_COND, t);
        if (!c) break;
        c->u.cond.then = n;
        c->u.cond.cond = parse_or(p);
        if (is_name(peek(p), "else")) {
            advance(p);
            c->u.cond.otherwise = parse_expression(p, true);
        }
        n = c;
    }
    leave(p);
    return p->failed ? NULL : n;
}

/* Comma-separated expressions; more than one (or a trailing comma) make a
 * tuple. */
static node *parse_tuple(parser *p, bool with_condexpr, bool explicit_parens) {
    token *at = peek(p);
    if (explicit_parens && is_op(at, ")")) {
        node *n = new_node(p, N_TUPLE, at);
        return n;
    }
    nvec items = {0};
    bool trailing_comma = false;
    for (;;) {
        nvec_push(p, &items, parse_expression(p, with_condexpr));
        if (p->failed || !is_op(peek(p), ",")) break;
        advance(p);
        trailing_comma = true;
        token *next = peek(p);
        if (next->kind == T_VAR_END || next->kind == T_BLOCK_END || is_op(next, ")") || is_name(next, "in") ||
            is_name(next, "if") || is_name(next, "recursive"))
            break;
        trailing_comma = false;
    }
    if (items.n == 1 && !trailing_comma) {
        node *only = items.items[0];
        free(items.items);
        return only;
    }
    node *n = new_node(p, N_TUPLE, at);
    if (n) n->u.items = nvec_finish(p, &items);
    else free(items.items);
    return n;
}

/* --- statements ------------------------------------------------------------------------- */

static node *parse_body(parser *p, const char *const *end_names, const token *opener);

static bool at_block_named(parser *p, const char *const *names) {
    if (peek(p)->kind != T_BLOCK_BEGIN) return false;
    token *t = peek2(p);
    for (size_t i = 0; names && names[i]; i++)
        if (is_name(t, names[i])) return true;
    return false;
}

static bool end_block(parser *p) { return expect_kind(p, T_BLOCK_END, "end of statement block"); }

/* Consumes "{% NAME" (the caller checked it is there). */
static token *consume_tag(parser *p) {
    advance(p);
    return advance(p);
}

static bool parse_targets(parser *p, const char ***targets, size_t *n) {
    const char **list = NULL;
    size_t count = 0;
    bool parens = is_op(peek(p), "(");
    if (parens) advance(p);
    for (;;) {
        token *t = peek(p);
        if (t->kind != T_NAME) {
            fail_unexpected(p, t, "a variable name");
            break;
        }
        advance(p);
        const char **grown = realloc(list, (count + 1) * sizeof *grown);
        if (!grown) {
            p->failed = true;
            break;
        }
        list = grown;
        list[count++] = intern(p, t->text, t->len);
        if (!is_op(peek(p), ",")) break;
        advance(p);
    }
    if (parens && !p->failed) expect_op(p, ")");
    if (!p->failed) {
        *targets = sp_arena_alloc(&p->prog->arena, count * sizeof *list + 1);
        if (*targets) memcpy(*targets, list, count * sizeof *list);
        *n = count;
    }
    free(list);
    return !p->failed;
}

static node *parse_if(parser *p, const token *at) {
    static const char *const ends[] = {"elif", "else", "endif", NULL};
    static const char *const endif[] = {"endif", NULL};
    node *n = new_node(p, S_IF, at);
    if (!n) return NULL;
    nvec conds = {0}, bodies = {0};
    for (;;) {
        nvec_push(p, &conds, parse_tuple(p, true, false));
        if (!end_block(p)) break;
        nvec_push(p, &bodies, parse_body(p, ends, at));
        if (p->failed) break;
        token *tag = consume_tag(p);
        if (is_name(tag, "elif")) continue;
        if (is_name(tag, "else")) {
            if (!end_block(p)) break;
            n->u.if_.else_body = parse_body(p, endif, at);
            if (!p->failed) consume_tag(p);
        }
        end_block(p);
        break;
    }
    n->u.if_.conds = nvec_finish(p, &conds);
    n->u.if_.bodies = nvec_finish(p, &bodies);
    return n;
}

static node *parse_for(parser *p, const token *at) {
    static const char *const ends[] = {"endfor", "else", NULL};
    static const char *const endfor[] = {"endfor", NULL};
    node *n = new_node(p, S_FOR, at);
    if (!n || !parse_targets(p, &n->u.for_.targets, &n->u.for_.n_targets)) return NULL;
    if (!is_name(peek(p), "in")) {
        fail_unexpected(p, peek(p), "'in'");
        return NULL;
    }
    advance(p);
    n->u.for_.iter = parse_tuple(p, false, false);
    if (!p->failed && is_name(peek(p), "if")) {
        advance(p);
        n->u.for_.filter = parse_expression(p, true);
    }
    if (!p->failed && is_name(peek(p), "recursive")) {
        fail_at(p, peek(p), "recursive loops are not supported");
        return NULL;
    }
    if (!end_block(p)) return NULL;
    p->loop_depth++;
    n->u.for_.body = parse_body(p, ends, at);
    p->loop_depth--;
    if (p->failed) return NULL;
    token *tag = consume_tag(p);
    if (is_name(tag, "else")) {
        if (!end_block(p)) return NULL;
        n->u.for_.else_body = parse_body(p, endfor, at);
        if (p->failed) return NULL;
        consume_tag(p);
    }
    end_block(p);
    return n;
}

static node *parse_set(parser *p, const token *at) {
    static const char *const endset[] = {"endset", NULL};
    node *n = new_node(p, S_SET, at);
    if (!n) return NULL;
    token *first = peek(p);
    if (first->kind == T_NAME && is_op(peek2(p), ".")) { /* set ns.attr = value */
        advance(p);
        advance(p);
        token *attr = peek(p);
        if (attr->kind != T_NAME) {
            fail_unexpected(p, attr, "an attribute name");
            return NULL;
        }
        advance(p);
        n->u.set.targets = sp_arena_alloc(&p->prog->arena, sizeof(char *));
        if (!n->u.set.targets) return NULL;
        n->u.set.targets[0] = intern(p, first->text, first->len);
        n->u.set.n_targets = 1;
        n->u.set.attr = intern(p, attr->text, attr->len);
    } else if (!parse_targets(p, &n->u.set.targets, &n->u.set.n_targets)) {
        return NULL;
    }
    if (is_op(peek(p), "=")) {
        advance(p);
        n->u.set.value = parse_tuple(p, true, false);
        end_block(p);
        return n;
    }
    if (n->u.set.attr || n->u.set.n_targets != 1) {
        fail_unexpected(p, peek(p), "'='");
        return NULL;
    }
    if (!end_block(p)) return NULL;
    n->kind = S_SET_BLOCK;
    n->u.set.body = parse_body(p, endset, at);
    if (!p->failed) {
        consume_tag(p);
        end_block(p);
    }
    return n;
}

/* "(a, b=default, ...)" of a macro or a call block, into n's macro fields. */
static bool parse_params(parser *p, node *n) {
    if (!expect_op(p, "(")) return false;
    const char **params = NULL;
    node **defaults = NULL;
    size_t count = 0;
    while (!p->failed && !is_op(peek(p), ")")) {
        if (count && (!expect_op(p, ",") || is_op(peek(p), ")"))) break;
        token *param = peek(p);
        if (param->kind != T_NAME) {
            fail_unexpected(p, param, "a parameter name");
            break;
        }
        advance(p);
        const char **gp = realloc(params, (count + 1) * sizeof *gp);
        node **gd = gp ? realloc(defaults, (count + 1) * sizeof *gd) : NULL;
        if (gp) params = gp;
        if (!gp || !gd) {
            p->failed = true;
            break;
        }
        defaults = gd;
        params[count] = intern(p, param->text, param->len);
        defaults[count] = NULL;
        if (is_op(peek(p), "=")) {
            advance(p);
            defaults[count] = parse_expression(p, true);
        }
        count++;
    }
    if (!p->failed) expect_op(p, ")");
    if (!p->failed && count) {
        n->u.macro.params = sp_arena_alloc(&p->prog->arena, count * sizeof *params);
        n->u.macro.defaults = sp_arena_alloc(&p->prog->arena, count * sizeof *defaults);
        if (n->u.macro.params && n->u.macro.defaults) {
            memcpy(n->u.macro.params, params, count * sizeof *params);
            memcpy(n->u.macro.defaults, defaults, count * sizeof *defaults);
        } else p->failed = true;
    }
    n->u.macro.n_params = count;
    free(params);
    free(defaults);
    return !p->failed;
}

/* The body of a macro or call block up to its end tag (not consumed), and
 * which of varargs, kwargs and caller it names. */
static bool parse_macro_body(parser *p, node *n, const char *const *end_names, const token *at) {
    const size_t first = p->pos;
    int saved_loops = p->loop_depth;
    p->loop_depth = 0; /* a loop around the definition is not around the body */
    n->u.macro.body = parse_body(p, end_names, at);
    p->loop_depth = saved_loops;
    if (p->failed) return false;
    for (size_t i = first; i < p->pos; i++) {
        const token *t = &p->toks[i];
        if (t->kind != T_NAME || (i > 0 && is_op(&p->toks[i - 1], "."))) continue;
        n->u.macro.catch_varargs |= is_name(t, "varargs");
        n->u.macro.catch_kwargs |= is_name(t, "kwargs");
        n->u.macro.takes_caller |= is_name(t, "caller");
    }
    return true;
}

static node *parse_macro(parser *p, const token *at) {
    static const char *const endmacro[] = {"endmacro", NULL};
    node *n = new_node(p, S_MACRO, at);
    token *name = peek(p);
    if (!n || name->kind != T_NAME) {
        fail_unexpected(p, name, "a macro name");
        return NULL;
    }
    advance(p);
    n->u.macro.name = intern(p, name->text, name->len);
    if (!parse_params(p, n) || !end_block(p) || !parse_macro_body(p, n, endmacro, at)) return NULL;
    consume_tag(p);
    if (peek(p)->kind == T_NAME) advance(p); /* {% endmacro name %} */
    end_block(p);
    return n;
}

/* {% call(params) macro(args) %}body{% endcall %}: the body is the macro's caller(). */
static node *parse_call_block(parser *p, const token *at) {
    static const char *const endcall[] = {"endcall", NULL};
    node *n = new_node(p, S_CALL_BLOCK, at);
    node *caller = n ? new_node(p, S_MACRO, at) : NULL;
    if (!caller) return NULL;
    caller->u.macro.name = "caller";
    if (is_op(peek(p), "(") && !parse_params(p, caller)) return NULL;
    token *call_at = peek(p);
    node *call = parse_expression(p, true);
    if (p->failed) return NULL;
    if (call->kind != N_CALL) {
        fail_at(p, call_at, "expected call");
        return NULL;
    }
    if (!end_block(p) || !parse_macro_body(p, caller, endcall, at)) return NULL;
    consume_tag(p);
    end_block(p);
    n->u.call_block.caller = caller;
    n->u.call_block.call = call;
    return n;
}

/* {% with a = x, b = y %}body{% endwith %} */
static node *parse_with(parser *p, const token *at) {
    static const char *const endwith[] = {"endwith", NULL};
    node *n = new_node(p, S_WITH, at);
    if (!n) return NULL;
    const char **names = NULL;
    nvec values = {0};
    size_t count = 0;
    while (!p->failed && peek(p)->kind != T_BLOCK_END) {
        if (count && !expect_op(p, ",")) break;
        token *name = peek(p);
        if (name->kind != T_NAME) {
            fail_unexpected(p, name, "a variable name");
            break;
        }
        advance(p);
        if (!expect_op(p, "=") || !push_name(p, &names, &count, name)) break;
        nvec_push(p, &values, parse_expression(p, true));
    }
    n->u.with.values = nvec_finish(p, &values);
    if (!p->failed && count) {
        n->u.with.names = sp_arena_alloc(&p->prog->arena, count * sizeof *names);
        if (n->u.with.names) memcpy(n->u.with.names, names, count * sizeof *names);
        else p->failed = true;
    }
    free(names);
    if (p->failed || !end_block(p)) return NULL;
    n->u.with.body = parse_body(p, endwith, at);
    if (p->failed) return NULL;
    consume_tag(p);
    end_block(p);
    return n;
}

static node *parse_statement(parser *p) {
    token *begin = advance(p); /* {% */
    token *t = peek(p);
    if (t->kind != T_NAME) {
        fail_unexpected(p, t, "a statement name");
        return NULL;
    }
    advance(p);
    if (is_name(t, "if")) return parse_if(p, begin);
    if (is_name(t, "for")) return parse_for(p, begin);
    if (is_name(t, "set")) return parse_set(p, begin);
    if (is_name(t, "macro")) return parse_macro(p, begin);
    if (is_name(t, "call")) return parse_call_block(p, begin);
    if (is_name(t, "with")) return parse_with(p, begin);
    if (is_name(t, "break") || is_name(t, "continue")) {
        if (p->loop_depth == 0) {
            fail_at(p, t, "'%.*s' outside of a loop", (int)t->len, t->text);
            return NULL;
        }
        node *n = new_node(p, is_name(t, "break") ? S_BREAK : S_CONTINUE, begin);
        end_block(p);
        return n;
    }
    if (is_name(t, "generation")) { /* transformers' assistant-mask tag: transparent */
        static const char *const end[] = {"endgeneration", NULL};
        if (!end_block(p)) return NULL;
        node *body = parse_body(p, end, begin);
        if (!p->failed) {
            consume_tag(p);
            end_block(p);
        }
        return body;
    }
    if (is_name(t, "filter")) {
        static const char *const end[] = {"endfilter", NULL};
        node *n = new_node(p, S_FILTER_BLOCK, begin);
        node *f = n ? new_node(p, N_FILTER, t) : NULL;
        if (!f) return NULL;
        f->u.call.name = parse_dotted_name(p);
        if (!p->failed && is_op(peek(p), "(")) parse_call_args(p, f);
        n->u.filter_block.filter = f;
        if (p->failed || !end_block(p)) return NULL;
        n->u.filter_block.body = parse_body(p, end, begin);
        if (!p->failed) {
            consume_tag(p);
            end_block(p);
        }
        return n;
    }
    static const char *const unsupported[] = {"include", "import", "from", "extends", "block", "do", "autoescape", "trans"};
    for (size_t i = 0; i < sizeof unsupported / sizeof unsupported[0]; i++)
        if (is_name(t, unsupported[i])) {
            fail_at(p, t, "the '%s' tag is not supported", unsupported[i]);
            return NULL;
        }
    fail_at(p, t, "Encountered unknown tag '%.*s'.", (int)(t->len > 40 ? 40 : t->len), t->text);
    return NULL;
}

/* Statements until a block tag named in end_names (not consumed), or the
 * end of the template when end_names is NULL. */
static node *parse_body(parser *p, const char *const *end_names, const token *opener) {
    if (!enter(p)) return NULL;
    node *body = new_node(p, S_BODY, peek(p));
    nvec items = {0};
    while (!p->failed && body) {
        token *t = peek(p);
        if (t->kind == T_EOF) {
            if (end_names) {
                const char *closer = end_names[0];
                for (size_t k = 0; end_names[k]; k++)
                    if (!strncmp(end_names[k], "end", 3)) closer = end_names[k];
                fail_at(p, opener, "unexpected end of template: this block needs '{%% %s %%}'", closer);
            }
            break;
        }
        if (end_names && at_block_named(p, end_names)) break;
        if (t->kind == T_TEXT) {
            advance(p);
            node *n = new_node(p, S_TEXT, t);
            if (!n) break;
            n->u.literal = jv_str(&p->prog->literals, t->text, t->len);
            nvec_push(p, &items, n);
        } else if (t->kind == T_VAR_BEGIN) {
            advance(p);
            node *n = new_node(p, S_OUTPUT, t);
            if (!n) break;
            n->u.output = parse_tuple(p, true, false);
            if (p->failed) break;
            expect_kind(p, T_VAR_END, "end of print statement '}}'");
            nvec_push(p, &items, n);
        } else if (t->kind == T_BLOCK_BEGIN) {
            token *name = peek2(p);
            if (name->kind == T_NAME && (is_name(name, "endif") || is_name(name, "endfor") || is_name(name, "endmacro") ||
                                         is_name(name, "endset") || is_name(name, "else") || is_name(name, "elif") ||
                                         is_name(name, "endfilter") || is_name(name, "endgeneration") || is_name(name, "endcall") ||
                                         is_name(name, "endwith"))) {
                fail_at(p, name, "Encountered unknown tag '%.*s'%s", (int)name->len, name->text,
                        end_names ? "" : " (no block is open)");
                break;
            }
            nvec_push(p, &items, parse_statement(p));
        } else {
            fail_unexpected(p, t, NULL);
        }
    }
    if (body) body->u.items = nvec_finish(p, &items);
    else free(items.items);
    leave(p);
    return p->failed ? NULL : body;
}

bool tpl_parse(const char *source, size_t len, tpl_program *prog, tpl_error *err) {
    memset(prog, 0, sizeof *prog);
    memset(err, 0, sizeof *err);
    prog->literals.limit = SIZE_MAX / 2;
    lexer lx = {.src = source, .len = len, .line = 1, .column = 1, .prog = prog, .err = err};
    bool ok = lex(&lx);
    if (ok) {
        parser p = {.toks = lx.toks, .prog = prog, .err = err};
        prog->root = parse_body(&p, NULL, lx.toks);
        ok = !p.failed && prog->root;
        if (!ok && err->status == SPROUT_OK) set_error(err, SPROUT_ERR_OUT_OF_MEMORY, 0, 0, "out of memory while parsing");
    }
    free(lx.toks);
    return ok;
}

void tpl_program_free(tpl_program *prog) {
    sp_arena_free(&prog->arena);
    sp_arena_free(&prog->literals.arena);
    memset(prog, 0, sizeof *prog);
}
