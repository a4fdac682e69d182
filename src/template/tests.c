/* jinja2's tests (`x is defined`, `x is divisibleby 3`...): a sorted
 * name -> function table, the comparison tests under all their names. */
#include <string.h>

#include "template/builtins_internal.h"
#include "template/text_internal.h"

/* name: as the template spells the test, for its error messages; arg: the
 * test's first argument, NULL when none was given. */
typedef bool test_fn(interp *in, const node *at, const char *name, jv v, const jv *arg, bool *out);

#define TYPE_TEST(fn, cond)                                                                                 \
    static bool fn(interp *in, const node *at, const char *name, jv v, const jv *arg, bool *out) {          \
        (void)in, (void)at, (void)name, (void)arg, (void)v;                                                     \
        *out = (cond);                                                                                      \
        return true;                                                                                        \
    }

TYPE_TEST(t_defined, v.type != JV_UNDEFINED)
TYPE_TEST(t_undefined, v.type == JV_UNDEFINED)
TYPE_TEST(t_none, v.type == JV_NONE)
TYPE_TEST(t_string, v.type == JV_STR)
TYPE_TEST(t_mapping, v.type == JV_DICT)
TYPE_TEST(t_iterable, v.type == JV_UNDEFINED || v.type == JV_STR || v.type == JV_LIST || v.type == JV_TUPLE || v.type == JV_DICT)
TYPE_TEST(t_sequence, v.type == JV_STR || v.type == JV_LIST || v.type == JV_TUPLE || v.type == JV_DICT)
TYPE_TEST(t_number, v.type == JV_INT || v.type == JV_FLOAT || v.type == JV_BOOL)
TYPE_TEST(t_integer, v.type == JV_INT)
TYPE_TEST(t_float, v.type == JV_FLOAT)
TYPE_TEST(t_boolean, v.type == JV_BOOL)
TYPE_TEST(t_true, v.type == JV_BOOL && v.u.b)
TYPE_TEST(t_false, v.type == JV_BOOL && !v.u.b)
TYPE_TEST(t_callable, v.type == JV_MACRO || v.type == JV_BUILTIN)
TYPE_TEST(t_escaped, false)

#undef TYPE_TEST

static bool t_in(interp *in, const node *at, const char *name, jv v, const jv *arg, bool *out) {
    (void)name;
    if (!arg) return rt_error(in, at, "test 'in' needs an argument");
    jv seq;
    if (arg->type == JV_STR && v.type == JV_STR) {
        *out = memmem(arg->u.s->data, arg->u.s->len, v.u.s->data, v.u.s->len) || !v.u.s->len;
        return true;
    }
    if (!jv_iterate(in, at, *arg, &seq)) return false;
    *out = false;
    for (size_t i = 0; i < seq.u.l->n && !*out; i++) *out = jv_equal(v, seq.u.l->items[i]);
    return true;
}

/* even, odd (by 2), divisibleby (by the argument): v must be an integer, then the divisor */
static bool divisible(interp *in, const node *at, jv v, bool by_arg, const jv *arg, bool *out) {
    int64_t x, d = 2;
    if (!rt_want_int(in, at, &v, 0, &x) || (by_arg && !rt_want_int(in, at, arg, 1, &d))) return false;
    if (d == 0) return rt_error(in, at, "integer division or modulo by zero");
    *out = x % d == 0;
    return true;
}

static bool t_even(interp *in, const node *at, const char *name, jv v, const jv *arg, bool *out) {
    (void)name, (void)arg;
    return divisible(in, at, v, false, NULL, out);
}

static bool t_odd(interp *in, const node *at, const char *name, jv v, const jv *arg, bool *out) {
    (void)name, (void)arg;
    if (!divisible(in, at, v, false, NULL, out)) return false;
    *out = !*out;
    return true;
}

static bool t_divisibleby(interp *in, const node *at, const char *name, jv v, const jv *arg, bool *out) {
    (void)name;
    return divisible(in, at, v, true, arg, out);
}

