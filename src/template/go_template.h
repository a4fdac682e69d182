/* Go's text/template, for the TEMPLATE of Ollama Modelfiles: a lexer
 * (go_lex.c), a parser (go_parse.c), values with Go's printing, comparison
 * and encoding/json (go_value.c), the built-in and Ollama functions
 * (go_funcs.c), the evaluator (go_eval.c) and Ollama's data model and
 * Execute rules (go_ollama.c).
 *
 * It renders what Ollama renders: Go's semantics where templates can see
 * them (truthiness, "<no value>", sorted map keys, fmt's %v, json.Marshal's
 * HTML escaping), and the same limits as the Jinja side for hostile input:
 * nesting depth while parsing, evaluation steps, output and heap size. */
#ifndef SPROUT_TEMPLATE_GO_TEMPLATE_H
#define SPROUT_TEMPLATE_GO_TEMPLATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <jansson.h>

#include "core/arena.h"
#include "core/error.h"
#include "sprout.h"
#include "template/template_error.h"
#include "template/value.h"

enum { GT_MAX_PARSE_DEPTH = 200 }; /* nested blocks and parentheses */

/* An error with its position: the Jinja side's (template_error.h). */
typedef tpl_error gt_error;

typedef struct gt_limits {
    uint64_t max_steps;
    size_t max_output;
    size_t max_heap;
} gt_limits;

/* --- values ------------------------------------------------------------------------ */

typedef enum gt_kind {
    GT_NIL,    /* a nil interface: a missing map key, JSON null */
    GT_BOOL,
    GT_INT,
    GT_FLOAT,  /* float64: every number that came from JSON, as Go decodes it */
    GT_STRING,
    GT_LIST,   /* a slice */
    GT_MAP,    /* map[string]T: keys kept sorted, as Go prints and ranges them */
    GT_STRUCT, /* fields in declaration order */
} gt_kind;

enum {
    GT_NIL_AGG = 1,    /* a nil slice or map: empty, but json.Marshal writes null */
    GT_STRINGER = 2,   /* has a String() method that returns its JSON */
    GT_PROP_TYPE = 4,  /* api.PropertyType: a []string printed as its one element */
    GT_MISSING = 8,    /* GT_NIL from a missing key under missingkey=invalid */
    GT_TOOL_PROP = 16, /* api.ToolProperty, for toTypeScriptType */
};

/* A struct field: the Go name templates use and how encoding/json writes it. */
typedef struct gt_field {
    const char *name;
    const char *json_name;
    bool omitempty;
} gt_field;

typedef struct gt_value gt_value;
typedef struct gt_agg gt_agg;

struct gt_value {
    gt_kind kind;
    unsigned flags;
    union {
        bool b;
        int64_t i;
        double f;
        struct {
            const char *s;
            size_t len;
        } str;
        const gt_agg *agg;
    } u;
};

struct gt_agg {
    size_t n;
    const char *type_name;  /* for error messages: "*template.templateMessage" */
    const char **keys;      /* GT_MAP: sorted byte-wise */
    const gt_field *fields; /* GT_STRUCT */
    gt_value *items;
};

/* Values live in one arena with a byte budget (hostile templates that build
 * huge strings fail cleanly when it is spent). */
typedef struct gt_heap {
    sp_arena arena;
    size_t used, limit;
} gt_heap;

