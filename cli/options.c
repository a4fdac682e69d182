#include "options.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "files.h"
#include "model_ref.h"

#define CLI_STR_(x) #x
#define CLI_STR(x) CLI_STR_(x)

/* --- the shared table ------------------------------------------------------------------- */

static bool parse_seed(const char *value, void *dst, char *why, size_t why_size) {
    char *end;
    errno = 0;
    const unsigned long long s = strtoull(value, &end, 10);
    if (errno || end == value || *end || *value == '-') {
        snprintf(why, why_size, "must be a whole number from 0 to %llu", (unsigned long long)UINT64_MAX);
        return false;
    }
    *(uint64_t *)dst = s;
    return true;
}

static bool parse_stop(const char *value, void *dst, char *why, size_t why_size) {
    cli_stops *s = dst;
    if (s->n == CLI_MAX_STOP) {
        snprintf(why, why_size, "at most %d stop strings", CLI_MAX_STOP);
        return false;
    }
    s->text[s->n++] = value;
    return true;
}

static bool add_lora(cli_loras *l, const char *path, float scale, char *why, size_t why_size) {
    if (l->n == CLI_MAX_LORA) {
        snprintf(why, why_size, "at most %d adapters", CLI_MAX_LORA);
        return false;
    }
    l->path[l->n] = path;
    l->scale[l->n++] = scale;
    return true;
}

static bool parse_lora(const char *value, void *dst, char *why, size_t why_size) { return add_lora(dst, value, 1.f, why, why_size); }

static bool parse_lora_scaled(const char *path, const char *scale, void *dst, char *why, size_t why_size) {
    char *end;
    errno = 0;
    const float v = strtof(scale, &end);
    if (errno || end == scale || *end || !isfinite(v)) {
        snprintf(why, why_size, "the scale '%s' is not a number", scale);
        return false;
    }
    return add_lora(dst, path, v, why, why_size);
}

/* --cache-type-k, --cache-type-v, --kv-type (both): a KV cache type by
 * llama.cpp's name. */
static bool parse_kv_type(const char *value, void *dst, char *why, size_t why_size) {
    if (sprout_kv_type_from_name(value, dst) == SPROUT_OK) return true;
    snprintf(why, why_size, "must be f32, f16, bf16, q8_0 or q4_0");
    return false;
}

/* --dry-sequence-breaker, as llama.cpp's: the first one given replaces the
 * four defaults; "none" leaves no breakers. Kept in a static list (one
 * parse per process). */
enum { CLI_MAX_BREAKERS = 16 };
static const char *dry_breakers[CLI_MAX_BREAKERS];

static bool parse_dry_breaker(const char *value, void *dst, char *why, size_t why_size) {
    sprout_generation_config *cfg = dst;
    if (cfg->dry_sequence_breakers != dry_breakers) { /* the first: the defaults go */
        cfg->dry_sequence_breakers = dry_breakers;
        cfg->n_dry_sequence_breakers = 0;
    }
    if (!strcmp(value, "none")) {
        cfg->n_dry_sequence_breakers = 0;
        return true;
    }
    if (!*value) {
        snprintf(why, why_size, "must not be empty (\"none\": no breakers)");
        return false;
    }
    if (cfg->n_dry_sequence_breakers == CLI_MAX_BREAKERS) {
        snprintf(why, why_size, "at most %d sequence breakers", CLI_MAX_BREAKERS);
        return false;
    }
    dry_breakers[cfg->n_dry_sequence_breakers++] = value;
    return true;
}

/* llama.cpp's sampler names (common_sampler_types_from_names, with its
 * other spellings) and --sampling-seq letters, for a usage error before
 * the model loads; the library reads the text itself. */
static const char *const sampler_names[] = {"penalties", "dry",   "top_n_sigma", "top_k", "typ_p",   "top_p",  "min_p",     "xtc",
                                            "temperature", "top-k", "top-p",       "nucleus", "top-n-sigma", "typical-p", "typical",
                                            "typ-p",     "typ",   "min-p",       "temp"};
static const char sampler_letters[] = "edskypmxt"; /* the first nine names' letters, in order */

static bool parse_samplers(const char *value, void *dst, char *why, size_t why_size) {
    size_t n = 0;
    for (const char *p = value; *p;) {
        const size_t len = strcspn(p, ";,");
        bool known = len == 0;
        for (size_t k = 0; !known && k < sizeof sampler_names / sizeof *sampler_names; k++)
            known = strlen(sampler_names[k]) == len && !strncmp(sampler_names[k], p, len);
        if (!known) {
            snprintf(why, why_size, "'%.*s' is no sampler (penalties, dry, top_n_sigma, top_k, typ_p, top_p, min_p, xtc, temperature)",
                     (int)(len > 40 ? 40 : len), p);
            return false;
        }
        n += len > 0;
        p += len;
        if (*p) p++;
    }
    if (!n) {
        snprintf(why, why_size, "names no sampler");
        return false;
    }
    *(const char **)dst = value;
    return true;
}

