/* Chat templates against Python jinja2's renderings (every NAME.json in
 * ../shared/chat_templates), the template language piece by piece, and
 * hostile templates that must fail cleanly. */
#include <dirent.h>
#include <jansson.h>

#include "test_util.h"

static char *dump(const json_t *j) { return json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY | JSON_PRESERVE_ORDER); }

static void run_case_file(const char *dir, const char *json_name) {
    char path[2048];
    snprintf(path, sizeof path, "%s/%s", dir, json_name);
    json_error_t jerr;
    json_t *spec = json_load_file(path, 0, &jerr);
    CHECK_MSG(spec != NULL, "%s: %s", path, jerr.text);
    if (!spec) return;
    snprintf(path, sizeof path, "%s/%s", dir, json_string_value(json_object_get(spec, "template")));
    size_t src_len = 0;
    char *src = test_read_file(path, &src_len);
    CHECK_MSG(src != NULL, "cannot read %s", path);
    sprout_template *t = NULL;
    if (src && sprout_template_parse(src, src_len, &t) != SPROUT_OK) CHECK_MSG(0, "%s: %s", path, sprout_last_error());
    const json_t *bos = json_object_get(spec, "bos_token"), *eos = json_object_get(spec, "eos_token");
    char *extra = dump(json_object_get(spec, "other_variables"));
    const json_t *cases = json_object_get(spec, "cases");
    int passed = 0;
    for (size_t i = 0; t && i < json_array_size(cases); i++) {
        const json_t *c = json_array_get(cases, i);
        char *messages = dump(json_object_get(c, "messages"));
        sprout_template_options opt = {
            .struct_size = sizeof opt,
            .add_generation_prompt = json_is_true(json_object_get(c, "add_generation_prompt")),
            .bos_token = json_is_string(bos) ? json_string_value(bos) : NULL,
            .eos_token = json_is_string(eos) ? json_string_value(eos) : NULL,
            .extra_json = extra,
            .now = json_string_value(json_object_get(spec, "strftime_now_fixed_to")),
        };
        char *out = NULL;
        size_t len = 0;
        sprout_status st = sprout_template_render_json(t, messages, &opt, &out, &len);
        const json_t *expected = json_object_get(c, "expected"), *expected_error = json_object_get(c, "expected_error");
        const char *id = json_string_value(json_object_get(c, "id"));
        if (expected) {
            bool same = st == SPROUT_OK && len == json_string_length(expected) && !memcmp(out, json_string_value(expected), len);
            if (same) passed++;
            else if (st != SPROUT_OK) fprintf(stderr, "%s %s: error: %s\n", json_name, id, sprout_last_error());
            else {
                size_t k = 0;
                const char *want = json_string_value(expected);
                while (k < len && k < json_string_length(expected) && out[k] == want[k]) k++;
                fprintf(stderr, "%s %s: differs at byte %zu\n  expected: [%.*s]\n  got:      [%.*s]\n", json_name, id, k,
                        (int)(json_string_length(expected) - k > 80 ? 80 : json_string_length(expected) - k), want + k,
                        (int)(len - k > 80 ? 80 : len - k), out + k);
            }
        } else if (expected_error) {
            bool same = st == SPROUT_ERR_FORMAT && sprout_template_error_raised() &&
                        !strcmp(sprout_last_error(), json_string_value(expected_error));
            if (same) passed++;
            else fprintf(stderr, "%s %s: expected error '%s', got status %d '%s'\n", json_name, id,
                         json_string_value(expected_error), st, st ? sprout_last_error() : "(none)");
        }
        sprout_free(out);
        free(messages);
    }
    printf("%s: %d/%zu cases\n", json_name, passed, json_array_size(cases));
    CHECK_MSG(passed == (int)json_array_size(cases) && passed > 0, "%s: %d of %zu cases pass", json_name, passed,
              json_array_size(cases));
    free(extra);
    free(src);
    sprout_template_free(t);
    json_decref(spec);
}

static void test_shared_templates(void) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/chat_templates", test_shared_dir());
    DIR *d = opendir(dir);
    CHECK_MSG(d != NULL, "cannot list %s", dir);
    if (!d) return;
    int files = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".json")) continue;
        run_case_file(dir, e->d_name);
        files++;
    }
    closedir(d);
    CHECK_MSG(files >= 15, "only %d template case files", files);
}

int main(void) {
    test_shared_templates();
    TEST_MAIN_END();
}
