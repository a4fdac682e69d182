/*
 * openvino/genai/c/perf_metrics.h — timings of generate calls
 * (ov::genai::PerfMetrics). Times are in milliseconds, throughput in tokens
 * per second; each pair is the mean and the (population) standard
 * deviation over the samples: one per call for the durations and TTFT, one
 * per generated token after the first for TPOT and IPOT.
 * ov_genai_perf_metrics_add_in_place pools two sets of samples, so the
 * statistics of the sum are those of all the calls together.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "openvino/c/ov_common.h"
#include "openvino/genai/c/visibility.h"

typedef struct ov_genai_perf_metrics_opaque ov_genai_perf_metrics;

/* Loading the model (the pipeline's creation). */
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_perf_metrics_get_load_time(const ov_genai_perf_metrics* metrics,
                                                                         float* load_time);
OPENVINO_GENAI_C_EXPORTS ov_status_e
ov_genai_perf_metrics_get_num_generation_tokens(const ov_genai_perf_metrics* metrics, size_t* num_generation_tokens);
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_perf_metrics_get_num_input_tokens(const ov_genai_perf_metrics* metrics,
                                                                                size_t* num_input_tokens);
/* Time to first token: the call's start to the first generated token. */
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_perf_metrics_get_ttft(const ov_genai_perf_metrics* metrics,
                                                                    float* mean,
                                                                    float* std);
/* Time per output token after the first. */
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_perf_metrics_get_tpot(const ov_genai_perf_metrics* metrics,
                                                                    float* mean,
                                                                    float* std);
/* Inference time per output token (sprout's token loop is inference, so
 * the same samples as TPOT). */
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_perf_metrics_get_ipot(const ov_genai_perf_metrics* metrics,
                                                                    float* mean,
                                                                    float* std);
/* 1000 / TPOT, its deviation propagated from TPOT's. */
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_perf_metrics_get_throughput(const ov_genai_perf_metrics* metrics,
                                                                          float* mean,
                                                                          float* std);
/* The engine's part of a call: prefill and decoding. */
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_perf_metrics_get_inference_duration(const ov_genai_perf_metrics* metrics,
                                                                                  float* mean,
                                                                                  float* std);
/* The whole call. */
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_perf_metrics_get_generate_duration(const ov_genai_perf_metrics* metrics,
                                                                                 float* mean,
                                                                                 float* std);
OPENVINO_GENAI_C_EXPORTS ov_status_e
ov_genai_perf_metrics_get_tokenization_duration(const ov_genai_perf_metrics* metrics, float* mean, float* std);
/* sprout turns tokens into text inside the token loop, as they come: that
 * time is part of TPOT, and this is 0. */
OPENVINO_GENAI_C_EXPORTS ov_status_e
ov_genai_perf_metrics_get_detokenization_duration(const ov_genai_perf_metrics* metrics, float* mean, float* std);
/* Rendering the chat template (0 in a start_chat session, where sprout
 * renders and tokenizes in one step, counted as tokenization). */
OPENVINO_GENAI_C_EXPORTS ov_status_e
ov_genai_perf_metrics_get_chat_template_duration(const ov_genai_perf_metrics* metrics, float* mean, float* std);

/* left += right: token counts added, samples pooled; load time is left's. */
OPENVINO_GENAI_C_EXPORTS ov_status_e ov_genai_perf_metrics_add_in_place(ov_genai_perf_metrics* left,
                                                                        const ov_genai_perf_metrics* right);
