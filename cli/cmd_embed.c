/* sprout embed: embeddings of texts: each -p is one, or each non-empty line of -f FILE (or
 * of standard input when neither is given). They run together through the
 * library's scheduler, as the server's embedding requests do. Default output:
 * one line of numbers per text, in order. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "files.h"
#include "json/json_util.h"
#include "options.h"
#include "sprout.h"

typedef struct inputs {
    const char **text;
    size_t n, cap;
} inputs;

static bool add_input(inputs *in, const char *text) {
    if (in->n == in->cap) {
        size_t cap = in->cap ? 2 * in->cap : 16;
        const char **more = realloc(in->text, cap * sizeof *more);
        if (!more) return false;
        in->text = more;
        in->cap = cap;
    }
    in->text[in->n++] = text;
    return true;
}

typedef struct embed_options {
    inputs texts;
    const char *file;
    sprout_pooling pooling;
    bool no_normalize, json;
} embed_options;

static bool parse_prompt(const char *value, void *dst, char *why, size_t why_size) {
    if (add_input(dst, value)) return true;
    snprintf(why, why_size, "out of memory");
    return false;
}

static bool parse_pooling(const char *value, void *dst, char *why, size_t why_size) {
    if (sprout_pooling_from_name(value, dst) == SPROUT_OK) return true;
    snprintf(why, why_size, "%s", sprout_last_error());
    return false;
}

#define OWN(field) offsetof(embed_options, field)
static const cli_option embed_table[] = {
    CLI_OPT_CUSTOM("-p, --prompt", "TEXT", OWN(texts), parse_prompt, "a text to embed (repeatable)"),
    CLI_OPT_STRING("-f, --file", "FILE", OWN(file), "embed each non-empty line of FILE (default without -p: standard input)"),
    CLI_OPT_CUSTOM("--pooling", "P", OWN(pooling), parse_pooling, "mean, cls or last (default: the model's pooling_type, else mean)"),
    CLI_OPT_FLAG("--no-normalize", OWN(no_normalize), "leave the vectors unscaled (default: unit length)"),
    CLI_OPT_FLAG("--json", OWN(json),
     "print {\"model\":..,\"pooling\":..,\"n_embd\":N,\"data\":[{\"index\":i,\"n_tokens\":n,\"embedding\":[..]}]}"),
};

static const cli_command embed_command = {
    .name = "embed",
    .needs_model = true,
    .usage = "embed -m MODEL.gguf [-p TEXT ...] [-f FILE] [options]",
    .about = "-c is the longest text in tokens.\n",
    .shared = CLI_SHARED_MODEL | CLI_SHARED_THREADS | CLI_SHARED_CTX | CLI_SHARED_BATCH | CLI_SHARED_KV,
    CLI_TABLE(embed_table),
};

/* Every non-empty line of buf (modified in place: lines end in NUL). */
static bool add_lines(inputs *in, char *buf) {
    for (char *line = buf; line && *line;) {
        char *end = strchr(line, '\n');
        if (end) *end = 0;
        size_t len = strlen(line);
        if (len && line[len - 1] == '\r') line[--len] = 0;
        if (len && !add_input(in, line)) return false;
        line = end ? end + 1 : NULL;
    }
    return true;
}

static void print_plain(const float *v, size_t n) {
    for (size_t i = 0; i < n; i++) printf(i ? " %.9g" : "%.9g", (double)v[i]);
    putchar('\n');
}

