/* GBNF, the grammar notation of llama.cpp, parsed into rules of elements.
 * A rule is its alternatives one after the other, each ended by ALT, the
 * last by END. Repetitions (? * + {m,n}) and groups become generated rules
 * (right recursive, so that a repetition does not grow the automaton's
 * stack). A character class is a CHAR or CHAR_NOT element followed by
 * RANGE_UPPER (the upper end of the range the previous element opened) and
 * CHAR_ALT elements; ANY is `.`. The text is hostile: every error is a
 * SPROUT_ERR_FORMAT with "grammar:LINE:COL: ..." in the message, nesting
 * and sizes are bounded, nothing is read past len. */
#ifndef SPROUT_GRAMMAR_GBNF_H
#define SPROUT_GRAMMAR_GBNF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sprout.h"

enum {
    SP_GBNF_MAX_NESTING = 64,        /* groups inside groups */
    SP_GBNF_MAX_REPEAT = 1000,       /* the m and n of {m,n} */
    SP_GBNF_MAX_ELEMENTS = 1 << 20,  /* all rules together, after repetitions are expanded */
};

typedef enum sp_gbnf_type {
    SP_GBNF_END,         /* end of the rule's last alternative */
    SP_GBNF_ALT,         /* end of an alternative, another follows */
    SP_GBNF_REF,         /* value: a rule's index */
    SP_GBNF_CHAR,        /* value: a code point; a class starts */
    SP_GBNF_CHAR_NOT,    /* value: a code point; a negated class starts */
    SP_GBNF_RANGE_UPPER, /* value: the inclusive upper end of the previous element's range */
    SP_GBNF_CHAR_ALT,    /* value: another code point of the class */
    SP_GBNF_ANY,         /* any code point */
} sp_gbnf_type;

typedef struct sp_gbnf_elem {
    uint32_t type; /* sp_gbnf_type */
    uint32_t value;
} sp_gbnf_elem;

typedef struct sp_gbnf {
    size_t n_rules;
    char **names;      /* "name", or "name/N" for a generated rule */
    bool *generated;   /* made by a group or a repetition, not named in the text */
    size_t *first;     /* index of the rule's first element in elems */
    sp_gbnf_elem *elems;
    size_t n_elems;
} sp_gbnf;

/* Parses text[0..len). On success *out holds every rule, each defined. */
sprout_status sp_gbnf_parse(const char *text, size_t len, sp_gbnf **out);
void sp_gbnf_free(sp_gbnf *g);
/* The index of the rule named `name`, or -1. */
int64_t sp_gbnf_find(const sp_gbnf *g, const char *name);

#endif