/* --sampling-seq: the letters turned into names, so that the library
 * never reads "temp" as a name. */
static char sampling_seq[16 * 16];

static bool parse_sampling_seq(const char *value, void *dst, char *why, size_t why_size) {
    size_t at = 0;
    if (!*value || strlen(value) > 16) {
        snprintf(why, why_size, "must be 1 to 16 of the letters %s", sampler_letters);
        return false;
    }
    for (const char *p = value; *p; p++) {
        const char *hit = strchr(sampler_letters, *p);
        if (!hit) {
            snprintf(why, why_size, "'%c' is no sampler's letter (%s)", *p, sampler_letters);
            return false;
        }
        at += (size_t)snprintf(sampling_seq + at, sizeof sampling_seq - at, "%s%s", at ? ";" : "", sampler_names[hit - sampler_letters]);
    }
    *(const char **)dst = sampling_seq;
    return true;
}

#define COMMON(field) offsetof(cli_common, field)
#define CFG(field) (offsetof(cli_common, cfg) + offsetof(sprout_generation_config, field))

/* Ranges: what the library can hold (threads: the pool's limit; context and
 * batch: the 2^24 cells a KV cache may have; a context of at least 2, as
 * pipelines and schedulers ask), or what the value means (a probability is
 * 0 to 1). */
