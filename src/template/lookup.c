/* Attribute and item lookups with jinja2's fallbacks: a dict's items and
 * its methods, a sequence's indexes, a macro's introspection, and an
 * Undefined naming what was missing. */
#include <stdio.h>
#include <string.h>

#include "template/builtins_internal.h"

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
        return !in->heap->exhausted || rt_oom(in, at);
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
    if (!jv_repr(in->heap, key, &name)) return rt_oom(in, at);
    *out = missing(in, obj, name.u.s->data);
    return true;
}
