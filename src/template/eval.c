/* The tree-walking interpreter: expressions to values, statements to output,
 * with jinja2's scoping (a for loop or macro body is a scope; if is not) and
 * its Undefined rules. Every step counts against the limits. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "template/builtins_internal.h"
#include "template/text_internal.h"

struct scope {
    scope *parent;
    jdict *vars;
};

typedef enum flow { FLOW_NORMAL, FLOW_BREAK, FLOW_CONTINUE, FLOW_ERROR } flow;

static bool step(interp *in, const node *at) {
    if (in->failed) return false;
    if (++in->steps > in->limits->max_steps)
        return rt_error(in, at, "template evaluation stopped after %llu steps (a loop that does not end?)",
                        (unsigned long long)in->limits->max_steps);
    if (in->heap->out_of_memory) return rt_oom(in, at);
    if (in->heap->exhausted) return rt_error(in, at, "template needs more than %zu bytes of memory", in->limits->max_heap);
    return true;
}

/* --- variables ----------------------------------------------------------------------- */

static scope *new_scope(interp *in, scope *parent) {
    scope *s = jv_alloc(in->heap, sizeof *s);
    jv d = jv_dict(in->heap, 8);
    if (!s || d.type != JV_DICT) return NULL;
    s->parent = parent;
    s->vars = d.u.d;
    return s;
}

static bool lookup(interp *in, scope *s, const char *name, jv *out) {
    size_t len = strlen(name);
    for (; s; s = s->parent) {
        const jv *v = jv_dict_get(s->vars, name, len);
        if (v) {
            *out = *v;
            return true;
        }
    }
    int g = builtin_global(name);
    if (g) {
        *out = (jv){.type = JV_BUILTIN, .u.fn = {g, NULL}};
        return true;
    }
    char *hint = jv_alloc(in->heap, len + 32);
    if (hint) snprintf(hint, len + 32, "'%s' is undefined", name);
    *out = jv_undefined(hint);
    return true;
}

/* Assigning an existing name updates it in place: a loop that reassigns
 * its variables must not allocate on every iteration. */
static bool assign(interp *in, const node *at, scope *s, const char *name, jv v) {
    jv *slot = (jv *)jv_dict_get(s->vars, name, strlen(name));
    if (slot) {
        *slot = v;
        return true;
    }
    jv key = jv_cstr(in->heap, name);
    if (key.type != JV_STR || !jv_dict_set(in->heap, s->vars, key, v)) return rt_oom(in, at);
    return true;
}

/* --- expressions ----------------------------------------------------------------------- */

static bool eval(interp *in, scope *s, const node *n, jv *out);

static bool eval_list(interp *in, scope *s, const node_list *l, jv *out, bool tuple) {
    jv v = jv_list(in->heap, NULL, l->n, tuple);
    if (v.type == JV_UNDEFINED) return rt_oom(in, NULL);
    jlist *items = (jlist *)v.u.l;
    for (size_t i = 0; i < l->n; i++)
        if (!eval(in, s, l->items[i], &items->items[i])) return false;
    *out = v;
    return true;
}

static bool as_int(jv v, int64_t *out) {
    if (v.type == JV_INT) *out = v.u.i;
    else if (v.type == JV_BOOL) *out = v.u.b;
    else return false;
    return true;
}

/* Code point offsets of a UTF-8 string (n + 1 entries). */
static size_t *char_offsets(interp *in, const jstr *s, size_t *n) {
    size_t count = 0;
    for (size_t i = 0; i < s->len; i++) count += ((unsigned char)s->data[i] & 0xC0) != 0x80;
    size_t *off = jv_alloc(in->heap, (count + 1) * sizeof *off);
    if (!off) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < s->len; i++)
        if (((unsigned char)s->data[i] & 0xC0) != 0x80) off[k++] = i;
    off[k] = s->len;
    *n = count;
    return off;
}

/* Python's slice.indices(). */
static void slice_indices(int64_t len, const jv *start, const jv *stop, int64_t step, int64_t *b, int64_t *e) {
    int64_t lo = step < 0 ? -1 : 0, hi = step < 0 ? len - 1 : len;
    *b = step < 0 ? hi : lo;
    *e = step < 0 ? lo : hi;
    if (start && start->type != JV_NONE) {
        int64_t v = start->type == JV_INT ? start->u.i : start->u.b;
        if (v < 0) v += len;
        *b = v < lo ? lo : v > hi ? hi : v;
    }
    if (stop && stop->type != JV_NONE) {
        int64_t v = stop->type == JV_INT ? stop->u.i : stop->u.b;
        if (v < 0) v += len;
        *e = v < lo ? lo : v > hi ? hi : v;
    }
}

