/* sprout show NAME: what `ollama show` prints: the model's architecture and
 * sizes (from its GGUF), its parameters, system message and license; or one
 * part alone (--modelfile, --parameters, --template, --system, --license). */
#include <jansson.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "model_ref.h"
#include "options.h"
#include "sprout.h"

typedef struct show_options {
    bool modelfile, parameters, template_text, system, license, verbose;
} show_options;

#define OWN(field) offsetof(show_options, field)
static const cli_option show_table[] = {
    CLI_OPT_FLAG("--modelfile", OWN(modelfile), "a Modelfile that recreates the model"),
    CLI_OPT_FLAG("--parameters", OWN(parameters), "its PARAMETERs"),
    CLI_OPT_FLAG("--template", OWN(template_text), "its TEMPLATE"),
    CLI_OPT_FLAG("--system", OWN(system), "its SYSTEM message"),
    CLI_OPT_FLAG("--license", OWN(license), "its LICENSE"),
    CLI_OPT_FLAG("--verbose", OWN(verbose), "also every metadata key of its GGUF"),
};

static const cli_command show_command = {
    .name = "show",
    .usage = "show NAME [--modelfile | --parameters | --template | --system | --license | --verbose]",
    .shared = CLI_SHARED_STORE,
    .max_args = 1,
    CLI_TABLE(show_table),
};

/* Ollama's format.HumanNumber. */
static void human_number(uint64_t n, char *out, size_t cap) {
    double v = (double)n;
    if (v >= 1e9) snprintf(out, cap, "%.1fB", v / 1e9);
    else if (v >= 1e6) snprintf(out, cap, "%.2fM", v / 1e6);
    else if (v >= 1e3) snprintf(out, cap, "%.2fK", v / 1e3);
    else snprintf(out, cap, "%llu", (unsigned long long)n);
}

/* A value as the parameters table shows it: text quoted, numbers plain. */
static void print_value(json_t *v) {
    if (json_is_string(v)) {
        char *s = json_dumps(v, JSON_ENCODE_ANY);
        printf("%s", s ? s : "");
        free(s);
    } else if (json_is_real(v)) {
        printf("%g", json_real_value(v));
    } else {
        char *s = json_dumps(v, JSON_ENCODE_ANY);
        printf("%s", s ? s : "");
        free(s);
    }
}

static void print_parameters(const char *json, const char *indent) {
    json_t *obj = json_loads(json, 0, NULL);
    const char *key;
    json_t *v;
    int width = 0;
    json_object_foreach(obj, key, v) if ((int)strlen(key) > width) width = (int)strlen(key);
    json_object_foreach(obj, key, v) {
        size_t n = json_is_array(v) ? json_array_size(v) : 1;
        for (size_t i = 0; i < n; i++) {
            printf("%s%-*s    ", indent, width, key);
            print_value(json_is_array(v) ? json_array_get(v, i) : v);
            putchar('\n');
        }
    }
    json_decref(obj);
}

/* Text indented under a section's heading. */
static void print_indented(const char *text) {
    printf("    ");
    for (const char *p = text; *p; p++) {
        putchar(*p);
        if (*p == '\n' && p[1]) printf("    ");
    }
    putchar('\n');
}

static void row(const char *key, const char *value) { printf("    %-20s    %s\n", key, value); }

