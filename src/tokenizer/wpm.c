/* WordPiece (tokenizer.ggml.model "bert") for BERT embedding models, with
 * llama.cpp's normalization: with strip_accents, each character becomes the
 * first code point of its canonical decomposition (an accented letter its
 * base, a Hangul syllable its leading consonant, as llama.cpp's one-to-one
 * NFD table does) and every mark (\p{M}: nonspacing, spacing such as
 * Devanagari vowel signs, enclosing) is dropped; with lowercase, letters
 * are lower-cased. Then the text is split at whitespace, and punctuation,
 * ASCII symbols and CJK ideographs become words of their own. Each word,
 * with "▁" in front, is covered greedily by the longest tokens; a word that
 * cannot be covered is one unknown token. */
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

/* The first code point of c's full canonical decomposition (c itself when
 * it has none): what llama.cpp's NFD table maps each code point to. */
static int32_t first_of_decomposition(int32_t c) {
    utf8proc_int32_t parts[8];
    int last = 0;
    utf8proc_ssize_t n = utf8proc_decompose_char(c, parts, 8, UTF8PROC_DECOMPOSE, &last);
    return n >= 1 && n <= 8 ? parts[0] : c;
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
    /* each character becomes at most one code point of at most 4 bytes
     * (lower-cased), and an invalid byte U+FFFD: 4 per byte is enough */
    char *words = malloc(len * 4 + 1), *buf = malloc(len * 4 + 4);
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
        if (v->strip_accents) c = first_of_decomposition(c);
        utf8proc_category_t cat = utf8proc_category(c);
        if (is_whitespace(c)) {
            END_WORD();
            continue;
        }
        if (c == 0 || c == 0xFFFD || cat == UTF8PROC_CATEGORY_CC || cat == UTF8PROC_CATEGORY_CF || cat == UTF8PROC_CATEGORY_CO ||
            cat == UTF8PROC_CATEGORY_CS)
            continue;
        if (v->strip_accents && (cat == UTF8PROC_CATEGORY_MN || cat == UTF8PROC_CATEGORY_MC || cat == UTF8PROC_CATEGORY_ME))
            continue;
        bool punct = cat >= UTF8PROC_CATEGORY_PC && cat <= UTF8PROC_CATEGORY_PO;
        bool symbol = cat >= UTF8PROC_CATEGORY_SM && cat <= UTF8PROC_CATEGORY_SO;
        bool alone = punct || (c < 0x7F && symbol) || is_chinese(c);
        if (alone) END_WORD();
        o += (size_t)utf8proc_encode_char(v->lowercase ? utf8proc_tolower(c) : c, (utf8proc_uint8_t *)words + o);
        if (alone) END_WORD();
    }
    END_WORD();
#undef END_WORD
    for (size_t w = 0, start = 0; w < n_words; start = ends[w++]) cover_word(v, words + start, ends[w] - start, buf, out);
    free(words);
    free(buf);
    free(ends);
    return SPROUT_OK;
}