static bool eval_slice(interp *in, scope *s, const node *n, jv *out) {
    jv obj, parts[3] = {jv_none(), jv_none(), jv_none()};
    const node *pn[3] = {n->u.slice.start, n->u.slice.stop, n->u.slice.step};
    if (!eval(in, s, n->u.slice.obj, &obj)) return false;
    for (int k = 0; k < 3; k++) {
        if (pn[k] && !eval(in, s, pn[k], &parts[k])) return false;
        int64_t dummy;
        if (parts[k].type != JV_NONE && !as_int(parts[k], &dummy))
            return rt_error(in, n, "slice indices must be integers or None, not %s", jv_type_name(parts[k]));
    }
    int64_t stepv = 1;
    if (parts[2].type != JV_NONE) as_int(parts[2], &stepv);
    if (stepv == 0) return rt_error(in, n, "slice step cannot be zero");
    if (obj.type == JV_UNDEFINED) {
        *out = obj; /* jinja2: slicing Undefined gives Undefined */
        return true;
    }
    if (obj.type == JV_LIST || obj.type == JV_TUPLE || obj.type == JV_STR) {
        size_t n_items = 0, *off = NULL;
        if (obj.type == JV_STR) {
            if (!(off = char_offsets(in, obj.u.s, &n_items))) return rt_oom(in, n);
        } else n_items = obj.u.l->n;
        int64_t b, e;
        slice_indices((int64_t)n_items, &parts[0], &parts[1], stepv, &b, &e);
        size_t count = 0;
        for (int64_t i = b; stepv > 0 ? i < e : i > e; i += stepv) count++;
        if (obj.type == JV_STR) {
            jbuf buf = {0};
            for (int64_t i = b; stepv > 0 ? i < e : i > e; i += stepv) jbuf_put(&buf, obj.u.s->data + off[i], off[i + 1] - off[i]);
            *out = jv_str(in->heap, buf.data, buf.len);
            jbuf_free(&buf);
            return out->type == JV_STR || rt_oom(in, n);
        }
        jv r = jv_list(in->heap, NULL, count, obj.type == JV_TUPLE);
        if (r.type == JV_UNDEFINED) return rt_oom(in, n);
        size_t k = 0;
        for (int64_t i = b; stepv > 0 ? i < e : i > e; i += stepv) ((jlist *)r.u.l)->items[k++] = obj.u.l->items[i];
        *out = r;
        return true;
    }
    return rt_error(in, n, "'%s' object is not subscriptable", jv_type_name(obj));
}

static bool contains(interp *in, const node *at, jv needle, jv hay, bool *out) {
    switch (hay.type) {
    case JV_UNDEFINED: *out = false; return true;
    case JV_STR:
        if (needle.type != JV_STR)
            return rt_error(in, at, "'in <string>' requires string as left operand, not %s", jv_type_name(needle));
        *out = needle.u.s->len == 0 || memmem(hay.u.s->data, hay.u.s->len, needle.u.s->data, needle.u.s->len) != NULL;
        return true;
    case JV_LIST:
    case JV_TUPLE:
        *out = false;
        for (size_t i = 0; i < hay.u.l->n && !*out; i++) *out = jv_equal(needle, hay.u.l->items[i]);
        return true;
    case JV_DICT:
    case JV_NAMESPACE: *out = jv_dict_get_value(hay.u.d, needle) != NULL; return true;
    default: return rt_error(in, at, "argument of type '%s' is not iterable", jv_type_name(hay));
    }
}

static bool concat_lists(interp *in, const node *at, jv a, jv b, jv *out) {
    jv r = jv_list(in->heap, NULL, a.u.l->n + b.u.l->n, a.type == JV_TUPLE);
    if (r.type == JV_UNDEFINED) return rt_oom(in, at);
    memcpy(((jlist *)r.u.l)->items, a.u.l->items, a.u.l->n * sizeof(jv));
    memcpy(((jlist *)r.u.l)->items + a.u.l->n, b.u.l->items, b.u.l->n * sizeof(jv));
    *out = r;
    return true;
}

static bool concat_strings(interp *in, const node *at, const jstr *a, const jstr *b, jv *out) {
    jstr *s = jv_alloc(in->heap, sizeof *s + a->len + b->len + 1);
    if (!s) return rt_oom(in, at);
    s->len = a->len + b->len;
    memcpy(s->data, a->data, a->len);
    memcpy(s->data + a->len, b->data, b->len);
    s->data[s->len] = 0;
    *out = (jv){.type = JV_STR, .u.s = s};
    return true;
}

