/* libFuzzer target over the grammar engine: any bytes as GBNF are
 * compiled or refused with a message, never a crash or a hang; a grammar
 * that compiles reads the bytes after the first NUL of the input, and its
 * masks over a small vocabulary (every byte, and pieces of text and UTF-8)
 * must equal trying every token (except where the engine gives up on a
 * token: grammar.h's bounds), on states of up to CHECK_MAX_STACKS stacks. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/grammar.h"
#include "grammar/grammar_mask.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { N_WORDS = 12, N_VOCAB = 256 + N_WORDS };
static const char *const words[N_WORDS] = {"ab", "{\"", "\": ", "1.5", "true", "é", "\xE6\x97", "\xA5", "日本", " \n", "::=", "<>"};

/* States of more stacks are read on but their masks not checked: there,
 * trying every token cost each input as much as a thousand others (the
 * campaign's corpus ran 4x slower with them), and the stack bound's own
 * behaviour is test_grammar's. Its first finding was on a state of 256. */
enum { CHECK_MAX_STACKS = 256 };

static void check_mask(sp_grammar_masker *m, const sp_grammar_state *st, const char *const *text, const uint32_t *len) {
    if (st->set.count > CHECK_MAX_STACKS) return;
    uint64_t bits[(N_VOCAB + 63) / 64];
    if (sp_grammar_mask(m, st, bits) != SPROUT_OK) return; /* out of memory */
    sp_grammar_state *probe = sp_grammar_state_clone(st);
    if (!probe) return;
    for (uint32_t t = 0; t < N_VOCAB; t++) {
        if (!sp_grammar_state_copy(probe, st)) break;
        const bool want = sp_grammar_accept(probe, text[t], len[t]);
        /* where reading it passes a bound of the whole state the engine
         * gives up, and the mask, judging each stack alone, may allow it */
        if (!want && probe->gave_up) continue;
        if (want != (((bits[t >> 6] >> (t & 63)) & 1) != 0)) abort();
    }
    sp_grammar_state_free(probe);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static char bytes[256];
    static const char *text[N_VOCAB];
    static uint32_t len[N_VOCAB];
    static sp_grammar_vocab *vocab;
    if (!vocab) {
        for (int i = 0; i < 256; i++) bytes[i] = (char)i, text[i] = bytes + i, len[i] = 1;
        for (int i = 0; i < N_WORDS; i++) text[256 + i] = words[i], len[256 + i] = (uint32_t)strlen(words[i]);
        if (sp_grammar_vocab_create(text, len, N_VOCAB, &vocab) != SPROUT_OK) abort();
    }
    const uint8_t *nul = memchr(data, 0, size);
    const size_t gbnf_len = nul ? (size_t)(nul - data) : size;
    sp_grammar *g = NULL;
    if (sp_grammar_compile((const char *)data, gbnf_len, NULL, &g) != SPROUT_OK) {
        if (g) abort();
        return 0;
    }
    sp_grammar_state *st = sp_grammar_state_new(g);
    sp_grammar_masker *m = NULL;
    if (st && sp_grammar_masker_create(g, vocab, &m) == SPROUT_OK) {
        check_mask(m, st, text, len);
        const uint8_t *in = nul ? nul + 1 : data + size;
        const size_t n = (size_t)(data + size - in) < 32 ? (size_t)(data + size - in) : 32;
        for (size_t i = 0; i < n; i++) {
            const bool can = sp_grammar_can_end(st), must = sp_grammar_must_end(st);
            if (must && !can) abort();
            if (!sp_grammar_accept(st, (const char *)in + i, 1)) {
                if (must) continue; /* nothing may follow: expected */
                continue;
            }
            if (must) abort(); /* a byte after the end */
            if (i % 4 == 3) check_mask(m, st, text, len);
        }
    }
    sp_grammar_masker_free(m);
    sp_grammar_state_free(st);
    sp_grammar_free(g);
    return 0;
}