/* Runs every input through the scheduler, then prints in order. */
static int embed_all(sprout_model *model, const inputs *in, const cli_common *o, sprout_pooling pooling, bool normalize, bool as_json) {
    const size_t n = in->n;
    sprout_token **ids = calloc(n, sizeof *ids);
    size_t *n_ids = calloc(n, sizeof *n_ids);
    sprout_request **reqs = calloc(n, sizeof *reqs);
    sprout_scheduler *sched = NULL;
    int rc = 1;
    if (!ids || !n_ids || !reqs) {
        fprintf(stderr, "sprout embed: out of memory\n");
        goto done;
    }
    for (size_t i = 0; i < n; i++)
        if (sprout_model_tokenize_prompt(model, in->text[i], strlen(in->text[i]), false, &ids[i], &n_ids[i]) != SPROUT_OK) {
            fprintf(stderr, "sprout embed: text %zu: %s\n", i + 1, sprout_last_error());
            goto done;
        }
    sprout_scheduler_params sp = {.struct_size = sizeof sp, .n_slots = n < 4 ? (int32_t)n : 4, .n_ctx = o->n_ctx, .n_batch = o->n_batch,
                                  .n_queue = n > 1 ? (int32_t)n : -1, .n_threads = o->n_threads, .kv_type = o->kv_type,
                                  .kv_type_set = o->kv_type_set, CLI_KV_SIDES(o)};
    if (sprout_scheduler_create(model, &sp, &sched) != SPROUT_OK) {
        fprintf(stderr, "sprout embed: %s\n", sprout_last_error());
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        sprout_request_params rp = {.struct_size = sizeof rp, .prompt = ids[i], .n_prompt = n_ids[i], .embed = true,
                                    .pooling = pooling, .normalize = normalize};
        if (sprout_scheduler_submit(sched, &rp, &reqs[i]) != SPROUT_OK) {
            fprintf(stderr, "sprout embed: text %zu: %s\n", i + 1, sprout_last_error());
            goto done;
        }
    }
    json_t *data = as_json ? json_array() : NULL;
    for (size_t i = 0; i < n; i++) {
        sprout_result *r = NULL;
        if (sprout_request_wait(reqs[i], &r) != SPROUT_OK) {
            fprintf(stderr, "sprout embed: text %zu: %s\n", i + 1, sprout_last_error());
            json_decref(data);
            goto done;
        }
        size_t dim = 0;
        const float *v = sprout_result_embedding(r, &dim);
        if (data) {
            json_t *vec = json_array();
            for (size_t k = 0; k < dim; k++) json_array_append_new(vec, json_float32(v[k]));
            json_array_append_new(data, json_pack("{s:I, s:I, s:o}", "index", (json_int_t)i, "n_tokens", (json_int_t)n_ids[i], "embedding", vec));
        } else {
            print_plain(v, dim);
        }
        sprout_result_free(r);
    }
    if (data) {
        if (pooling == SPROUT_POOLING_MODEL) pooling = sprout_model_pooling(model);
        json_t *out = json_pack("{s:s, s:s, s:i, s:b, s:o}", "model", o->model, "pooling", sprout_pooling_name(pooling), "n_embd",
                                (int)sprout_model_n_embd(model), "normalized", normalize, "data", data);
        if (json_dumpf(out, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(9)) != 0) {
            json_decref(out);
            goto done;
        }
        putchar('\n');
        json_decref(out);
    }
    rc = fflush(stdout) == 0 ? 0 : 1;
done:
    for (size_t i = 0; reqs && i < n; i++) sprout_request_free(reqs[i]);
    sprout_scheduler_free(sched);
    for (size_t i = 0; ids && i < n; i++) sprout_free(ids[i]);
    free(ids);
    free(n_ids);
    free(reqs);
    return rc;
}

int cmd_embed(int argc, char **argv) {
    cli_common o;
    embed_options e = {.pooling = SPROUT_POOLING_MODEL};
    int rc = cli_parse(&embed_command, &o, &e, argc, argv);
    inputs in = e.texts;
    char *file_text = NULL;
    if (rc != CLI_CONTINUE) goto done;
    rc = 1;
    if (e.file || in.n == 0) {
        file_text = e.file ? cli_read_file(e.file, NULL) : cli_read_stream(stdin, NULL);
        if (!file_text) {
            fprintf(stderr, "sprout embed: cannot read %s\n", e.file ? e.file : "standard input");
            goto done;
        }
        if (!add_lines(&in, file_text)) {
            fprintf(stderr, "sprout embed: out of memory\n");
            goto done;
        }
    }
    if (in.n == 0) {
        fprintf(stderr, "sprout embed: nothing to embed (no -p, and no non-empty line)\n");
        goto done;
    }
    sprout_model *model = NULL;
    if (cli_load_model(&o, &model) != SPROUT_OK) {
        fprintf(stderr, "sprout embed: %s\n", sprout_last_error());
        goto done;
    }
    rc = embed_all(model, &in, &o, e.pooling, !e.no_normalize, e.json);
    sprout_model_free(model);
done:
    free(file_text);
    free(in.text);
    return rc;
}
