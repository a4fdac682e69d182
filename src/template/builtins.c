/* The built-in library of the template language: jinja2's filters and tests,
 * the globals transformers adds (raise_exception, strftime_now) and jinja2's
 * own (namespace, range, dict), and the Python methods chat templates call
 * on strings and dicts. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <ctype.h>
#include <pcre2.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>
#include <pthread.h>

#include "core/utf8.h"
#include "template/eval_internal.h"

/* --- helpers ----------------------------------------------------------------------------- */

static bool oom(interp *in, const node *at) { return rt_error(in, at, "template needs too much memory"); }

static bool make_str(interp *in, const node *at, const char *s, size_t n, jv *out) {
    *out = jv_str(in->heap, s, n);
    return out->type == JV_STR || oom(in, at);
}

static bool buf_result(interp *in, const node *at, jbuf *b, jv *out) {
    bool ok = !b->oom && make_str(in, at, b->data, b->len, out);
    jbuf_free(b);
    return ok || oom(in, at);
}

static bool to_str(interp *in, const node *at, jv v, jv *out) { return jv_to_str(in->heap, v, out) || oom(in, at); }

static int32_t decode(const char *s, size_t n, size_t *cl) {
    utf8proc_int32_t cp;
    utf8proc_ssize_t r = utf8proc_iterate((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)n, &cp);
    if (r <= 0) {
        *cl = 1;
        return (unsigned char)s[0];
    }
    *cl = (size_t)r;
    return cp;
}

/* Characters of a string as decode steps through them: an invalid byte
 * counts as one, so iteration and length agree on any bytes. */
static size_t char_count(const char *s, size_t n) {
    size_t count = 0;
    for (size_t i = 0, cl; i < n; i += cl, count++) decode(s + i, n - i, &cl);
    return count;
}

/* The bytes of the first `chars` characters of s (n bytes long), counted as
 * char_count counts them. */
static size_t char_prefix_bytes(const char *s, size_t n, size_t chars) {
    size_t b = 0, cl;
    for (size_t c = 0; c < chars && b < n; c++, b += cl) decode(s + b, n - b, &cl);
    return b;
}

static void put_cp(jbuf *b, int32_t cp) {
    utf8proc_uint8_t tmp[4];
    utf8proc_ssize_t n = utf8proc_encode_char(cp, tmp);
    jbuf_put(b, (const char *)tmp, (size_t)n);
}

/* Python's str.isspace for one code point. */
static bool py_isspace(int32_t c) {
    return c == ' ' || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

static bool in_chars(int32_t c, const jstr *chars) {
    for (size_t i = 0; i < chars->len;) {
        size_t cl;
        if (decode(chars->data + i, chars->len - i, &cl) == c) return true;
        i += cl;
    }
    return false;
}

/* str.strip/lstrip/rstrip: whitespace, or the characters of `chars`. */
static bool strip(interp *in, const node *at, const jstr *s, const jstr *chars, bool left, bool right, jv *out) {
    size_t b = 0, e = s->len;
    while (left && b < e) {
        size_t cl;
        int32_t c = decode(s->data + b, e - b, &cl);
        if (chars ? !in_chars(c, chars) : !py_isspace(c)) break;
        b += cl;
    }
    while (right && e > b) {
        size_t start = e - 1;
        while (start > b && ((unsigned char)s->data[start] & 0xC0) == 0x80) start--;
        size_t cl;
        int32_t c = decode(s->data + start, e - start, &cl);
        if (chars ? !in_chars(c, chars) : !py_isspace(c)) break;
        e = start;
    }
    return make_str(in, at, s->data + b, e - b, out);
}

typedef enum { CASE_UPPER, CASE_LOWER, CASE_TITLE, CASE_CAPITALIZE, CASE_SWAP } case_mode;

static bool change_case(interp *in, const node *at, const jstr *s, case_mode mode, jv *out) {
    jbuf b = {0};
    bool word_start = true;
    for (size_t i = 0; i < s->len;) {
        size_t cl;
        int32_t c = decode(s->data + i, s->len - i, &cl);
        int32_t r = c;
        switch (mode) {
        case CASE_UPPER: r = utf8proc_toupper(c); break;
        case CASE_LOWER: r = utf8proc_tolower(c); break;
        case CASE_CAPITALIZE: r = i == 0 ? utf8proc_toupper(c) : utf8proc_tolower(c); break;
        case CASE_SWAP: r = utf8proc_toupper(c) != c ? utf8proc_toupper(c) : utf8proc_tolower(c); break;
        case CASE_TITLE:
            /* jinja2's title: words begin after "-", whitespace, "(", "{", "[" or "<" */
            r = word_start ? utf8proc_toupper(c) : utf8proc_tolower(c);
            word_start = c == '-' || py_isspace(c) || c == '(' || c == '{' || c == '[' || c == '<';
            break;
        }
        put_cp(&b, r);
        i += cl;
    }
    return buf_result(in, at, &b, out);
}

static bool replace(interp *in, const node *at, const jstr *s, const jstr *old, const jstr *new_, int64_t count, jv *out) {
    jbuf b = {0};
    int64_t done = 0;
    if (old->len == 0) { /* Python inserts the new text between characters */
        for (size_t i = 0; i <= s->len;) {
            if (count < 0 || done < count) {
                jbuf_put(&b, new_->data, new_->len);
                done++;
            }
            if (i == s->len) break;
            size_t cl;
            decode(s->data + i, s->len - i, &cl);
            jbuf_put(&b, s->data + i, cl);
            i += cl;
        }
        return buf_result(in, at, &b, out);
    }
    size_t i = 0;
    while (i < s->len) {
        const char *hit = (count < 0 || done < count) ? memmem(s->data + i, s->len - i, old->data, old->len) : NULL;
        if (!hit) break;
        size_t at_pos = (size_t)(hit - s->data);
        jbuf_put(&b, s->data + i, at_pos - i);
        jbuf_put(&b, new_->data, new_->len);
        i = at_pos + old->len;
        done++;
    }
    jbuf_put(&b, s->data + i, s->len - i);
    if (b.len > in->limits->max_output) {
        jbuf_free(&b);
        return rt_error(in, at, "replace result too large");
    }
    return buf_result(in, at, &b, out);
}

/* The pieces split and rsplit cut, growing on the render's heap. */
typedef struct piece_list {
    jv *items;
    size_t n, cap;
} piece_list;

static bool push_piece(interp *in, const node *at, piece_list *l, const char *s, size_t len) {
    jv piece;
    if (!make_str(in, at, s, len, &piece)) return false;
    if (l->n == l->cap) {
        const size_t cap = l->cap ? 2 * l->cap : 16;
        jv *grown = jv_alloc(in->heap, cap * sizeof *grown);
        if (!grown) return oom(in, at);
        if (l->n) memcpy(grown, l->items, l->n * sizeof *grown);
        l->items = grown;
        l->cap = cap;
    }
    l->items[l->n++] = piece;
    return true;
}

static bool split(interp *in, const node *at, const jstr *s, const jstr *sep, int64_t maxsplit, jv *out) {
    piece_list pieces = {0};
    if (sep) {
        if (sep->len == 0) return rt_error(in, at, "empty separator");
        size_t i = 0;
        for (;;) {
            const char *hit = (maxsplit < 0 || (int64_t)pieces.n < maxsplit) ? memmem(s->data + i, s->len - i, sep->data, sep->len) : NULL;
            if (!hit) break;
            if (!push_piece(in, at, &pieces, s->data + i, (size_t)(hit - s->data) - i)) return false;
            i = (size_t)(hit - s->data) + sep->len;
        }
        if (!push_piece(in, at, &pieces, s->data + i, s->len - i)) return false;
    } else { /* runs of whitespace; no empty pieces */
        size_t i = 0;
        while (i < s->len) {
            size_t cl;
            while (i < s->len && py_isspace(decode(s->data + i, s->len - i, &cl))) i += cl;
            if (i >= s->len) break;
            size_t start = i;
            if (maxsplit >= 0 && (int64_t)pieces.n >= maxsplit) {
                size_t e = s->len;
                while (e > start) { /* Python keeps the rest, minus trailing whitespace */
                    size_t b0 = e - 1;
                    while (b0 > start && ((unsigned char)s->data[b0] & 0xC0) == 0x80) b0--;
                    if (!py_isspace(decode(s->data + b0, e - b0, &cl))) break;
                    e = b0;
                }
                if (!push_piece(in, at, &pieces, s->data + start, e - start)) return false;
                break;
            }
            while (i < s->len && !py_isspace(decode(s->data + i, s->len - i, &cl))) i += cl;
            if (!push_piece(in, at, &pieces, s->data + start, i - start)) return false;
        }
    }
    *out = jv_list(in->heap, pieces.items, pieces.n, false);
    return out->type == JV_LIST || oom(in, at);
}

/* Where the code point that ends at byte e (> 0) of s begins. */
static size_t prev_char(const char *s, size_t e) {
    size_t b = e - 1;
    while (b > 0 && ((unsigned char)s[b] & 0xC0) == 0x80 && e - b < 4) b--;
    return b;
}

/* str.rsplit: split's pieces, but at most maxsplit cuts counted from the right. */
static bool rsplit(interp *in, const node *at, const jstr *s, const jstr *sep, int64_t maxsplit, jv *out) {
    if (maxsplit < 0) return split(in, at, s, sep, maxsplit, out);
    if (sep && sep->len == 0) return rt_error(in, at, "empty separator");
    piece_list pieces = {0};
    size_t e = s->len, cl;
    if (sep) {
        while ((int64_t)pieces.n < maxsplit) {
            size_t hit = SIZE_MAX;
            for (size_t i = e; i >= sep->len && hit == SIZE_MAX; i--)
                if (!memcmp(s->data + i - sep->len, sep->data, sep->len)) hit = i - sep->len;
            if (hit == SIZE_MAX) break;
            if (!push_piece(in, at, &pieces, s->data + hit + sep->len, e - hit - sep->len)) return false;
            e = hit;
        }
        if (!push_piece(in, at, &pieces, s->data, e)) return false;
    } else { /* runs of whitespace; no empty pieces; the rest keeps its inner whitespace */
        for (;;) {
            while (e > 0 && py_isspace(decode(s->data + prev_char(s->data, e), e - prev_char(s->data, e), &cl))) e = prev_char(s->data, e);
            if (e == 0) break;
            if ((int64_t)pieces.n >= maxsplit) {
                if (!push_piece(in, at, &pieces, s->data, e)) return false;
                break;
            }
            size_t b = e;
            while (b > 0 && !py_isspace(decode(s->data + prev_char(s->data, b), b - prev_char(s->data, b), &cl))) b = prev_char(s->data, b);
            if (!push_piece(in, at, &pieces, s->data + b, e - b)) return false;
            e = b;
        }
    }
    for (size_t i = 0; i < pieces.n / 2; i++) {
        jv t = pieces.items[i];
        pieces.items[i] = pieces.items[pieces.n - 1 - i];
        pieces.items[pieces.n - 1 - i] = t;
    }
    *out = jv_list(in->heap, pieces.items, pieces.n, false);
    return out->type == JV_LIST || oom(in, at);
}

/* str.splitlines: at \n, \r, \r\n, \v, \f, \x1c-\x1e, \x85, U+2028 and U+2029,
 * the breaks kept or not. */
static bool split_lines(interp *in, const node *at, const jstr *s, bool keepends, jv *out) {
    jv *items = jv_alloc(in->heap, (s->len + 1) * sizeof *items);
    size_t n = 0, start = 0;
    if (!items) return oom(in, at);
    for (size_t i = 0; i < s->len;) {
        size_t cl;
        const int32_t c = decode(s->data + i, s->len - i, &cl);
        if (!(c == '\n' || c == '\r' || c == '\v' || c == '\f' || (c >= 0x1C && c <= 0x1E) || c == 0x85 || c == 0x2028 || c == 0x2029)) {
            i += cl;
            continue;
        }
        size_t end = i + cl;
        if (c == '\r' && end < s->len && s->data[end] == '\n') end++;
        if (!make_str(in, at, s->data + start, (keepends ? end : i) - start, &items[n++])) return false;
        i = start = end;
    }
    if (start < s->len && !make_str(in, at, s->data + start, s->len - start, &items[n++])) return false;
    *out = jv_list(in->heap, items, n, false);
    return out->type == JV_LIST || oom(in, at);
}

/* str.center/ljust/rjust: padded with fill to width characters; Python's
 * center puts the odd pad on the left when width is odd. */
static bool justify(interp *in, const node *at, const jstr *s, int64_t width, const jstr *fill, char how, jv *out) {
    const size_t chars = char_count(s->data, s->len);
    if (width > (int64_t)in->limits->max_output) return rt_error(in, at, "width too large");
    if (width <= (int64_t)chars) return make_str(in, at, s->data, s->len, out);
    const size_t marg = (size_t)width - chars;
    const size_t left = how == 'l' ? 0 : how == 'r' ? marg : marg / 2 + (marg & (size_t)width & 1);
    jbuf b = {0};
    for (size_t i = 0; i < left; i++) jbuf_put(&b, fill ? fill->data : " ", fill ? fill->len : 1);
    jbuf_put(&b, s->data, s->len);
    for (size_t i = left; i < marg; i++) jbuf_put(&b, fill ? fill->data : " ", fill ? fill->len : 1);
    return buf_result(in, at, &b, out);
}

static bool prefix_match(const jstr *s, jv p, bool suffix, bool *out) {
    if (p.type == JV_STR) {
        const jstr *x = p.u.s;
        *out = x->len <= s->len && memcmp(suffix ? s->data + s->len - x->len : s->data, x->data, x->len) == 0;
        return true;
    }
    if (p.type == JV_TUPLE) {
        *out = false;
        for (size_t i = 0; i < p.u.l->n; i++) {
            bool r;
            if (!prefix_match(s, p.u.l->items[i], suffix, &r)) return false;
            if (r) *out = true;
        }
        return true;
    }
    return false;
}

/* str.format with positional ("{}", "{0}") and named ("{name}") fields;
 * a format spec after ':' is ignored. */
static bool format(interp *in, const node *at, const jstr *fmt, const call_args *args, jv *out) {
    jbuf b = {0};
    size_t auto_index = 0;
    for (size_t i = 0; i < fmt->len; i++) {
        char c = fmt->data[i];
        if ((c == '{' || c == '}') && i + 1 < fmt->len && fmt->data[i + 1] == c) {
            jbuf_putc(&b, c);
            i++;
            continue;
        }
        if (c != '{') {
            jbuf_putc(&b, c);
            continue;
        }
        size_t close = i + 1;
        while (close < fmt->len && fmt->data[close] != '}') close++;
        if (close >= fmt->len) {
            jbuf_free(&b);
            return rt_error(in, at, "Single '{' encountered in format string");
        }
        size_t name_end = i + 1;
        while (name_end < close && fmt->data[name_end] != ':' && fmt->data[name_end] != '!') name_end++;
        const jv *v = NULL;
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)(name_end - i - 1 > 100 ? 100 : name_end - i - 1), fmt->data + i + 1);
        if (!name[0]) v = call_arg(args, auto_index++, NULL);
        else if (name[0] >= '0' && name[0] <= '9') v = call_arg(args, (size_t)atoi(name), NULL);
        else v = call_arg(args, SIZE_MAX, name);
        if (!v) {
            jbuf_free(&b);
            return rt_error(in, at, "format string refers to a missing argument '%s'", name);
        }
        jv_write_str(&b, *v);
        i = close;
    }
    return buf_result(in, at, &b, out);
}

