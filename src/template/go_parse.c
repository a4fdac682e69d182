/* The parser of Go's text/template (text/template/parse's grammar and its
 * parse-time checks: defined functions and variables, {{break}} only in
 * {{range}}), the dialect test, Ollama's appended {{ .Response }} and its
 * cut of the tree after the first .Response. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "template/go_template.h"

typedef struct gt_parser {
    gt_token *toks;
    size_t n, pos;
    gt_program *prog;
    gt_error *err;
    const gt_token *last_left; /* the {{ of the action being parsed */
    const char **vars;         /* in scope, innermost last */
    size_t n_vars, cap_vars;
    int depth, range_depth;
} gt_parser;

enum stop { STOP_EOF, STOP_END, STOP_ELSE };

static bool fail(gt_parser *p, const gt_token *t, const char *fmt, ...) SP_PRINTF(3, 4);
static bool fail(gt_parser *p, const gt_token *t, const char *fmt, ...) {
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    tpl_set_error(p->err, SPROUT_ERR_FORMAT, t->line, t->column, "%s", msg);
    return false;
}

static gt_token *peek(gt_parser *p) { return &p->toks[p->pos]; }
static gt_token *next(gt_parser *p) {
    gt_token *t = &p->toks[p->pos];
    if (t->kind != GK_EOF) p->pos++;
    return t;
}
static bool is_word(const gt_token *t, const char *w) {
    return t->kind == GK_IDENT && t->len == strlen(w) && !memcmp(t->text, w, t->len);
}

static gt_node *new_node(gt_parser *p, gt_node_kind kind, const gt_token *at) {
    gt_node *n = sp_arena_alloc(&p->prog->arena, sizeof *n);
    if (!n) {
        fail(p, at, "out of memory");
        return NULL;
    }
    n->kind = kind;
    n->line = at->line;
    n->column = at->column;
    return n;
}

static char *dup(gt_parser *p, const char *s, size_t len) { return sp_arena_strndup(&p->prog->arena, s, len); }

/* Appends to a growing array of pointers in the arena (doubling). */
static bool push_ptr(gt_parser *p, void ***items, size_t *n, void *item) {
    if ((*n & (*n - 1)) == 0) { /* n is 0 or a power of two: grow */
        void **grown = sp_arena_alloc(&p->prog->arena, (*n ? *n * 2 : 4) * sizeof *grown);
        if (!grown) return false;
        if (*n) memcpy(grown, *items, *n * sizeof *grown);
        *items = grown;
    }
    (*items)[(*n)++] = item;
    return true;
}

static bool push_var(gt_parser *p, const char *name) {
    if (p->n_vars == p->cap_vars) {
        size_t cap = p->cap_vars ? p->cap_vars * 2 : 16;
        const char **v = sp_arena_alloc(&p->prog->arena, cap * sizeof *v);
        if (!v) return false;
        if (p->n_vars) memcpy(v, p->vars, p->n_vars * sizeof *v);
        p->vars = v;
        p->cap_vars = cap;
    }
    p->vars[p->n_vars++] = name;
    return true;
}

static bool var_defined(const gt_parser *p, const gt_token *t) {
    for (size_t i = p->n_vars; i-- > 0;)
        if (strlen(p->vars[i]) == t->len && !memcmp(p->vars[i], t->text, t->len)) return true;
    return false;
}

static gt_node *parse_pipeline(gt_parser *p, const char *context, gt_token_kind end, int max_decl);

/* --- operands ---------------------------------------------------------------------- */

