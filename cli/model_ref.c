/* -m by name. A path that exists is a file, as it always was, and so is
 * what only a file could be; anything else is looked up in the store, and
 * the model's Modelfile settings become the defaults the command's own
 * flags override. */
#include "model_ref.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

/* The resolved model lives until exit: the config's stop lists point into it. */
static sprout_store_model *resolved;
static void free_resolved(void) { sprout_store_model_free(resolved); }

sprout_store *cli_store_open(const char *cmd_name, const char *models_dir) {
    sprout_store_params p = {sizeof p, models_dir, NULL};
    sprout_store *s = NULL;
    if (sprout_store_open(&p, &s) != SPROUT_OK) fprintf(stderr, "sprout %s: %s\n", cmd_name, sprout_last_error());
    return s;
}

/* Edit distance, for "did you mean": names are short. */
static size_t distance(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    if (la > 128 || lb > 128) return 1000;
    size_t row[129];
    for (size_t j = 0; j <= lb; j++) row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

static void print_close_names(sprout_store *s, const char *name) {
    sprout_store_entry *e = NULL;
    size_t n = 0;
    if (sprout_store_list(s, &e, &n) != SPROUT_OK || n == 0) {
        fprintf(stderr, "  (the store has no models: sprout create NAME -f Modelfile adds one)\n");
        sprout_store_entries_free(e, n);
        return;
    }
    char *wanted = NULL;
    if (sprout_store_name_short(name, &wanted) != SPROUT_OK) wanted = NULL;
    size_t shown = 0;
    for (size_t i = 0; i < n; i++) {
        const char *cand = e[i].name;
        size_t d = distance(wanted ? wanted : name, cand), limit = strlen(cand) / 4 + 1;
        if (d <= limit || strstr(cand, name)) {
            fprintf(stderr, "%s%s", shown ? ", " : "  close names: ", cand);
            shown++;
        }
    }
    if (!shown) {
        fprintf(stderr, "  models:");
        for (size_t i = 0; i < n && i < 20; i++) fprintf(stderr, " %s", e[i].name);
        if (n > 20) fprintf(stderr, " ...");
    }
    fputc('\n', stderr);
    sprout_free(wanted);
    sprout_store_entries_free(e, n);
}

/* A file that exists, or what only a file could be: a .gguf name, an
 * absolute or ./ path, a string no model name can be. Opening it then says
 * what is wrong with the file. */
static bool is_path(const char *s) {
    struct stat sb;
    if ((stat(s, &sb) == 0 && !S_ISDIR(sb.st_mode)) || s[0] == '/' || !strncmp(s, "./", 2) || !strncmp(s, "../", 3)) return true;
    size_t n = strlen(s);
    if (n >= 5 && !strcasecmp(s + n - 5, ".gguf")) return true;
    char *full = NULL;
    bool name = sprout_store_name_full(s, &full) == SPROUT_OK;
    sprout_free(full);
    return !name;
}

void cli_model_ref_scan(int argc, char **argv, const char **model, const char **models_dir) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if ((!strcmp(a, "-m") || !strcmp(a, "--model")) && i + 1 < argc) *model = argv[++i];
        else if (!strncmp(a, "--model=", 8)) *model = a + 8;
        else if (!strcmp(a, "--models") && i + 1 < argc) *models_dir = argv[++i];
        else if (!strncmp(a, "--models=", 9)) *models_dir = a + 9;
    }
}

bool cli_model_ref_resolve(const char *cmd_name, const char *model, const char *models_dir,
                           sprout_generation_config *cfg, sprout_runner_settings *runner,
                           const sprout_store_model **out) {
    *out = NULL;
    if (!model || is_path(model)) return true;
    sprout_store *s = cli_store_open(cmd_name, models_dir);
    if (!s) return false;
    sprout_store_model *m = NULL;
    sprout_status st = sprout_store_resolve(s, model, &m);
    if (st == SPROUT_ERR_NOT_FOUND || st == SPROUT_ERR_INVALID_ARGUMENT) {
        fprintf(stderr, "sprout %s: '%s' is neither a file nor a model of the store (%s%s%s)\n", cmd_name, model,
                sprout_store_root(s), sprout_store_ollama_root(s) ? ", " : "",
                sprout_store_ollama_root(s) ? sprout_store_ollama_root(s) : "");
        print_close_names(s, model);
        sprout_store_free(s);
        return false;
    }
    sprout_store_free(s);
    if (st == SPROUT_OK) st = sprout_store_model_apply(m, cfg, runner);
    if (st != SPROUT_OK) {
        fprintf(stderr, "sprout %s: %s: %s\n", cmd_name, model, sprout_last_error());
        sprout_store_model_free(m);
        return false;
    }
    sprout_store_model_free(resolved);
    if (!resolved) atexit(free_resolved);
    resolved = m;
    *out = m;
    return true;
}

char *cli_model_ref_messages(const sprout_store_model *m, const char *system, const char *user) {
    json_t *list = json_loads(sprout_store_model_messages_json(m), 0, NULL);
    if (!system) system = sprout_store_model_system(m);
    if (!json_is_array(list)) {
        json_decref(list);
        return NULL;
    }
    if (system) json_array_insert_new(list, 0, json_pack("{s:s, s:s}", "role", "system", "content", system));
    json_array_append_new(list, json_pack("{s:s, s:s}", "role", "user", "content", user));
    char *text = json_dumps(list, JSON_COMPACT);
    json_decref(list);
    return text;
}
