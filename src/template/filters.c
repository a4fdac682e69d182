/* jinja2's filters (`value | name(args)`): the table of all of them,
 * sorted by name, and those of single values, strings and plain lists. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "template/builtins_internal.h"
#include "template/filters_internal.h"
#include "template/text_internal.h"

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

/* --- strings ---------------------------------------------------------------------------- */

static bool f_trim(interp *in, const node *at, jv v, const call_args *a, jv *out) {
    const jv *chars = call_arg(a, 0, "chars");
    const jstr *c = NULL;
    jv s;
    if (chars && chars->type != JV_NONE && !rt_want_str(in, at, chars, "trim characters", &c)) return false;
    return rt_to_str(in, at, v, &s) && str_strip(in, at, s.u.s, c, true, true, out);
}

static bool change_case(interp *in, const node *at, jv v, case_mode mode, jv *out) {
    jv s;
    return rt_to_str(in, at, v, &s) && str_change_case(in, at, s.u.s, mode, out);
}

static bool f_upper(interp *in, const node *at, jv v, const call_args *a, jv *out) {
    (void)a;
    return change_case(in, at, v, CASE_UPPER, out);
}

static bool f_lower(interp *in, const node *at, jv v, const call_args *a, jv *out) {
    (void)a;
    return change_case(in, at, v, CASE_LOWER, out);
}

static bool f_title(interp *in, const node *at, jv v, const call_args *a, jv *out) {
    (void)a;
    return change_case(in, at, v, CASE_TITLE, out);
}

static bool f_capitalize(interp *in, const node *at, jv v, const call_args *a, jv *out) {
    (void)a;
    return change_case(in, at, v, CASE_CAPITALIZE, out);
}

static bool f_replace(interp *in, const node *at, jv v, const call_args *a, jv *out) {
    const jstr *x, *y;
    int64_t n;
    jv s;
    return rt_to_str(in, at, v, &s) && rt_want_str(in, at, call_arg(a, 0, "old"), "replace argument 1", &x) &&
           rt_want_str(in, at, call_arg(a, 1, "new"), "replace argument 2", &y) &&
           rt_want_int(in, at, call_arg(a, 2, "count"), -1, &n) && str_replace(in, at, s.u.s, x, y, n, out);
}

static bool f_center(interp *in, const node *at, jv v, const call_args *a, jv *out) {
    int64_t width;
    jv s;
    return rt_to_str(in, at, v, &s) && rt_want_int(in, at, call_arg(a, 0, "width"), 80, &width) &&
           str_justify(in, at, s.u.s, width, NULL, 'c', out);
}

static bool f_wordcount(interp *in, const node *at, jv v, const call_args *a, jv *out) {
    (void)a;
    jv s, words;
    if (!rt_to_str(in, at, v, &s) || !str_split(in, at, s.u.s, NULL, -1, &words)) return false;
    *out = jv_int((int64_t)words.u.l->n);
    return true;
}

/* keyword arguments make the mapping for %(key)s fields */
static bool f_format(interp *in, const node *at, jv v, const call_args *a, jv *out) {
    jv mapping, s;
    if (a->n_kw && a->n_pos) return rt_error(in, at, "can't handle positional and keyword arguments at the same time");
    if (a->n_kw && !rt_kwargs_dict(in, at, a, JV_DICT, &mapping)) return false;
    return rt_to_str(in, at, v, &s) && percent_format(in, at, s.u.s, a->n_kw ? &mapping : a->pos, a->n_kw ? 1 : a->n_pos, out);
}

static bool f_string(interp *in, const node *at, jv v, const call_args *a, jv *out) {
    (void)a;
    return rt_to_str(in, at, v, out);
}

static bool f_safe(interp *in, const node *at, jv v, const call_args *a, jv *out) {
    (void)a;
    if (!rt_to_str(in, at, v, out)) return false;
    out->markup = true;
    return true;
}

static bool escape(interp *in, const node *at, jv v, bool force, jv *out) {
    if (v.type == JV_STR && v.markup && !force) { /* already safe */
        *out = v;
        return true;
    }
    if (!escape_html(in, at, v, out)) return false;
    out->markup = true;
    return true;
}

static bool f_escape(interp *in, const node *at, jv v, const call_args *a, jv *out) {
    (void)a;
    return escape(in, at, v, false, out);
}

static bool f_forceescape(interp *in, const node *at, jv v, const call_args *a, jv *out) {
    (void)a;
    return escape(in, at, v, true, out);
}

static bool f_pprint(interp *in, const node *at, jv v, const call_args *a, jv *out) {
    (void)a;
    return jv_repr(in->heap, v, out) || rt_oom(in, at);
}