/* Widths and precisions past this are refused: a hostile "%999999999s"
 * would otherwise ask for a gigabyte of padding. */
enum { MAX_FORMAT_WIDTH = 4096 };

/* The number a numeric conversion takes (bools and floats as Python
 * coerces them); false for anything else. */
static bool format_number(jv v, bool want_int, int64_t *i, double *f) {
    if (v.type == JV_BOOL) *i = v.u.b, *f = v.u.b;
    else if (v.type == JV_INT) *i = v.u.i, *f = (double)v.u.i;
    else if (v.type == JV_FLOAT) {
        if (want_int && !(fabs(v.u.f) < 9.2e18)) return false; /* NaN, inf or past int64 */
        *f = v.u.f, *i = (int64_t)v.u.f;
    } else return false;
    return true;
}

/* Python's printf-style formatting, as `str % args` and the `format`
 * filter do it: %s %r %d %i %u %f %F %e %E %g %G %x %X %o %c and %%, with
 * the flags - + space 0 #, a width and a precision, and %(key)s fields
 * taken from one mapping argument (`*` is not supported). */
bool percent_format(interp *in, const node *at, const jstr *fmt, const jv *args, size_t n_args, jv *out) {
    jbuf b = {0};
    size_t next = 0;
    const char *err = NULL;
    /* one mapping argument feeds the %(key)s fields, and may go unused, as in Python */
    const jv *mapping = n_args == 1 && args[0].type == JV_DICT ? &args[0] : NULL;
    bool used_key = false; /* after a %(key)s field, Python has no positional arguments left */
    for (size_t i = 0; i < fmt->len && !err; i++) {
        if (fmt->data[i] != '%') {
            jbuf_putc(&b, fmt->data[i]);
            continue;
        }
        char spec[24] = "%";
        size_t k = 1;
        const jv *named = NULL; /* %(key)s: the mapping's value */
        if (i + 1 < fmt->len && fmt->data[i + 1] == '(') {
            if (!mapping) {
                err = "format requires a mapping";
                break;
            }
            const size_t key_start = i + 2;
            size_t key_end = key_start;
            for (int depth = 1; key_end < fmt->len && (depth > 1 || fmt->data[key_end] != ')'); key_end++)
                depth += fmt->data[key_end] == '(' ? 1 : fmt->data[key_end] == ')' ? -1 : 0;
            if (key_end >= fmt->len) {
                err = "incomplete format key";
                break;
            }
            named = jv_dict_get(mapping->u.d, fmt->data + key_start, key_end - key_start);
            if (!named) {
                jbuf_free(&b);
                return rt_error(in, at, "'%.*s'", (int)(key_end - key_start > 100 ? 100 : key_end - key_start), fmt->data + key_start);
            }
            i = key_end;
            used_key = true;
        }
        while (++i < fmt->len && strchr("-+ 0#", fmt->data[i]) && fmt->data[i] && k < 8) spec[k++] = fmt->data[i];
        int width = 0, precision = -1;
        while (i < fmt->len && fmt->data[i] >= '0' && fmt->data[i] <= '9' && width <= MAX_FORMAT_WIDTH) width = width * 10 + fmt->data[i++] - '0';
        if (i < fmt->len && fmt->data[i] == '.') {
            precision = 0;
            while (++i < fmt->len && fmt->data[i] >= '0' && fmt->data[i] <= '9' && precision <= MAX_FORMAT_WIDTH)
                precision = precision * 10 + fmt->data[i] - '0';
        }
        if (i >= fmt->len) {
            err = "incomplete format";
            break;
        }
        const char conv = fmt->data[i];
        if (conv == '%' && k == 1 && width == 0 && precision < 0) {
            jbuf_putc(&b, '%');
            continue;
        }
        if (width > MAX_FORMAT_WIDTH || precision > MAX_FORMAT_WIDTH) {
            err = "format width or precision too large";
            break;
        }
        if (!strchr("srdiufFeEgGxXoc", conv) || !conv) {
            jbuf_free(&b);
            return rt_error(in, at, "unsupported format character '%c' (0x%x)", conv, (unsigned char)conv);
        }
        if (!named && (next >= n_args || used_key)) {
            err = "not enough arguments for format string";
            break;
        }
        const jv v = named ? *named : args[next++];
        const bool left = strchr(spec, '-') != NULL;
        int64_t iv;
        double fv;
        char num[MAX_FORMAT_WIDTH + 400];
        if (conv == 's' || conv == 'r' || (conv == 'c' && v.type == JV_STR)) {
            jv text;
            if (conv == 'r' ? !jv_repr(in->heap, v, &text) : !jv_to_str(in->heap, v, &text)) {
                jbuf_free(&b);
                return oom(in, at);
            }
            if (conv == 'c' && char_count(text.u.s->data, text.u.s->len) != 1) {
                err = "%c requires an int or a unicode character";
                break;
            }
            /* the precision and width count characters, not bytes */
            size_t n = text.u.s->len, chars = char_count(text.u.s->data, n);
            if (precision >= 0 && chars > (size_t)precision) {
                size_t cut = 0, cl;
                for (int c = 0; c < precision; c++, cut += cl) decode(text.u.s->data + cut, n - cut, &cl);
                n = cut, chars = (size_t)precision;
            }
            for (size_t pad = chars; !left && pad < (size_t)width; pad++) jbuf_putc(&b, ' ');
            jbuf_put(&b, text.u.s->data, n);
            for (size_t pad = chars; left && pad < (size_t)width; pad++) jbuf_putc(&b, ' ');
            continue;
        }
        if (!format_number(v, strchr("diuxXoc", conv) != NULL, &iv, &fv)) {
            jbuf_free(&b);
            return rt_error(in, at, "%%%c format: a real number is required, not %s", conv, jv_type_name(v));
        }
        if (conv == 'c') {
            if (iv < 0 || iv > 0x10FFFF) {
                err = "%c arg not in range(0x110000)";
                break;
            }
            for (int pad = 1; !left && pad < width; pad++) jbuf_putc(&b, ' ');
            put_cp(&b, (int32_t)iv);
            for (int pad = 1; left && pad < width; pad++) jbuf_putc(&b, ' ');
            continue;
        }
        /* the same conversion for C's printf: flags, width, precision, then ll for the integers */
        const bool integer = strchr("diuxXo", conv) != NULL;
        if (width > 0) k += (size_t)snprintf(spec + k, sizeof spec - k, "%d", width);
        if (precision >= 0) k += (size_t)snprintf(spec + k, sizeof spec - k, ".%d", precision);
        snprintf(spec + k, sizeof spec - k, "%s%c", integer ? "ll" : "", conv == 'i' || conv == 'u' ? 'd' : conv);
        const int len = integer ? snprintf(num, sizeof num, spec, (long long)iv) : snprintf(num, sizeof num, spec, fv);
        if (len < 0 || (size_t)len >= sizeof num) {
            err = "formatted number too long";
            break;
        }
        jbuf_put(&b, num, (size_t)len);
    }
    if (!err && next < n_args && !mapping) err = "not all arguments converted during string formatting";
    if (err) {
        jbuf_free(&b);
        return rt_error(in, at, "%s", err);
    }
    return buf_result(in, at, &b, out);
}

/* --- iteration, length, lookups -------------------------------------------------------------- */

bool jv_iterate(interp *in, const node *at, jv v, jv *out) {
    switch (v.type) {
    case JV_UNDEFINED: *out = jv_list(in->heap, NULL, 0, false); break;
    case JV_LIST:
    case JV_TUPLE: *out = v; return true;
    case JV_DICT:
    case JV_NAMESPACE: *out = jv_list(in->heap, v.u.d->keys, v.u.d->n, false); break;
    case JV_STR: {
        const size_t count = char_count(v.u.s->data, v.u.s->len);
        *out = jv_list(in->heap, NULL, count, false);
        if (out->type != JV_LIST) return oom(in, at);
        size_t k = 0;
        for (size_t i = 0; i < v.u.s->len;) {
            size_t cl;
            decode(v.u.s->data + i, v.u.s->len - i, &cl);
            if (!make_str(in, at, v.u.s->data + i, cl, &((jlist *)out->u.l)->items[k++])) return false;
            i += cl;
        }
        return true;
    }
    default: return rt_error(in, at, "'%s' object is not iterable", jv_type_name(v));
    }
    return out->type == JV_LIST || oom(in, at);
}

bool jv_length(interp *in, const node *at, jv v, int64_t *out) {
    *out = 0;
    switch (v.type) {
    case JV_UNDEFINED: *out = 0; return true;
    case JV_STR: {
        *out = (int64_t)char_count(v.u.s->data, v.u.s->len);
        return true;
    }
    case JV_LIST:
    case JV_TUPLE: *out = (int64_t)v.u.l->n; return true;
    case JV_DICT:
    case JV_NAMESPACE: *out = (int64_t)v.u.d->n; return true;
    default: return rt_error(in, at, "object of type '%s' has no len()", jv_type_name(v));
    }
}

static jv missing(interp *in, jv obj, const char *name) {
    size_t cap = strlen(name) + 64;
    char *hint = jv_alloc(in->heap, cap);
    if (hint) snprintf(hint, cap, "'%s object' has no attribute '%s'", jv_type_name(obj), name);
    return jv_undefined(hint);
}