static const cli_option shared_options[] = {
    {"-m, --model", "FILE|NAME", CLI_STRING, COMMON(model), 0, 0, NULL, NULL, "the GGUF model, or a model of the store by name",
     CLI_SHARED_MODEL, NULL},
    {"--models", "DIR", CLI_STRING, COMMON(models_dir), 0, 0, NULL, NULL, "the model store (default: $SPROUT_MODELS, else "
     "~/.local/share/sprout/models; Ollama's is read too)", CLI_SHARED_MODEL | CLI_SHARED_STORE, NULL},
    {"-t, --threads", "N", CLI_INT, COMMON(n_threads), 1, SPROUT_MAX_THREADS, NULL, NULL,
     "threads (default: one per core, at most " CLI_STR(SPROUT_MAX_THREADS) ")", CLI_SHARED_THREADS, NULL},
    {"-c, --ctx-size, --ctx", "N", CLI_INT, COMMON(n_ctx), 2, 1 << 24, NULL, NULL, "context length (default: the model's, at most 4096)",
     CLI_SHARED_CTX, NULL},
    {"-b, --batch-size", "N", CLI_INT, COMMON(n_batch), 1, 1 << 24, NULL, NULL, "prompt tokens per forward pass (default 512)",
     CLI_SHARED_BATCH, NULL},
    {"-n, --n-predict, --predict", "N", CLI_INT, CFG(max_new_tokens), 0, 1 << 24, NULL, NULL, "tokens to generate at most (default 256)",
     CLI_SHARED_PREDICT, NULL},
    {"--min-new-tokens", "N", CLI_INT, CFG(min_new_tokens), 0, 1 << 24, NULL, NULL, "generate at least N tokens", CLI_SHARED_PREDICT, NULL},
    {"--temp", "T", CLI_FLOAT, CFG(temperature), 0, 100, NULL, NULL, "temperature; 0 is greedy (default 0.8)", CLI_SHARED_SAMPLING, NULL},
    {"--top-k", "K", CLI_INT, CFG(top_k), 0, 1 << 30, NULL, NULL, "draw from the K most likely tokens; 0: all (default 40)", CLI_SHARED_SAMPLING, NULL},
    {"--top-p", "P", CLI_FLOAT, CFG(top_p), 0, 1, NULL, NULL, "draw from the most likely tokens holding P of the mass; 1: off (default 0.95)",
     CLI_SHARED_SAMPLING, NULL},
    {"--min-p", "P", CLI_FLOAT, CFG(min_p), 0, 1, NULL, NULL, "drop tokens below P times the best one's probability; 0: off (default 0.05)",
     CLI_SHARED_SAMPLING, NULL},
    {"--repeat-penalty", "R", CLI_FLOAT, CFG(repetition_penalty), 0.01, 100, NULL, NULL, "divide repeated tokens' logits by R; 1: off (default)",
     CLI_SHARED_SAMPLING, NULL},
    {"--repeat-last-n", "N", CLI_INT, CFG(repeat_last_n), -1, 1 << 24, NULL, NULL, "tokens the penalties look back at; -1: all (default 64)",
     CLI_SHARED_SAMPLING, NULL},
    {"--presence-penalty", "X", CLI_FLOAT, CFG(presence_penalty), -100, 100, NULL, NULL, "subtracted from tokens already seen (default 0)",
     CLI_SHARED_SAMPLING, NULL},
    {"--frequency-penalty", "X", CLI_FLOAT, CFG(frequency_penalty), -100, 100, NULL, NULL, "subtracted once per time a token was seen (default 0)",
     CLI_SHARED_SAMPLING, NULL},
    {"-s, --seed", "S", CLI_CUSTOM, CFG(seed), 0, 0, NULL, parse_seed, "random seed: the same seed, the same text (default 42)",
     CLI_SHARED_SAMPLING, NULL},
    {"--typical", "P", CLI_FLOAT, CFG(typical_p), 0, 1, NULL, NULL,
     "locally typical sampling: keep the tokens whose surprisal is nearest the entropy, up to mass P; 1: off (default)",
     CLI_SHARED_SAMPLING, NULL},
    {"--mirostat", "N", CLI_INT, CFG(mirostat), 0, 2, NULL, NULL,
     "Mirostat 1 or 2 (2.0) instead of the chain (only logit bias and temperature stay); 0: off (default)", CLI_SHARED_SAMPLING, NULL},
    {"--mirostat-lr", "ETA", CLI_FLOAT, CFG(mirostat_eta), 0, 10, NULL, NULL, "Mirostat's learning rate (default 0.1)", CLI_SHARED_SAMPLING,
     NULL},
    {"--mirostat-ent", "TAU", CLI_FLOAT, CFG(mirostat_tau), 0, 100, NULL, NULL, "Mirostat's target entropy in bits (default 5)",
     CLI_SHARED_SAMPLING, NULL},
    {"--dry-multiplier", "X", CLI_FLOAT, CFG(dry_multiplier), 0, 1000, NULL, NULL,
     "DRY: a token extending a repeat of N >= allowed-length tokens loses X * base^(N - allowed-length); 0: off (default)",
     CLI_SHARED_SAMPLING, NULL},
    {"--dry-base", "B", CLI_FLOAT, CFG(dry_base), 0, 100, NULL, NULL, "DRY's base (default 1.75; below 1: off)", CLI_SHARED_SAMPLING, NULL},
    {"--dry-allowed-length", "N", CLI_INT, CFG(dry_allowed_length), 0, 1 << 24, NULL, NULL, "DRY leaves repeats this short alone (default 2)",
     CLI_SHARED_SAMPLING, NULL},
    {"--dry-penalty-last-n", "N", CLI_INT, CFG(dry_penalty_last_n), -1, 1 << 24, NULL, NULL,
     "tokens DRY looks back at; -1: the context (default); 0: off", CLI_SHARED_SAMPLING, NULL},
    {"--dry-sequence-breaker", "TEXT", CLI_CUSTOM, COMMON(cfg), 0, 0, NULL, parse_dry_breaker,
     "repeats never reach back past TEXT; repeatable, the first replaces the defaults (\\n : \" *); none: no breakers",
     CLI_SHARED_SAMPLING, NULL},
    {"--xtc-probability", "P", CLI_FLOAT, CFG(xtc_probability), 0, 1, NULL, NULL,
     "XTC: with chance P, drop the tokens above the threshold but the least likely of them; 0: off (default)", CLI_SHARED_SAMPLING, NULL},
    {"--xtc-threshold", "T", CLI_FLOAT, CFG(xtc_threshold), 0, 1, NULL, NULL, "XTC's threshold (default 0.1; above 0.5: off)",
     CLI_SHARED_SAMPLING, NULL},
    {"--top-nsigma, --top-n-sigma", "N", CLI_FLOAT, CFG(top_n_sigma), -1, 1000, NULL, NULL,
     "keep the logits within N standard deviations of the best; <= 0: off (default -1)", CLI_SHARED_SAMPLING, NULL},
    {"--samplers", "LIST", CLI_CUSTOM, CFG(samplers), 0, 0, NULL, parse_samplers,
     "the chain's order, names split by ';' (default penalties;dry;top_n_sigma;top_k;typ_p;top_p;min_p;xtc;temperature)",
     CLI_SHARED_SAMPLING, NULL},
    {"--sampling-seq, --sampler-seq", "SEQ", CLI_CUSTOM, CFG(samplers), 0, 0, NULL, parse_sampling_seq,
     "the chain's order as letters (default edskypmxt)", CLI_SHARED_SAMPLING, NULL},
    {"--stop", "TEXT", CLI_CUSTOM, COMMON(stops), 0, 0, NULL, parse_stop, "stop at this text (repeatable)",
     CLI_SHARED_SAMPLING, NULL},
    {"--ignore-eos", NULL, CLI_FLAG, CFG(ignore_eos), 0, 0, NULL, NULL, "do not stop at end-of-generation tokens", CLI_SHARED_SAMPLING, NULL},
    {"--context-shift", NULL, CLI_FLAG, CFG(context_shift), 0, 0, NULL, NULL,
     "when the context fills, keep the first --keep tokens, drop half of the rest and go on (llama.cpp's); off: stop there",
     CLI_SHARED_SAMPLING, NULL},
    {"--keep", "N", CLI_INT, CFG(n_keep), -1, 1 << 24, NULL, NULL,
     "context shift keeps the prompt's first N tokens (and its BOS); -1: the whole prompt (default 0)", CLI_SHARED_SAMPLING, NULL},
    {"--json-mode", NULL, CLI_FLAG, CFG(json_object), 0, 0, NULL, NULL, "the output is one JSON object (only tokens that keep it valid are drawn)",
     CLI_SHARED_SAMPLING, NULL},
    {"--grammar", "GBNF", CLI_STRING, CFG(grammar), 0, 0, NULL, NULL,
     "the output is a text of this grammar (llama.cpp's GBNF, start rule root); only tokens that keep it so are drawn (serve: "
     "for every request that brings no grammar, schema or JSON mode of its own)",
     CLI_SHARED_STRUCTURED, NULL},
    {"--grammar-file", "FILE", CLI_STRING, COMMON(grammar_file), 0, 0, NULL, NULL, "the grammar from a file", CLI_SHARED_STRUCTURED, NULL},
    {"-j, --json-schema", "SCHEMA", CLI_STRING, CFG(json_schema), 0, 0, NULL, NULL,
     "the output is JSON valid against this JSON Schema (text); a keyword sprout cannot enforce is an error",
     CLI_SHARED_STRUCTURED, NULL},
    {"-jf, --json-schema-file", "FILE", CLI_STRING, COMMON(schema_file), 0, 0, NULL, NULL, "the JSON Schema from a file",
     CLI_SHARED_STRUCTURED, NULL},
    {"-ctk, --cache-type-k", "T", CLI_CUSTOM, COMMON(cache_type_k), 0, 0, NULL, parse_kv_type,
     "KV cache type of the keys: f16 (default), f32, bf16, q8_0 or q4_0 (q8_0/q4_0: heads of a multiple of 32)", CLI_SHARED_KV, NULL},
    {"-ctv, --cache-type-v", "T", CLI_CUSTOM, COMMON(cache_type_v), 0, 0, NULL, parse_kv_type,
     "KV cache type of the values (the same choices)", CLI_SHARED_KV, NULL},
    {"--kv-type", "T", CLI_CUSTOM, COMMON(kv_type), 0, 0, NULL, parse_kv_type, "KV cache type of keys and values both", CLI_SHARED_KV, NULL},
    {"--lora", "FILE", CLI_CUSTOM, COMMON(loras), 0, 0, NULL, parse_lora, "apply a LoRA adapter (GGUF) at scale 1; repeatable",
     CLI_SHARED_LORA, NULL},
    {"--lora-scaled", "FILE SCALE", CLI_CUSTOM2, COMMON(loras), 0, 0, NULL, NULL, "apply a LoRA adapter at SCALE; repeatable",
     CLI_SHARED_LORA, parse_lora_scaled},
    {"-md, --model-draft", "FILE", CLI_STRING, COMMON(draft_path), 0, 0, NULL, NULL,
     "speculative decoding: a small model of the same vocabulary proposes, the model checks (output unchanged)", CLI_SHARED_ASSIST, NULL},
    {"--draft-max, --draft, --draft-n", "N", CLI_INT, CFG(num_assistant_tokens), 1, 1024, NULL, NULL,
     "tokens proposed per pass at most (default 16; with --lookup, its N)", CLI_SHARED_ASSIST, NULL},
    {"--draft-min", "N", CLI_INT, CFG(min_assistant_tokens), 0, 1024, NULL, NULL, "fewer proposals than N are not checked (default 0)",
     CLI_SHARED_ASSIST, NULL},
    {"--draft-p-min", "P", CLI_FLOAT, CFG(assistant_confidence_threshold), 0, 1, NULL, NULL,
     "the draft stops at a token it gives less probability than P (default 0.75)", CLI_SHARED_ASSIST, NULL},
    {"--lookup", "N", CLI_INT, COMMON(lookup), 1, 1024, NULL, NULL,
     "prompt-lookup decoding: propose up to N tokens that followed the text's last n-gram before (output unchanged)", CLI_SHARED_ASSIST,
     NULL},
    {"--lookup-ngram", "N", CLI_INT, CFG(max_ngram_size), 1, 64, NULL, NULL, "prompt lookup: the longest n-gram matched (default 3)",
     CLI_SHARED_ASSIST, NULL},
    {"-v, --verbose", NULL, CLI_FLAG, COMMON(verbose), 0, 0, NULL, NULL, "log informational and debug lines too (default: warnings and errors)",
     CLI_SHARED_LOG, NULL},
    {"--log-disable", NULL, CLI_FLAG, COMMON(log_disable), 0, 0, NULL, NULL, "log nothing (errors that end the command are still said)",
     CLI_SHARED_LOG, NULL},
};

