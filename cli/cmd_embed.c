/* sprout embed -m MODEL [-p TEXT ...] [-f FILE] [--pooling mean|cls|last]
 *              [--no-normalize] [--json] [-c CTX] [-t THREADS]
 *
 * Embeddings of texts: each -p is one, or each non-empty line of -f FILE (or
 * of standard input when neither is given). They run together through the
 * library's scheduler, as the server's embedding requests do. Default output:
 * one line of numbers per text, in order. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "files.h"
#include "gen_options.h"
#include "json/json_util.h"
#include "sprout.h"

static void usage(FILE *out) {
    fprintf(out,
            "usage: sprout embed -m MODEL.gguf [-p TEXT ...] [-f FILE] [options]\n"
            "  -m, --model FILE   the GGUF model\n"
            "  -p, --prompt TEXT  a text to embed (repeatable)\n"
            "  -f, --file FILE    embed each non-empty line of FILE (default without -p: standard input)\n"
            "  --pooling P        mean, cls or last (default: the model's pooling_type, else mean)\n"
            "  --no-normalize     leave the vectors unscaled (default: unit length)\n"
            "  --json             print {\"model\":..,\"pooling\":..,\"n_embd\":N,\"data\":[{\"index\":i,\"n_tokens\":n,\"embedding\":[..]}]}\n"
            "  -c, --ctx-size N   context length, the longest text in tokens (default: the model's, at most 4096)\n"
            "  -t, --threads N    threads (default: all CPUs)\n");
}

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
static int embed_all(sprout_model *model, const inputs *in, int32_t n_ctx, int32_t n_threads, sprout_pooling pooling, bool normalize,
                     bool as_json, const char *model_path) {
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
    sprout_scheduler_params sp = {.struct_size = sizeof sp, .n_slots = n < 4 ? (int32_t)n : 4, .n_ctx = n_ctx,
                                  .n_queue = n > 1 ? (int32_t)n : -1, .n_threads = n_threads};
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
        json_t *out = json_pack("{s:s, s:s, s:i, s:b, s:o}", "model", model_path, "pooling", sprout_pooling_name(pooling), "n_embd",
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
    const char *model_path = NULL, *file = NULL;
    int32_t n_ctx = 0, n_threads = 0;
    sprout_pooling pooling = SPROUT_POOLING_MODEL;
    bool normalize = true, as_json = false;
    inputs in = {0};
    char *file_text = NULL;
    int rc = 2;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const bool has_value = i + 1 < argc;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            rc = 0;
            goto done;
        } else if ((!strcmp(a, "-m") || !strcmp(a, "--model")) && has_value) model_path = argv[++i];
        else if ((!strcmp(a, "-p") || !strcmp(a, "--prompt")) && has_value) {
            if (!add_input(&in, argv[++i])) goto oom;
        } else if ((!strcmp(a, "-f") || !strcmp(a, "--file")) && has_value) file = argv[++i];
        else if (!strcmp(a, "--pooling") && has_value) {
            if (sprout_pooling_from_name(argv[++i], &pooling) != SPROUT_OK) {
                fprintf(stderr, "sprout embed: %s\n", sprout_last_error());
                goto done;
            }
        } else if (!strcmp(a, "--no-normalize")) normalize = false;
        else if (!strcmp(a, "--json")) as_json = true;
        else if ((!strcmp(a, "-c") || !strcmp(a, "--ctx-size")) && has_value) {
            if (!cli_parse_int(argv[++i], 2, 1 << 24, &n_ctx)) {
                fprintf(stderr, "sprout embed: bad context length '%s'\n", argv[i]);
                goto done;
            }
        } else if ((!strcmp(a, "-t") || !strcmp(a, "--threads")) && has_value) {
            if (!cli_parse_int(argv[++i], 1, 1024, &n_threads)) {
                fprintf(stderr, "sprout embed: bad thread count '%s'\n", argv[i]);
                goto done;
            }
        } else {
            fprintf(stderr, "sprout embed: unknown option or missing value: %s\n\n", a);
            usage(stderr);
            goto done;
        }
    }
    if (!model_path) {
        fprintf(stderr, "sprout embed: -m MODEL is required\n\n");
        usage(stderr);
        goto done;
    }
    rc = 1;
    if (file || in.n == 0) {
        file_text = file ? cli_read_file(file, NULL) : cli_read_stream(stdin, NULL);
        if (!file_text) {
            fprintf(stderr, "sprout embed: cannot read %s\n", file ? file : "standard input");
            goto done;
        }
        if (!add_lines(&in, file_text)) goto oom;
    }
    if (in.n == 0) {
        fprintf(stderr, "sprout embed: nothing to embed (no -p, and no non-empty line)\n");
        goto done;
    }
    sprout_model_params mp = {.struct_size = sizeof mp, .n_threads = n_threads, .n_ctx = n_ctx};
    sprout_model *model = NULL;
    if (sprout_model_load(model_path, &mp, &model) != SPROUT_OK) {
        fprintf(stderr, "sprout embed: %s\n", sprout_last_error());
        goto done;
    }
    rc = embed_all(model, &in, n_ctx, n_threads, pooling, normalize, as_json, model_path);
    sprout_model_free(model);
    goto done;
oom:
    fprintf(stderr, "sprout embed: out of memory\n");
    rc = 1;
done:
    free(file_text);
    free(in.text);
    return rc;
}
