/* The JSON Schema converter's parts (json_schema*.c) and what they share:
 * the text buffer, the conversion's state and rule table, and the
 * functions one part calls in another. Private to src/grammar: hidden
 * from the library's exported symbols. */
#ifndef SPROUT_GRAMMAR_JSON_SCHEMA_INTERNAL_H
#define SPROUT_GRAMMAR_JSON_SCHEMA_INTERNAL_H

#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/strmap.h"
#include "grammar/gbnf.h"
#include "grammar/json_schema.h"

/* The largest count a length, item count or pattern repetition may ask
 * for: the GBNF reader's bound on {m,n} (it unrolls a repetition into
 * that many rules), so that a larger one is refused by name here rather
 * than by the reader in the grammar text (fuzz_json_schema's finding). */
#define MAX_REPEAT SP_GBNF_MAX_REPEAT
/* The groups one rule of the converter's may nest (a pattern's groups, a
 * key's characters): half the GBNF reader's SP_GBNF_MAX_NESTING, the rest
 * left to the groups a rule puts around them. */
#define MAX_GROUP_NESTING (SP_GBNF_MAX_NESTING / 2)
/* Nesting of schemas (and of allOf merges) before the call gives up. */
#define MAX_DEPTH 64
/* Integers have at most 16 digits, as llama.cpp's `integer` rule. */
#define INT_LIMIT 9999999999999999LL

typedef struct sb {
    char *p;
    size_t n, cap;
    bool oom;
} sb;


typedef struct rule {
    char *name;
    char *body; /* NULL: reserved for a $ref whose schema is being visited */
    int nesting; /* cv.nesting when it was reserved */
} rule;

/* A number kept for a name (the first free) or a (name, body) pair (the
 * lowest holding that body), in json_schema_rules.c's indices. */
typedef struct name_note {
    char *key;
    uint32_t number;
} name_note;

typedef struct ref_entry {
    char *ref;
    const char *name; /* owned by the rule table */
} ref_entry;

typedef struct cv {
    json_t *root;
    rule *rules;
    size_t n_rules, cap_rules;
    sp_strmap rule_index; /* name -> index in rules: a schema of many keys makes thousands */
    sp_strmap body_ids;         /* a rule body's text (the first rule's) -> its number */
    sp_strmap first_free;       /* a name -> its note: the first number whose rule is free */
    sp_strmap lowest_with_body; /* "name\0body number" -> its note: the lowest number holding that body */
    name_note *notes;
    size_t n_notes, cap_notes;
    ref_entry *refs;
    size_t n_refs, cap_refs;
    int depth;
    int nesting; /* values inside objects and arrays being visited */
    sprout_status status; /* the first failure; later ones keep its message */
} cv;


/* The JSON types as bits of a mask, in TYPE_NAMES' order. */
enum {
    T_NULL = 1,
    T_BOOLEAN = 2,
    T_OBJECT = 4,
    T_ARRAY = 8,
    T_STRING = 16,
    T_NUMBER = 32,
    T_INTEGER = 64,
};

#pragma GCC visibility push(hidden)

extern const char *const TYPE_NAMES[7];

void sb_putn(sb *b, const char *s, size_t n);
void sb_puts(sb *b, const char *s);
void sb_putc(sb *b, char c);
void sb_printf(sb *b, const char *fmt, ...) SP_PRINTF(2, 3);
bool failed(const cv *c);
void fail_oom(cv *c);
void fail_keyword(cv *c, const char *path, const char *key, const char *fmt, ...) SP_PRINTF(4, 5);
void fail_format(cv *c, const char *path, const char *fmt, ...) SP_PRINTF(3, 4);
char *take(cv *c, sb *b);
void put_rule_name(sb *b, const char *s);
rule *find_rule(cv *c, const char *name);
bool left_recursive(cv *c, const char *name);
rule *push_rule(cv *c, char *name, char *body);
/* r's body becomes `body` (taken; NULL is out of memory); false on failure. */
bool set_rule_body(cv *c, rule *r, char *body);
const char *add_rule(cv *c, const char *raw_name, char *body);
/* base followed by the first number that names no rule (taken); NULL when
 * out of memory. */
char *first_free_name(cv *c, const char *base);
void free_rule_indices(cv *c);
const char *add_builtin(cv *c, const char *name);
void put_literal(sb *b, const char *s, size_t n);
void put_json_char(sb *b, uint32_t cp);
uint32_t next_cp(const char **s);
void put_constant(sb *b, json_t *v);
void put_key_literal(sb *b, const char *key);
bool in_list(const char *key, const char *const *list, size_t n);
bool is_annotation(const char *key);
int type_bit(const char *name);
int keyword_family(const char *key);
int parse_type(cv *c, json_t *t, const char *path);
bool value_has_type(json_t *v, int mask);
bool get_count(cv *c, json_t *s, const char *key, const char *path, long long *out);
char *child_path(cv *c, const char *path, const char *key);
char *child_path_index(cv *c, const char *path, const char *key, size_t i);
char *child_name(cv *c, const char *name, const char *suffix);
void put_repetition(sb *b, const char *item, long long min, long long max, const char *sep);
void put_int_range(sb *b, long long lo, long long hi);
void put_class_char(sb *b, uint32_t cp);
bool json_escaped(uint32_t cp);
const char *visit_pattern(cv *c, json_t *v, const char *rule_name, const char *path);
const char *visit_ref(cv *c, const char *ref, const char *path);
void merge_part(cv *c, json_t *dst, json_t *part, const char *path);
const char *first_constraint(json_t *s, const char *const *skip, size_t n_skip);
const char *visit_union(cv *c, json_t *s, const char *key, const char *name, const char *rule_name, const char *path);
const char *visit_constants(cv *c, json_t *s, const char *rule_name, const char *path);
const char *visit_object(cv *c, json_t *s, const char *name, const char *rule_name, const char *path);
const char *visit_array(cv *c, json_t *s, const char *name, const char *rule_name, const char *path);
const char *visit(cv *c, json_t *s, const char *name, const char *path);

#pragma GCC visibility pop

#endif
