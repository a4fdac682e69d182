/* libFuzzer target over what the store reads from disk as JSON: a
 * manifest parses or fails with a message, never a crash, and one that
 * parses formats and parses back to the same layers; the same bytes as a
 * params layer and a messages layer become Modelfile lines or fail. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "store/params.h"
#include "store/parts.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    sp_manifest m;
    if (sp_manifest_parse((const char *)data, size, &m) == SPROUT_OK) {
        char *text = sp_manifest_format(&m);
        sp_manifest again;
        if (!text || sp_manifest_parse(text, strlen(text), &again) != SPROUT_OK) abort();
        if (again.n_layers != m.n_layers || strcmp(again.config.digest, m.config.digest)) abort();
        for (size_t i = 0; i < m.n_layers; i++)
            if (strcmp(again.layers[i].digest, m.layers[i].digest) || again.layers[i].size != m.layers[i].size ||
                strcmp(again.layers[i].media_type, m.layers[i].media_type))
                abort();
        sp_manifest_clear(&again);
        free(text);
    } else if (m.n_layers || m.layers || !*sprout_last_error()) {
        abort();
    }
    sp_manifest_clear(&m);

    char *json = malloc(size + 1);
    if (!json) return 0;
    memcpy(json, data, size);
    json[size] = '\0';
    sp_modelfile *mf = NULL;
    if (sp_params_from_json(json, &mf) == SPROUT_OK) {
        sprout_generation_config cfg;
        sprout_generation_config_init(&cfg);
        sp_modelfile_runner runner = {0};
        (void)sp_modelfile_apply_parameters(mf, &cfg, &runner);
    }
    sp_modelfile_free(mf);
    mf = NULL;
    (void)sp_messages_from_json(json, &mf);
    sp_modelfile_free(mf);
    free(json);
    return 0;
}
