/* The evaluator of Go's text/template: walks the tree with dot and the
 * variables, evaluates pipelines (the previous command's value becomes the
 * next one's last argument), and prints values as fmt does. Steps, output
 * and heap are bounded; recursion follows the tree, whose depth the parser
 * bounds. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "template/go_template.h"

typedef struct gt_var {
    const char *name;
    gt_value value;
} gt_var;

typedef struct gt_state {
    gt_exec *ex;
    gt_var *vars;
    size_t n_vars, cap_vars;
} gt_state;

typedef enum flow { FLOW_NEXT, FLOW_BREAK, FLOW_CONTINUE, FLOW_ERROR } flow;

void gt_exec_error(gt_exec *ex, const gt_node *at, const char *fmt, ...) {
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    tpl_set_error(ex->err, SPROUT_ERR_FORMAT, at ? at->line : 0, at ? at->column : 0, "%s", msg);
}

static bool step(gt_state *st, const gt_node *at) {
    if (++st->ex->steps <= st->ex->limits->max_steps) return true;
    gt_exec_error(st->ex, at, "template took too many steps (more than %llu)", (unsigned long long)st->ex->limits->max_steps);
    return false;
}

static bool push_var(gt_state *st, const gt_node *at, const char *name, gt_value v) {
    if (st->n_vars == st->cap_vars) {
        size_t cap = st->cap_vars ? st->cap_vars * 2 : 16;
        gt_var *grown = gt_alloc(st->ex->heap, cap * sizeof *grown);
        if (!grown) return gt_exec_error(st->ex, at, "template used too much memory"), false;
        if (st->n_vars) memcpy(grown, st->vars, st->n_vars * sizeof *grown);
        st->vars = grown;
        st->cap_vars = cap;
    }
    st->vars[st->n_vars++] = (gt_var){name, v};
    return true;
}

static gt_var *find_var(gt_state *st, const char *name) {
    for (size_t i = st->n_vars; i-- > 0;)
        if (!strcmp(st->vars[i].name, name)) return &st->vars[i];
    return NULL;
}

static bool eval_pipeline(gt_state *st, gt_value dot, const gt_node *pipe, bool declare, gt_value *out);

/* .A.B on a receiver. A missing map key is a nil value; a field of that
 * nil is Go's "nil pointer evaluating" error unless the nil came straight
 * from dot or a variable (text/template unwraps those to no value), or the
 * key went missing under missingkey=invalid. */
static bool eval_fields(gt_state *st, const gt_node *at, gt_value v, const char *const *ident, size_t n, bool has_args,
                        gt_value *out) {
    for (size_t i = 0; i < n; i++) {
        const char *name = ident[i];
        bool last = i + 1 == n;
        if (v.kind == GT_NIL) {
            if (i == 0 || (v.flags & GT_MISSING)) continue;
            gt_exec_error(st->ex, at, "nil pointer evaluating interface {}.%s", name);
            return false;
        }
        if (v.kind == GT_MAP) {
            if (has_args && last) return gt_exec_error(st->ex, at, "%s is not a method but has arguments", name), false;
            const gt_value *found = gt_map_get(v.u.agg, name, strlen(name));
            v = found ? *found : st->ex->missing_zero ? gt_nil() : (gt_value){.kind = GT_NIL, .flags = GT_MISSING};
            continue;
        }
        const gt_value *field = v.kind == GT_STRUCT ? gt_struct_get(v.u.agg, name) : NULL;
        if (!field) return gt_exec_error(st->ex, at, "can't evaluate field %s in type %s", name, gt_type_name(v)), false;
        if (has_args && last)
            return gt_exec_error(st->ex, at, "%s has arguments but cannot be invoked as function", name), false;
        v = *field;
    }
    *out = v;
    return true;
}

static bool eval_call(gt_state *st, gt_value dot, const gt_node *fn, gt_node *const *args, size_t n_args,
                      const gt_value *final, gt_value *out);

/* An argument of a function: evaluated, never called with arguments. */
static bool eval_arg(gt_state *st, gt_value dot, const gt_node *n, gt_value *out) {
    switch (n->kind) {
    case GN_DOT: *out = dot; return true;
    case GN_NIL:
    case GN_CONST: *out = n->u.constant; return true;
    case GN_FIELD: return eval_fields(st, n, dot, n->u.field.ident, n->u.field.n, false, out);
    case GN_VARIABLE: {
        gt_var *var = find_var(st, n->u.field.var);
        if (!var) return gt_exec_error(st->ex, n, "undefined variable: %s", n->u.field.var), false;
        return eval_fields(st, n, var->value, n->u.field.ident, n->u.field.n, false, out);
    }
    case GN_CHAIN: {
        gt_value base;
        const gt_node *op = n->u.field.operand;
        bool ok = op->kind == GN_FUNC ? eval_call(st, dot, op, NULL, 0, NULL, &base) : eval_pipeline(st, dot, op, true, &base);
        return ok && eval_fields(st, n, base, n->u.field.ident, n->u.field.n, false, out);
    }
    case GN_PIPE: return eval_pipeline(st, dot, n, true, out);
    case GN_FUNC: return eval_call(st, dot, n, NULL, 0, NULL, out);
    default: return gt_exec_error(st->ex, n, "can't handle this argument"), false;
    }
}