bool jv_getattr(interp *in, const node *at, jv obj, const char *name, jv *out) {
    switch (obj.type) {
    case JV_UNDEFINED: return rt_undefined(in, at, obj);
    case JV_DICT:
        if (builtin_method(in, obj, name, out)) return true; /* jinja2 tries attributes before items */
        /* fall through */
    case JV_NAMESPACE: {
        const jv *v = jv_dict_get(obj.u.d, name, strlen(name));
        *out = v ? *v : missing(in, obj, name);
        return true;
    }
    case JV_STR:
    case JV_LIST:
    case JV_TUPLE:
        if (builtin_method(in, obj, name, out)) return true;
        *out = missing(in, obj, name);
        return true;
    case JV_MACRO: {
        const node *def = ((const macro_obj *)obj.u.macro)->def;
        if (!strcmp(name, "name")) *out = jv_cstr(in->heap, def->u.macro.name);
        else if (!strcmp(name, "arguments")) {
            *out = jv_list(in->heap, NULL, def->u.macro.n_params, true);
            for (size_t i = 0; out->type == JV_TUPLE && i < def->u.macro.n_params; i++)
                ((jlist *)out->u.l)->items[i] = jv_cstr(in->heap, def->u.macro.params[i]);
        } else if (!strcmp(name, "catch_varargs")) *out = jv_bool(def->u.macro.catch_varargs);
        else if (!strcmp(name, "catch_kwargs")) *out = jv_bool(def->u.macro.catch_kwargs);
        else if (!strcmp(name, "caller")) *out = jv_bool(def->u.macro.takes_caller);
        else *out = missing(in, obj, name);
        return !in->heap->exhausted || oom(in, at);
    }
    default: *out = missing(in, obj, name); return true;
    }
}

bool jv_getitem(interp *in, const node *at, jv obj, jv key, jv *out) {
    switch (obj.type) {
    case JV_UNDEFINED: return rt_undefined(in, at, obj);
    case JV_DICT:
    case JV_NAMESPACE: {
        const jv *v = jv_dict_get_value(obj.u.d, key);
        if (v) {
            *out = *v;
            return true;
        }
        if (key.type == JV_STR) return jv_getattr(in, at, obj, key.u.s->data, out);
        break;
    }
    case JV_LIST:
    case JV_TUPLE:
    case JV_STR: {
        int64_t i;
        if (key.type == JV_INT) i = key.u.i;
        else if (key.type == JV_BOOL) i = key.u.b;
        else if (key.type == JV_STR) return jv_getattr(in, at, obj, key.u.s->data, out);
        else break;
        if (obj.type == JV_STR) {
            jv chars;
            if (!jv_iterate(in, at, obj, &chars)) return false;
            obj = chars;
        }
        int64_t n = (int64_t)obj.u.l->n;
        if (i < 0) i += n;
        if (i >= 0 && i < n) {
            *out = obj.u.l->items[i];
            return true;
        }
        break;
    }
    default: break;
    }
    jv name;
    if (!jv_repr(in->heap, key, &name)) return oom(in, at);
    *out = missing(in, obj, name.u.s->data);
    return true;
}

/* --- methods ----------------------------------------------------------------------------------- */

enum {
    M_STRIP = B_FIRST_METHOD,
    M_LSTRIP,
    M_RSTRIP,
    M_SPLIT,
    M_STARTSWITH,
    M_ENDSWITH,
    M_REPLACE,
    M_UPPER,
    M_LOWER,
    M_TITLE,
    M_CAPITALIZE,
    M_FORMAT,
    M_JOIN,
    M_FIND,
    M_COUNT,
    M_ISDIGIT,
    M_ISALPHA,
    M_ISSPACE,
    M_ITEMS,
    M_KEYS,
    M_VALUES,
    M_GET,
    M_INDEX,
    M_RSPLIT,
    M_RFIND,
    M_STR_INDEX,
    M_CENTER,
    M_LJUST,
    M_RJUST,
    M_ZFILL,
    M_SWAPCASE,
    M_ISUPPER,
    M_ISLOWER,
    M_ISALNUM,
    M_ISNUMERIC,
    M_ISDECIMAL,
    M_PARTITION,
    M_RPARTITION,
    M_SPLITLINES,
    M_REMOVEPREFIX,
    M_REMOVESUFFIX,
    M_CASEFOLD,
};

static const struct {
    const char *name;
    int id;
    jv_type type; /* JV_STR, JV_DICT or JV_LIST (list and tuple) */
} methods[] = {
    {"strip", M_STRIP, JV_STR},        {"lstrip", M_LSTRIP, JV_STR},       {"rstrip", M_RSTRIP, JV_STR},
    {"split", M_SPLIT, JV_STR},        {"startswith", M_STARTSWITH, JV_STR}, {"endswith", M_ENDSWITH, JV_STR},
    {"replace", M_REPLACE, JV_STR},    {"upper", M_UPPER, JV_STR},         {"lower", M_LOWER, JV_STR},
    {"title", M_TITLE, JV_STR},        {"capitalize", M_CAPITALIZE, JV_STR}, {"format", M_FORMAT, JV_STR},
    {"join", M_JOIN, JV_STR},          {"find", M_FIND, JV_STR},           {"count", M_COUNT, JV_STR},
    {"isdigit", M_ISDIGIT, JV_STR},    {"isalpha", M_ISALPHA, JV_STR},     {"isspace", M_ISSPACE, JV_STR},
    {"items", M_ITEMS, JV_DICT},       {"keys", M_KEYS, JV_DICT},          {"values", M_VALUES, JV_DICT},
    {"get", M_GET, JV_DICT},           {"index", M_INDEX, JV_LIST},        {"count", M_COUNT, JV_LIST},
    {"rsplit", M_RSPLIT, JV_STR},      {"rfind", M_RFIND, JV_STR},         {"index", M_STR_INDEX, JV_STR},
    {"center", M_CENTER, JV_STR},      {"ljust", M_LJUST, JV_STR},         {"rjust", M_RJUST, JV_STR},
    {"zfill", M_ZFILL, JV_STR},        {"swapcase", M_SWAPCASE, JV_STR},   {"isupper", M_ISUPPER, JV_STR},
    {"islower", M_ISLOWER, JV_STR},    {"isalnum", M_ISALNUM, JV_STR},     {"isnumeric", M_ISNUMERIC, JV_STR},
    {"isdecimal", M_ISDECIMAL, JV_STR}, {"partition", M_PARTITION, JV_STR}, {"rpartition", M_RPARTITION, JV_STR},
    {"splitlines", M_SPLITLINES, JV_STR}, {"removeprefix", M_REMOVEPREFIX, JV_STR}, {"removesuffix", M_REMOVESUFFIX, JV_STR},
    {"casefold", M_CASEFOLD, JV_STR},
};

int builtin_global(const char *name) {
    if (!strcmp(name, "raise_exception")) return B_RAISE_EXCEPTION;
    if (!strcmp(name, "strftime_now")) return B_STRFTIME_NOW;
    if (!strcmp(name, "namespace")) return B_NAMESPACE;
    if (!strcmp(name, "range")) return B_RANGE;
    if (!strcmp(name, "dict")) return B_DICT;
    if (!strcmp(name, "joiner")) return B_JOINER;
    if (!strcmp(name, "cycler")) return B_CYCLER;
    return 0;
}

bool builtin_method(interp *in, jv self, const char *name, jv *out) {
    jv_type kind = self.type == JV_TUPLE ? JV_LIST : self.type;
    for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++) {
        if (methods[i].type != kind || strcmp(methods[i].name, name)) continue;
        jv *bound = jv_alloc(in->heap, sizeof *bound);
        if (!bound) return false;
        *bound = self;
        *out = (jv){.type = JV_BUILTIN, .u.fn = {methods[i].id, bound}};
        return true;
    }
    return false;
}

/* Outputs are set before any error return: the compiler cannot see that
 * rt_error always returns false. */
static bool want_str(interp *in, const node *at, const jv *v, const char *what, const jstr **out) {
    *out = NULL;
    if (!v || v->type != JV_STR) return rt_error(in, at, "%s must be a string, not %s", what, v ? jv_type_name(*v) : "nothing");
    *out = v->u.s;
    return true;
}

static bool want_int(interp *in, const node *at, const jv *v, int64_t fallback, int64_t *out) {
    *out = fallback;
    if (!v || v->type == JV_NONE) *out = fallback;
    else if (v->type == JV_INT) *out = v->u.i;
    else if (v->type == JV_BOOL) *out = v->u.b;
    else return rt_error(in, at, "an integer is required, not %s", jv_type_name(*v));
    return true;
}

static bool dict_items(interp *in, const node *at, const jdict *d, jv *out) {
    jv list = jv_list(in->heap, NULL, d->n, false);
    if (list.type != JV_LIST) return oom(in, at);
    for (size_t i = 0; i < d->n; i++) {
        jv pair[2] = {d->keys[i], d->values[i]};
        ((jlist *)list.u.l)->items[i] = jv_list(in->heap, pair, 2, true);
        if (list.u.l->items[i].type != JV_TUPLE) return oom(in, at);
    }
    *out = list;
    return true;
}

static bool join_items(interp *in, const node *at, jv seq, const jstr *sep, const char *attribute, jv *out);

