/* Byte-level BPE (tokenizer.ggml.model "gpt2"): the pre-tokenizer splits the
 * text into words, each word's bytes are spelt with the GPT-2 byte-to-unicode
 * characters, and adjacent symbols are merged by the rank of their merge rule
 * (lowest rank first) until no rule applies. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/utf8.h"
#include "tokenizer/merge.h"
#include "tokenizer/pretokenize.h"
#include "tokenizer/tokenizers.h"

typedef struct bpe_ctx {
    const sp_vocab *v;
    char *key; /* "left right" scratch, as long as the word plus one */
} bpe_ctx;

static bool bpe_pair(void *ctx_, const char *word, const sp_symbol *l, const sp_symbol *r, int32_t left, int32_t right,
                     float *priority) {
    (void)left;
    (void)right;
    bpe_ctx *ctx = ctx_;
    const char *ltext = word + l->start, *rtext = word + r->start;
    /* rules split at the first space after the first byte, so a left side
     * with a later space can have no rule */
    if (l->len > 1 && memchr(ltext + 1, ' ', l->len - 1)) return false;
    memcpy(ctx->key, ltext, l->len);
    ctx->key[l->len] = ' ';
    memcpy(ctx->key + l->len + 1, rtext, r->len);
    int64_t rank = sp_strmap_find(&ctx->v->merge_rank, ctx->key, l->len + 1 + r->len);
    if (rank < 0) return false;
    *priority = -(float)rank; /* ranks stay below 2^24, exact in a float */
    return true;
}

/* Replaces every byte that is not part of valid UTF-8 with U+FFFD, as the
 * reference tokenizers see such input. Returns text itself when it is valid. */
static char *valid_utf8(const char *text, size_t len, size_t *out_len, bool *allocated) {
    *allocated = false;
    *out_len = len;
    if (sp_utf8_is_valid(text, len)) return (char *)text;
    char *out = malloc(len * 3 + 1);
    if (!out) return NULL;
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        size_t cl = sp_utf8_valid_prefix_len((const unsigned char *)text + i, len - i);
        if (cl == 0) {
            memcpy(out + o, "\xEF\xBF\xBD", 3);
            o += 3;
            i++;
        } else {
            memcpy(out + o, text + i, cl);
            o += cl;
            i += cl;
        }
    }
    *allocated = true;
    *out_len = o;
    return out;
}

/* Emits the tokens of a merged word: each symbol's token, or, for a symbol
 * the vocabulary lacks, the tokens of its single bytes that exist. */
static void emit_symbols(const sp_vocab *v, const sp_merger *m, const char *word, sp_token_list *out) {
    for (int32_t i = 0; i != -1; i = m->sym[i].next) {
        const sp_symbol *s = &m->sym[i];
        int32_t id = sp_vocab_find(v, word + s->start, s->len);
        if (id >= 0) {
            sp_token_list_push(out, id);
            continue;
        }
        for (uint32_t k = 0; k < s->len; k++) {
            id = sp_vocab_find(v, word + s->start + k, 1);
            if (id >= 0) sp_token_list_push(out, id);
        }
    }
}

sprout_status sp_tokenize_bpe(const sp_vocab *v, const char *raw, size_t raw_len, sp_token_list *out) {
    size_t len;
    bool allocated;
    char *text = valid_utf8(raw, raw_len, &len, &allocated);
    if (!text) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
    sp_span *words = NULL;
    size_t n_words = 0;
    sprout_status st = sp_pretokenize(v->pre, text, len, &words, &n_words);
    size_t longest = 0;
    for (size_t w = 0; w < n_words; w++)
        if (words[w].len > longest) longest = words[w].len;
    /* a byte becomes at most 2 bytes of byte-level text */
    char *word = st == SPROUT_OK ? malloc(2 * longest + 1) : NULL;
    bpe_ctx ctx = {.v = v, .key = st == SPROUT_OK ? malloc(2 * longest + 2) : NULL};
    if (st == SPROUT_OK && (!word || !ctx.key)) st = sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
    sp_merger m = {0};
    for (size_t w = 0; st == SPROUT_OK && w < n_words; w++) {
        size_t n = 0;
        for (size_t i = 0; i < words[w].len; i++) n += (size_t)sp_byte_to_unicode((uint8_t)text[words[w].start + i], word + n);
        if (v->ignore_merges) {
            int32_t id = sp_vocab_find(v, word, n);
            if (id >= 0) {
                sp_token_list_push(out, id);
                continue;
            }
        }
        st = sp_merge_word(&m, word, n, bpe_pair, &ctx);
        if (st == SPROUT_OK && n > 0) emit_symbols(v, &m, word, out);
    }
    sp_merger_free(&m);
    free(ctx.key);
    free(word);
    free(words);
    if (allocated) free(text);
    return st;
}