static void print_model(const sprout_store_model *m, bool verbose) {
    sprout_gguf *g = NULL;
    printf("  Model\n");
    if (sprout_gguf_open(sprout_store_model_path(m), &g) != SPROUT_OK) {
        printf("    (%s)\n", sprout_last_error());
        return;
    }
    const char *arch = "unknown";
    size_t arch_len = 7;
    sprout_gguf_get_str(g, "general.architecture", &arch, &arch_len);
    char archs[64], key[128], text[64];
    snprintf(archs, sizeof archs, "%.*s", (int)arch_len, arch);
    row("architecture", archs);
    uint64_t n_params = 0;
    for (int64_t i = 0; i < sprout_gguf_tensor_count(g); i++) n_params += (uint64_t)sprout_gguf_tensor_elements(g, i);
    human_number(n_params, text, sizeof text);
    row("parameters", text);
    uint32_t v;
    snprintf(key, sizeof key, "%s.context_length", archs);
    if (sprout_gguf_get_u32(g, key, &v) == SPROUT_OK) snprintf(text, sizeof text, "%u", v), row("context length", text);
    snprintf(key, sizeof key, "%s.embedding_length", archs);
    if (sprout_gguf_get_u32(g, key, &v) == SPROUT_OK) snprintf(text, sizeof text, "%u", v), row("embedding length", text);
    if (sprout_gguf_get_u32(g, "general.file_type", &v) == SPROUT_OK) row("quantization", sprout_file_type_name(v));
    if (verbose) {
        printf("\n  Metadata\n");
        for (int64_t i = 0; i < sprout_gguf_kv_count(g); i++) {
            const sprout_gguf_value *val = sprout_gguf_kv_value(g, i);
            const char *s;
            size_t len;
            uint64_t u;
            int64_t si;
            double f;
            sprout_gguf_type t = sprout_gguf_value_type(val);
            if (t == SPROUT_GGUF_STRING && sprout_gguf_value_str(val, &s, &len) == SPROUT_OK)
                snprintf(text, sizeof text, "%.*s%s", len > 48 ? 48 : (int)len, s, len > 48 ? "..." : "");
            else if (t == SPROUT_GGUF_ARRAY)
                snprintf(text, sizeof text, "[%llu %s]", (unsigned long long)sprout_gguf_array_len(val),
                         sprout_gguf_type_name(sprout_gguf_array_type(val)));
            else if (sprout_gguf_value_u64(val, &u) == SPROUT_OK) snprintf(text, sizeof text, "%llu", (unsigned long long)u);
            else if (sprout_gguf_value_i64(val, &si) == SPROUT_OK) snprintf(text, sizeof text, "%lld", (long long)si);
            else if (sprout_gguf_value_f64(val, &f) == SPROUT_OK) snprintf(text, sizeof text, "%g", f);
            else snprintf(text, sizeof text, "(%s)", sprout_gguf_type_name(t));
            row(sprout_gguf_kv_key(g, i), text);
        }
    }
    sprout_gguf_close(g);
}

int cmd_show(int argc, char **argv) {
    cli_common o;
    show_options so = {0};
    const int status = cli_parse(&show_command, &o, &so, argc, argv);
    if (status != CLI_CONTINUE) return status;
    if (o.n_args != 1) return cli_usage_error(&show_command, "name the model to show");
    if (so.modelfile + so.parameters + so.template_text + so.system + so.license > 1)
        return cli_usage_error(&show_command, "one of --modelfile, --parameters, --template, --system, --license");
    sprout_store *s = cli_store_open("show", o.models_dir);
    sprout_store_model *m = NULL;
    if (!s || sprout_store_resolve(s, o.args[0], &m) != SPROUT_OK) {
        if (s) fprintf(stderr, "sprout show: %s\n", sprout_last_error());
        sprout_store_free(s);
        return 1;
    }
    const char *tmpl = sprout_store_model_template(m), *system = sprout_store_model_system(m),
               *license = sprout_store_model_license(m), *params = sprout_store_model_parameters_json(m);
    if (so.modelfile) fputs(sprout_store_model_modelfile(m), stdout);
    else if (so.parameters) print_parameters(params, "");
    else if (so.template_text) printf("%s\n", tmpl ? tmpl : "");
    else if (so.system) printf("%s\n", system ? system : "");
    else if (so.license) printf("%s\n", license ? license : "");
    else {
        print_model(m, so.verbose);
        if (strcmp(params, "{}")) {
            printf("\n  Parameters\n");
            print_parameters(params, "    ");
        }
        if (system) printf("\n  System\n"), print_indented(system);
        if (license) printf("\n  License\n"), print_indented(license);
        if (sprout_store_model_n_adapters(m)) {
            printf("\n  Adapters\n");
            for (size_t i = 0; i < sprout_store_model_n_adapters(m); i++) printf("    %s\n", sprout_store_model_adapter(m, i));
        }
        putchar('\n');
    }
    sprout_store_model_free(m);
    sprout_store_free(s);
    return fflush(stdout) == 0 ? 0 : 1;
}