/* transformers' tojson(ensure_ascii=False, indent=None, separators=None, sort_keys=False) */
static bool f_tojson(interp *in, const node *at, jv v, const call_args *a, jv *out) {
    const jv *ascii = call_arg(a, 0, "ensure_ascii"), *ind = call_arg(a, 1, "indent"), *seps = call_arg(a, 2, "separators"),
             *sorted = call_arg(a, 3, "sort_keys");
    int64_t indent_n = -1;
    if (ind && ind->type != JV_NONE && !rt_want_int(in, at, ind, -1, &indent_n)) return false;
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
        return in->heap->exhausted ? rt_oom(in, at) : rt_error(in, at, "Object of type %s is not JSON serializable", jv_type_name(v));
    return true;
}

/* --- numbers ---------------------------------------------------------------------------- */

static bool f_int(interp *in, const node *at, jv v, const call_args *a, jv *out) {
    (void)in, (void)at;
    return number_filter(v, false, call_arg(a, 0, "default"), out);
}

static bool f_float(interp *in, const node *at, jv v, const call_args *a, jv *out) {
    (void)in, (void)at;
    return number_filter(v, true, call_arg(a, 0, "default"), out);
}

static bool f_abs(interp *in, const node *at, jv v, const call_args *a, jv *out) {
    (void)a;
    if (v.type == JV_INT) *out = jv_int(v.u.i < 0 ? -v.u.i : v.u.i);
    else if (v.type == JV_FLOAT) *out = jv_float(fabs(v.u.f));
    else return rt_error(in, at, "bad operand type for abs(): '%s'", jv_type_name(v));
    return true;
}

static bool f_round(interp *in, const node *at, jv v, const call_args *a, jv *out) {
    int64_t precision;
    if (!rt_want_int(in, at, call_arg(a, 0, "precision"), 0, &precision)) return false;
    const jv *method = call_arg(a, 1, "method");
    const char *m = method && method->type == JV_STR ? method->u.s->data : "common";
    if (strcmp(m, "common") && strcmp(m, "ceil") && strcmp(m, "floor")) return rt_error(in, at, "method must be common, ceil or floor");
    return round_number(in, at, v, precision, m[0] == 'c' && m[1] == 'e' ? ROUND_CEIL : m[0] == 'f' ? ROUND_FLOOR : ROUND_HALF_EVEN, out);
}

/* --- any value ---------------------------------------------------------------------------- */

static bool f_default(interp *in, const node *at, jv v, const call_args *a, jv *out) {
    const jv *def = call_arg(a, 0, "default_value"), *boolean = call_arg(a, 1, "boolean");
    bool use_default = v.type == JV_UNDEFINED || (boolean && jv_truthy(*boolean) && !jv_truthy(v));
    if (!use_default) *out = v;
    else if (def) *out = *def;
    else return rt_make_str(in, at, "", 0, out);
    return true;
}

static bool f_length(interp *in, const node *at, jv v, const call_args *a, jv *out) {
    (void)a;
    int64_t n;
    if (!jv_length(in, at, v, &n)) return false;
    *out = jv_int(n);
    return true;
}

/* --- lists ---------------------------------------------------------------------------- */

static bool f_join(interp *in, const node *at, jv v, const call_args *a, jv *out) {
    const jv *sep = call_arg(a, 0, "d"), *attr = call_arg(a, 1, "attribute");
    jv sep_str, items;
    if (sep && !rt_to_str(in, at, *sep, &sep_str)) return false;
    if (attr && attr->type == JV_STR) { /* the items' attributes joined instead */
        if (!jv_iterate(in, at, v, &items)) return false;
        jv attrs = jv_list(in->heap, NULL, items.u.l->n, false);
        if (attrs.type != JV_LIST) return rt_oom(in, at);
        for (size_t i = 0; i < items.u.l->n; i++)
            if (!jv_getattr(in, at, items.u.l->items[i], attr->u.s->data, &((jlist *)attrs.u.l)->items[i])) return false;
        v = attrs;
    }
    return str_join(in, at, v, sep ? sep_str.u.s : NULL, out);
}

static bool f_list(interp *in, const node *at, jv v, const call_args *a, jv *out) {
    (void)a;
    return jv_iterate(in, at, v, out);
}

static bool first_or_last(interp *in, const node *at, jv v, bool last, jv *out) {
    jv items;
    if (!jv_iterate(in, at, v, &items)) return false;
    if (items.u.l->n == 0) *out = jv_undefined("no first/last item of an empty sequence");
    else *out = items.u.l->items[last ? items.u.l->n - 1 : 0];
    return true;
}

static bool f_first(interp *in, const node *at, jv v, const call_args *a, jv *out) {
    (void)a;
    return first_or_last(in, at, v, false, out);
}

static bool f_last(interp *in, const node *at, jv v, const call_args *a, jv *out) {
    (void)a;
    return first_or_last(in, at, v, true, out);
}

