/* Shared by the interpreter (eval.c) and the built-in filters, tests,
 * methods and globals (builtins.c). */
#ifndef SPROUT_TEMPLATE_EVAL_INTERNAL_H
#define SPROUT_TEMPLATE_EVAL_INTERNAL_H

#include "template/template_internal.h"

typedef struct scope scope;
struct scope {
    scope *parent;
    jdict *vars;
};

typedef struct macro_obj {
    const node *def;
    scope *closure;
} macro_obj;

typedef struct interp {
    jv_heap *heap;
    jbuf *out;
    tpl_error *err;
    const struct tm *now;
    const tpl_limits *limits;
    uint64_t steps;
    int call_depth;
    bool failed;
} interp;

typedef struct call_args {
    const jv *pos;
    size_t n_pos;
    const char *const *kw_names;
    const jv *kw;
    size_t n_kw;
} call_args;

/* Records a runtime error at `at` (first error wins); returns false. */
bool rt_error(interp *in, const node *at, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* The error for using an undefined value. */
bool rt_undefined(interp *in, const node *at, jv undefined);

/* Argument i by position, else by keyword name; NULL if absent. */
const jv *call_arg(const call_args *a, size_t i, const char *name);

/* Builtin ids for JV_BUILTIN values: globals, then methods. */
enum {
    B_RAISE_EXCEPTION = 1,
    B_STRFTIME_NOW,
    B_NAMESPACE,
    B_RANGE,
    B_DICT,
    B_LOOP_CYCLE, /* loop.cycle, bound to its loop object */
    B_JOINER,
    B_JOINER_CALL,  /* a joiner, bound to its state */
    B_CYCLER,
    B_CYCLER_NEXT,  /* a cycler's next() and reset(), bound to it */
    B_CYCLER_RESET,
    B_FIRST_METHOD,
};

/* A global function by name (0 if none). */
int builtin_global(const char *name);
/* A bound method of `self` by name, or false if the type has none. */
bool builtin_method(interp *in, jv self, const char *name, jv *out);
bool builtin_call(interp *in, const node *at, jv fn, const call_args *args, jv *out);
bool builtin_filter(interp *in, const node *at, const char *name, jv value, const call_args *args, jv *out);
/* fmt % args, Python's printf-style formatting (the `%` operator on a
 * string, and the `format` filter). */
bool percent_format(interp *in, const node *at, const jstr *fmt, const jv *args, size_t n_args, jv *out);
/* markupsafe's escape: & < > ' " as entities. */
bool escape_html(interp *in, const node *at, jv v, jv *out);
bool builtin_test(interp *in, const node *at, const char *name, jv value, const call_args *args, bool *out);

/* Python's iteration: the items of a list, tuple, dict (keys), string
 * (characters) or undefined (none). */
bool jv_iterate(interp *in, const node *at, jv v, jv *out_list);
/* len() */
bool jv_length(interp *in, const node *at, jv v, int64_t *out);
/* Attribute and item lookups with jinja2's fallbacks. */
bool jv_getattr(interp *in, const node *at, jv obj, const char *name, jv *out);
bool jv_getitem(interp *in, const node *at, jv obj, jv key, jv *out);
/* Python's <, for sort and comparisons; false with an error on a type clash. */
bool jv_less(interp *in, const node *at, jv a, jv b, bool *out);

#endif