static gt_node *parse_number(gt_parser *p, const gt_token *t) {
    gt_node *n = new_node(p, GN_CONST, t);
    if (!n) return NULL;
    if (t->kind == GK_CHAR) {
        n->u.constant = gt_int((int64_t)t->len);
        return n;
    }
    char buf[80];
    size_t k = 0;
    for (size_t i = 0; i < t->len && k + 1 < sizeof buf; i++)
        if (t->text[i] != '_') buf[k++] = t->text[i];
    buf[k] = '\0';
    const char *digits = buf + (buf[0] == '-' || buf[0] == '+');
    bool hex = digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X');
    char *end;
    if (!hex && strpbrk(buf, ".eE")) {
        n->u.constant = gt_float(strtod(buf, &end));
    } else {
        int base = 10;
        const char *s = digits;
        if (hex) base = 16, s += 2;
        else if (digits[0] == '0' && (digits[1] == 'b' || digits[1] == 'B')) base = 2, s += 2;
        else if (digits[0] == '0' && (digits[1] == 'o' || digits[1] == 'O')) base = 8, s += 2;
        else if (digits[0] == '0' && digits[1]) base = 8, s += 1;
        errno = 0;
        long long v = strtoll(s, &end, base);
        if (*s == '\0' || *s == '-' || *s == '+') end = (char *)"?"; /* no digits */
        if (errno == ERANGE) {
            fail(p, t, "number %.*s overflows int", (int)(t->len > 60 ? 60 : t->len), t->text);
            return NULL;
        }
        n->u.constant = gt_int(buf[0] == '-' ? -v : v);
    }
    if (*end != '\0' || k >= sizeof buf - 1) {
        fail(p, t, "bad number syntax: \"%.*s\"", (int)(t->len > 60 ? 60 : t->len), t->text);
        return NULL;
    }
    return n;
}

static gt_node *parse_term(gt_parser *p) {
    gt_token *t = peek(p);
    gt_node *n = NULL;
    switch (t->kind) {
    case GK_IDENT: {
        next(p);
        char *name = dup(p, t->text, t->len);
        int id = name ? gt_func_lookup(name) : -1;
        if (!name || id < 0) {
            fail(p, t, "function \"%.*s\" not defined", (int)(t->len > 60 ? 60 : t->len), t->text);
            return NULL;
        }
        if ((n = new_node(p, GN_FUNC, t))) n->u.func.name = name, n->u.func.id = id;
        return n;
    }
    case GK_DOT: next(p); return new_node(p, GN_DOT, t);
    case GK_NIL:
        next(p);
        if ((n = new_node(p, GN_NIL, t))) n->u.constant = gt_nil();
        return n;
    case GK_VAR:
        next(p);
        if (!var_defined(p, t)) {
            fail(p, t, "undefined variable \"%.*s\"", (int)(t->len > 60 ? 60 : t->len), t->text);
            return NULL;
        }
        if ((n = new_node(p, GN_VARIABLE, t)) && !(n->u.field.var = dup(p, t->text, t->len))) return NULL;
        return n;
    case GK_FIELD:
        next(p);
        if (!(n = new_node(p, GN_FIELD, t))) return NULL;
        {
            char *name = dup(p, t->text, t->len);
            if (!name || !push_ptr(p, (void ***)&n->u.field.ident, &n->u.field.n, name)) return NULL;
        }
        return n;
    case GK_BOOL:
        next(p);
        if ((n = new_node(p, GN_CONST, t))) n->u.constant = gt_bool(t->len == 4);
        return n;
    case GK_NUMBER:
    case GK_CHAR: next(p); return parse_number(p, t);
    case GK_STRING:
        next(p);
        if ((n = new_node(p, GN_CONST, t))) n->u.constant = gt_str_ref(t->text, t->len);
        return n;
    case GK_LPAREN: {
        next(p);
        if (++p->depth > GT_MAX_PARSE_DEPTH) {
            fail(p, t, "expressions nested too deeply");
            return NULL;
        }
        gt_node *pipe = parse_pipeline(p, "parenthesized pipeline", GK_RPAREN, 0);
        p->depth--;
        if (!pipe) return NULL;
        if (peek(p)->kind != GK_RPAREN) {
            fail(p, peek(p), "unclosed left paren");
            return NULL;
        }
        next(p);
        return pipe;
    }
    default: return NULL;
    }
}

