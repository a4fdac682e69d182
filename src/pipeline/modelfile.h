/* Ollama's Modelfile: its instructions parsed into one struct, and its
 * PARAMETER lines mapped onto a generation config. Pure parsing: the text
 * comes in, nothing is read or loaded (FROM and ADAPTER stay names). */
#ifndef SPROUT_PIPELINE_MODELFILE_H
#define SPROUT_PIPELINE_MODELFILE_H

#include <stddef.h>
#include <stdint.h>

#include "sprout.h"

typedef struct sp_modelfile_param {
    char *name;  /* as written, e.g. "temperature" */
    char *value; /* unquoted */
    int line;    /* of the PARAMETER instruction, for error messages */
} sp_modelfile_param;

typedef struct sp_modelfile_message {
    char *role; /* "system", "user" or "assistant" (lower case) */
    char *content;
} sp_modelfile_message;

typedef struct sp_modelfile {
    char *from;             /* required */
    int from_line;          /* of FROM, for errors about what it names */
    char *template_text;    /* NULL when absent; the last TEMPLATE wins */
    char *system;           /* NULL when absent; the last SYSTEM wins */
    char **adapters;        /* in order */
    int *adapter_lines;     /* adapters[i]'s line */
    size_t n_adapters;
    char **licenses;        /* in order */
    size_t n_licenses;
    sp_modelfile_message *messages;
    size_t n_messages;
    sp_modelfile_param *params; /* in order, repeats kept (stop, stop_id) */
    size_t n_params;
    /* Storage sp_modelfile_apply_parameters points a config into; sized
     * when parsing, so the stop lists live as long as the struct. */
    const char **stop_strings;
    size_t n_stop_strings;
    int32_t *stop_token_ids;
    size_t n_stop_token_ids;
} sp_modelfile;

/* The Modelfile settings that are not a generation's: a runner's. Only the
 * ones the Modelfile names are written; the caller sets the rest. */
typedef struct sp_modelfile_runner {
    int32_t num_ctx, num_thread, num_batch, num_keep;
} sp_modelfile_runner;

/* Parses `len` bytes of Modelfile text. Instructions are case-insensitive;
 * `#` starts a comment where an instruction could start; a value is the
 * rest of the line, or "..." (\" and \\ escaped), or """...""" (verbatim),
 * both of which may span lines. On error *out is NULL and the message is
 * "Modelfile:LINE: what" (SPROUT_ERR_FORMAT). */
sprout_status sp_modelfile_parse(const char *text, size_t len, sp_modelfile **out);

/* NULL-safe. */
void sp_modelfile_free(sp_modelfile *mf);

/* Sets `cfg` from the PARAMETER lines, in order (a later line wins, stop
 * and stop_id accumulate): Ollama's num_predict, temperature, top_k, top_p,
 * min_p, typical_p, repeat_penalty, repeat_last_n, presence_penalty,
 * frequency_penalty, seed, stop, and sprout's max_new_token and stop_id.
 * num_ctx, num_thread, num_batch and num_keep go to `runner` (checked and
 * dropped when it is NULL). cfg's stop lists point into `mf`, so it must
 * outlive their use. An unknown name or a bad value is SPROUT_ERR_FORMAT
 * naming the line, and leaves cfg and runner as they were. */
sprout_status sp_modelfile_apply_parameters(const sp_modelfile *mf, sprout_generation_config *cfg,
                                            sp_modelfile_runner *runner);

#endif
