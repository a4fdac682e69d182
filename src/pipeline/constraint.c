#include "pipeline/constraint.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/log.h"
#include "grammar/json_schema.h"

/* Whitespace as llama.cpp's JSON grammar bounds it, so that a model cannot
 * stall in it; UTF-16 surrogates are no characters. */
const char sp_json_object_grammar[] =
    "root   ::= ws \"{\" ws ( member ( \",\" ws member )* )? \"}\"\n"
    "member ::= string \":\" ws value\n"
    "value  ::= ( object | array | string | number | \"true\" | \"false\" | \"null\" ) ws\n"
    "object ::= \"{\" ws ( member ( \",\" ws member )* )? \"}\"\n"
    "array  ::= \"[\" ws ( value ( \",\" ws value )* )? \"]\"\n"
    "string ::= \"\\\"\" ( [^\"\\\\\\x7F\\x00-\\x1F\\uD800-\\uDFFF] | \"\\\\\" ( [\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4} ) )* \"\\\"\" ws\n"
    "number ::= \"-\"? ( \"0\" | [1-9] [0-9]* ) ( \".\" [0-9]+ )? ( [eE] [-+]? [0-9]+ )?\n"
    "ws     ::= | \" \" | \"\\n\" [ \\t]{0,20}\n";

sprout_status sprout_json_schema_to_grammar(const char *schema, size_t len, char **grammar) {
    if (!grammar) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "NULL output pointer");
    *grammar = NULL;
    if (!schema) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "NULL schema");
    return sp_json_schema_to_gbnf(schema, len, grammar);
}

sprout_status sp_constraint_check(const sprout_generation_config *cfg) {
    const bool grammar = cfg->grammar && *cfg->grammar, schema = cfg->json_schema && *cfg->json_schema;
    if (grammar && schema) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "a grammar and a JSON schema: one or the other");
    char *converted = NULL;
    sprout_status st = schema ? sp_json_schema_to_gbnf(cfg->json_schema, strlen(cfg->json_schema), &converted) : SPROUT_OK;
    sp_grammar *g = NULL;
    if (st == SPROUT_OK && (grammar || converted)) {
        const char *text = grammar ? cfg->grammar : converted;
        st = sp_grammar_compile(text, strlen(text), "root", &g);
    }
    sp_grammar_free(g);
    free(converted);
    return st;
}

sprout_status sp_constraint_begin(sp_constraint *c, const sprout_model *m, const sprout_generation_config *cfg) {
    memset(c, 0, sizeof *c);
    const bool grammar = cfg->grammar && *cfg->grammar, schema = cfg->json_schema && *cfg->json_schema;
    if (grammar && schema) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "a grammar and a JSON schema: one or the other");
    if (!grammar && !schema && !cfg->json_object) return SPROUT_OK;
    char *converted = NULL;
    sprout_status st = SPROUT_OK;
    if (schema && (st = sp_json_schema_to_gbnf(cfg->json_schema, strlen(cfg->json_schema), &converted)) != SPROUT_OK) return st;
    const char *text = converted ? converted : grammar ? cfg->grammar : sp_json_object_grammar;
    c->cache = sp_model_grammar_cache(m);
    c->vocab = sp_model_grammar_vocab(m);
    if (!c->cache || !c->vocab) st = SPROUT_ERR_UNSUPPORTED; /* (the model has no vocabulary, or no memory: said) */
    if (st == SPROUT_OK) st = sp_grammar_cache_get(c->cache, text, &c->entry);
    free(converted);
    if (st == SPROUT_OK) st = sp_grammar_state_start(sp_grammar_entry_grammar(c->entry), &c->state);
    if (st == SPROUT_OK) {
        c->allowed = malloc(sp_grammar_mask_words(c->vocab) * sizeof *c->allowed);
        c->silent = sp_grammar_vocab_empty(c->vocab, &c->n_silent);
        c->eog = calloc((size_t)c->n_silent + 1, sizeof *c->eog);
        if (!c->allowed || !c->eog) st = sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    /* only the few tokens without text can end generation: the vocabulary's
     * list of them is made once per model */
    for (uint32_t i = 0; st == SPROUT_OK && i < c->n_silent; i++)
        c->eog[i] = sprout_tokenizer_is_eog(m->tokenizer, (sprout_token)c->silent[i]);
    if (st == SPROUT_OK && cfg->grammar_trigger && *cfg->grammar_trigger) {
        c->trigger = cfg->grammar_trigger;
        if (!(c->waiting = calloc(1, 1))) st = sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    if (st != SPROUT_OK) sp_constraint_free(c);
    return st;
}

/* The text read left the grammar, or the engine gave up on it (a bound
 * passed: said as a warning; memory: the caller's error): nothing may
 * follow. */
static void left_grammar(sp_constraint *c) {
    c->broken = true;
    c->out_of_memory = c->state->out_of_memory;
    c->gave_up = c->state->gave_up && !c->out_of_memory;
    if (c->gave_up)
        sp_log(SPROUT_LOG_WARN, "grammar: the output needs more than %d parse stacks at once (an ambiguous grammar): generation stops here",
               SP_GRAMMAR_MAX_STACKS);
}

/* A lazy grammar's wait: the text gathers until the trigger appears; the
 * grammar then reads from the trigger's first byte on. */
static void wait_for_trigger(sp_constraint *c, const char *text, size_t len) {
    char *grown = realloc(c->waiting, c->n_waiting + len + 1);
    if (!grown) {
        c->broken = c->out_of_memory = true;
        return;
    }
    memcpy(grown + c->n_waiting, text, len);
    c->n_waiting += len;
    grown[c->n_waiting] = 0;
    c->waiting = grown;
    const size_t n_trigger = strlen(c->trigger);
    /* only the new bytes (and the trigger's length before them) can complete it */
    const size_t from = c->n_waiting - len > n_trigger ? c->n_waiting - len - n_trigger : 0;
    const char *at = memmem(grown + from, c->n_waiting - from, c->trigger, n_trigger);
    if (!at) return;
    if (!sp_grammar_accept(c->state, at, (size_t)(grown + c->n_waiting - at))) left_grammar(c);
    free(c->waiting);
    c->waiting = NULL;
    c->n_waiting = 0;
}

const uint64_t *sp_constraint_mask(sp_constraint *c, sprout_status *status) {
    if ((*status = sp_grammar_entry_mask(c->entry, c->state, c->allowed)) != SPROUT_OK) return NULL;
    const bool can_end = sp_grammar_can_end(c->state);
    for (uint32_t i = 0; i < c->n_silent; i++) {
        const uint32_t id = c->silent[i];
        if (c->eog[i] && can_end) c->allowed[id / 64] |= 1ull << (id % 64);
        else c->allowed[id / 64] &= ~(1ull << (id % 64));
    }
    const size_t words = sp_grammar_mask_words(c->vocab);
    for (size_t w = 0; w < words; w++)
        if (c->allowed[w]) return c->allowed;
    return NULL;
}

void sp_constraint_accept(sp_constraint *c, const char *text, size_t len) {
    if (c->waiting) wait_for_trigger(c, text, len);
    else if (len && !sp_grammar_accept(c->state, text, len)) left_grammar(c);
}

bool sp_constraint_must_end(const sp_constraint *c) { return c->broken || (!c->waiting && sp_grammar_must_end(c->state)); }

void sp_constraint_free(sp_constraint *c) {
    sp_grammar_state_free(c->state);
    if (c->cache) sp_grammar_cache_release(c->cache, c->entry);
    free(c->allowed);
    free(c->eog);
    free(c->waiting);
    memset(c, 0, sizeof *c);
}