static bool repeat(interp *in, const node *at, jv seq, int64_t times, jv *out) {
    if (times < 0) times = 0;
    size_t unit = seq.type == JV_STR ? seq.u.s->len : seq.u.l->n;
    if (!unit) times = 0; /* empty whatever the count: '' * 2**62 would loop that many times */
    else if ((uint64_t)times > in->limits->max_output / unit) return rt_error(in, at, "repetition result too large");
    if (seq.type == JV_STR) {
        jbuf b = {0};
        for (int64_t i = 0; i < times; i++) jbuf_put(&b, seq.u.s->data, unit);
        *out = jv_str(in->heap, b.data, b.len);
        jbuf_free(&b);
        return out->type == JV_STR || rt_oom(in, at);
    }
    jv r = jv_list(in->heap, NULL, unit * (size_t)times, seq.type == JV_TUPLE);
    if (r.type == JV_UNDEFINED) return rt_oom(in, at);
    for (int64_t i = 0; i < times; i++) memcpy(((jlist *)r.u.l)->items + (size_t)i * unit, seq.u.l->items, unit * sizeof(jv));
    *out = r;
    return true;
}

static bool arith(interp *in, const node *at, int op, jv a, jv b, jv *out) {
    if (op == '~') {
        jv sa, sb;
        if (!jv_to_str(in->heap, a, &sa) || !jv_to_str(in->heap, b, &sb)) return rt_oom(in, at);
        return concat_strings(in, at, sa.u.s, sb.u.s, out);
    }
    if (a.type == JV_UNDEFINED) return rt_undefined(in, at, a);
    if (b.type == JV_UNDEFINED) return rt_undefined(in, at, b);
    if (op == '+' && a.type == JV_STR && b.type == JV_STR) {
        if (a.markup != b.markup && !escape_html(in, at, a.markup ? b : a, a.markup ? &b : &a)) return false;
        const bool markup = a.markup || b.markup;
        if (!concat_strings(in, at, a.u.s, b.u.s, out)) return false;
        out->markup = markup;
        return true;
    }
    if (op == '+' && ((a.type == JV_LIST && b.type == JV_LIST) || (a.type == JV_TUPLE && b.type == JV_TUPLE)))
        return concat_lists(in, at, a, b, out);
    int64_t times;
    if (op == '*' && (a.type == JV_STR || a.type == JV_LIST || a.type == JV_TUPLE) && as_int(b, &times)) return repeat(in, at, a, times, out);
    if (op == '*' && (b.type == JV_STR || b.type == JV_LIST || b.type == JV_TUPLE) && as_int(a, &times)) return repeat(in, at, b, times, out);
    if (op == '%' && a.type == JV_STR) /* a tuple gives the arguments, anything else is the one argument */
        return b.type == JV_TUPLE ? percent_format(in, at, a.u.s, b.u.l->items, b.u.l->n, out) : percent_format(in, at, a.u.s, &b, 1, out);
    bool an = a.type == JV_INT || a.type == JV_FLOAT || a.type == JV_BOOL;
    bool bn = b.type == JV_INT || b.type == JV_FLOAT || b.type == JV_BOOL;
    if (!an || !bn) {
        static const char *const names[] = {"+", "-", "*", "/", "//", "%", "**"};
        const char *sym = op == '+' ? names[0] : op == '-' ? names[1] : op == '*' ? names[2] : op == '/' ? names[3] :
                          op == 'F' ? names[4] : op == '%' ? names[5] : names[6];
        return rt_error(in, at, "unsupported operand type(s) for %s: '%s' and '%s'", sym, jv_type_name(a), jv_type_name(b));
    }
    const bool floats = a.type == JV_FLOAT || b.type == JV_FLOAT;
    if (!floats && op != '/') {
        int64_t x = a.type == JV_INT ? a.u.i : a.u.b, y = b.type == JV_INT ? b.u.i : b.u.b, r = 0;
        bool overflow = false;
        switch (op) {
        case '+': overflow = __builtin_add_overflow(x, y, &r); break;
        case '-': overflow = __builtin_sub_overflow(x, y, &r); break;
        case '*': overflow = __builtin_mul_overflow(x, y, &r); break;
        case 'F':
        case '%':
            if (y == 0) return rt_error(in, at, "integer division or modulo by zero");
            if (x == INT64_MIN && y == -1) {
                overflow = true;
                break;
            }
            r = op == 'F' ? x / y : x % y;
            /* Python rounds toward negative infinity */
            if ((x % y != 0) && ((x < 0) != (y < 0))) r = op == 'F' ? r - 1 : r + y;
            break;
        case 'P':
            if (y < 0) {
                *out = jv_float(pow((double)x, (double)y));
                return true;
            }
            r = 1;
            for (int64_t k = 0; k < y && !overflow; k++) overflow = __builtin_mul_overflow(r, x, &r);
            break;
        }
        if (overflow) return rt_error(in, at, "integer overflow");
        *out = jv_int(r);
        return true;
    }
    double x = a.type == JV_FLOAT ? a.u.f : a.type == JV_INT ? (double)a.u.i : a.u.b;
    double y = b.type == JV_FLOAT ? b.u.f : b.type == JV_INT ? (double)b.u.i : b.u.b;
    double r = 0;
    switch (op) {
    case '+': r = x + y; break;
    case '-': r = x - y; break;
    case '*': r = x * y; break;
    case '/':
        if (y == 0) return rt_error(in, at, "division by zero");
        r = x / y;
        break;
    case 'F':
        if (y == 0) return rt_error(in, at, "float floor division by zero");
        r = floor(x / y);
        break;
    case '%':
        if (y == 0) return rt_error(in, at, "float modulo");
        r = fmod(x, y);
        if (r != 0 && ((r < 0) != (y < 0))) r += y;
        break;
    case 'P': r = pow(x, y); break;
    }
    *out = jv_float(r);
    return true;
}

