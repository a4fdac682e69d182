/* sprout create NAME -f Modelfile: a model of the store from a Modelfile,
 * with Ollama's status lines as it goes. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "files.h"
#include "model_ref.h"
#include "options.h"
#include "sprout.h"

typedef struct create_options {
    const char *file, *quantize;
    bool copy;
} create_options;

#define OWN(field) offsetof(create_options, field)
static const cli_option create_table[] = {
    CLI_OPT_STRING("-f, --file", "FILE", OWN(file), "the Modelfile (default: ./Modelfile; - reads standard input)"),
    CLI_OPT_STRING("-q, --quantize", "TYPE", OWN(quantize), "quantize the model into a new blob (Q4_K_M, Q8_0, ...)"),
    CLI_OPT_FLAG("--copy", OWN(copy), "copy a local GGUF into the store (default: a hard link, else a reference)"),
};

static const cli_command create_command = {
    .name = "create",
    .usage = "create NAME [-f Modelfile] [--quantize TYPE] [--copy]",
    .about = "Paths in the Modelfile start at its folder. FROM takes a GGUF path, a model's name or a sha256: blob.\n",
    .shared = CLI_SHARED_STORE,
    .max_args = 1,
    CLI_TABLE(create_table),
};

static bool print_status(const char *status, void *user) {
    const char **last = user;
    /* the quantizer reports every slice: one line for all of them */
    if (*last && !strcmp(*last, "quantizing") && !strcmp(status, "quantizing")) return true;
    printf("%s\n", status);
    fflush(stdout);
    *last = !strcmp(status, "quantizing") ? "quantizing" : NULL;
    return true;
}

int cmd_create(int argc, char **argv) {
    cli_common o;
    create_options co = {0};
    const int status = cli_parse(&create_command, &o, &co, argc, argv);
    if (status != CLI_CONTINUE) return status;
    if (o.n_args != 1) return cli_usage_error(&create_command, "name the model to create");
    const char *file = co.file ? co.file : "Modelfile";
    size_t len = 0;
    char *text = !strcmp(file, "-") ? cli_read_stream(stdin, &len) : cli_read_file(file, &len);
    if (!text) {
        fprintf(stderr, "sprout create: cannot read %s\n", file);
        return 1;
    }
    char *base = strdup(file);
    char *slash = base ? strrchr(base, '/') : NULL;
    if (slash) *slash = '\0';
    sprout_store *s = cli_store_open("create", o.models_dir);
    const char *last = NULL;
    sprout_store_create_params p = {sizeof p, slash ? (*base ? base : "/") : NULL, co.copy, co.quantize, print_status, &last};
    sprout_status st = s ? sprout_store_create(s, o.args[0], text, len, &p) : SPROUT_ERR_IO;
    if (s && st != SPROUT_OK) fprintf(stderr, "sprout create: %s\n", sprout_last_error());
    sprout_store_free(s);
    free(base);
    free(text);
    return st == SPROUT_OK ? 0 : 1;
}
