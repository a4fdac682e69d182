/* Ollama's Go templates: its real templates against the prompts Ollama
 * renders (tests/data/gotemplate, see its README), the language piece by
 * piece with Go's semantics, errors with their lines, and hostile
 * templates that must stop at the limits. */
#include <jansson.h>

#include "test_util.h"

#ifndef SPROUT_GOTEMPLATE_DATA_DIR
#define SPROUT_GOTEMPLATE_DATA_DIR "tests/data/gotemplate"
#endif

static const char *const NOW = "2024-07-26T12:00:00";

static void show_difference(const char *what, const char *want, size_t want_len, const char *got, size_t got_len) {
    size_t k = 0;
    while (k < got_len && k < want_len && got[k] == want[k]) k++;
    fprintf(stderr, "%s: differs at byte %zu\n  expected: [%.*s]\n  got:      [%.*s]\n", what, k,
            (int)(want_len - k > 120 ? 120 : want_len - k), want + k, (int)(got_len - k > 120 ? 120 : got_len - k), got + k);
}

/* Renders source with messages (JSON) and extra variables; NULL on error. */
static char *render(const char *source, const char *messages, const char *extra, size_t *len) {
    sprout_template *t = NULL;
    if (sprout_template_parse(source, strlen(source), &t) != SPROUT_OK) return NULL;
    sprout_template_options opt = {.struct_size = sizeof opt, .add_generation_prompt = true, .extra_json = extra, .now = NOW};
    char *out = NULL;
    sprout_status st = sprout_template_render_json(t, messages, &opt, &out, len);
    sprout_template_free(t);
    return st == SPROUT_OK ? out : NULL;
}

/* --- Ollama's templates ---------------------------------------------------------------- */

static char *dump(const json_t *j) { return j ? json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY | JSON_PRESERVE_ORDER) : NULL; }

static bool run_case_file(const char *dir, const char *json_name, void *ctx) {
    (void)ctx;
    char path[2048];
    snprintf(path, sizeof path, "%s/%s", dir, json_name);
    json_error_t jerr;
    json_t *spec = json_load_file(path, 0, &jerr);
    CHECK_MSG(spec != NULL, "%s: %s", path, jerr.text);
    if (!spec) return false;
    char *file_source = NULL;
    if (json_is_string(json_object_get(spec, "template"))) {
        snprintf(path, sizeof path, "%s/%s", dir, json_string_value(json_object_get(spec, "template")));
        file_source = test_read_file(path, NULL);
        CHECK_MSG(file_source != NULL, "cannot read %s", path);
    }
    const json_t *cases = json_object_get(spec, "cases");
    size_t passed = 0;
    for (size_t i = 0; i < json_array_size(cases); i++) {
        const json_t *c = json_array_get(cases, i);
        const char *id = json_string_value(json_object_get(c, "id"));
        const char *source = json_is_string(json_object_get(c, "template")) ? json_string_value(json_object_get(c, "template"))
                                                                              : file_source;
        char *messages = dump(json_object_get(c, "messages")), *extra = dump(json_object_get(c, "extra"));
        const json_t *expected = json_object_get(c, "expected");
        size_t len = 0;
        char *out = source ? render(source, messages, extra, &len) : NULL;
        bool same = out && len == json_string_length(expected) && !memcmp(out, json_string_value(expected), len);
        if (same) passed++;
        else if (!out) fprintf(stderr, "%s %s: error: %s\n", json_name, id, sprout_last_error());
        else show_difference(id, json_string_value(expected), json_string_length(expected), out, len);
        sprout_free(out);
        free(messages);
        free(extra);
    }
    printf("%s: %zu/%zu cases\n", json_name, passed, json_array_size(cases));
    CHECK_MSG(passed == json_array_size(cases) && passed > 0, "%s: %zu of %zu cases pass", json_name, passed,
              json_array_size(cases));
    free(file_source);
    json_decref(spec);
    return true;
}

