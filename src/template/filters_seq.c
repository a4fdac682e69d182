/* The filters of sequences: select and reject, sort, dictsort, unique,
 * min and max, batch and slice, groupby. Sorts are stable, as Python's. */
#include <string.h>

#include "template/builtins_internal.h"
#include "template/filters_internal.h"
#include "template/text_internal.h"

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
    if (list.type != JV_LIST) return rt_oom(in, at);
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
        if (str_change_case(in, at, x.u.s, CASE_LOWER, &lx) && str_change_case(in, at, y.u.s, CASE_LOWER, &ly)) {
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
    if (list->type != JV_LIST || !*keys) return rt_oom(in, at);
    for (size_t i = 0; i < n; i++) {
        (*keys)[i] = list->u.l->items[i];
        if (attr && attr->type == JV_STR && !jv_getattr(in, at, list->u.l->items[i], attr->u.s->data, &(*keys)[i])) return false;
    }
    return true;
}

bool filter_sort(interp *in, const node *at, jv seq, const call_args *a, jv *out) {
    const jv *rev = call_arg(a, 0, "reverse"), *cs = call_arg(a, 1, "case_sensitive"), *attr = call_arg(a, 2, "attribute");
    jv *keys;
    if (!items_and_keys(in, at, seq, attr, out, &keys)) return false;
    return sort_by_keys(in, at, ((jlist *)out->u.l)->items, keys, out->u.l->n, rev && jv_truthy(*rev), cs && jv_truthy(*cs));
}

/* dictsort(case_sensitive=false, by='key', reverse=false): the (key, value)
 * pairs sorted by the one or the other. */
bool filter_dictsort(interp *in, const node *at, jv d, const call_args *a, jv *out) {
    if (d.type != JV_DICT && d.type != JV_NAMESPACE) return rt_error(in, at, "dictsort needs a mapping");
    const jv *cs = call_arg(a, 0, "case_sensitive"), *by = call_arg(a, 1, "by"), *rev = call_arg(a, 2, "reverse");
    int pos = 0;
    if (by && (by->type != JV_STR || (strcmp(by->u.s->data, "key") && strcmp(by->u.s->data, "value"))))
        return rt_error(in, at, "You can only sort by either \"key\" or \"value\"");
    if (by && !strcmp(by->u.s->data, "value")) pos = 1;
    const size_t n = d.u.d->n;
    jv *keys = jv_alloc(in->heap, n * sizeof(jv) + 1);
    if (!keys || !rt_dict_items(in, at, d.u.d, out)) return keys ? false : rt_oom(in, at);
    for (size_t i = 0; i < n; i++) keys[i] = pos ? d.u.d->values[i] : d.u.d->keys[i];
    return sort_by_keys(in, at, ((jlist *)out->u.l)->items, keys, n, rev && jv_truthy(*rev), cs && jv_truthy(*cs));
}