static bool eval_binary(interp *in, scope *s, const node *n, jv *out) {
    jv a, b;
    if (!eval(in, s, n->u.op.a, &a) || !eval(in, s, n->u.op.b, &b)) return false;
    bool r;
    switch (n->u.op.op) {
    case 'E': *out = jv_bool(jv_equal(a, b)); return true;
    case 'N': *out = jv_bool(!jv_equal(a, b)); return true;
    case '<':
        if (!jv_less(in, n, a, b, &r)) return false;
        *out = jv_bool(r);
        return true;
    case '>':
        if (!jv_less(in, n, b, a, &r)) return false;
        *out = jv_bool(r);
        return true;
    case 'L':
        if (!jv_less(in, n, b, a, &r)) return false;
        *out = jv_bool(!r);
        return true;
    case 'G':
        if (!jv_less(in, n, a, b, &r)) return false;
        *out = jv_bool(!r);
        return true;
    case 'I':
    case 'J':
        if (!contains(in, n, a, b, &r)) return false;
        *out = jv_bool(n->u.op.op == 'I' ? r : !r);
        return true;
    default: return arith(in, n, n->u.op.op, a, b, out);
    }
}

static bool eval_args(interp *in, scope *s, const node *n, call_args *args) {
    const size_t np = n->u.call.args.n, nk = n->u.call.kwargs.n;
    jv *pos = np ? jv_alloc(in->heap, np * sizeof *pos) : NULL;
    jv *kw = nk ? jv_alloc(in->heap, nk * sizeof *kw) : NULL;
    if ((np && !pos) || (nk && !kw)) return rt_oom(in, n);
    for (size_t i = 0; i < np; i++)
        if (!eval(in, s, n->u.call.args.items[i], &pos[i])) return false;
    for (size_t i = 0; i < nk; i++)
        if (!eval(in, s, n->u.call.kwargs.items[i], &kw[i])) return false;
    *args = (call_args){pos, np, n->u.call.kwnames, kw, nk};
    return true;
}

static flow exec(interp *in, scope *s, const node *n);

/* Calls a macro; `caller` is a call block's body (NULL outside one). */
static bool call_macro(interp *in, const node *at, const macro_obj *m, const call_args *args, const jv *caller, jv *out) {
    const node *def = m->def;
    const char *name = def->u.macro.name;
    if (args->n_pos > def->u.macro.n_params && !def->u.macro.catch_varargs)
        return rt_error(in, at, "macro '%s' takes not more than %zu argument(s)", name, def->u.macro.n_params);
    if (caller && !def->u.macro.takes_caller) return rt_error(in, at, "macro '%s' was invoked with two values for the special caller argument", name);
    if (in->call_depth >= TPL_MAX_CALL_DEPTH)
        return rt_error(in, at, "macro calls nested more than %d deep (unbounded recursion?)", TPL_MAX_CALL_DEPTH);
    scope *ms = new_scope(in, m->closure);
    jv kwargs = jv_dict(in->heap, args->n_kw + 1);
    if (!ms || kwargs.type != JV_DICT) return rt_oom(in, at);
    for (size_t k = 0; k < args->n_kw; k++) {
        bool known = false;
        for (size_t i = 0; i < def->u.macro.n_params; i++) known |= !strcmp(def->u.macro.params[i], args->kw_names[k]);
        if (known) continue;
        if (!def->u.macro.catch_kwargs) return rt_error(in, at, "macro '%s' takes no keyword argument '%s'", name, args->kw_names[k]);
        jv key = jv_cstr(in->heap, args->kw_names[k]);
        if (key.type != JV_STR || !jv_dict_set(in->heap, kwargs.u.d, key, args->kw[k])) return rt_oom(in, at);
    }
    for (size_t i = 0; i < def->u.macro.n_params; i++) {
        const jv *given = call_arg(args, i, def->u.macro.params[i]);
        jv v;
        if (given) v = *given;
        else if (def->u.macro.defaults[i]) {
            if (!eval(in, ms, def->u.macro.defaults[i], &v)) return false;
        } else {
            char *hint = jv_alloc(in->heap, strlen(def->u.macro.params[i]) + 64);
            if (hint) snprintf(hint, strlen(def->u.macro.params[i]) + 64, "parameter '%s' was not provided", def->u.macro.params[i]);
            v = jv_undefined(hint);
        }
        if (!assign(in, at, ms, def->u.macro.params[i], v)) return false;
    }
    if (def->u.macro.catch_varargs) {
        const size_t extra = args->n_pos > def->u.macro.n_params ? args->n_pos - def->u.macro.n_params : 0;
        jv varargs = jv_list(in->heap, extra ? args->pos + def->u.macro.n_params : NULL, extra, true);
        if (varargs.type != JV_TUPLE || !assign(in, at, ms, "varargs", varargs)) return rt_oom(in, at);
    }
    if (def->u.macro.catch_kwargs && !assign(in, at, ms, "kwargs", kwargs)) return false;
    if (caller && !assign(in, at, ms, "caller", *caller)) return false;
    jbuf capture = {0}, *saved = in->out;
    in->out = &capture;
    in->call_depth++;
    flow f = exec(in, ms, def->u.macro.body);
    in->call_depth--;
    in->out = saved;
    if (f == FLOW_ERROR || capture.oom) {
        jbuf_free(&capture);
        return capture.oom ? rt_oom(in, at) : false;
    }
    *out = jv_str(in->heap, capture.data, capture.len);
    jbuf_free(&capture);
    return out->type == JV_STR || rt_oom(in, at);
}

