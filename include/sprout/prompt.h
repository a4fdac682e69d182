/* sprout/prompt.h: prompts for chat and code models.
 * Part of <sprout.h>, whose conventions hold here. */
#ifndef SPROUT_API_PROMPT_H
#define SPROUT_API_PROMPT_H

#include "model.h"

SPROUT_BEGIN_DECLS

/* ---------------------------------------------------------------------------
 * Prompts for chat models
 *
 * Renders an OpenAI-style messages array (JSON text: [{"role":..,
 * "content":..}, ...], any extra fields visible to the template) with the
 * model's chat template (or `template_override`: a built-in name or Jinja
 * source) and tokenizes it the way the template expects: special-token
 * text is parsed, BOS is added when the model wants one and the template
 * did not write it. Text and ids are freed with sprout_free(); either
 * output may be NULL.
 * ------------------------------------------------------------------------- */
sprout_status sprout_model_chat_prompt(const sprout_model *model, const char *template_override, const char *messages_json,
                                       bool add_generation_prompt, char **text, size_t *text_len, sprout_token **ids,
                                       size_t *n_ids);
/* The same with more template variables: vars_json, a JSON object such as
 * {"tools": [...]} or {"enable_thinking": false} (NULL: none). */
sprout_status sprout_model_chat_prompt_vars(const sprout_model *model, const char *template_override, const char *messages_json,
                                            const char *vars_json, bool add_generation_prompt, char **text, size_t *text_len,
                                            sprout_token **ids, size_t *n_ids);
/* A fill-in-the-middle prompt for code models (prefix, hole, suffix):
 * BOS as the model wants, then FIM_PRE prefix FIM_SUF suffix FIM_MID, the
 * texts tokenized as raw text; the reply is the middle.
 * SPROUT_ERR_UNSUPPORTED when the vocabulary has no FIM tokens. */
sprout_status sprout_model_fim_prompt(const sprout_model *model, const char *prefix, const char *suffix, sprout_token **ids,
                                      size_t *n_ids);
/* A raw-text prompt as sprout_generate tokenizes it (BOS as the model wants,
 * special-token text not parsed, unless parse_special). */
sprout_status sprout_model_tokenize_prompt(const sprout_model *model, const char *text, size_t len, bool parse_special,
                                           sprout_token **ids, size_t *n_ids);

SPROUT_END_DECLS

#endif /* SPROUT_API_PROMPT_H */
