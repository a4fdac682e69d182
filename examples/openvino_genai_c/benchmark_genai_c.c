/* Generation timings through OpenVINO GenAI's C API: warm-up runs, then
 * measured runs whose metrics are pooled with add_in_place and printed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "openvino/genai/c/llm_pipeline.h"

#define CHECK(call)                                                                                 \
    do {                                                                                            \
        ov_status_e st_ = (call);                                                                   \
        if (st_ != OK) {                                                                            \
            fprintf(stderr, "%s failed: status %d (%s)\n", #call, (int)st_, ov_get_last_err_msg()); \
            goto done;                                                                              \
        }                                                                                           \
    } while (0)

typedef struct options {
    const char *model, *prompt, *device;
    size_t num_warmup, num_iter, max_new_tokens;
} options;

static int parse(int argc, char **argv, options *o) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (i + 1 >= argc) return fprintf(stderr, "%s needs a value\n", a), -1;
        const char *v = argv[++i];
        if (!strcmp(a, "-m") || !strcmp(a, "--model")) o->model = v;
        else if (!strcmp(a, "-p") || !strcmp(a, "--prompt")) o->prompt = v;
        else if (!strcmp(a, "-d") || !strcmp(a, "--device")) o->device = v;
        else if (!strcmp(a, "-N") || !strcmp(a, "--num_warmup")) o->num_warmup = strtoul(v, NULL, 10);
        else if (!strcmp(a, "-n") || !strcmp(a, "--num_iter")) o->num_iter = strtoul(v, NULL, 10);
        else if (!strcmp(a, "-M") || !strcmp(a, "--max_new_tokens")) o->max_new_tokens = strtoul(v, NULL, 10);
        else return fprintf(stderr, "unknown option %s\n", a), -1;
    }
    return o->model && o->num_iter > 0 ? 0 : (fprintf(stderr, "usage: benchmark_genai_c -m MODEL [-p PROMPT] [-N WARMUP] [-n ITER] [-M MAX_NEW_TOKENS] [-d DEVICE]\n"), -1);
}

static void print_pair(const char *what, ov_status_e (*get)(const ov_genai_perf_metrics *, float *, float *),
                       const ov_genai_perf_metrics *m, const char *unit) {
    float mean = 0, std = 0;
    if (get(m, &mean, &std) == OK) printf("%s: %.2f ± %.2f %s\n", what, mean, std, unit);
}

int main(int argc, char **argv) {
    options o = {.prompt = "The Sky is blue because", .device = "CPU", .num_warmup = 1, .num_iter = 3, .max_new_tokens = 20};
    if (parse(argc, argv, &o) != 0) return EXIT_FAILURE;
    ov_genai_llm_pipeline *pipe = NULL;
    ov_genai_generation_config *config = NULL;
    ov_genai_decoded_results *results = NULL;
    ov_genai_perf_metrics *metrics = NULL, *total = NULL;
    int rc = EXIT_FAILURE;

    CHECK(ov_genai_llm_pipeline_create(o.model, o.device, 0, &pipe));
    CHECK(ov_genai_generation_config_create(&config));
    CHECK(ov_genai_generation_config_set_max_new_tokens(config, o.max_new_tokens));
    for (size_t i = 0; i < o.num_warmup; i++) {
        CHECK(ov_genai_llm_pipeline_generate(pipe, o.prompt, config, NULL, &results));
        ov_genai_decoded_results_free(results);
        results = NULL;
    }
    for (size_t i = 0; i < o.num_iter; i++) {
        CHECK(ov_genai_llm_pipeline_generate(pipe, o.prompt, config, NULL, &results));
        CHECK(ov_genai_decoded_results_get_perf_metrics(results, i == 0 ? &total : &metrics));
        if (i > 0) CHECK(ov_genai_perf_metrics_add_in_place(total, metrics));
        ov_genai_decoded_results_perf_metrics_free(metrics);
        metrics = NULL;
        ov_genai_decoded_results_free(results);
        results = NULL;
    }
    float load_time = 0;
    size_t n_input = 0, n_generated = 0;
    CHECK(ov_genai_perf_metrics_get_load_time(total, &load_time));
    CHECK(ov_genai_perf_metrics_get_num_input_tokens(total, &n_input));
    CHECK(ov_genai_perf_metrics_get_num_generation_tokens(total, &n_generated));
    printf("Load time: %.2f ms\n", load_time);
    printf("Input tokens: %zu\nGenerated tokens: %zu\n", n_input, n_generated);
    print_pair("Generate time", ov_genai_perf_metrics_get_generate_duration, total, "ms");
    print_pair("Inference time", ov_genai_perf_metrics_get_inference_duration, total, "ms");
    print_pair("Tokenization time", ov_genai_perf_metrics_get_tokenization_duration, total, "ms");
    print_pair("Detokenization time", ov_genai_perf_metrics_get_detokenization_duration, total, "ms");
    print_pair("Chat template time", ov_genai_perf_metrics_get_chat_template_duration, total, "ms");
    print_pair("TTFT", ov_genai_perf_metrics_get_ttft, total, "ms");
    print_pair("TPOT", ov_genai_perf_metrics_get_tpot, total, "ms/token");
    print_pair("IPOT", ov_genai_perf_metrics_get_ipot, total, "ms/token");
    print_pair("Throughput", ov_genai_perf_metrics_get_throughput, total, "tokens/s");
    rc = EXIT_SUCCESS;
done:
    ov_genai_decoded_results_perf_metrics_free(metrics);
    ov_genai_decoded_results_perf_metrics_free(total);
    ov_genai_decoded_results_free(results);
    ov_genai_generation_config_free(config);
    ov_genai_llm_pipeline_free(pipe);
    return rc;
}