static void test_ollama_templates(void) {
    DIR *d = opendir(SPROUT_GOTEMPLATE_DATA_DIR);
    CHECK_MSG(d != NULL, "cannot list %s", SPROUT_GOTEMPLATE_DATA_DIR);
    if (!d) return;
    int files = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n > 5 && !strcmp(e->d_name + n - 5, ".json")) files += run_case_file(SPROUT_GOTEMPLATE_DATA_DIR, e->d_name, NULL);
    }
    closedir(d);
    CHECK_MSG(files >= 19, "only %d case files", files);
}

/* --- the language ------------------------------------------------------------------------ */

static const char *const ONE_USER = "[{\"role\":\"user\",\"content\":\"Hi\"}]";
static const char *const SYS_USER = "[{\"role\":\"system\",\"content\":\"S\"},{\"role\":\"user\",\"content\":\"Hi\"}]";
static const char *const THREE = "[{\"role\":\"system\",\"content\":\"S\"},{\"role\":\"user\",\"content\":\"Hi\"},"
                                 "{\"role\":\"assistant\",\"content\":\"Yo\"}]";
static const char *const TOOLS =
    "{\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"description\":\"d\",\"parameters\":{\"type\":\"object\","
    "\"required\":[\"b\"],\"properties\":{\"b\":{\"type\":\"integer\"},\"a\":{\"type\":\"string\",\"description\":\"<A>\"},"
    "\"c\":{\"type\":[\"string\",\"null\"]}}}}}]}";
