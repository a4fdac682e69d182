/* The str methods that filters share with the methods of strings, as
 * Python's str does them on code points. */
#include <string.h>
#include <utf8proc.h>

#include "template/text_internal.h"

static bool in_chars(int32_t c, const jstr *chars) {
    for (size_t i = 0; i < chars->len;) {
        size_t cl;
        if (tpl_decode(chars->data + i, chars->len - i, &cl) == c) return true;
        i += cl;
    }
    return false;
}

bool str_strip(interp *in, const node *at, const jstr *s, const jstr *chars, bool left, bool right, jv *out) {
    size_t b = 0, e = s->len;
    while (left && b < e) {
        size_t cl;
        int32_t c = tpl_decode(s->data + b, e - b, &cl);
        if (chars ? !in_chars(c, chars) : !tpl_isspace(c)) break;
        b += cl;
    }
    while (right && e > b) {
        size_t start = e - 1;
        while (start > b && ((unsigned char)s->data[start] & 0xC0) == 0x80) start--;
        size_t cl;
        int32_t c = tpl_decode(s->data + start, e - start, &cl);
        if (chars ? !in_chars(c, chars) : !tpl_isspace(c)) break;
        e = start;
    }
    return rt_make_str(in, at, s->data + b, e - b, out);
}

bool str_change_case(interp *in, const node *at, const jstr *s, case_mode mode, jv *out) {
    jbuf b = {0};
    bool word_start = true;
    for (size_t i = 0; i < s->len;) {
        size_t cl;
        int32_t c = tpl_decode(s->data + i, s->len - i, &cl);
        int32_t r = c;
        switch (mode) {
        case CASE_UPPER: r = utf8proc_toupper(c); break;
        case CASE_LOWER: r = utf8proc_tolower(c); break;
        case CASE_CAPITALIZE: r = i == 0 ? utf8proc_toupper(c) : utf8proc_tolower(c); break;
        case CASE_SWAP: r = utf8proc_toupper(c) != c ? utf8proc_toupper(c) : utf8proc_tolower(c); break;
        case CASE_TITLE:
            /* jinja2's title: words begin after "-", whitespace, "(", "{", "[" or "<" */
            r = word_start ? utf8proc_toupper(c) : utf8proc_tolower(c);
            word_start = c == '-' || tpl_isspace(c) || c == '(' || c == '{' || c == '[' || c == '<';
            break;
        }
        tpl_put_cp(&b, r);
        i += cl;
    }
    return rt_buf_result(in, at, &b, out);
}

bool str_replace(interp *in, const node *at, const jstr *s, const jstr *old, const jstr *new_, int64_t count, jv *out) {
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
            tpl_decode(s->data + i, s->len - i, &cl);
            jbuf_put(&b, s->data + i, cl);
            i += cl;
        }
        return rt_buf_result(in, at, &b, out);
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
    return rt_buf_result(in, at, &b, out);
}

/* The pieces split and rsplit cut, growing on the render's heap. */
typedef struct piece_list {
    jv *items;
    size_t n, cap;
} piece_list;

static bool push_piece(interp *in, const node *at, piece_list *l, const char *s, size_t len) {
    jv piece;
    if (!rt_make_str(in, at, s, len, &piece)) return false;
    if (l->n == l->cap) {
        const size_t cap = l->cap ? 2 * l->cap : 16;
        jv *grown = jv_alloc(in->heap, cap * sizeof *grown);
        if (!grown) return rt_oom(in, at);
        if (l->n) memcpy(grown, l->items, l->n * sizeof *grown);
        l->items = grown;
        l->cap = cap;
    }
    l->items[l->n++] = piece;
    return true;
}

bool str_split(interp *in, const node *at, const jstr *s, const jstr *sep, int64_t maxsplit, jv *out) {
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
            while (i < s->len && tpl_isspace(tpl_decode(s->data + i, s->len - i, &cl))) i += cl;
            if (i >= s->len) break;
            size_t start = i;
            if (maxsplit >= 0 && (int64_t)pieces.n >= maxsplit) {
                size_t e = s->len;
                while (e > start) { /* Python keeps the rest, minus trailing whitespace */
                    size_t b0 = e - 1;
                    while (b0 > start && ((unsigned char)s->data[b0] & 0xC0) == 0x80) b0--;
                    if (!tpl_isspace(tpl_decode(s->data + b0, e - b0, &cl))) break;
                    e = b0;
                }
                if (!push_piece(in, at, &pieces, s->data + start, e - start)) return false;
                break;
            }
            while (i < s->len && !tpl_isspace(tpl_decode(s->data + i, s->len - i, &cl))) i += cl;
            if (!push_piece(in, at, &pieces, s->data + start, i - start)) return false;
        }
    }
    *out = jv_list(in->heap, pieces.items, pieces.n, false);
    return out->type == JV_LIST || rt_oom(in, at);
}

