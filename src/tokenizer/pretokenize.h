/* The pre-tokenizers of byte-level BPE vocabularies: a list of regexes,
 * chosen by tokenizer.ggml.pre, that split text into words before merging.
 * Each regex splits every piece the previous ones left, keeping both the
 * matches and the text between them (Hugging Face's "isolated" split).
 * The regexes run on PCRE2 in UTF + UCP mode, so \p{L}, \p{N} and \s mean
 * what the Unicode tables say, as in the tokenizers the files came from. */
#ifndef SPROUT_TOKENIZER_PRETOKENIZE_H
#define SPROUT_TOKENIZER_PRETOKENIZE_H

#include <stdbool.h>
#include <stddef.h>

#include "sprout.h"

typedef struct sp_pretokenizer sp_pretokenizer;

/* What a pre-tokenizer name implies for the vocabulary besides its regexes
 * (llama.cpp's per-name settings). */
typedef struct sp_pretokenizer_traits {
    const char *canonical; /* the table entry's first name */
    bool ignore_merges;    /* a word that is itself a token skips merging */
    bool clean_spaces;     /* detokenization may clean " ," and friends */
    int add_bos;           /* -1: keep the default, 0/1: force */
    bool no_bos;           /* the model has no BOS token */
} sp_pretokenizer_traits;

/* Compiles the pre-tokenizer called `name` (NULL or "" for the default).
 * *known is false when the name is not in the table (the default regexes
 * are used then). */
sprout_status sp_pretokenizer_create(const char *name, sp_pretokenizer **out, sp_pretokenizer_traits *traits, bool *known);
void sp_pretokenizer_free(sp_pretokenizer *pre);

typedef struct sp_span {
    size_t start, len;
} sp_span;

/* Splits valid UTF-8 text into words. *spans is (re)allocated to hold
 * *n_spans entries (the caller frees it). */
sprout_status sp_pretokenize(const sp_pretokenizer *pre, const char *text, size_t len, sp_span **spans, size_t *n_spans);

#endif
