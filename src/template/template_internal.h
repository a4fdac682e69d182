/* The chat-template engine: a lexer, parser and tree-walking interpreter for
 * the Jinja2 that real chat templates use, rendering byte for byte what
 * Python's jinja2 renders under transformers' settings (trim_blocks,
 * lstrip_blocks, loopcontrols, immutable sandbox, default Undefined).
 *
 * Hostile templates are bounded: nesting depth while parsing, call depth,
 * evaluation steps, output size and heap use all have limits, and every
 * error carries a line and column. */
#ifndef SPROUT_TEMPLATE_INTERNAL_H
#define SPROUT_TEMPLATE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "core/arena.h"
#include "sprout.h"
#include "template/template_error.h"
#include "template/value.h"

enum {
    TPL_MAX_PARSE_DEPTH = 200,   /* nested blocks and expressions */
    TPL_MAX_CALL_DEPTH = 100,    /* macro recursion */
};

/* --- errors -------------------------------------------------------------------------- */

/* tpl_error and tpl_set_error: template_error.h */

/* --- syntax tree -------------------------------------------------------------------- */

typedef enum node_kind {
    /* expressions */
    N_LITERAL,
    N_NAME,
    N_LIST,
    N_TUPLE,
    N_DICT,
    N_GETATTR,
    N_GETITEM,
    N_SLICE,
    N_CALL,
    N_FILTER,
    N_TEST,
    N_UNARY,
    N_BINARY,
    N_AND,
    N_OR,
    N_COND,
    /* statements */
    S_TEXT,
    S_OUTPUT,
    S_IF,
    S_FOR,
    S_SET,
    S_SET_BLOCK,
    S_MACRO,
    S_BREAK,
    S_CONTINUE,
    S_FILTER_BLOCK,
    S_WITH,
    S_CALL_BLOCK,
    S_BODY, /* a plain sequence (the root, {% generation %}) */
} node_kind;

typedef struct node node;

typedef struct node_list {
    node **items;
    size_t n;
} node_list;

struct node {
    node_kind kind;
    int line, column;
    union {
        jv literal;                     /* N_LITERAL, S_TEXT (a string) */
        const char *name;               /* N_NAME */
        node_list items;                /* N_LIST, N_TUPLE, S_BODY */
        struct {
            node_list keys, values;
        } dict;
        struct {
            node *obj;
            const char *name;
        } attr;                         /* N_GETATTR */
        struct {
            node *obj, *index;
        } item;                         /* N_GETITEM */
        struct {
            node *obj, *start, *stop, *step;
        } slice;
        struct {
            node *callee;               /* N_CALL; for N_FILTER/N_TEST the operand */
            const char *name;           /* filter or test name */
            node_list args;
            node_list kwargs;           /* values; names in kwnames */
            const char **kwnames;
            bool negated;               /* N_TEST: "is not" */
        } call;
        struct {
            int op;                     /* the operator's first character, or a two-character code */
            node *a, *b;
        } op;                           /* N_UNARY (b NULL), N_BINARY, N_AND, N_OR */
        struct {
            node *cond, *then, *otherwise;
        } cond;                         /* N_COND (otherwise may be NULL) */
        node *output;                   /* S_OUTPUT */
        struct {
            node_list conds;            /* one per if/elif */
            node_list bodies;           /* one per if/elif */
            node *else_body;            /* S_BODY or NULL */
        } if_;
        struct {
            const char **targets;
            size_t n_targets;
            node *iter, *filter, *body, *else_body;
        } for_;
        struct {
            const char **targets;       /* names, or one namespace name */
            size_t n_targets;
            const char *attr;           /* set ns.attr = ... */
            node *value;                /* S_SET */
            node *body;                 /* S_SET_BLOCK */
        } set;
        struct {
            const char *name;
            const char **params;
            node **defaults;            /* NULL entries: no default */
            size_t n_params;
            node *body;
            /* what the body names (as jinja2 decides): extra positional arguments
             * go to varargs, unknown keywords to kwargs, a call block's body to caller */
            bool catch_varargs, catch_kwargs, takes_caller;
        } macro;                        /* S_MACRO; a call block's caller */
        struct {
            const char **names;
            node_list values;
            node *body;
        } with;                         /* S_WITH: names = values, seen only in the body */
        struct {
            node *caller;               /* an S_MACRO named "caller" */
            node *call;                 /* the N_CALL of a macro */
        } call_block;
        struct {
            node *filter;               /* an N_FILTER whose operand is filled at run time */
            node *body;
        } filter_block;
    } u;
};

typedef struct tpl_program {
    node *root;
    sp_arena arena; /* nodes, names and literal strings */
    jv_heap literals;
} tpl_program;

/* Parses a template; on failure fills *err (line/column of the problem). */
bool tpl_parse(const char *source, size_t len, tpl_program *prog, tpl_error *err);
void tpl_program_free(tpl_program *prog);

/* --- rendering ------------------------------------------------------------------------ */

typedef struct tpl_limits {
    uint64_t max_steps;
    size_t max_output;
    size_t max_heap;
} tpl_limits;

/* Renders with `context` (a dict of variables) into out. */
bool tpl_render(const tpl_program *prog, jv context, jv_heap *heap, const struct tm *now, const tpl_limits *limits,
                jbuf *out, tpl_error *err);

#endif