static bool call_method(interp *in, const node *at, int id, jv self, const call_args *a, jv *out) {
    const jstr *s = self.type == JV_STR ? self.u.s : NULL, *x = NULL, *y = NULL;
    const jv *a0 = call_arg(a, 0, NULL), *a1 = call_arg(a, 1, NULL);
    int64_t n;
    bool r;
    switch (id) {
    case M_STRIP:
    case M_LSTRIP:
    case M_RSTRIP:
        if (a0 && a0->type != JV_NONE && !want_str(in, at, a0, "strip argument", &x)) return false;
        return strip(in, at, s, x, id != M_RSTRIP, id != M_LSTRIP, out);
    case M_SPLIT:
    case M_RSPLIT: {
        const jv *sep = call_arg(a, 0, "sep"), *max = call_arg(a, 1, "maxsplit");
        if (sep && sep->type != JV_NONE && !want_str(in, at, sep, "separator", &x)) return false;
        return want_int(in, at, max, -1, &n) && (id == M_SPLIT ? split : rsplit)(in, at, s, x, n, out);
    }
    case M_STARTSWITH:
    case M_ENDSWITH:
        if (!a0 || !prefix_match(s, *a0, id == M_ENDSWITH, &r))
            return rt_error(in, at, "%s first arg must be str or a tuple of str", id == M_ENDSWITH ? "endswith" : "startswith");
        *out = jv_bool(r);
        return true;
    case M_REPLACE:
        return want_str(in, at, a0, "replace argument 1", &x) && want_str(in, at, a1, "replace argument 2", &y) &&
               want_int(in, at, call_arg(a, 2, "count"), -1, &n) && replace(in, at, s, x, y, n, out);
    case M_UPPER: return change_case(in, at, s, CASE_UPPER, out);
    case M_LOWER: return change_case(in, at, s, CASE_LOWER, out);
    case M_TITLE: return change_case(in, at, s, CASE_TITLE, out);
    case M_CAPITALIZE: return change_case(in, at, s, CASE_CAPITALIZE, out);
    case M_FORMAT: return format(in, at, s, a, out);
    case M_JOIN: return a0 ? join_items(in, at, *a0, s, NULL, out) : rt_error(in, at, "join() takes exactly one argument");
    case M_FIND:
    case M_RFIND:
    case M_STR_INDEX: {
        if (!want_str(in, at, a0, "find argument", &x)) return false;
        size_t hit = SIZE_MAX;
        if (id == M_RFIND) {
            for (size_t i = s->len + 1; i-- > 0 && hit == SIZE_MAX;)
                if (i + x->len <= s->len && !memcmp(s->data + i, x->data, x->len)) hit = i;
        } else {
            const char *p = x->len ? memmem(s->data, s->len, x->data, x->len) : s->data;
            if (p) hit = (size_t)(p - s->data);
        }
        if (hit == SIZE_MAX && id == M_STR_INDEX) return rt_error(in, at, "substring not found");
        *out = jv_int(hit == SIZE_MAX ? -1 : (int64_t)char_count(s->data, hit));
        return true;
    }
    case M_CENTER:
    case M_LJUST:
    case M_RJUST:
        if (!want_int(in, at, a0, 0, &n) || (a1 && !want_str(in, at, a1, "the fill character", &y))) return false;
        if (y && char_count(y->data, y->len) != 1) return rt_error(in, at, "The fill character must be exactly one character long");
        return justify(in, at, s, n, y, id == M_CENTER ? 'c' : id == M_LJUST ? 'l' : 'r', out);
    case M_ZFILL: {
        if (!want_int(in, at, a0, 0, &n)) return false;
        const size_t sign = s->len && (s->data[0] == '+' || s->data[0] == '-');
        const size_t chars = char_count(s->data, s->len);
        if (n > (int64_t)in->limits->max_output) return rt_error(in, at, "width too large");
        jbuf b = {0};
        jbuf_put(&b, s->data, sign);
        for (int64_t k = (int64_t)chars; k < n; k++) jbuf_putc(&b, '0');
        jbuf_put(&b, s->data + sign, s->len - sign);
        if (!b.data) return make_str(in, at, "", 0, out);
        return buf_result(in, at, &b, out);
    }
    case M_SWAPCASE: return change_case(in, at, s, CASE_SWAP, out);
    case M_CASEFOLD: { /* Unicode's full case folding ("Stra\u00dfe" -> "strasse"); text that is not UTF-8 lower-cased */
        utf8proc_uint8_t *folded = NULL;
        const utf8proc_ssize_t folded_len = utf8proc_map((const utf8proc_uint8_t *)s->data, (utf8proc_ssize_t)s->len, &folded, UTF8PROC_CASEFOLD);
        if (folded_len < 0) return change_case(in, at, s, CASE_LOWER, out);
        const bool ok = make_str(in, at, (const char *)folded, (size_t)folded_len, out);
        free(folded);
        return ok;
    }
    case M_PARTITION:
    case M_RPARTITION: {
        if (!want_str(in, at, a0, "the separator", &x)) return false;
        if (!x->len) return rt_error(in, at, "empty separator");
        jv parts[3];
        const jv empty = jv_str(in->heap, "", 0);
        if (empty.type != JV_STR) return oom(in, at);
        jv halves;
        if (!(id == M_PARTITION ? split : rsplit)(in, at, s, x, 1, &halves)) return false;
        if (halves.u.l->n == 2) {
            parts[0] = halves.u.l->items[0], parts[1] = *a0, parts[2] = halves.u.l->items[1];
        } else if (id == M_PARTITION) {
            parts[0] = self, parts[1] = empty, parts[2] = empty;
        } else {
            parts[0] = empty, parts[1] = empty, parts[2] = self;
        }
        *out = jv_list(in->heap, parts, 3, true);
        return out->type == JV_TUPLE || oom(in, at);
    }
    case M_SPLITLINES: return split_lines(in, at, s, a0 && jv_truthy(*a0), out);
    case M_REMOVEPREFIX:
    case M_REMOVESUFFIX: {
        if (!want_str(in, at, a0, "the affix", &x)) return false;
        bool has;
        prefix_match(s, *a0, id == M_REMOVESUFFIX, &has);
        const size_t cut = has ? x->len : 0;
        return make_str(in, at, s->data + (id == M_REMOVEPREFIX ? cut : 0), s->len - cut, out);
    }
    case M_COUNT:
        if (self.type != JV_STR) {
            int64_t c = 0;
            for (size_t i = 0; a0 && i < self.u.l->n; i++) c += jv_equal(self.u.l->items[i], *a0);
            *out = jv_int(c);
            return true;
        }
        if (!want_str(in, at, a0, "count argument", &x)) return false;
        {
            int64_t c = 0;
            if (x->len == 0) {
                jv_length(in, at, self, &c);
                c++;
            } else {
                for (size_t i = 0; i + x->len <= s->len;) {
                    const char *hit = memmem(s->data + i, s->len - i, x->data, x->len);
                    if (!hit) break;
                    c++;
                    i = (size_t)(hit - s->data) + x->len;
                }
            }
            *out = jv_int(c);
        }
        return true;
    case M_ISDIGIT:
    case M_ISALPHA:
    case M_ISSPACE:
    case M_ISALNUM:
    case M_ISNUMERIC:
    case M_ISDECIMAL: {
        bool all = s->len > 0;
        for (size_t i = 0; i < s->len && all;) {
            size_t cl;
            int32_t c = decode(s->data + i, s->len - i, &cl);
            utf8proc_category_t cat = utf8proc_category(c);
            const bool letter = cat >= UTF8PROC_CATEGORY_LU && cat <= UTF8PROC_CATEGORY_LO;
            const bool number = cat >= UTF8PROC_CATEGORY_ND && cat <= UTF8PROC_CATEGORY_NO;
            if (id == M_ISDIGIT || id == M_ISDECIMAL) all = cat == UTF8PROC_CATEGORY_ND;
            else if (id == M_ISALPHA) all = letter;
            else if (id == M_ISALNUM) all = letter || number;
            else if (id == M_ISNUMERIC) all = number;
            else all = py_isspace(c);
            i += cl;
        }
        *out = jv_bool(all);
        return true;
    }
    case M_ISUPPER:
    case M_ISLOWER: { /* at least one cased character, and none of the other case */
        bool cased = false, other = false;
        for (size_t i = 0; i < s->len;) {
            size_t cl;
            utf8proc_category_t cat = utf8proc_category(decode(s->data + i, s->len - i, &cl));
            const bool upper = cat == UTF8PROC_CATEGORY_LU || cat == UTF8PROC_CATEGORY_LT, lower = cat == UTF8PROC_CATEGORY_LL;
            cased |= id == M_ISUPPER ? upper : lower;
            other |= id == M_ISUPPER ? lower : upper;
            i += cl;
        }
        *out = jv_bool(cased && !other);
        return true;
    }
    case M_ITEMS: return dict_items(in, at, self.u.d, out);
    case M_KEYS: *out = jv_list(in->heap, self.u.d->keys, self.u.d->n, false); return out->type == JV_LIST || oom(in, at);
    case M_VALUES: *out = jv_list(in->heap, self.u.d->values, self.u.d->n, false); return out->type == JV_LIST || oom(in, at);
    case M_GET: {
        if (!a0) return rt_error(in, at, "get expected at least 1 argument");
        const jv *v = jv_dict_get_value(self.u.d, *a0);
        *out = v ? *v : a1 ? *a1 : jv_none();
        return true;
    }
    case M_INDEX:
        for (size_t i = 0; a0 && i < self.u.l->n; i++)
            if (jv_equal(self.u.l->items[i], *a0)) {
                *out = jv_int((int64_t)i);
                return true;
            }
        return rt_error(in, at, "value is not in list");
    }
    return rt_error(in, at, "internal error: unknown method %d", id);
}

/* --- globals ----------------------------------------------------------------------------------- */

static bool kwargs_dict(interp *in, const node *at, const call_args *a, jv_type type, jv *out) {
    jv d = jv_dict(in->heap, a->n_kw + 4);
    if (d.type != JV_DICT) return oom(in, at);
    if (a->n_pos == 1 && (a->pos[0].type == JV_DICT || a->pos[0].type == JV_NAMESPACE)) {
        for (size_t i = 0; i < a->pos[0].u.d->n; i++)
            if (!jv_dict_set(in->heap, d.u.d, a->pos[0].u.d->keys[i], a->pos[0].u.d->values[i])) return oom(in, at);
    } else if (a->n_pos) {
        return rt_error(in, at, "%s() takes keyword arguments (or one mapping)", type == JV_NAMESPACE ? "namespace" : "dict");
    }
    for (size_t i = 0; i < a->n_kw; i++) {
        jv key;
        if (!make_str(in, at, a->kw_names[i], strlen(a->kw_names[i]), &key)) return false;
        if (!jv_dict_set(in->heap, d.u.d, key, a->kw[i])) return oom(in, at);
    }
    d.type = type;
    *out = d;
    return true;
}

/* d[name] = v, for the state of joiners and cyclers. */
static bool set_field(interp *in, const node *at, jv d, const char *name, jv v) {
    jv key;
    return make_str(in, at, name, strlen(name), &key) && (jv_dict_set(in->heap, d.u.d, key, v) || oom(in, at));
}

bool builtin_call(interp *in, const node *at, jv fn, const call_args *a, jv *out) {
    const int id = fn.u.fn.id;
    if (id >= B_FIRST_METHOD) return call_method(in, at, id, *fn.u.fn.self, a, out);
    switch (id) {
    case B_RAISE_EXCEPTION: {
        jv msg = jv_none();
        const jv *m = call_arg(a, 0, "message");
        if (m && !to_str(in, at, *m, &msg)) return false;
        rt_error(in, at, "%s", m ? msg.u.s->data : "");
        in->err->raised = true;
        return false;
    }
    case B_STRFTIME_NOW: {
        const jstr *f;
        if (!want_str(in, at, call_arg(a, 0, "format"), "strftime_now format", &f)) return false;
        char buf[512];
        size_t n = f->len ? strftime(buf, sizeof buf, f->data, in->now) : 0;
        return make_str(in, at, buf, n, out);
    }
    case B_LOOP_CYCLE: {
        if (a->n_pos == 0) return rt_error(in, at, "no items for cycling given");
        const jv *index0 = jv_dict_get(fn.u.fn.self->u.d, "index0", 6);
        *out = a->pos[(size_t)(index0 && index0->type == JV_INT ? index0->u.i : 0) % a->n_pos];
        return true;
    }
    case B_JOINER: { /* joiner(sep=", "): "" the first time it is called, sep after */
        const jv *sep = call_arg(a, 0, "sep");
        jv state = jv_dict(in->heap, 2), *self = jv_alloc(in->heap, sizeof *self);
        if (state.type != JV_DICT || !self) return oom(in, at);
        jv sep_value;
        if (sep) sep_value = *sep;
        else if (!make_str(in, at, ", ", 2, &sep_value)) return false;
        if (!set_field(in, at, state, "sep", sep_value) || !set_field(in, at, state, "used", jv_bool(false))) return false;
        state.type = JV_NAMESPACE;
        *self = state;
        *out = (jv){.type = JV_BUILTIN, .u.fn = {B_JOINER_CALL, self}};
        return true;
    }
    case B_JOINER_CALL: {
        jv *used = (jv *)jv_dict_get(fn.u.fn.self->u.d, "used", 4);
        const jv *sep = jv_dict_get(fn.u.fn.self->u.d, "sep", 3);
        if (used && used->u.b) {
            *out = sep ? *sep : jv_none();
            return true;
        }
        if (used) *used = jv_bool(true);
        return make_str(in, at, "", 0, out);
    }
    case B_CYCLER: { /* cycler(*items): next() gives them in turn, current the one next() gives next */
        if (a->n_pos == 0) return rt_error(in, at, "at least one item has to be provided");
        jv state = jv_dict(in->heap, 5), *self = jv_alloc(in->heap, sizeof *self);
        if (state.type != JV_DICT || !self) return oom(in, at);
        jv items = jv_list(in->heap, a->pos, a->n_pos, true);
        if (items.type != JV_TUPLE) return oom(in, at);
        state.type = JV_NAMESPACE;
        *self = state;
        if (!set_field(in, at, state, "items", items) || !set_field(in, at, state, "pos", jv_int(0)) ||
            !set_field(in, at, state, "current", a->pos[0]) ||
            !set_field(in, at, state, "next", (jv){.type = JV_BUILTIN, .u.fn = {B_CYCLER_NEXT, self}}) ||
            !set_field(in, at, state, "reset", (jv){.type = JV_BUILTIN, .u.fn = {B_CYCLER_RESET, self}}))
            return false;
        *out = state;
        return true;
    }
    case B_CYCLER_NEXT:
    case B_CYCLER_RESET: {
        jdict *d = fn.u.fn.self->u.d;
        jv *pos = (jv *)jv_dict_get(d, "pos", 3), *current = (jv *)jv_dict_get(d, "current", 7);
        const jv *items = jv_dict_get(d, "items", 5);
        if (!pos || !current || !items) return rt_error(in, at, "internal error: a broken cycler");
        const int64_t n = (int64_t)items->u.l->n;
        *out = id == B_CYCLER_NEXT ? items->u.l->items[pos->u.i] : jv_none();
        pos->u.i = id == B_CYCLER_NEXT ? (pos->u.i + 1) % n : 0;
        *current = items->u.l->items[pos->u.i];
        return true;
    }
    case B_NAMESPACE: return kwargs_dict(in, at, a, JV_NAMESPACE, out);
    case B_DICT: return kwargs_dict(in, at, a, JV_DICT, out);
    case B_RANGE: {
        int64_t start = 0, stop = 0, stepv = 1;
        if (a->n_pos == 1) {
            if (!want_int(in, at, &a->pos[0], 0, &stop)) return false;
        } else if (a->n_pos == 2 || a->n_pos == 3) {
            if (!want_int(in, at, &a->pos[0], 0, &start) || !want_int(in, at, &a->pos[1], 0, &stop) ||
                (a->n_pos == 3 && !want_int(in, at, &a->pos[2], 1, &stepv)))
                return false;
        } else {
            return rt_error(in, at, "range expected 1 to 3 arguments, got %zu", a->n_pos);
        }
        if (stepv == 0) return rt_error(in, at, "range() arg 3 must not be zero");
        double count = ceil(((double)stop - (double)start) / (double)stepv);
        if (count < 0) count = 0;
        if (count > 1e6) return rt_error(in, at, "range of %.0f items is too large", count);
        jv list = jv_list(in->heap, NULL, (size_t)count, false);
        if (list.type != JV_LIST) return oom(in, at);
        for (size_t i = 0; i < (size_t)count; i++) ((jlist *)list.u.l)->items[i] = jv_int(start + (int64_t)i * stepv);
        *out = list;
        return true;
    }
    }
    return rt_error(in, at, "internal error: unknown builtin %d", id);
}

/* --- tests --------------------------------------------------------------------------------------- */

static bool is_compare_test(const char *name) {
    static const char *const names[] = {"equalto", "eq", "==", "sameas", "ne", "!=", "lt", "lessthan", "<",
                                        "gt", "greaterthan", ">", "le", "<=", "ge", ">="};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(name, names[i])) return true;
    return false;
}

