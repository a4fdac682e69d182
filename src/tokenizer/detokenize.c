/* Tokens back to text: whole sequences (sprout_detokenize) and streams that
 * release only complete UTF-8 characters (sprout_detokenizer). */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/utf8.h"
#include "tokenizer/tokenizer_internal.h"

/* Hugging Face's clean_up_tokenization_spaces, in llama.cpp's three passes:
 * " ?", " !", " .", " ," lose their space; " ' " becomes "'"; " 's", " 'm",
 * " 're", " 've" lose their space. Works in place; returns the new length. */
static size_t clean_spaces(char *text, size_t total) {
    size_t n = total ? 1 : 0;
    for (size_t i = 1; i < total; i++) {
        char x = text[i];
        if (text[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',')) n--;
        text[n++] = x;
    }
    total = n;
    n = total ? 1 : 0;
    for (size_t i = 1; i < total; i++) {
        char x = text[i];
        if (x == '\'' && i + 1 < total && text[i - 1] == ' ' && text[i + 1] == ' ') {
            n--;
            text[++i] = '\0';
        }
        text[n++] = x;
    }
    total = n;
    n = total ? 1 : 0;
    for (size_t i = 1; i < total; i++) {
        char x = text[i];
        if (text[i - 1] == ' ' && x == '\'' && i + 1 < total) {
            char x1 = text[i + 1];
            if (x1 == 's' || x1 == 'm') n--;
            else if (i + 2 < total && ((x1 == 'r' && text[i + 2] == 'e') || (x1 == 'v' && text[i + 2] == 'e'))) n--;
        }
        text[n++] = x;
    }
    return n;
}

/* The common rules of whole and streamed detokenization: whether the token
 * at this position is dropped, and whether its piece loses a leading space.
 * SPM vocabularies put a space before the first word; it goes again from the
 * first piece that has text, after a BOS too (SentencePiece decodes
 * [<s>, "▁Hi"] as "Hi"). */
typedef struct detok_state {
    bool first;        /* nothing emitted or skipped yet */
    bool remove_space; /* the next piece with text loses one leading space */
} detok_state;

static void detok_start(const sp_vocab *v, unsigned flags, detok_state *s) {
    s->first = true;
    s->remove_space = v->add_space_prefix && !(flags & SPROUT_DETOKENIZE_CONTINUATION);
}

/* The piece to emit for `id` (possibly empty). */
static sp_token_text detok_piece(const sp_vocab *v, detok_state *s, int32_t id, unsigned flags) {
    sp_token_text p = {"", 0};
    if (s->first && (flags & SPROUT_DETOKENIZE_REMOVE_SPECIAL) && v->add_bos && id == v->special[SPROUT_SPECIAL_BOS]) {
        s->first = false;
        return p;
    }
    s->first = false;
    const uint32_t hidden = SPROUT_TOKEN_ATTR_CONTROL | SPROUT_TOKEN_ATTR_UNKNOWN;
    if ((flags & SPROUT_DETOKENIZE_UNPARSE_SPECIAL) || !(v->attr[id] & hidden)) p = v->piece[id];
    if (s->remove_space && p.len) {
        if (p.ptr[0] == ' ') {
            p.ptr++;
            p.len--;
        }
        s->remove_space = false;
    }
    return p;
}

sprout_status sprout_detokenize(const sprout_tokenizer *t, const sprout_token *tokens, size_t n, unsigned flags, char *text,
                                size_t cap, size_t *len) {
    if (!t || (!tokens && n) || (!text && cap) || !len) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "NULL argument");
    const sp_vocab *v = &t->vocab;
    for (size_t i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= v->n_tokens)
            return sp_fail(SPROUT_ERR_OUT_OF_RANGE, "token %zu: id %d is outside the vocabulary (0..%d)", i, tokens[i],
                           v->n_tokens - 1);
    if ((flags & SPROUT_DETOKENIZE_REMOVE_SPECIAL) && v->add_eos && n > 0 && tokens[n - 1] == v->special[SPROUT_SPECIAL_EOS])
        n--;
    detok_state s;
    detok_start(v, flags, &s);
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        sp_token_text p = detok_piece(v, &s, tokens[i], flags);
        if (total + p.len <= cap) memcpy(text + total, p.ptr, p.len);
        total += p.len;
    }
    if (total <= cap && (flags & SPROUT_DETOKENIZE_CLEAN_SPACES) && v->clean_spaces) total = clean_spaces(text, total);
    *len = total;
    if (total > cap) return sp_fail(SPROUT_ERR_OUT_OF_RANGE, "%zu bytes of text do not fit in %zu", total, cap);
    return SPROUT_OK;
}

/* --- streaming ----------------------------------------------------------------------- */