static bool eval_call(interp *in, scope *s, const node *n, jv *out) {
    jv fn;
    call_args args;
    if (!eval(in, s, n->u.call.callee, &fn) || !eval_args(in, s, n, &args)) return false;
    if (fn.type == JV_MACRO) return call_macro(in, n, fn.u.macro, &args, NULL, out);
    if (fn.type == JV_BUILTIN) return builtin_call(in, n, fn, &args, out);
    if (fn.type == JV_UNDEFINED) return rt_undefined(in, n, fn);
    return rt_error(in, n, "'%s' object is not callable", jv_type_name(fn));
}

static bool eval(interp *in, scope *s, const node *n, jv *out) {
    if (!step(in, n)) return false;
    switch (n->kind) {
    case N_LITERAL: *out = n->u.literal; return true;
    case N_NAME: return lookup(in, s, n->u.name, out);
    case N_LIST: return eval_list(in, s, &n->u.items, out, false);
    case N_TUPLE: return eval_list(in, s, &n->u.items, out, true);
    case N_DICT: {
        jv d = jv_dict(in->heap, n->u.dict.keys.n + 1);
        if (d.type != JV_DICT) return rt_oom(in, n);
        for (size_t i = 0; i < n->u.dict.keys.n; i++) {
            jv k, v;
            if (!eval(in, s, n->u.dict.keys.items[i], &k) || !eval(in, s, n->u.dict.values.items[i], &v)) return false;
            if (k.type == JV_LIST || k.type == JV_DICT || k.type == JV_NAMESPACE)
                return rt_error(in, n, "unhashable type: '%s'", jv_type_name(k));
            if (!jv_dict_set(in->heap, d.u.d, k, v)) return rt_oom(in, n);
        }
        *out = d;
        return true;
    }
    case N_GETATTR: {
        jv obj;
        return eval(in, s, n->u.attr.obj, &obj) && jv_getattr(in, n, obj, n->u.attr.name, out);
    }
    case N_GETITEM: {
        jv obj, key;
        return eval(in, s, n->u.item.obj, &obj) && eval(in, s, n->u.item.index, &key) && jv_getitem(in, n, obj, key, out);
    }
    case N_SLICE: return eval_slice(in, s, n, out);
    case N_CALL: return eval_call(in, s, n, out);
    case N_FILTER: {
        jv value;
        call_args args;
        if (!eval(in, s, n->u.call.callee, &value) || !eval_args(in, s, n, &args)) return false;
        return builtin_filter(in, n, n->u.call.name, value, &args, out);
    }
    case N_TEST: {
        jv value;
        call_args args;
        bool r;
        if (!eval(in, s, n->u.call.callee, &value) || !eval_args(in, s, n, &args) ||
            !builtin_test(in, n, n->u.call.name, value, &args, &r))
            return false;
        *out = jv_bool(n->u.call.negated ? !r : r);
        return true;
    }
    case N_UNARY: {
        jv a;
        if (!eval(in, s, n->u.op.a, &a)) return false;
        if (n->u.op.op == '!') {
            *out = jv_bool(!jv_truthy(a));
            return true;
        }
        if (a.type == JV_UNDEFINED) return rt_undefined(in, n, a);
        if (a.type == JV_INT || a.type == JV_BOOL) {
            int64_t v = a.type == JV_INT ? a.u.i : a.u.b;
            if (n->u.op.op == '-' && v == INT64_MIN) return rt_error(in, n, "integer overflow");
            *out = jv_int(n->u.op.op == '-' ? -v : v);
            return true;
        }
        if (a.type == JV_FLOAT) {
            *out = jv_float(n->u.op.op == '-' ? -a.u.f : a.u.f);
            return true;
        }
        return rt_error(in, n, "bad operand type for unary %c: '%s'", n->u.op.op, jv_type_name(a));
    }
    case N_BINARY: return eval_binary(in, s, n, out);
    case N_AND:
    case N_OR: {
        jv a;
        if (!eval(in, s, n->u.op.a, &a)) return false;
        bool t = jv_truthy(a);
        if ((n->kind == N_AND && !t) || (n->kind == N_OR && t)) {
            *out = a;
            return true;
        }
        return eval(in, s, n->u.op.b, out);
    }
    case N_COND: {
        jv c;
        if (!eval(in, s, n->u.cond.cond, &c)) return false;
        if (jv_truthy(c)) return eval(in, s, n->u.cond.then, out);
        if (n->u.cond.otherwise) return eval(in, s, n->u.cond.otherwise, out);
        *out = jv_undefined("the inline if expression evaluated to false and no else section was defined");
        return true;
    }
    default: return rt_error(in, n, "internal error: statement used as an expression");
    }
}