/* --- values of a command's own options -------------------------------------------------- */

bool cli_parse_tensor_type(const char *s, void *dst, char *why, size_t why_size) {
    sprout_type t;
    if (!sprout_type_from_name(s, &t) || !sprout_type_can_dequantize(t) || t == SPROUT_TYPE_Q8_K) {
        snprintf(why, why_size, "must be a tensor type sprout can write (F32, F16, BF16, Q4_0 ... Q6_K)");
        return false;
    }
    *(int32_t *)dst = (int32_t)t;
    return true;
}

/* --- the logger ------------------------------------------------------------------------- */

/* Lines above this level are dropped; -1 drops all. Set once, by cli_parse, before any other thread starts. */
static int log_threshold = SPROUT_LOG_WARN;

static void log_to_stderr(sprout_log_level level, const char *message, void *user) {
    (void)user;
    if ((int)level > log_threshold) return;
    static const char *const prefix[] = {"error: ", "warning: ", "", ""};
    fprintf(stderr, "sprout: %s%s\n", (unsigned)level < 4 ? prefix[level] : "", message);
}

void cli_log_install(void) { sprout_log_set(log_to_stderr, NULL); }

void cli_log(sprout_log_level level, const char *fmt, ...) {
    if ((int)level > log_threshold) return;
    char message[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    log_to_stderr(level, message, NULL);
}

/* --- parsing ---------------------------------------------------------------------------- */

/* Whether arg is one of the ", "-separated spellings in names. */
static bool spelled(const char *names, const char *arg, size_t arg_len) {
    for (const char *p = names; *p;) {
        const char *end = strstr(p, ", ");
        const size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == arg_len && !strncmp(p, arg, len)) return true;
        if (!end) break;
        p = end + 2;
    }
    return false;
}

