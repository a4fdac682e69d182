/* The parser's statements ({% if %}, {% for %}, {% macro %}...) and the
 * template body they nest in; tpl_parse runs the lexer, then this. */
#include <stdlib.h>
#include <string.h>

#include "template/parse_internal.h"

/* --- statements ------------------------------------------------------------------------- */

static node *parse_body(parser *p, const char *const *end_names, const token *opener);

static bool at_block_named(parser *p, const char *const *names) {
    if (peek(p)->kind != T_BLOCK_BEGIN) return false;
    token *t = peek2(p);
    for (size_t i = 0; names && names[i]; i++)
        if (is_name(t, names[i])) return true;
    return false;
}

static bool end_block(parser *p) { return parser_expect_kind(p, T_BLOCK_END, "end of statement block"); }

/* Consumes "{% NAME" (the caller checked it is there). */
static token *consume_tag(parser *p) {
    advance(p);
    return advance(p);
}

static bool parse_targets(parser *p, const char ***targets, size_t *n) {
    const char **list = NULL;
    size_t count = 0;
    bool parens = is_op(peek(p), "(");
    if (parens) advance(p);
    for (;;) {
        token *t = peek(p);
        if (t->kind != T_NAME) {
            parser_fail_unexpected(p, t, "a variable name");
            break;
        }
        advance(p);
        const char **grown = realloc(list, (count + 1) * sizeof *grown);
        if (!grown) {
            p->failed = true;
            break;
        }
        list = grown;
        list[count++] = parser_intern(p, t->text, t->len);
        if (!is_op(peek(p), ",")) break;
        advance(p);
    }
    if (parens && !p->failed) parser_expect_op(p, ")");
    if (!p->failed) {
        *targets = sp_arena_alloc(&p->prog->arena, count * sizeof *list + 1);
        if (*targets) memcpy(*targets, list, count * sizeof *list);
        *n = count;
    }
    free(list);
    return !p->failed;
}

static node *parse_if(parser *p, const token *at) {
    static const char *const ends[] = {"elif", "else", "endif", NULL};
    static const char *const endif[] = {"endif", NULL};
    node *n = parser_new_node(p, S_IF, at);
    if (!n) return NULL;
    nvec conds = {0}, bodies = {0};
    for (;;) {
        nvec_push(p, &conds, parse_tuple(p, true, false));
        if (!end_block(p)) break;
        nvec_push(p, &bodies, parse_body(p, ends, at));
        if (p->failed) break;
        token *tag = consume_tag(p);
        if (is_name(tag, "elif")) continue;
        if (is_name(tag, "else")) {
            if (!end_block(p)) break;
            n->u.if_.else_body = parse_body(p, endif, at);
            if (!p->failed) consume_tag(p);
        }
        end_block(p);
        break;
    }
    n->u.if_.conds = nvec_finish(p, &conds);
    n->u.if_.bodies = nvec_finish(p, &bodies);
    return n;
}

static node *parse_for(parser *p, const token *at) {
    static const char *const ends[] = {"endfor", "else", NULL};
    static const char *const endfor[] = {"endfor", NULL};
    node *n = parser_new_node(p, S_FOR, at);
    if (!n || !parse_targets(p, &n->u.for_.targets, &n->u.for_.n_targets)) return NULL;
    if (!is_name(peek(p), "in")) {
        parser_fail_unexpected(p, peek(p), "'in'");
        return NULL;
    }
    advance(p);
    n->u.for_.iter = parse_tuple(p, false, false);
    if (!p->failed && is_name(peek(p), "if")) {
        advance(p);
        n->u.for_.filter = parse_expression(p, true);
    }
    if (!p->failed && is_name(peek(p), "recursive")) {
        parser_fail_at(p, peek(p), "recursive loops are not supported");
        return NULL;
    }
    if (!end_block(p)) return NULL;
    p->loop_depth++;
    n->u.for_.body = parse_body(p, ends, at);
    p->loop_depth--;
    if (p->failed) return NULL;
    token *tag = consume_tag(p);
    if (is_name(tag, "else")) {
        if (!end_block(p)) return NULL;
        n->u.for_.else_body = parse_body(p, endfor, at);
        if (p->failed) return NULL;
        consume_tag(p);
    }
    end_block(p);
    return n;
}

