/* The tokens a grammar state allows next, exactly: token t is in the mask
 * if and only if sp_grammar_accept would take t's bytes (a token of no
 * bytes is in it while the state lives; the caller decides what tokens
 * that add no text, end-of-generation among them, mean).
 *
 * Fast in two ways. The vocabulary is a byte trie (the tokens sorted, a
 * shared prefix stepped once), walked against the automaton with a subtree
 * dropped as soon as no stack survives its prefix. And, xgrammar's idea,
 * each stack's top is split from the rest: the top frames down to the
 * first rule named in the grammar text (the key) decide most tokens alone,
 * accepted or rejected whatever lies below; that verdict is cached per key,
 * once per vocabulary. The tokens it leaves open (they finish the key's
 * rule and go on with bytes the frames below must read: context dependent)
 * are kept as their remaining bytes, in a small trie walked from the
 * frames below at each step. A key that leaves too many tokens open, or
 * whose open tokens cost a step more than 64 bytes stepped, is lengthened
 * by the next frames for the stacks that follow. A state inside a UTF-8
 * code point walks the trie plainly to the code point's end, then on
 * through the cache, keyed by the trie node too.
 *
 *     sp_grammar_vocab *v;   sp_grammar_vocab_create(texts, lens, n_vocab, &v);
 *     sp_grammar_masker *m;  sp_grammar_masker_create(g, v, &m);
 *     uint64_t *bits = malloc(sp_grammar_mask_words(v) * 8);
 *     sp_grammar_mask(m, state, bits);   bit t of bits[t / 64]: token t allowed
 *
 * A vocabulary is read-only once made; a masker holds the cache and its
 * scratch space: one thread at a time. Both must outlive nothing but
 * themselves: the grammar and the vocabulary must outlive the masker. */
#ifndef SPROUT_GRAMMAR_GRAMMAR_MASK_H
#define SPROUT_GRAMMAR_GRAMMAR_MASK_H

#include <stddef.h>
#include <stdint.h>

#include "grammar/grammar.h"
#include "sprout.h"

typedef struct sp_grammar_vocab sp_grammar_vocab;
typedef struct sp_grammar_masker sp_grammar_masker;

/* The trie of n tokens, token i being text[i][0..len[i]) (copied). */
sprout_status sp_grammar_vocab_create(const char *const *text, const uint32_t *len, uint32_t n, sp_grammar_vocab **out);
void sp_grammar_vocab_free(sp_grammar_vocab *v);
uint32_t sp_grammar_vocab_size(const sp_grammar_vocab *v);
/* The ids of the tokens with no text (*n of them, ascending): a grammar
 * can never read them, so their place in a mask is the caller's to set. */
const uint32_t *sp_grammar_vocab_empty(const sp_grammar_vocab *v, uint32_t *n);
/* 64-bit words of a mask: (n + 63) / 64. */
size_t sp_grammar_mask_words(const sp_grammar_vocab *v);

sprout_status sp_grammar_masker_create(const sp_grammar *g, const sp_grammar_vocab *v, sp_grammar_masker **out);
void sp_grammar_masker_free(sp_grammar_masker *m);

/* bits (sp_grammar_mask_words words) := the tokens `st` allows. A state of
 * another grammar than the masker's is an error (SPROUT_ERR_INVALID_ARGUMENT);
 * SPROUT_ERR_OUT_OF_MEMORY when the cache cannot grow, SPROUT_ERR_UNSUPPORTED
 * when the mask would step more bytes than its budget (a hostile grammar:
 * each distinct stack top walks the vocabulary once); bits then hold nothing. */
sprout_status sp_grammar_mask(sp_grammar_masker *m, const sp_grammar_state *st, uint64_t *bits);
/* The budget of each mask in bytes stepped (the default, 2^25, for 0): for tests. */
void sp_grammar_masker_set_budget(sp_grammar_masker *m, uint32_t steps);

/* What the cache holds, for benchmarks and tests. */
typedef struct sp_grammar_mask_stats {
    size_t keys;        /* cached keys */
    size_t lengthened;  /* of them, keys that were lengthened */
    size_t dependent;   /* open tokens over all keys */
    size_t bytes;       /* memory of the cache */
} sp_grammar_mask_stats;
void sp_grammar_mask_stats_get(const sp_grammar_masker *m, sp_grammar_mask_stats *out);

#endif
