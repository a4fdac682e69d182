/* Prompt-lookup decoding's proposals: the tokens that followed the latest
 * earlier occurrence of the text's last n-gram (n from max_ngram down to
 * 1), found through an index of every n-gram's latest end, kept up to date
 * as the text grows, so a step costs max_ngram lookups rather than a scan
 * of the text. */
#ifndef SPROUT_PIPELINE_LOOKUP_H
#define SPROUT_PIPELINE_LOOKUP_H

#include <stdint.h>

#include "sprout.h"

typedef struct sp_lookup_entry {
    uint64_t key;  /* the n-gram's hash; 0: empty */
    int32_t after; /* where the token after its latest occurrence is */
    int32_t n;     /* the n-gram's length */
} sp_lookup_entry;

typedef struct sp_lookup {
    int32_t max_ngram;
    int32_t indexed;  /* the text's tokens [0, indexed) have their n-grams in the table */
    uint64_t mask;    /* table size - 1 */
    sp_lookup_entry *table;
} sp_lookup;

/* An index for texts of up to max_tokens tokens and n-grams of 1..max_ngram. */
sprout_status sp_lookup_init(sp_lookup *l, int32_t max_ngram, int32_t max_tokens);
void sp_lookup_free(sp_lookup *l);
/* Forgets every text: the next proposal indexes its text afresh. */
void sp_lookup_reset(sp_lookup *l);

/* Up to max tokens that may follow text[0, n) (written to out); 0 when no
 * n-gram of the text's end occurred before. The index takes in what the
 * text gained since the last call, so text[0, n) must extend the last
 * call's text (or follow a reset). */
int32_t sp_lookup_propose(sp_lookup *l, const int32_t *text, int32_t n, int32_t max, int32_t *out);

#endif
