/* Tool calls in a model's reply. Chat templates teach models to call the
 * tools a request offers in one of a few shapes; this finds them so that
 * the APIs can return structured tool_calls instead of text:
 *   <tool_call>{"name": ..., "arguments": {...}}</tool_call>   Hermes, Qwen2.5/3, SmolLM3 ...
 *   [TOOL_CALLS][{"name": ..., "arguments": {...}}, ...]        Mistral v0.3, Nemo
 *   [TOOL_CALLS]name[ARGS]{...}                                 Mistral Small 3.2, Devstral
 *   <function=name>{...}</function>                             functionary, Llama 3.1 (custom)
 *   <｜tool▁call▁begin｜>function<｜tool▁sep｜>name ```json {...} ```  DeepSeek R1/V3
 *   a reply that is only {"name": ..., "parameters"|"arguments": {...}} (or a
 *   list of them, or several separated by ';')                  Llama 3.x, and many others
 * A call whose JSON does not parse is left as text. */
#ifndef SPROUT_SERVER_TOOL_CALLS_H
#define SPROUT_SERVER_TOOL_CALLS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* The calls in text[0..len) as a JSON array of {"name": string, "arguments":
 * object (or the string the model wrote, when it is not a JSON object)}, or
 * NULL when there are none. *content (malloc'd, NUL-terminated) gets the text
 * outside the calls, trimmed; NULL content when the caller does not want it. */
json_t *sp_tool_calls_parse(const char *text, size_t len, char **content, size_t *content_len);

/* While a reply streams: how many of its first len bytes can go out as
 * text now, `sent` of them having gone out already (what an earlier call
 * returned; only the text after it is searched). What may begin a tool call
 * (a marker, or part of one at the end, or a reply that opens with '{' or
 * '[') is held back until the reply is complete; so is leading whitespace,
 * until it is known what follows. */
size_t sp_tool_calls_text_prefix(const char *text, size_t len, size_t sent);

/* The GBNF grammar of one call, in the Hermes/Qwen shape (tagged)
 *   <tool_call>\n{"name": NAME, "arguments": ARGS}\n</tool_call>
 * or as the bare object {"name": NAME, "arguments": ARGS} (Llama 3.x's
 * form, which the parser takes from any model), for a reply that must or
 * may call a tool (`only`: the function tool_choice names): NAME one of
 * the offered tools' names, ARGS valid against its "parameters"
 * (sprout_json_schema_to_grammar, each tool's rules renamed apart). A
 * strict tool ("strict": true) whose parameters use a keyword the
 * converter refuses fails; another one's arguments are then any object.
 * NULL with `error` saying why (naming tools[i] or tool_choice); malloc'd. */
char *sp_tool_call_grammar(const json_t *tools, const char *only, bool tagged, char *error, size_t error_size);

#endif
