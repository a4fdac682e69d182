/* sprout/chat_template.h: rendering chat templates.
 * Part of <sprout.h>, whose conventions hold here. */
#ifndef SPROUT_API_CHAT_TEMPLATE_H
#define SPROUT_API_CHAT_TEMPLATE_H

#include "gguf.h"

SPROUT_BEGIN_DECLS

/* ---------------------------------------------------------------------------
 * Chat templates
 *
 * A Jinja2 interpreter for the chat templates models ship in
 * tokenizer.chat_template, rendering byte for byte what Hugging Face
 * transformers renders with Python's jinja2 (trim_blocks and lstrip_blocks
 * on, raise_exception and strftime_now defined, tojson as json.dumps).
 *
 * It also takes Ollama's Go text/template (a Modelfile's TEMPLATE) and
 * renders it as Ollama does, from the same messages JSON and extra_json
 * (tools, think, suffix). The dialect comes from the source: one without
 * "{%" or "{#" is Go when an action starts (after an optional "-") with
 * ".", "$", a comment, if/else/end/break/continue, or a word then a space
 * and a field or variable (range .X); anything else is Jinja.
 * docs/TEMPLATES.md.
 *
 *   sprout_template *t;
 *   sprout_template_parse(src, strlen(src), &t);
 *   sprout_chat_message msgs[] = {{"system", "Be brief."}, {"user", "Hi"}};
 *   sprout_template_options opt = {sizeof opt, .add_generation_prompt = true, .bos_token = "<s>"};
 *   char *prompt; size_t len;
 *   if (sprout_template_render(t, msgs, 2, &opt, &prompt, &len) == SPROUT_OK) { ...; sprout_free(prompt); }
 *   sprout_template_free(t);
 *
 * Errors (syntax, run time, or the template's own raise_exception) are
 * SPROUT_ERR_FORMAT; sprout_last_error() gives "line L, column C: what" or,
 * for raise_exception, the template's message verbatim, and the accessors
 * below give the position.
 * ------------------------------------------------------------------------- */
typedef struct sprout_template sprout_template;

typedef struct sprout_chat_message {
    const char *role;
    const char *content;
} sprout_chat_message;

typedef struct sprout_template_options {
    size_t struct_size;          /* sizeof(sprout_template_options), for future fields */
    bool add_generation_prompt;
    const char *bos_token;       /* NULL: left undefined, as transformers does */
    const char *eos_token;
    const char *extra_json;      /* a JSON object of more variables (tools, enable_thinking ...), or NULL */
    const char *now;             /* "YYYY-MM-DDTHH:MM:SS" for strftime_now; NULL: the current local time */
} sprout_template_options;

sprout_status sprout_template_parse(const char *source, size_t len, sprout_template **out);
void sprout_template_free(sprout_template *t);

/* Renders with messages given as role/content pairs. *out is NUL-terminated
 * and freed with sprout_free(). */
sprout_status sprout_template_render(const sprout_template *t, const sprout_chat_message *messages, size_t n_messages,
                                     const sprout_template_options *options, char **out, size_t *out_len);
/* Renders with messages given as a JSON array of objects (any fields:
 * role, content, tool_calls, ...). */
sprout_status sprout_template_render_json(const sprout_template *t, const char *messages_json,
                                          const sprout_template_options *options, char **out, size_t *out_len);

/* Where the last failed template call on this thread failed (1-based; 0 if
 * unknown), and whether it was the template's own raise_exception(). */
int sprout_template_error_line(void);
int sprout_template_error_column(void);
bool sprout_template_error_raised(void);

/* The source of a built-in template: "chatml", "llama2", "llama3",
 * "zephyr", "phi3", "gemma", "mistral"; NULL for other names. */
const char *sprout_template_builtin(const char *name);

/* The template to use for a model: `override` if given (a built-in name, or
 * else template source itself), otherwise tokenizer.chat_template from the
 * file, otherwise the ChatML built-in. *source points into the file or a
 * static string. */
sprout_status sprout_template_for_model(const sprout_gguf *gguf, const char *override, const char **source, size_t *len);

SPROUT_END_DECLS

#endif /* SPROUT_API_CHAT_TEMPLATE_H */
