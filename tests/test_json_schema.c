/* The JSON Schema to GBNF converter: every schema of
 * data/json_schema/cases.json converts, to the same text each time, with a
 * `root` rule and every rule it names defined once; every schema of
 * errors.json fails with its status and message; and a few outputs are
 * checked rule by rule (llama.cpp's property order and whitespace, exact
 * integer ranges, escapes). Whether the grammars accept the cases' valid
 * instances and refuse the invalid ones was checked with llama.cpp's GBNF
 * validator (data/json_schema/README.md); the grammar engine's own test
 * runs the instances once it lands. */
#include <jansson.h>

#include "grammar/json_schema.h"
#include "test_util.h"

#ifndef SPROUT_JSON_SCHEMA_DATA_DIR
#define SPROUT_JSON_SCHEMA_DATA_DIR "tests/data/json_schema"
#endif

static json_t *load_data(const char *file) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", SPROUT_JSON_SCHEMA_DATA_DIR, file);
    json_error_t err;
    json_t *j = json_load_file(path, 0, &err);
    CHECK_MSG(j != NULL, "%s: %s", path, err.text);
    return j;
}

static sprout_status convert(const char *text, char **out) { return sp_json_schema_to_gbnf(text, strlen(text), out); }

static bool name_char(char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '-';
}

/* Whether `name` appears as "name ::=" at the start of a line of g. */
static int count_definitions(const char *g, const char *name, size_t len) {
    int n = 0;
    for (const char *line = g; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL)
        if (!strncmp(line, name, len) && !strncmp(line + len, " ::= ", 5)) n++;
    return n;
}

/* Every line is "name ::= body"; every name a body uses (outside string
 * literals, character classes and {m,n}) is defined exactly once. */
static bool rules_defined(const char *g, const char *label) {
    bool ok = true;
    for (const char *line = g; *line;) {
        const char *eol = strchr(line, '\n');
        if (!eol) {
            fprintf(stderr, "%s: the grammar does not end in a newline\n", label);
            return false;
        }
        const char *p = line;
        while (p < eol && name_char(*p)) p++;
        if (p == line || strncmp(p, " ::= ", 5)) {
            fprintf(stderr, "%s: not a rule line: %.*s\n", label, (int)(eol - line), line);
            return false;
        }
        if (count_definitions(g, line, (size_t)(p - line)) != 1) {
            fprintf(stderr, "%s: rule %.*s defined more than once\n", label, (int)(p - line), line);
            ok = false;
        }
        for (p += 5; p < eol;) {
            if (*p == '"' || *p == '[') {
                const char close = *p == '"' ? '"' : ']';
                for (p++; p < eol && *p != close; p++)
                    if (*p == '\\') p++;
                p++;
            } else if (*p == '{') {
                while (p < eol && *p != '}') p++;
                p++;
            } else if (name_char(*p)) {
                const char *start = p;
                while (p < eol && name_char(*p)) p++;
                if (count_definitions(g, start, (size_t)(p - start)) != 1) {
                    fprintf(stderr, "%s: rule %.*s is used but not defined\n", label, (int)(p - start), start);
                    ok = false;
                }
            } else {
                p++;
            }
        }
        line = eol + 1;
    }
    return ok && count_definitions(g, "root", 4) == 1;
}

static void test_cases(void) {
    json_t *cases = load_data("cases.json");
    if (!cases) return;
    CHECK(json_array_size(cases) >= 30);
    size_t i;
    json_t *c;
    json_array_foreach(cases, i, c) {
        const char *name = json_string_value(json_object_get(c, "name"));
        char *schema = json_dumps(json_object_get(c, "schema"), JSON_ENCODE_ANY | JSON_COMPACT);
        char *g1 = NULL, *g2 = NULL;
        const sprout_status st = convert(schema, &g1);
        CHECK_MSG(st == SPROUT_OK, "%s: %s", name, sprout_last_error());
        if (st == SPROUT_OK) {
            CHECK_MSG(*g1, "%s: empty grammar", name);
            CHECK_MSG(rules_defined(g1, name), "%s: rules", name);
            CHECK_MSG(convert(schema, &g2) == SPROUT_OK && !strcmp(g1, g2), "%s: output differs between runs", name);
        }
        CHECK_MSG(json_array_size(json_object_get(c, "valid")) > 0 && json_array_size(json_object_get(c, "invalid")) > 0,
                  "%s: instances", name);
        free(g1);
        free(g2);
        free(schema);
    }
    json_decref(cases);
}

