/* The merge loop shared by SentencePiece-BPE and byte-level BPE: a word is
 * split into characters kept in a linked list, and the best adjacent pair is
 * merged again and again, best first, until no pair qualifies. A heap of
 * candidate pairs makes this O(n log n) in the word's length; stale pairs
 * (one side already merged away) are dropped when they surface. */
#ifndef SPROUT_TOKENIZER_MERGE_H
#define SPROUT_TOKENIZER_MERGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sprout.h"

typedef struct sp_symbol {
    int32_t prev, next; /* -1 at the ends */
    uint32_t start, len; /* bytes of the word; len 0: merged into its left neighbour */
} sp_symbol;

typedef struct sp_bigram {
    int32_t left, right;
    float priority; /* higher merges first; ties go to the leftmost pair */
    uint32_t size;  /* bytes of the pair when it was proposed */
} sp_bigram;

/* Says whether the pair text[l.start .. r.start + r.len) may merge, and with
 * what priority. */
typedef bool (*sp_pair_fn)(void *ctx, const char *word, const sp_symbol *l, const sp_symbol *r, int32_t left, int32_t right,
                           float *priority);

typedef struct sp_merger {
    sp_symbol *sym;
    size_t n_sym, cap_sym;
    sp_bigram *heap;
    size_t n_heap, cap_heap;
} sp_merger;

/* Splits word[0..len) into characters (by their lead bytes; a stray byte is
 * a character of its own) and merges. Afterwards m->sym holds the symbols;
 * follow next from index 0 (when len > 0). */
sprout_status sp_merge_word(sp_merger *m, const char *word, size_t len, sp_pair_fn pair, void *ctx);
void sp_merger_free(sp_merger *m);

/* Bytes in the UTF-8 sequence a lead byte starts (1 for stray bytes). */
static inline size_t sp_utf8_lead_len(unsigned char c) {
    static const unsigned char lookup[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return lookup[c >> 4];
}

#endif
