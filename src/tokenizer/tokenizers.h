/* The three tokenizer algorithms. Each appends the ids of one fragment of
 * text (special tokens already split off) to `out`. */
#ifndef SPROUT_TOKENIZER_TOKENIZERS_H
#define SPROUT_TOKENIZER_TOKENIZERS_H

#include <stdbool.h>
#include <stddef.h>

#include "tokenizer/token_list.h"
#include "tokenizer/vocab.h"

/* SentencePiece BPE; `prefix_space` puts the dummy "▁" in front. */
sprout_status sp_tokenize_spm(const sp_vocab *v, const char *text, size_t len, bool prefix_space, sp_token_list *out);
/* Byte-level BPE with the vocabulary's pre-tokenizer. */
sprout_status sp_tokenize_bpe(const sp_vocab *v, const char *text, size_t len, sp_token_list *out);
/* WordPiece (BERT). */
sprout_status sp_tokenize_wpm(const sp_vocab *v, const char *text, size_t len, sp_token_list *out);

#endif