/* A term and the fields written right after it: .A.B, $x.A, (pipe).A */
static gt_node *parse_operand(gt_parser *p) {
    gt_node *n = parse_term(p);
    if (!n || peek(p)->kind != GK_FIELD || peek(p)->space_before) return n;
    if (n->kind == GN_CONST || n->kind == GN_NIL || n->kind == GN_DOT) {
        fail(p, peek(p), "unexpected . after term");
        return NULL;
    }
    if (n->kind == GN_PIPE || n->kind == GN_FUNC) {
        gt_node *chain = new_node(p, GN_CHAIN, peek(p));
        if (!chain) return NULL;
        chain->u.field.operand = n;
        n = chain;
    }
    while (peek(p)->kind == GK_FIELD && !peek(p)->space_before) {
        gt_token *f = next(p);
        char *name = dup(p, f->text, f->len);
        if (!name || !push_ptr(p, (void ***)&n->u.field.ident, &n->u.field.n, name)) {
            fail(p, f, "out of memory");
            return NULL;
        }
    }
    return n;
}

static gt_node *parse_command(gt_parser *p, gt_token_kind end) {
    gt_node *cmd = new_node(p, GN_COMMAND, peek(p));
    if (!cmd) return NULL;
    for (;;) {
        gt_token *at = peek(p);
        if (cmd->u.list.n && !at->space_before && at->kind != GK_PIPE && at->kind != end && at->kind != GK_RPAREN) {
            fail(p, at, "unexpected \"%.*s\" in operand", (int)(at->len > 40 ? 40 : at->len), at->text ? at->text : "");
            return NULL;
        }
        gt_node *operand = parse_operand(p);
        if (!operand) {
            if (p->err->status != SPROUT_OK) return NULL;
            break;
        }
        if (!push_ptr(p, (void ***)&cmd->u.list.items, &cmd->u.list.n, operand)) return NULL;
    }
    gt_token *t = peek(p);
    if (t->kind != GK_PIPE && t->kind != end && t->kind != GK_RPAREN) {
        fail(p, t, t->kind == GK_EOF ? "unclosed action" : "unexpected \"%.*s\" in operand", (int)(t->len > 40 ? 40 : t->len),
             t->text ? t->text : "");
        return NULL;
    }
    if (cmd->u.list.n == 0) {
        fail(p, t, "missing value for command");
        return NULL;
    }
    return cmd;
}

/* [$x :=] command | command ...; range may declare two variables. */
static gt_node *parse_pipeline(gt_parser *p, const char *context, gt_token_kind end, int max_decl) {
    gt_node *pipe = new_node(p, GN_PIPE, peek(p));
    if (!pipe) return NULL;
    size_t save = p->pos;
    while (peek(p)->kind == GK_VAR) {
        gt_token *v = next(p), *after = peek(p);
        bool more = after->kind == GK_COMMA && max_decl > 1 && pipe->u.pipe.n_decl == 0;
        if (after->kind != GK_DECLARE && after->kind != GK_ASSIGN && !more) {
            if (pipe->u.pipe.n_decl) {
                fail(p, after, "range can only initialize variables");
                return NULL;
            }
            p->pos = save; /* not a declaration: the variable is an operand */
            break;
        }
        next(p);
        char *name = dup(p, v->text, v->len);
        if (!name || !push_ptr(p, (void ***)&pipe->u.pipe.decl, &pipe->u.pipe.n_decl, name)) return NULL;
        if (after->kind == GK_ASSIGN) {
            if (!var_defined(p, v)) {
                fail(p, v, "undefined variable \"%s\"", name);
                return NULL;
            }
            pipe->u.pipe.assign = true;
        } else if (after->kind == GK_DECLARE && !push_var(p, name)) return NULL;
        if (!more) break;
        if (!push_var(p, name)) return NULL;
    }
    for (;;) {
        gt_node *cmd = parse_command(p, end);
        if (!cmd || !push_ptr(p, (void ***)&pipe->u.pipe.cmds, &pipe->u.pipe.n_cmds, cmd)) return NULL;
        if (peek(p)->kind != GK_PIPE) break;
        next(p);
    }
    if (peek(p)->kind != end) {
        fail(p, peek(p), "unexpected token in %s", context);
        return NULL;
    }
    for (size_t i = 1; i < pipe->u.pipe.n_cmds; i++) {
        gt_node_kind k = pipe->u.pipe.cmds[i]->u.list.items[0]->kind;
        if (k == GN_CONST || k == GN_DOT || k == GN_NIL) {
            const gt_node *arg = pipe->u.pipe.cmds[i]->u.list.items[0];
            tpl_set_error(p->err, SPROUT_ERR_FORMAT, arg->line, arg->column, "non executable command in pipeline stage %zu", i + 1);
            return NULL;
        }
    }
    return pipe;
}