void *gt_alloc(gt_heap *h, size_t size);
static inline gt_value gt_nil(void) { return (gt_value){.kind = GT_NIL}; }
static inline gt_value gt_bool(bool b) { return (gt_value){.kind = GT_BOOL, .u.b = b}; }
static inline gt_value gt_int(int64_t i) { return (gt_value){.kind = GT_INT, .u.i = i}; }
static inline gt_value gt_float(double f) { return (gt_value){.kind = GT_FLOAT, .u.f = f}; }
/* A string that points at bytes that outlive the render (no copy). */
static inline gt_value gt_str_ref(const char *s, size_t len) {
    return (gt_value){.kind = GT_STRING, .u.str = {s, len}};
}
/* A copy into the heap; kind GT_NIL when the heap is spent. */
gt_value gt_str(gt_heap *h, const char *s, size_t len);
/* An aggregate of n zeroed items (and keys for a map); NULL when spent. */
gt_agg *gt_agg_new(gt_heap *h, size_t n, bool with_keys);
/* Sorts a map's keys and items together, as Go's fmt, range and json see them. */
void gt_map_sort(gt_agg *a);
/* A map's value for a key, or NULL. */
const gt_value *gt_map_get(const gt_agg *a, const char *key, size_t len);
/* A struct's field by Go name, or NULL. */
const gt_value *gt_struct_get(const gt_agg *a, const char *name);

/* text/template's truth: false, 0, nil and empty strings, slices and maps. */
bool gt_truth(gt_value v);
/* The length of a string (bytes), slice or map; -1 for other kinds. */
int64_t gt_len(gt_value v);
/* fmt.Fprint(v), with Stringers called as fmt calls them. */
void gt_write_value(jbuf *b, gt_value v, int depth);
/* json.Marshal(v): sorted map keys, <>& and U+2028/9 escaped, Go's floats. */
void gt_write_json(jbuf *b, gt_value v, int depth);
void gt_write_json_string(jbuf *b, const char *s, size_t len);
/* strconv.FormatFloat(f, fmt, -1, 64) for 'e' / 'f' / 'g', and fmt's %v. */
void gt_format_float(jbuf *b, double f, char fmt);
void gt_format_float_v(jbuf *b, double f);
/* Go type names for messages: "string", "int", "float64", "[]interface {}". */
const char *gt_type_name(gt_value v);

/* --- syntax tree ------------------------------------------------------------------- */

typedef enum gt_node_kind {
    GN_LIST,     /* a sequence of nodes (body of the template or a branch) */
    GN_TEXT,
    GN_ACTION,   /* {{ pipeline }} */
    GN_IF,
    GN_RANGE,
    GN_WITH,
    GN_BREAK,
    GN_CONTINUE,
    GN_PIPE,     /* commands joined by |, with optional variable declarations */
    GN_COMMAND,  /* operands separated by spaces */
    GN_FIELD,    /* .A.B */
    GN_VARIABLE, /* $x.A.B */
    GN_CHAIN,    /* (pipeline).A.B */
    GN_FUNC,     /* a function name */
    GN_DOT,
    GN_NIL,
    GN_CONST,    /* bool, number or string literal */
} gt_node_kind;

typedef struct gt_node gt_node;

struct gt_node {
    gt_node_kind kind;
    int line, column;
    union {
        struct {
            gt_node **items;
            size_t n;
        } list;                   /* GN_LIST, GN_COMMAND (args) */
        struct {
            const char *s;
            size_t len;
        } text;
        gt_node *action;          /* GN_ACTION: its pipeline */
        struct {
            gt_node *pipe, *list, *else_list; /* else_list may be NULL */
        } branch;                 /* GN_IF, GN_RANGE, GN_WITH */
        struct {
            const char **decl;    /* variable names, "$x" */
            size_t n_decl;
            bool assign;          /* $x = (not :=) */
            gt_node **cmds;
            size_t n_cmds;
        } pipe;
        struct {
            gt_node *operand;     /* GN_CHAIN: the parenthesised pipeline; else NULL */
            const char *var;      /* GN_VARIABLE: "$x" */
            const char **ident;   /* the field names after it */
            size_t n;
        } field;                  /* GN_FIELD, GN_VARIABLE, GN_CHAIN */
        struct {
            const char *name;
            int id;               /* which built-in */
        } func;
        gt_value constant;        /* GN_CONST; GN_NIL */
    } u;
};