/* The name errors use: the first long spelling ("--threads"). */
static void long_name(const cli_option *o, char *out, size_t cap) {
    const char *p = strstr(o->names, "--");
    if (!p) p = o->names;
    const char *end = strstr(p, ", ");
    snprintf(out, cap, "%.*s", (int)(end ? (size_t)(end - p) : strlen(p)), p);
}

/* Stores value (and for CLI_CUSTOM2 second) into dst as o says; false with the reason in why. */
static bool store(const cli_option *o, const char *value, const char *second, char *dst, char *why, size_t why_size) {
    char *end;
    errno = 0;
    switch (o->kind) {
    case CLI_FLAG: *(bool *)dst = true; return true;
    case CLI_STRING: *(const char **)dst = value; return true;
    case CLI_CUSTOM: return o->parse(value, dst, why, why_size);
    case CLI_CUSTOM2: return o->parse2(value, second, dst, why, why_size);
    case CLI_INT: {
        const long long v = strtoll(value, &end, 10);
        if (errno || end == value || *end || v < (long long)o->min || v > (long long)o->max) {
            snprintf(why, why_size, "must be %.0f to %.0f", o->min, o->max);
            return false;
        }
        *(int32_t *)dst = (int32_t)v;
        return true;
    }
    case CLI_FLOAT: {
        const float v = strtof(value, &end);
        if (errno || end == value || *end || !(v >= o->min && v <= o->max)) {
            snprintf(why, why_size, "must be a number from %g to %g", o->min, o->max);
            return false;
        }
        *(float *)dst = v;
        return true;
    }
    case CLI_ENUM: {
        size_t n = 0;
        for (const cli_choice *c = o->choices; c->name; c++, n++)
            if (!strcmp(c->name, value)) {
                *(int *)dst = c->value;
                return true;
            }
        int len = snprintf(why, why_size, "must be");
        for (size_t i = 0; i < n && len >= 0 && (size_t)len < why_size; i++)
            len += snprintf(why + len, why_size - (size_t)len, "%s %s", i == 0 ? "" : i + 1 == n ? " or" : ",", o->choices[i].name);
        return false;
    }
    }
    return false;
}

