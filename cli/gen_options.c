#include "gen_options.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void gen_options_init(gen_options *o) {
    memset(o, 0, sizeof *o);
    sprout_generation_config_init(&o->cfg);
    o->cfg.stop_strings = o->stops;
}

bool cli_parse_int(const char *s, long lo, long hi, int32_t *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) return false;
    *out = (int32_t)v;
    return true;
}

static bool parse_float(const char *s, float *out) {
    char *end;
    errno = 0;
    float v = strtof(s, &end);
    if (errno || end == s || *end || v != v) return false;
    *out = v;
    return true;
}

int gen_options_parse(gen_options *o, int argc, char **argv, int *i) {
    const char *a = argv[*i];
    const char *v = *i + 1 < argc ? argv[*i + 1] : NULL;
    bool ok = true;
    sprout_generation_config *c = &o->cfg;
#define IS(s) (!strcmp(a, s))
    if (IS("--ignore-eos")) {
        c->ignore_eos = true;
        return 1;
    }
    if (IS("--json-mode")) {
        c->json_object = true;
        return 1;
    }
    if (!(IS("-m") || IS("--model") || IS("-c") || IS("--ctx-size") || IS("-t") || IS("--threads") || IS("-n") ||
          IS("--n-predict") || IS("--temp") || IS("--top-k") || IS("--top-p") || IS("--min-p") || IS("--repeat-penalty") ||
          IS("--repeat-last-n") || IS("--presence-penalty") || IS("--frequency-penalty") || IS("--seed") || IS("--stop") ||
          IS("--kv-type") || IS("--min-new-tokens")))
        return 0;
    if (!v) {
        fprintf(stderr, "sprout: %s needs a value\n", a);
        return -1;
    }
    (*i)++;
    if (IS("-m") || IS("--model")) o->model = v;
    else if (IS("-c") || IS("--ctx-size")) ok = cli_parse_int(v, 1, 1 << 24, &o->n_ctx);
    else if (IS("-t") || IS("--threads")) ok = cli_parse_int(v, 1, 256, &o->n_threads);
    else if (IS("-n") || IS("--n-predict")) ok = cli_parse_int(v, 0, 1 << 24, &c->max_new_tokens);
    else if (IS("--min-new-tokens")) ok = cli_parse_int(v, 0, 1 << 24, &c->min_new_tokens);
    else if (IS("--temp")) ok = parse_float(v, &c->temperature);
    else if (IS("--top-k")) ok = cli_parse_int(v, 0, 1 << 30, &c->top_k);
    else if (IS("--top-p")) ok = parse_float(v, &c->top_p);
    else if (IS("--min-p")) ok = parse_float(v, &c->min_p);
    else if (IS("--repeat-penalty")) ok = parse_float(v, &c->repetition_penalty);
    else if (IS("--repeat-last-n")) ok = cli_parse_int(v, -1, 1 << 24, &c->repeat_last_n);
    else if (IS("--presence-penalty")) ok = parse_float(v, &c->presence_penalty);
    else if (IS("--frequency-penalty")) ok = parse_float(v, &c->frequency_penalty);
    else if (IS("--seed")) {
        char *end;
        errno = 0;
        unsigned long long s = strtoull(v, &end, 10);
        ok = !errno && end != v && !*end;
        c->seed = s;
    } else if (IS("--stop")) {
        if (c->n_stop_strings >= MAX_STOP_STRINGS) {
            fprintf(stderr, "sprout: at most %d --stop strings\n", MAX_STOP_STRINGS);
            return -1;
        }
        o->stops[c->n_stop_strings++] = v;
    } else if (IS("--kv-type")) {
        ok = !strcmp(v, "f16") || !strcmp(v, "f32");
        o->kv_type = !strcmp(v, "f32") ? SPROUT_KV_F32 : SPROUT_KV_F16;
        o->kv_type_set = true;
    }
#undef IS
    if (!ok) {
        fprintf(stderr, "sprout: bad value '%s' for %s\n", v, a);
        return -1;
    }
    return 1;
}

const char *gen_options_help(void) {
    return "  -m, --model FILE        the GGUF model\n"
           "  -n, --n-predict N       tokens to generate at most (default 256)\n"
           "  -c, --ctx-size N        context length (default: the model's, at most 4096)\n"
           "  -t, --threads N         threads (default: all CPUs)\n"
           "  --temp T                temperature; 0 is greedy (default 0.8)\n"
           "  --top-k K --top-p P --min-p P   sampling filters (defaults 40, 0.95, 0.05)\n"
           "  --repeat-penalty R --repeat-last-n N --presence-penalty X --frequency-penalty X\n"
           "  --seed S                random seed (default 42)\n"
           "  --stop STR              stop at this text (repeatable)\n"
           "  --ignore-eos            do not stop at end-of-generation tokens\n"
           "  --json-mode             the output is one JSON object (only tokens that keep it valid are drawn)\n"
           "  --min-new-tokens N      generate at least N tokens\n"
           "  --kv-type f16|f32       KV cache type (default f16)\n";
}

sprout_status gen_options_open(const gen_options *o, sprout_model **model, sprout_pipeline **pipeline) {
    *model = NULL;
    *pipeline = NULL;
    sprout_model_params mp = {.struct_size = sizeof mp, .n_threads = o->n_threads, .n_ctx = o->n_ctx, .kv_type = o->kv_type};
    sprout_status st = sprout_model_load(o->model, &mp, model);
    if (st != SPROUT_OK) return st;
    sprout_pipeline_params pp = {.struct_size = sizeof pp, .n_ctx = o->n_ctx, .n_threads = o->n_threads, .kv_type = o->kv_type,
                                 .kv_type_set = o->kv_type_set};
    st = sprout_pipeline_create(*model, &pp, pipeline);
    if (st != SPROUT_OK) {
        sprout_model_free(*model);
        *model = NULL;
    }
    return st;
}
