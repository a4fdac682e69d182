/* PerfMetrics through the C API: each quantity kept as pooled samples so
 * that add_in_place gives the statistics of all calls together, as
 * openvino_genai's operator+= does with its raw lists. */
#include <math.h>

#include "ovc_internal.h"

void ovc_stat_add(ovc_stat *s, double x) {
    s->n += 1;
    const double delta = x - s->mean;
    s->mean += delta / s->n;
    s->m2 += delta * (x - s->mean);
}

static void stat_pool(ovc_stat *a, const ovc_stat *b) {
    if (b->n == 0) return;
    if (a->n == 0) {
        *a = *b;
        return;
    }
    const double n = a->n + b->n, delta = b->mean - a->mean;
    a->m2 += b->m2 + delta * delta * a->n * b->n / n;
    a->mean += delta * b->n / n;
    a->n = n;
}

void ovc_metrics_from_sprout(struct ov_genai_perf_metrics_opaque *m, const sprout_perf_metrics *sm, double before_ms,
                             double template_ms, double tokenize_ms, double generate_ms) {
    *m = (struct ov_genai_perf_metrics_opaque){0};
    m->load_time = (float)sm->load_ms;
    m->num_generated_tokens = sm->n_generated_tokens > 0 ? (size_t)sm->n_generated_tokens : 0;
    m->num_input_tokens = sm->n_prompt_tokens > 0 ? (size_t)sm->n_prompt_tokens : 0;
    if (sm->n_generated_tokens > 0) ovc_stat_add(&m->ttft, before_ms + sm->ttft_ms);
    /* sprout gives the intervals between tokens as mean and population
     * deviation: the same summary in another form */
    if (sm->n_generated_tokens > 1) {
        m->tpot.n = sm->n_generated_tokens - 1;
        m->tpot.mean = sm->tpot_mean_ms;
        m->tpot.m2 = sm->tpot_std_ms * sm->tpot_std_ms * m->tpot.n;
    }
    ovc_stat_add(&m->generate, generate_ms);
    ovc_stat_add(&m->inference, sm->total_ms - sm->tokenize_ms);
    ovc_stat_add(&m->tokenization, tokenize_ms + sm->tokenize_ms);
    ovc_stat_add(&m->detokenization, 0);
    ovc_stat_add(&m->chat_template, template_ms);
}

#define CHECK_METRICS(m)                                                                     \
    do {                                                                                     \
        if (!(m)) return ovc_fail(INVALID_C_PARAM, "%s: NULL perf metrics", __func__);       \
    } while (0)

static ov_status_e mean_std(const ovc_stat *s, float *mean, float *std, const char *what) {
    if (!mean || !std) return ovc_fail(INVALID_C_PARAM, "%s: NULL mean or std", what);
    *mean = s->n > 0 ? (float)s->mean : 0.0f;
    *std = s->n > 0 ? (float)sqrt(fmax(0, s->m2 / s->n)) : 0.0f;
    return OK;
}

ov_status_e ov_genai_perf_metrics_get_load_time(const ov_genai_perf_metrics *metrics, float *load_time) {
    CHECK_METRICS(metrics);
    if (!load_time) return ovc_fail(INVALID_C_PARAM, "get_load_time: NULL output");
    *load_time = metrics->load_time;
    return OK;
}

ov_status_e ov_genai_perf_metrics_get_num_generation_tokens(const ov_genai_perf_metrics *metrics, size_t *num_generation_tokens) {
    CHECK_METRICS(metrics);
    if (!num_generation_tokens) return ovc_fail(INVALID_C_PARAM, "get_num_generation_tokens: NULL output");
    *num_generation_tokens = metrics->num_generated_tokens;
    return OK;
}

ov_status_e ov_genai_perf_metrics_get_num_input_tokens(const ov_genai_perf_metrics *metrics, size_t *num_input_tokens) {
    CHECK_METRICS(metrics);
    if (!num_input_tokens) return ovc_fail(INVALID_C_PARAM, "get_num_input_tokens: NULL output");
    *num_input_tokens = metrics->num_input_tokens;
    return OK;
}

/* A getter of one pooled quantity. */
#define STAT_GETTER(name, field)                                                                         \
    ov_status_e ov_genai_perf_metrics_get_##name(const ov_genai_perf_metrics *metrics, float *mean, float *std) { \
        CHECK_METRICS(metrics);                                                                          \
        return mean_std(&metrics->field, mean, std, #name);                                              \
    }

STAT_GETTER(ttft, ttft)
STAT_GETTER(tpot, tpot)
STAT_GETTER(ipot, tpot)
STAT_GETTER(inference_duration, inference)
STAT_GETTER(generate_duration, generate)
STAT_GETTER(tokenization_duration, tokenization)
STAT_GETTER(detokenization_duration, detokenization)
STAT_GETTER(chat_template_duration, chat_template)

/* Tokens per second from TPOT, as openvino_genai derives it: 1000 / mean,
 * the deviation carried through the reciprocal to first order. */
ov_status_e ov_genai_perf_metrics_get_throughput(const ov_genai_perf_metrics *metrics, float *mean, float *std) {
    CHECK_METRICS(metrics);
    if (!mean || !std) return ovc_fail(INVALID_C_PARAM, "throughput: NULL mean or std");
    float tpot_mean, tpot_std;
    ov_status_e st = mean_std(&metrics->tpot, &tpot_mean, &tpot_std, "throughput");
    if (st != OK) return st;
    *mean = tpot_mean > 0 ? 1000.0f / tpot_mean : 0.0f;
    *std = tpot_mean > 0 ? tpot_std * 1000.0f / (tpot_mean * tpot_mean) : 0.0f;
    return OK;
}

ov_status_e ov_genai_perf_metrics_add_in_place(ov_genai_perf_metrics *left, const ov_genai_perf_metrics *right) {
    if (!left || !right) return ovc_fail(INVALID_C_PARAM, "add_in_place: NULL perf metrics");
    left->num_generated_tokens += right->num_generated_tokens;
    left->num_input_tokens += right->num_input_tokens;
    stat_pool(&left->ttft, &right->ttft);
    stat_pool(&left->tpot, &right->tpot);
    stat_pool(&left->generate, &right->generate);
    stat_pool(&left->inference, &right->inference);
    stat_pool(&left->tokenization, &right->tokenization);
    stat_pool(&left->detokenization, &right->detokenization);
    stat_pool(&left->chat_template, &right->chat_template);
    return OK;
}
