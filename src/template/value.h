/* Values of the template language, with Python's semantics where chat
 * templates depend on them (truthiness, equality, str(), repr(), json).
 *
 * Every value lives in the render's arena and is freed with it: templates
 * run in jinja2's immutable sandbox, where the only thing that can change
 * after creation is a namespace() attribute, so sharing is always safe. */
#ifndef SPROUT_TEMPLATE_VALUE_H
#define SPROUT_TEMPLATE_VALUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/arena.h"

typedef enum jv_type {
    JV_UNDEFINED,
    JV_NONE,
    JV_BOOL,
    JV_INT,
    JV_FLOAT,
    JV_STR,
    JV_LIST,
    JV_TUPLE,
    JV_DICT,
    JV_NAMESPACE, /* a dict whose attributes `set ns.x = ...` may change */
    JV_MACRO,
    JV_BUILTIN,   /* a global function or a bound method */
} jv_type;

typedef struct jstr {
    size_t len;
    char data[]; /* NUL-terminated */
} jstr;

typedef struct jv jv;
typedef struct jlist jlist;
typedef struct jdict jdict;

struct jv {
    jv_type type;
    /* a string marked safe (jinja2's Markup, from |safe or |escape): + with a
     * plain string escapes that one, as Markup's + does */
    bool markup;
    union {
        bool b;
        int64_t i;
        double f;
        const jstr *s;
        const jlist *l;
        jdict *d;
        const void *macro;
        struct {
            int id;          /* which builtin */
            const jv *self;  /* the receiver of a bound method, or NULL */
        } fn;
        const char *undefined_hint; /* what was missing, for error messages */
    } u;
};

struct jlist {
    size_t n;
    jv items[];
};

struct jdict {
    size_t n, cap;
    jv *keys;
    jv *values;
};

/* Where values are allocated, with a budget: hostile templates that build
 * huge strings hit the budget and fail cleanly. */
typedef struct jv_heap {
    sp_arena arena;
    size_t used, limit;
    bool exhausted;     /* nothing more is given: the limit was reached, or the allocator failed */
    bool out_of_memory; /* ... the allocator failed (a resource error, not the template's fault) */
} jv_heap;

void *jv_alloc(jv_heap *h, size_t size);

static inline jv jv_undefined(const char *hint) { return (jv){.type = JV_UNDEFINED, .u.undefined_hint = hint}; }
static inline jv jv_none(void) { return (jv){.type = JV_NONE}; }
static inline jv jv_bool(bool b) { return (jv){.type = JV_BOOL, .u.b = b}; }
static inline jv jv_int(int64_t i) { return (jv){.type = JV_INT, .u.i = i}; }
static inline jv jv_float(double f) { return (jv){.type = JV_FLOAT, .u.f = f}; }

/* A string value; NULL data with len 0 is the empty string. The bytes are
 * copied. Fails (type JV_UNDEFINED, hint NULL) only when the heap is spent. */
jv jv_str(jv_heap *h, const char *data, size_t len);
jv jv_cstr(jv_heap *h, const char *s);
/* A list of n items copied from items (may be NULL: zero-filled). */
jv jv_list(jv_heap *h, const jv *items, size_t n, bool tuple);
jv jv_dict(jv_heap *h, size_t cap_hint);
/* Sets key -> value, replacing an equal key (the dict keeps insertion order). */
bool jv_dict_set(jv_heap *h, jdict *d, jv key, jv value);
/* The value for a string key, or NULL. */
const jv *jv_dict_get(const jdict *d, const char *key, size_t len);
const jv *jv_dict_get_value(const jdict *d, jv key);

bool jv_truthy(jv v);
bool jv_equal(jv a, jv b);
/* Python's str(v): what {{ v }} prints. */
bool jv_to_str(jv_heap *h, jv v, jv *out);
/* Python's repr(v). */
bool jv_repr(jv_heap *h, jv v, jv *out);
/* json.dumps' options, as transformers' tojson filter passes them. */
typedef struct jv_json_style {
    int indent;                      /* < 0: all on one line */
    const char *item_sep, *key_sep;  /* NULL: json.dumps' defaults for the indent */
    bool ensure_ascii, sort_keys;
} jv_json_style;

/* json.dumps(v, ...) with the style's options. Fails on values JSON cannot
 * hold (undefined, macros; keys of mixed types to sort). */
bool jv_to_json(jv_heap *h, jv v, const jv_json_style *style, jv *out);
/* Python type names, for error messages ("str", "dict", "undefined"). */
const char *jv_type_name(jv v);

/* A growable byte buffer on the malloc heap (the render output, and scratch
 * space for building strings). */
typedef struct jbuf {
    char *data;
    size_t len, cap;
    bool oom;
} jbuf;

void jbuf_put(jbuf *b, const char *s, size_t n);
static inline void jbuf_putc(jbuf *b, char c) { jbuf_put(b, &c, 1); }
void jbuf_puts(jbuf *b, const char *s);
void jbuf_free(jbuf *b);

/* Appends Python's str(v) / repr(v) / json to a buffer. */
void jv_write_str(jbuf *b, jv v);
void jv_write_repr(jbuf *b, jv v);
bool jv_write_json(jbuf *b, jv v, const jv_json_style *style, int depth);

/* Python's float repr: the shortest digits that read back the same. */
void jv_format_float(double f, char out[40]);

#endif
