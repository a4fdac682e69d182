/* The model and sampling options shared by `run` and `chat`. */
#ifndef SPROUT_CLI_GEN_OPTIONS_H
#define SPROUT_CLI_GEN_OPTIONS_H

#include <stdbool.h>

#include "sprout.h"

enum { MAX_STOP_STRINGS = 16 };

typedef struct gen_options {
    const char *model;
    int32_t n_ctx, n_threads;
    sprout_kv_type kv_type;
    bool kv_type_set;
    sprout_generation_config cfg;
    const char *stops[MAX_STOP_STRINGS];
} gen_options;

void gen_options_init(gen_options *o);
/* Consumes argv[*i] (and its value) if it is a shared option. Returns 1 if
 * it was, 0 if not, -1 (after printing why) if its value is bad. */
int gen_options_parse(gen_options *o, int argc, char **argv, int *i);
const char *gen_options_help(void);

/* A whole decimal number in [lo, hi]; false for anything else. */
bool cli_parse_int(const char *s, long lo, long hi, int32_t *out);

/* Loads the model and creates a pipeline as the options say. */
sprout_status gen_options_open(const gen_options *o, sprout_model **model, sprout_pipeline **pipeline);

#endif
