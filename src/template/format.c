/* Python's printf-style formatting: `str % args` and the format filter. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "template/text_internal.h"

/* Widths and precisions past this are refused: a hostile "%999999999s"
 * would otherwise ask for a gigabyte of padding. */
enum { MAX_FORMAT_WIDTH = 4096 };

/* The number a numeric conversion takes (bools and floats as Python
 * coerces them); false for anything else. */
static bool format_number(jv v, bool want_int, int64_t *i, double *f) {
    if (v.type == JV_BOOL) *i = v.u.b, *f = v.u.b;
    else if (v.type == JV_INT) *i = v.u.i, *f = (double)v.u.i;
    else if (v.type == JV_FLOAT) {
        const bool fits = fabs(v.u.f) < 9.2e18; /* not NaN, inf or past int64 */
        if (want_int && !fits) return false;
        *f = v.u.f, *i = fits ? (int64_t)v.u.f : 0; /* *i is read only where want_int */
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
                return rt_oom(in, at);
            }
            if (conv == 'c' && tpl_char_count(text.u.s->data, text.u.s->len) != 1) {
                err = "%c requires an int or a unicode character";
                break;
            }
            /* the precision and width count characters, not bytes */
            size_t n = text.u.s->len, chars = tpl_char_count(text.u.s->data, n);
            if (precision >= 0 && chars > (size_t)precision) {
                size_t cut = 0, cl;
                for (int c = 0; c < precision; c++, cut += cl) tpl_decode(text.u.s->data + cut, n - cut, &cl);
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
            tpl_put_cp(&b, (int32_t)iv);
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
    return rt_buf_result(in, at, &b, out);
}
