/* The tokenizer handle, shared by tokenizer.c and detokenize.c. */
#ifndef SPROUT_TOKENIZER_INTERNAL_H
#define SPROUT_TOKENIZER_INTERNAL_H

#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab.h"

struct sprout_tokenizer {
    sp_vocab vocab;
    char warning[256];
};

#endif