typedef struct gt_program {
    gt_node *root;
    sp_arena arena;
    /* what Ollama's Template.Vars() found: fields named Messages / Response
     * anywhere in the tree, which choose how Execute renders */
    bool uses_messages, uses_response;
} gt_program;

/* --- lexer ------------------------------------------------------------------------- */

typedef enum gt_token_kind {
    GK_EOF,
    GK_TEXT,
    GK_LEFT,    /* {{ (its trim already applied to the text before) */
    GK_RIGHT,   /* }} */
    GK_FIELD,   /* .Name: text is the name */
    GK_DOT,
    GK_VAR,     /* $ or $name: text includes the $ */
    GK_IDENT,   /* a keyword or function name */
    GK_STRING,  /* text is the unquoted value */
    GK_CHAR,    /* 'x': number holds the rune */
    GK_NUMBER,
    GK_BOOL,
    GK_NIL,
    GK_DECLARE, /* := */
    GK_ASSIGN,  /* = */
    GK_PIPE,
    GK_LPAREN,
    GK_RPAREN,
    GK_COMMA,
} gt_token_kind;

typedef struct gt_token {
    gt_token_kind kind;
    bool space_before; /* operands are separated by spaces; .A.B has none */
    int line, column;
    const char *text;
    size_t len;
} gt_token;

/* Cuts the source into tokens (allocated in arena); false with *err set. */
bool gt_lex(const char *src, size_t len, sp_arena *arena, gt_token **toks, size_t *n, gt_error *err);

/* --- parsing and rendering --------------------------------------------------------- */

bool gt_parse(const char *src, size_t len, gt_program *prog, gt_error *err);
void gt_program_free(gt_program *prog);
/* Whether a template with neither `{%` nor `{#` is Go's dialect: one of its
 * actions starts (after an optional "-") with `.`, `$`, a comment, one of
 * the words if, else, end, break, continue, or a word then a space and a
 * field or variable (range .X, json .Tools): all invalid Jinja. */
bool gt_is_go_source(const char *src, size_t len);

/* Ollama's `deleteNode` for the generation prompt of legacy templates: a
 * copy of the tree (in arena) that ends at the first `.Response` field;
 * NULL when out of memory. */
gt_node *gt_cut_after_response(sp_arena *arena, const gt_node *root);

/* The built-in functions (go_funcs.c), by id; -1 for unknown names. */
enum { GT_FN_AND, GT_FN_OR, GT_FN_NOT };
int gt_func_lookup(const char *name);

typedef struct gt_exec {
    gt_heap *heap;
    const struct tm *now;
    const gt_limits *limits;
    /* Ollama's main template has missingkey=zero and its functions; the
     * cut tree of the legacy path is executed without either */
    bool missing_zero;
    bool ollama_funcs;
    uint64_t steps;
    jbuf *out;
    gt_error *err;
} gt_exec;

/* Executes a tree with `data` as dot and $, appending to ex->out. */
bool gt_execute(gt_exec *ex, const gt_node *root, gt_value data);

/* Calls a built-in with evaluated arguments (and and or are short-circuited
 * by the evaluator, not here); false with the error message set. */
bool gt_call_func(gt_exec *ex, const gt_node *at, int id, const gt_value *args, size_t n, gt_value *result);
/* Sets a run-time error at a node, in Go's "template: :L:C: executing" form. */
void gt_exec_error(gt_exec *ex, const gt_node *at, const char *fmt, ...) SP_PRINTF(3, 4);

/* Ollama's Template.Execute (go_ollama.c): builds its values from sprout's
 * messages (a JSON array) and extra variables (a JSON object or NULL:
 * tools, think, suffix, prompt) and renders as Ollama chooses to. */
bool gt_ollama_render(const gt_program *prog, const json_t *messages, const json_t *extra, const struct tm *now,
                      const gt_limits *limits, jbuf *out, gt_error *err);

#endif
