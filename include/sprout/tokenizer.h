/* sprout/tokenizer.h: text to token ids and back.
 * Part of <sprout.h>, whose conventions hold here. */
#ifndef SPROUT_API_TOKENIZER_H
#define SPROUT_API_TOKENIZER_H

#include "gguf.h"

SPROUT_BEGIN_DECLS

/* ---------------------------------------------------------------------------
 * Tokenizer
 *
 * Built from the vocabulary inside a GGUF (tokenizer.ggml.*): SentencePiece
 * ("llama"), byte-level BPE ("gpt2", with the pre-tokenizer named by
 * tokenizer.ggml.pre) and WordPiece ("bert"). Token for token what llama.cpp
 * and Hugging Face produce. A tokenizer is immutable once created: any number
 * of threads may use one at once.
 *
 *   sprout_tokenizer *tok;
 *   sprout_tokenizer_create(gguf, &tok);        // gguf must outlive tok
 *   sprout_token ids[256];
 *   size_t n;
 *   sprout_tokenize(tok, text, strlen(text), SPROUT_TOKENIZE_ADD_SPECIAL, ids, 256, &n);
 *   sprout_tokenizer_free(tok);
 * ------------------------------------------------------------------------- */
typedef struct sprout_tokenizer sprout_tokenizer;
typedef int32_t sprout_token;
#define SPROUT_TOKEN_NONE ((sprout_token)-1)

typedef enum sprout_vocab_type {
    SPROUT_VOCAB_SPM = 1, /* tokenizer.ggml.model "llama" */
    SPROUT_VOCAB_BPE = 2, /* "gpt2" */
    SPROUT_VOCAB_WPM = 3  /* "bert" */
} sprout_vocab_type;

/* Which special token sprout_tokenizer_special() returns. */
typedef enum sprout_special {
    SPROUT_SPECIAL_BOS = 0,
    SPROUT_SPECIAL_EOS,
    SPROUT_SPECIAL_EOT, /* end of turn (<|eot_id|>, <|im_end|>, <end_of_turn> ...) */
    SPROUT_SPECIAL_EOM, /* end of message (<|eom_id|>) */
    SPROUT_SPECIAL_UNK,
    SPROUT_SPECIAL_SEP,
    SPROUT_SPECIAL_PAD,
    SPROUT_SPECIAL_CLS,
    SPROUT_SPECIAL_MASK,
    SPROUT_SPECIAL_NEWLINE, /* the token of "\n" */
    SPROUT_SPECIAL_FIM_PRE, /* fill-in-the-middle: before the prefix (<|fim_prefix|>, <fim_prefix>, <PRE> ...) */
    SPROUT_SPECIAL_FIM_SUF, /* before the suffix */
    SPROUT_SPECIAL_FIM_MID, /* where the middle is to be written */
    SPROUT_SPECIAL_COUNT
} sprout_special;

/* Token attributes (bits), from tokenizer.ggml.token_type. */
enum {
    SPROUT_TOKEN_ATTR_UNDEFINED = 0,
    SPROUT_TOKEN_ATTR_UNKNOWN = 1 << 0,
    SPROUT_TOKEN_ATTR_UNUSED = 1 << 1,
    SPROUT_TOKEN_ATTR_NORMAL = 1 << 2,
    SPROUT_TOKEN_ATTR_CONTROL = 1 << 3,
    SPROUT_TOKEN_ATTR_USER_DEFINED = 1 << 4,
    SPROUT_TOKEN_ATTR_BYTE = 1 << 5,
    SPROUT_TOKEN_ATTR_LSTRIP = 1 << 6, /* eats the whitespace before it */
    SPROUT_TOKEN_ATTR_RSTRIP = 1 << 7  /* eats the whitespace after it */
};

/* Builds the tokenizer of `gguf`, which must stay open while the tokenizer
 * lives. Fails with SPROUT_ERR_NOT_FOUND when the file has no vocabulary and
 * SPROUT_ERR_UNSUPPORTED for tokenizer models sprout does not implement. An
 * unknown pre-tokenizer is not an error: sprout_tokenizer_warning() says so
 * and the default pre-tokenizer is used. */
sprout_status sprout_tokenizer_create(const sprout_gguf *gguf, sprout_tokenizer **out);
void sprout_tokenizer_free(sprout_tokenizer *tok);
/* A warning from loading ("" if none). */
const char *sprout_tokenizer_warning(const sprout_tokenizer *tok);

