/* GenerationConfig through the C API: the fields openvino_genai has, with
 * its defaults and its validation, mapped onto sprout_generation_config
 * when a pipeline runs one. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ovc_internal.h"

/* sprout's own limits on assisted generation (sprout.h). */
enum { OVC_MAX_ASSISTANT_TOKENS = 1024, OVC_MAX_NGRAM = 64 };
/* openvino_genai's default number of proposals when only the confidence
 * threshold is given. */
enum { OVC_DEFAULT_ASSISTANT_TOKENS = 5 };

void ovc_config_defaults(ov_genai_generation_config *c) {
    *c = (ov_genai_generation_config){
        .max_new_tokens = SIZE_MAX,
        .max_length = SIZE_MAX,
        .num_beam_groups = 1,
        .num_beams = 1,
        .num_return_sequences = 1,
        .no_repeat_ngram_size = SIZE_MAX,
        .length_penalty = 1.0f,
        .stop_criteria = HEURISTIC,
        .temperature = 1.0f,
        .top_p = 1.0f,
        .top_k = SIZE_MAX,
        .repetition_penalty = 1.0f,
        .eos_token_id = -1,
    };
}

static void free_strings(char **strings, size_t n) {
    for (size_t i = 0; i < n; i++) free(strings[i]);
    free(strings);
}

/* Copies count strings into a set (duplicates dropped); false when out of
 * memory. */
static bool copy_string_set(const char *const *strings, size_t count, char ***out, size_t *n_out) {
    char **set = calloc(count ? count : 1, sizeof *set);
    size_t n = 0;
    if (!set) return false;
    for (size_t i = 0; i < count; i++) {
        bool seen = false;
        for (size_t j = 0; j < n && !seen; j++) seen = strcmp(set[j], strings[i]) == 0;
        if (seen) continue;
        if (!(set[n] = strdup(strings[i]))) {
            free_strings(set, n);
            return false;
        }
        n++;
    }
    *out = set;
    *n_out = n;
    return true;
}

static bool copy_id_set(const int64_t *ids, size_t count, int64_t **out, size_t *n_out) {
    int64_t *set = malloc((count ? count : 1) * sizeof *set);
    size_t n = 0;
    if (!set) return false;
    for (size_t i = 0; i < count; i++) {
        bool seen = false;
        for (size_t j = 0; j < n && !seen; j++) seen = set[j] == ids[i];
        if (!seen) set[n++] = ids[i];
    }
    *out = set;
    *n_out = n;
    return true;
}

ov_genai_generation_config *ovc_config_dup(const ov_genai_generation_config *c) {
    ov_genai_generation_config *d = malloc(sizeof *d);
    if (!d) return NULL;
    *d = *c;
    d->stop_strings = NULL;
    d->stop_token_ids = NULL;
    if (!copy_string_set((const char *const *)c->stop_strings, c->n_stop_strings, &d->stop_strings, &d->n_stop_strings) ||
        !copy_id_set(c->stop_token_ids, c->n_stop_token_ids, &d->stop_token_ids, &d->n_stop_token_ids)) {
        ov_genai_generation_config_free(d);
        return NULL;
    }
    return d;
}

ov_status_e ovc_config_add_stop_token(ov_genai_generation_config *c, int64_t id) {
    for (size_t i = 0; i < c->n_stop_token_ids; i++)
        if (c->stop_token_ids[i] == id) return OK;
    int64_t *ids = realloc(c->stop_token_ids, (c->n_stop_token_ids + 1) * sizeof *ids);
    if (!ids) return ovc_fail(NOT_ALLOCATED, "out of memory");
    ids[c->n_stop_token_ids++] = id;
    c->stop_token_ids = ids;
    return OK;
}

ov_status_e ov_genai_generation_config_create(ov_genai_generation_config **config) {
    if (!config) return ovc_fail(INVALID_C_PARAM, "ov_genai_generation_config_create: NULL output");
    *config = calloc(1, sizeof **config);
    if (!*config) return ovc_fail(NOT_ALLOCATED, "out of memory");
    ovc_config_defaults(*config);
    return OK;
}

void ov_genai_generation_config_free(ov_genai_generation_config *handle) {
    if (!handle) return;
    free_strings(handle->stop_strings, handle->n_stop_strings);
    free(handle->stop_token_ids);
    free(handle);
}

