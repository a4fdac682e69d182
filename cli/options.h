/* The CLI's options, each defined once in a table: its spellings, the kind
 * and range of its value, one help line and where the value goes. The flags
 * several commands share (model, threads, context, sampling, KV cache type,
 * logging) live in one table; a command names the groups it takes and adds a
 * table of its own. Parsing and --help both read the tables, so a flag's
 * range, spelling and help can no longer differ from one command to the
 * next. */
#ifndef SPROUT_CLI_OPTIONS_H
#define SPROUT_CLI_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "sprout.h"

typedef enum cli_kind {
    CLI_FLAG,   /* no value: sets a bool to true */
    CLI_INT,    /* int32_t in [min, max] */
    CLI_FLOAT,  /* float in [min, max] */
    CLI_STRING, /* const char *, the argv string itself */
    CLI_ENUM,   /* int: the value of the named choice */
    CLI_CUSTOM, /* parse(value, destination) decides */
    CLI_CUSTOM2 /* two values (value names both: "FILE SCALE"): parse2(first, second, destination) decides */
} cli_kind;

typedef struct cli_choice {
    const char *name;
    int value;
} cli_choice;

/* Parses value into dst; on failure writes why (after "FLAG VALUE: ") and returns false. */
typedef bool (*cli_parse_fn)(const char *value, void *dst, char *why, size_t why_size);
typedef bool (*cli_parse2_fn)(const char *first, const char *second, void *dst, char *why, size_t why_size);

typedef struct cli_option {
    const char *names;          /* every spelling, ", "-separated, as --help shows them: "-t, --threads" */
    const char *value;          /* the value's name in --help ("N"); NULL for CLI_FLAG */
    cli_kind kind;
    size_t offset;              /* of the destination in the struct the table fills */
    double min, max;            /* CLI_INT, CLI_FLOAT */
    const cli_choice *choices;  /* CLI_ENUM: ends with a NULL name */
    cli_parse_fn parse;         /* CLI_CUSTOM */
    const char *help;
    unsigned group;             /* shared options: the CLI_SHARED_* bit a command names to take it */
    cli_parse2_fn parse2;       /* CLI_CUSTOM2 */
} cli_option;

/* A command's own options (no group). */
#define CLI_OPT_FLAG(names, offset, help) {names, NULL, CLI_FLAG, offset, 0, 0, NULL, NULL, help, 0, NULL}
#define CLI_OPT_STRING(names, value, offset, help) {names, value, CLI_STRING, offset, 0, 0, NULL, NULL, help, 0, NULL}
#define CLI_OPT_INT(names, value, offset, lo, hi, help) {names, value, CLI_INT, offset, lo, hi, NULL, NULL, help, 0, NULL}
#define CLI_OPT_CUSTOM(names, value, offset, parse, help) {names, value, CLI_CUSTOM, offset, 0, 0, NULL, parse, help, 0, NULL}

/* Groups of the shared table, to be or-ed into cli_command.shared. */
enum {
    CLI_SHARED_MODEL = 1u << 0,    /* -m */
    CLI_SHARED_THREADS = 1u << 1,  /* -t */
    CLI_SHARED_CTX = 1u << 2,      /* -c */
    CLI_SHARED_BATCH = 1u << 3,    /* -b */
    CLI_SHARED_PREDICT = 1u << 4,  /* -n, --min-new-tokens */
    CLI_SHARED_SAMPLING = 1u << 5, /* --temp ... --seed, --stop, --ignore-eos, --json-mode */
    CLI_SHARED_KV = 1u << 6,       /* -ctk, --cache-type-k and its other spellings */
    CLI_SHARED_LOG = 1u << 7,      /* -v, --log-disable: every command takes them */
    CLI_SHARED_LORA = 1u << 8,     /* --lora, --lora-scaled */
    CLI_SHARED_ASSIST = 1u << 9,   /* -md, --draft-max ..., --lookup: assisted generation */
    CLI_SHARED_STRUCTURED = 1u << 10, /* --grammar(-file), --json-schema(-file): structured output */
    CLI_SHARED_STORE = 1u << 11,   /* --models (CLI_SHARED_MODEL takes it too): the store's verbs */
    /* what a generating command (run, chat) takes: a pipeline's and a generation's settings */
    CLI_SHARED_GENERATION = CLI_SHARED_MODEL | CLI_SHARED_THREADS | CLI_SHARED_CTX | CLI_SHARED_BATCH | CLI_SHARED_PREDICT |
                            CLI_SHARED_SAMPLING | CLI_SHARED_KV | CLI_SHARED_LORA | CLI_SHARED_ASSIST | CLI_SHARED_STRUCTURED,
};

enum { CLI_MAX_STOP = 16, CLI_MAX_ARGS = 8, CLI_MAX_LORA = 16 };

/* cli_common.kv_type while cli_parse has seen no KV flag */
#define CLI_KV_UNSET ((sprout_kv_type)-1)
/* The per-side fields of a params struct from a cli_common pointer (its
 * kv_type and kv_type_set go beside them). */
