/* WordPiece (tokenizer.ggml.model "bert") for BERT embedding models, with
 * the normalization of BERT's own tokenizer: the text is decomposed
 * (canonically, the nonspacing marks dropped: accents go, Hangul syllables
 * become jamo), lower-cased, split at whitespace, and punctuation, ASCII symbols and CJK
 * ideographs become words of their own. Each word, with "▁" in front, is
 * covered greedily by the longest tokens; a word that cannot be covered is
 * one unknown token. */
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "core/error.h"
#include "tokenizer/tokenizers.h"

static bool is_whitespace(int32_t c) {
    return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) ||
           c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

static bool is_chinese(int32_t c) {
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
           (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

/* Covers "▁" + word[0..len) with the longest tokens; on failure nothing is
 * added but one unknown token. */
static void cover_word(const sp_vocab *v, const char *word, size_t len, char *buf, sp_token_list *out) {
    memcpy(buf, "\xE2\x96\x81", 3);
    memcpy(buf + 3, word, len);
    const size_t n = len + 3, start = out->n;
    for (size_t i = 0; i < n;) {
        size_t j = i + v->max_token_len + 1 < n ? i + v->max_token_len + 1 : n;
        int32_t id = -1;
        for (; j > i; j--)
            if ((id = sp_vocab_find(v, buf + i, j - i)) >= 0) break;
        if (id < 0) {
            out->n = start;
            break;
        }
        sp_token_list_push(out, id);
        i = j;
    }
    if (out->n == start && v->special[SPROUT_SPECIAL_UNK] >= 0) sp_token_list_push(out, v->special[SPROUT_SPECIAL_UNK]);
}

sprout_status sp_tokenize_wpm(const sp_vocab *v, const char *text, size_t len, sp_token_list *out) {
    /* a character that decomposes is 2 bytes or more, and becomes at most 4
     * code points of at most 4 bytes each (lower-cased): 8 per byte is enough */
    char *words = malloc(len * 8 + 1), *buf = malloc(len * 8 + 4);
    size_t *ends = malloc((len + 1) * sizeof *ends);
    if (!words || !buf || !ends) {
        free(words);
        free(buf);
        free(ends);
        return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    size_t o = 0, n_words = 0, word_start = 0;
#define END_WORD()                                                                                    \
    do {                                                                                              \
        if (o > word_start) {                                                                         \
            ends[n_words++] = o;                                                                      \
            word_start = o;                                                                           \
        }                                                                                             \
    } while (0)
    for (size_t i = 0; i < len;) {
        utf8proc_int32_t c;
        utf8proc_ssize_t cl = utf8proc_iterate((const utf8proc_uint8_t *)text + i, (utf8proc_ssize_t)(len - i), &c);
        if (cl <= 0) { /* invalid byte: U+FFFD, which is dropped below */
            c = 0xFFFD;
            cl = 1;
        }
        i += (size_t)cl;
        /* canonical decomposition without the nonspacing marks: accents go, and
         * a Hangul syllable becomes its jamo, as BERT's normalizer does */
        utf8proc_int32_t parts[8];
        int last = 0;
        utf8proc_ssize_t n_parts = utf8proc_decompose_char(c, parts, 8, UTF8PROC_DECOMPOSE, &last);
        if (n_parts <= 0 || n_parts > 8) {
            parts[0] = c;
            n_parts = 1;
        }
        for (utf8proc_ssize_t k = 0; k < n_parts; k++) {
            c = parts[k];
            utf8proc_category_t cat = utf8proc_category(c);
            if (cat == UTF8PROC_CATEGORY_MN) continue;
            if (is_whitespace(c)) {
                END_WORD();
                continue;
            }
            if (c == 0 || c == 0xFFFD || cat == UTF8PROC_CATEGORY_CC || cat == UTF8PROC_CATEGORY_CF ||
                cat == UTF8PROC_CATEGORY_CO || cat == UTF8PROC_CATEGORY_CS)
                continue;
            bool punct = cat >= UTF8PROC_CATEGORY_PC && cat <= UTF8PROC_CATEGORY_PO;
            bool symbol = cat >= UTF8PROC_CATEGORY_SM && cat <= UTF8PROC_CATEGORY_SO;
            bool alone = punct || (c < 0x7F && symbol) || is_chinese(c);
            if (alone) END_WORD();
            o += (size_t)utf8proc_encode_char(utf8proc_tolower(c), (utf8proc_uint8_t *)words + o);
            if (alone) END_WORD();
        }
    }
    END_WORD();
#undef END_WORD
    for (size_t w = 0, start = 0; w < n_words; start = ends[w++]) cover_word(v, words + start, ends[w] - start, buf, out);
    free(words);
    free(buf);
    free(ends);
    return SPROUT_OK;
}