#define CHECK_CONFIG(c)                                                                          \
    do {                                                                                         \
        if (!(c)) return ovc_fail(INVALID_C_PARAM, "%s: NULL generation config", __func__);      \
    } while (0)

/* A setter that stores the value as it is. */
#define PLAIN_SETTER(field, type)                                                                        \
    ov_status_e ov_genai_generation_config_set_##field(ov_genai_generation_config *config, const type value) { \
        CHECK_CONFIG(config);                                                                            \
        config->field = value;                                                                           \
        return OK;                                                                                       \
    }

PLAIN_SETTER(max_new_tokens, size_t)
PLAIN_SETTER(max_length, size_t)
PLAIN_SETTER(ignore_eos, bool)
PLAIN_SETTER(min_new_tokens, size_t)
PLAIN_SETTER(echo, bool)
PLAIN_SETTER(logprobs, size_t)
PLAIN_SETTER(include_stop_str_in_output, bool)
PLAIN_SETTER(diversity_penalty, float)
PLAIN_SETTER(length_penalty, float)
PLAIN_SETTER(no_repeat_ngram_size, size_t)
PLAIN_SETTER(temperature, float)
PLAIN_SETTER(top_p, float)
PLAIN_SETTER(top_k, size_t)
PLAIN_SETTER(min_p, float)
PLAIN_SETTER(do_sample, bool)
PLAIN_SETTER(repetition_penalty, float)
PLAIN_SETTER(presence_penalty, float)
PLAIN_SETTER(frequency_penalty, float)
PLAIN_SETTER(rng_seed, size_t)
PLAIN_SETTER(assistant_confidence_threshold, float)
PLAIN_SETTER(num_assistant_tokens, size_t)
PLAIN_SETTER(max_ngram_size, size_t)
PLAIN_SETTER(eos_token_id, int64_t)

ov_status_e ov_genai_generation_config_set_stop_criteria(ov_genai_generation_config *config, const StopCriteria value) {
    CHECK_CONFIG(config);
    if (value != EARLY && value != HEURISTIC && value != NEVER)
        return ovc_fail(INVALID_C_PARAM, "stop_criteria: %d is not EARLY, HEURISTIC or NEVER", (int)value);
    config->stop_criteria = value;
    return OK;
}

/* Beam search and several sequences per call: sprout decodes one sequence
 * per request, so the values that ask for more are refused here, where the
 * program can see which one. */
static ov_status_e set_single(ov_genai_generation_config *config, size_t *field, size_t value, const char *name,
                              const char *what) {
    CHECK_CONFIG(config);
    if (value > 1)
        return ovc_fail(NOT_IMPLEMENTED, "%s = %zu: sprout has no %s (1 turns it off)", name, value, what);
    *field = value;
    return OK;
}

ov_status_e ov_genai_generation_config_set_num_beams(ov_genai_generation_config *config, const size_t value) {
    return set_single(config, config ? &config->num_beams : NULL, value, "num_beams", "beam search");
}

ov_status_e ov_genai_generation_config_set_num_beam_groups(ov_genai_generation_config *config, const size_t value) {
    return set_single(config, config ? &config->num_beam_groups : NULL, value, "num_beam_groups", "grouped beam search");
}

ov_status_e ov_genai_generation_config_set_num_return_sequences(ov_genai_generation_config *config, const size_t value) {
    return set_single(config, config ? &config->num_return_sequences : NULL, value, "num_return_sequences",
                      "parallel sampling (one sequence per call)");
}

ov_status_e ov_genai_generation_config_set_stop_strings(ov_genai_generation_config *config, const char **strings,
                                                        const size_t count) {
    CHECK_CONFIG(config);
    if (!strings && count) return ovc_fail(INVALID_C_PARAM, "set_stop_strings: NULL strings");
    for (size_t i = 0; i < count; i++)
        if (!strings[i]) return ovc_fail(INVALID_C_PARAM, "set_stop_strings: string %zu is NULL", i);
    char **set;
    size_t n;
    if (!copy_string_set(strings, count, &set, &n)) return ovc_fail(NOT_ALLOCATED, "out of memory");
    free_strings(config->stop_strings, config->n_stop_strings);
    config->stop_strings = set;
    config->n_stop_strings = n;
    return OK;
}