static void test_errors(void) {
    json_t *errors = load_data("errors.json");
    if (!errors) return;
    size_t i;
    json_t *e;
    json_array_foreach(errors, i, e) {
        const char *name = json_string_value(json_object_get(e, "name"));
        const char *want = json_string_value(json_object_get(e, "message"));
        const bool unsupported = !strcmp(json_string_value(json_object_get(e, "status")), "unsupported");
        json_t *text = json_object_get(e, "schema_text");
        char *schema = text ? strdup(json_string_value(text))
                            : json_dumps(json_object_get(e, "schema"), JSON_ENCODE_ANY | JSON_COMPACT);
        char *g = (char *)"unset";
        const sprout_status st = convert(schema, &g);
        CHECK_MSG(st == (unsupported ? SPROUT_ERR_UNSUPPORTED : SPROUT_ERR_FORMAT), "%s: status %d", name, st);
        CHECK_MSG(g == NULL, "%s: output left set", name);
        CHECK_MSG(!strncmp(sprout_last_error(), want, strlen(want)), "%s: message \"%s\", want \"%s...\"", name,
                  sprout_last_error(), want);
        free(schema);
    }
    json_decref(errors);
}

/* The grammar of schema holds `line` as one of its lines. */
static void check_line(const char *schema, const char *line) {
    char *g = NULL;
    const sprout_status st = convert(schema, &g);
    CHECK_MSG(st == SPROUT_OK, "%s: %s", schema, sprout_last_error());
    if (st != SPROUT_OK) return;
    const size_t n = strlen(line);
    bool found = false;
    for (const char *p = g; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (!strncmp(p, line, n) && (p[n] == '\n' || !p[n])) found = true;
    CHECK_MSG(found, "%s: no line %s in\n%s", schema, line, g);
    free(g);
}

static void test_rules(void) {
    /* llama.cpp's whitespace, and required properties before optional ones */
    check_line("{}", "space ::= | \" \" | \"\\n\"{1,2} [ \\t]{0,20}");
    check_line("{}", "root ::= value");
    check_line("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{\"type\":\"integer\"}},\"required\":[\"b\"]}",
               "root ::= \"{\" space b-kv ( \",\" space ( a-kv ) )? space \"}\"");
    check_line("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}", "a-kv ::= \"\\\"a\\\"\" space \":\" space string");
    /* exact integer ranges (llama.cpp's own accepts 100 for minimum 105) */
    check_line("{\"type\":\"integer\",\"minimum\":105,\"maximum\":2300}",
               "root ::= ((\"1\" ((\"0\" ([5-9]) | [1-9] [0-9])) | [2-9] [0-9]{2}) | (\"1\" [0-9]{3} | \"2\" (([0-2] [0-9]{2} | \"3\" (\"00\")))))");
    check_line("{\"type\":\"integer\",\"minimum\":-5,\"maximum\":-2}", "root ::= (\"-\" ([2-5]))");
    /* arrays and lengths as llama.cpp repeats them */
    check_line("{\"type\":\"array\",\"items\":{\"type\":\"boolean\"},\"minItems\":1,\"maxItems\":3}",
               "root ::= \"[\" space boolean (\",\" space boolean){0,2} space \"]\"");
    check_line("{\"type\":\"string\",\"maxLength\":1}", "root ::= \"\\\"\" char? \"\\\"\"");
    /* a pattern's quote and backslash come out as JSON escapes */
    check_line("{\"type\":\"string\",\"pattern\":\"^a\\\"\\\\\\\\$\"}", "root ::= \"\\\"\" (\"a\\\\\\\"\\\\\\\\\") \"\\\"\"");
    check_line("{\"enum\":[\"x\",1.5,null]}", "root ::= (\"\\\"x\\\"\" | \"1.5\" | \"null\")");
    /* a recursive reference names its rule */
    check_line("{\"$defs\":{\"n\":{\"type\":\"array\",\"items\":{\"$ref\":\"#/$defs/n\"}}},\"$ref\":\"#/$defs/n\"}",
               "ref-defs-n ::= \"[\" space (ref-defs-n (\",\" space ref-defs-n)*)? space \"]\"");
    /* names that collide take llama.cpp's numbers: the first that is free
     * or holds the same body, whichever way a name with that number was made */
    static const char collide[] =
        "{\"type\":\"object\",\"properties\":{\"a.b\":{\"const\":1},\"a,b\":{\"const\":2},\"a;b\":{\"const\":1},"
        "\"a b\":{\"const\":3},\"a-b0\":{\"const\":9},\"a:b\":{\"const\":4},\"a!b\":{\"const\":2}},"
        "\"required\":[\"a.b\",\"a,b\",\"a;b\",\"a b\",\"a-b0\",\"a:b\",\"a!b\"]}";
    check_line(collide, "a-b-kv1 ::= \"\\\"a;b\\\"\" space \":\" space a-b");
    check_line(collide, "a-b-kv2 ::= \"\\\"a b\\\"\" space \":\" space a-b1");
    check_line(collide, "a-b0-kv ::= \"\\\"a-b0\\\"\" space \":\" space a-b00");
    check_line(collide, "a-b-kv3 ::= \"\\\"a:b\\\"\" space \":\" space a-b2");
    check_line(collide, "a-b-kv4 ::= \"\\\"a!b\\\"\" space \":\" space a-b0");
    check_line(collide, "a-b2 ::= \"4\"");
    check_line("{\"$defs\":{\"x.y\":{\"type\":\"array\",\"items\":{\"$ref\":\"#/$defs/x-y\"}},\"x-y\":{\"type\":\"string\"}},"
               "\"anyOf\":[{\"$ref\":\"#/$defs/x.y\"},{\"$ref\":\"#/$defs/x-y\"}]}",
               "ref-defs-x-y ::= \"[\" space (ref-defs-x-y0 (\",\" space ref-defs-x-y0)*)? space \"]\"");
    /* each optional property is followed by the chain of those after it */
    static const char optional[] = "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{\"type\":\"integer\"},"
                                   "\"c\":{\"type\":\"boolean\"},\"d\":{\"const\":1}},\"required\":[\"b\"]}";
    check_line(optional, "root ::= \"{\" space b-kv ( \",\" space ( a-kv a-rest | c-kv c-rest | d-kv ) )? space \"}\"");
    check_line(optional, "a-rest ::= ( \",\" space c-kv )? c-rest");
    check_line(optional, "c-rest ::= ( \",\" space d-kv )?");

    char *g = (char *)"unset";
    CHECK(sp_json_schema_to_gbnf(NULL, 0, &g) == SPROUT_ERR_INVALID_ARGUMENT);
    CHECK(sp_json_schema_to_gbnf("{}", 2, NULL) == SPROUT_ERR_INVALID_ARGUMENT);
    /* the length is honoured: the text after it is not read */
    CHECK(sp_json_schema_to_gbnf("{}garbage", 2, &g) == SPROUT_OK && g && strstr(g, "root ::= value"));
    free(g);
}

int main(void) {
    test_cases();
    test_errors();
    test_rules();
    TEST_MAIN_END();
}