enum { GT_MAX_ARGS = 64 };

static bool eval_call(gt_state *st, gt_value dot, const gt_node *fn, gt_node *const *args, size_t n_args,
                      const gt_value *final, gt_value *out) {
    int id = fn->u.func.id;
    if (id == GT_FN_AND || id == GT_FN_OR) {
        if (n_args == 0 && !final)
            return gt_exec_error(st->ex, fn, "wrong number of args for %s: want at least 1 got 0", fn->u.func.name), false;
        /* short-circuit: the first operand that decides is the result */
        for (size_t i = 0; i < n_args; i++) {
            if (!eval_arg(st, dot, args[i], out)) return false;
            if (gt_truth(*out) == (id == GT_FN_OR)) return true;
        }
        if (final) *out = *final;
        return true;
    }
    size_t n = n_args + (final != NULL);
    if (n > GT_MAX_ARGS) return gt_exec_error(st->ex, fn, "too many arguments to %s", fn->u.func.name), false;
    gt_value values[GT_MAX_ARGS];
    for (size_t i = 0; i < n_args; i++)
        if (!eval_arg(st, dot, args[i], &values[i])) return false;
    if (final) values[n_args] = *final;
    return gt_call_func(st->ex, fn, id, values, n, out);
}

static bool not_a_function(gt_state *st, const gt_node *cmd, const gt_value *final) {
    if (cmd->u.list.n <= 1 && !final) return true;
    gt_exec_error(st->ex, cmd->u.list.items[0], "can't give argument to non-function");
    return false;
}

static bool eval_command(gt_state *st, gt_value dot, const gt_node *cmd, const gt_value *final, gt_value *out) {
    if (!step(st, cmd)) return false;
    const gt_node *first = cmd->u.list.items[0];
    bool has_args = cmd->u.list.n > 1 || final;
    switch (first->kind) {
    case GN_FIELD: return eval_fields(st, first, dot, first->u.field.ident, first->u.field.n, has_args, out);
    case GN_VARIABLE: {
        gt_var *var = find_var(st, first->u.field.var);
        if (!var) return gt_exec_error(st->ex, first, "undefined variable: %s", first->u.field.var), false;
        if (first->u.field.n == 0) {
            *out = var->value;
            return not_a_function(st, cmd, final);
        }
        return eval_fields(st, first, var->value, first->u.field.ident, first->u.field.n, has_args, out);
    }
    case GN_CHAIN: {
        gt_value base;
        const gt_node *op = first->u.field.operand;
        bool ok = op->kind == GN_FUNC ? eval_call(st, dot, op, NULL, 0, NULL, &base) : eval_pipeline(st, dot, op, true, &base);
        return ok && eval_fields(st, first, base, first->u.field.ident, first->u.field.n, has_args, out);
    }
    case GN_FUNC: return eval_call(st, dot, first, cmd->u.list.items + 1, cmd->u.list.n - 1, final, out);
    case GN_PIPE: return not_a_function(st, cmd, final) && eval_pipeline(st, dot, first, true, out);
    case GN_NIL: return gt_exec_error(st->ex, first, "nil is not a command"), false;
    case GN_DOT: *out = dot; return not_a_function(st, cmd, final);
    case GN_CONST: *out = first->u.constant; return not_a_function(st, cmd, final);
    default: return gt_exec_error(st->ex, first, "can't evaluate command"), false;
    }
}

/* Runs the commands; `declare` false leaves the variables to range. */
static bool eval_pipeline(gt_state *st, gt_value dot, const gt_node *pipe, bool declare, gt_value *out) {
    gt_value v = gt_nil();
    for (size_t i = 0; i < pipe->u.pipe.n_cmds; i++)
        if (!eval_command(st, dot, pipe->u.pipe.cmds[i], i ? &v : NULL, &v)) return false;
    v.flags &= ~(unsigned)GT_MISSING;
    for (size_t i = 0; declare && i < pipe->u.pipe.n_decl; i++) {
        const char *name = pipe->u.pipe.decl[i];
        gt_var *var = pipe->u.pipe.assign ? find_var(st, name) : NULL;
        if (var) var->value = v;
        else if (!push_var(st, pipe, name, v)) return false;
    }
    *out = v;
    return true;
}

static bool write_out(gt_state *st, const gt_node *at) {
    jbuf *out = st->ex->out;
    if (out->oom) return gt_exec_error(st->ex, at, "out of memory"), false;
    if (out->len > st->ex->limits->max_output)
        return gt_exec_error(st->ex, at, "output larger than %zu bytes", st->ex->limits->max_output), false;
    return true;
}