ov_status_e ov_genai_generation_config_set_stop_token_ids(ov_genai_generation_config *config, const int64_t *token_ids,
                                                          const size_t token_ids_num) {
    CHECK_CONFIG(config);
    if (!token_ids && token_ids_num) return ovc_fail(INVALID_C_PARAM, "set_stop_token_ids: NULL ids");
    int64_t *set;
    size_t n;
    if (!copy_id_set(token_ids, token_ids_num, &set, &n)) return ovc_fail(NOT_ALLOCATED, "out of memory");
    free(config->stop_token_ids);
    config->stop_token_ids = set;
    config->n_stop_token_ids = n;
    return OK;
}

ov_status_e ov_genai_generation_config_get_max_new_tokens(const ov_genai_generation_config *config, size_t *max_new_tokens) {
    CHECK_CONFIG(config);
    if (!max_new_tokens) return ovc_fail(INVALID_C_PARAM, "get_max_new_tokens: NULL output");
    *max_new_tokens = config->max_new_tokens;
    return OK;
}

#define REQUIRE(cond, ...)                                          \
    do {                                                            \
        if (!(cond)) return ovc_fail(PARAMETER_MISMATCH, __VA_ARGS__); \
    } while (0)

ov_status_e ovc_config_validate(const ov_genai_generation_config *c) {
    bool has_eos = c->eos_token_id == -1;
    for (size_t i = 0; i < c->n_stop_token_ids; i++) {
        REQUIRE(c->stop_token_ids[i] >= 0, "'stop_token_ids' must be non-negative, but it contains %lld",
                (long long)c->stop_token_ids[i]);
        has_eos = has_eos || c->stop_token_ids[i] == c->eos_token_id;
    }
    REQUIRE(has_eos, "'stop_token_ids' must contain 'eos_token_id' (%lld)", (long long)c->eos_token_id);
    const bool bounded = c->max_new_tokens != SIZE_MAX || c->max_length != SIZE_MAX;
    REQUIRE(!c->ignore_eos || bounded, "ignore_eos is true: 'max_new_tokens' or 'max_length' must be set");
    REQUIRE(c->eos_token_id != -1 || c->n_stop_token_ids || c->n_stop_strings || bounded,
            "no stop condition: set 'eos_token_id', 'stop_token_ids', 'stop_strings', 'max_new_tokens' or 'max_length'");
    REQUIRE(c->max_new_tokens > 0 || c->echo, "'max_new_tokens' must be greater than 0 (0 only with echo)");
    REQUIRE(c->min_new_tokens <= c->max_new_tokens, "'min_new_tokens' (%zu) must not exceed 'max_new_tokens' (%zu)",
            c->min_new_tokens, c->max_new_tokens);
    REQUIRE(c->num_return_sequences > 0, "'num_return_sequences' must be greater than 0");
    REQUIRE(c->frequency_penalty >= -2.0f && c->frequency_penalty <= 2.0f,
            "'frequency_penalty' must be within [-2.0, 2.0], but got %g", c->frequency_penalty);
    REQUIRE(c->presence_penalty >= -2.0f && c->presence_penalty <= 2.0f,
            "'presence_penalty' must be within [-2.0, 2.0], but got %g", c->presence_penalty);
    REQUIRE(c->repetition_penalty > 0.0f, "'repetition_penalty' must be strictly positive, but got %g", c->repetition_penalty);
    if (c->do_sample) {
        REQUIRE(c->top_p > 0 && c->top_p <= 1.0f, "with do_sample, 'top_p' must be in (0, 1], but got %g", c->top_p);
        REQUIRE(c->temperature > 0, "with do_sample, 'temperature' must be strictly positive, but got %g", c->temperature);
        REQUIRE(c->min_p >= 0.0f && c->min_p < 1.0f, "with do_sample, 'min_p' must be in [0, 1), but got %g", c->min_p);
    }
    REQUIRE(c->assistant_confidence_threshold == 0.0f || c->num_assistant_tokens == 0,
            "'assistant_confidence_threshold' and 'num_assistant_tokens' are mutually exclusive");
    REQUIRE(c->num_assistant_tokens > 0 || c->max_ngram_size == 0,
            "'max_ngram_size' must stay 0 when prompt lookup is off ('num_assistant_tokens' 0)");
    REQUIRE(c->num_assistant_tokens <= OVC_MAX_ASSISTANT_TOKENS, "'num_assistant_tokens' is at most %d in sprout, not %zu",
            OVC_MAX_ASSISTANT_TOKENS, c->num_assistant_tokens);
    REQUIRE(c->max_ngram_size <= OVC_MAX_NGRAM, "'max_ngram_size' is at most %d in sprout, not %zu", OVC_MAX_NGRAM,
            c->max_ngram_size);
    REQUIRE(isfinite(c->temperature) && isfinite(c->top_p) && isfinite(c->min_p) && isfinite(c->repetition_penalty) &&
                isfinite(c->assistant_confidence_threshold),
            "a sampling value is not a finite number");
    return OK;
}

