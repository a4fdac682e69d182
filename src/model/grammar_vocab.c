/* The model's vocabulary and grammar cache for constrained decoding: made
 * by the first sequence that needs them and published with one
 * compare-and-swap, so that concurrent first users race harmlessly (the
 * loser frees its copy). */
#include <stdatomic.h>
#include <stdlib.h>

#include "core/error.h"
#include "model/model.h"

const sp_grammar_vocab *sp_model_grammar_vocab(const sprout_model *m) {
    sprout_model *mm = (sprout_model *)m; /* the cache, not the model, changes */
    sp_grammar_vocab *v = atomic_load(&mm->grammar_vocab);
    if (v) return v;
    if (!m->tokenizer) {
        sp_fail(SPROUT_ERR_UNSUPPORTED, "the model has no vocabulary to constrain");
        return NULL;
    }
    const uint32_t n = (uint32_t)m->hp.n_vocab;
    const char **text = malloc((size_t)n * sizeof *text);
    uint32_t *len = malloc((size_t)n * sizeof *len);
    sprout_status st = text && len ? SPROUT_OK : sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
    for (uint32_t id = 0; st == SPROUT_OK && id < n; id++) {
        size_t l = 0;
        text[id] = "";
        /* special tokens render as nothing: no text a grammar could read */
        if (sprout_token_to_piece(m->tokenizer, (sprout_token)id, false, &text[id], &l) != SPROUT_OK) l = 0;
        len[id] = (uint32_t)l;
    }
    if (st == SPROUT_OK) st = sp_grammar_vocab_create(text, len, n, &v);
    free(text);
    free(len);
    if (st != SPROUT_OK) return NULL;
    sp_grammar_vocab *expected = NULL;
    if (!atomic_compare_exchange_strong(&mm->grammar_vocab, &expected, v)) {
        sp_grammar_vocab_free(v);
        return expected;
    }
    return v;
}

/* Grammars kept per model: a server's distinct schemas in use at once and
 * lately (beyond it, the least recently used idle one goes). */
enum { GRAMMAR_CACHE_ENTRIES = 16 };

sp_grammar_cache *sp_model_grammar_cache(const sprout_model *m) {
    sprout_model *mm = (sprout_model *)m;
    sp_grammar_cache *c = atomic_load(&mm->grammar_cache);
    if (c) return c;
    const sp_grammar_vocab *v = sp_model_grammar_vocab(m);
    if (!v || sp_grammar_cache_create(v, GRAMMAR_CACHE_ENTRIES, &c) != SPROUT_OK) return NULL;
    sp_grammar_cache *expected = NULL;
    if (!atomic_compare_exchange_strong(&mm->grammar_cache, &expected, c)) {
        sp_grammar_cache_free(c);
        return expected;
    }
    return c;
}
