/* What the compatibility library's files share: the handles' contents,
 * the error message, and the conversions onto sprout.h. Nothing here is
 * exported from the shared library. */
#ifndef OVC_INTERNAL_H
#define OVC_INTERNAL_H

#include <jansson.h>

#include "openvino/genai/c/json_container.h"
#include "openvino/genai/c/llm_pipeline.h"
#include "sprout.h"

struct ov_genai_generation_config_opaque {
    size_t max_new_tokens, max_length, min_new_tokens, logprobs;
    bool ignore_eos, echo, include_stop_str_in_output, do_sample;
    char **stop_strings; /* a set: no duplicates */
    size_t n_stop_strings;
    int64_t *stop_token_ids; /* a set */
    size_t n_stop_token_ids;
    size_t num_beam_groups, num_beams, num_return_sequences, no_repeat_ngram_size;
    float diversity_penalty, length_penalty;
    StopCriteria stop_criteria;
    float temperature, top_p, min_p;
    size_t top_k;
    float repetition_penalty, presence_penalty, frequency_penalty;
    size_t rng_seed;
    float assistant_confidence_threshold;
    size_t num_assistant_tokens, max_ngram_size;
    int64_t eos_token_id;
};

/* Samples summarised so that two summaries pool exactly (Chan et al.):
 * count, mean, and the sum of squared deviations. */
typedef struct ovc_stat {
    double n, mean, m2;
} ovc_stat;

struct ov_genai_perf_metrics_opaque {
    float load_time;
    size_t num_generated_tokens, num_input_tokens;
    ovc_stat ttft, tpot, generate, inference, tokenization, detokenization, chat_template;
};

struct ov_genai_decoded_results_opaque {
    char *text;
    size_t len;
    struct ov_genai_perf_metrics_opaque metrics;
};

struct ov_genai_json_container_opaque {
    json_t *value;
};

struct ov_genai_chat_history_opaque {
    json_t *messages; /* an array of objects */
    json_t *tools;    /* an array */
    json_t *extra;    /* an object */
};

/* Errors: sets the thread's message and returns status. */
ov_status_e ovc_fail(ov_status_e status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A failed sprout call's status as the C API's, its message kept. */
ov_status_e ovc_from_sprout(sprout_status status);

/* A config as GenerationConfig's default constructor makes it. */
void ovc_config_defaults(ov_genai_generation_config *c);
/* Deep copy into a new handle (NULL when out of memory). */
ov_genai_generation_config *ovc_config_dup(const ov_genai_generation_config *c);
/* GenerationConfig::validate(). */
ov_status_e ovc_config_validate(const ov_genai_generation_config *c);
/* Adds a token to the stop set, once. */
ov_status_e ovc_config_add_stop_token(ov_genai_generation_config *c, int64_t id);

/* The sprout config a generate call runs with, and the id list it points
 * into. */
typedef struct ovc_sprout_config {
    sprout_generation_config cfg;
    int32_t *stop_ids;
} ovc_sprout_config;

/* Maps c (resolved and validated) for a prompt of n_prompt tokens in a
 * context of n_ctx; free with ovc_sprout_config_free. */
ov_status_e ovc_config_to_sprout(const ov_genai_generation_config *c, const sprout_tokenizer *tok, size_t n_prompt,
                                 int32_t n_ctx, ovc_sprout_config *out);
void ovc_sprout_config_free(ovc_sprout_config *s);

void ovc_stat_add(ovc_stat *s, double x);
/* One call's metrics from sprout's, plus what the compatibility layer
 * measured around it (milliseconds). */
void ovc_metrics_from_sprout(struct ov_genai_perf_metrics_opaque *m, const sprout_perf_metrics *sm, double before_ms,
                             double template_ms, double tokenize_ms, double generate_ms);

/* A decoded result holding a copy of text and metrics. */
ov_status_e ovc_results_make(const char *text, size_t len, const struct ov_genai_perf_metrics_opaque *metrics,
                             ov_genai_decoded_results **out);

/* The model file a models_path names: the path itself, or the one model
 * in a directory. *out is freed by the caller. */
ov_status_e ovc_find_model(const char *models_path, char **out);

/* Milliseconds of a monotonic clock. */
double ovc_now_ms(void);

/* A JSON value as compact text in the callers' buffer protocol: size query
 * with NULL, OUT_OF_BOUNDS-style failure (false) with the size needed. */
typedef enum { OVC_COPY_OK, OVC_COPY_SHORT } ovc_copy_result;
ovc_copy_result ovc_copy_out(const char *text, size_t len, char *output, size_t *output_size);

#endif