ov_status_e ov_genai_generation_config_validate(ov_genai_generation_config *config) {
    CHECK_CONFIG(config);
    return ovc_config_validate(config);
}

static int32_t clamp_i32(size_t v, int32_t limit) { return v > (size_t)limit ? limit : (int32_t)v; }

ov_status_e ovc_config_to_sprout(const ov_genai_generation_config *c, const sprout_tokenizer *tok, size_t n_prompt,
                                 int32_t n_ctx, ovc_sprout_config *out) {
    memset(out, 0, sizeof *out);
    sprout_generation_config *s = &out->cfg;
    sprout_generation_config_init(s);
    /* the context bounds the output anyway, and sprout sizes the result by
     * max_new_tokens: "unset" is the whole context */
    size_t max_new = c->max_new_tokens;
    if (max_new == SIZE_MAX && c->max_length != SIZE_MAX) {
        if (c->max_length <= n_prompt)
            return ovc_fail(OUT_OF_BOUNDS, "'max_length' (%zu) leaves no room after the prompt's %zu tokens", c->max_length,
                            n_prompt);
        max_new = c->max_length - n_prompt;
    }
    s->max_new_tokens = clamp_i32(max_new, n_ctx > 0 ? n_ctx : INT32_MAX);
    s->min_new_tokens = clamp_i32(c->min_new_tokens, INT32_MAX);
    s->ignore_eos = c->ignore_eos;
    s->echo = c->echo;
    s->logprobs = clamp_i32(c->logprobs, INT32_MAX);
    /* openvino_genai decodes greedily unless do_sample, whatever the
     * temperature; sprout's greedy is temperature 0 */
    s->temperature = c->do_sample ? c->temperature : 0.0f;
    s->top_p = c->top_p;
    s->top_k = c->top_k == SIZE_MAX ? 0 : clamp_i32(c->top_k, INT32_MAX);
    s->min_p = c->min_p;
    s->repetition_penalty = c->repetition_penalty;
    s->presence_penalty = c->presence_penalty;
    s->frequency_penalty = c->frequency_penalty;
    s->repeat_last_n = -1; /* openvino_genai's penalties look at the whole sequence */
    s->seed = c->rng_seed;
    s->stop_strings = (const char *const *)c->stop_strings;
    s->n_stop_strings = c->n_stop_strings;
    s->include_stop_string = c->include_stop_str_in_output;
    /* sprout ends at the model's end-of-generation tokens itself (and
     * honours ignore_eos for them): only the others become stop ids */
    out->stop_ids = malloc((c->n_stop_token_ids ? c->n_stop_token_ids : 1) * sizeof *out->stop_ids);
    if (!out->stop_ids) return ovc_fail(NOT_ALLOCATED, "out of memory");
    size_t n_ids = 0;
    for (size_t i = 0; i < c->n_stop_token_ids; i++) {
        const int64_t id = c->stop_token_ids[i];
        if (id > INT32_MAX || (tok && sprout_tokenizer_is_eog(tok, (sprout_token)id))) continue;
        out->stop_ids[n_ids++] = (int32_t)id;
    }
    s->stop_token_ids = out->stop_ids;
    s->n_stop_token_ids = n_ids;
    size_t n_assist = c->num_assistant_tokens;
    if (n_assist == 0 && c->assistant_confidence_threshold > 0) n_assist = OVC_DEFAULT_ASSISTANT_TOKENS;
    s->num_assistant_tokens = (int32_t)n_assist;
    s->assistant_confidence_threshold = c->assistant_confidence_threshold;
    s->prompt_lookup = c->max_ngram_size > 0 && c->num_assistant_tokens > 0;
    s->max_ngram_size = (int32_t)c->max_ngram_size;
    return OK;
}

void ovc_sprout_config_free(ovc_sprout_config *s) {
    free(s->stop_ids);
    s->stop_ids = NULL;
}