/* --- statements ---------------------------------------------------------------------------- */

static bool write_out(interp *in, const node *at, const char *data, size_t len) {
    jbuf_put(in->out, data, len);
    if (in->out->oom) return rt_oom(in, at);
    if (in->out->len > in->limits->max_output)
        return rt_error(in, at, "template output exceeds %zu bytes", in->limits->max_output);
    return true;
}

static bool unpack(interp *in, const node *at, scope *s, const char *const *targets, size_t n_targets, jv v) {
    if (n_targets == 1) return assign(in, at, s, targets[0], v);
    jv items;
    if (v.type == JV_STR || v.type == JV_DICT) {
        if (!jv_iterate(in, at, v, &items)) return false;
    } else if (v.type == JV_LIST || v.type == JV_TUPLE) {
        items = v;
    } else {
        return rt_error(in, at, "cannot unpack non-iterable %s object", jv_type_name(v));
    }
    if (items.u.l->n != n_targets)
        return rt_error(in, at, items.u.l->n > n_targets ? "too many values to unpack (expected %zu)" : "not enough values to unpack (expected %zu)",
                        n_targets);
    for (size_t i = 0; i < n_targets; i++)
        if (!assign(in, at, s, targets[i], items.u.l->items[i])) return false;
    return true;
}

/* The loop object, one per loop, updated in place each iteration as
 * jinja2's LoopContext is. previtem/nextitem are Undefined at the ends. */
enum { LOOP_INDEX, LOOP_INDEX0, LOOP_REVINDEX, LOOP_REVINDEX0, LOOP_FIRST, LOOP_LAST, LOOP_LENGTH, LOOP_DEPTH, LOOP_DEPTH0,
       LOOP_PREVITEM, LOOP_NEXTITEM, LOOP_FIELDS };
static const char *const loop_fields[LOOP_FIELDS] = {"index", "index0", "revindex", "revindex0", "first", "last",
                                                     "length", "depth", "depth0", "previtem", "nextitem"};

static bool new_loop_object(interp *in, const node *at, jv *out) {
    jv loop = jv_dict(in->heap, LOOP_FIELDS);
    if (loop.type != JV_DICT) return rt_oom(in, at);
    for (int k = 0; k < LOOP_FIELDS; k++) {
        jv key = jv_cstr(in->heap, loop_fields[k]);
        if (key.type != JV_STR || !jv_dict_set(in->heap, loop.u.d, key, jv_none())) return rt_oom(in, at);
    }
    jv *self = jv_alloc(in->heap, sizeof *self), key = jv_cstr(in->heap, "cycle");
    if (!self || key.type != JV_STR) return rt_oom(in, at);
    *self = loop;
    if (!jv_dict_set(in->heap, loop.u.d, key, (jv){.type = JV_BUILTIN, .u.fn = {B_LOOP_CYCLE, self}})) return rt_oom(in, at);
    *out = loop;
    return true;
}

