/* Structured output end to end: every schema of tests/data/json_schema/
 * cases.json, through sprout_json_schema_to_grammar and the grammar engine,
 * accepts each of its valid instances (checked with ajv, see the data's
 * README) as a whole text and refuses each invalid one; then generations
 * constrained by each schema on stories260K and a random arch model
 * (temperature 1, several seeds) end complete (finish "eos") with output
 * the schema's grammar accepts and jansson parses; a GBNF grammar given
 * directly does the same, and a stop string inside it ends with "length";
 * bad grammars and schemas fail the call by name. */
#include <jansson.h>

#include "grammar/grammar.h"
#include "test_util.h"

static json_t *load_cases(void) {
    char path[1024];
    snprintf(path, sizeof path, "%s/cases.json", SPROUT_JSON_SCHEMA_DATA_DIR);
    json_error_t err;
    json_t *cases = json_load_file(path, 0, &err);
    CHECK_MSG(json_is_array(cases), "%s: %s", path, err.text);
    return cases;
}

/* Whether text is a whole text of g (accepted, and may end there). */
static bool whole_text(const sp_grammar *g, const char *text) {
    sp_grammar_state *st = sp_grammar_state_new(g);
    const bool ok = st && sp_grammar_accept(st, text, strlen(text)) && sp_grammar_can_end(st);
    sp_grammar_state_free(st);
    return ok;
}

static char *schema_text(const json_t *c) { return json_dumps(json_object_get(c, "schema"), JSON_COMPACT | JSON_ENCODE_ANY); }

/* A case's schema, as text (*schema, malloc'd) and compiled through
 * sprout_json_schema_to_grammar (NULL after a failed check). */
static sp_grammar *schema_grammar(const json_t *c, char **schema) {
    const char *name = json_string_value(json_object_get(c, "name"));
    char *gbnf = NULL;
    *schema = schema_text(c);
    CHECK_MSG(*schema && sprout_json_schema_to_grammar(*schema, strlen(*schema), &gbnf) == SPROUT_OK, "%s: %s", name, sprout_last_error());
    sp_grammar *g = NULL;
    if (gbnf) CHECK_MSG(sp_grammar_compile(gbnf, strlen(gbnf), "root", &g) == SPROUT_OK, "%s: %s", name, sprout_last_error());
    sprout_free(gbnf);
    return g;
}

static void test_instances(const json_t *cases) {
    size_t i;
    const json_t *c;
    int accepted = 0, refused = 0;
    json_array_foreach(cases, i, c) {
        const char *name = json_string_value(json_object_get(c, "name"));
        char *schema = NULL;
        sp_grammar *g = schema_grammar(c, &schema);
        size_t k;
        const json_t *doc;
        json_array_foreach(json_object_get(c, "valid"), k, doc) {
            const bool ok = g && whole_text(g, json_string_value(doc));
            CHECK_MSG(ok, "%s: valid instance %zu refused: %s", name, k, json_string_value(doc));
            accepted += ok;
        }
        json_array_foreach(json_object_get(c, "invalid"), k, doc) {
            const bool ok = g && !whole_text(g, json_string_value(doc));
            CHECK_MSG(ok, "%s: invalid instance %zu accepted: %s", name, k, json_string_value(doc));
            refused += ok;
        }
        sp_grammar_free(g);
        free(schema);
    }
    printf("schemas: %zu, valid instances accepted %d, invalid refused %d\n", json_array_size(cases), accepted, refused);
    char *gbnf = (char *)1;
    static const char multiple[] = "{\"type\": \"integer\", \"multipleOf\": 2}";
    CHECK(sprout_json_schema_to_grammar(multiple, strlen(multiple), &gbnf) == SPROUT_ERR_UNSUPPORTED && !gbnf &&
          strstr(sprout_last_error(), "multipleOf"));
    CHECK(sprout_json_schema_to_grammar("{\"type\": ", 9, &gbnf) == SPROUT_ERR_FORMAT && !gbnf);
    CHECK(sprout_json_schema_to_grammar(NULL, 0, &gbnf) == SPROUT_ERR_INVALID_ARGUMENT);
}

/* Constrained generations: each ends complete, its text whole for the grammar and JSON for jansson. */
static void generate_all(sprout_pipeline *p, const char *model, const json_t *cases) {
    size_t i;
    const json_t *c;
    int done = 0, total = 0;
    json_array_foreach(cases, i, c) {
        const char *name = json_string_value(json_object_get(c, "name"));
        char *schema = NULL;
        sp_grammar *g = schema_grammar(c, &schema);
        for (uint64_t seed = 1; seed <= (test_quick_run() ? 1u : 2u); seed++) {
            sprout_generation_config cfg;
            sprout_generation_config_init(&cfg);
            cfg.temperature = 1.f;
            cfg.top_k = 0, cfg.top_p = 1.f, cfg.min_p = 0.f;
            cfg.seed = seed;
            cfg.max_new_tokens = 200;
            cfg.json_schema = schema;
            sprout_result *r = NULL;
            CHECK_MSG(sprout_generate(p, "Once upon a time", &cfg, NULL, NULL, &r) == SPROUT_OK, "%s %s: %s", model, name,
                      sprout_last_error());
            if (!r) continue;
            size_t len;
            const char *text = sprout_result_text(r, &len);
            total++;
            if (sprout_result_finish_reason(r) == SPROUT_FINISH_EOS) { /* complete: whole and JSON */
                done++;
                json_error_t err;
                json_t *j = json_loadb(text, len, JSON_DECODE_ANY, &err);
                /* (jansson stops at a number past a double's range, which JSON allows) */
                CHECK_MSG(j || strstr(err.text, "overflow"), "%s %s seed %llu: not JSON (%s): %s", model, name, (unsigned long long)seed,
                          err.text, text);
                json_decref(j);
                CHECK_MSG(g && whole_text(g, text), "%s %s seed %llu: not the schema's: %s", model, name, (unsigned long long)seed, text);
            } else { /* the length ran out first: still a prefix */
                sp_grammar_state *st = g ? sp_grammar_state_new(g) : NULL;
                CHECK_MSG(st && sp_grammar_accept(st, text, len), "%s %s: output leaves the grammar: %s", model, name, text);
                sp_grammar_state_free(st);
            }
            sprout_result_free(r);
        }
        sp_grammar_free(g);
        free(schema);
    }
    printf("%s: %d of %d constrained generations complete\n", model, done, total);
    CHECK(done * 2 > total);
}

