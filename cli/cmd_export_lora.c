/* sprout export-lora -m BASE.gguf --lora A.gguf [--lora-scaled B.gguf S ...] -o OUT.gguf [--type T]
 *
 * Merges LoRA adapters into a copy of their base model, as llama.cpp's
 * llama-export-lora does: a line per merged tensor on stderr, a summary on
 * stdout. A failure leaves no output file behind. */
#include <stddef.h>
#include <stdio.h>

#include "commands.h"
#include "options.h"
#include "sprout.h"

typedef struct export_options {
    const char *output;
    int32_t type;
} export_options;

#define OPT(field) offsetof(export_options, field)
static const cli_option export_table[] = {
    CLI_OPT_STRING("-o, --output", "FILE", OPT(output), "the merged model to write (required)"),
    CLI_OPT_CUSTOM("--type", "T", OPT(type), cli_parse_tensor_type,
                   "tensor type of the merged tensors (F32, F16, BF16, Q8_0 ...); default: F32 stays F32, others F16"),
};

static const cli_command export_command = {
    .name = "export-lora",
    .usage = "export-lora -m BASE.gguf --lora ADAPTER.gguf [--lora-scaled ADAPTER.gguf SCALE ...] -o OUT.gguf [options]",
    .about = "  Every weight an adapter targets becomes W + sum of scale * alpha / rank * B A;\n"
             "  every other tensor and all metadata are copied unchanged.\n",
    .shared = CLI_SHARED_MODEL | CLI_SHARED_THREADS | CLI_SHARED_LORA,
    CLI_TABLE(export_table),
    .needs_model = true,
};

typedef struct export_tally {
    int64_t n_tensors, n_merged, n_fallback;
} export_tally;

static bool on_progress(void *user, const sprout_lora_export_progress *p) {
    export_tally *t = user;
    t->n_tensors = p->n_tensors;
    if (!p->n_merged) {
        cli_log(SPROUT_LOG_INFO, "[%4lld/%lld] %-32s %5s (copied)", (long long)p->tensor_index + 1, (long long)p->n_tensors,
                p->tensor_name, sprout_type_name(p->from_type));
        return true;
    }
    t->n_merged++;
    if (p->wanted_type != p->to_type) {
        t->n_fallback++;
        cli_log(SPROUT_LOG_WARN, "%s: rows do not fit %s blocks, using %s", p->tensor_name, sprout_type_name(p->wanted_type),
                sprout_type_name(p->to_type));
    }
    fprintf(stderr, "[%4lld/%lld] %-32s %5s -> %-5s +%d adapter%s\n", (long long)p->tensor_index + 1, (long long)p->n_tensors,
            p->tensor_name, sprout_type_name(p->from_type), sprout_type_name(p->to_type), (int)p->n_merged, p->n_merged > 1 ? "s" : "");
    return true;
}

int cmd_export_lora(int argc, char **argv) {
    export_options own = {.output = NULL, .type = -1};
    cli_common o;
    const int status = cli_parse(&export_command, &o, &own, argc, argv);
    if (status != CLI_CONTINUE) return status;
    if (o.loras.n == 0) return cli_usage_error(&export_command, "at least one --lora or --lora-scaled ADAPTER is required");
    if (!own.output) return cli_usage_error(&export_command, "-o OUT.gguf is required");
    export_tally tally = {0};
    sprout_lora_export_params params;
    sprout_lora_export_params_default(&params);
    params.base_path = o.model;
    params.adapter_paths = o.loras.path;
    params.scales = o.loras.scale;
    params.n_adapters = o.loras.n;
    params.output_path = own.output;
    params.output_type = own.type;
    params.n_threads = o.n_threads;
    params.progress = on_progress;
    params.user = &tally;
    if (sprout_lora_export(&params) != SPROUT_OK) {
        fprintf(stderr, "sprout export-lora: %s\n", sprout_last_error());
        return 1;
    }
    printf("%s: %lld tensors, %lld merged with %zu adapter%s", own.output, (long long)tally.n_tensors, (long long)tally.n_merged,
           o.loras.n, o.loras.n > 1 ? "s" : "");
    if (tally.n_fallback) printf(" (%lld with a fallback type)", (long long)tally.n_fallback);
    printf(", %lld copied\n", (long long)(tally.n_tensors - tally.n_merged));
    return 0;
}
