/* ov_genai_generation_config_create_from_json: a Hugging Face
 * generation_config.json read as openvino_genai reads it (its own keys
 * too, such as ignore_eos and stop_strings). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ovc_internal.h"

/* A non-negative integer key into *out; absent keys leave it. */
static ov_status_e read_size(const json_t *root, const char *key, size_t *out) {
    const json_t *v = json_object_get(root, key);
    if (!v) return OK;
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return ovc_fail(PARAMETER_MISMATCH, "generation config: '%s' must be a non-negative integer", key);
    *out = (size_t)json_integer_value(v);
    return OK;
}

static ov_status_e read_float(const json_t *root, const char *key, float *out) {
    const json_t *v = json_object_get(root, key);
    if (!v) return OK;
    if (!json_is_number(v)) return ovc_fail(PARAMETER_MISMATCH, "generation config: '%s' must be a number", key);
    *out = (float)json_number_value(v);
    return OK;
}

static ov_status_e read_bool(const json_t *root, const char *key, bool *out) {
    const json_t *v = json_object_get(root, key);
    if (!v) return OK;
    if (!json_is_boolean(v)) return ovc_fail(PARAMETER_MISMATCH, "generation config: '%s' must be true or false", key);
    *out = json_is_true(v);
    return OK;
}

/* eos_token_id: one id, or a list whose ids all stop generation (the
 * first is the EOS), as some models' files give. */
static ov_status_e read_eos(const json_t *root, ov_genai_generation_config *c) {
    const json_t *v = json_object_get(root, "eos_token_id");
    if (!v || json_is_null(v)) return OK;
    if (json_is_integer(v)) {
        c->eos_token_id = json_integer_value(v);
        return ovc_config_add_stop_token(c, c->eos_token_id);
    }
    if (!json_is_array(v)) return ovc_fail(PARAMETER_MISMATCH, "generation config: 'eos_token_id' must be an integer or a list");
    size_t i;
    const json_t *id;
    json_array_foreach(v, i, id) {
        if (!json_is_integer(id))
            return ovc_fail(PARAMETER_MISMATCH, "generation config: 'eos_token_id'[%zu] is not an integer", i);
        if (i == 0) c->eos_token_id = json_integer_value(id);
        ov_status_e st = ovc_config_add_stop_token(c, json_integer_value(id));
        if (st != OK) return st;
    }
    return OK;
}

static ov_status_e read_stop_strings(const json_t *root, ov_genai_generation_config *c) {
    const json_t *v = json_object_get(root, "stop_strings");
    if (!v) return OK;
    if (!json_is_array(v)) return ovc_fail(PARAMETER_MISMATCH, "generation config: 'stop_strings' must be a list of strings");
    const size_t n = json_array_size(v);
    const char **strings = malloc((n ? n : 1) * sizeof *strings);
    if (!strings) return ovc_fail(NOT_ALLOCATED, "out of memory");
    for (size_t i = 0; i < n; i++) {
        strings[i] = json_string_value(json_array_get(v, i));
        if (!strings[i]) {
            free(strings);
            return ovc_fail(PARAMETER_MISMATCH, "generation config: 'stop_strings'[%zu] is not a string", i);
        }
    }
    ov_status_e st = ov_genai_generation_config_set_stop_strings(c, strings, n);
    free(strings);
    return st;
}

/* HF's early_stopping: true is EARLY, false HEURISTIC, "never" NEVER. */
static void read_early_stopping(const json_t *root, ov_genai_generation_config *c) {
    const json_t *v = json_object_get(root, "early_stopping");
    if (json_is_boolean(v)) c->stop_criteria = json_is_true(v) ? EARLY : HEURISTIC;
    if (json_is_string(v) && strcmp(json_string_value(v), "never") == 0) c->stop_criteria = NEVER;
}

static ov_status_e read_config(const json_t *root, ov_genai_generation_config *c) {
    if (!json_is_object(root)) return ovc_fail(PARAMETER_MISMATCH, "generation config: the file is not a JSON object");
    const struct {
        const char *key;
        size_t *field;
    } sizes[] = {{"max_new_tokens", &c->max_new_tokens},
                 {"max_length", &c->max_length},
                 {"min_new_tokens", &c->min_new_tokens},
                 {"logprobs", &c->logprobs},
                 {"num_beam_groups", &c->num_beam_groups},
                 {"num_beams", &c->num_beams},
                 {"num_return_sequences", &c->num_return_sequences},
                 {"no_repeat_ngram_size", &c->no_repeat_ngram_size},
                 {"top_k", &c->top_k},
                 {"rng_seed", &c->rng_seed},
                 {"num_assistant_tokens", &c->num_assistant_tokens},
                 {"max_ngram_size", &c->max_ngram_size}};
    const struct {
        const char *key;
        float *field;
    } floats[] = {{"repetition_penalty", &c->repetition_penalty},
                  {"frequency_penalty", &c->frequency_penalty},
                  {"presence_penalty", &c->presence_penalty},
                  {"diversity_penalty", &c->diversity_penalty},
                  {"length_penalty", &c->length_penalty},
                  {"temperature", &c->temperature},
                  {"top_p", &c->top_p},
                  {"min_p", &c->min_p},
                  {"assistant_confidence_threshold", &c->assistant_confidence_threshold}};
    const struct {
        const char *key;
        bool *field;
    } bools[] = {{"ignore_eos", &c->ignore_eos},
                 {"include_stop_str_in_output", &c->include_stop_str_in_output},
                 {"echo", &c->echo},
                 {"do_sample", &c->do_sample}};
    ov_status_e st = OK;
    for (size_t i = 0; st == OK && i < sizeof sizes / sizeof sizes[0]; i++) st = read_size(root, sizes[i].key, sizes[i].field);
    for (size_t i = 0; st == OK && i < sizeof floats / sizeof floats[0]; i++) st = read_float(root, floats[i].key, floats[i].field);
    for (size_t i = 0; st == OK && i < sizeof bools / sizeof bools[0]; i++) st = read_bool(root, bools[i].key, bools[i].field);
    if (st == OK) st = read_eos(root, c);
    if (st == OK) st = read_stop_strings(root, c);
    if (st != OK) return st;
    read_early_stopping(root, c);
    if (c->num_beams > 1 || c->num_beam_groups > 1)
        return ovc_fail(NOT_IMPLEMENTED, "generation config: num_beams %zu, num_beam_groups %zu: sprout has no beam search",
                        c->num_beams, c->num_beam_groups);
    if (c->num_return_sequences > 1)
        return ovc_fail(NOT_IMPLEMENTED, "generation config: num_return_sequences %zu: sprout returns one sequence per call",
                        c->num_return_sequences);
    return OK;
}

ov_status_e ov_genai_generation_config_create_from_json(const char *json_path, ov_genai_generation_config **config) {
    if (!json_path || !config) return ovc_fail(INVALID_C_PARAM, "create_from_json: NULL path or output");
    *config = NULL;
    json_error_t err;
    json_t *root = json_load_file(json_path, JSON_REJECT_DUPLICATES, &err);
    if (!root) {
        const bool missing = err.line < 0 || strstr(err.text, "unable to open") != NULL;
        return ovc_fail(missing ? NOT_FOUND : PARAMETER_MISMATCH, "%s: %s", json_path, err.text);
    }
    ov_genai_generation_config *c = NULL;
    ov_status_e st = ov_genai_generation_config_create(&c);
    if (st == OK) st = read_config(root, c);
    json_decref(root);
    if (st != OK) {
        ov_genai_generation_config_free(c);
        return st;
    }
    *config = c;
    return OK;
}
