/* libFuzzer target over the JSON Schema converter: any bytes before the
 * first NUL as a schema are converted or refused with a status the header
 * names and a message; a schema converted gives the same GBNF again, the
 * GBNF compiles, and the grammar reads the bytes after the NUL (an
 * instance) without a crash. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/grammar.h"
#include "grammar/json_schema.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const uint8_t *nul = memchr(data, 0, size);
    const size_t schema_len = nul ? (size_t)(nul - data) : size;
    char *gbnf = NULL;
    const sprout_status st = sp_json_schema_to_gbnf((const char *)data, schema_len, &gbnf);
    if (st != SPROUT_OK) {
        const char *why = sprout_last_error();
        if (gbnf || !why || !*why) abort();
        if (st != SPROUT_ERR_FORMAT && st != SPROUT_ERR_UNSUPPORTED && st != SPROUT_ERR_OUT_OF_MEMORY) abort();
        return 0;
    }
    char *again = NULL;
    if (sp_json_schema_to_gbnf((const char *)data, schema_len, &again) == SPROUT_OK && strcmp(gbnf, again) != 0) abort();
    free(again);
    sp_grammar *g = NULL;
    const sprout_status compiled = sp_grammar_compile(gbnf, strlen(gbnf), NULL, &g);
    if (compiled != SPROUT_OK && compiled != SPROUT_ERR_OUT_OF_MEMORY) abort(); /* the converter wrote a grammar it cannot read */
    sp_grammar_state *state = g ? sp_grammar_state_new(g) : NULL;
    if (state && nul) {
        const size_t n = size - schema_len - 1 < 256 ? size - schema_len - 1 : 256;
        for (size_t i = 0; i < n; i++)
            if (!sp_grammar_accept(state, (const char *)nul + 1 + i, 1)) break;
        sp_grammar_can_end(state);
    }
    sp_grammar_state_free(state);
    sp_grammar_free(g);
    free(gbnf);
    return 0;
}
