/*
 * generate — greedy completion of a prompt with libsprout, streamed to stdout.
 *
 *   generate MODEL.gguf [PROMPT] [MAX_NEW_TOKENS]
 *
 * Build it against an installed sprout with either
 *   cc generate.c $(pkg-config --cflags --libs sprout) -o generate
 * or examples/c/CMakeLists.txt (find_package(sprout)). Prints what
 * `sprout run -m MODEL -p PROMPT -n N --temp 0` prints.
 */
#include <sprout.h>

#include <stdio.h>
#include <stdlib.h>

static sprout_stream_status print_piece(const char *piece, size_t len, void *user)
{
    (void)user;
    fwrite(piece, 1, len, stdout);
    fflush(stdout);
    return SPROUT_STREAM_RUNNING;
}

static int fail(const char *what, sprout_status status)
{
    fprintf(stderr, "generate: %s: %s: %s\n", what, sprout_status_str(status), sprout_last_error());
    return 1;
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 4) {
        fprintf(stderr, "usage: %s MODEL.gguf [PROMPT] [MAX_NEW_TOKENS]\n", argv[0]);
        return 2;
    }
    const char *prompt = argc > 2 ? argv[2] : "Once upon a time";
    int max_new_tokens = argc > 3 ? atoi(argv[3]) : 64;

    sprout_model *model = NULL;
    sprout_status status = sprout_model_load(argv[1], NULL, &model);
    if (status != SPROUT_OK)
        return fail("loading the model", status);
    sprout_pipeline *pipe = NULL;
    status = sprout_pipeline_create(model, NULL, &pipe);
    if (status != SPROUT_OK) {
        sprout_model_free(model);
        return fail("creating the pipeline", status);
    }

    sprout_generation_config cfg;
    sprout_generation_config_init(&cfg);
    cfg.max_new_tokens = max_new_tokens;
    cfg.temperature = 0; /* greedy */

    sprout_result *result = NULL;
    status = sprout_generate(pipe, prompt, &cfg, print_piece, NULL, &result);
    int rc = 0;
    if (status == SPROUT_OK) {
        putchar('\n');
        sprout_perf_metrics metrics = {.struct_size = sizeof metrics};
        if (sprout_result_metrics(result, &metrics) == SPROUT_OK)
            fprintf(stderr, "%d tokens, first after %.1f ms, then %.2f ms each (%s kernels, libsprout %s)\n",
                    metrics.n_generated_tokens, metrics.ttft_ms, metrics.tpot_mean_ms, sprout_kernels_name(),
                    sprout_version());
        sprout_result_free(result);
    } else {
        rc = fail("generating", status);
    }
    sprout_pipeline_free(pipe);
    sprout_model_free(model);
    return rc;
}
