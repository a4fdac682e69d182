/* A tokenizer vocabulary as the GGUF stores it (tokenizer.ggml.*), with the
 * lookup structures the tokenizers need. Token texts point into the mapped
 * file; the handle that owns the mapping must outlive the vocabulary.
 *
 * Behaviour follows llama.cpp's vocabulary loader, which in turn follows the
 * Hugging Face tokenizers the files were converted from: the defaults per
 * tokenizer model, the special-token ids and their fallbacks, the
 * end-of-generation set, and the per-model token attributes. */
#ifndef SPROUT_TOKENIZER_VOCAB_H
#define SPROUT_TOKENIZER_VOCAB_H

#include <stdbool.h>
#include <stdint.h>

#include "core/arena.h"
#include "core/strmap.h"
#include "sprout.h"

typedef enum sp_vocab_kind {
    SP_VOCAB_SPM = 1, /* "llama": SentencePiece BPE over scores, byte fallback */
    SP_VOCAB_BPE = 2, /* "gpt2": byte-level BPE over ranked merges */
    SP_VOCAB_WPM = 3, /* "bert": WordPiece */
} sp_vocab_kind;

typedef struct sp_token_text {
    const char *ptr;
    uint32_t len;
} sp_token_text;

typedef struct sp_pretokenizer sp_pretokenizer;

typedef struct sp_vocab {
    sp_vocab_kind kind;
    int32_t n_tokens;
    sp_token_text *text;   /* as stored (byte-level or ▁-escaped) */
    float *score;
    uint32_t *attr;        /* SPROUT_TOKEN_ATTR_* bits */
    sp_token_text *piece;  /* decoded bytes, as detokenization emits them */
    uint32_t max_token_len;
    sp_strmap token_index; /* text -> id (the last id wins, as in llama.cpp) */
    sp_strmap merge_rank;  /* "left right" -> rank (BPE) */

    int32_t special[SPROUT_SPECIAL_COUNT]; /* -1: none */
    int32_t *eog;          /* end-of-generation ids */
    int32_t n_eog;
    int32_t *special_tokens; /* control, user-defined and unknown ids, longest text first */
    int32_t n_special_tokens;

    bool add_bos, add_eos, add_space_prefix, remove_extra_whitespaces, ignore_merges, clean_spaces;
    bool lowercase, strip_accents; /* WordPiece's normalizer (BERT's lowercase and strip_accents) */
    char pre_name[64];
    sp_pretokenizer *pre; /* BPE only */
    sp_arena arena;
} sp_vocab;

/* Loads the vocabulary of a GGUF. A missing or malformed tokenizer is a
 * clear error; an unknown pre-tokenizer name is a warning (stored in
 * *warning, may be NULL) and falls back to the default regexes. */
sprout_status sp_vocab_load(const sprout_gguf *gguf, sp_vocab *vocab, char *warning, size_t warning_cap);
void sp_vocab_free(sp_vocab *vocab);

/* The id of a token text, or -1. */
static inline int32_t sp_vocab_find(const sp_vocab *v, const char *text, size_t len) {
    return (int32_t)sp_strmap_find(&v->token_index, text, len);
}

/* The id of the token for one raw byte: "<0xNN>" (SPM) or its byte-level
 * character (BPE); -1 when the vocabulary has neither. */
int32_t sp_vocab_byte_token(const sp_vocab *v, uint8_t byte);

/* The GPT-2 byte-to-unicode map: the UTF-8 (1-2 bytes) of the character that
 * stands for `byte` in byte-level BPE vocabularies. */
int sp_byte_to_unicode(uint8_t byte, char out[2]);
/* The inverse for one code point; -1 if it stands for no byte. */
int sp_unicode_to_byte(uint32_t cpt);

#endif