/* --- actions and control structures ------------------------------------------------- */

static gt_node *parse_list(gt_parser *p, enum stop *stop);

static bool expect_right(gt_parser *p, const char *what) {
    if (peek(p)->kind == GK_RIGHT) {
        next(p);
        return true;
    }
    return fail(p, peek(p), "unexpected token in %s", what);
}

/* if / range / with: the pipeline, the body, an else (or else if / else
 * with, which nest), and the end; variables declared inside go out of
 * scope at the end. */
static gt_node *parse_control(gt_parser *p, gt_node_kind kind, const gt_token *at) {
    const char *context = kind == GN_IF ? "if" : kind == GN_RANGE ? "range" : "with";
    if (++p->depth > GT_MAX_PARSE_DEPTH) {
        fail(p, at, "blocks nested too deeply");
        return NULL;
    }
    size_t scope = p->n_vars;
    gt_node *n = new_node(p, kind, at);
    if (!n) return NULL;
    if (peek(p)->kind == GK_RIGHT) {
        fail(p, peek(p), "missing value for %s", context);
        return NULL;
    }
    if (!(n->u.branch.pipe = parse_pipeline(p, context, GK_RIGHT, kind == GN_RANGE ? 2 : 1)) || !expect_right(p, context))
        return NULL;
    enum stop stop;
    if (kind == GN_RANGE) p->range_depth++;
    n->u.branch.list = parse_list(p, &stop);
    if (kind == GN_RANGE) p->range_depth--;
    if (!n->u.branch.list) return NULL;
    if (stop == STOP_ELSE) {
        gt_token *t = peek(p);
        if ((kind == GN_IF && is_word(t, "if")) || (kind == GN_WITH && is_word(t, "with"))) {
            next(p);
            gt_node *list = new_node(p, GN_LIST, t), *inner = list ? parse_control(p, kind, t) : NULL;
            if (!inner || !push_ptr(p, (void ***)&list->u.list.items, &list->u.list.n, inner)) return NULL;
            n->u.branch.else_list = list;
            stop = STOP_END; /* the nested one took the {{end}} */
        } else {
            if (!expect_right(p, "else")) return NULL;
            if (!(n->u.branch.else_list = parse_list(p, &stop))) return NULL;
            if (stop == STOP_ELSE) {
                fail(p, peek(p), "expected end; found {{else}}");
                return NULL;
            }
        }
    }
    if (stop != STOP_END) {
        fail(p, peek(p), "unexpected EOF");
        return NULL;
    }
    p->n_vars = scope;
    p->depth--;
    return n;
}