struct sprout_detokenizer {
    const sp_vocab *vocab;
    unsigned flags;
    detok_state state;
    unsigned char held[4]; /* the start of a character still incomplete */
    size_t n_held;
    char *out;
    size_t out_cap;
};

sprout_status sprout_detokenizer_create(const sprout_tokenizer *t, unsigned flags, sprout_detokenizer **out) {
    if (!out) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "NULL output pointer");
    *out = NULL;
    if (!t) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "NULL tokenizer");
    sprout_detokenizer *d = calloc(1, sizeof *d);
    if (!d) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
    d->vocab = &t->vocab;
    d->flags = flags;
    detok_start(d->vocab, d->flags, &d->state);
    *out = d;
    return SPROUT_OK;
}

void sprout_detokenizer_free(sprout_detokenizer *d) {
    if (!d) return;
    free(d->out);
    free(d);
}

/* Whether s[0..n) (n < 4) could still become a valid character. */
static bool could_complete(const unsigned char *s, size_t n) {
    size_t need = s[0] >= 0xC2 && s[0] <= 0xDF ? 2 : s[0] >= 0xE0 && s[0] <= 0xEF ? 3 : s[0] >= 0xF0 && s[0] <= 0xF4 ? 4 : 0;
    if (need == 0 || n >= need) return false;
    unsigned lo = 0x80, hi = 0xBF;
    if (s[0] == 0xE0) lo = 0xA0;
    else if (s[0] == 0xED) hi = 0x9F;
    else if (s[0] == 0xF0) lo = 0x90;
    else if (s[0] == 0xF4) hi = 0x8F;
    if (n >= 2 && (s[1] < lo || s[1] > hi)) return false;
    for (size_t i = 2; i < n; i++)
        if ((s[i] & 0xC0) != 0x80) return false;
    return true;
}

static bool reserve_out(sprout_detokenizer *d, size_t need) {
    if (d->out_cap >= need) return true;
    size_t cap = d->out_cap ? d->out_cap : 64;
    while (cap < need) cap *= 2;
    char *p = realloc(d->out, cap);
    if (!p) return false;
    d->out = p;
    d->out_cap = cap;
    return true;
}

/* Moves the complete characters of held + piece to d->out; keeps an
 * unfinished tail; replaces bytes that cannot start or continue a character
 * with U+FFFD. */
static size_t emit_complete(sprout_detokenizer *d, const char *piece, size_t len, bool final) {
    size_t o = 0;
    const size_t total = d->n_held + len;
    unsigned char window[4];
    size_t i = 0; /* position in the virtual concatenation held + piece */
#define AT(k) ((k) < d->n_held ? d->held[(k)] : (unsigned char)piece[(k) - d->n_held])
    while (i < total) {
        size_t avail = total - i < 4 ? total - i : 4;
        for (size_t k = 0; k < avail; k++) window[k] = AT(i + k);
        size_t cl = sp_utf8_valid_prefix_len(window, avail);
        if (cl > 0) {
            memcpy(d->out + o, window, cl);
            o += cl;
            i += cl;
        } else if (!final && could_complete(window, avail)) {
            break; /* wait for the rest of this character */
        } else {
            memcpy(d->out + o, "\xEF\xBF\xBD", 3);
            o += 3;
            i++;
        }
    }
    unsigned char tail[4];
    size_t n_tail = total - i;
    for (size_t k = 0; k < n_tail; k++) tail[k] = AT(i + k);
#undef AT
    memcpy(d->held, tail, n_tail);
    d->n_held = n_tail;
    return o;
}

sprout_status sprout_detokenizer_push(sprout_detokenizer *d, sprout_token id, const char **text, size_t *len) {
    if (!d || !text || !len) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "NULL argument");
    *text = "";
    *len = 0;
    if (id < 0 || id >= d->vocab->n_tokens)
        return sp_fail(SPROUT_ERR_OUT_OF_RANGE, "token id %d is outside the vocabulary (0..%d)", id, d->vocab->n_tokens - 1);
    sp_token_text p = detok_piece(d->vocab, &d->state, id, d->flags);
    /* every held or new byte yields at most 3 bytes (U+FFFD) */
    if (!reserve_out(d, 3 * (d->n_held + p.len) + 1)) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
    *len = emit_complete(d, p.ptr, p.len, false);
    *text = d->out;
    return SPROUT_OK;
}

sprout_status sprout_detokenizer_flush(sprout_detokenizer *d, const char **text, size_t *len) {
    if (!d || !text || !len) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "NULL argument");
    if (!reserve_out(d, 3 * d->n_held + 1)) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
    *len = emit_complete(d, "", 0, true);
    *text = d->out;
    detok_start(d->vocab, d->flags, &d->state);
    return SPROUT_OK;
}
