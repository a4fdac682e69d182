/* What the API formats share when they word a generation (response_parts.c). */
#ifndef SPROUT_SERVER_RESPONSE_PARTS_H
#define SPROUT_SERVER_RESPONSE_PARTS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "server/server_internal.h"
#include "sprout.h"

/* Usage figures of a result. */
typedef struct sp_usage {
    int64_t prompt, cached, completion;
} sp_usage;
sp_usage sp_usage_of(const sprout_result *r);
/* OpenAI's and Ollama's words for why generation ended. */
const char *sp_finish_word(const sprout_result *r);

/* A piece of a chat reply as it streams, split for sending (mu held): what
 * is reasoning (when the request wants it apart) is appended to *reasoning,
 * and *send (n bytes) is the answer text that may go out now: all of it, or with
 * tools offered, what cannot begin a tool call. With `final` (the reply
 * ended) nothing stays back but what sp_chat_held_calls then takes. */
void sp_chat_piece_parts(sp_job *j, const char *text, size_t len, bool final, sp_buf *reasoning, const char **send, size_t *n);
/* At the end of a chat: the tool calls in the text still held back (see
 * tool_calls.h; NULL if none, or no tools were offered), and in *held what
 * of that text is to go out as text. */
json_t *sp_chat_held_calls(sp_job *j, char **held, size_t *held_len);
/* A whole reply's parts: the reasoning appended to *reasoning (when wanted
 * apart), the answer in *content (malloc'd), and the tool calls in it (NULL
 * if none, or no tools were offered; the answer is then the text around them). */
json_t *sp_chat_reply_parts(const sp_job *j, const char *text, size_t len, sp_buf *reasoning, char **content, size_t *content_len);

#endif
