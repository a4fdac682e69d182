/* What -m names: a GGUF file when a file of that path exists, else a model
 * of the store (--models DIR, $SPROUT_MODELS, and Ollama's store read
 * only). cli_parse sends every command's -m through here. */
#ifndef SPROUT_CLI_MODEL_REF_H
#define SPROUT_CLI_MODEL_REF_H

#include <stdbool.h>

#include "sprout.h"

/* -m's and --models' values in argv, as the option parser will read them. */
void cli_model_ref_scan(int argc, char **argv, const char **model, const char **models_dir);

/* When `model` is no file, resolves it in the store and applies its
 * PARAMETERs to cfg and runner (before the flags are parsed, so that they
 * override these defaults). *out: the model (kept until exit: cfg's stop
 * lists point into it), or NULL for a file. False after saying on stderr
 * why (a name no store has: the close names). */
bool cli_model_ref_resolve(const char *cmd_name, const char *model, const char *models_dir,
                           sprout_generation_config *cfg, sprout_runner_settings *runner,
                           const sprout_store_model **out);

/* A chat's messages for a model of the store, as JSON text (malloc'd):
 * the system message (`system`, else the model's SYSTEM), the model's
 * MESSAGE lines, then the user's. NULL when out of memory. */
char *cli_model_ref_messages(const sprout_store_model *m, const char *system, const char *user);

/* Opens the store as --models and the environment say; prints why not. */
sprout_store *cli_store_open(const char *cmd_name, const char *models_dir);

#endif