static flow walk(gt_state *st, gt_value dot, const gt_node *n);

/* One iteration: the declared variables get the key/index and the element. */
static flow range_body(gt_state *st, const gt_node *n, size_t mark, gt_value key, gt_value elem) {
    const gt_node *pipe = n->u.branch.pipe;
    st->n_vars = mark;
    if (pipe->u.pipe.n_decl == 1 && !push_var(st, pipe, pipe->u.pipe.decl[0], elem)) return FLOW_ERROR;
    if (pipe->u.pipe.n_decl == 2 &&
        (!push_var(st, pipe, pipe->u.pipe.decl[0], key) || !push_var(st, pipe, pipe->u.pipe.decl[1], elem)))
        return FLOW_ERROR;
    flow f = walk(st, elem, n->u.branch.list);
    st->n_vars = mark;
    return f;
}

static flow walk_range(gt_state *st, gt_value dot, const gt_node *n) {
    size_t mark = st->n_vars;
    gt_value v;
    if (!eval_pipeline(st, dot, n->u.branch.pipe, false, &v)) return FLOW_ERROR;
    size_t count = 0;
    flow f = FLOW_NEXT;
    if (v.kind == GT_LIST || v.kind == GT_MAP) {
        count = v.u.agg->n;
        for (size_t i = 0; i < count; i++) {
            gt_value key = v.kind == GT_MAP ? gt_str_ref(v.u.agg->keys[i], strlen(v.u.agg->keys[i])) : gt_int((int64_t)i);
            f = range_body(st, n, mark, key, v.u.agg->items[i]);
            if (f == FLOW_ERROR) return f;
            if (f == FLOW_BREAK) break;
        }
    } else if (v.kind == GT_INT) { /* Go 1.22: range over an integer */
        if (n->u.branch.pipe->u.pipe.n_decl > 1)
            return gt_exec_error(st->ex, n, "can't use %lld to iterate over more than one variable", (long long)v.u.i), FLOW_ERROR;
        count = v.u.i > 0 ? (size_t)v.u.i : 0;
        for (size_t i = 0; i < count; i++) {
            f = range_body(st, n, mark, gt_int((int64_t)i), gt_int((int64_t)i));
            if (f == FLOW_ERROR) return f;
            if (f == FLOW_BREAK) break;
        }
    } else if (v.kind != GT_NIL) {
        gt_exec_error(st->ex, n, "range can't iterate over %s", gt_type_name(v));
        return FLOW_ERROR;
    }
    st->n_vars = mark;
    if (count == 0 && n->u.branch.else_list) f = walk(st, dot, n->u.branch.else_list);
    st->n_vars = mark;
    return f == FLOW_ERROR ? f : FLOW_NEXT;
}

static flow walk(gt_state *st, gt_value dot, const gt_node *n) {
    if (!step(st, n)) return FLOW_ERROR;
    switch (n->kind) {
    case GN_LIST:
        for (size_t i = 0; i < n->u.list.n; i++) {
            flow f = walk(st, dot, n->u.list.items[i]);
            if (f != FLOW_NEXT) return f;
        }
        return FLOW_NEXT;
    case GN_TEXT: jbuf_put(st->ex->out, n->u.text.s, n->u.text.len); return write_out(st, n) ? FLOW_NEXT : FLOW_ERROR;
    case GN_ACTION: {
        gt_value v;
        if (!eval_pipeline(st, dot, n->u.action, true, &v)) return FLOW_ERROR;
        if (n->u.action->u.pipe.n_decl == 0) gt_write_value(st->ex->out, v, 0);
        return write_out(st, n) ? FLOW_NEXT : FLOW_ERROR;
    }
    case GN_IF:
    case GN_WITH: {
        size_t mark = st->n_vars;
        gt_value v;
        if (!eval_pipeline(st, dot, n->u.branch.pipe, true, &v)) return FLOW_ERROR;
        flow f = FLOW_NEXT;
        if (gt_truth(v)) f = walk(st, n->kind == GN_WITH ? v : dot, n->u.branch.list);
        else if (n->u.branch.else_list) f = walk(st, dot, n->u.branch.else_list);
        st->n_vars = mark;
        return f;
    }
    case GN_RANGE: return walk_range(st, dot, n);
    case GN_BREAK: return FLOW_BREAK;
    case GN_CONTINUE: return FLOW_CONTINUE;
    default: gt_exec_error(st->ex, n, "unexpected node"); return FLOW_ERROR;
    }
}

bool gt_execute(gt_exec *ex, const gt_node *root, gt_value data) {
    gt_state st = {.ex = ex};
    if (!push_var(&st, root, "$", data)) return false;
    return walk(&st, data, root) != FLOW_ERROR;
}