static bool takes(const cli_command *cmd, const cli_option *o) { return (o->group & (cmd->shared | CLI_SHARED_LOG)) != 0; }

static void common_init(cli_common *c) {
    memset(c, 0, sizeof *c);
    sprout_generation_config_init(&c->cfg);
    c->cfg.assistant_confidence_threshold = 0.75f; /* llama.cpp's --draft-p-min */
    c->kv_type = c->cache_type_k = c->cache_type_v = CLI_KV_UNSET;
}

static void cli_help(const cli_command *cmd, FILE *out);

static bool asks_help(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) return true;
    return false;
}

/* After the flags, a model of the store: -m becomes its file, its adapters
 * come before --lora's, and its stop strings, num_ctx, num_thread and
 * num_batch fill what the flags left unset. */
static int use_stored_model(const cli_command *cmd, cli_common *c, const sprout_generation_config *stored,
                            const sprout_runner_settings *runner) {
    const sprout_store_model *m = c->stored;
    c->model = sprout_store_model_path(m);
    if (!c->stops.n) {
        c->cfg.stop_strings = stored->stop_strings;
        c->cfg.n_stop_strings = stored->n_stop_strings;
    }
    if (!c->n_ctx) c->n_ctx = runner->num_ctx;
    if (!c->n_threads) c->n_threads = runner->num_thread;
    if (!c->n_batch) c->n_batch = runner->num_batch;
    const size_t n = sprout_store_model_n_adapters(m);
    if (n && !(cmd->shared & CLI_SHARED_LORA)) {
        fprintf(stderr, "sprout %s: %s has LoRA adapters, which this command does not apply\n", cmd->name, sprout_store_model_name(m));
        return 1;
    }
    if (c->loras.n + n > CLI_MAX_LORA) return cli_usage_error(cmd, "at most %d adapters, the model's %zu included", CLI_MAX_LORA, n);
    memmove(c->loras.path + n, c->loras.path, c->loras.n * sizeof *c->loras.path);
    memmove(c->loras.scale + n, c->loras.scale, c->loras.n * sizeof *c->loras.scale);
    for (size_t i = 0; i < n; i++) {
        c->loras.path[i] = sprout_store_model_adapter(m, i);
        c->loras.scale[i] = 1.0f;
    }
    c->loras.n += n;
    cli_log(SPROUT_LOG_INFO, "%s is %s", sprout_store_model_name(m), c->model);
    return CLI_CONTINUE;
}