static bool compare_test(interp *in, const node *at, const char *name, jv v, const jv *other, bool *out) {
    if (!other) return rt_error(in, at, "test '%s' needs an argument", name);
    if (!strcmp(name, "equalto") || !strcmp(name, "eq") || !strcmp(name, "==") || !strcmp(name, "sameas")) *out = jv_equal(v, *other);
    else if (!strcmp(name, "ne") || !strcmp(name, "!=")) *out = !jv_equal(v, *other);
    else if (!strcmp(name, "lt") || !strcmp(name, "lessthan") || !strcmp(name, "<")) return jv_less(in, at, v, *other, out);
    else if (!strcmp(name, "gt") || !strcmp(name, "greaterthan") || !strcmp(name, ">")) return jv_less(in, at, *other, v, out);
    else if (!strcmp(name, "le") || !strcmp(name, "<=")) {
        if (!jv_less(in, at, *other, v, out)) return false;
        *out = !*out;
    } else if (!strcmp(name, "ge") || !strcmp(name, ">=")) {
        if (!jv_less(in, at, v, *other, out)) return false;
        *out = !*out;
    } else return false;
    return true;
}

bool builtin_test(interp *in, const node *at, const char *name, jv v, const call_args *a, bool *out) {
    const jv *arg = call_arg(a, 0, NULL);
    if (!strcmp(name, "defined")) *out = v.type != JV_UNDEFINED;
    else if (!strcmp(name, "undefined")) *out = v.type == JV_UNDEFINED;
    else if (!strcmp(name, "none")) *out = v.type == JV_NONE;
    else if (!strcmp(name, "string")) *out = v.type == JV_STR;
    else if (!strcmp(name, "mapping")) *out = v.type == JV_DICT;
    else if (!strcmp(name, "iterable"))
        *out = v.type == JV_UNDEFINED || v.type == JV_STR || v.type == JV_LIST || v.type == JV_TUPLE || v.type == JV_DICT;
    else if (!strcmp(name, "sequence")) *out = v.type == JV_STR || v.type == JV_LIST || v.type == JV_TUPLE || v.type == JV_DICT;
    else if (!strcmp(name, "number")) *out = v.type == JV_INT || v.type == JV_FLOAT || v.type == JV_BOOL;
    else if (!strcmp(name, "integer")) *out = v.type == JV_INT;
    else if (!strcmp(name, "float")) *out = v.type == JV_FLOAT;
    else if (!strcmp(name, "boolean")) *out = v.type == JV_BOOL;
    else if (!strcmp(name, "true")) *out = v.type == JV_BOOL && v.u.b;
    else if (!strcmp(name, "false")) *out = v.type == JV_BOOL && !v.u.b;
    else if (!strcmp(name, "callable")) *out = v.type == JV_MACRO || v.type == JV_BUILTIN;
    else if (!strcmp(name, "escaped")) *out = false;
    else if (!strcmp(name, "in")) {
        if (!arg) return rt_error(in, at, "test 'in' needs an argument");
        jv seq;
        if (arg->type == JV_STR && v.type == JV_STR) *out = memmem(arg->u.s->data, arg->u.s->len, v.u.s->data, v.u.s->len) || !v.u.s->len;
        else {
            if (!jv_iterate(in, at, *arg, &seq)) return false;
            *out = false;
            for (size_t i = 0; i < seq.u.l->n && !*out; i++) *out = jv_equal(v, seq.u.l->items[i]);
        }
    } else if (!strcmp(name, "even") || !strcmp(name, "odd") || !strcmp(name, "divisibleby")) {
        int64_t x, d = 2;
        if (!want_int(in, at, &v, 0, &x) || (!strcmp(name, "divisibleby") && !want_int(in, at, arg, 1, &d))) return false;
        if (d == 0) return rt_error(in, at, "integer division or modulo by zero");
        bool divisible = x % d == 0;
        *out = !strcmp(name, "odd") ? !divisible : divisible;
    } else if (!strcmp(name, "lower") || !strcmp(name, "upper")) {
        jv conv;
        if (v.type != JV_STR) {
            *out = false;
            return true;
        }
        if (!change_case(in, at, v.u.s, !strcmp(name, "lower") ? CASE_LOWER : CASE_UPPER, &conv)) return false;
        *out = jv_equal(v, conv);
    } else if (is_compare_test(name)) {
        return compare_test(in, at, name, v, arg, out);
    } else {
        return rt_error(in, at, "No test named '%s'.", name);
    }
    return true;
}

/* --- filters ------------------------------------------------------------------------------------- */

static bool join_items(interp *in, const node *at, jv seq, const jstr *sep, const char *attribute, jv *out) {
    jv items;
    if (!jv_iterate(in, at, seq, &items)) return false;
    jbuf b = {0};
    for (size_t i = 0; i < items.u.l->n; i++) {
        if (i && sep) jbuf_put(&b, sep->data, sep->len);
        jv v = items.u.l->items[i];
        if (attribute && !jv_getattr(in, at, v, attribute, &v)) {
            jbuf_free(&b);
            return false;
        }
        jv_write_str(&b, v);
    }
    return buf_result(in, at, &b, out);
}

/* select / reject / selectattr / rejectattr */
static bool select_items(interp *in, const node *at, jv seq, const call_args *a, bool by_attr, bool keep, jv *out) {
    jv items;
    if (!jv_truthy(seq)) seq = jv_undefined(NULL); /* jinja2 iterates only a true value: none selects nothing */
    if (!jv_iterate(in, at, seq, &items)) return false;
    size_t first_test_arg = by_attr ? 1 : 0;
    const jv *attr = by_attr ? call_arg(a, 0, NULL) : NULL;
    if (by_attr && (!attr || attr->type != JV_STR)) return rt_error(in, at, "selectattr needs an attribute name");
    const jv *test = call_arg(a, first_test_arg, NULL);
    if (test && test->type != JV_STR) return rt_error(in, at, "the test name must be a string");
    call_args rest = {a->n_pos > first_test_arg + 1 ? a->pos + first_test_arg + 1 : NULL,
                      a->n_pos > first_test_arg + 1 ? a->n_pos - first_test_arg - 1 : 0, a->kw_names, a->kw, a->n_kw};
    jv list = jv_list(in->heap, NULL, items.u.l->n, false);
    if (list.type != JV_LIST) return oom(in, at);
    size_t k = 0;
    for (size_t i = 0; i < items.u.l->n; i++) {
        jv v = items.u.l->items[i];
        if (attr && !jv_getattr(in, at, v, attr->u.s->data, &v)) return false;
        bool r;
        if (test) {
            if (!builtin_test(in, at, test->u.s->data, v, &rest, &r)) return false;
        } else r = jv_truthy(v);
        if (r == keep) ((jlist *)list.u.l)->items[k++] = items.u.l->items[i];
    }
    ((jlist *)list.u.l)->n = k;
    *out = list;
    return true;
}

static int compare_for_sort(interp *in, const node *at, jv x, jv y, bool case_sensitive) {
    if (!case_sensitive && x.type == JV_STR && y.type == JV_STR) {
        jv lx, ly;
        if (change_case(in, at, x.u.s, CASE_LOWER, &lx) && change_case(in, at, y.u.s, CASE_LOWER, &ly)) {
            x = lx;
            y = ly;
        }
    }
    bool lt, gt;
    if (!jv_less(in, at, x, y, &lt) || !jv_less(in, at, y, x, &gt)) return 0;
    return lt ? -1 : gt ? 1 : 0;
}

/* Sorts v[0..n) by keys[0..n) (moved along), stably: an insertion sort,
 * the lists in templates being short. */
