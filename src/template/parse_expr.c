/* The parser's expressions: jinja2's grammar by recursive descent, with
 * Python's operator precedence; and the errors and node building the
 * statement parser shares. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "template/parse_internal.h"

/* --- errors and building ------------------------------------------------------------------- */

static const char *describe(const token *t, char *buf, size_t cap) {
    switch (t->kind) {
    case T_EOF: return "end of template";
    case T_BLOCK_END: return "end of statement block";
    case T_VAR_END: return "end of print statement";
    case T_TEXT: return "template data";
    case T_STRING: return "string";
    case T_INT:
    case T_FLOAT: return "number";
    default: snprintf(buf, cap, "'%.*s'", (int)(t->len > 40 ? 40 : t->len), t->text); return buf;
    }
}

void parser_fail_at(parser *p, const token *t, const char *fmt, ...) {
    if (!p->failed) {
        char msg[400];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        tpl_set_error(p->err, SPROUT_ERR_FORMAT, t->line, t->column, "%s", msg);
    }
    p->failed = true;
}

void parser_fail_oom(parser *p, const token *t) {
    if (!p->failed) tpl_set_error(p->err, SPROUT_ERR_OUT_OF_MEMORY, t->line, t->column, "out of memory");
    p->failed = true;
}

void parser_fail_unexpected(parser *p, const token *t, const char *expected) {
    char buf[64];
    if (expected) parser_fail_at(p, t, "expected %s, got %s", expected, describe(t, buf, sizeof buf));
    else parser_fail_at(p, t, "unexpected %s", describe(t, buf, sizeof buf));
}

bool parser_expect_op(parser *p, const char *op) {
    if (is_op(peek(p), op)) {
        advance(p);
        return true;
    }
    char want[16];
    snprintf(want, sizeof want, "'%s'", op);
    parser_fail_unexpected(p, peek(p), want);
    return false;
}

bool parser_expect_kind(parser *p, tok_kind kind, const char *what) {
    if (peek(p)->kind == kind) {
        advance(p);
        return true;
    }
    parser_fail_unexpected(p, peek(p), what);
    return false;
}

node *parser_new_node(parser *p, node_kind kind, const token *at) {
    node *n = sp_arena_alloc(&p->prog->arena, sizeof *n);
    if (!n) {
        parser_fail_oom(p, at);
        return NULL;
    }
    n->kind = kind;
    n->line = at->line;
    n->column = at->column;
    return n;
}

const char *parser_intern(parser *p, const char *s, size_t len) {
    char *c = sp_arena_strndup(&p->prog->arena, s, len);
    if (!c) p->failed = true;
    return c;
}

void nvec_push(parser *p, nvec *v, node *n) {
    if (v->n == v->cap) {
        size_t cap = v->cap ? 2 * v->cap : 8;
        node **items = realloc(v->items, cap * sizeof *items);
        if (!items) {
            p->failed = true;
            return;
        }
        v->items = items;
        v->cap = cap;
    }
    v->items[v->n++] = n;
}

node_list nvec_finish(parser *p, nvec *v) {
    node_list l = {NULL, v->n};
    if (v->n) {
        l.items = sp_arena_alloc(&p->prog->arena, v->n * sizeof *l.items);
        if (l.items) memcpy(l.items, v->items, v->n * sizeof *l.items);
        else p->failed = true;
    }
    free(v->items);
    v->items = NULL;
    v->n = v->cap = 0;
    return l;
}

bool parser_push_name(parser *p, const char ***names, size_t *count, const token *t) {
    const char **grown = realloc(*names, (*count + 1) * sizeof *grown);
    if (!grown) {
        p->failed = true;
        return false;
    }
    *names = grown;
    grown[(*count)++] = parser_intern(p, t->text, t->len);
    return true;
}

bool parser_enter(parser *p) {
    if (++p->depth > TPL_MAX_PARSE_DEPTH) {
        parser_fail_at(p, peek(p), "template nested too deeply (more than %d levels)", TPL_MAX_PARSE_DEPTH);
        return false;
    }
    return true;
}
void parser_leave(parser *p) { p->depth--; }