static gt_node *parse_action(gt_parser *p, enum stop *stop) {
    gt_token *left = next(p), *t = peek(p);
    p->last_left = left;
    *stop = STOP_EOF;
    if (t->kind == GK_IDENT) {
        static const char *const words[] = {"if", "range", "with", "else", "end", "break", "continue", "define", "template", "block"};
        int w = -1;
        for (int i = 0; i < 10; i++)
            if (is_word(t, words[i])) w = i;
        if (w >= 0) next(p);
        switch (w) {
        case 0: return parse_control(p, GN_IF, t);
        case 1: return parse_control(p, GN_RANGE, t);
        case 2: return parse_control(p, GN_WITH, t);
        case 3: *stop = STOP_ELSE; return NULL; /* the caller reads what follows else */
        case 4:
            if (!expect_right(p, "end")) return NULL;
            *stop = STOP_END;
            return NULL;
        case 5:
        case 6:
            if (!p->range_depth) {
                fail(p, t, "{{%s}} outside {{range}}", words[w]);
                return NULL;
            }
            if (!expect_right(p, words[w])) return NULL;
            return new_node(p, w == 5 ? GN_BREAK : GN_CONTINUE, t);
        case 7:
        case 8:
        case 9: fail(p, t, "{{%s}} is not supported in Ollama templates", words[w]); return NULL;
        default: break;
        }
    }
    gt_node *n = new_node(p, GN_ACTION, left);
    if (!n || !(n->u.action = parse_pipeline(p, "command", GK_RIGHT, 1)) || !expect_right(p, "command")) return NULL;
    return n;
}

/* Nodes up to {{end}}, {{else}} or the end of the source (*stop says which). */
static gt_node *parse_list(gt_parser *p, enum stop *stop) {
    gt_node *list = new_node(p, GN_LIST, peek(p));
    if (!list) return NULL;
    *stop = STOP_EOF;
    for (;;) {
        gt_token *t = peek(p);
        gt_node *item = NULL;
        if (t->kind == GK_EOF) return list;
        if (t->kind == GK_TEXT) {
            next(p);
            if ((item = new_node(p, GN_TEXT, t))) item->u.text.s = t->text, item->u.text.len = t->len;
        } else if (t->kind == GK_LEFT) {
            item = parse_action(p, stop);
            if (!item && *stop != STOP_EOF) return list;
        } else {
            fail(p, t, "unexpected token");
        }
        if (!item || !push_ptr(p, (void ***)&list->u.list.items, &list->u.list.n, item)) {
            if (p->err->status == SPROUT_OK) fail(p, t, "out of memory");
            return NULL;
        }
    }
}

/* --- Ollama's Template.Vars() -------------------------------------------------------- */

static bool ident_is(const char *s, const char *lower) {
    for (; *s && *lower; s++, lower++)
        if ((*s | 0x20) != *lower) return false;
    return !*s && !*lower;
}

/* Walks what Ollama's Identifiers walks: actions, branch pipelines and
 * lists, command arguments, and parenthesised pipelines inside them (not
 * the fields after a parenthesised pipeline, which it skips). */
static void find_vars(gt_program *prog, const gt_node *n) {
    if (!n) return;
    switch (n->kind) {
    case GN_LIST:
    case GN_COMMAND:
        for (size_t i = 0; i < n->u.list.n; i++) find_vars(prog, n->u.list.items[i]);
        break;
    case GN_ACTION: find_vars(prog, n->u.action); break;
    case GN_IF:
    case GN_RANGE:
    case GN_WITH:
        find_vars(prog, n->u.branch.pipe);
        find_vars(prog, n->u.branch.list);
        find_vars(prog, n->u.branch.else_list);
        break;
    case GN_PIPE:
        for (size_t i = 0; i < n->u.pipe.n_cmds; i++) find_vars(prog, n->u.pipe.cmds[i]);
        break;
    case GN_FIELD:
    case GN_VARIABLE:
        for (size_t i = 0; i < n->u.field.n; i++) {
            if (ident_is(n->u.field.ident[i], "messages")) prog->uses_messages = true;
            if (ident_is(n->u.field.ident[i], "response")) prog->uses_response = true;
        }
        break;
    default: break;
    }
}