static node *parse_set(parser *p, const token *at) {
    static const char *const endset[] = {"endset", NULL};
    node *n = parser_new_node(p, S_SET, at);
    if (!n) return NULL;
    token *first = peek(p);
    if (first->kind == T_NAME && is_op(peek2(p), ".")) { /* set ns.attr = value */
        advance(p);
        advance(p);
        token *attr = peek(p);
        if (attr->kind != T_NAME) {
            parser_fail_unexpected(p, attr, "an attribute name");
            return NULL;
        }
        advance(p);
        n->u.set.targets = sp_arena_alloc(&p->prog->arena, sizeof(char *));
        if (!n->u.set.targets) return NULL;
        n->u.set.targets[0] = parser_intern(p, first->text, first->len);
        n->u.set.n_targets = 1;
        n->u.set.attr = parser_intern(p, attr->text, attr->len);
    } else if (!parse_targets(p, &n->u.set.targets, &n->u.set.n_targets)) {
        return NULL;
    }
    if (is_op(peek(p), "=")) {
        advance(p);
        n->u.set.value = parse_tuple(p, true, false);
        end_block(p);
        return n;
    }
    if (n->u.set.attr || n->u.set.n_targets != 1) {
        parser_fail_unexpected(p, peek(p), "'='");
        return NULL;
    }
    if (!end_block(p)) return NULL;
    n->kind = S_SET_BLOCK;
    n->u.set.body = parse_body(p, endset, at);
    if (!p->failed) {
        consume_tag(p);
        end_block(p);
    }
    return n;
}

/* "(a, b=default, ...)" of a macro or a call block, into n's macro fields. */
static bool parse_params(parser *p, node *n) {
    if (!parser_expect_op(p, "(")) return false;
    const char **params = NULL;
    node **defaults = NULL;
    size_t count = 0;
    while (!p->failed && !is_op(peek(p), ")")) {
        if (count && (!parser_expect_op(p, ",") || is_op(peek(p), ")"))) break;
        token *param = peek(p);
        if (param->kind != T_NAME) {
            parser_fail_unexpected(p, param, "a parameter name");
            break;
        }
        advance(p);
        const char **gp = realloc(params, (count + 1) * sizeof *gp);
        node **gd = gp ? realloc(defaults, (count + 1) * sizeof *gd) : NULL;
        if (gp) params = gp;
        if (!gp || !gd) {
            p->failed = true;
            break;
        }
        defaults = gd;
        params[count] = parser_intern(p, param->text, param->len);
        defaults[count] = NULL;
        if (is_op(peek(p), "=")) {
            advance(p);
            defaults[count] = parse_expression(p, true);
        }
        count++;
    }
    if (!p->failed) parser_expect_op(p, ")");
    if (!p->failed && count) {
        n->u.macro.params = sp_arena_alloc(&p->prog->arena, count * sizeof *params);
        n->u.macro.defaults = sp_arena_alloc(&p->prog->arena, count * sizeof *defaults);
        if (n->u.macro.params && n->u.macro.defaults) {
            memcpy(n->u.macro.params, params, count * sizeof *params);
            memcpy(n->u.macro.defaults, defaults, count * sizeof *defaults);
        } else p->failed = true;
    }
    n->u.macro.n_params = count;
    free(params);
    free(defaults);
    return !p->failed;
}

/* The body of a macro or call block up to its end tag (not consumed), and
 * which of varargs, kwargs and caller it names. */
static bool parse_macro_body(parser *p, node *n, const char *const *end_names, const token *at) {
    const size_t first = p->pos;
    int saved_loops = p->loop_depth;
    p->loop_depth = 0; /* a loop around the definition is not around the body */
    n->u.macro.body = parse_body(p, end_names, at);
    p->loop_depth = saved_loops;
    if (p->failed) return false;
    for (size_t i = first; i < p->pos; i++) {
        const token *t = &p->toks[i];
        if (t->kind != T_NAME || (i > 0 && is_op(&p->toks[i - 1], "."))) continue;
        n->u.macro.catch_varargs |= is_name(t, "varargs");
        n->u.macro.catch_kwargs |= is_name(t, "kwargs");
        n->u.macro.takes_caller |= is_name(t, "caller");
    }
    return true;
}

