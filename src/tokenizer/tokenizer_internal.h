/* The tokenizer handle, shared by tokenizer.c and detokenize.c. */
#ifndef SPROUT_TOKENIZER_INTERNAL_H
#define SPROUT_TOKENIZER_INTERNAL_H

#include "tokenizer/token_list.h"
#include "tokenizer/vocab.h"

struct sprout_tokenizer {
    sp_vocab vocab;
    char warning[256];
};

/* Tokenizes into a list (the public sprout_tokenize copies out of it). */
sprout_status sp_tokenize_all(const sprout_tokenizer *t, const char *text, size_t len, unsigned flags, sp_token_list *out);

#endif