/* {{ .Response }} as Ollama's Parse appends it to templates that name
 * neither .Messages nor .Response. */
static bool append_response(gt_parser *p, gt_node *root) {
    gt_token *at = &p->toks[p->n - 1];
    gt_node *action = new_node(p, GN_ACTION, at), *pipe = new_node(p, GN_PIPE, at), *cmd = new_node(p, GN_COMMAND, at),
            *field = new_node(p, GN_FIELD, at);
    return action && pipe && cmd && field && push_ptr(p, (void ***)&field->u.field.ident, &field->u.field.n, "Response") &&
           push_ptr(p, (void ***)&cmd->u.list.items, &cmd->u.list.n, field) &&
           push_ptr(p, (void ***)&pipe->u.pipe.cmds, &pipe->u.pipe.n_cmds, cmd) && (action->u.action = pipe) &&
           push_ptr(p, (void ***)&root->u.list.items, &root->u.list.n, action);
}

bool gt_parse(const char *src, size_t len, gt_program *prog, gt_error *err) {
    memset(prog, 0, sizeof *prog);
    memset(err, 0, sizeof *err);
    gt_parser p = {.prog = prog, .err = err};
    if (!gt_lex(src, len, &prog->arena, &p.toks, &p.n, err)) return false;
    if (!push_var(&p, "$")) return fail(&p, &p.toks[0], "out of memory");
    enum stop stop;
    gt_node *root = parse_list(&p, &stop);
    if (!root) return false;
    if (stop != STOP_EOF) return fail(&p, p.last_left, "unexpected {{%s}}", stop == STOP_END ? "end" : "else");
    find_vars(prog, root);
    if (!prog->uses_messages && !prog->uses_response && !append_response(&p, root)) return fail(&p, &p.toks[0], "out of memory");
    prog->root = root;
    return true;
}

void gt_program_free(gt_program *prog) {
    if (!prog) return;
    sp_arena_free(&prog->arena);
    prog->root = NULL;
}

/* --- the dialect ---------------------------------------------------------------------- */