static node *parse_macro(parser *p, const token *at) {
    static const char *const endmacro[] = {"endmacro", NULL};
    node *n = parser_new_node(p, S_MACRO, at);
    token *name = peek(p);
    if (!n || name->kind != T_NAME) {
        parser_fail_unexpected(p, name, "a macro name");
        return NULL;
    }
    advance(p);
    n->u.macro.name = parser_intern(p, name->text, name->len);
    if (!parse_params(p, n) || !end_block(p) || !parse_macro_body(p, n, endmacro, at)) return NULL;
    consume_tag(p);
    if (peek(p)->kind == T_NAME) advance(p); /* {% endmacro name %} */
    end_block(p);
    return n;
}

/* {% call(params) macro(args) %}body{% endcall %}: the body is the macro's caller(). */
static node *parse_call_block(parser *p, const token *at) {
    static const char *const endcall[] = {"endcall", NULL};
    node *n = parser_new_node(p, S_CALL_BLOCK, at);
    node *caller = n ? parser_new_node(p, S_MACRO, at) : NULL;
    if (!caller) return NULL;
    caller->u.macro.name = "caller";
    if (is_op(peek(p), "(") && !parse_params(p, caller)) return NULL;
    token *call_at = peek(p);
    node *call = parse_expression(p, true);
    if (p->failed) return NULL;
    if (call->kind != N_CALL) {
        parser_fail_at(p, call_at, "expected call");
        return NULL;
    }
    if (!end_block(p) || !parse_macro_body(p, caller, endcall, at)) return NULL;
    consume_tag(p);
    end_block(p);
    n->u.call_block.caller = caller;
    n->u.call_block.call = call;
    return n;
}

/* {% with a = x, b = y %}body{% endwith %} */
static node *parse_with(parser *p, const token *at) {
    static const char *const endwith[] = {"endwith", NULL};
    node *n = parser_new_node(p, S_WITH, at);
    if (!n) return NULL;
    const char **names = NULL;
    nvec values = {0};
    size_t count = 0;
    while (!p->failed && peek(p)->kind != T_BLOCK_END) {
        if (count && !parser_expect_op(p, ",")) break;
        token *name = peek(p);
        if (name->kind != T_NAME) {
            parser_fail_unexpected(p, name, "a variable name");
            break;
        }
        advance(p);
        if (!parser_expect_op(p, "=") || !parser_push_name(p, &names, &count, name)) break;
        nvec_push(p, &values, parse_expression(p, true));
    }
    n->u.with.values = nvec_finish(p, &values);
    if (!p->failed && count) {
        n->u.with.names = sp_arena_alloc(&p->prog->arena, count * sizeof *names);
        if (n->u.with.names) memcpy(n->u.with.names, names, count * sizeof *names);
        else p->failed = true;
    }
    free(names);
    if (p->failed || !end_block(p)) return NULL;
    n->u.with.body = parse_body(p, endwith, at);
    if (p->failed) return NULL;
    consume_tag(p);
    end_block(p);
    return n;
}

static node *parse_statement(parser *p) {
    token *begin = advance(p); /* {% */
    token *t = peek(p);
    if (t->kind != T_NAME) {
        parser_fail_unexpected(p, t, "a statement name");
        return NULL;
    }
    advance(p);
    if (is_name(t, "if")) return parse_if(p, begin);
    if (is_name(t, "for")) return parse_for(p, begin);
    if (is_name(t, "set")) return parse_set(p, begin);
    if (is_name(t, "macro")) return parse_macro(p, begin);
    if (is_name(t, "call")) return parse_call_block(p, begin);
    if (is_name(t, "with")) return parse_with(p, begin);
    if (is_name(t, "break") || is_name(t, "continue")) {
        if (p->loop_depth == 0) {
            parser_fail_at(p, t, "'%.*s' outside of a loop", (int)t->len, t->text);
            return NULL;
        }
        node *n = parser_new_node(p, is_name(t, "break") ? S_BREAK : S_CONTINUE, begin);
        end_block(p);
        return n;
    }
    if (is_name(t, "generation")) { /* transformers' assistant-mask tag: transparent */
        static const char *const end[] = {"endgeneration", NULL};
        if (!end_block(p)) return NULL;
        node *body = parse_body(p, end, begin);
        if (!p->failed) {
            consume_tag(p);
            end_block(p);
        }
        return body;
    }
    if (is_name(t, "filter")) {
        static const char *const end[] = {"endfilter", NULL};
        node *n = parser_new_node(p, S_FILTER_BLOCK, begin);
        node *f = n ? parser_new_node(p, N_FILTER, t) : NULL;
        if (!f) return NULL;
        f->u.call.name = parse_dotted_name(p);
        if (!p->failed && is_op(peek(p), "(")) parse_call_args(p, f);
        n->u.filter_block.filter = f;
        if (p->failed || !end_block(p)) return NULL;
        n->u.filter_block.body = parse_body(p, end, begin);
        if (!p->failed) {
            consume_tag(p);
            end_block(p);
        }
        return n;
    }
    static const char *const unsupported[] = {"include", "import", "from", "extends", "block", "do", "autoescape", "trans"};
    for (size_t i = 0; i < sizeof unsupported / sizeof unsupported[0]; i++)
        if (is_name(t, unsupported[i])) {
            parser_fail_at(p, t, "the '%s' tag is not supported", unsupported[i]);
            return NULL;
        }
    parser_fail_at(p, t, "Encountered unknown tag '%.*s'.", (int)(t->len > 40 ? 40 : t->len), t->text);
    return NULL;
}