/* Where the code point that ends at byte e (> 0) of s begins. */
static size_t prev_char(const char *s, size_t e) {
    size_t b = e - 1;
    while (b > 0 && ((unsigned char)s[b] & 0xC0) == 0x80 && e - b < 4) b--;
    return b;
}

/* str.rsplit: split's pieces, but at most maxsplit cuts counted from the right. */
bool str_rsplit(interp *in, const node *at, const jstr *s, const jstr *sep, int64_t maxsplit, jv *out) {
    if (maxsplit < 0) return str_split(in, at, s, sep, maxsplit, out);
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
            while (e > 0 && tpl_isspace(tpl_decode(s->data + prev_char(s->data, e), e - prev_char(s->data, e), &cl)))
                e = prev_char(s->data, e);
            if (e == 0) break;
            if ((int64_t)pieces.n >= maxsplit) {
                if (!push_piece(in, at, &pieces, s->data, e)) return false;
                break;
            }
            size_t b = e;
            while (b > 0 && !tpl_isspace(tpl_decode(s->data + prev_char(s->data, b), b - prev_char(s->data, b), &cl)))
                b = prev_char(s->data, b);
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
    return out->type == JV_LIST || rt_oom(in, at);
}

/* str.splitlines: at \n, \r, \r\n, \v, \f, \x1c-\x1e, \x85, U+2028 and U+2029,
 * the breaks kept or not. */
bool str_split_lines(interp *in, const node *at, const jstr *s, bool keepends, jv *out) {
    jv *items = jv_alloc(in->heap, (s->len + 1) * sizeof *items);
    size_t n = 0, start = 0;
    if (!items) return rt_oom(in, at);
    for (size_t i = 0; i < s->len;) {
        size_t cl;
        const int32_t c = tpl_decode(s->data + i, s->len - i, &cl);
        if (!(c == '\n' || c == '\r' || c == '\v' || c == '\f' || (c >= 0x1C && c <= 0x1E) || c == 0x85 || c == 0x2028 || c == 0x2029)) {
            i += cl;
            continue;
        }
        size_t end = i + cl;
        if (c == '\r' && end < s->len && s->data[end] == '\n') end++;
        if (!rt_make_str(in, at, s->data + start, (keepends ? end : i) - start, &items[n++])) return false;
        i = start = end;
    }
    if (start < s->len && !rt_make_str(in, at, s->data + start, s->len - start, &items[n++])) return false;
    *out = jv_list(in->heap, items, n, false);
    return out->type == JV_LIST || rt_oom(in, at);
}

/* str.center/ljust/rjust: padded with fill to width characters; Python's
 * center puts the odd pad on the left when width is odd. */
bool str_justify(interp *in, const node *at, const jstr *s, int64_t width, const jstr *fill, char how, jv *out) {
    const size_t chars = tpl_char_count(s->data, s->len);
    if (width > (int64_t)in->limits->max_output) return rt_error(in, at, "width too large");
    if (width <= (int64_t)chars) return rt_make_str(in, at, s->data, s->len, out);
    const size_t marg = (size_t)width - chars;
    const size_t left = how == 'l' ? 0 : how == 'r' ? marg : marg / 2 + (marg & (size_t)width & 1);
    jbuf b = {0};
    for (size_t i = 0; i < left; i++) jbuf_put(&b, fill ? fill->data : " ", fill ? fill->len : 1);
    jbuf_put(&b, s->data, s->len);
    for (size_t i = left; i < marg; i++) jbuf_put(&b, fill ? fill->data : " ", fill ? fill->len : 1);
    return rt_buf_result(in, at, &b, out);
}

bool str_join(interp *in, const node *at, jv seq, const jstr *sep, jv *out) {
    jv items;
    if (!jv_iterate(in, at, seq, &items)) return false;
    jbuf b = {0};
    for (size_t i = 0; i < items.u.l->n; i++) {
        if (i && sep) jbuf_put(&b, sep->data, sep->len);
        jv_write_str(&b, items.u.l->items[i]);
    }
    return rt_buf_result(in, at, &b, out);
}

bool escape_html(interp *in, const node *at, jv v, jv *out) {
    jv s;
    if (!rt_to_str(in, at, v, &s)) return false;
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
    return rt_buf_result(in, at, &b, out);
}
