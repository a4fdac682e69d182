/* The global functions: transformers' raise_exception and strftime_now,
 * and jinja2's namespace, range, dict, joiner and cycler (with the bound
 * functions their objects carry: loop.cycle, a joiner, a cycler's next
 * and reset). Calls of bound methods go on to methods.c. */
#include <math.h>
#include <string.h>
#include <time.h>

#include "template/builtins_internal.h"

typedef bool global_fn(interp *in, const node *at, jv fn, const call_args *a, jv *out);

/* d[name] = v, for the state of joiners and cyclers. */
static bool set_field(interp *in, const node *at, jv d, const char *name, jv v) {
    jv key;
    return rt_make_str(in, at, name, strlen(name), &key) && (jv_dict_set(in->heap, d.u.d, key, v) || rt_oom(in, at));
}

static bool g_raise_exception(interp *in, const node *at, jv fn, const call_args *a, jv *out) {
    (void)fn, (void)out;
    jv msg = jv_none();
    const jv *m = call_arg(a, 0, "message");
    if (m && !rt_to_str(in, at, *m, &msg)) return false;
    rt_error(in, at, "%s", m ? msg.u.s->data : "");
    in->err->raised = true;
    return false;
}

static bool g_strftime_now(interp *in, const node *at, jv fn, const call_args *a, jv *out) {
    (void)fn;
    const jstr *f;
    if (!rt_want_str(in, at, call_arg(a, 0, "format"), "strftime_now format", &f)) return false;
    char buf[512];
    size_t n = f->len ? strftime(buf, sizeof buf, f->data, in->now) : 0;
    return rt_make_str(in, at, buf, n, out);
}

static bool g_loop_cycle(interp *in, const node *at, jv fn, const call_args *a, jv *out) {
    if (a->n_pos == 0) return rt_error(in, at, "no items for cycling given");
    const jv *index0 = jv_dict_get(fn.u.fn.self->u.d, "index0", 6);
    *out = a->pos[(size_t)(index0 && index0->type == JV_INT ? index0->u.i : 0) % a->n_pos];
    return true;
}

/* joiner(sep=", "): "" the first time it is called, sep after */
static bool g_joiner(interp *in, const node *at, jv fn, const call_args *a, jv *out) {
    (void)fn;
    const jv *sep = call_arg(a, 0, "sep");
    jv state = jv_dict(in->heap, 2), *self = jv_alloc(in->heap, sizeof *self);
    if (state.type != JV_DICT || !self) return rt_oom(in, at);
    jv sep_value;
    if (sep) sep_value = *sep;
    else if (!rt_make_str(in, at, ", ", 2, &sep_value)) return false;
    if (!set_field(in, at, state, "sep", sep_value) || !set_field(in, at, state, "used", jv_bool(false))) return false;
    state.type = JV_NAMESPACE;
    *self = state;
    *out = (jv){.type = JV_BUILTIN, .u.fn = {B_JOINER_CALL, self}};
    return true;
}

static bool g_joiner_call(interp *in, const node *at, jv fn, const call_args *a, jv *out) {
    (void)a;
    jv *used = (jv *)jv_dict_get(fn.u.fn.self->u.d, "used", 4);
    const jv *sep = jv_dict_get(fn.u.fn.self->u.d, "sep", 3);
    if (used && used->u.b) {
        *out = sep ? *sep : jv_none();
        return true;
    }
    if (used) *used = jv_bool(true);
    return rt_make_str(in, at, "", 0, out);
}