/* --- expressions ----------------------------------------------------------------------------- */

static node *parse_unary(parser *p, bool with_filter);
static node *parse_primary(parser *p);
static node *parse_postfix(parser *p, node *n);

bool parse_call_args(parser *p, node *call) {
    nvec args = {0}, kwargs = {0};
    const char **kwnames = NULL;
    size_t n_kw = 0;
    advance(p); /* ( */
    while (!p->failed && !is_op(peek(p), ")")) {
        if (args.n || kwargs.n) {
            if (!parser_expect_op(p, ",")) break;
            if (is_op(peek(p), ")")) break;
        }
        if (peek(p)->kind == T_NAME && is_op(peek2(p), "=")) {
            token *name = advance(p);
            advance(p);
            if (!parser_push_name(p, &kwnames, &n_kw, name)) break;
            nvec_push(p, &kwargs, parse_expression(p, true));
        } else {
            if (kwargs.n) {
                parser_fail_at(p, peek(p), "positional argument follows keyword argument");
                break;
            }
            nvec_push(p, &args, parse_expression(p, true));
        }
    }
    if (!p->failed) parser_expect_op(p, ")");
    call->u.call.args = nvec_finish(p, &args);
    call->u.call.kwargs = nvec_finish(p, &kwargs);
    if (n_kw) {
        call->u.call.kwnames = sp_arena_alloc(&p->prog->arena, n_kw * sizeof *kwnames);
        if (call->u.call.kwnames) memcpy(call->u.call.kwnames, kwnames, n_kw * sizeof *kwnames);
    }
    free(kwnames);
    return !p->failed;
}

const char *parse_dotted_name(parser *p) {
    token *t = peek(p);
    if (t->kind != T_NAME) {
        parser_fail_unexpected(p, t, "a name");
        return NULL;
    }
    advance(p);
    size_t len = t->len;
    char buf[256];
    snprintf(buf, sizeof buf, "%.*s", (int)(len > 200 ? 200 : len), t->text);
    while (is_op(peek(p), ".") && peek2(p)->kind == T_NAME) {
        advance(p);
        token *part = advance(p);
        size_t used = strlen(buf);
        snprintf(buf + used, sizeof buf - used, ".%.*s", (int)(part->len > 50 ? 50 : part->len), part->text);
    }
    return parser_intern(p, buf, strlen(buf));
}

static node *parse_filter(parser *p, node *operand) {
    token *at = advance(p); /* | */
    node *f = parser_new_node(p, N_FILTER, at);
    if (!f) return NULL;
    f->u.call.callee = operand;
    f->u.call.name = parse_dotted_name(p);
    if (!p->failed && is_op(peek(p), "(")) parse_call_args(p, f);
    return f;
}

static node *parse_test(parser *p, node *operand) {
    token *at = advance(p); /* is */
    node *t = parser_new_node(p, N_TEST, at);
    if (!t) return NULL;
    t->u.call.callee = operand;
    if (is_name(peek(p), "not")) {
        advance(p);
        t->u.call.negated = true;
    }
    t->u.call.name = parse_dotted_name(p);
    if (p->failed) return t;
    token *next = peek(p);
    if (is_op(next, "(")) {
        parse_call_args(p, t);
    } else if ((next->kind == T_NAME || next->kind == T_STRING || next->kind == T_INT || next->kind == T_FLOAT ||
                is_op(next, "[") || is_op(next, "{")) &&
               !is_name(next, "else") && !is_name(next, "or") && !is_name(next, "and")) {
        if (is_name(next, "is")) {
            parser_fail_at(p, next, "You cannot chain multiple tests with is");
            return t;
        }
        nvec args = {0};
        node *arg = parse_primary(p);
        nvec_push(p, &args, parse_postfix(p, arg));
        t->u.call.args = nvec_finish(p, &args);
    }
    return t;
}

