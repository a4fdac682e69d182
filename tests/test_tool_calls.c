/* Tool calls found in replies written the ways chat templates teach models
 * to write them, the text around them kept, and what is not a call left as
 * text; and the streaming rule that holds back what may begin a call. */
#include "server/tool_calls.h"
#include "test_util.h"

typedef struct reply_case {
    const char *reply;
    const char *calls;   /* the expected calls as JSON, or NULL for none */
    const char *content; /* the text outside them */
} reply_case;

#define DS(x) "<\xEF\xBD\x9Ctool\xE2\x96\x81" x "\xEF\xBD\x9C>"

static const reply_case cases[] = {
    /* Hermes, Qwen2.5/3: blocks, text around them, a missing close at the end */
    {"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
     "[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]", ""},
    {"<think>\nNeed weather.\n</think>\n\nLet me check.\n<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>\n"
     "<tool_call>\n{\"name\": \"b\", \"arguments\": {\"x\": [1, 2]}}\n</tool_call>",
     "[{\"name\": \"a\", \"arguments\": {}}, {\"name\": \"b\", \"arguments\": {\"x\": [1, 2]}}]",
     "<think>\nNeed weather.\n</think>\n\nLet me check."},
    {"<tool_call>\n{\"name\": \"f\", \"arguments\": \"{\\\"q\\\": 1}\"}", "[{\"name\": \"f\", \"arguments\": {\"q\": 1}}]", ""},
    /* Mistral: a list, and the name[ARGS] form */
    {"[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}, {\"name\": \"t\", \"arguments\": {}}]",
     "[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}, {\"name\": \"t\", \"arguments\": {}}]", ""},
    {"[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}[TOOL_CALLS]now[ARGS]{}",
     "[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}, {\"name\": \"now\", \"arguments\": {}}]", ""},
    /* Llama 3.x: the reply is the call ("parameters"), or several, or after <|python_tag|> */
    {" {\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}\n", "[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]", ""},
    {"{\"name\": \"a\", \"parameters\": {}}; {\"name\": \"b\", \"parameters\": {\"k\": true}}",
     "[{\"name\": \"a\", \"arguments\": {}}, {\"name\": \"b\", \"arguments\": {\"k\": true}}]", ""},
    {"<|python_tag|>{\"name\": \"brave_search\", \"parameters\": {\"query\": \"x\"}}",
     "[{\"name\": \"brave_search\", \"arguments\": {\"query\": \"x\"}}]", ""},
    /* functionary */
    {"Sure.<function=get_weather>{\"city\": \"Paris\"}</function>", "[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]", "Sure."},
    /* DeepSeek R1/V3 */
    {"Checking." DS("calls\xE2\x96\x81" "begin") DS("call\xE2\x96\x81" "begin") "function" DS("sep") "get_weather\n```json\n{\"city\": \"Paris\"}\n```" DS("call\xE2\x96\x81" "end") DS("calls\xE2\x96\x81" "end"),
     "[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]", "Checking."},
    /* not calls: plain text, JSON that is not a call, a broken call (left as text) */
    {"Once upon a time, there was a dog.", NULL, NULL},
    {"{\"answer\": 42}", NULL, NULL},
    {"[1, 2, 3]", NULL, NULL},
    {"{\"name\": \"f\", \"arguments\": {}} and more", NULL, NULL},
    {"<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": }\n</tool_call>", NULL, NULL},
    {"Use [TOOL_CALLS] like this", NULL, NULL},
    {"", NULL, NULL},
};

static void test_replies(void) {
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const reply_case *c = &cases[i];
        char *content = NULL;
        size_t content_len = 0;
        json_t *calls = sp_tool_calls_parse(c->reply, strlen(c->reply), &content, &content_len);
        if (!c->calls) {
            CHECK_MSG(calls == NULL, "case %zu: found calls in %s", i, c->reply);
        } else {
            json_t *want = json_loads(c->calls, 0, NULL);
            CHECK_MSG(calls && json_equal(calls, want), "case %zu: %s", i, calls ? json_dumps(calls, JSON_COMPACT) : "no calls");
            CHECK_MSG(content && !strcmp(content, c->content) && content_len == strlen(c->content), "case %zu: content [%s]", i,
                      content ? content : "(null)");
            json_decref(want);
        }
        json_decref(calls);
        free(content);
    }
}

typedef struct prefix_case {
    const char *text;
    size_t safe;
} prefix_case;

static void test_stream_prefix(void) {
    static const prefix_case p[] = {
        {"Hello there", 11},     /* plain text goes out */
        {"  ", 0},               /* whitespace waits for what follows */
        {"  Hi", 4},
        {"{\"name\"", 0},        /* may be a bare JSON call */
        {"[TOOL", 0},            /* may be a marker */
        {"Sure. <tool", 6},      /* the text before a partial marker goes */
        {"Sure. <tool_call>{", 6},
        {"a < b", 5},            /* '<' followed by what no marker has */
        {"x [TOOL_CALLS]f[ARGS]{}", 2},
    };
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++) {
        const size_t got = sp_tool_calls_text_prefix(p[i].text, strlen(p[i].text), 0);
        CHECK_MSG(got == p[i].safe, "prefix case %zu (%s): %zu, wanted %zu", i, p[i].text, got, p[i].safe);
    }
    /* streamed a byte at a time, what went out plus what the end parses is the reply */
    const char *reply = "Let me look.\n<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>";
    size_t sent = 0;
    for (size_t n = 1; n <= strlen(reply); n++) {
        const size_t safe = sp_tool_calls_text_prefix(reply, n, sent);
        CHECK_MSG(safe >= sent && safe == sp_tool_calls_text_prefix(reply, n, 0), "at %zu bytes: %zu from where %zu went out", n, safe, sent);
        if (safe > sent) sent = safe;
    }
    char *content = NULL;
    json_t *calls = sp_tool_calls_parse(reply + sent, strlen(reply) - sent, &content, NULL);
    CHECK_MSG(sent == strlen("Let me look.\n") && calls && json_array_size(calls) == 1 && content && !strcmp(content, ""),
              "streamed: %zu bytes as text, %zu calls", sent, calls ? json_array_size(calls) : 0);
    json_decref(calls);
    free(content);
}

int main(void) {
    test_replies();
    test_stream_prefix();
    TEST_MAIN_END();
}
