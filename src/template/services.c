/* The interpreter's services to the built-in library: errors, arguments,
 * results on the render's heap, and the parts of Python's object protocol
 * that need no method (comparison, iteration, length). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "template/text_internal.h"

/* --- errors ---------------------------------------------------------------------------- */

bool rt_error(interp *in, const node *at, const char *fmt, ...) {
    if (!in->failed) {
        in->failed = true;
        in->err->status = SPROUT_ERR_FORMAT;
        in->err->line = at ? at->line : 0;
        in->err->column = at ? at->column : 0;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(in->err->message, sizeof in->err->message, fmt, ap);
        va_end(ap);
    }
    return false;
}

bool rt_undefined(interp *in, const node *at, jv u) {
    return rt_error(in, at, "%s", u.u.undefined_hint ? u.u.undefined_hint : "value is undefined");
}

/* The render's heap at its limit is the template's doing; any other
 * failed allocation (the heap's own, or a buffer of a filter's) is the
 * machine's, and says so with its own status. */
bool rt_oom(interp *in, const node *at) {
    if (in->heap->exhausted && !in->heap->out_of_memory) return rt_error(in, at, "template needs too much memory");
    const bool first = !in->failed;
    rt_error(in, at, "out of memory");
    if (first) in->err->status = SPROUT_ERR_OUT_OF_MEMORY;
    return false;
}

/* --- arguments and results --------------------------------------------------------------- */

const jv *call_arg(const call_args *a, size_t i, const char *name) {
    if (i < a->n_pos) return &a->pos[i];
    for (size_t k = 0; name && k < a->n_kw; k++)
        if (!strcmp(a->kw_names[k], name)) return &a->kw[k];
    return NULL;
}

bool rt_make_str(interp *in, const node *at, const char *s, size_t n, jv *out) {
    *out = jv_str(in->heap, s, n);
    return out->type == JV_STR || rt_oom(in, at);
}

bool rt_buf_result(interp *in, const node *at, jbuf *b, jv *out) {
    bool ok = !b->oom && rt_make_str(in, at, b->data, b->len, out);
    jbuf_free(b);
    return ok || rt_oom(in, at);
}

bool rt_to_str(interp *in, const node *at, jv v, jv *out) { return jv_to_str(in->heap, v, out) || rt_oom(in, at); }

bool rt_want_str(interp *in, const node *at, const jv *v, const char *what, const jstr **out) {
    *out = NULL;
    if (!v || v->type != JV_STR) return rt_error(in, at, "%s must be a string, not %s", what, v ? jv_type_name(*v) : "nothing");
    *out = v->u.s;
    return true;
}

bool rt_want_int(interp *in, const node *at, const jv *v, int64_t fallback, int64_t *out) {
    *out = fallback;
    if (!v || v->type == JV_NONE) *out = fallback;
    else if (v->type == JV_INT) *out = v->u.i;
    else if (v->type == JV_BOOL) *out = v->u.b;
    else return rt_error(in, at, "an integer is required, not %s", jv_type_name(*v));
    return true;
}

bool rt_dict_items(interp *in, const node *at, const jdict *d, jv *out) {
    jv list = jv_list(in->heap, NULL, d->n, false);
    if (list.type != JV_LIST) return rt_oom(in, at);
    for (size_t i = 0; i < d->n; i++) {
        jv pair[2] = {d->keys[i], d->values[i]};
        ((jlist *)list.u.l)->items[i] = jv_list(in->heap, pair, 2, true);
        if (list.u.l->items[i].type != JV_TUPLE) return rt_oom(in, at);
    }
    *out = list;
    return true;
}

bool rt_kwargs_dict(interp *in, const node *at, const call_args *a, jv_type type, jv *out) {
    jv d = jv_dict(in->heap, a->n_kw + 4);
    if (d.type != JV_DICT) return rt_oom(in, at);
    if (a->n_pos == 1 && (a->pos[0].type == JV_DICT || a->pos[0].type == JV_NAMESPACE)) {
        for (size_t i = 0; i < a->pos[0].u.d->n; i++)
            if (!jv_dict_set(in->heap, d.u.d, a->pos[0].u.d->keys[i], a->pos[0].u.d->values[i])) return rt_oom(in, at);
    } else if (a->n_pos) {
        return rt_error(in, at, "%s() takes keyword arguments (or one mapping)", type == JV_NAMESPACE ? "namespace" : "dict");
    }
    for (size_t i = 0; i < a->n_kw; i++) {
        jv key;
        if (!rt_make_str(in, at, a->kw_names[i], strlen(a->kw_names[i]), &key)) return false;
        if (!jv_dict_set(in->heap, d.u.d, key, a->kw[i])) return rt_oom(in, at);
    }
    d.type = type;
    *out = d;
    return true;
}