/* callee(args...), the '(' at t; NULL (the parse failed) when out of memory */
static node *parse_call(parser *p, node *callee, const token *t) {
    node *call = parser_new_node(p, N_CALL, t);
    if (!call) return NULL;
    call->u.call.callee = callee;
    parse_call_args(p, call);
    return call;
}

static node *parse_filter_expr(parser *p, node *n) {
    while (!p->failed && n) {
        token *t = peek(p);
        if (is_op(t, "|")) n = parse_filter(p, n);
        else if (is_name(t, "is")) n = parse_test(p, n);
        else if (is_op(t, "(")) n = parse_call(p, n, t);
        else break;
    }
    return n;
}

static node *parse_subscript(parser *p, node *obj) {
    token *at = advance(p); /* [ */
    node *start = NULL;
    if (!is_op(peek(p), ":")) {
        start = parse_expression(p, true);
        if (p->failed) return NULL;
        if (is_op(peek(p), "]")) {
            advance(p);
            node *n = parser_new_node(p, N_GETITEM, at);
            if (n) {
                n->u.item.obj = obj;
                n->u.item.index = start;
            }
            return n;
        }
    }
    node *n = parser_new_node(p, N_SLICE, at);
    if (!n) return NULL;
    n->u.slice.obj = obj;
    n->u.slice.start = start;
    if (!parser_expect_op(p, ":")) return NULL;
    if (!is_op(peek(p), "]") && !is_op(peek(p), ":")) n->u.slice.stop = parse_expression(p, true);
    if (is_op(peek(p), ":")) {
        advance(p);
        if (!is_op(peek(p), "]")) n->u.slice.step = parse_expression(p, true);
    }
    parser_expect_op(p, "]");
    return n;
}

static node *parse_postfix(parser *p, node *n) {
    while (!p->failed && n) {
        token *t = peek(p);
        if (is_op(t, ".")) {
            advance(p);
            token *name = peek(p);
            if (name->kind == T_NAME) {
                advance(p);
                node *g = parser_new_node(p, N_GETATTR, t);
                if (!g) return NULL;
                g->u.attr.obj = n;
                g->u.attr.name = parser_intern(p, name->text, name->len);
                n = g;
            } else if (name->kind == T_INT) {
                advance(p);
                node *idx = parser_new_node(p, N_LITERAL, name);
                node *g = parser_new_node(p, N_GETITEM, t);
                if (!idx || !g) return NULL;
                idx->u.literal = jv_int(name->i);
                g->u.item.obj = n;
                g->u.item.index = idx;
                n = g;
            } else {
                parser_fail_unexpected(p, name, "an attribute name");
                return NULL;
            }
        } else if (is_op(t, "[")) {
            n = parse_subscript(p, n);
        } else if (is_op(t, "(")) {
            n = parse_call(p, n, t);
        } else break;
    }
    return n;
}

static node *literal_node(parser *p, const token *at, jv v) {
    node *n = parser_new_node(p, N_LITERAL, at);
    if (n) n->u.literal = v;
    return n;
}

