/*
 * openvino/genai/c/generation_config.h — OpenVINO GenAI's generation
 * settings (ov::genai::GenerationConfig) through its C API, run by sprout.
 *
 * Defaults are GenerationConfig's: max_new_tokens and max_length unset
 * (SIZE_MAX), greedy decoding (do_sample false), temperature 1, top_p 1,
 * top_k unset (SIZE_MAX), no penalties, eos_token_id -1 (the model's EOS is
 * filled in when a pipeline uses the config). Setters store; whether the
 * values go together is checked by ov_genai_generation_config_validate and
 * by every generate call. Settings sprout cannot honour are refused by their
 * setter with NOT_IMPLEMENTED (beam search: num_beams > 1, num_beam_groups
 * > 1; several sequences: num_return_sequences > 1), never ignored.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "openvino/c/ov_common.h"
#include "openvino/genai/c/visibility.h"

/* When grouped beam search stops (kept for source compatibility: sprout has
 * no beam search, and the value changes nothing). */
typedef enum { EARLY, HEURISTIC, NEVER } StopCriteria;

typedef struct ov_genai_generation_config_opaque ov_genai_generation_config;

OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_generation_config_create(ov_genai_generation_config** config);

/* Reads a Hugging Face generation_config.json: the keys above by their
 * GenerationConfig names (eos_token_id may be a list: all become stop
 * tokens). NOT_FOUND for a missing file, PARAMETER_MISMATCH for bad JSON. */
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_generation_config_create_from_json(const char* json_path,
                                                                                 ov_genai_generation_config** config);

OPENVINO_GENAI_C_EXPORTS void ov_genai_generation_config_free(ov_genai_generation_config* handle);

/* Tokens to generate after the prompt; has priority over max_length. */
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_generation_config_set_max_new_tokens(ov_genai_generation_config* handle,
                                                                                   const size_t value);
/* Prompt plus generated tokens, used when max_new_tokens is unset. */
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_generation_config_set_max_length(ov_genai_generation_config* config,
                                                                               const size_t value);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_generation_config_set_ignore_eos(ov_genai_generation_config* config,
                                                                               const bool value);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_generation_config_set_min_new_tokens(ov_genai_generation_config* config,
                                                                                   const size_t value);
/* The result text starts with the prompt. */
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_generation_config_set_echo(ov_genai_generation_config* config,
                                                                         const bool value);
/* Log-probabilities recorded per generated token (0: none). */
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_generation_config_set_logprobs(ov_genai_generation_config* config,
                                                                             const size_t value);
/* Generation ends when the text contains one of them (copied). */
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_generation_config_set_stop_strings(ov_genai_generation_config* config,
                                                                                 const char** strings,
                                                                                 const size_t count);
OPENVINO_GENAI_C_EXPORTS ov_status_e
ov_genai_generation_config_set_include_stop_str_in_output(ov_genai_generation_config* config, const bool value);
/* Generation ends at one of these tokens (copied; must be >= 0). */
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_generation_config_set_stop_token_ids(ov_genai_generation_config* config,
                                                                                   const int64_t* token_ids,
                                                                                   const size_t token_ids_num);

/* Beam search: only the values that turn it off (1, and 0 for the counts)
 * are accepted; the others fail with NOT_IMPLEMENTED. The penalties and the
 * stop criteria only matter to beam search: stored, without effect. */
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_generation_config_set_num_beam_groups(ov_genai_generation_config* config,
                                                                                    const size_t value);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_generation_config_set_num_beams(ov_genai_generation_config* config,
                                                                              const size_t value);
OPENVINO_GENAI_C_EXPORTS ov_status_e
ov_genai_generation_config_set_diversity_penalty(ov_genai_generation_config* config, const float value);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_generation_config_set_length_penalty(ov_genai_generation_config* config,
                                                                                   const float value);
/* 1 only: a pipeline call returns one sequence. */
OPENVINO_GENAI_C_EXPORTS ov_status_e
ov_genai_generation_config_set_num_return_sequences(ov_genai_generation_config* config, const size_t value);
OPENVINO_GENAI_C_EXPORTS ov_status_e
ov_genai_generation_config_set_no_repeat_ngram_size(ov_genai_generation_config* config, const size_t value);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_generation_config_set_stop_criteria(ov_genai_generation_config* config,
                                                                                  const StopCriteria value);

/* Random sampling; used only when do_sample is true (else greedy). */
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_generation_config_set_temperature(ov_genai_generation_config* config,
                                                                                const float value);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_generation_config_set_top_p(ov_genai_generation_config* config,
                                                                          const float value);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_generation_config_set_top_k(ov_genai_generation_config* config,
                                                                          const size_t value);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_generation_config_set_min_p(ov_genai_generation_config* config,
                                                                          const float value);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_generation_config_set_do_sample(ov_genai_generation_config* config,
                                                                              const bool value);
/* Penalties (greedy and sampling alike). */
OPENVINO_GENAI_C_EXPORTS ov_status_e
ov_genai_generation_config_set_repetition_penalty(ov_genai_generation_config* config, const float value);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_generation_config_set_presence_penalty(ov_genai_generation_config* config,
                                                                                     const float value);
OPENVINO_GENAI_C_EXPORTS ov_status_e
ov_genai_generation_config_set_frequency_penalty(ov_genai_generation_config* config, const float value);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_generation_config_set_rng_seed(ov_genai_generation_config* config,
                                                                             const size_t value);

/* Assisted generation. num_assistant_tokens with max_ngram_size > 0 is
 * prompt lookup (proposals from the text itself); without it, proposals
 * come from a draft model (the pipeline property "draft_model": a GGUF
 * path), and assistant_confidence_threshold stops a draft's proposals at
 * an unlikely token. The output is the same as without assistance. */
OPENVINO_GENAI_C_EXPORTS ov_status_e
ov_genai_generation_config_set_assistant_confidence_threshold(ov_genai_generation_config* config, const float value);
OPENVINO_GENAI_C_EXPORTS ov_status_e
ov_genai_generation_config_set_num_assistant_tokens(ov_genai_generation_config* config, const size_t value);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_generation_config_set_max_ngram_size(ov_genai_generation_config* config,
                                                                                   const size_t value);

/* The end-of-sequence token; validate wants it among stop_token_ids. */
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_generation_config_set_eos_token_id(ov_genai_generation_config* config,
                                                                                 const int64_t id);

OPENVINO_GENAI_C_EXPORTS ov_status_e
ov_genai_generation_config_get_max_new_tokens(const ov_genai_generation_config* config, size_t* max_new_tokens);

/* GenerationConfig::validate's checks (a stop condition exists,
 * max_new_tokens > 0 unless echo, min_new_tokens <= max_new_tokens,
 * penalties in range, sampling values in range when do_sample, assistant
 * settings consistent): PARAMETER_MISMATCH naming the first that fails. */
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_generation_config_validate(ov_genai_generation_config* config);