sprout_vocab_type sprout_tokenizer_type(const sprout_tokenizer *tok);
int32_t sprout_tokenizer_vocab_size(const sprout_tokenizer *tok);
/* The pre-tokenizer in use ("llama-bpe", "default", ...; "" for SPM/WPM). */
const char *sprout_tokenizer_pre(const sprout_tokenizer *tok);
sprout_token sprout_tokenizer_special(const sprout_tokenizer *tok, sprout_special which);
/* Whether tokenizing with SPROUT_TOKENIZE_ADD_SPECIAL adds BOS / EOS. */
bool sprout_tokenizer_adds_bos(const sprout_tokenizer *tok);
bool sprout_tokenizer_adds_eos(const sprout_tokenizer *tok);
/* True for tokens that end generation (EOS, EOT, EOM and their kin). */
bool sprout_tokenizer_is_eog(const sprout_tokenizer *tok, sprout_token id);
/* SPROUT_TOKEN_ATTR_* bits of a token (0 for an id out of range). */
uint32_t sprout_token_attr(const sprout_tokenizer *tok, sprout_token id);
/* The token's text as the vocabulary stores it ("▁the", "Ġthe", "<0x0A>"). */
sprout_status sprout_token_text(const sprout_tokenizer *tok, sprout_token id, const char **text, size_t *len);
/* The id of a vocabulary text, or SPROUT_TOKEN_NONE. */
sprout_token sprout_token_from_text(const sprout_tokenizer *tok, const char *text, size_t len);

enum {
    SPROUT_TOKENIZE_ADD_SPECIAL = 1 << 0,  /* add BOS/EOS as the model wants */
    SPROUT_TOKENIZE_PARSE_SPECIAL = 1 << 1 /* match control tokens written in the text ("<|im_start|>") */
};

/* Tokenizes text[0..len) (any bytes: invalid UTF-8 is replaced, not
 * rejected). Up to `cap` ids go to `tokens`; *n_tokens gets the full count.
 * If cap is too small the result is SPROUT_ERR_OUT_OF_RANGE and *n_tokens
 * says how much room to give. User-defined tokens are always matched, as
 * Hugging Face does; control tokens only with SPROUT_TOKENIZE_PARSE_SPECIAL. */
sprout_status sprout_tokenize(const sprout_tokenizer *tok, const char *text, size_t len, unsigned flags,
                              sprout_token *tokens, size_t cap, size_t *n_tokens);

/* The bytes a token stands for ("▁the" -> " the", "<0x0A>" -> "\n", "Ġthe"
 * -> " the"). Control and unknown tokens give "" unless `special`. The
 * pointer is valid while the tokenizer lives. A piece may be a fragment of a
 * UTF-8 character (byte tokens). */
sprout_status sprout_token_to_piece(const sprout_tokenizer *tok, sprout_token id, bool special, const char **piece,
                                    size_t *len);

enum {
    SPROUT_DETOKENIZE_REMOVE_SPECIAL = 1 << 0,  /* drop a leading BOS / trailing EOS the model adds */
    SPROUT_DETOKENIZE_UNPARSE_SPECIAL = 1 << 1, /* render control tokens as their text */
    SPROUT_DETOKENIZE_CLEAN_SPACES = 1 << 2,    /* Hugging Face's clean_up_tokenization_spaces, where the model asks for it */
    SPROUT_DETOKENIZE_CONTINUATION = 1 << 3     /* the tokens continue earlier text: keep the first piece's leading space */
};

/* Joins the pieces of tokens[0..n) into text (at most cap bytes, not
 * NUL-terminated; *len gets the full length, SPROUT_ERR_OUT_OF_RANGE if it
 * did not fit). The space that SPM puts before the first word is removed, as
 * llama.cpp does. */
sprout_status sprout_detokenize(const sprout_tokenizer *tok, const sprout_token *tokens, size_t n, unsigned flags,
                                char *text, size_t cap, size_t *len);

/* Streaming detokenizer: push ids one at a time and get text out only in
 * whole UTF-8 characters (a character split across byte tokens comes out
 * once its last byte arrives; bytes that can never form one come out as
 * U+FFFD). The text returned is valid until the next call on the stream. */
typedef struct sprout_detokenizer sprout_detokenizer;
sprout_status sprout_detokenizer_create(const sprout_tokenizer *tok, unsigned flags, sprout_detokenizer **out);
void sprout_detokenizer_free(sprout_detokenizer *d);
sprout_status sprout_detokenizer_push(sprout_detokenizer *d, sprout_token id, const char **text, size_t *len);
/* Ends the stream: whatever bytes are held back come out (as U+FFFD if they
 * are an unfinished character), and the stream starts afresh. */
sprout_status sprout_detokenizer_flush(sprout_detokenizer *d, const char **text, size_t *len);

/* Length of the valid UTF-8 character at s[0..n), or 0 if the bytes there are
 * not one (invalid, overlong, surrogate, past U+10FFFF, or cut short). */
size_t sprout_utf8_char_len(const char *s, size_t n);

SPROUT_END_DECLS

#endif /* SPROUT_API_TOKENIZER_H */