static bool sort_by_keys(interp *in, const node *at, jv *v, jv *keys, size_t n, bool reverse, bool case_sensitive) {
    for (size_t i = 1; i < n && !in->failed; i++) {
        for (size_t j = i; j > 0; j--) {
            int c = compare_for_sort(in, at, keys[j - 1], keys[j], case_sensitive);
            if (reverse ? c >= 0 : c <= 0) break;
            jv t = keys[j];
            keys[j] = keys[j - 1];
            keys[j - 1] = t;
            t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    }
    return !in->failed;
}

/* A new list of seq's items with, in *keys, each item's attribute (or the
 * item itself when attr is NULL). */
static bool items_and_keys(interp *in, const node *at, jv seq, const jv *attr, jv *list, jv **keys) {
    jv items;
    if (!jv_iterate(in, at, seq, &items)) return false;
    const size_t n = items.u.l->n;
    *list = jv_list(in->heap, items.u.l->items, n, false);
    *keys = jv_alloc(in->heap, n * sizeof(jv) + 1);
    if (list->type != JV_LIST || !*keys) return oom(in, at);
    for (size_t i = 0; i < n; i++) {
        (*keys)[i] = list->u.l->items[i];
        if (attr && attr->type == JV_STR && !jv_getattr(in, at, list->u.l->items[i], attr->u.s->data, &(*keys)[i])) return false;
    }
    return true;
}

static bool sort_items(interp *in, const node *at, jv seq, const call_args *a, jv *out) {
    const jv *rev = call_arg(a, 0, "reverse"), *cs = call_arg(a, 1, "case_sensitive"), *attr = call_arg(a, 2, "attribute");
    jv *keys;
    if (!items_and_keys(in, at, seq, attr, out, &keys)) return false;
    return sort_by_keys(in, at, ((jlist *)out->u.l)->items, keys, out->u.l->n, rev && jv_truthy(*rev), cs && jv_truthy(*cs));
}

/* dictsort(case_sensitive=false, by='key', reverse=false): the (key, value)
 * pairs sorted by the one or the other. */
static bool dictsort(interp *in, const node *at, jv d, const call_args *a, jv *out) {
    if (d.type != JV_DICT && d.type != JV_NAMESPACE) return rt_error(in, at, "dictsort needs a mapping");
    const jv *cs = call_arg(a, 0, "case_sensitive"), *by = call_arg(a, 1, "by"), *rev = call_arg(a, 2, "reverse");
    int pos = 0;
    if (by && (by->type != JV_STR || (strcmp(by->u.s->data, "key") && strcmp(by->u.s->data, "value"))))
        return rt_error(in, at, "You can only sort by either \"key\" or \"value\"");
    if (by && !strcmp(by->u.s->data, "value")) pos = 1;
    const size_t n = d.u.d->n;
    jv *keys = jv_alloc(in->heap, n * sizeof(jv) + 1);
    if (!keys || !dict_items(in, at, d.u.d, out)) return keys ? false : oom(in, at);
    for (size_t i = 0; i < n; i++) keys[i] = pos ? d.u.d->values[i] : d.u.d->keys[i];
    return sort_by_keys(in, at, ((jlist *)out->u.l)->items, keys, n, rev && jv_truthy(*rev), cs && jv_truthy(*cs));
}

static bool indent(interp *in, const node *at, const jstr *s, const call_args *a, jv *out) {
    const jv *w = call_arg(a, 0, "width"), *first = call_arg(a, 1, "first"), *blank = call_arg(a, 2, "blank");
    jbuf pad = {0};
    if (w && w->type == JV_STR) jbuf_put(&pad, w->u.s->data, w->u.s->len);
    else {
        int64_t width;
        if (!want_int(in, at, w, 4, &width)) return false;
        for (int64_t i = 0; i < width && i < 1024; i++) jbuf_putc(&pad, ' ');
    }
    jbuf b = {0};
    bool line_start = true, first_line = true;
    for (size_t i = 0; i < s->len; i++) {
        if (line_start) {
            size_t e = i;
            while (e < s->len && s->data[e] != '\n') e++;
            bool is_blank = e == i;
            if ((!first_line || (first && jv_truthy(*first))) && (!is_blank || (blank && jv_truthy(*blank))))
                jbuf_put(&b, pad.data, pad.len);
            line_start = false;
        }
        jbuf_putc(&b, s->data[i]);
        if (s->data[i] == '\n') {
            line_start = true;
            first_line = false;
        }
    }
    jbuf_free(&pad);
    if (!b.data) return make_str(in, at, "", 0, out);
    return buf_result(in, at, &b, out);
}

bool escape_html(interp *in, const node *at, jv v, jv *out) {
    jv s;
    if (!to_str(in, at, v, &s)) return false;
    jbuf b = {0};
    for (size_t i = 0; i < s.u.s->len; i++) {
        char c = s.u.s->data[i];
        switch (c) {
        case '&': jbuf_puts(&b, "&amp;"); break;
        case '<': jbuf_puts(&b, "&lt;"); break;
        case '>': jbuf_puts(&b, "&gt;"); break;
        case '"': jbuf_puts(&b, "&#34;"); break;
        case '\'': jbuf_puts(&b, "&#39;"); break;
        default: jbuf_putc(&b, c);
        }
    }
    if (!b.data) return make_str(in, at, "", 0, out);
    return buf_result(in, at, &b, out);
}

static bool number_filter(jv v, bool to_float, const jv *fallback, jv *out) {
    if (v.type == JV_INT || v.type == JV_BOOL) {
        int64_t i = v.type == JV_INT ? v.u.i : v.u.b;
        *out = to_float ? jv_float((double)i) : jv_int(i);
        return true;
    }
    if (v.type == JV_FLOAT) {
        if (!to_float && (isnan(v.u.f) || fabs(v.u.f) > 9.2e18)) *out = fallback ? *fallback : jv_int(0);
        else *out = to_float ? v : jv_int((int64_t)v.u.f);
        return true;
    }
    if (v.type == JV_STR) {
        char *end;
        errno = 0;
        if (to_float) {
            double d = strtod(v.u.s->data, &end);
            if (end != v.u.s->data && !*end) {
                *out = jv_float(d);
                return true;
            }
        } else {
            long long i = strtoll(v.u.s->data, &end, 10);
            if (end != v.u.s->data && !*end && !errno) {
                *out = jv_int(i);
                return true;
            }
            double d = strtod(v.u.s->data, &end); /* jinja2's int() also reads "3.7" */
            if (end != v.u.s->data && !*end && fabs(d) < 9.2e18) {
                *out = jv_int((int64_t)d);
                return true;
            }
        }
    }
    *out = fallback ? *fallback : to_float ? jv_float(0.0) : jv_int(0);
    return true;
}

typedef enum round_mode { ROUND_HALF_EVEN, ROUND_CEIL, ROUND_FLOOR } round_mode;

/* jinja2's round filter: Python's round(value, precision) for "common"
 * (half to even, on the exact binary value; an integer stays an integer),
 * else floor or ceil of value * 10^precision, divided back, as a float. */
static bool round_number(interp *in, const node *at, jv v, int64_t precision, round_mode mode, jv *out) {
    jv f;
    if (mode == ROUND_HALF_EVEN && (v.type == JV_INT || v.type == JV_BOOL)) {
        int64_t i = v.type == JV_INT ? v.u.i : v.u.b;
        if (precision < 0) {
            if (precision < -18) i = 0;
            else {
                int64_t unit = 1;
                for (int64_t k = 0; k < -precision; k++) unit *= 10;
                int64_t q = i / unit, r = i % unit;
                if (r < 0) q--, r += unit; /* floor division, as Python's */
                if (2 * r > unit || (2 * r == unit && (q & 1))) q++;
                if (q > INT64_MAX / unit || q < INT64_MIN / unit) return rt_error(in, at, "integer overflow");
                i = q * unit;
            }
        }
        *out = jv_int(i);
        return true;
    }
    number_filter(v, true, NULL, &f);
    double x = f.u.f;
    if (!isfinite(x) || precision > 300) {
        *out = jv_float(x);
        return true;
    }
    if (mode == ROUND_HALF_EVEN && precision >= 0) {
        /* printf rounds the exact binary value to nearest, ties to even, as Python's round does */
        char digits[400];
        snprintf(digits, sizeof digits, "%.*f", (int)precision, x);
        *out = jv_float(strtod(digits, NULL));
        return true;
    }
    const double scale = pow(10.0, (double)(precision < -400 ? -400 : precision));
    const double y = x * scale;
    *out = jv_float((mode == ROUND_CEIL ? ceil(y) : mode == ROUND_FLOOR ? floor(y) : nearbyint(y)) / scale);
    return true;
}

static bool min_max(interp *in, const node *at, jv seq, bool want_max, jv *out) {
    jv items;
    if (!jv_iterate(in, at, seq, &items)) return false;
    if (items.u.l->n == 0) {
        *out = jv_undefined("no min/max of an empty sequence");
        return true;
    }
    jv best = items.u.l->items[0];
    for (size_t i = 1; i < items.u.l->n; i++) {
        int c = compare_for_sort(in, at, items.u.l->items[i], best, false);
        if (in->failed) return false;
        if (want_max ? c > 0 : c < 0) best = items.u.l->items[i];
    }
    *out = best;
    return true;
}

/* batch(n, fill_with) and slice(n, fill_with): the items in lists of n, or
 * in n lists (the first len % n of them one longer), the short ones filled
 * when fill_with is given. */
static bool chunk_items(interp *in, const node *at, jv seq, const call_args *a, bool into_count, jv *out) {
    jv items;
    int64_t count;
    const jv *fill = call_arg(a, 1, "fill_with");
    if (!jv_iterate(in, at, seq, &items) || !want_int(in, at, call_arg(a, 0, into_count ? "slices" : "linecount"), 0, &count)) return false;
    if (fill && fill->type == JV_NONE) fill = NULL;
    const size_t n = items.u.l->n;
    if (count < 1 || count > (int64_t)in->limits->max_output) return rt_error(in, at, "%s must be a positive count", into_count ? "slices" : "linecount");
    const size_t per = into_count ? n / (size_t)count : (size_t)count, extra = into_count ? n % (size_t)count : 0;
    const size_t groups = into_count ? (size_t)count : (n + per - 1) / per;
    jv list = jv_list(in->heap, NULL, groups, false);
    if (list.type != JV_LIST) return oom(in, at);
    for (size_t g = 0, start = 0; g < groups; g++) {
        const size_t len = into_count ? per + (g < extra) : (n - start < per ? n - start : per);
        const bool padded = fill && (into_count ? g >= extra : len < per);
        jv group = jv_list(in->heap, NULL, len + padded * (into_count ? 1 : per - len), false);
        if (group.type != JV_LIST) return oom(in, at);
        for (size_t k = 0; k < group.u.l->n; k++) ((jlist *)group.u.l)->items[k] = k < len ? items.u.l->items[start + k] : *fill;
        ((jlist *)list.u.l)->items[g] = group;
        start += len;
    }
    *out = list;
    return true;
}

/* groupby(attribute, default=none, case_sensitive=false): (key, items)
 * tuples, sorted by key; a group's key is as its first item spells it. */
static bool group_items(interp *in, const node *at, jv seq, const call_args *a, jv *out) {
    const jv *attr = call_arg(a, 0, "attribute"), *def = call_arg(a, 1, "default"), *cs = call_arg(a, 2, "case_sensitive");
    if (!attr || attr->type != JV_STR) return rt_error(in, at, "groupby needs an attribute name");
    const bool case_sensitive = cs && jv_truthy(*cs);
    jv list, *keys;
    if (!items_and_keys(in, at, seq, attr, &list, &keys)) return false;
    const size_t n = list.u.l->n;
    jv *spelt = jv_alloc(in->heap, n * sizeof(jv) + 1);
    if (!spelt) return oom(in, at);
    for (size_t i = 0; i < n; i++) {
        if (keys[i].type == JV_UNDEFINED && def) keys[i] = *def;
        spelt[i] = keys[i];
        if (!case_sensitive && keys[i].type == JV_STR && !change_case(in, at, keys[i].u.s, CASE_LOWER, &keys[i])) return false;
    }
    jv *v = ((jlist *)list.u.l)->items;
    /* sort items, case-folded keys and spellings together: by index through the keys */
    jv *order = jv_alloc(in->heap, n * sizeof(jv) + 1);
    if (!order) return oom(in, at);
    for (size_t i = 0; i < n; i++) order[i] = jv_int((int64_t)i);
    if (!sort_by_keys(in, at, order, keys, n, false, true)) return false;
    jv groups = jv_list(in->heap, NULL, n, false);
    if (groups.type != JV_LIST) return oom(in, at);
    size_t n_groups = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && jv_equal(keys[j], keys[i])) j++;
        jv members = jv_list(in->heap, NULL, j - i, false);
        if (members.type != JV_LIST) return oom(in, at);
        for (size_t k = i; k < j; k++) ((jlist *)members.u.l)->items[k - i] = v[order[k].u.i];
        jv pair[2] = {spelt[order[i].u.i], members};
        ((jlist *)groups.u.l)->items[n_groups++] = jv_list(in->heap, pair, 2, true);
        if (groups.u.l->items[n_groups - 1].type != JV_TUPLE) return oom(in, at);
        i = j;
    }
    ((jlist *)groups.u.l)->n = n_groups;
    *out = groups;
    return true;
}

/* truncate(length=255, killwords=false, end='...', leeway=5), as jinja2's:
 * strings within length + leeway stay whole; others are cut to length
 * (with end), at the last space unless killwords. */
static bool truncate_text(interp *in, const node *at, const jstr *s, const call_args *a, jv *out) {
    int64_t length, leeway;
    const jv *kill = call_arg(a, 1, "killwords"), *end_arg = call_arg(a, 2, "end");
    const jstr *end = NULL;
    if (!want_int(in, at, call_arg(a, 0, "length"), 255, &length) || !want_int(in, at, call_arg(a, 3, "leeway"), 5, &leeway) ||
        (end_arg && !want_str(in, at, end_arg, "end", &end)))
        return false;
    const size_t end_chars = end ? char_count(end->data, end->len) : 3;
    if (length < (int64_t)end_chars) return rt_error(in, at, "expected length >= %zu, got %lld", end_chars, (long long)length);
    if (leeway < 0) return rt_error(in, at, "expected leeway >= 0, got %lld", (long long)leeway);
    if ((int64_t)char_count(s->data, s->len) <= length + leeway) return make_str(in, at, s->data, s->len, out);
    size_t cut = char_prefix_bytes(s->data, s->len, (size_t)(length - (int64_t)end_chars));
    if (!(kill && jv_truthy(*kill))) {
        size_t space = cut;
        while (space > 0 && s->data[space - 1] != ' ') space--;
        if (space > 0) cut = space - 1;
    }
    jbuf b = {0};
    jbuf_put(&b, s->data, cut);
    jbuf_put(&b, end ? end->data : "...", end ? end->len : 3);
    return buf_result(in, at, &b, out);
}

/* jinja2's filesizeformat: bytes, or kB/MB... (binary: KiB/MiB...) with
 * one decimal. */
static bool file_size(interp *in, const node *at, jv v, const call_args *a, jv *out) {
    double bytes;
    if (v.type == JV_INT) bytes = (double)v.u.i;
    else if (v.type == JV_FLOAT) bytes = v.u.f;
    else if (v.type == JV_BOOL) bytes = v.u.b;
    else if (v.type == JV_STR) {
        char *end;
        bytes = strtod(v.u.s->data, &end);
        if (end == v.u.s->data || *end) return rt_error(in, at, "could not convert string to float: '%s'", v.u.s->data);
    } else {
        return rt_error(in, at, "float() argument must be a string or a real number, not '%s'", jv_type_name(v));
    }
    const jv *binary_arg = call_arg(a, 0, "binary");
    const bool binary = binary_arg && jv_truthy(*binary_arg);
    static const char *const decimal[] = {"kB", "MB", "GB", "TB", "PB", "EB", "ZB", "YB"};
    static const char *const binary_units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"};
    const double base = binary ? 1024 : 1000;
    char text[64];
    if (bytes == 1) snprintf(text, sizeof text, "1 Byte");
    else if (bytes < base) snprintf(text, sizeof text, "%lld Bytes", (long long)bytes);
    else {
        double unit = base;
        int i = 0;
        for (; i < 8; i++) {
            unit *= base;
            if (bytes < unit) break;
        }
        if (i == 8) i = 7; /* past yottabytes: still in them */
        snprintf(text, sizeof text, "%.1f %s", base * bytes / unit, binary ? binary_units[i] : decimal[i]);
    }
    return make_str(in, at, text, strlen(text), out);
}

/* Python's quote(): UTF-8 bytes, letters, digits and _.-~ kept (and '/'
 * outside query strings), the rest %XX; in a query string a space is '+'. */
static void url_quote(jbuf *b, const char *s, size_t n, bool for_query) {
    for (size_t i = 0; i < n; i++) {
        const unsigned char c = (unsigned char)s[i];
        char esc[4];
        if (isalnum(c) || c == '_' || c == '.' || c == '-' || c == '~' || (c == '/' && !for_query)) jbuf_put(b, (const char *)&c, 1);
        else if (c == ' ' && for_query) jbuf_put(b, "+", 1);
        else {
            snprintf(esc, sizeof esc, "%%%02X", c);
            jbuf_put(b, esc, 3);
        }
    }
}

/* jinja2's urlencode: a string (or any value that is not a collection)
 * quoted; a mapping, or a list of pairs, as a query string. */