/* cycler(*items): next() gives them in turn, current the one next() gives next */
static bool g_cycler(interp *in, const node *at, jv fn, const call_args *a, jv *out) {
    (void)fn;
    if (a->n_pos == 0) return rt_error(in, at, "at least one item has to be provided");
    jv state = jv_dict(in->heap, 5), *self = jv_alloc(in->heap, sizeof *self);
    if (state.type != JV_DICT || !self) return rt_oom(in, at);
    jv items = jv_list(in->heap, a->pos, a->n_pos, true);
    if (items.type != JV_TUPLE) return rt_oom(in, at);
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

static bool cycler_step(interp *in, const node *at, jv fn, bool next, jv *out) {
    jdict *d = fn.u.fn.self->u.d;
    jv *pos = (jv *)jv_dict_get(d, "pos", 3), *current = (jv *)jv_dict_get(d, "current", 7);
    const jv *items = jv_dict_get(d, "items", 5);
    if (!pos || !current || !items) return rt_error(in, at, "internal error: a broken cycler");
    const int64_t n = (int64_t)items->u.l->n;
    *out = next ? items->u.l->items[pos->u.i] : jv_none();
    pos->u.i = next ? (pos->u.i + 1) % n : 0;
    *current = items->u.l->items[pos->u.i];
    return true;
}

static bool g_cycler_next(interp *in, const node *at, jv fn, const call_args *a, jv *out) {
    (void)a;
    return cycler_step(in, at, fn, true, out);
}

static bool g_cycler_reset(interp *in, const node *at, jv fn, const call_args *a, jv *out) {
    (void)a;
    return cycler_step(in, at, fn, false, out);
}

static bool g_namespace(interp *in, const node *at, jv fn, const call_args *a, jv *out) {
    (void)fn;
    return rt_kwargs_dict(in, at, a, JV_NAMESPACE, out);
}

static bool g_dict(interp *in, const node *at, jv fn, const call_args *a, jv *out) {
    (void)fn;
    return rt_kwargs_dict(in, at, a, JV_DICT, out);
}

static bool g_range(interp *in, const node *at, jv fn, const call_args *a, jv *out) {
    (void)fn;
    int64_t start = 0, stop = 0, stepv = 1;
    if (a->n_pos == 1) {
        if (!rt_want_int(in, at, &a->pos[0], 0, &stop)) return false;
    } else if (a->n_pos == 2 || a->n_pos == 3) {
        if (!rt_want_int(in, at, &a->pos[0], 0, &start) || !rt_want_int(in, at, &a->pos[1], 0, &stop) ||
            (a->n_pos == 3 && !rt_want_int(in, at, &a->pos[2], 1, &stepv)))
            return false;
    } else {
        return rt_error(in, at, "range expected 1 to 3 arguments, got %zu", a->n_pos);
    }
    if (stepv == 0) return rt_error(in, at, "range() arg 3 must not be zero");
    double count = ceil(((double)stop - (double)start) / (double)stepv);
    if (count < 0) count = 0;
    if (count > 1e6) return rt_error(in, at, "range of %.0f items is too large", count);
    jv list = jv_list(in->heap, NULL, (size_t)count, false);
    if (list.type != JV_LIST) return rt_oom(in, at);
    for (size_t i = 0; i < (size_t)count; i++) ((jlist *)list.u.l)->items[i] = jv_int(start + (int64_t)i * stepv);
    *out = list;
    return true;
}

static global_fn *const globals_by_id[B_FIRST_METHOD] = {
    [B_RAISE_EXCEPTION] = g_raise_exception,
    [B_STRFTIME_NOW] = g_strftime_now,
    [B_NAMESPACE] = g_namespace,
    [B_RANGE] = g_range,
    [B_DICT] = g_dict,
    [B_LOOP_CYCLE] = g_loop_cycle,
    [B_JOINER] = g_joiner,
    [B_JOINER_CALL] = g_joiner_call,
    [B_CYCLER] = g_cycler,
    [B_CYCLER_NEXT] = g_cycler_next,
    [B_CYCLER_RESET] = g_cycler_reset,
};

/* the names a template sees; the bound functions have none */
static const struct global_name {
    const char *name;
    int id;
} global_names[] = {
    {"cycler", B_CYCLER},
    {"dict", B_DICT},
    {"joiner", B_JOINER},
    {"namespace", B_NAMESPACE},
    {"raise_exception", B_RAISE_EXCEPTION},
    {"range", B_RANGE},
    {"strftime_now", B_STRFTIME_NOW},
};

int builtin_global(const char *name) {
    const struct global_name *g = rt_find_name(global_names, sizeof global_names / sizeof global_names[0], sizeof *global_names, name);
    return g ? g->id : 0;
}

bool builtin_call(interp *in, const node *at, jv fn, const call_args *a, jv *out) {
    const int id = fn.u.fn.id;
    if (id >= B_FIRST_METHOD) return method_call(in, at, id, *fn.u.fn.self, a, out);
    if (id <= 0 || !globals_by_id[id]) return rt_error(in, at, "internal error: unknown builtin %d", id);
    return globals_by_id[id](in, at, fn, a, out);
}
