/* Greedy completion of a prompt through OpenVINO GenAI's C API: the model
 * (a .gguf or its directory), the prompt, and optionally how many tokens. */
#include <stdio.h>
#include <stdlib.h>

#include "openvino/genai/c/llm_pipeline.h"

#define CHECK(call)                                                                                 \
    do {                                                                                            \
        ov_status_e st_ = (call);                                                                   \
        if (st_ != OK) {                                                                            \
            fprintf(stderr, "%s failed: status %d (%s)\n", #call, (int)st_, ov_get_last_err_msg()); \
            goto done;                                                                              \
        }                                                                                           \
    } while (0)

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s <MODEL> \"<PROMPT>\" [MAX_NEW_TOKENS]\n", argv[0]);
        return EXIT_FAILURE;
    }
    const size_t max_new_tokens = argc > 3 ? (size_t)strtoul(argv[3], NULL, 10) : 100;
    ov_genai_llm_pipeline *pipeline = NULL;
    ov_genai_generation_config *config = NULL;
    ov_genai_decoded_results *results = NULL;
    char *text = NULL;
    size_t size = 0;
    int rc = EXIT_FAILURE;

    CHECK(ov_genai_llm_pipeline_create(argv[1], "CPU", 0, &pipeline));
    CHECK(ov_genai_generation_config_create(&config));
    CHECK(ov_genai_generation_config_set_max_new_tokens(config, max_new_tokens));
    CHECK(ov_genai_llm_pipeline_generate(pipeline, argv[2], config, NULL, &results));
    CHECK(ov_genai_decoded_results_get_string(results, NULL, &size)); /* the size, NUL included */
    if (!(text = malloc(size))) goto done;
    CHECK(ov_genai_decoded_results_get_string(results, text, &size));
    printf("%s\n", text);
    rc = EXIT_SUCCESS;
done:
    free(text);
    ov_genai_decoded_results_free(results);
    ov_genai_generation_config_free(config);
    ov_genai_llm_pipeline_free(pipeline);
    return rc;
}
