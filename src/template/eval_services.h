/* What the built-in library (filters, methods, tests, globals) needs from
 * the interpreter: the render's state, argument access, results on the
 * render's heap, errors, and Python's object protocol. None of it calls
 * back into eval.c, which sits above the library: the template engine's
 * files depend on each other without a loop. */
#ifndef SPROUT_TEMPLATE_EVAL_SERVICES_H
#define SPROUT_TEMPLATE_EVAL_SERVICES_H

#include "template/template_internal.h"

typedef struct scope scope; /* eval.c's */

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

/* --- errors (services.c) -------------------------------------------------------------- */

/* Records a runtime error at `at` (first error wins); returns false. */
bool rt_error(interp *in, const node *at, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* The error for using an undefined value. */
bool rt_undefined(interp *in, const node *at, jv undefined);
/* The error for a spent heap; returns false. */
bool rt_oom(interp *in, const node *at);

/* --- arguments and results (services.c) ------------------------------------------------- */

/* Argument i by position, else by keyword name; NULL if absent. */
const jv *call_arg(const call_args *a, size_t i, const char *name);
/* An argument as a string or an integer (fallback when absent or none),
 * else an error. Outputs are set before any error return: the compiler
 * cannot see that rt_error always returns false. */
bool rt_want_str(interp *in, const node *at, const jv *v, const char *what, const jstr **out);
bool rt_want_int(interp *in, const node *at, const jv *v, int64_t fallback, int64_t *out);
/* A string value on the render's heap, from bytes or from a buffer (freed). */
bool rt_make_str(interp *in, const node *at, const char *s, size_t n, jv *out);
bool rt_buf_result(interp *in, const node *at, jbuf *b, jv *out);
/* Python's str(v) on the render's heap. */
bool rt_to_str(interp *in, const node *at, jv v, jv *out);
/* The (key, value) tuples of a dict, as dict.items() gives them. */
bool rt_dict_items(interp *in, const node *at, const jdict *d, jv *out);
/* A dict (or namespace) of the keyword arguments, after those of one
 * mapping argument, as dict() and namespace() build it. */
bool rt_kwargs_dict(interp *in, const node *at, const call_args *a, jv_type type, jv *out);

/* Finds name in a table of structs whose first member is their name,
 * sorted by it (test_template calls every name, so a table out of order
 * fails it); NULL if absent. */
const void *rt_find_name(const void *table, size_t n, size_t size, const char *name);

/* --- Python's object protocol -------------------------------------------------------- */

/* Python's <, for sort and comparisons; false with an error on a type clash. */
bool jv_less(interp *in, const node *at, jv a, jv b, bool *out);
/* Python's iteration: the items of a list, tuple, dict (keys), string
 * (characters) or undefined (none). */
bool jv_iterate(interp *in, const node *at, jv v, jv *out_list);
/* len() */
bool jv_length(interp *in, const node *at, jv v, int64_t *out);
/* Attribute and item lookups with jinja2's fallbacks (lookup.c: the
 * attributes of strings, lists and dicts are their methods). */
bool jv_getattr(interp *in, const node *at, jv obj, const char *name, jv *out);
bool jv_getitem(interp *in, const node *at, jv obj, jv key, jv *out);

#endif