static void test_generation(const json_t *cases) {
    static const char *const models[] = {"models/stories260K.gguf", "arch/qwen2-Q8_0.gguf"};
    for (size_t i = 0; i < sizeof models / sizeof *models; i++) {
        sprout_model *m = test_load_shared(models[i], 512);
        sprout_pipeline *p = NULL;
        if (m) CHECK(sprout_pipeline_create(m, NULL, &p) == SPROUT_OK);
        if (p) generate_all(p, models[i], cases);
        /* a GBNF grammar given directly, and the refusals */
        sprout_generation_config cfg;
        sprout_generation_config_init(&cfg);
        cfg.seed = 3;
        cfg.grammar = "root ::= (\"yes\" | \"no\") \", \" [a-z]{2,5} \".\"";
        sprout_result *r = NULL;
        if (p) CHECK_MSG(sprout_generate(p, "Once upon a time", &cfg, NULL, NULL, &r) == SPROUT_OK, "%s", sprout_last_error());
        size_t len = 0;
        const char *text = r ? sprout_result_text(r, &len) : "";
        CHECK_MSG(r && sprout_result_finish_reason(r) == SPROUT_FINISH_EOS && (!strncmp(text, "yes, ", 5) || !strncmp(text, "no, ", 4)) &&
                      text[len - 1] == '.',
                  "%s: grammar output [%s]", models[i], text);
        sprout_result_free(r);
        /* a stop string before the grammar is complete: what there is, finish "length" */
        const char *stop = ", ";
        cfg.stop_strings = &stop;
        cfg.n_stop_strings = 1;
        r = NULL;
        if (p) CHECK(sprout_generate(p, "Once upon a time", &cfg, NULL, NULL, &r) == SPROUT_OK);
        text = r ? sprout_result_text(r, &len) : "";
        CHECK_MSG(r && sprout_result_finish_reason(r) == SPROUT_FINISH_LENGTH && (!strcmp(text, "yes") || !strcmp(text, "no")),
                  "%s: stopped grammar output [%s], finish %d", models[i], text, r ? (int)sprout_result_finish_reason(r) : -1);
        sprout_result_free(r);
        cfg.stop_strings = NULL;
        cfg.n_stop_strings = 0;
        /* lazy: free text until the trigger, then the grammar from its first letter (the trigger comes
         * by a logit bias on its token, 'y', once a few tokens are out) */
        cfg.grammar = "root ::= \"y\" [a-z]{2,4} \".\"";
        cfg.grammar_trigger = "y";
        cfg.max_new_tokens = 60;
        r = NULL;
        if (p) CHECK(sprout_generate(p, "Once upon a time", &cfg, NULL, NULL, &r) == SPROUT_OK);
        text = r ? sprout_result_text(r, &len) : "";
        const char *y = strchr(text, 'y');
        size_t tail = y ? len - (size_t)(y - text) : 0;
        /* (a token that brings the trigger with letters the grammar refuses after it ends the output there) */
        CHECK_MSG(r && (!y || (sprout_result_finish_reason(r) == SPROUT_FINISH_EOS && (text[len - 1] != '.' || (tail >= 4 && tail <= 6)))),
                  "%s: lazy grammar output [%s]", models[i], text);
        sprout_result_free(r);
        cfg.grammar_trigger = NULL;
        cfg.max_new_tokens = 256;
        r = NULL;
        cfg.grammar = "root ::= item\nitem ::= \"x\" | undefined";
        CHECK(!p || (sprout_generate(p, "Hi", &cfg, NULL, NULL, &r) == SPROUT_ERR_FORMAT && strstr(sprout_last_error(), "undefined")));
        cfg.grammar = "root ::= \"a\"";
        cfg.json_schema = "{\"type\": \"string\"}";
        CHECK(!p || sprout_generate(p, "Hi", &cfg, NULL, NULL, &r) == SPROUT_ERR_INVALID_ARGUMENT);
        cfg.grammar = NULL;
        cfg.json_schema = "{\"type\": \"object\", \"not\": {}}";
        CHECK(!p || (sprout_generate(p, "Hi", &cfg, NULL, NULL, &r) == SPROUT_ERR_UNSUPPORTED && strstr(sprout_last_error(), "not")));
        sprout_pipeline_free(p);
        sprout_model_free(m);
    }
}

int main(void) {
    json_t *cases = load_cases();
    if (cases) {
        test_instances(cases);
        test_generation(cases);
    }
    json_decref(cases);
    TEST_MAIN_END();
}