int cli_parse(const cli_command *cmd, cli_common *common, void *own, int argc, char **argv) {
    common_init(common);
    /* -m NAME: the model's PARAMETERs first, so that the flags override them */
    sprout_runner_settings runner = {sizeof runner, 0, 0, 0, 0};
    sprout_generation_config stored_cfg = common->cfg;
    if (takes(cmd, &shared_options[0]) && !asks_help(argc, argv)) {
        const char *model = NULL;
        cli_model_ref_scan(argc, argv, &model, &common->models_dir);
        if (!cli_model_ref_resolve(cmd->name, model, common->models_dir, &common->cfg, &runner, &common->stored)) return 1;
        stored_cfg = common->cfg;
    }
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (!strcmp(arg, "-h") || !strcmp(arg, "--help")) {
            cli_help(cmd, stdout);
            return 0;
        }
        if (arg[0] != '-' || !arg[1]) { /* "-" is a file name (standard input) */
            if (common->n_args >= cmd->max_args) return cli_usage_error(cmd, "unexpected argument '%s'", arg);
            common->args[common->n_args++] = arg;
            continue;
        }
        /* --flag=value as well as --flag value */
        const char *eq = arg[1] == '-' ? strchr(arg, '=') : NULL;
        const size_t name_len = eq ? (size_t)(eq - arg) : strlen(arg);
        const cli_option *o = NULL;
        char *base = NULL;
        for (size_t k = 0; !o && k < cmd->n_options; k++)
            if (spelled(cmd->options[k].names, arg, name_len)) o = &cmd->options[k], base = own;
        for (size_t k = 0; !o && k < sizeof shared_options / sizeof *shared_options; k++)
            if (takes(cmd, &shared_options[k]) && spelled(shared_options[k].names, arg, name_len))
                o = &shared_options[k], base = (char *)common;
        if (!o) return cli_usage_error(cmd, "unknown option '%.*s'", (int)name_len, arg);
        char name[64], why[256] = "";
        long_name(o, name, sizeof name);
        const char *value = eq ? eq + 1 : NULL;
        if (o->kind == CLI_FLAG && value) return cli_usage_error(cmd, "%s takes no value", name);
        if (o->kind != CLI_FLAG && !value) {
            if (i + 1 >= argc) return cli_usage_error(cmd, "%s needs a value (%s)", name, o->value);
            value = argv[++i];
        }
        const char *second = NULL;
        if (o->kind == CLI_CUSTOM2) {
            if (i + 1 >= argc) return cli_usage_error(cmd, "%s needs two values (%s)", name, o->value);
            second = argv[++i];
        }
        if (!store(o, value, second, base + o->offset, why, sizeof why)) {
            fprintf(stderr, "sprout %s: %s %s%s%s: %s\n", cmd->name, name, value ? value : "", second ? " " : "", second ? second : "", why);
            return 2;
        }
    }
    if (cmd->needs_model && !common->model) return cli_usage_error(cmd, "-m MODEL is required");
    if (common->draft_path && common->lookup) return cli_usage_error(cmd, "--model-draft and --lookup: one or the other");
    if (common->cfg.num_assistant_tokens && !common->draft_path && !common->lookup)
        return cli_usage_error(cmd, "--draft-max needs --model-draft or --lookup");
    if (common->lookup) { /* --lookup N: N proposals a pass */
        common->cfg.prompt_lookup = true;
        common->cfg.num_assistant_tokens = common->lookup;
    }
    if (common->draft_path && !common->cfg.num_assistant_tokens) common->cfg.num_assistant_tokens = 16; /* llama.cpp's --draft-max */
    const int structured = cli_structured_output(cmd->name, &common->cfg.grammar, common->grammar_file, &common->cfg.json_schema,
                                                 common->schema_file, common->structured_texts);
    if (structured >= 0) return structured;
    common->cfg.stop_strings = common->stops.text;
    common->cfg.n_stop_strings = common->stops.n;
    /* each side: its own flag, else --kv-type, else f16 */
    common->kv_type_set = common->kv_type != CLI_KV_UNSET;
    if (!common->kv_type_set) common->kv_type = SPROUT_KV_F16;
    common->cache_type_k_set = common->cache_type_k != CLI_KV_UNSET;
    if (!common->cache_type_k_set) common->cache_type_k = common->kv_type;
    common->cache_type_v_set = common->cache_type_v != CLI_KV_UNSET;
    if (!common->cache_type_v_set) common->cache_type_v = common->kv_type;
    log_threshold = common->log_disable ? -1 : common->verbose ? SPROUT_LOG_DEBUG : SPROUT_LOG_WARN;
    return common->stored ? use_stored_model(cmd, common, &stored_cfg, &runner) : CLI_CONTINUE;
}

/* --- help ------------------------------------------------------------------------------- */

static void help_line(FILE *out, const cli_option *o) {
    char left[96];
    snprintf(left, sizeof left, "%s%s%s", o->names, o->value ? " " : "", o->value ? o->value : "");
    if (strlen(left) <= 26) fprintf(out, "  %-26s %s\n", left, o->help);
    else fprintf(out, "  %s\n  %-26s %s\n", left, "", o->help);
}

/* The command's --help, from its tables. */
static void cli_help(const cli_command *cmd, FILE *out) {
    fprintf(out, "usage: sprout %s\n", cmd->usage);
    if (cmd->about) fprintf(out, "%s", cmd->about);
    if (cmd->n_options) fprintf(out, "\noptions:\n");
    for (size_t k = 0; k < cmd->n_options; k++) help_line(out, &cmd->options[k]);
    fprintf(out, "\nshared options (the same in every command that takes them):\n");
    for (size_t k = 0; k < sizeof shared_options / sizeof *shared_options; k++)
        if (takes(cmd, &shared_options[k])) help_line(out, &shared_options[k]);
}

int cli_usage_error(const cli_command *cmd, const char *fmt, ...) {
    fprintf(stderr, "sprout %s: ", cmd->name);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nusage: sprout %s\n(sprout %s --help lists the options)\n", cmd->usage, cmd->name);
    return 2;
}

/* --- opening a model -------------------------------------------------------------------- */

const char *cli_kv_type_name(sprout_kv_type t) {
    const char *name = sprout_kv_type_name(t);
    return name ? name : "?";
}