static bool url_encode(interp *in, const node *at, jv v, jv *out) {
    jbuf b = {0};
    jv s;
    if (v.type != JV_DICT && v.type != JV_LIST && v.type != JV_TUPLE) {
        if (!to_str(in, at, v, &s)) return false;
        url_quote(&b, s.u.s->data, s.u.s->len, false);
        return buf_result(in, at, &b, out);
    }
    jv pairs = v;
    if (v.type == JV_DICT && !dict_items(in, at, v.u.d, &pairs)) return false;
    for (size_t i = 0; i < pairs.u.l->n; i++) {
        const jv pair = pairs.u.l->items[i];
        if ((pair.type != JV_LIST && pair.type != JV_TUPLE) || pair.u.l->n != 2) {
            free(b.data);
            return rt_error(in, at, "urlencode: expected a mapping or pairs");
        }
        jv k, val;
        if (!to_str(in, at, pair.u.l->items[0], &k) || !to_str(in, at, pair.u.l->items[1], &val)) {
            free(b.data);
            return false;
        }
        if (i) jbuf_put(&b, "&", 1);
        url_quote(&b, k.u.s->data, k.u.s->len, true);
        jbuf_put(&b, "=", 1);
        url_quote(&b, val.u.s->data, val.u.s->len, true);
    }
    return buf_result(in, at, &b, out);
}

/* --- wordwrap: Python's textwrap as jinja2 calls it ------------------------------------------
 * Each line wrapped alone (expand_tabs and replace_whitespace off, runs of
 * whitespace dropped at line ends), split into chunks by textwrap's own
 * regular expression: whitespace runs and words, which with
 * break_on_hyphens also end after a hyphen between letters. */

/* textwrap.TextWrapper.wordsep_re, its \Z as PCRE's \z */
#define WS "[\\t\\n\\x0b\\x0c\\r ]"
#define NWS "[^\\t\\n\\x0b\\x0c\\r ]"
#define WORD_PUNCT "[\\w!\"'&.,?]"
#define LETTER "[^\\d\\W]"
static const char wordsep_re[] = "(" WS "+|(?<=" WORD_PUNCT ")-{2,}(?=\\w)|" NWS "+?(?:-(?:(?<=" LETTER "{2}-)|(?<=" LETTER "-" LETTER
                                 "-))(?=" LETTER "-?" LETTER ")|(?=" WS "|\\z)|(?<=" WORD_PUNCT ")(?=-{2,}\\w)))";
static const char wordsep_simple_re[] = "(" WS "+)";
#undef WS
#undef NWS
#undef WORD_PUNCT
#undef LETTER

static pcre2_code *wordsep_code[2]; /* simple, with hyphens */
static pthread_once_t wordsep_once = PTHREAD_ONCE_INIT;

static void wordsep_compile(void) {
    int err;
    PCRE2_SIZE off;
    wordsep_code[0] = pcre2_compile((PCRE2_SPTR)wordsep_simple_re, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP, &err, &off, NULL);
    wordsep_code[1] = pcre2_compile((PCRE2_SPTR)wordsep_re, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP, &err, &off, NULL);
}

typedef struct wrap_chunk {
    size_t at, len, chars; /* bytes into the line, bytes, characters */
} wrap_chunk;

static bool all_space(const char *s, size_t n) {
    for (size_t i = 0, cl; i < n; i += cl)
        if (!py_isspace(decode(s + i, n - i, &cl))) return false;
    return true;
}

/* re.split's pieces (the matches and the text between), empty ones dropped. */
static bool wrap_chunks_of(const char *line, size_t n, bool hyphens, wrap_chunk **out, size_t *n_out) {
    pthread_once(&wordsep_once, wordsep_compile);
    pcre2_code *code = wordsep_code[hyphens];
    wrap_chunk *c = malloc((2 * n + 2) * sizeof *c);
    pcre2_match_data *md = code ? pcre2_match_data_create_from_pattern(code, NULL) : NULL;
    if (!c || !md) {
        free(c);
        pcre2_match_data_free(md);
        return false;
    }
    size_t k = 0, pos = 0, last = 0;
    while (pos <= n && pcre2_match(code, (PCRE2_SPTR)line, n, pos, pos == last ? 0 : PCRE2_NOTEMPTY_ATSTART, md, NULL) >= 0) {
        const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        if (ov[0] > last) c[k++] = (wrap_chunk){last, ov[0] - last, char_count(line + last, ov[0] - last)};
        if (ov[1] > ov[0]) c[k++] = (wrap_chunk){ov[0], ov[1] - ov[0], char_count(line + ov[0], ov[1] - ov[0])};
        last = ov[1];
        if (ov[1] == ov[0]) { /* an empty match: step over one character */
            if (ov[1] >= n) break;
            size_t cl;
            decode(line + ov[1], n - ov[1], &cl);
            pos = ov[1] + cl;
        } else {
            pos = ov[1];
        }
    }
    if (last < n) c[k++] = (wrap_chunk){last, n - last, char_count(line + last, n - last)};
    pcre2_match_data_free(md);
    *out = c;
    *n_out = k;
    return true;
}


/* textwrap.wrap(line) joined by wrap: TextWrapper._wrap_chunks and
 * _handle_long_word. */
static bool wrap_line(const char *line, size_t n, int64_t width, bool break_long, bool hyphens, const char *wrap, size_t wrap_len,
                      jbuf *b) {
    wrap_chunk *c;
    size_t k;
    if (!wrap_chunks_of(line, n, hyphens, &c, &k)) return false;
    size_t next = 0, lines = 0; /* chunks [next, k) are left */
    while (next < k) {
        if (lines && all_space(line + c[next].at, c[next].len)) next++;
        size_t first = next, cur = 0; /* the line: chunks [first, next), then perhaps a piece cut off the next */
        bool has_piece = false;
        wrap_chunk piece = {0, 0, 0};
        while (next < k && (int64_t)(cur + c[next].chars) <= width) cur += c[next++].chars;
        if (next < k && (int64_t)c[next].chars > width) {
            const int64_t space_left = width < 1 ? 1 : width - (int64_t)cur;
            if (break_long) { /* the piece that fits (perhaps none), cut after a hyphen where one allows */
                wrap_chunk *w = &c[next];
                int64_t end = space_left;
                if (hyphens && (int64_t)w->chars > space_left) {
                    /* the last hyphen before the limit, if something other than hyphens comes before it */
                    int64_t hyphen = -1;
                    bool other_before = false, other_seen = false;
                    size_t byte = 0, cl;
                    for (int64_t ch = 0; ch < space_left; ch++, byte += cl) {
                        const int32_t cp = decode(line + w->at + byte, w->len - byte, &cl);
                        if (cp == '-') hyphen = ch, other_before = other_seen;
                        else other_seen = true;
                    }
                    if (hyphen > 0 && other_before) end = hyphen + 1;
                }
                const size_t bytes = char_prefix_bytes(line + w->at, w->len, (size_t)end);
                piece = (wrap_chunk){w->at, bytes, (size_t)end};
                has_piece = true;
                w->at += bytes, w->len -= bytes, w->chars -= (size_t)end;
            } else if (next == first) {
                next++; /* a line of its own, whole */
            }
        }
        /* the line's last part goes if it is whitespace (an empty piece counts) */
        size_t last = next;
        if (has_piece && all_space(line + piece.at, piece.len)) has_piece = false;
        else if (!has_piece && last > first && all_space(line + c[last - 1].at, c[last - 1].len)) last--;
        if (last > first || has_piece) {
            if (lines++) jbuf_put(b, wrap, wrap_len);
            for (size_t i = first; i < last; i++) jbuf_put(b, line + c[i].at, c[i].len);
            if (has_piece) jbuf_put(b, line + piece.at, piece.len);
        }
    }
    free(c);
    return true;
}

static bool wordwrap(interp *in, const node *at, const jstr *s, const call_args *a, jv *out) {
    int64_t width;
    const jv *brk = call_arg(a, 1, "break_long_words"), *wrap_arg = call_arg(a, 2, "wrapstring"), *hy = call_arg(a, 3, "break_on_hyphens");
    const jstr *wrap = NULL;
    if (!want_int(in, at, call_arg(a, 0, "width"), 79, &width) || (wrap_arg && wrap_arg->type != JV_NONE && !want_str(in, at, wrap_arg, "wrapstring", &wrap)))
        return false;
    if (width <= 0) return rt_error(in, at, "invalid width %lld (must be > 0)", (long long)width);
    const char *wrap_text = wrap ? wrap->data : "\n"; /* the environment's newline_sequence */
    const size_t wrap_len = wrap ? wrap->len : 1;
    jv lines;
    if (!split_lines(in, at, s, false, &lines)) return false;
    jbuf b = {0};
    for (size_t i = 0; i < lines.u.l->n; i++) {
        if (i) jbuf_put(&b, wrap_text, wrap_len);
        const jstr *line = lines.u.l->items[i].u.s;
        if (!wrap_line(line->data, line->len, width, !brk || jv_truthy(*brk), !hy || jv_truthy(*hy), wrap_text, wrap_len, &b)) {
            jbuf_free(&b);
            return oom(in, at);
        }
    }
    return buf_result(in, at, &b, out);
}

/* jinja2's striptags: comments and tags out, runs of whitespace to one
 * space, then the character references back to characters (numeric ones,
 * the markup ones and the common typographic ones; other named ones stay
 * as written). */
static bool strip_tags(interp *in, const node *at, const jstr *s, jv *out) {
    jbuf b = {0};
    bool space = false;
    for (size_t i = 0; i < s->len;) {
        if (s->data[i] == '<') {
            const bool comment = s->len - i >= 4 && !memcmp(s->data + i, "<!--", 4);
            const char *end = comment ? memmem(s->data + i + 4, s->len - i - 4, "-->", 3) : memchr(s->data + i + 1, '>', s->len - i - 1);
            if (end) {
                i = (size_t)(end - s->data) + (comment ? 3 : 1);
                continue;
            }
        }
        size_t cl;
        const int32_t c = decode(s->data + i, s->len - i, &cl);
        if (py_isspace(c)) space = b.len > 0;
        else {
            if (space) jbuf_putc(&b, ' ');
            space = false;
            if (c == '&') {
                static const struct { const char *name; const char *text; } named[] = {
                    {"&amp;", "&"},           {"&lt;", "<"},           {"&gt;", ">"},           {"&quot;", "\""},
                    {"&apos;", "'"},          {"&nbsp;", "\u00a0"},    {"&copy;", "\u00a9"},    {"&reg;", "\u00ae"},
                    {"&trade;", "\u2122"},    {"&hellip;", "\u2026"},  {"&mdash;", "\u2014"},   {"&ndash;", "\u2013"},
                    {"&lsquo;", "\u2018"},    {"&rsquo;", "\u2019"},   {"&ldquo;", "\u201c"},   {"&rdquo;", "\u201d"},
                    {"&laquo;", "\u00ab"},    {"&raquo;", "\u00bb"},   {"&euro;", "\u20ac"},    {"&deg;", "\u00b0"}};
                bool done = false;
                for (size_t k = 0; k < sizeof named / sizeof named[0] && !done; k++) {
                    const size_t n = strlen(named[k].name);
                    if (s->len - i >= n && !memcmp(s->data + i, named[k].name, n)) {
                        jbuf_puts(&b, named[k].text);
                        i += n;
                        done = true;
                    }
                }
                if (!done && s->len - i > 3 && s->data[i + 1] == '#') {
                    const bool hex = s->data[i + 2] == 'x' || s->data[i + 2] == 'X';
                    size_t j = i + (hex ? 3 : 2);
                    uint32_t cp = 0;
                    while (j < s->len && j - i < 12 && (hex ? isxdigit((unsigned char)s->data[j]) : isdigit((unsigned char)s->data[j])))
                        cp = cp * (hex ? 16 : 10) + (uint32_t)(isdigit((unsigned char)s->data[j]) ? s->data[j] - '0' : (s->data[j] | 0x20) - 'a' + 10), j++;
                    if (j < s->len && s->data[j] == ';' && j > i + (hex ? 3 : 2) && cp > 0 && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF)) {
                        put_cp(&b, (int32_t)cp);
                        i = j + 1;
                        done = true;
                    }
                }
                if (done) continue;
            }
            jbuf_put(&b, s->data + i, cl);
        }
        i += cl;
    }
    if (!b.data) return make_str(in, at, "", 0, out);
    return buf_result(in, at, &b, out);
}

