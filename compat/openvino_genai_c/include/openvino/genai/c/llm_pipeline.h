/*
 * openvino/genai/c/llm_pipeline.h — OpenVINO GenAI's text generation
 * pipeline (ov::genai::LLMPipeline) through its C API, run by sprout on a
 * GGUF model on the CPU.
 *
 *   ov_genai_llm_pipeline* pipe = NULL;
 *   ov_genai_decoded_results* results = NULL;
 *   if (ov_genai_llm_pipeline_create("model.gguf", "CPU", 0, &pipe) == OK &&
 *       ov_genai_llm_pipeline_generate(pipe, "Once upon a time", NULL, NULL, &results) == OK) {
 *       size_t size = 0;
 *       ov_genai_decoded_results_get_string(results, NULL, &size);   // size with the NUL
 *       ...
 *   }
 *   ov_genai_decoded_results_free(results);
 *   ov_genai_llm_pipeline_free(pipe);
 *
 * Handles are independent: results, metrics and configs stay valid after
 * the pipeline that made them is freed, and may be freed in any order.
 * A pipeline is used by one thread at a time.
 */
#pragma once
#include "generation_config.h"
#include "perf_metrics.h"
#include "chat_history.h"

typedef struct ov_genai_decoded_results_opaque ov_genai_decoded_results;

/* An empty result (no text, zero metrics). */
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_decoded_results_create(ov_genai_decoded_results** results);
OPENVINO_GENAI_C_EXPORTS void ov_genai_decoded_results_free(ov_genai_decoded_results* results);

/* A new copy of the result's metrics, freed with
 * ov_genai_decoded_results_perf_metrics_free. */
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_decoded_results_get_perf_metrics(const ov_genai_decoded_results* results,
                                                                               ov_genai_perf_metrics** metrics);
OPENVINO_GENAI_C_EXPORTS void ov_genai_decoded_results_perf_metrics_free(ov_genai_perf_metrics* metrics);

/* The generated text. output NULL: *output_size gets the size needed (the
 * text and its NUL). Otherwise *output_size is the buffer's size: a buffer
 * too short gives OUT_OF_BOUNDS (*output_size then says the size needed);
 * on success *output_size is the size written. */
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_decoded_results_get_string(const ov_genai_decoded_results* results,
                                                                         char* output,
                                                                         size_t* output_size);

typedef struct ov_genai_llm_pipeline_opaque ov_genai_llm_pipeline;

/* Loads a model: models_path is a .gguf file (a split model's first part)
 * or a directory holding exactly one model (its only .gguf, or the first
 * part of its only split set). device must be "CPU" (any case; "AUTO"
 * means the CPU too); other devices fail with NOT_FOUND. Properties are
 * property_args_size strings, key then value: "INFERENCE_NUM_THREADS" (a
 * thread count), "draft_model" (a GGUF path: a small model of the same
 * vocabulary for assisted generation); others, such as "CACHE_DIR" or
 * "PERFORMANCE_HINT", are accepted and have no effect. An odd count is
 * INVALID_C_PARAM. */
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_llm_pipeline_create(const char* models_path,
                                                                  const char* device,
                                                                  const size_t property_args_size,
                                                                  ov_genai_llm_pipeline** pipe,
                                                                  ...);
OPENVINO_GENAI_C_EXPORTS void ov_genai_llm_pipeline_free(ov_genai_llm_pipeline* pipe);

#ifndef OV_GENAI_STREAMING_STATUS_DEFINED
#define OV_GENAI_STREAMING_STATUS_DEFINED
typedef enum {
    OV_GENAI_STREAMING_STATUS_RUNNING = 0, /* go on */
    OV_GENAI_STREAMING_STATUS_STOP = 1,    /* end now; a chat keeps this turn */
    OV_GENAI_STREAMING_STATUS_CANCEL = 2   /* end now; a chat drops this turn's message and reply */
} ov_genai_streaming_status_e;
#endif

/* The spelling of OpenVINO GenAI's first C API releases (2025), so that
 * programs written against them build too. */
#ifndef OV_GENAI_STREAMMING_STATUS_DEFINED
#define OV_GENAI_STREAMMING_STATUS_DEFINED
typedef ov_genai_streaming_status_e ov_genai_streamming_status_e;
#define OV_GENAI_STREAMMING_STATUS_RUNNING OV_GENAI_STREAMING_STATUS_RUNNING
#define OV_GENAI_STREAMMING_STATUS_STOP OV_GENAI_STREAMING_STATUS_STOP
#define OV_GENAI_STREAMMING_STATUS_CANCEL OV_GENAI_STREAMING_STATUS_CANCEL
#endif

#ifndef OV_GENAI_STREAMER_CALLBACK_DEFINED
#define OV_GENAI_STREAMER_CALLBACK_DEFINED
/* Called with each new piece of text (NUL-terminated, whole UTF-8
 * characters, never text that may still turn out to be a stop string) and
 * args. Another return value than STOP or CANCEL means RUNNING. */
typedef struct {
    ov_genai_streaming_status_e(OPENVINO_C_API_CALLBACK* callback_func)(const char* str, void* args);
    void* args;
} streamer_callback;
#endif

/* Completes inputs. Outside a chat the prompt goes through the model's own
 * chat template as one user message when the GGUF has one
 * (tokenizer.chat_template), else it is raw text; inside a chat
 * (start_chat) it is the next user message. config NULL: the pipeline's.
 * streamer and results may each be NULL, not both. A streamer's STOP or
 * CANCEL ends the call with OK and the text so far. */
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_llm_pipeline_generate(ov_genai_llm_pipeline* pipe,
                                                                    const char* inputs,
                                                                    const ov_genai_generation_config* config,
                                                                    const streamer_callback* streamer,
                                                                    ov_genai_decoded_results** results);

/* Replies to a whole conversation, rendered with the model's chat template
 * (sprout's ChatML when the GGUF has none), tools and extra context
 * included. The history is not changed: the caller appends the reply. The
 * tokens a previous call left in the cache that start the new prompt are
 * reused. Not inside a start_chat session driven by text inputs
 * (PARAMETER_MISMATCH, as openvino_genai refuses switching input types). */
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_llm_pipeline_generate_with_history(ov_genai_llm_pipeline* pipe,
                                                                                  const ov_genai_chat_history* history,
                                                                                  const ov_genai_generation_config* config,
                                                                                  const streamer_callback* streamer,
                                                                                  ov_genai_decoded_results** results);

/* A chat: each generate call is a user message; the history and its KV
 * cache are kept, so only the new turn is computed. Starting again ends
 * the chat in progress. */
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_llm_pipeline_start_chat(ov_genai_llm_pipeline* pipe);
/* Ends the chat and forgets its history. */
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_llm_pipeline_finish_chat(ov_genai_llm_pipeline* pipe);

/* A new copy of the pipeline's config (the one calls with a NULL config
 * use): GenerationConfig's defaults with the model's EOS token. */
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_llm_pipeline_get_generation_config(const ov_genai_llm_pipeline* pipe,
                                                                                 ov_genai_generation_config** config);
/* Replaces it with a copy of config; empty stop_token_ids and an unset
 * eos_token_id keep the pipeline's. PARAMETER_MISMATCH (and nothing
 * changed) when it does not validate. */
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_llm_pipeline_set_generation_config(ov_genai_llm_pipeline* pipe,
                                                                                 ov_genai_generation_config* config);
