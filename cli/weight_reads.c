/* A decoded token reads every matmul weight of every layer and the output
 * head, but only one row of the embedding tables, and of a mixture of
 * experts the router, the shared expert and the experts it is routed to:
 * expert_used_count of expert_count, whichever they are, so their bytes
 * count by that fraction. Norms and biases are counted (a token reads them
 * too; they are small). */
#include "weight_reads.h"

#include <stdio.h>
#include <string.h>

/* Tables a token reads one row of, by llama.cpp's tensor names. */
static bool is_lookup_table(const char *name) {
    return strcmp(name, "token_embd.weight") == 0 || strcmp(name, "position_embd.weight") == 0 ||
           strcmp(name, "token_types.weight") == 0;
}

static uint32_t arch_u32(const sprout_gguf *g, const char *arch, size_t arch_len, const char *suffix) {
    char key[256];
    snprintf(key, sizeof key, "%.*s.%s", (int)(arch_len < 128 ? arch_len : 128), arch, suffix);
    uint32_t v = 0;
    return sprout_gguf_get_u32(g, key, &v) == SPROUT_OK ? v : 0;
}

void cli_weight_reads_of(const sprout_gguf *g, cli_weight_reads *out) {
    memset(out, 0, sizeof *out);
    const char *arch = "";
    size_t arch_len = 0;
    sprout_gguf_get_str(g, "general.architecture", &arch, &arch_len);
    out->n_expert = arch_u32(g, arch, arch_len, "expert_count");
    out->n_expert_used = arch_u32(g, arch, arch_len, "expert_used_count");
    const bool routed = out->n_expert > 0 && out->n_expert_used > 0 && out->n_expert_used <= out->n_expert;
    /* without an output head the embedding table is the head (tied), read whole */
    const bool tied_head = sprout_gguf_find_tensor(g, "output.weight") < 0;
    uint64_t expert_bytes = 0;
    for (int64_t i = 0; i < sprout_gguf_tensor_count(g); i++) {
        const char *name = sprout_gguf_tensor_name(g, i);
        const int64_t elements = sprout_gguf_tensor_elements(g, i);
        const uint64_t bytes = sprout_gguf_tensor_bytes(g, i);
        out->params += elements;
        out->shared_expert |= strstr(name, "_shexp.") != NULL;
        if (strstr(name, "_exps.")) {
            out->expert_params += elements;
            expert_bytes += bytes;
        } else if (!is_lookup_table(name) || (tied_head && strcmp(name, "token_embd.weight") == 0)) {
            out->active_bytes += bytes;
        }
    }
    out->active_params = out->params;
    if (routed) {
        out->active_params -= out->expert_params - out->expert_params / out->n_expert * out->n_expert_used;
        out->active_bytes += expert_bytes / out->n_expert * out->n_expert_used;
    } else {
        out->active_bytes += expert_bytes;
    }
}
