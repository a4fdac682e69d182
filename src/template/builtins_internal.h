/* The built-in library as the interpreter (eval.c) calls it: globals
 * (globals.c), methods (methods.c), filters (filters*.c) and tests
 * (tests.c). Filters, methods and tests are sorted name -> function
 * tables; globals and bound methods are JV_BUILTIN values with an id. */
#ifndef SPROUT_TEMPLATE_BUILTINS_INTERNAL_H
#define SPROUT_TEMPLATE_BUILTINS_INTERNAL_H

#include "template/eval_services.h"

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
    B_FIRST_METHOD, /* + the method's index in its receiver type's table */
};

/* A global function by name (0 if none). */
int builtin_global(const char *name);
/* Calls a JV_BUILTIN value: a global, or a bound method. */
bool builtin_call(interp *in, const node *at, jv fn, const call_args *args, jv *out);
/* A bound method of `self` by name, or false if the type has none. */
bool builtin_method(interp *in, jv self, const char *name, jv *out);
/* Calls bound method `id` (B_FIRST_METHOD or past) of self. */
bool method_call(interp *in, const node *at, int id, jv self, const call_args *args, jv *out);
bool builtin_filter(interp *in, const node *at, const char *name, jv value, const call_args *args, jv *out);
bool builtin_test(interp *in, const node *at, const char *name, jv value, const call_args *args, bool *out);

#endif