/* Statements until a block tag named in end_names (not consumed), or the
 * end of the template when end_names is NULL. */
static node *parse_body(parser *p, const char *const *end_names, const token *opener) {
    if (!parser_enter(p)) return NULL;
    node *body = parser_new_node(p, S_BODY, peek(p));
    nvec items = {0};
    while (!p->failed && body) {
        token *t = peek(p);
        if (t->kind == T_EOF) {
            if (end_names) {
                const char *closer = end_names[0];
                for (size_t k = 0; end_names[k]; k++)
                    if (!strncmp(end_names[k], "end", 3)) closer = end_names[k];
                parser_fail_at(p, opener, "unexpected end of template: this block needs '{%% %s %%}'", closer);
            }
            break;
        }
        if (end_names && at_block_named(p, end_names)) break;
        if (t->kind == T_TEXT) {
            advance(p);
            node *n = parser_new_node(p, S_TEXT, t);
            if (!n) break;
            n->u.literal = jv_str(&p->prog->literals, t->text, t->len);
            nvec_push(p, &items, n);
        } else if (t->kind == T_VAR_BEGIN) {
            advance(p);
            node *n = parser_new_node(p, S_OUTPUT, t);
            if (!n) break;
            n->u.output = parse_tuple(p, true, false);
            if (p->failed) break;
            parser_expect_kind(p, T_VAR_END, "end of print statement '}}'");
            nvec_push(p, &items, n);
        } else if (t->kind == T_BLOCK_BEGIN) {
            token *name = peek2(p);
            if (name->kind == T_NAME && (is_name(name, "endif") || is_name(name, "endfor") || is_name(name, "endmacro") ||
                                         is_name(name, "endset") || is_name(name, "else") || is_name(name, "elif") ||
                                         is_name(name, "endfilter") || is_name(name, "endgeneration") || is_name(name, "endcall") ||
                                         is_name(name, "endwith"))) {
                parser_fail_at(p, name, "Encountered unknown tag '%.*s'%s", (int)name->len, name->text,
                        end_names ? "" : " (no block is open)");
                break;
            }
            nvec_push(p, &items, parse_statement(p));
        } else {
            parser_fail_unexpected(p, t, NULL);
        }
    }
    if (body) body->u.items = nvec_finish(p, &items);
    else free(items.items);
    parser_leave(p);
    return p->failed ? NULL : body;
}

bool tpl_parse(const char *source, size_t len, tpl_program *prog, tpl_error *err) {
    memset(prog, 0, sizeof *prog);
    memset(err, 0, sizeof *err);
    prog->literals.limit = SIZE_MAX / 2;
    token *toks;
    bool ok = tpl_lex(source, len, prog, err, &toks);
    if (ok) {
        parser p = {.toks = toks, .prog = prog, .err = err};
        prog->root = parse_body(&p, NULL, toks);
        ok = !p.failed && prog->root;
        if (!ok && err->status == SPROUT_OK) tpl_set_error(err, SPROUT_ERR_OUT_OF_MEMORY, 0, 0, "out of memory while parsing");
        free(toks);
    }
    return ok;
}

void tpl_program_free(tpl_program *prog) {
    sp_arena_free(&prog->arena);
    sp_arena_free(&prog->literals.arena);
    memset(prog, 0, sizeof *prog);
}