static node *parse_primary(parser *p) {
    if (!parser_enter(p)) return NULL;
    token *t = peek(p);
    node *n = NULL;
    if (t->kind == T_NAME) {
        advance(p);
        if (is_name(t, "true") || is_name(t, "True")) n = literal_node(p, t, jv_bool(true));
        else if (is_name(t, "false") || is_name(t, "False")) n = literal_node(p, t, jv_bool(false));
        else if (is_name(t, "none") || is_name(t, "None")) n = literal_node(p, t, jv_none());
        else {
            n = parser_new_node(p, N_NAME, t);
            if (n) n->u.name = parser_intern(p, t->text, t->len);
        }
    } else if (t->kind == T_STRING) {
        /* adjacent literals join: "a" "b" is "ab" */
        jbuf b = {0};
        while (peek(p)->kind == T_STRING) {
            token *s = advance(p);
            jbuf_put(&b, s->text, s->len);
        }
        const bool oom = b.oom;
        jv v = oom ? jv_none() : jv_str(&p->prog->literals, b.data, b.len);
        jbuf_free(&b);
        if (v.type != JV_STR && (oom || p->prog->literals.out_of_memory)) parser_fail_oom(p, t);
        else if (v.type != JV_STR) parser_fail_at(p, t, "the template's string literals pass %zu bytes", p->prog->literals.limit);
        else n = literal_node(p, t, v);
    } else if (t->kind == T_INT) {
        advance(p);
        n = literal_node(p, t, jv_int(t->i));
    } else if (t->kind == T_FLOAT) {
        advance(p);
        n = literal_node(p, t, jv_float(t->f));
    } else if (is_op(t, "(")) {
        advance(p);
        n = parse_tuple(p, true, true);
        parser_expect_op(p, ")");
    } else if (is_op(t, "[")) {
        advance(p);
        nvec items = {0};
        while (!p->failed && !is_op(peek(p), "]")) {
            if (items.n && (!parser_expect_op(p, ",") || is_op(peek(p), "]"))) break;
            nvec_push(p, &items, parse_expression(p, true));
        }
        parser_expect_op(p, "]");
        n = parser_new_node(p, N_LIST, t);
        if (n) n->u.items = nvec_finish(p, &items);
        else free(items.items);
    } else if (is_op(t, "{")) {
        advance(p);
        nvec keys = {0}, values = {0};
        while (!p->failed && !is_op(peek(p), "}")) {
            if (keys.n && (!parser_expect_op(p, ",") || is_op(peek(p), "}"))) break;
            nvec_push(p, &keys, parse_expression(p, true));
            if (!parser_expect_op(p, ":")) break;
            nvec_push(p, &values, parse_expression(p, true));
        }
        parser_expect_op(p, "}");
        n = parser_new_node(p, N_DICT, t);
        if (n) {
            n->u.dict.keys = nvec_finish(p, &keys);
            n->u.dict.values = nvec_finish(p, &values);
        } else {
            free(keys.items);
            free(values.items);
        }
    } else {
        parser_fail_unexpected(p, t, NULL);
    }
    parser_leave(p);
    return p->failed ? NULL : n;
}

static node *binary(parser *p, node_kind kind, int op, const token *at, node *a, node *b) {
    node *n = parser_new_node(p, kind, at);
    if (!n) return NULL;
    n->u.op.op = op;
    n->u.op.a = a;
    n->u.op.b = b;
    return n;
}

static node *parse_unary(parser *p, bool with_filter) {
    if (!parser_enter(p)) return NULL;
    token *t = peek(p);
    node *n;
    if (is_op(t, "-") || is_op(t, "+")) {
        advance(p);
        n = binary(p, N_UNARY, t->text[0], t, parse_unary(p, false), NULL);
    } else {
        n = parse_primary(p);
    }
    n = parse_postfix(p, n);
    if (with_filter) n = parse_filter_expr(p, n);
    parser_leave(p);
    return p->failed ? NULL : n;
}

static node *parse_pow(parser *p) {
    node *n = parse_unary(p, true);
    while (!p->failed && is_op(peek(p), "**")) {
        token *t = advance(p);
        n = binary(p, N_BINARY, 'P', t, n, parse_unary(p, true));
    }
    return n;
}

static node *parse_math2(parser *p) {
    node *n = parse_pow(p);
    for (;;) {
        token *t = peek(p);
        int op = is_op(t, "*") ? '*' : is_op(t, "/") ? '/' : is_op(t, "//") ? 'F' : is_op(t, "%") ? '%' : 0;
        if (!op || p->failed) break;
        advance(p);
        n = binary(p, N_BINARY, op, t, n, parse_pow(p));
    }
    return n;
}

static node *parse_concat(parser *p) {
    node *n = parse_math2(p);
    while (!p->failed && is_op(peek(p), "~")) {
        token *t = advance(p);
        n = binary(p, N_BINARY, '~', t, n, parse_math2(p));
    }
    return n;
}

