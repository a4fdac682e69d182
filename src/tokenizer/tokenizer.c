/* The public tokenizer: special-token splitting, BOS/EOS, and dispatch to
 * the vocabulary's algorithm. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "tokenizer/tokenizer_internal.h"
#include "tokenizer/tokenizers.h"

sprout_status sprout_tokenizer_create(const sprout_gguf *gguf, sprout_tokenizer **out) {
    if (!out) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "NULL output pointer");
    *out = NULL;
    if (!gguf) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "NULL model");
    sprout_tokenizer *t = calloc(1, sizeof *t);
    if (!t) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
    sprout_status st = sp_vocab_load(gguf, &t->vocab, t->warning, sizeof t->warning);
    if (st != SPROUT_OK) {
        free(t);
        return st;
    }
    *out = t;
    return SPROUT_OK;
}

void sprout_tokenizer_free(sprout_tokenizer *t) {
    if (!t) return;
    sp_vocab_free(&t->vocab);
    free(t);
}

const char *sprout_tokenizer_warning(const sprout_tokenizer *t) { return t ? t->warning : ""; }
sprout_vocab_type sprout_tokenizer_type(const sprout_tokenizer *t) { return t ? (sprout_vocab_type)t->vocab.kind : 0; }
int32_t sprout_tokenizer_vocab_size(const sprout_tokenizer *t) { return t ? t->vocab.n_tokens : 0; }
const char *sprout_tokenizer_pre(const sprout_tokenizer *t) { return t ? t->vocab.pre_name : ""; }
bool sprout_tokenizer_adds_bos(const sprout_tokenizer *t) { return t && t->vocab.add_bos; }
bool sprout_tokenizer_adds_eos(const sprout_tokenizer *t) { return t && t->vocab.add_eos; }

const int32_t *sp_tokenizer_eog(const sprout_tokenizer *t, size_t *n) {
    *n = t ? (size_t)t->vocab.n_eog : 0;
    return t ? t->vocab.eog : NULL;
}

sprout_token sprout_tokenizer_special(const sprout_tokenizer *t, sprout_special which) {
    if (!t || (int)which < 0 || which >= SPROUT_SPECIAL_COUNT) return SPROUT_TOKEN_NONE;
    return t->vocab.special[which];
}

bool sprout_tokenizer_is_eog(const sprout_tokenizer *t, sprout_token id) {
    if (!t || id < 0) return false;
    for (int32_t i = 0; i < t->vocab.n_eog; i++)
        if (t->vocab.eog[i] == id) return true;
    return false;
}

uint32_t sprout_token_attr(const sprout_tokenizer *t, sprout_token id) {
    return t && id >= 0 && id < t->vocab.n_tokens ? t->vocab.attr[id] : 0;
}

static sprout_status check_id(const sprout_tokenizer *t, sprout_token id) {
    if (!t) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "NULL tokenizer");
    if (id < 0 || id >= t->vocab.n_tokens)
        return sp_fail(SPROUT_ERR_OUT_OF_RANGE, "token id %d is outside the vocabulary (0..%d)", id, t->vocab.n_tokens - 1);
    return SPROUT_OK;
}

sprout_status sprout_token_text(const sprout_tokenizer *t, sprout_token id, const char **text, size_t *len) {
    sprout_status st = check_id(t, id);
    if (st != SPROUT_OK) return st;
    *text = t->vocab.text[id].ptr;
    *len = t->vocab.text[id].len;
    return SPROUT_OK;
}

sprout_token sprout_token_from_text(const sprout_tokenizer *t, const char *text, size_t len) {
    return t && text ? sp_vocab_find(&t->vocab, text, len) : SPROUT_TOKEN_NONE;
}

sprout_status sprout_token_to_piece(const sprout_tokenizer *t, sprout_token id, bool special, const char **piece, size_t *len) {
    sprout_status st = check_id(t, id);
    if (st != SPROUT_OK) return st;
    const uint32_t hidden = SPROUT_TOKEN_ATTR_CONTROL | SPROUT_TOKEN_ATTR_UNKNOWN;
    if (!special && (t->vocab.attr[id] & hidden)) {
        *piece = "";
        *len = 0;
    } else {
        *piece = t->vocab.piece[id].ptr;
        *len = t->vocab.piece[id].len;
    }
    return SPROUT_OK;
}

/* --- special-token splitting ------------------------------------------------------ */

typedef struct fragment {
    int32_t token; /* -1: raw text */
    size_t start, len;
} fragment;

typedef struct fragment_list {
    fragment *items;
    size_t n, cap;
} fragment_list;

static bool push_fragment(fragment_list *l, fragment f) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        fragment *p = realloc(l->items, cap * sizeof *p);
        if (!p) return false;
        l->items = p;
        l->cap = cap;
    }
    l->items[l->n++] = f;
    return true;
}

/* Splits the raw fragments at every occurrence of each special token,
 * longest tokens first, leftmost occurrence first, as llama.cpp and Hugging
 * Face do. Control and unknown tokens only take part when parse_special;
 * user-defined ones always do. LSTRIP/RSTRIP tokens eat the whitespace
 * beside them. */