static int compare_names(const void *key, const void *entry) { return strcmp(key, *(const char *const *)entry); }

/* A table out of order would lose names to the binary search: test_template
 * calls every filter, method, test and global by name, so it would fail. */
const void *rt_find_name(const void *table, size_t n, size_t size, const char *name) {
    return bsearch(name, table, n, size, compare_names);
}

/* --- Python's object protocol ---------------------------------------------------------------- */

bool jv_less(interp *in, const node *at, jv a, jv b, bool *out) {
    bool an = a.type == JV_INT || a.type == JV_FLOAT || a.type == JV_BOOL;
    bool bn = b.type == JV_INT || b.type == JV_FLOAT || b.type == JV_BOOL;
    if (an && bn) {
        if (a.type != JV_FLOAT && b.type != JV_FLOAT) {
            int64_t x = a.type == JV_INT ? a.u.i : a.u.b, y = b.type == JV_INT ? b.u.i : b.u.b;
            *out = x < y;
        } else {
            double x = a.type == JV_FLOAT ? a.u.f : a.type == JV_INT ? (double)a.u.i : a.u.b;
            double y = b.type == JV_FLOAT ? b.u.f : b.type == JV_INT ? (double)b.u.i : b.u.b;
            *out = x < y;
        }
        return true;
    }
    if (a.type == JV_STR && b.type == JV_STR) {
        size_t m = a.u.s->len < b.u.s->len ? a.u.s->len : b.u.s->len;
        int c = memcmp(a.u.s->data, b.u.s->data, m);
        *out = c < 0 || (c == 0 && a.u.s->len < b.u.s->len);
        return true;
    }
    if ((a.type == JV_LIST && b.type == JV_LIST) || (a.type == JV_TUPLE && b.type == JV_TUPLE)) {
        for (size_t i = 0; i < a.u.l->n && i < b.u.l->n; i++) {
            if (jv_equal(a.u.l->items[i], b.u.l->items[i])) continue;
            return jv_less(in, at, a.u.l->items[i], b.u.l->items[i], out);
        }
        *out = a.u.l->n < b.u.l->n;
        return true;
    }
    if (a.type == JV_UNDEFINED) return rt_undefined(in, at, a);
    if (b.type == JV_UNDEFINED) return rt_undefined(in, at, b);
    return rt_error(in, at, "'<' not supported between instances of '%s' and '%s'", jv_type_name(a), jv_type_name(b));
}

bool jv_iterate(interp *in, const node *at, jv v, jv *out) {
    switch (v.type) {
    case JV_UNDEFINED: *out = jv_list(in->heap, NULL, 0, false); break;
    case JV_LIST:
    case JV_TUPLE: *out = v; return true;
    case JV_DICT:
    case JV_NAMESPACE: *out = jv_list(in->heap, v.u.d->keys, v.u.d->n, false); break;
    case JV_STR: {
        const size_t count = tpl_char_count(v.u.s->data, v.u.s->len);
        *out = jv_list(in->heap, NULL, count, false);
        if (out->type != JV_LIST) return rt_oom(in, at);
        size_t k = 0;
        for (size_t i = 0; i < v.u.s->len;) {
            size_t cl;
            tpl_decode(v.u.s->data + i, v.u.s->len - i, &cl);
            if (!rt_make_str(in, at, v.u.s->data + i, cl, &((jlist *)out->u.l)->items[k++])) return false;
            i += cl;
        }
        return true;
    }
    default: return rt_error(in, at, "'%s' object is not iterable", jv_type_name(v));
    }
    return out->type == JV_LIST || rt_oom(in, at);
}

bool jv_length(interp *in, const node *at, jv v, int64_t *out) {
    *out = 0;
    switch (v.type) {
    case JV_UNDEFINED: *out = 0; return true;
    case JV_STR: {
        *out = (int64_t)tpl_char_count(v.u.s->data, v.u.s->len);
        return true;
    }
    case JV_LIST:
    case JV_TUPLE: *out = (int64_t)v.u.l->n; return true;
    case JV_DICT:
    case JV_NAMESPACE: *out = (int64_t)v.u.d->n; return true;
    default: return rt_error(in, at, "object of type '%s' has no len()", jv_type_name(v));
    }
}