static bool f_reverse(interp *in, const node *at, jv v, const call_args *a, jv *out) {
    (void)a;
    if (v.type == JV_STR) {
        jv chars;
        if (!jv_iterate(in, at, v, &chars)) return false;
        jbuf b = {0};
        for (size_t i = chars.u.l->n; i > 0; i--) jv_write_str(&b, chars.u.l->items[i - 1]);
        return rt_buf_result(in, at, &b, out);
    }
    jv items;
    if (!jv_iterate(in, at, v, &items)) return false;
    jv list = jv_list(in->heap, NULL, items.u.l->n, false);
    if (list.type != JV_LIST) return rt_oom(in, at);
    for (size_t i = 0; i < items.u.l->n; i++) ((jlist *)list.u.l)->items[i] = items.u.l->items[items.u.l->n - 1 - i];
    *out = list;
    return true;
}

static bool f_items(interp *in, const node *at, jv v, const call_args *a, jv *out) {
    (void)a;
    if (v.type == JV_UNDEFINED) {
        *out = jv_list(in->heap, NULL, 0, false);
        return out->type == JV_LIST || rt_oom(in, at);
    }
    if (v.type != JV_DICT && v.type != JV_NAMESPACE) return rt_error(in, at, "Can only get item pairs from a mapping.");
    return rt_dict_items(in, at, v.u.d, out);
}

static bool f_map(interp *in, const node *at, jv v, const call_args *a, jv *out) {
    jv items;
    if (!jv_iterate(in, at, jv_truthy(v) ? v : jv_undefined(NULL), &items)) return false; /* as select: none maps to nothing */
    const jv *filter = call_arg(a, 0, NULL), *attr = call_arg(a, SIZE_MAX, "attribute"), *def = call_arg(a, SIZE_MAX, "default");
    jv list = jv_list(in->heap, NULL, items.u.l->n, false);
    if (list.type != JV_LIST) return rt_oom(in, at);
    call_args rest = {a->n_pos > 1 ? a->pos + 1 : NULL, a->n_pos > 1 ? a->n_pos - 1 : 0, NULL, NULL, 0};
    for (size_t i = 0; i < items.u.l->n; i++) {
        jv *dst = &((jlist *)list.u.l)->items[i];
        if (attr) {
            if (attr->type != JV_STR) return rt_error(in, at, "map attribute must be a string");
            if (!jv_getattr(in, at, items.u.l->items[i], attr->u.s->data, dst)) return false;
            if (dst->type == JV_UNDEFINED && def) *dst = *def;
        } else if (filter && filter->type == JV_STR) {
            if (!builtin_filter(in, at, filter->u.s->data, items.u.l->items[i], &rest, dst)) return false;
        } else {
            return rt_error(in, at, "map needs a filter name or attribute=");
        }
    }
    *out = list;
    return true;
}

static bool f_sum(interp *in, const node *at, jv v, const call_args *a, jv *out) {
    const jv *first = call_arg(a, 0, NULL);
    jv items, total = first ? *first : jv_int(0);
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

/* --- the table ---------------------------------------------------------------------------- */

static const struct filter {
    const char *name;
    filter_fn *fn;
} filters[] = {
    {"abs", f_abs},
    {"batch", filter_batch},
    {"capitalize", f_capitalize},
    {"center", f_center},
    {"count", f_length},
    {"d", f_default},
    {"default", f_default},
    {"dictsort", filter_dictsort},
    {"e", f_escape},
    {"escape", f_escape},
    {"filesizeformat", filter_filesizeformat},
    {"first", f_first},
    {"float", f_float},
    {"forceescape", f_forceescape},
    {"format", f_format},
    {"groupby", filter_groupby},
    {"indent", filter_indent},
    {"int", f_int},
    {"items", f_items},
    {"join", f_join},
    {"last", f_last},
    {"length", f_length},
    {"list", f_list},
    {"lower", f_lower},
    {"map", f_map},
    {"max", filter_max},
    {"min", filter_min},
    {"pprint", f_pprint},
    {"reject", filter_reject},
    {"rejectattr", filter_rejectattr},
    {"replace", f_replace},
    {"reverse", f_reverse},
    {"round", f_round},
    {"safe", f_safe},
    {"select", filter_select},
    {"selectattr", filter_selectattr},
    {"slice", filter_slice},
    {"sort", filter_sort},
    {"string", f_string},
    {"striptags", filter_striptags},
    {"sum", f_sum},
    {"title", f_title},
    {"tojson", f_tojson},
    {"trim", f_trim},
    {"truncate", filter_truncate},
    {"unique", filter_unique},
    {"upper", f_upper},
    {"urlencode", filter_urlencode},
    {"wordcount", f_wordcount},
    {"wordwrap", filter_wordwrap},
};

bool builtin_filter(interp *in, const node *at, const char *name, jv v, const call_args *a, jv *out) {
    const struct filter *f = rt_find_name(filters, sizeof filters / sizeof filters[0], sizeof *filters, name);
    if (!f) return rt_error(in, at, "No filter named '%s'.", name);
    return f->fn(in, at, v, a, out);
}
