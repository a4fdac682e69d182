/* What the API formats (openai.c, ollama.c) share when they word a
 * generation: usage figures, the finish word, and a chat reply split into
 * its reasoning, its answer text and its tool calls. */
#include <stdlib.h>
#include <string.h>

#include "server/response_parts.h"
#include "server/tool_calls.h"

sp_usage sp_usage_of(const sprout_result *r) {
    sprout_perf_metrics m = {.struct_size = sizeof m};
    sprout_result_metrics(r, &m);
    return (sp_usage){m.n_prompt_tokens, m.n_prompt_tokens - m.n_prefill_tokens, m.n_generated_tokens};
}

const char *sp_finish_word(const sprout_result *r) {
    return sprout_result_finish_reason(r) == SPROUT_FINISH_LENGTH ? "length" : "stop";
}

void sp_chat_piece_parts(sp_job *j, const char *text, size_t len, bool final, sp_buf *reasoning, const char **send, size_t *n) {
    if (j->split_reasoning) {
        j->answer.len = 0;
        sp_reasoning_feed(&j->reasoning, text, len, final, reasoning, &j->answer);
        text = j->answer.data ? j->answer.data : "";
        len = j->answer.len;
    }
    *send = text;
    *n = len;
    if (!j->req.tools) return;
    if (!sp_buf_put(&j->reply, text, len)) { /* out of memory: let the text go as text */
        j->reply_sent = j->reply.len;
        return;
    }
    const size_t safe = sp_tool_calls_text_prefix(j->reply.data, j->reply.len, j->reply_sent);
    *send = j->reply.data + j->reply_sent;
    *n = safe > j->reply_sent ? safe - j->reply_sent : 0;
    if (safe > j->reply_sent) j->reply_sent = safe;
}

json_t *sp_chat_held_calls(sp_job *j, char **held, size_t *held_len) {
    const char *rest = j->reply.data ? j->reply.data + j->reply_sent : "";
    const size_t n = j->reply.len - j->reply_sent;
    json_t *calls = j->req.tools ? sp_tool_calls_parse(rest, n, held, held_len) : NULL;
    if (!calls) {
        *held = strndup(rest, n);
        *held_len = *held ? n : 0;
        if (!*held) sp_oom_note();
    }
    j->reply_sent = j->reply.len;
    return calls;
}

json_t *sp_chat_reply_parts(const sp_job *j, const char *text, size_t len, sp_buf *reasoning, char **content, size_t *content_len) {
    sp_buf answer = {0};
    if (j->split_reasoning) {
        sp_reasoning r;
        sp_reasoning_init(&r, j->reasoning_opened);
        sp_reasoning_feed(&r, text, len, true, reasoning, &answer);
        sp_reasoning_free(&r);
        text = answer.data ? answer.data : "";
        len = answer.len;
    }
    json_t *calls = j->req.tools ? sp_tool_calls_parse(text, len, content, content_len) : NULL;
    if (!calls) {
        *content = strndup(text, len);
        *content_len = *content ? len : 0;
        if (!*content) sp_oom_note();
    }
    free(answer.data);
    return calls;
}