static node *parse_math1(parser *p) {
    node *n = parse_concat(p);
    for (;;) {
        token *t = peek(p);
        int op = is_op(t, "+") ? '+' : is_op(t, "-") ? '-' : 0;
        if (!op || p->failed) break;
        advance(p);
        n = binary(p, N_BINARY, op, t, n, parse_concat(p));
    }
    return n;
}

/* Comparisons chain as in Python: a < b < c is (a < b) and (b < c). */
static node *parse_compare(parser *p) {
    node *n = parse_math1(p), *chain = NULL, *prev = n;
    for (;;) {
        token *t = peek(p);
        int op = is_op(t, "==") ? 'E' : is_op(t, "!=") ? 'N' : is_op(t, "<") ? '<' : is_op(t, ">") ? '>' :
                 is_op(t, "<=") ? 'L' : is_op(t, ">=") ? 'G' : is_name(t, "in") ? 'I' :
                 is_name(t, "not") && is_name(peek2(p), "in") ? 'J' : 0;
        if (!op || p->failed) break;
        advance(p);
        if (op == 'J') advance(p);
        node *rhs = parse_math1(p);
        node *cmp = binary(p, N_BINARY, op, t, prev, rhs);
        chain = chain ? binary(p, N_AND, 0, t, chain, cmp) : cmp;
        prev = rhs;
    }
    return chain ? chain : n;
}

static node *parse_not(parser *p) {
    if (is_name(peek(p), "not")) {
        token *t = advance(p);
        if (!parser_enter(p)) return NULL;
        node *n = binary(p, N_UNARY, '!', t, parse_not(p), NULL);
        parser_leave(p);
        return n;
    }
    return parse_compare(p);
}

static node *parse_and(parser *p) {
    node *n = parse_not(p);
    while (!p->failed && is_name(peek(p), "and")) {
        token *t = advance(p);
        n = binary(p, N_AND, 0, t, n, parse_not(p));
    }
    return n;
}

static node *parse_or(parser *p) {
    node *n = parse_and(p);
    while (!p->failed && is_name(peek(p), "or")) {
        token *t = advance(p);
        n = binary(p, N_OR, 0, t, n, parse_and(p));
    }
    return n;
}

node *parse_expression(parser *p, bool with_condexpr) {
    if (!parser_enter(p)) return NULL;
    node *n = parse_or(p);
    while (with_condexpr && !p->failed && is_name(peek(p), "if")) {
        token *t = advance(p);
        node *c = parser_new_node(p, N_COND, t);
        if (!c) break;
        c->u.cond.then = n;
        c->u.cond.cond = parse_or(p);
        if (is_name(peek(p), "else")) {
            advance(p);
            c->u.cond.otherwise = parse_expression(p, true);
        }
        n = c;
    }
    parser_leave(p);
    return p->failed ? NULL : n;
}

/* Comma-separated expressions; more than one (or a trailing comma) make a
 * tuple. */
node *parse_tuple(parser *p, bool with_condexpr, bool explicit_parens) {
    token *at = peek(p);
    if (explicit_parens && is_op(at, ")")) {
        node *n = parser_new_node(p, N_TUPLE, at);
        return n;
    }
    nvec items = {0};
    bool trailing_comma = false;
    for (;;) {
        nvec_push(p, &items, parse_expression(p, with_condexpr));
        if (p->failed || !is_op(peek(p), ",")) break;
        advance(p);
        trailing_comma = true;
        token *next = peek(p);
        if (next->kind == T_VAR_END || next->kind == T_BLOCK_END || is_op(next, ")") || is_name(next, "in") ||
            is_name(next, "if") || is_name(next, "recursive"))
            break;
        trailing_comma = false;
    }
    if (items.n == 1 && !trailing_comma) {
        node *only = items.items[0];
        free(items.items);
        return only;
    }
    node *n = parser_new_node(p, N_TUPLE, at);
    if (n) n->u.items = nvec_finish(p, &items);
    else free(items.items);
    return n;
}
