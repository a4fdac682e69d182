/* libFuzzer target over Ollama's Modelfile parser: any bytes parse or
 * fail with a message naming a line, never a crash; a parsed file's
 * PARAMETERs apply to a config or fail the same way, and a config they
 * apply to points only into the parsed file. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/modelfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    sp_modelfile *mf = NULL;
    const sprout_status st = sp_modelfile_parse((const char *)data, size, &mf);
    if (st != SPROUT_OK) {
        if (mf || strncmp(sprout_last_error(), "Modelfile:", 10) != 0) abort();
        return 0;
    }
    if (!mf || !mf->from) abort();
    sprout_generation_config cfg;
    sprout_generation_config_init(&cfg);
    sp_modelfile_runner runner = {0};
    if (sp_modelfile_apply_parameters(mf, &cfg, &runner) == SPROUT_OK) {
        for (size_t i = 0; i < cfg.n_stop_strings; i++)
            if (!cfg.stop_strings[i]) abort();
    }
    sp_modelfile_free(mf);
    return 0;
}