static void update_loop_object(jv loop, const jlist *items, size_t i) {
    const int64_t len = (int64_t)items->n, idx = (int64_t)i;
    jv *v = loop.u.d->values; /* in loop_fields order */
    v[LOOP_INDEX] = jv_int(idx + 1);
    v[LOOP_INDEX0] = jv_int(idx);
    v[LOOP_REVINDEX] = jv_int(len - idx);
    v[LOOP_REVINDEX0] = jv_int(len - idx - 1);
    v[LOOP_FIRST] = jv_bool(i == 0);
    v[LOOP_LAST] = jv_bool(idx == len - 1);
    v[LOOP_LENGTH] = jv_int(len);
    v[LOOP_DEPTH] = jv_int(1);
    v[LOOP_DEPTH0] = jv_int(0);
    v[LOOP_PREVITEM] = i > 0 ? items->items[i - 1] : jv_undefined("there is no previous item");
    v[LOOP_NEXTITEM] = idx + 1 < len ? items->items[i + 1] : jv_undefined("there is no next item");
}

static flow exec_for(interp *in, scope *s, const node *n) {
    jv seq, items;
    if (!eval(in, s, n->u.for_.iter, &seq) || !jv_iterate(in, n, seq, &items)) return FLOW_ERROR;
    scope *ls = new_scope(in, s);
    if (!ls) return rt_oom(in, n), FLOW_ERROR;
    const char *const *targets = n->u.for_.targets;
    const size_t n_targets = n->u.for_.n_targets;
    if (n->u.for_.filter) { /* "for x in y if cond": filter first, so loop.* counts what remains */
        jv kept = jv_list(in->heap, NULL, items.u.l->n, false);
        if (kept.type == JV_UNDEFINED) return rt_oom(in, n), FLOW_ERROR;
        size_t k = 0;
        for (size_t i = 0; i < items.u.l->n; i++) {
            jv c;
            if (!unpack(in, n, ls, targets, n_targets, items.u.l->items[i]) || !eval(in, ls, n->u.for_.filter, &c)) return FLOW_ERROR;
            if (jv_truthy(c)) ((jlist *)kept.u.l)->items[k++] = items.u.l->items[i];
        }
        ((jlist *)kept.u.l)->n = k;
        items = kept;
    }
    jv loop;
    if (!new_loop_object(in, n, &loop) || !assign(in, n, ls, "loop", loop)) return FLOW_ERROR;
    for (size_t i = 0; i < items.u.l->n; i++) {
        update_loop_object(loop, items.u.l, i);
        if (!unpack(in, n, ls, targets, n_targets, items.u.l->items[i])) return FLOW_ERROR;
        flow f = exec(in, ls, n->u.for_.body);
        if (f == FLOW_ERROR) return f;
        if (f == FLOW_BREAK) break;
    }
    if (items.u.l->n == 0 && n->u.for_.else_body) return exec(in, s, n->u.for_.else_body);
    return FLOW_NORMAL;
}

static flow exec_set(interp *in, scope *s, const node *n) {
    jv v;
    if (n->kind == S_SET_BLOCK) {
        jbuf capture = {0}, *saved = in->out;
        in->out = &capture;
        flow f = exec(in, s, n->u.set.body);
        in->out = saved;
        if (f != FLOW_ERROR) v = jv_str(in->heap, capture.data, capture.len);
        jbuf_free(&capture);
        if (f == FLOW_ERROR) return f;
        if (v.type != JV_STR) return rt_oom(in, n), FLOW_ERROR;
    } else if (!eval(in, s, n->u.set.value, &v)) {
        return FLOW_ERROR;
    }
    if (n->u.set.attr) {
        jv ns;
        if (!lookup(in, s, n->u.set.targets[0], &ns)) return FLOW_ERROR;
        if (ns.type != JV_NAMESPACE) return rt_error(in, n, "cannot assign attribute on non-namespace object"), FLOW_ERROR;
        jv key = jv_cstr(in->heap, n->u.set.attr);
        if (key.type != JV_STR || !jv_dict_set(in->heap, ns.u.d, key, v)) return rt_oom(in, n), FLOW_ERROR;
        return FLOW_NORMAL;
    }
    return unpack(in, n, s, n->u.set.targets, n->u.set.n_targets, v) ? FLOW_NORMAL : FLOW_ERROR;
}