/* lower, upper: a string that case conversion leaves as it is */
static bool same_case(interp *in, const node *at, jv v, case_mode mode, bool *out) {
    jv conv;
    if (v.type != JV_STR) {
        *out = false;
        return true;
    }
    if (!str_change_case(in, at, v.u.s, mode, &conv)) return false;
    *out = jv_equal(v, conv);
    return true;
}

static bool t_lower(interp *in, const node *at, const char *name, jv v, const jv *arg, bool *out) {
    (void)name, (void)arg;
    return same_case(in, at, v, CASE_LOWER, out);
}

static bool t_upper(interp *in, const node *at, const char *name, jv v, const jv *arg, bool *out) {
    (void)name, (void)arg;
    return same_case(in, at, v, CASE_UPPER, out);
}

/* The comparisons: v == arg, v != arg, v < arg... as Python compares. */
typedef enum { CMP_EQ, CMP_NE, CMP_LT, CMP_GT, CMP_LE, CMP_GE } comparison;

static bool compare(interp *in, const node *at, const char *name, jv v, const jv *other, comparison cmp, bool *out) {
    if (!other) return rt_error(in, at, "test '%s' needs an argument", name);
    switch (cmp) {
    case CMP_EQ: *out = jv_equal(v, *other); return true;
    case CMP_NE: *out = !jv_equal(v, *other); return true;
    case CMP_LT: return jv_less(in, at, v, *other, out);
    case CMP_GT: return jv_less(in, at, *other, v, out);
    case CMP_LE:
    case CMP_GE:
        if (!(cmp == CMP_LE ? jv_less(in, at, *other, v, out) : jv_less(in, at, v, *other, out))) return false;
        *out = !*out;
        return true;
    }
    return false;
}

static bool t_eq(interp *in, const node *at, const char *name, jv v, const jv *arg, bool *out) {
    return compare(in, at, name, v, arg, CMP_EQ, out);
}
static bool t_ne(interp *in, const node *at, const char *name, jv v, const jv *arg, bool *out) {
    return compare(in, at, name, v, arg, CMP_NE, out);
}
static bool t_lt(interp *in, const node *at, const char *name, jv v, const jv *arg, bool *out) {
    return compare(in, at, name, v, arg, CMP_LT, out);
}
static bool t_gt(interp *in, const node *at, const char *name, jv v, const jv *arg, bool *out) {
    return compare(in, at, name, v, arg, CMP_GT, out);
}
static bool t_le(interp *in, const node *at, const char *name, jv v, const jv *arg, bool *out) {
    return compare(in, at, name, v, arg, CMP_LE, out);
}
static bool t_ge(interp *in, const node *at, const char *name, jv v, const jv *arg, bool *out) {
    return compare(in, at, name, v, arg, CMP_GE, out);
}

static const struct test {
    const char *name;
    test_fn *fn;
} tests[] = {
    {"!=", t_ne},           {"<", t_lt},               {"<=", t_le},         {"==", t_eq},         {">", t_gt},
    {">=", t_ge},           {"boolean", t_boolean},    {"callable", t_callable}, {"defined", t_defined}, {"divisibleby", t_divisibleby},
    {"eq", t_eq},           {"equalto", t_eq},         {"escaped", t_escaped}, {"even", t_even},     {"false", t_false},
    {"float", t_float},     {"ge", t_ge},              {"greaterthan", t_gt}, {"gt", t_gt},          {"in", t_in},
    {"integer", t_integer}, {"iterable", t_iterable},  {"le", t_le},          {"lessthan", t_lt},    {"lower", t_lower},
    {"lt", t_lt},           {"mapping", t_mapping},    {"ne", t_ne},          {"none", t_none},      {"number", t_number},
    {"odd", t_odd},         {"sameas", t_eq},          {"sequence", t_sequence}, {"string", t_string}, {"true", t_true},
    {"undefined", t_undefined}, {"upper", t_upper},
};

bool builtin_test(interp *in, const node *at, const char *name, jv v, const call_args *a, bool *out) {
    const struct test *t = rt_find_name(tests, sizeof tests / sizeof tests[0], sizeof *tests, name);
    if (!t) return rt_error(in, at, "No test named '%s'.", name);
    return t->fn(in, at, name, v, call_arg(a, 0, NULL), out);
}