static bool is_word_char(char c) { return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

bool gt_is_go_source(const char *src, size_t len) {
    for (size_t i = 0; i + 1 < len; i++)
        if (src[i] == '{' && (src[i + 1] == '%' || src[i + 1] == '#')) return false;
    /* words that cannot start a Jinja expression */
    static const char *const keywords[] = {"if", "else", "end", "break", "continue"};
    for (size_t i = 0; i + 1 < len; i++) {
        if (src[i] != '{' || src[i + 1] != '{') continue;
        size_t k = i + 2;
        if (k < len && src[k] == '-') k++;
        while (k < len && (src[k] == ' ' || src[k] == '\t' || src[k] == '\n' || src[k] == '\r')) k++;
        if (k >= len) break;
        if (src[k] == '.' || src[k] == '$' || (src[k] == '/' && k + 1 < len && src[k + 1] == '*')) return true;
        size_t e = k;
        while (e < len && is_word_char(src[e])) e++;
        if (e == k || e >= len) continue;
        for (size_t w = 0; w < sizeof keywords / sizeof keywords[0]; w++)
            if (e - k == strlen(keywords[w]) && !memcmp(src + k, keywords[w], e - k) &&
                (src[e] == ' ' || src[e] == '}' || src[e] == '-' || src[e] == '\n'))
                return true;
        /* a word, then a field or variable: a Go call (range .X, json .Tools), a Jinja syntax error */
        size_t f = e;
        while (f < len && (src[f] == ' ' || src[f] == '\t' || src[f] == '\n')) f++;
        if (f > e && f + 1 < len && (src[f] == '$' || (src[f] == '.' && (is_word_char(src[f + 1]) || src[f + 1] == ' '))))
            return true;
    }
    return false;
}

/* --- Ollama's deleteNode -------------------------------------------------------------- */

typedef struct cutter {
    sp_arena *arena;
    bool cut;
    bool failed;
} cutter;

static bool has_response(const gt_node *n) {
    if (n->kind != GN_FIELD) return false;
    for (size_t i = 0; i < n->u.field.n; i++)
        if (!strcmp(n->u.field.ident[i], "Response")) return true;
    return false;
}

static gt_node *copy_node(cutter *c, const gt_node *n) {
    gt_node *m = sp_arena_alloc(c->arena, sizeof *m);
    if (!m) c->failed = true;
    else *m = *n;
    return m;
}

/* The predicate runs on each node before its children: the first .Response
 * field sets `cut` and stays; every node the walk meets after it goes. A
 * branch's own pipeline is not walked (as in Ollama), so `{{ if .Response }}`
 * does not cut; an else list met after the cut is dropped (Ollama's walk
 * would panic on it). */
static gt_node *cut_walk(cutter *c, const gt_node *n) {
    if (!n || c->failed) return NULL;
    if (has_response(n)) {
        c->cut = true;
        return (gt_node *)n;
    }
    if (c->cut) return NULL;
    switch (n->kind) {
    case GN_LIST: {
        gt_node *m = copy_node(c, n);
        if (!m) return NULL;
        m->u.list.items = sp_arena_alloc(c->arena, (n->u.list.n ? n->u.list.n : 1) * sizeof *m->u.list.items);
        m->u.list.n = 0;
        if (!m->u.list.items) return c->failed = true, NULL;
        for (size_t i = 0; i < n->u.list.n; i++) {
            gt_node *k = cut_walk(c, n->u.list.items[i]);
            if (k) m->u.list.items[m->u.list.n++] = k;
        }
        return m;
    }
    case GN_IF:
    case GN_RANGE:
    case GN_WITH: {
        gt_node *m = copy_node(c, n);
        if (!m) return NULL;
        m->u.branch.list = cut_walk(c, n->u.branch.list);
        if (!m->u.branch.list && !c->failed) m->u.branch.list = copy_node(c, n->u.branch.list), m->u.branch.list->u.list.n = 0;
        m->u.branch.else_list = cut_walk(c, n->u.branch.else_list);
        return m;
    }
    case GN_ACTION: {
        gt_node *pipe = cut_walk(c, n->u.action), *m = pipe ? copy_node(c, n) : NULL;
        if (m) m->u.action = pipe;
        return m;
    }
    case GN_PIPE: {
        gt_node *m = copy_node(c, n);
        if (!m) return NULL;
        m->u.pipe.cmds = sp_arena_alloc(c->arena, (n->u.pipe.n_cmds ? n->u.pipe.n_cmds : 1) * sizeof(gt_node *));
        m->u.pipe.n_cmds = 0;
        if (!m->u.pipe.cmds) return c->failed = true, NULL;
        for (size_t i = 0; i < n->u.pipe.n_cmds; i++) {
            const gt_node *cmd = n->u.pipe.cmds[i];
            gt_node *mc = copy_node(c, cmd);
            if (!mc || !(mc->u.list.items = sp_arena_alloc(c->arena, cmd->u.list.n * sizeof(gt_node *))))
                return c->failed = true, NULL;
            mc->u.list.n = 0;
            for (size_t a = 0; a < cmd->u.list.n; a++) {
                gt_node *k = cut_walk(c, cmd->u.list.items[a]);
                if (k) mc->u.list.items[mc->u.list.n++] = k;
            }
            if (mc->u.list.n == 0) return NULL; /* Ollama drops the whole pipeline then */
            m->u.pipe.cmds[m->u.pipe.n_cmds++] = mc;
        }
        return m->u.pipe.n_cmds ? m : NULL;
    }
    default: return (gt_node *)n;
    }
}

gt_node *gt_cut_after_response(sp_arena *arena, const gt_node *root) {
    cutter c = {.arena = arena};
    gt_node *r = cut_walk(&c, root);
    return c.failed ? NULL : r;
}
