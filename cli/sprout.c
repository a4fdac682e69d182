/* sprout: the command-line door to libsprout. Each subcommand lives in its
 * own file and uses only the public header. */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "options.h"
#include "sprout.h"

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} command;

static const command commands[] = {
    {"run", cmd_run, "generate a continuation of a prompt (or one chat turn with --chat)"},
    {"chat", cmd_chat, "talk with a model interactively, with its chat template"},
    {"quantize", cmd_quantize, "convert a GGUF to another tensor type or a Q4_K_M-style mix"},
    {"export-lora", cmd_export_lora, "merge LoRA adapters into a copy of their base model"},
    {"serve", cmd_serve, "serve the OpenAI and Ollama HTTP APIs, many clients at once"},
    {"ps", cmd_ps, "list the models a running server has loaded"},
    {"stop", cmd_stop, "unload a model from a running server"},
    {"bench", cmd_bench, "measure prefill and decode speed, load time, time to first token and memory"},
    {"create", cmd_create, "make a model of the store from a Modelfile (Ollama's grammar)"},
    {"list", cmd_list, "list the store's models and Ollama's (also: ls)"},
    {"ls", cmd_list, NULL},
    {"show", cmd_show, "show a stored model's details, Modelfile, parameters, template, system or license"},
    {"cp", cmd_cp, "give a stored model another name"},
    {"rm", cmd_rm, "delete stored models (and the blobs no other model uses)"},
    {"info", cmd_info, "show a GGUF model's architecture, sizes, tokenizer and tensors"},
    {"embed", cmd_embed, "turn texts into embedding vectors (pooled hidden states)"},
    {"tokenize", cmd_tokenize, "turn text into token ids with a model's own vocabulary"},
    {"template", cmd_template, "render a chat template (the model's, a file's or a built-in) for a conversation"},
};

static void usage(FILE *out) {
    fprintf(out, "sprout %s: GGUF in, tokens out\n\nusage: sprout COMMAND [options]\n\ncommands:\n", sprout_version());
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (commands[i].summary) fprintf(out, "  %-11s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\nsprout COMMAND --help shows the options of a command.\n");
}

int main(int argc, char **argv) {
    cli_log_install(); /* quiet (warnings and errors) until a command's -v or --log-disable says otherwise */
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("sprout %s\n", sprout_version());
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name)) return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "sprout: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return 2;
}
