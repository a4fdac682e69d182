/* libFuzzer target over the finding of tool calls in a model's reply: any
 * text gives calls that are {"name": string, "arguments": ...} objects or
 * none, never a crash; and the streaming rule never takes back text it let
 * go (its safe prefix only grows as the reply does). */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>

#include "server/tool_calls.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *text = (const char *)data;
    char *content = NULL;
    size_t content_len = 0;
    json_t *calls = sp_tool_calls_parse(text, size, &content, &content_len);
    if (calls) {
        if (!json_is_array(calls) || json_array_size(calls) == 0 || !content || content[content_len] != 0) abort();
        size_t i;
        json_t *call;
        json_array_foreach(calls, i, call) {
            if (!json_is_string(json_object_get(call, "name")) || !json_object_get(call, "arguments")) abort();
        }
    }
    json_decref(calls);
    free(content);
    size_t sent = 0;
    for (size_t n = 0; n <= size; n += 1 + n / 8) {
        const size_t safe = sp_tool_calls_text_prefix(text, n, sent);
        if (safe != sp_tool_calls_text_prefix(text, n, 0)) abort(); /* looking after what went out changes nothing */
        if (safe > n || safe < sent) abort();
        sent = safe;
    }
    return 0;
}