static const char *const CALL =
    "[{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":[{\"function\":{\"name\":\"f\",\"arguments\":{\"z\":1,\"a\":0.5,"
    "\"big\":1e21,\"tiny\":0.0000001,\"s\":\"<x>\"}}}]}]";

typedef struct lang_case {
    const char *source, *messages, *extra, *expected;
} lang_case;

/* Each source gets "{{ with .Messages }}{{ end }}" appended, which prints
 * nothing but makes Ollama render it once with .Messages. */
static const lang_case language[] = {
    {"{{ \"a\" }}{{ 1 }}{{ 1.5 }}{{ true }}{{ 'a' }}{{ 0x10 }}{{ 1e3 }}{{ 1e6 }}{{ -7 }}", NULL, NULL, "a11.5true971610001e+06-7"},
    {"{{ print 1 2 \"a\" 3 true }}|{{ println \"a\" 1 }}|{{ print }}", NULL, NULL, "1 2a3 true|a 1\n|"},
    {"{{ printf \"%s-%d-%v-%q-%t-%5s|%-4d|%05d|%.2f|%x|%c|%%\" \"s\" 3 1.5 \"q\\\"\" true \"ab\" 7 42 3.14159 255 65 }}", NULL,
     NULL, "s-3-1.5-\"q\\\"\"-true-   ab|7   |00042|3.14|ff|A|%"},
    /* widths and precisions of any length are held at 10000 (fuzz_gotemplate's first finding overflowed them) */
    {"{{ printf \"%.99999999999s|%99999999999d\" \"ab\" 7 | len }}", NULL, NULL, "10003"},
    {"{{ printf \"%d\" \"x\" }}|{{ printf \"%s %s\" \"a\" }}|{{ printf \"%s\" \"a\" \"b\" }}|{{ printf \"%v %g\" 2.5 1e21 }}", NULL,
     NULL, "%!d(string=x)|a %!s(MISSING)|a%!(EXTRA string=b)|2.5 1e+21"},
    {"{{ if \"\" }}T{{ else }}F{{ end }}{{ if 0 }}T{{ else }}F{{ end }}{{ if .Messages }}T{{ end }}"
     "{{ if .Tools }}T{{ else }}F{{ end }}{{ if .Missing }}T{{ else }}F{{ end }}{{ if 0.5 }}T{{ end }}",
     NULL, NULL, "FFTFFT"},
    {"{{ and 1 0 2 }}|{{ or 0 \"\" \"x\" 3 }}|{{ and 1 2 }}|{{ or 0 \"\" }}|{{ not 0 }}|{{ 0 | or 5 }}", NULL, NULL, "0|x|2||true|5"},
    {"{{ eq 1 2 3 1 }}{{ eq \"a\" \"b\" }}{{ ne 1 2 }}{{ lt 1 2 }}{{ le 2 2 }}{{ gt \"b\" \"a\" }}{{ ge 1.5 2.5 }}"
     "{{ eq .Missing \"x\" }}{{ eq .System \"S\" }}",
     SYS_USER, NULL, "truefalsetruetruetruetruefalsefalsetrue"},
    {"{{ len \"h\\u00e9llo\" }} {{ len .Messages }} {{ (index .Messages 1).Content }} {{ slice \"abcdef\" 1 3 }} "
     "{{ len (slice .Messages 1) }} {{ index \"abc\" 1 }} {{ slice \"abc\" 1 }}",
     SYS_USER, NULL, "6 2 Hi bc 1 98 bc"},
    {"{{ $x := 1 }}{{ $x }}{{ $x = 2 }}{{ $x }}{{ if true }}{{ $x = 3 }}{{ $y := 4 }}{{ $y }}{{ end }}{{ $x }}", NULL, NULL, "1243"},
    {"{{ range .Messages }}{{ $.System }}:{{ .Role }};{{ end }}", SYS_USER, NULL, "S:system;S:user;"},
    {"{{ range $i, $m := .Messages }}{{ $i }}={{ $m.Content }} {{ end }}{{ range $m := .Messages }}{{ $m.Role }}{{ end }}",
     SYS_USER, NULL, "0=S 1=Hi systemuser"},
    {"{{ range .Tools }}x{{ else }}none{{ end }}{{ range 3 }}{{ . }}{{ end }}{{ range 0 }}x{{ else }}!{{ end }}", NULL, NULL,
     "none012!"},
    {"{{ range $i, $_ := .Messages }}{{ if eq $i 0 }}{{ continue }}{{ end }}{{ .Role }}{{ break }}{{ end }}", THREE, NULL, "user"},
    {"{{ range .Tools }}{{ range $k, $v := .Function.Parameters.Properties }}{{ $k }}:{{ $v.Type }},{{ end }}{{ end }}", NULL,
     TOOLS, "a:string,b:integer,c:[string null],"},
    {"{{ range .Tools }}{{ range $k, $v := .Function.Parameters.Properties }}{{ $k }}: {{ toTypeScriptType $v }}; {{ end }}"
     "{{ toTypeScriptType .Type }}{{ end }}",
     NULL, TOOLS, "a: string; b: number; c: string | null; any"},
    {"{{ range .Tools }}{{ .Function.Parameters.Properties }}|{{ .Function.Parameters.Required }}|{{ .Function.Name }}{{ end }}",
     NULL, TOOLS,
     "{\"a\":{\"type\":\"string\",\"description\":\"\\u003cA\\u003e\"},\"b\":{\"type\":\"integer\"},\"c\":{\"type\":[\"string\","
     "\"null\"]}}|[b]|f"},
    {"{{ with .System }}[{{ . }}]{{ else }}none{{ end }}", SYS_USER, NULL, "[S]"},
    {"{{ with .System }}[{{ . }}]{{ else }}none{{ end }}{{ with $x := 5 }}{{ $x }}{{ end }}", NULL, NULL, "none5"},
    {"a  {{- \"b\" -}}  c\n{{- /* comment */ -}}\n d{{/* c */}}e\t{{- 1 }}{{- 2   -}} 3 {{-3}}", NULL, NULL, "abcde123 -3"},
    {"{{ `a\\n` }}|{{ \"\\u00e9\\x41\\t\\101\" }}|{{ 'x' }}|{{ \"a\" | len }}", NULL, NULL, "a\\n|\xc3\xa9" "A\tA|120|1"},
    {"{{ json \"<a&b>\\u2028\" }}|{{ json .Messages }}|{{ json 1.5 }}|{{ json nil }}|{{ json .Missing }}", NULL, NULL,
     "\"\\u003ca\\u0026b\\u003e\\u2028\"|[{\"Role\":\"user\",\"Content\":\"Hi\",\"Thinking\":\"\",\"Images\":null,\"ToolCalls\":null,"
     "\"ToolName\":\"\",\"ToolCallID\":\"\"}]|1.5|null|null"},
    {"{{ range .Messages }}{{ range .ToolCalls }}{{ .Function.Arguments }}|{{ json .Function.Arguments }}|"
     "{{ .Function.Arguments.z }}|{{ .Function.Name }}|{{ .Function.Index }}{{ end }}{{ end }}",
     CALL, NULL,
     "{\"a\":0.5,\"big\":1e+21,\"s\":\"\\u003cx\\u003e\",\"tiny\":1e-7,\"z\":1}|{\"a\":0.5,\"big\":1e+21,\"s\":\"\\u003cx\\u003e\","
     "\"tiny\":1e-7,\"z\":1}|1|f|0"},
    {"{{ range .Messages }}{{ range .ToolCalls }}{{ index .Function.Arguments \"s\" }}|{{ index .Function.Arguments \"no\" }}|"
     "{{ .Function.Arguments.tiny }}|{{ .Function.Arguments.big }}|{{ len (slice .Function.Arguments.s 1) }}{{ end }}{{ end }}",
     CALL, NULL, "<x>|<no value>|1e-07|1e+21|2"},
    {"{{ .Prompt }}|{{ .Response }}|{{ .Suffix }}", NULL, NULL, "<no value>||<no value>"},
    {"{{ currentDate }} {{ yesterdayDate \"2006-01-02\" }}", NULL, NULL, "2024-07-26 2024-07-25"},
    {"{{ html \"<a href='x'>&\\\"\" }}|{{ js \"it's <b>\\n=\" }}|{{ urlquery \"a b&c/d~\" }}|{{ html 1 2 }}", NULL, NULL,
     "&lt;a href=&#39;x&#39;&gt;&amp;&#34;|it\\'s \\u003Cb\\u003E\\u000A\\u003D|a+b%26c%2Fd~|1 2"},
    {"{{ .Think }} {{ .ThinkLevel }} {{ .IsThinkSet }}", NULL, "{\"think\":true}", "true medium true"},
    {"{{ .Think }} {{ .ThinkLevel }} {{ .IsThinkSet }}", NULL, "{\"think\":\"low\"}", "true low true"},
    {"{{ .Think }}[{{ .ThinkLevel }}]{{ .IsThinkSet }}", NULL, NULL, "false[]false"},
    {"{{ .Think }}[{{ .ThinkLevel }}]{{ .IsThinkSet }}", NULL, "{\"enable_thinking\":false}", "false[]true"},
    {"{{ range .Messages }}{{ if eq .Role \"system\" }}S{{ else if eq .Role \"user\" }}U{{ else }}O{{ end }}{{ end }}", THREE,
     NULL, "SUO"},
    {"{{ \"x\" | printf \"%s-%s\" \"a\" }}|{{ (len .Messages) | printf \"%03d\" }}|{{ (index .Messages 0).Role | len }}", NULL,
     NULL, "a-x|001|4"},
    {"{{ range .Messages }}[{{ .Role }}:{{ .Content }}]{{ end }}",
     "[{\"role\":\"User\",\"content\":\"a\"},{\"role\":\"user\",\"content\":\"b\"},{\"role\":\"tool\",\"content\":\"t1\"},"
     "{\"role\":\"tool\",\"content\":\"t2\"}]",
     NULL, "[user:a\n\nb][tool:t1][tool:t2]"},
    {"{{ .System }}|{{ range .Messages }}{{ .Role }},{{ end }}",
     "[{\"role\":\"system\",\"content\":\"A\"},{\"role\":\"user\",\"content\":\"u\"},{\"role\":\"system\",\"content\":\"B\"}]", NULL,
     "A\n\nB|system,user,system,"},
    {"{{ range .Messages }}{{ range .ToolCalls }}{{ .Function.Arguments }}{{ json .Function.Arguments }}{{ end }}{{ end }}",
     "[{\"role\":\"assistant\",\"tool_calls\":[{\"function\":{\"name\":\"f\"}},{\"function\":{\"name\":\"g\","
     "\"arguments\":\"{\\\"k\\\":[1,true,null]}\"}}]}]",
     NULL, "{}null{\"k\":[1,true,null]}{\"k\":[1,true,null]}"},
    {"{{ range .Tools }}{{ . }}{{ end }}", NULL,
     "{\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"n\",\"parameters\":{\"type\":\"object\",\"properties\":{}}}}]}",
     "{\"type\":\"function\",\"function\":{\"name\":\"n\",\"description\":\"\",\"parameters\":{\"type\":\"object\","
     "\"properties\":{}}}}"},
    {"{{ .Tools }}|{{ printf \"%v\" (index .Messages 0).ToolCalls }}|{{ (index .Messages 0).Images }}", NULL, NULL,
     "null|[]|[]"},
};

static void test_language(void) {
    for (size_t i = 0; i < sizeof language / sizeof language[0]; i++) {
        const lang_case *c = &language[i];
        char source[2048];
        snprintf(source, sizeof source, "%s{{ with .Messages }}{{ end }}", c->source);
        size_t len = 0;
        char *out = render(source, c->messages ? c->messages : ONE_USER, c->extra, &len);
        bool same = out && len == strlen(c->expected) && !memcmp(out, c->expected, len);
        CHECK_MSG(same, "case %zu: %s", i, out ? "wrong output" : sprout_last_error());
        if (out && !same) show_difference(c->source, c->expected, strlen(c->expected), out, len);
        sprout_free(out);
    }
}

/* --- errors and limits --------------------------------------------------------------------- */

typedef struct error_case {
    bool run; /* a run-time error: rendered with .Messages */
    const char *source;
    int line, column;
    const char *message; /* a part of it */
} error_case;

static const error_case errors[] = {
    {false, "{{ .Prompt ", 1, 1, "unclosed action"},
    {false, "a\n{{ if .X }}b", 2, 13, "unexpected EOF"},
    {false, "x{{ end }}", 1, 2, "unexpected {{end}}"},
    {false, "{{/* Go */}}{{ foo 1 }}", 1, 16, "function \"foo\" not defined"},
    {false, "\n\n  {{ $x }}", 3, 6, "undefined variable \"$x\""},
    {false, "{{ break }}", 1, 4, "{{break}} outside {{range}}"},
    {false, "{{/* Go */}}{{ template \"x\" }}", 1, 16, "not supported"},
    {true, "{{ \"a\" \"b\" }}", 1, 4, "can't give argument to non-function"},
    {false, "{{/* Go */}}{{ 1 | \"x\" }}", 1, 20, "non executable command"},
    {false, "{{ .A | }}", 1, 9, "missing value for command"},
    {false, "{{/* open }}", 1, 1, "unclosed comment"},
    {false, "{{/* Go */}}{{ \"abc }}", 1, 16, "unterminated quoted string"},
    {false, "{{/* Go */}}{{ 1x }}", 1, 16, "bad number syntax"},
    {false, "{{/* Go */}}{{ '", 1, 16, "unterminated character constant"},
    {false, "{{/* Go */}}{{ 0x }}", 1, 16, "bad number syntax"},
    {false, "{{/* Go */}}{{ 99999999999999999999 }}", 1, 16, "overflows int"},
    {false, "{{/* Go */}}{{ (1 -}}", 1, 18, "unclosed left paren"},
    {false, "{{ if }}{{ end }}", 1, 7, "missing value for if"},
    {true, "line1\n{{ .Missing.Field }}", 2, 4, "nil pointer evaluating interface {}.Field"},
    {true, "{{ range .Messages }}\n{{ .Nope }}{{ end }}", 2, 4, "can't evaluate field Nope in type *template.templateMessage"},
    {true, "{{ index .Messages 5 }}", 1, 4, "index out of range: 5"},
    {true, "{{ len 3 }}", 1, 4, "len of type int"},
    {true, "{{ eq 1 \"a\" }}", 1, 4, "incompatible types for comparison"},
    {true, "{{ lt true false }}", 1, 4, "invalid type for comparison"},
    {true, "{{ range .System }}{{ end }}", 1, 4, "range can't iterate over"},
    {true, "{{ nil }}", 1, 4, "nil is not a command"},
};

static void test_errors(void) {
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++) {
        const error_case *c = &errors[i];
        char source[512];
        snprintf(source, sizeof source, "%s%s", c->source, c->run ? "{{ with .Messages }}{{ end }}" : "");
        sprout_template *t = NULL;
        sprout_status st = sprout_template_parse(source, strlen(source), &t);
        char *out = NULL;
        if (st == SPROUT_OK) {
            sprout_template_options opt = {.struct_size = sizeof opt, .now = NOW};
            st = sprout_template_render_json(t, SYS_USER, &opt, &out, NULL);
        }
        const char *msg = st == SPROUT_OK ? "" : sprout_last_error();
        CHECK_MSG(st == SPROUT_ERR_FORMAT && strstr(msg, c->message) && sprout_template_error_line() == c->line &&
                      sprout_template_error_column() == c->column,
                  "error case %zu (%s): status %d, line %d, column %d: %s", i, c->source, st, sprout_template_error_line(),
                  sprout_template_error_column(), msg);
        sprout_free(out);
        sprout_template_free(t);
    }
}

static void expect_limit(const char *source, const char *message) {
    sprout_template *t = NULL;
    sprout_status st = sprout_template_parse(source, strlen(source), &t);
    char *out = NULL;
    if (st == SPROUT_OK) {
        sprout_template_options opt = {.struct_size = sizeof opt};
        st = sprout_template_render_json(t, ONE_USER, &opt, &out, NULL);
    }
    CHECK_MSG(st != SPROUT_OK && strstr(sprout_last_error(), message), "%.40s...: status %d: %s", source, st,
              st ? sprout_last_error() : "rendered");
    sprout_free(out);
    sprout_template_free(t);
}

static void test_hostile(void) {
    char *deep = malloc(20000);
    size_t n = 0;
    for (int i = 0; i < 500; i++) n += (size_t)sprintf(deep + n, "{{ if .X }}");
    strcpy(deep + n, "{{ .Messages }}");
    expect_limit(deep, "nested too deeply");
    n = (size_t)sprintf(deep, "{{ .Messages }}{{ ");
    for (int i = 0; i < 500; i++) deep[n++] = '(';
    deep[n++] = '1';
    for (int i = 0; i < 500; i++) deep[n++] = ')';
    strcpy(deep + n, " }}");
    expect_limit(deep, "nested too deeply");
    free(deep);
    expect_limit("{{ .Messages }}{{ range 100000 }}{{ printf \"%10000s\" \"x\" }}{{ end }}", "output larger than");
    expect_limit("{{ .Messages }}{{ range 1000000000 }}{{ end }}", "too many steps");
    expect_limit("{{ .Messages }}{{ $s := \"xxxxxxxxxxxxxxxx\" }}{{ range 40 }}{{ $s = printf \"%s%s\" $s $s }}{{ end }}",
                 "too large");
    /* bad input data: not an array, bad JSON extras */
    sprout_template *t = NULL;
    const char *src = "{{ range .Messages }}{{ .Content }}{{ end }}";
    CHECK(sprout_template_parse(src, strlen(src), &t) == SPROUT_OK);
    char *out = NULL;
    CHECK(sprout_template_render_json(t, "{\"role\":1}", NULL, &out, NULL) == SPROUT_ERR_INVALID_ARGUMENT);
    sprout_template_options opt = {.struct_size = sizeof opt, .extra_json = "[1]"};
    CHECK(sprout_template_render_json(t, ONE_USER, &opt, &out, NULL) == SPROUT_ERR_INVALID_ARGUMENT);
    size_t len = 0;
    CHECK(sprout_template_render_json(t, "[{\"role\":7,\"content\":[{\"type\":\"text\",\"text\":\"p\"}]}]", NULL, &out, &len) ==
              SPROUT_OK &&
          len == 1 && out[0] == 'p');
    sprout_free(out);
    sprout_template_free(t);
}

/* The dialect rule, and both dialects through one API. */
static void test_dialects(void) {
    static const struct {
        const char *source;
        const char *expected; /* for one user message "Hi" */
    } cases[] = {
        {"{% for m in messages %}{{ m.content }}{% endfor %}", "Hi"},             /* Jinja: {% */
        {"{{ messages[0].content }}{# c #}", "Hi"},                               /* Jinja: {# */
        {"{{ messages[0]['content'] }}", "Hi"},                                   /* Jinja: no Go action */
        {"{{- range .Messages }}{{ .Content }}{{ end }}", "Hi"},                  /* Go: . */
        {"{{ if true }}{{ len $.Messages }}{{ end }}", "1"},                      /* Go: if */
        {"U: {{ .Prompt }} A: ", "U: Hi A: "},                                    /* Go legacy */
        {"{{ json $.Messages }}", "[{\"Role\":\"user\",\"Content\":\"Hi\",\"Thinking\":\"\","
         "\"Images\":null,\"ToolCalls\":null,\"ToolName\":\"\",\"ToolCallID\":\"\"}]"},   /* Go: json $ */
        {"{{ range(2) | list }}{{ messages | length }}", "[0, 1]1"},              /* Jinja */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t len = 0;
        char *out = render(cases[i].source, ONE_USER, NULL, &len);
        bool ok = out && !strcmp(out, cases[i].expected);
        CHECK_MSG(ok, "dialect case %zu: %s", i, out ? out : sprout_last_error());
        sprout_free(out);
    }
    /* the role/content API renders Go templates too */
    const char *src = "{{ range .Messages }}<{{ .Role }}>{{ .Content }}{{ end }}";
    sprout_template *t = NULL;
    CHECK(sprout_template_parse(src, strlen(src), &t) == SPROUT_OK);
    sprout_chat_message msgs[] = {{"system", "S"}, {"user", "U"}};
    char *out = NULL;
    CHECK(t && sprout_template_render(t, msgs, 2, NULL, &out, NULL) == SPROUT_OK && out && !strcmp(out, "<system>S<user>U"));
    sprout_free(out);
    sprout_template_free(t);
}

/* A model's prompt with an Ollama template as the override: the text is the
 * template's, with the tools from the variables. */
static void test_model_prompt(void) {
    sprout_model *m = test_load_shared("models/stories260K.gguf", 256);
    if (!m) return;
    const char *tpl = "{{ range .Messages }}<{{ .Role }}>{{ .Content }}{{ end }}{{ with .Tools }}+{{ len . }} tools{{ end }}";
    char *text = NULL;
    size_t len = 0, n_ids = 0;
    sprout_token *ids = NULL;
    sprout_status st = sprout_model_chat_prompt_vars(m, tpl, SYS_USER, TOOLS, true, &text, &len, &ids, &n_ids);
    CHECK_MSG(st == SPROUT_OK && text && strstr(text, "<system>S<user>Hi+1 tools") && n_ids > 0, "%s",
              st ? sprout_last_error() : text);
    sprout_free(text);
    sprout_free(ids);
    sprout_model_free(m);
}

int main(void) {
    test_ollama_templates();
    test_language();
    test_errors();
    test_hostile();
    test_dialects();
    test_model_prompt();
    TEST_MAIN_END();
}