sprout_status cli_load_model(const cli_common *c, sprout_model **model) {
    sprout_model_params mp = {.struct_size = sizeof mp, .n_threads = c->n_threads, .n_ctx = c->n_ctx, .kv_type = c->kv_type,
                              .kv_type_set = c->kv_type_set, CLI_KV_SIDES(c)};
    sprout_status st = sprout_model_load(c->model, &mp, model);
    if (st != SPROUT_OK) return st;
    cli_log(SPROUT_LOG_INFO, "loaded %s (%s, %d tokens of vocabulary) in %.1f ms", c->model, sprout_model_architecture(*model),
            sprout_model_n_vocab(*model), sprout_model_load_ms(*model));
    return SPROUT_OK;
}

/* -md: the draft beside the pipeline, with its context and batch. */
static sprout_status open_assistant(cli_common *c, sprout_pipeline *p, const sprout_pipeline_params *pp) {
    if (!c->draft_path) return SPROUT_OK;
    sprout_model_params mp = {.struct_size = sizeof mp, .n_threads = c->n_threads, .n_ctx = sprout_pipeline_n_ctx(p)};
    sprout_status st = sprout_model_load(c->draft_path, &mp, &c->draft_model);
    if (st == SPROUT_OK) st = sprout_pipeline_create(c->draft_model, pp, &c->draft);
    if (st == SPROUT_OK) st = sprout_pipeline_set_draft(p, c->draft);
    if (st != SPROUT_OK) return st;
    cli_log(SPROUT_LOG_INFO, "draft %s (%s), up to %d tokens a pass", c->draft_path, sprout_model_architecture(c->draft_model),
            c->cfg.num_assistant_tokens);
    return SPROUT_OK;
}

sprout_status cli_open_pipeline(cli_common *c, sprout_model **model, sprout_pipeline **pipeline) {
    *model = NULL;
    *pipeline = NULL;
    sprout_status st = cli_load_model(c, model);
    if (st != SPROUT_OK) return st;
    sprout_pipeline_params pp = {.struct_size = sizeof pp, .n_ctx = c->n_ctx, .n_batch = c->n_batch, .n_threads = c->n_threads,
                                 .kv_type = c->kv_type, .kv_type_set = c->kv_type_set, CLI_KV_SIDES(c)};
    st = sprout_pipeline_create(*model, &pp, pipeline);
    for (size_t i = 0; st == SPROUT_OK && i < c->loras.n; i++) {
        st = sprout_lora_load(*model, c->loras.path[i], &c->loras.loaded[i]);
        if (st == SPROUT_OK) cli_log(SPROUT_LOG_INFO, "adapter %s at scale %g", c->loras.path[i], (double)c->loras.scale[i]);
    }
    if (st == SPROUT_OK && c->loras.n) st = sprout_pipeline_set_lora(*pipeline, c->loras.loaded, c->loras.scale, c->loras.n);
    if (st == SPROUT_OK) st = open_assistant(c, *pipeline, &pp);
    if (st != SPROUT_OK) {
        cli_close_pipeline(c, *model, *pipeline);
        *model = NULL;
        *pipeline = NULL;
    }
    return st;
}

void cli_close_pipeline(cli_common *c, sprout_model *model, sprout_pipeline *pipeline) {
    sprout_pipeline_free(pipeline);
    sprout_pipeline_free(c->draft);
    sprout_model_free(c->draft_model);
    c->draft = NULL;
    c->draft_model = NULL;
    for (int i = 0; i < 2; i++) { /* cfg.grammar or cfg.json_schema pointed here */
        free(c->structured_texts[i]);
        c->structured_texts[i] = NULL;
    }
    for (size_t i = 0; i < c->loras.n; i++) {
        sprout_lora_free(c->loras.loaded[i]);
        c->loras.loaded[i] = NULL;
    }
    sprout_model_free(model);
}

bool cli_note_context_filled(const char *who, const sprout_pipeline *p, const sprout_generation_config *cfg, const sprout_result *r) {
    size_t n_tokens = 0;
    sprout_result_tokens(r, &n_tokens);
    if (sprout_result_finish_reason(r) != SPROUT_FINISH_LENGTH || n_tokens >= (size_t)cfg->max_new_tokens) return false;
    if (sprout_pipeline_cached_tokens(p) < sprout_pipeline_n_ctx(p)) return false; /* a grammar that could not go on */
    fflush(stdout); /* after the text, not inside it */
    fprintf(stderr, "%s: the context of %d tokens is full after %zu generated; --context-shift drops older tokens and goes on\n",
            who, sprout_pipeline_n_ctx(p), n_tokens);
    return true;
}
