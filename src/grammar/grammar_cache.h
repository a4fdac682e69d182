/* Compiled grammars and their token-mask caches, shared by every sequence
 * of a model and kept across requests: a grammar's masker learns the
 * tokens each stack top decides alone the first time it meets that top
 * (tens of milliseconds on a large vocabulary), so a schema that comes
 * back (a server's clients send the same ones) pays that once. Entries
 * are keyed by the grammar's text; the least recently used one that no
 * sequence holds makes room. Thread-safe; an entry's masker is used under
 * the entry's own lock. */
#ifndef SPROUT_GRAMMAR_GRAMMAR_CACHE_H
#define SPROUT_GRAMMAR_GRAMMAR_CACHE_H

#include <stdint.h>

#include "grammar/grammar.h"
#include "grammar/grammar_mask.h"

typedef struct sp_grammar_cache sp_grammar_cache;
typedef struct sp_grammar_entry sp_grammar_entry;

/* Room for `capacity` grammars over vocabulary v (which must outlive it). */
sprout_status sp_grammar_cache_create(const sp_grammar_vocab *v, int capacity, sp_grammar_cache **out);
void sp_grammar_cache_free(sp_grammar_cache *c);

/* The entry of GBNF `text` (root rule "root"), compiled on first use; a
 * reference, released with sp_grammar_cache_release. A grammar that does
 * not compile fails with the engine's message and is not kept. */
sprout_status sp_grammar_cache_get(sp_grammar_cache *c, const char *text, sp_grammar_entry **out);
void sp_grammar_cache_release(sp_grammar_cache *c, sp_grammar_entry *e);

const sp_grammar *sp_grammar_entry_grammar(const sp_grammar_entry *e);
/* sp_grammar_mask with the entry's masker, under its lock. */
sprout_status sp_grammar_entry_mask(sp_grammar_entry *e, const sp_grammar_state *st, uint64_t *bits);

#endif
