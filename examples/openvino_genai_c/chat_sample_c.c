/* A chat through OpenVINO GenAI's C API: one question per line of stdin,
 * answers streamed. The streamer says STOP after MAX_CHUNKS pieces (0: never),
 * which ends that answer early and keeps it in the conversation. */
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

typedef struct stream_state {
    size_t chunks, max_chunks;
    char streamed[8192]; /* what the streamer was given, to compare with the result */
    size_t len;
} stream_state;

static ov_genai_streaming_status_e print_chunk(const char *str, void *args) {
    stream_state *s = args;
    fputs(str, stdout);
    fflush(stdout);
    const size_t n = strlen(str);
    if (s->len + n < sizeof s->streamed) {
        memcpy(s->streamed + s->len, str, n + 1);
        s->len += n;
    }
    s->chunks++;
    return s->max_chunks && s->chunks >= s->max_chunks ? OV_GENAI_STREAMING_STATUS_STOP : OV_GENAI_STREAMING_STATUS_RUNNING;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s <MODEL> [MAX_CHUNKS] [MAX_NEW_TOKENS]\n", argv[0]);
        return EXIT_FAILURE;
    }
    stream_state state = {.max_chunks = argc > 2 ? (size_t)strtoul(argv[2], NULL, 10) : 0};
    const size_t max_new_tokens = argc > 3 ? (size_t)strtoul(argv[3], NULL, 10) : 100;
    streamer_callback streamer = {.callback_func = print_chunk, .args = &state};
    ov_genai_llm_pipeline *pipeline = NULL;
    ov_genai_generation_config *config = NULL;
    ov_genai_decoded_results *results = NULL;
    char question[1024], answer[8192];
    int rc = EXIT_FAILURE;

    CHECK(ov_genai_llm_pipeline_create(argv[1], "CPU", 0, &pipeline));
    CHECK(ov_genai_generation_config_create(&config));
    CHECK(ov_genai_generation_config_set_max_new_tokens(config, max_new_tokens));
    CHECK(ov_genai_llm_pipeline_start_chat(pipeline));
    printf("question:\n");
    while (fgets(question, sizeof question, stdin)) {
        question[strcspn(question, "\n")] = '\0';
        if (!*question) continue;
        state.chunks = state.len = 0;
        state.streamed[0] = '\0';
        CHECK(ov_genai_llm_pipeline_generate(pipeline, question, config, &streamer, &results));
        size_t size = sizeof answer;
        CHECK(ov_genai_decoded_results_get_string(results, answer, &size));
        ov_genai_decoded_results_free(results);
        results = NULL;
        if (strcmp(answer, state.streamed) != 0) {
            fprintf(stderr, "\nthe result differs from what was streamed\n");
            goto done;
        }
        if (state.max_chunks && state.chunks >= state.max_chunks) printf("\n[stopped after %zu chunks]", state.chunks);
        printf("\n----------\nquestion:\n");
    }
    CHECK(ov_genai_llm_pipeline_finish_chat(pipeline));
    rc = EXIT_SUCCESS;
done:
    ov_genai_decoded_results_free(results);
    ov_genai_generation_config_free(config);
    ov_genai_llm_pipeline_free(pipeline);
    return rc;
}
