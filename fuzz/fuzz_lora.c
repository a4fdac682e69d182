/* libFuzzer target over the LoRA reader: any byte string, as an adapter
 * file for stories260K (../shared/models), must load or be refused
 * cleanly; one that loads is applied to a short generation, which must
 * read only inside its tensors. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sprout.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static sprout_model *model;
static sprout_pipeline *pipeline;
static int fd = -1;

static void setup(void) {
    const char *shared = getenv("SPROUT_SHARED_DIR");
    char path[1024];
    snprintf(path, sizeof path, "%s/models/stories260K.gguf", shared && *shared ? shared : SPROUT_SHARED_DIR_DEFAULT);
    sprout_model_params mp = {.struct_size = sizeof mp, .n_threads = 1, .n_ctx = 16};
    if (sprout_model_load(path, &mp, &model) != SPROUT_OK || sprout_pipeline_create(model, NULL, &pipeline) != SPROUT_OK) abort();
    fd = memfd_create("fuzz_lora", 0); /* the reader maps a file: the input goes to one in memory */
    if (fd < 0) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!model) setup();
    if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != (ssize_t)size) abort();
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    sprout_lora *l = NULL;
    if (sprout_lora_load(model, path, &l) == SPROUT_OK) {
        const float scale = 1.f;
        if (sprout_pipeline_set_lora(pipeline, &l, &scale, 1) != SPROUT_OK) abort();
        sprout_generation_config cfg;
        sprout_generation_config_init(&cfg);
        cfg.temperature = 0.f;
        cfg.max_new_tokens = 1;
        const sprout_token prompt[] = {1, 403};
        sprout_result *r = NULL;
        if (sprout_generate_tokens(pipeline, prompt, 2, &cfg, NULL, NULL, &r) == SPROUT_OK) sprout_result_free(r);
        sprout_pipeline_set_lora(pipeline, NULL, NULL, 0);
        sprout_lora_free(l);
    }
    return 0;
}
