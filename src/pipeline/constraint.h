/* Constrained decoding: a GBNF grammar, a JSON Schema (turned into one,
 * grammar/json_schema.c) or JSON mode (the grammar of any JSON object)
 * says which tokens may come next. The mask comes from the grammar engine
 * (grammar/grammar_mask.c) over the model's vocabulary; tokens that add no
 * text are never allowed, but end-of-generation ones once the grammar can
 * end. One per sequence. */
#ifndef SPROUT_PIPELINE_CONSTRAINT_H
#define SPROUT_PIPELINE_CONSTRAINT_H

#include <stdbool.h>
#include <stdint.h>

#include "grammar/grammar.h"
#include "grammar/grammar_cache.h"
#include "grammar/grammar_mask.h"
#include "model/model.h"

typedef struct sp_constraint {
    sp_grammar_cache *cache;
    sp_grammar_entry *entry; /* the grammar and its masker, shared (the model's cache); NULL: unconstrained */
    sp_grammar_state *state;
    const sp_grammar_vocab *vocab;
    uint64_t *allowed;   /* the last mask */
    const uint32_t *silent; /* ids of tokens that add no text (the vocabulary's), */
    uint32_t n_silent;
    bool *eog;           /* and which of them end generation */
    /* a lazy grammar: the trigger (the config's), and the output's text
     * while it has not appeared (NULL once the grammar holds) */
    const char *trigger;
    char *waiting;
    size_t n_waiting;
    bool broken;         /* the text read left the grammar (or the engine gave up on it): nothing may follow */
    bool gave_up;        /* a bound of the grammar engine passed (grammar.h) */
    bool out_of_memory;  /* reading the text ran out of memory: the generation's error */
} sp_constraint;

/* Whether cfg's grammar or schema compiles (what begin would refuse),
 * for refusing a request before it waits in a queue. */
sprout_status sp_constraint_check(const sprout_generation_config *cfg);

/* The constraint cfg asks for (grammar, json_schema or json_object); none
 * leaves c inactive. A bad grammar or schema fails with its message
 * (SPROUT_ERR_FORMAT or SPROUT_ERR_UNSUPPORTED); both at once is
 * SPROUT_ERR_INVALID_ARGUMENT. */
sprout_status sp_constraint_begin(sp_constraint *c, const sprout_model *m, const sprout_generation_config *cfg);
static inline bool sp_constraint_active(const sp_constraint *c) { return c->entry != NULL; }

/* Whether a lazy grammar still waits for its trigger: any token may come. */
static inline bool sp_constraint_waiting(const sp_constraint *c) { return c->waiting != NULL; }

/* The tokens that may come next (c->allowed), or NULL when none may: the
 * output cannot go on. *status: the mask's failure (out of memory, or a
 * grammar whose mask costs past its budget), said by sp_fail. */
const uint64_t *sp_constraint_mask(sp_constraint *c, sprout_status *status);
/* The chosen token's text, read; then whether nothing may follow. The
 * masks judge each stack alone, so a token they allow may pass a bound of
 * the whole state when read: the constraint then gives up (gave_up) and
 * the output ends there. */
void sp_constraint_accept(sp_constraint *c, const char *text, size_t len);
bool sp_constraint_must_end(const sp_constraint *c);
void sp_constraint_free(sp_constraint *c);

/* JSON mode's grammar: one JSON object (llama.cpp's JSON grammar, with
 * nothing after the object closes). */
extern const char sp_json_object_grammar[];

#endif