static sprout_status split_special(const sp_vocab *v, const char *text, size_t len, bool parse_special, fragment_list *out) {
    fragment_list a = {0}, b = {0};
    if (len && !push_fragment(&a, (fragment){-1, 0, len})) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
    for (int32_t k = 0; k < v->n_special_tokens; k++) {
        const int32_t id = v->special_tokens[k];
        const uint32_t attr = v->attr[id];
        if (!parse_special && (attr & (SPROUT_TOKEN_ATTR_CONTROL | SPROUT_TOKEN_ATTR_UNKNOWN))) continue;
        const char *tt = v->text[id].ptr;
        const size_t tl = v->text[id].len;
        b.n = 0;
        bool found = false;
        for (size_t f = 0; f < a.n; f++) {
            fragment fr = a.items[f];
            if (fr.token >= 0 || fr.len < tl) {
                if (!push_fragment(&b, fr)) goto oom;
                continue;
            }
            size_t pos = fr.start, end = fr.start + fr.len;
            while (pos < end) {
                const char *hit = memmem(text + pos, end - pos, tt, tl);
                if (!hit) break;
                found = true;
                size_t at = (size_t)(hit - text), left_len = at - pos;
                if (attr & SPROUT_TOKEN_ATTR_LSTRIP)
                    while (left_len > 0 && isspace((unsigned char)text[pos + left_len - 1])) left_len--;
                if (left_len > 0 && !push_fragment(&b, (fragment){-1, pos, left_len})) goto oom;
                if (!push_fragment(&b, (fragment){id, at, tl})) goto oom;
                pos = at + tl;
                if (attr & SPROUT_TOKEN_ATTR_RSTRIP)
                    while (pos < end && isspace((unsigned char)text[pos])) pos++;
            }
            if (pos < end && !push_fragment(&b, (fragment){-1, pos, end - pos})) goto oom;
        }
        if (found) {
            fragment_list t = a;
            a = b;
            b = t;
        }
    }
    free(b.items);
    *out = a;
    return SPROUT_OK;
oom:
    free(a.items);
    free(b.items);
    return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
}

sprout_status sp_tokenize_all(const sprout_tokenizer *t, const char *text, size_t len, unsigned flags, sp_token_list *out) {
    const sp_vocab *v = &t->vocab;
    const bool add_special = flags & SPROUT_TOKENIZE_ADD_SPECIAL;
    fragment_list frags = {0};
    sprout_status st = split_special(v, text, len, flags & SPROUT_TOKENIZE_PARSE_SPECIAL, &frags);
    if (st != SPROUT_OK) return st;

    if (add_special && (v->kind == SP_VOCAB_WPM || v->add_bos) && v->special[SPROUT_SPECIAL_BOS] >= 0)
        sp_token_list_push(out, v->special[SPROUT_SPECIAL_BOS]);
    bool prev_special = true; /* SPM: a word after the start or a special token gets the dummy space */
    for (size_t i = 0; st == SPROUT_OK && i < frags.n; i++) {
        const fragment *f = &frags.items[i];
        if (f->token >= 0) {
            sp_token_list_push(out, f->token);
            prev_special = true;
            continue;
        }
        const char *s = text + f->start;
        switch (v->kind) {
        case SP_VOCAB_SPM: st = sp_tokenize_spm(v, s, f->len, v->add_space_prefix && prev_special, out); break;
        case SP_VOCAB_BPE: st = sp_tokenize_bpe(v, s, f->len, out); break;
        case SP_VOCAB_WPM: st = sp_tokenize_wpm(v, s, f->len, out); break;
        }
        prev_special = false;
    }
    free(frags.items);
    if (st != SPROUT_OK) return st;
    if (add_special) {
        if (v->kind == SP_VOCAB_WPM) {
            if (v->special[SPROUT_SPECIAL_SEP] >= 0) sp_token_list_push(out, v->special[SPROUT_SPECIAL_SEP]);
        } else if (v->add_eos) {
            sp_token_list_push(out, v->special[SPROUT_SPECIAL_EOS]);
        }
    }
    return out->oom ? sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory for tokens") : SPROUT_OK;
}

sprout_status sprout_tokenize(const sprout_tokenizer *t, const char *text, size_t len, unsigned flags, sprout_token *tokens,
                              size_t cap, size_t *n_tokens) {
    if (!t || (!text && len) || (!tokens && cap) || !n_tokens)
        return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "NULL tokenizer, text or output");
    sp_token_list list = {0};
    sprout_status st = sp_tokenize_all(t, text ? text : "", len, flags, &list);
    if (st == SPROUT_OK) {
        *n_tokens = list.n;
        if (list.n > cap) st = sp_fail(SPROUT_ERR_OUT_OF_RANGE, "%zu tokens do not fit in room for %zu", list.n, cap);
        else if (list.n) memcpy(tokens, list.ids, list.n * sizeof *tokens);
    }
    free(list.ids);
    return st;
}
