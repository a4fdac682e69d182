/* What the rest of the library takes from a tokenizer beyond the public API:
 * tokenizing into a growable list, and the end-of-generation ids. */
#ifndef SPROUT_TOKENIZER_TOKENIZER_H
#define SPROUT_TOKENIZER_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "sprout.h"
#include "tokenizer/token_list.h"

/* Tokenizes into a list (the public sprout_tokenize copies out of it). */
sprout_status sp_tokenize_all(const sprout_tokenizer *t, const char *text, size_t len, unsigned flags, sp_token_list *out);

/* The vocabulary's end-of-generation ids (*n of them; NULL and 0 for a NULL
 * tokenizer): they live as long as the tokenizer. */
const int32_t *sp_tokenizer_eog(const sprout_tokenizer *t, size_t *n);

#endif
