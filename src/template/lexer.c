/* The lexer: cuts template source into text and tags, applying jinja2's
 * whitespace rules as it goes (trim_blocks and lstrip_blocks on, "-" and
 * "+" modifiers, one trailing newline of the source dropped, "\r\n" read
 * as "\n"), and the tags into tokens. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "template/parse_internal.h"

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
    tpl_set_error(lx->err, SPROUT_ERR_FORMAT, line, column, fmt, arg);
    lx->failed = true;
}

static token *push_token(lexer *lx, tok_kind kind, size_t pos) {
    if (lx->n == lx->cap) {
        size_t cap = lx->cap ? 2 * lx->cap : 256;
        token *t = realloc(lx->toks, cap * sizeof *t);
        if (!t) {
            tpl_set_error(lx->err, SPROUT_ERR_OUT_OF_MEMORY, 0, 0, "out of memory");
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
        tpl_set_error(lx->err, SPROUT_ERR_OUT_OF_MEMORY, 0, 0, "out of memory");
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
        int line, column;
        locate(lx, start, &line, &column);
        tpl_set_error(lx->err, SPROUT_ERR_OUT_OF_MEMORY, line, column, "out of memory");
        lx->failed = true;
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
        if (kind == '%' && lx->n == first_tok + 2 && is_name(&lx->toks[first_tok + 1], "raw")) {
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

bool tpl_lex(const char *source, size_t len, tpl_program *prog, tpl_error *err, token **toks) {
    lexer lx = {.src = source, .len = len, .line = 1, .column = 1, .prog = prog, .err = err};
    if (!lex(&lx)) {
        free(lx.toks);
        *toks = NULL;
        return false;
    }
    *toks = lx.toks;
    return true;
}
