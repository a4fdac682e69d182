/* A GBNF grammar compiled into a pushdown automaton over bytes.
 *
 * The automaton is llama.cpp's: a position is one element of a rule (a
 * character class, a reference to a rule, or the end of an alternative); a
 * stack is the positions still to match, the top first to be matched and
 * always a character class; a state is a set of stacks (the grammar is
 * nondeterministic). Classes are over Unicode code points; the state reads
 * UTF-8 a byte at a time, and between the bytes of one code point it keeps
 * the stacks whose class holds some code point those bytes begin.
 * Left recursion is refused when compiling; where a state would hold more
 * than SP_GRAMMAR_MAX_STACKS stacks, or a stack deeper than
 * SP_GRAMMAR_MAX_DEPTH, the engine gives up on the bytes that lead there:
 * sp_grammar_accept fails with gave_up set, whether or not they are text of
 * the grammar (the masks, which judge each stack alone, may allow them).
 *
 *     sp_grammar *g;
 *     if (sp_grammar_compile(text, len, "root", &g) != SPROUT_OK) ... sprout_last_error()
 *     sp_grammar_state *st = sp_grammar_state_new(g);
 *     if (!sp_grammar_accept(st, piece, piece_len)) ... not a valid prefix; st unchanged
 *     if (sp_grammar_must_end(st)) ... stop
 *     sp_grammar_state_free(st); sp_grammar_free(g);   (states first)
 *
 * A compiled grammar is read-only: states of it may be used from any
 * threads; one state from one thread at a time. */
#ifndef SPROUT_GRAMMAR_GRAMMAR_H
#define SPROUT_GRAMMAR_GRAMMAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sprout.h"

enum {
    SP_GRAMMAR_MAX_STACKS = 4096, /* stacks in one state */
    SP_GRAMMAR_MAX_DEPTH = 2048,  /* positions in one stack */
};

typedef struct sp_grammar sp_grammar;
typedef struct sp_grammar_state sp_grammar_state;

/* Parses and compiles text[0..len) (GBNF); `root` names the start rule (NULL:
 * "root"). SPROUT_ERR_FORMAT with "grammar:LINE:COL: ..." for a bad text,
 * "grammar: no rule 'x'" for a missing root, "grammar: left recursion: a ->
 * b -> a" for a rule that can reach itself without reading a character. */
sprout_status sp_grammar_compile(const char *text, size_t len, const char *root, sp_grammar **out);
void sp_grammar_free(sp_grammar *g);

/* A state before any byte: SPROUT_ERR_OUT_OF_MEMORY, or
 * SPROUT_ERR_UNSUPPORTED with a message where the start already passes a
 * bound (SP_GRAMMAR_MAX_STACKS, or the expansions of one step: a hostile,
 * ambiguous grammar). */
sprout_status sp_grammar_state_start(const sp_grammar *g, sp_grammar_state **out);
/* The same, NULL for either failure. */
sp_grammar_state *sp_grammar_state_new(const sp_grammar *g);
sp_grammar_state *sp_grammar_state_clone(const sp_grammar_state *st);
/* dst becomes a copy of src (same grammar); false when out of memory (dst unchanged). */
bool sp_grammar_state_copy(sp_grammar_state *dst, const sp_grammar_state *src);
void sp_grammar_state_free(sp_grammar_state *st);

/* Reads n bytes: true if the text read so far is still a prefix of some
 * text of the grammar; false leaves the state as it was, with gave_up set
 * where a bound was passed (or memory ran out) rather than the text left
 * the grammar. */
bool sp_grammar_accept(sp_grammar_state *st, const char *bytes, size_t n);
/* The text read so far is a whole text of the grammar. */
bool sp_grammar_can_end(const sp_grammar_state *st);
/* ... and no byte may follow it. */
bool sp_grammar_must_end(const sp_grammar_state *st);

/* --- for grammar_mask.c ------------------------------------------------------
 * A state's parts, so that a walk over many texts can step states without
 * allocating: stacks are records [n, p_0 .. p_n-1] in `data`, bottom first.
 * A set of many stacks also keeps a hash index of them (a record's place
 * in data, plus one), so that adding one does not compare it with each. */
typedef struct sp_gset {
    uint32_t *data;
    size_t len, cap;
    uint32_t count; /* stacks */
    uint32_t *slots;
    uint32_t n_slots, n_indexed; /* the index holds the first n_indexed records */
} sp_gset;

struct sp_grammar_state {
    const sp_grammar *g;
    sp_gset set, spare, spare2; /* the stacks; buffers for sp_grammar_accept */
    uint32_t cp;  /* the bits of a code point begun */
    uint8_t need; /* its continuation bytes still due (0: between code points) */
    uint8_t size; /* its length in bytes */
    bool gave_up; /* the last step or accept failed on a bound or on memory, not on the text */
    bool out_of_memory; /* ... and it was memory: the caller's error, where a bound is the grammar's */
};

/* out = the state after one more byte b (out's buffers are reused); false
 * when no stack survives, or with out->gave_up when a bound was passed or
 * memory ran out (out->out_of_memory; out is then garbage). in and out must
 * differ. */
bool sp_grammar_step(const sp_grammar_state *in, unsigned char b, sp_grammar_state *out);
/* The states (set) of one stack after its top-level references are expanded:
 * out is cleared first. False when a bound is passed or memory ran out
 * (then *out_of_memory). */
bool sp_gset_advance(const sp_grammar *g, const uint32_t *stack, uint32_t n, sp_gset *out, bool *out_of_memory);
/* Adds a stack to the set unless it is there; false when out of memory or
 * full (sp_gset_full tells which). */
bool sp_gset_add(sp_gset *s, const uint32_t *stack, uint32_t n);
static inline bool sp_gset_full(const sp_gset *s) { return s->count >= SP_GRAMMAR_MAX_STACKS; }
/* Empties the set (its memory kept). */
static inline void sp_gset_clear(sp_gset *s) { s->len = 0, s->count = 0, s->n_indexed = 0; }
/* dst = src (dst's memory reused; its index rebuilt when next needed). */
bool sp_gset_copy(sp_gset *dst, const sp_gset *src);
void sp_gset_free(sp_gset *s);
/* Whether the rule a position is in was named in the text (not a group or repetition). */
bool sp_grammar_pos_named(const sp_grammar *g, uint32_t pos);

#endif
