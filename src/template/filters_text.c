/* The filters of text: indent, truncate, wordwrap, striptags,
 * filesizeformat and urlencode, as jinja2 writes them. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <ctype.h>
#include <pcre2.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "template/filters_internal.h"
#include "template/text_internal.h"

static bool indent(interp *in, const node *at, const jstr *s, const call_args *a, jv *out) {
    const jv *w = call_arg(a, 0, "width"), *first = call_arg(a, 1, "first"), *blank = call_arg(a, 2, "blank");
    jbuf pad = {0};
    if (w && w->type == JV_STR) jbuf_put(&pad, w->u.s->data, w->u.s->len);
    else {
        int64_t width;
        if (!rt_want_int(in, at, w, 4, &width)) return false;
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
    return rt_buf_result(in, at, &b, out);
}

/* truncate(length=255, killwords=false, end='...', leeway=5), as jinja2's:
 * strings within length + leeway stay whole; others are cut to length
 * (with end), at the last space unless killwords. */
static bool truncate_text(interp *in, const node *at, const jstr *s, const call_args *a, jv *out) {
    int64_t length, leeway;
    const jv *kill = call_arg(a, 1, "killwords"), *end_arg = call_arg(a, 2, "end");
    const jstr *end = NULL;
    if (!rt_want_int(in, at, call_arg(a, 0, "length"), 255, &length) || !rt_want_int(in, at, call_arg(a, 3, "leeway"), 5, &leeway) ||
        (end_arg && !rt_want_str(in, at, end_arg, "end", &end)))
        return false;
    const size_t end_chars = end ? tpl_char_count(end->data, end->len) : 3;
    if (length < (int64_t)end_chars) return rt_error(in, at, "expected length >= %zu, got %lld", end_chars, (long long)length);
    if (leeway < 0) return rt_error(in, at, "expected leeway >= 0, got %lld", (long long)leeway);
    if ((int64_t)tpl_char_count(s->data, s->len) <= length + leeway) return rt_make_str(in, at, s->data, s->len, out);
    size_t cut = tpl_char_prefix_bytes(s->data, s->len, (size_t)(length - (int64_t)end_chars));
    if (!(kill && jv_truthy(*kill))) {
        size_t space = cut;
        while (space > 0 && s->data[space - 1] != ' ') space--;
        if (space > 0) cut = space - 1;
    }
    jbuf b = {0};
    jbuf_put(&b, s->data, cut);
    jbuf_put(&b, end ? end->data : "...", end ? end->len : 3);
    return rt_buf_result(in, at, &b, out);
}

/* jinja2's filesizeformat: bytes, or kB/MB... (binary: KiB/MiB...) with
 * one decimal. */
bool filter_filesizeformat(interp *in, const node *at, jv v, const call_args *a, jv *out) {
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
    return rt_make_str(in, at, text, strlen(text), out);
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
        if (!rt_to_str(in, at, v, &s)) return false;
        url_quote(&b, s.u.s->data, s.u.s->len, false);
        return rt_buf_result(in, at, &b, out);
    }
    jv pairs = v;
    if (v.type == JV_DICT && !rt_dict_items(in, at, v.u.d, &pairs)) return false;
    for (size_t i = 0; i < pairs.u.l->n; i++) {
        const jv pair = pairs.u.l->items[i];
        if ((pair.type != JV_LIST && pair.type != JV_TUPLE) || pair.u.l->n != 2) {
            free(b.data);
            return rt_error(in, at, "urlencode: expected a mapping or pairs");
        }
        jv k, val;
        if (!rt_to_str(in, at, pair.u.l->items[0], &k) || !rt_to_str(in, at, pair.u.l->items[1], &val)) {
            free(b.data);
            return false;
        }
        if (i) jbuf_put(&b, "&", 1);
        url_quote(&b, k.u.s->data, k.u.s->len, true);
        jbuf_put(&b, "=", 1);
        url_quote(&b, val.u.s->data, val.u.s->len, true);
    }
    return rt_buf_result(in, at, &b, out);
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
        if (!tpl_isspace(tpl_decode(s + i, n - i, &cl))) return false;
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
        if (ov[0] > last) c[k++] = (wrap_chunk){last, ov[0] - last, tpl_char_count(line + last, ov[0] - last)};
        if (ov[1] > ov[0]) c[k++] = (wrap_chunk){ov[0], ov[1] - ov[0], tpl_char_count(line + ov[0], ov[1] - ov[0])};
        last = ov[1];
        if (ov[1] == ov[0]) { /* an empty match: step over one character */
            if (ov[1] >= n) break;
            size_t cl;
            tpl_decode(line + ov[1], n - ov[1], &cl);
            pos = ov[1] + cl;
        } else {
            pos = ov[1];
        }
    }
    if (last < n) c[k++] = (wrap_chunk){last, n - last, tpl_char_count(line + last, n - last)};
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
                        const int32_t cp = tpl_decode(line + w->at + byte, w->len - byte, &cl);
                        if (cp == '-') hyphen = ch, other_before = other_seen;
                        else other_seen = true;
                    }
                    if (hyphen > 0 && other_before) end = hyphen + 1;
                }
                const size_t bytes = tpl_char_prefix_bytes(line + w->at, w->len, (size_t)end);
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
    if (!rt_want_int(in, at, call_arg(a, 0, "width"), 79, &width) ||
        (wrap_arg && wrap_arg->type != JV_NONE && !rt_want_str(in, at, wrap_arg, "wrapstring", &wrap)))
        return false;
    if (width <= 0) return rt_error(in, at, "invalid width %lld (must be > 0)", (long long)width);
    const char *wrap_text = wrap ? wrap->data : "\n"; /* the environment's newline_sequence */
    const size_t wrap_len = wrap ? wrap->len : 1;
    jv lines;
    if (!str_split_lines(in, at, s, false, &lines)) return false;
    jbuf b = {0};
    for (size_t i = 0; i < lines.u.l->n; i++) {
        if (i) jbuf_put(&b, wrap_text, wrap_len);
        const jstr *line = lines.u.l->items[i].u.s;
        if (!wrap_line(line->data, line->len, width, !brk || jv_truthy(*brk), !hy || jv_truthy(*hy), wrap_text, wrap_len, &b)) {
            jbuf_free(&b);
            return rt_oom(in, at);
        }
    }
    return rt_buf_result(in, at, &b, out);
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
        const int32_t c = tpl_decode(s->data + i, s->len - i, &cl);
        if (tpl_isspace(c)) space = b.len > 0;
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
                        tpl_put_cp(&b, (int32_t)cp);
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
    return rt_buf_result(in, at, &b, out);
}

bool filter_indent(interp *in, const node *at, jv v, const call_args *a, jv *out) {
    jv s;
    return rt_to_str(in, at, v, &s) && indent(in, at, s.u.s, a, out);
}

bool filter_truncate(interp *in, const node *at, jv v, const call_args *a, jv *out) {
    jv s;
    return rt_to_str(in, at, v, &s) && truncate_text(in, at, s.u.s, a, out);
}

bool filter_wordwrap(interp *in, const node *at, jv v, const call_args *a, jv *out) {
    jv s;
    return rt_to_str(in, at, v, &s) && wordwrap(in, at, s.u.s, a, out);
}

bool filter_striptags(interp *in, const node *at, jv v, const call_args *a, jv *out) {
    (void)a;
    jv s;
    return rt_to_str(in, at, v, &s) && strip_tags(in, at, s.u.s, out);
}

bool filter_urlencode(interp *in, const node *at, jv v, const call_args *a, jv *out) {
    (void)a;
    return url_encode(in, at, v, out);
}