/* unique(case_sensitive=false, attribute=none): the first of each */
bool filter_unique(interp *in, const node *at, jv v, const call_args *a, jv *out) {
    const jv *cs = call_arg(a, 0, "case_sensitive"), *attr = call_arg(a, 1, "attribute");
    const bool case_sensitive = cs && jv_truthy(*cs);
    jv list, *keys;
    if (!items_and_keys(in, at, v, attr, &list, &keys)) return false;
    size_t k = 0;
    for (size_t i = 0; i < list.u.l->n; i++) {
        if (!case_sensitive && keys[i].type == JV_STR && !str_change_case(in, at, keys[i].u.s, CASE_LOWER, &keys[i])) return false;
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
    if (!jv_iterate(in, at, seq, &items) || !rt_want_int(in, at, call_arg(a, 0, into_count ? "slices" : "linecount"), 0, &count))
        return false;
    if (fill && fill->type == JV_NONE) fill = NULL;
    const size_t n = items.u.l->n;
    if (count < 1 || count > (int64_t)in->limits->max_output)
        return rt_error(in, at, "%s must be a positive count", into_count ? "slices" : "linecount");
    const size_t per = into_count ? n / (size_t)count : (size_t)count, extra = into_count ? n % (size_t)count : 0;
    const size_t groups = into_count ? (size_t)count : (n + per - 1) / per;
    jv list = jv_list(in->heap, NULL, groups, false);
    if (list.type != JV_LIST) return rt_oom(in, at);
    for (size_t g = 0, start = 0; g < groups; g++) {
        const size_t len = into_count ? per + (g < extra) : (n - start < per ? n - start : per);
        const bool padded = fill && (into_count ? g >= extra : len < per);
        jv group = jv_list(in->heap, NULL, len + padded * (into_count ? 1 : per - len), false);
        if (group.type != JV_LIST) return rt_oom(in, at);
        for (size_t k = 0; k < group.u.l->n; k++) ((jlist *)group.u.l)->items[k] = k < len ? items.u.l->items[start + k] : *fill;
        ((jlist *)list.u.l)->items[g] = group;
        start += len;
    }
    *out = list;
    return true;
}

/* groupby(attribute, default=none, case_sensitive=false): (key, items)
 * tuples, sorted by key; a group's key is as its first item spells it. */
bool filter_groupby(interp *in, const node *at, jv seq, const call_args *a, jv *out) {
    const jv *attr = call_arg(a, 0, "attribute"), *def = call_arg(a, 1, "default"), *cs = call_arg(a, 2, "case_sensitive");
    if (!attr || attr->type != JV_STR) return rt_error(in, at, "groupby needs an attribute name");
    const bool case_sensitive = cs && jv_truthy(*cs);
    jv list, *keys;
    if (!items_and_keys(in, at, seq, attr, &list, &keys)) return false;
    const size_t n = list.u.l->n;
    jv *spelt = jv_alloc(in->heap, n * sizeof(jv) + 1);
    if (!spelt) return rt_oom(in, at);
    for (size_t i = 0; i < n; i++) {
        if (keys[i].type == JV_UNDEFINED && def) keys[i] = *def;
        spelt[i] = keys[i];
        if (!case_sensitive && keys[i].type == JV_STR && !str_change_case(in, at, keys[i].u.s, CASE_LOWER, &keys[i])) return false;
    }
    jv *v = ((jlist *)list.u.l)->items;
    /* sort items, case-folded keys and spellings together: by index through the keys */
    jv *order = jv_alloc(in->heap, n * sizeof(jv) + 1);
    if (!order) return rt_oom(in, at);
    for (size_t i = 0; i < n; i++) order[i] = jv_int((int64_t)i);
    if (!sort_by_keys(in, at, order, keys, n, false, true)) return false;
    jv groups = jv_list(in->heap, NULL, n, false);
    if (groups.type != JV_LIST) return rt_oom(in, at);
    size_t n_groups = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && jv_equal(keys[j], keys[i])) j++;
        jv members = jv_list(in->heap, NULL, j - i, false);
        if (members.type != JV_LIST) return rt_oom(in, at);
        for (size_t k = i; k < j; k++) ((jlist *)members.u.l)->items[k - i] = v[order[k].u.i];
        jv pair[2] = {spelt[order[i].u.i], members};
        ((jlist *)groups.u.l)->items[n_groups++] = jv_list(in->heap, pair, 2, true);
        if (groups.u.l->items[n_groups - 1].type != JV_TUPLE) return rt_oom(in, at);
        i = j;
    }
    ((jlist *)groups.u.l)->n = n_groups;
    *out = groups;
    return true;
}

bool filter_select(interp *in, const node *at, jv v, const call_args *a, jv *out) { return select_items(in, at, v, a, false, true, out); }
bool filter_reject(interp *in, const node *at, jv v, const call_args *a, jv *out) { return select_items(in, at, v, a, false, false, out); }
bool filter_selectattr(interp *in, const node *at, jv v, const call_args *a, jv *out) {
    return select_items(in, at, v, a, true, true, out);
}
bool filter_rejectattr(interp *in, const node *at, jv v, const call_args *a, jv *out) {
    return select_items(in, at, v, a, true, false, out);
}

bool filter_min(interp *in, const node *at, jv v, const call_args *a, jv *out) {
    (void)a;
    return min_max(in, at, v, false, out);
}

bool filter_max(interp *in, const node *at, jv v, const call_args *a, jv *out) {
    (void)a;
    return min_max(in, at, v, true, out);
}

bool filter_batch(interp *in, const node *at, jv v, const call_args *a, jv *out) { return chunk_items(in, at, v, a, false, out); }
bool filter_slice(interp *in, const node *at, jv v, const call_args *a, jv *out) { return chunk_items(in, at, v, a, true, out); }
