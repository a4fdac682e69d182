/* libFuzzer target over the Go-template engine (Ollama's TEMPLATE): the
 * input is a template, parsed and rendered with Ollama's data model for a
 * conversation with a tool call and tools, under tight limits. Any input
 * must give output or an error with a position, never a crash, a hang or
 * unbounded memory. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "template/go_template.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const gt_limits fuzz_limits = {.max_steps = 20000, .max_output = 1 << 16, .max_heap = 8 << 20};

static const char *const messages_json =
    "[{\"role\":\"system\",\"content\":\"Be brief.\"},{\"role\":\"user\",\"content\":\"Hi {{ x }} \xF0\x9F\x98\x81\"},"
    "{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":[{\"function\":{\"name\":\"f\",\"arguments\":{\"n\":1.5,\"s\":\"<\"}}}]},"
    "{\"role\":\"tool\",\"content\":\"42\"},{\"role\":\"user\",\"content\":\"and?\"}]";
static const char *const extra_json =
    "{\"think\":true,\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"description\":\"d\",\"parameters\":"
    "{\"type\":\"object\",\"required\":[\"n\"],\"properties\":{\"n\":{\"type\":[\"number\",\"null\"]},\"s\":{\"type\":\"string\","
    "\"enum\":[\"a\",\"<\"]}}}}}]}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static json_t *messages, *extra;
    if (!messages) {
        messages = json_loads(messages_json, 0, NULL);
        extra = json_loads(extra_json, 0, NULL);
    }
    gt_program prog;
    gt_error err;
    if (gt_parse((const char *)data, size, &prog, &err)) {
        struct tm now = {.tm_year = 124, .tm_mon = 6, .tm_mday = 26, .tm_hour = 12};
        jbuf out = {0};
        gt_ollama_render(&prog, messages, extra, &now, &fuzz_limits, &out, &err);
        jbuf_free(&out);
    }
    gt_program_free(&prog);
    return 0;
}