#define CLI_KV_SIDES(c)                                                                                                      \
    .cache_type_k = (c)->cache_type_k, .cache_type_k_set = (c)->cache_type_k_set, .cache_type_v = (c)->cache_type_v, \
    .cache_type_v_set = (c)->cache_type_v_set

typedef struct cli_stops {
    const char *text[CLI_MAX_STOP];
    size_t n;
} cli_stops;

/* The adapters --lora and --lora-scaled name, in order, and once
 * cli_open_pipeline has loaded them, the adapters themselves. */
typedef struct cli_loras {
    const char *path[CLI_MAX_LORA];
    float scale[CLI_MAX_LORA];
    sprout_lora *loaded[CLI_MAX_LORA];
    size_t n;
} cli_loras;

/* The shared options' values. Zero means "not given": the library's default. */
typedef struct cli_common {
    const char *model;
    int32_t n_threads, n_ctx, n_batch;
    sprout_generation_config cfg; /* sampling and -n; cfg.stop_strings points at stops */
    cli_stops stops;
    cli_loras loras;
    /* assisted generation: the draft model's file (and, once open, the
     * draft itself), --lookup's proposals */
    const char *draft_path;
    sprout_model *draft_model;
    sprout_pipeline *draft;
    int32_t lookup;
    /* --grammar-file and --json-schema-file; once parsed, cfg.grammar and
     * cfg.json_schema point at the files' texts (owned) */
    const char *grammar_file, *schema_file;
    char *structured_texts[2];
    sprout_kv_type kv_type; /* --kv-type (both sides); f16 when not given */
    bool kv_type_set;       /* whether it was given */
    /* -ctk, -ctv: each side's type once parsed (its flag, else kv_type),
     * and whether its own flag was given */
    sprout_kv_type cache_type_k, cache_type_v;
    bool cache_type_k_set, cache_type_v_set;
    bool verbose, log_disable;
    /* --models: the store -m names are looked up in; the model -m named
     * when it is one of the store's (-m is then its file) */
    const char *models_dir;
    const sprout_store_model *stored;
    const char *args[CLI_MAX_ARGS]; /* positional arguments */
    int n_args;
} cli_common;

typedef struct cli_command {
    const char *name;            /* "run" */
    const char *usage;           /* after "usage: sprout ": "run -m MODEL.gguf -p PROMPT [options]" */
    const char *about;           /* lines printed before the options (NULL: none) */
    unsigned shared;             /* CLI_SHARED_* groups it takes (CLI_SHARED_LOG is always added) */
    const cli_option *options;   /* its own, filling the struct cli_parse's `own` points at */
    size_t n_options;
    int max_args;                /* positional arguments it takes */
    bool needs_model;            /* -m is required: cli_parse says so */
} cli_command;

/* .options and .n_options of a cli_command from a table (an array). */
#define CLI_TABLE(table) .options = (table), .n_options = sizeof(table) / sizeof *(table)

enum { CLI_CONTINUE = -1 };

/* Parses argv (argv[0] is the command's name) into common and own. Returns
 * CLI_CONTINUE, or the exit status when the command should end now: 0
 * after --help (printed to stdout), 2 after a usage error (said on stderr,
 * naming the flag and, for a number, its range). On success kv_type_set
 * says whether a KV flag was given and the log level is set. */
int cli_parse(const cli_command *cmd, cli_common *common, void *own, int argc, char **argv);
/* "usage: sprout ..." and a pointer to --help, on stderr; returns 2. */
int cli_usage_error(const cli_command *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A tensor type sprout can write ("Q8_0", "f16"), as an int32_t sprout_type: a cli_parse_fn for
 * the commands that convert tensors (quantize, export-lora). */
bool cli_parse_tensor_type(const char *value, void *dst, char *why, size_t why_size);

/* The stderr logger main installs, and the levels -v and --log-disable choose. */
void cli_log_install(void);
/* A line of the CLI's own at `level`, shown as the library's are. */
void cli_log(sprout_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Loads the model (-m) as the shared options say: threads, context, KV type. */
sprout_status cli_load_model(const cli_common *c, sprout_model **model);
/* Loads the model, the adapters and creates a pipeline that applies them,
 * as the shared options say. */
sprout_status cli_open_pipeline(cli_common *c, sprout_model **model, sprout_pipeline **pipeline);
/* Frees what cli_open_pipeline made (any may be NULL). */
void cli_close_pipeline(cli_common *c, sprout_model *model, sprout_pipeline *pipeline);
/* When a generation stopped because the context filled (not at -n): says
 * so on stderr, prefixed by `who`, and how --context-shift goes on.
 * Returns whether it did. */
bool cli_note_context_filled(const char *who, const sprout_pipeline *p, const sprout_generation_config *cfg, const sprout_result *r);
/* "f16" or "f32". */
const char *cli_kv_type_name(sprout_kv_type t);

#endif
