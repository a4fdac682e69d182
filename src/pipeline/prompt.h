/* What the chat sessions share with the model-level prompt builders
 * (prompt.c): the special tokens' text and a rendered template's ids. */
#ifndef SPROUT_PIPELINE_PROMPT_H
#define SPROUT_PIPELINE_PROMPT_H

#include <stddef.h>
#include <stdint.h>

#include "sprout.h"

/* The texts of the BOS and EOS tokens for a chat template (malloc'd; NULL
 * where the vocabulary has no such token). Fails only when a copy cannot be
 * made, leaving both NULL. */
sprout_status sp_bos_eos_text(const sprout_tokenizer *tok, char **bos, char **eos);

/* A rendered template to ids: the template writes special tokens as text;
 * BOS is added only if the model wants one and the template did not write it. */
sprout_status sp_templated_tokens(const sprout_tokenizer *tok, const char *text, size_t len, int32_t **ids, size_t *n);

#endif
