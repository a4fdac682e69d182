/* Shared by the lexer (lexer.c), the parser's expressions (parse_expr.c)
 * and its statements (parse.c). */
#ifndef SPROUT_TEMPLATE_PARSE_INTERNAL_H
#define SPROUT_TEMPLATE_PARSE_INTERNAL_H

#include <string.h>

#include "template/template_internal.h"

/* --- tokens (lexer.c) ----------------------------------------------------------------------- */

typedef enum tok_kind {
    T_TEXT,
    T_VAR_BEGIN,
    T_VAR_END,
    T_BLOCK_BEGIN,
    T_BLOCK_END,
    T_NAME,
    T_STRING,
    T_INT,
    T_FLOAT,
    T_OP,
    T_EOF
} tok_kind;

typedef struct token {
    tok_kind kind;
    int line, column;
    const char *text; /* NAME, OP: in the source; STRING, TEXT: decoded, in the arena */
    size_t len;
    int64_t i;
    double f;
} token;

/* Cuts source into tokens, the last T_EOF; their text is in prog's arena,
 * the array on the malloc heap for the caller to free. On failure fills
 * *err and returns false (nothing to free). */
bool tpl_lex(const char *source, size_t len, tpl_program *prog, tpl_error *err, token **toks);

static inline bool is_name(const token *t, const char *name) {
    return t->kind == T_NAME && t->len == strlen(name) && memcmp(t->text, name, t->len) == 0;
}

/* --- the parser's state and token cursor -------------------------------------------------------- */

typedef struct parser {
    token *toks;
    size_t pos;
    tpl_program *prog;
    tpl_error *err;
    int depth;
    int loop_depth;
    bool failed;
} parser;


static inline token *peek(parser *p) { return &p->toks[p->pos]; }
static inline token *peek2(parser *p) { return p->toks[p->pos].kind == T_EOF ? &p->toks[p->pos] : &p->toks[p->pos + 1]; }
static inline token *advance(parser *p) {
    token *t = &p->toks[p->pos];
    if (t->kind != T_EOF) p->pos++;
    return t;
}

static inline bool is_op(const token *t, const char *op) { return t->kind == T_OP && !strcmp(t->text, op); }


/* --- errors and building (parse_expr.c) ------------------------------------------------------ */

/* A failed allocation at token t: SPROUT_ERR_OUT_OF_MEMORY, not a syntax error. */
void parser_fail_oom(parser *p, const token *t);

/* Records a syntax error at token t (the first error wins); the parse fails. */
void parser_fail_at(parser *p, const token *t, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* "expected <expected>, got <t>", or "unexpected <t>" when expected is NULL. */
void parser_fail_unexpected(parser *p, const token *t, const char *expected);
/* Consumes the operator or token kind, else fails. */
bool parser_expect_op(parser *p, const char *op);
bool parser_expect_kind(parser *p, tok_kind kind, const char *what);
node *parser_new_node(parser *p, node_kind kind, const token *at);
/* A copy of s in the program's arena. */
const char *parser_intern(parser *p, const char *s, size_t len);

/* A growable node list built on the malloc heap, copied to the arena. */
typedef struct nvec {
    node **items;
    size_t n, cap;
} nvec;

void nvec_push(parser *p, nvec *v, node *n);
/* The list in the program's arena; v is emptied. */
node_list nvec_finish(parser *p, nvec *v);

/* Appends a name token's text to a malloc'd list of names; false (the
 * parse failed) when out of memory. */
bool parser_push_name(parser *p, const char ***names, size_t *count, const token *t);
/* Nesting bounds: parser_enter fails past TPL_MAX_PARSE_DEPTH. */
bool parser_enter(parser *p);
void parser_leave(parser *p);

/* --- expressions (parse_expr.c) -------------------------------------------------------------- */

/* An expression; with_condexpr: "a if b else c" allowed. */
node *parse_expression(parser *p, bool with_condexpr);
/* An expression, or a tuple of them without parentheses ("a, b"). */
node *parse_tuple(parser *p, bool with_condexpr, bool explicit_parens);
/* Call arguments after '(' (the current token): positional and name=value, into call. */
bool parse_call_args(parser *p, node *call);
/* A dotted name after '|' or 'is'. */
const char *parse_dotted_name(parser *p);

#endif
