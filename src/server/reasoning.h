/* A reply's reasoning, as thinking models write it: between <think> and
 * </think> (DeepSeek R1 and its distills, QwQ, Qwen3, SmolLM3 ...), the
 * opening often written by the chat template at the end of the prompt
 * rather than by the model. The APIs return it apart from the answer
 * (OpenAI-compatible servers as reasoning_content, Ollama as thinking).
 * gpt-oss writes OpenAI's harmony format instead: messages
 * <|channel|>NAME<|message|>TEXT<|end|>, each later one after
 * <|start|>assistant; the analysis channel is its reasoning, the others
 * (final) its answer, their headers dropped. A reply that begins with
 * <|channel|> is read so.
 * Text is placed as it streams: a marker that may be starting waits. */
#ifndef SPROUT_SERVER_REASONING_H
#define SPROUT_SERVER_REASONING_H

#include <stdbool.h>
#include <stddef.h>

#include "core/buf.h"

typedef struct sp_reasoning {
    int phase;          /* before any reasoning, in it, or past it (reasoning.c) */
    bool skip_space;    /* drop the whitespace that follows a marker */
    bool analysis;      /* harmony: the current message is on the analysis channel */
    sp_buf held;        /* bytes not yet placed */
} sp_reasoning;

/* opened_by_prompt: the prompt ends with <think>, so the reply starts inside. */
void sp_reasoning_init(sp_reasoning *r, bool opened_by_prompt);
/* Places text[0..len): what is reasoning goes to *reasoning, what is the
 * answer to *content. With `final` (the reply ended) nothing is held back. */
void sp_reasoning_feed(sp_reasoning *r, const char *text, size_t len, bool final, sp_buf *reasoning, sp_buf *content);
void sp_reasoning_free(sp_reasoning *r);

/* Whether a rendered prompt leaves the reply inside a <think> block. */
bool sp_reasoning_opened_by(const char *prompt, size_t len);
/* Whether a rendered prompt asks for a harmony reply (it ends with
 * <|start|>assistant: gpt-oss), whose channels are always told apart. */
bool sp_reasoning_harmony_prompt(const char *prompt, size_t len);

#endif