static flow exec(interp *in, scope *s, const node *n) {
    if (!n) return FLOW_NORMAL;
    if (!step(in, n)) return FLOW_ERROR;
    switch (n->kind) {
    case S_BODY:
        for (size_t i = 0; i < n->u.items.n; i++) {
            flow f = exec(in, s, n->u.items.items[i]);
            if (f != FLOW_NORMAL) return f;
        }
        return FLOW_NORMAL;
    case S_TEXT: return write_out(in, n, n->u.literal.u.s->data, n->u.literal.u.s->len) ? FLOW_NORMAL : FLOW_ERROR;
    case S_OUTPUT: {
        jv v, str;
        if (!eval(in, s, n->u.output, &v)) return FLOW_ERROR;
        if (!jv_to_str(in->heap, v, &str)) return rt_oom(in, n), FLOW_ERROR;
        return write_out(in, n, str.u.s->data, str.u.s->len) ? FLOW_NORMAL : FLOW_ERROR;
    }
    case S_IF:
        for (size_t i = 0; i < n->u.if_.conds.n; i++) {
            jv c;
            if (!eval(in, s, n->u.if_.conds.items[i], &c)) return FLOW_ERROR;
            if (jv_truthy(c)) return exec(in, s, n->u.if_.bodies.items[i]);
        }
        return exec(in, s, n->u.if_.else_body);
    case S_FOR: return exec_for(in, s, n);
    case S_SET:
    case S_SET_BLOCK: return exec_set(in, s, n);
    case S_MACRO: {
        macro_obj *m = jv_alloc(in->heap, sizeof *m);
        if (!m) return rt_oom(in, n), FLOW_ERROR;
        m->def = n;
        m->closure = s;
        return assign(in, n, s, n->u.macro.name, (jv){.type = JV_MACRO, .u.macro = m}) ? FLOW_NORMAL : FLOW_ERROR;
    }
    case S_WITH: {
        scope *ws = new_scope(in, s);
        if (!ws) return rt_oom(in, n), FLOW_ERROR;
        for (size_t i = 0; i < n->u.with.values.n; i++) { /* the values see the outer names only */
            jv v;
            if (!eval(in, s, n->u.with.values.items[i], &v) || !assign(in, n, ws, n->u.with.names[i], v)) return FLOW_ERROR;
        }
        return exec(in, ws, n->u.with.body);
    }
    case S_CALL_BLOCK: {
        const node *call = n->u.call_block.call;
        macro_obj *body = jv_alloc(in->heap, sizeof *body);
        if (!body) return rt_oom(in, n), FLOW_ERROR;
        body->def = n->u.call_block.caller;
        body->closure = s;
        const jv caller = {.type = JV_MACRO, .u.macro = body};
        jv fn, result;
        call_args args;
        if (!eval(in, s, call->u.call.callee, &fn) || !eval_args(in, s, call, &args)) return FLOW_ERROR;
        if (fn.type == JV_UNDEFINED) return rt_undefined(in, call, fn), FLOW_ERROR;
        if (fn.type != JV_MACRO) return rt_error(in, call, "a call block needs a macro, not %s", jv_type_name(fn)), FLOW_ERROR;
        if (!call_macro(in, call, fn.u.macro, &args, &caller, &result)) return FLOW_ERROR;
        return write_out(in, n, result.u.s->data, result.u.s->len) ? FLOW_NORMAL : FLOW_ERROR;
    }
    case S_BREAK: return FLOW_BREAK;
    case S_CONTINUE: return FLOW_CONTINUE;
    case S_FILTER_BLOCK: {
        jbuf capture = {0}, *saved = in->out;
        in->out = &capture;
        flow f = exec(in, s, n->u.filter_block.body);
        in->out = saved;
        jv text = f == FLOW_ERROR ? jv_none() : jv_str(in->heap, capture.data, capture.len);
        jbuf_free(&capture);
        if (f == FLOW_ERROR) return f;
        const node *fn = n->u.filter_block.filter;
        call_args args;
        jv result, str;
        if (!eval_args(in, s, fn, &args) || !builtin_filter(in, fn, fn->u.call.name, text, &args, &result) ||
            !jv_to_str(in->heap, result, &str))
            return FLOW_ERROR;
        return write_out(in, n, str.u.s->data, str.u.s->len) ? FLOW_NORMAL : FLOW_ERROR;
    }
    default: return rt_error(in, n, "internal error: expression used as a statement"), FLOW_ERROR;
    }
}

bool tpl_render(const tpl_program *prog, jv context, jv_heap *heap, const struct tm *now, const tpl_limits *limits,
                jbuf *out, tpl_error *err) {
    memset(err, 0, sizeof *err);
    interp in = {.heap = heap, .out = out, .err = err, .now = now, .limits = limits};
    scope *root = new_scope(&in, NULL);
    if (!root || context.type != JV_DICT) return rt_oom(&in, NULL);
    root->vars = context.u.d;
    scope *top = new_scope(&in, root); /* template-level sets do not touch the caller's dict */
    if (!top) return rt_oom(&in, NULL);
    flow f = exec(&in, top, prog->root);
    if (f == FLOW_ERROR || in.failed) {
        if (err->status == SPROUT_OK) err->status = SPROUT_ERR_FORMAT;
        return false;
    }
    return true;
}