bool builtin_filter(interp *in, const node *at, const char *name, jv v, const call_args *a, jv *out) {
    const jv *a0 = call_arg(a, 0, NULL);
    jv s;
    if (!strcmp(name, "trim")) {
        const jv *chars = call_arg(a, 0, "chars");
        const jstr *c = NULL;
        if (chars && chars->type != JV_NONE && !want_str(in, at, chars, "trim characters", &c)) return false;
        return to_str(in, at, v, &s) && strip(in, at, s.u.s, c, true, true, out);
    }
    if (!strcmp(name, "length") || !strcmp(name, "count")) {
        int64_t n;
        if (!jv_length(in, at, v, &n)) return false;
        *out = jv_int(n);
        return true;
    }
    if (!strcmp(name, "tojson")) { /* transformers' tojson(ensure_ascii=False, indent=None, separators=None, sort_keys=False) */
        const jv *ascii = call_arg(a, 0, "ensure_ascii"), *ind = call_arg(a, 1, "indent"), *seps = call_arg(a, 2, "separators"),
                 *sorted = call_arg(a, 3, "sort_keys");
        int64_t indent_n = -1;
        if (ind && ind->type != JV_NONE && !want_int(in, at, ind, -1, &indent_n)) return false;
        if (indent_n > 64) indent_n = 64;
        jv_json_style style = {(int)indent_n, NULL, NULL, ascii && jv_truthy(*ascii), sorted && jv_truthy(*sorted)};
        if (seps && seps->type != JV_NONE) {
            if ((seps->type != JV_TUPLE && seps->type != JV_LIST) || seps->u.l->n != 2 || seps->u.l->items[0].type != JV_STR ||
                seps->u.l->items[1].type != JV_STR)
                return rt_error(in, at, "separators must be an (item_separator, key_separator) pair of strings");
            style.item_sep = seps->u.l->items[0].u.s->data;
            style.key_sep = seps->u.l->items[1].u.s->data;
        }
        if (!jv_to_json(in->heap, v, &style, out))
            return in->heap->exhausted ? oom(in, at) : rt_error(in, at, "Object of type %s is not JSON serializable", jv_type_name(v));
        return true;
    }
    if (!strcmp(name, "upper") || !strcmp(name, "lower") || !strcmp(name, "title") || !strcmp(name, "capitalize")) {
        case_mode m = name[0] == 'u' ? CASE_UPPER : name[0] == 'l' ? CASE_LOWER : name[0] == 't' ? CASE_TITLE : CASE_CAPITALIZE;
        return to_str(in, at, v, &s) && change_case(in, at, s.u.s, m, out);
    }
    if (!strcmp(name, "default") || !strcmp(name, "d")) {
        const jv *def = call_arg(a, 0, "default_value"), *boolean = call_arg(a, 1, "boolean");
        bool use_default = v.type == JV_UNDEFINED || (boolean && jv_truthy(*boolean) && !jv_truthy(v));
        if (!use_default) *out = v;
        else if (def) *out = *def;
        else return make_str(in, at, "", 0, out);
        return true;
    }
    if (!strcmp(name, "join")) {
        const jv *sep = call_arg(a, 0, "d"), *attr = call_arg(a, 1, "attribute");
        jv sep_str;
        if (sep && !to_str(in, at, *sep, &sep_str)) return false;
        return join_items(in, at, v, sep ? sep_str.u.s : NULL, attr && attr->type == JV_STR ? attr->u.s->data : NULL, out);
    }
    if (!strcmp(name, "replace")) {
        const jstr *x, *y;
        int64_t n;
        return to_str(in, at, v, &s) && want_str(in, at, call_arg(a, 0, "old"), "replace argument 1", &x) &&
               want_str(in, at, call_arg(a, 1, "new"), "replace argument 2", &y) &&
               want_int(in, at, call_arg(a, 2, "count"), -1, &n) && replace(in, at, s.u.s, x, y, n, out);
    }
    if (!strcmp(name, "string")) return to_str(in, at, v, out);
    if (!strcmp(name, "safe")) {
        if (!to_str(in, at, v, out)) return false;
        out->markup = true;
        return true;
    }
    if (!strcmp(name, "escape") || !strcmp(name, "e") || !strcmp(name, "forceescape")) {
        if (v.type == JV_STR && v.markup && name[0] != 'f') { /* already safe */
            *out = v;
            return true;
        }
        if (!escape_html(in, at, v, out)) return false;
        out->markup = true;
        return true;
    }
    if (!strcmp(name, "list")) return jv_iterate(in, at, v, out);
    if (!strcmp(name, "first") || !strcmp(name, "last")) {
        jv items;
        if (!jv_iterate(in, at, v, &items)) return false;
        if (items.u.l->n == 0) *out = jv_undefined("no first/last item of an empty sequence");
        else *out = items.u.l->items[name[0] == 'f' ? 0 : items.u.l->n - 1];
        return true;
    }
    if (!strcmp(name, "reverse")) {
        if (v.type == JV_STR) {
            jv chars;
            if (!jv_iterate(in, at, v, &chars)) return false;
            jbuf b = {0};
            for (size_t i = chars.u.l->n; i > 0; i--) jv_write_str(&b, chars.u.l->items[i - 1]);
            if (!b.data) return make_str(in, at, "", 0, out);
            return buf_result(in, at, &b, out);
        }
        jv items;
        if (!jv_iterate(in, at, v, &items)) return false;
        jv list = jv_list(in->heap, NULL, items.u.l->n, false);
        if (list.type != JV_LIST) return oom(in, at);
        for (size_t i = 0; i < items.u.l->n; i++) ((jlist *)list.u.l)->items[i] = items.u.l->items[items.u.l->n - 1 - i];
        *out = list;
        return true;
    }
    if (!strcmp(name, "items")) {
        if (v.type == JV_UNDEFINED) {
            *out = jv_list(in->heap, NULL, 0, false);
            return out->type == JV_LIST || oom(in, at);
        }
        if (v.type != JV_DICT && v.type != JV_NAMESPACE) return rt_error(in, at, "Can only get item pairs from a mapping.");
        return dict_items(in, at, v.u.d, out);
    }
    if (!strcmp(name, "dictsort")) return dictsort(in, at, v, a, out);
    if (!strcmp(name, "selectattr") || !strcmp(name, "rejectattr")) return select_items(in, at, v, a, true, name[0] == 's', out);
    if (!strcmp(name, "select") || !strcmp(name, "reject")) return select_items(in, at, v, a, false, name[0] == 's', out);
    if (!strcmp(name, "map")) {
        jv items;
        if (!jv_iterate(in, at, jv_truthy(v) ? v : jv_undefined(NULL), &items)) return false; /* as select: none maps to nothing */
        const jv *attr = call_arg(a, SIZE_MAX, "attribute"), *def = call_arg(a, SIZE_MAX, "default");
        jv list = jv_list(in->heap, NULL, items.u.l->n, false);
        if (list.type != JV_LIST) return oom(in, at);
        call_args rest = {a->n_pos > 1 ? a->pos + 1 : NULL, a->n_pos > 1 ? a->n_pos - 1 : 0, NULL, NULL, 0};
        for (size_t i = 0; i < items.u.l->n; i++) {
            jv *dst = &((jlist *)list.u.l)->items[i];
            if (attr) {
                if (attr->type != JV_STR) return rt_error(in, at, "map attribute must be a string");
                if (!jv_getattr(in, at, items.u.l->items[i], attr->u.s->data, dst)) return false;
                if (dst->type == JV_UNDEFINED && def) *dst = *def;
            } else if (a0 && a0->type == JV_STR) {
                if (!builtin_filter(in, at, a0->u.s->data, items.u.l->items[i], &rest, dst)) return false;
            } else {
                return rt_error(in, at, "map needs a filter name or attribute=");
            }
        }
        *out = list;
        return true;
    }
    if (!strcmp(name, "unique")) { /* unique(case_sensitive=false, attribute=none): the first of each */
        const jv *cs = call_arg(a, 0, "case_sensitive"), *attr = call_arg(a, 1, "attribute");
        const bool case_sensitive = cs && jv_truthy(*cs);
        jv list, *keys;
        if (!items_and_keys(in, at, v, attr, &list, &keys)) return false;
        size_t k = 0;
        for (size_t i = 0; i < list.u.l->n; i++) {
            if (!case_sensitive && keys[i].type == JV_STR && !change_case(in, at, keys[i].u.s, CASE_LOWER, &keys[i])) return false;
            bool seen = false;
            for (size_t j = 0; j < k && !seen; j++) seen = jv_equal(keys[j], keys[i]);
            if (!seen) {
                keys[k] = keys[i];
                ((jlist *)list.u.l)->items[k++] = list.u.l->items[i];
            }
        }
        ((jlist *)list.u.l)->n = k;
        *out = list;
        return true;
    }
    if (!strcmp(name, "sort")) return sort_items(in, at, v, a, out);
    if (!strcmp(name, "min") || !strcmp(name, "max")) return min_max(in, at, v, name[1] == 'a', out);
    if (!strcmp(name, "sum")) {
        jv items, total = a0 ? *a0 : jv_int(0);
        const jv *attr = call_arg(a, SIZE_MAX, "attribute"), *start = call_arg(a, SIZE_MAX, "start");
        if (start) total = *start;
        if (!jv_iterate(in, at, v, &items)) return false;
        for (size_t i = 0; i < items.u.l->n; i++) {
            jv x = items.u.l->items[i];
            if (attr && attr->type == JV_STR && !jv_getattr(in, at, x, attr->u.s->data, &x)) return false;
            if (x.type != JV_INT && x.type != JV_FLOAT && x.type != JV_BOOL)
                return rt_error(in, at, "unsupported operand type(s) for +: '%s' and '%s'", jv_type_name(total), jv_type_name(x));
            if (total.type == JV_FLOAT || x.type == JV_FLOAT)
                total = jv_float((total.type == JV_FLOAT ? total.u.f : (double)(total.type == JV_INT ? total.u.i : total.u.b)) +
                                 (x.type == JV_FLOAT ? x.u.f : (double)(x.type == JV_INT ? x.u.i : x.u.b)));
            else total = jv_int((total.type == JV_INT ? total.u.i : total.u.b) + (x.type == JV_INT ? x.u.i : x.u.b));
        }
        *out = total;
        return true;
    }
    if (!strcmp(name, "abs")) {
        if (v.type == JV_INT) *out = jv_int(v.u.i < 0 ? -v.u.i : v.u.i);
        else if (v.type == JV_FLOAT) *out = jv_float(fabs(v.u.f));
        else return rt_error(in, at, "bad operand type for abs(): '%s'", jv_type_name(v));
        return true;
    }
    if (!strcmp(name, "int")) return number_filter(v, false, call_arg(a, 0, "default"), out);
    if (!strcmp(name, "float")) return number_filter(v, true, call_arg(a, 0, "default"), out);
    if (!strcmp(name, "round")) {
        int64_t precision;
        if (!want_int(in, at, call_arg(a, 0, "precision"), 0, &precision)) return false;
        const jv *method = call_arg(a, 1, "method");
        const char *m = method && method->type == JV_STR ? method->u.s->data : "common";
        if (strcmp(m, "common") && strcmp(m, "ceil") && strcmp(m, "floor")) return rt_error(in, at, "method must be common, ceil or floor");
        return round_number(in, at, v, precision, m[0] == 'c' && m[1] == 'e' ? ROUND_CEIL : m[0] == 'f' ? ROUND_FLOOR : ROUND_HALF_EVEN, out);
    }
    if (!strcmp(name, "indent")) return to_str(in, at, v, &s) && indent(in, at, s.u.s, a, out);
    if (!strcmp(name, "format")) { /* keyword arguments make the mapping for %(key)s fields */
        jv mapping;
        if (a->n_kw && a->n_pos) return rt_error(in, at, "can't handle positional and keyword arguments at the same time");
        if (a->n_kw && !kwargs_dict(in, at, a, JV_DICT, &mapping)) return false;
        return to_str(in, at, v, &s) && percent_format(in, at, s.u.s, a->n_kw ? &mapping : a->pos, a->n_kw ? 1 : a->n_pos, out);
    }
    if (!strcmp(name, "wordcount")) {
        jv words;
        if (!to_str(in, at, v, &s) || !split(in, at, s.u.s, NULL, -1, &words)) return false;
        *out = jv_int((int64_t)words.u.l->n);
        return true;
    }
    if (!strcmp(name, "batch") || !strcmp(name, "slice")) return chunk_items(in, at, v, a, name[0] == 's', out);
    if (!strcmp(name, "groupby")) return group_items(in, at, v, a, out);
    if (!strcmp(name, "truncate")) return to_str(in, at, v, &s) && truncate_text(in, at, s.u.s, a, out);
    if (!strcmp(name, "striptags")) return to_str(in, at, v, &s) && strip_tags(in, at, s.u.s, out);
    if (!strcmp(name, "wordwrap")) return to_str(in, at, v, &s) && wordwrap(in, at, s.u.s, a, out);
    if (!strcmp(name, "filesizeformat")) return file_size(in, at, v, a, out);
    if (!strcmp(name, "urlencode")) return url_encode(in, at, v, out);
    if (!strcmp(name, "center")) {
        int64_t width;
        return to_str(in, at, v, &s) && want_int(in, at, call_arg(a, 0, "width"), 80, &width) && justify(in, at, s.u.s, width, NULL, 'c', out);
    }
    if (!strcmp(name, "pprint")) return jv_repr(in->heap, v, out) || oom(in, at);
    return rt_error(in, at, "No filter named '%s'.", name);
}
