/* sprout/chat.h: a pipeline's conversation.
 * Part of <sprout.h>, whose conventions hold here. */
#ifndef SPROUT_API_CHAT_H
#define SPROUT_API_CHAT_H

#include "generate.h"

SPROUT_BEGIN_DECLS

/* Chat: a conversation rendered with the model's chat template (or the one
 * set with sprout_chat_set_template). Each call adds the user message and the
 * reply to the history; only tokens not already in the cache are computed. */
sprout_status sprout_chat_start(sprout_pipeline *p, const char *system_prompt);
sprout_status sprout_chat_set_template(sprout_pipeline *p, const char *name_or_source);
sprout_status sprout_chat_generate(sprout_pipeline *p, const char *user_message, const sprout_generation_config *cfg,
                                   sprout_streamer streamer, void *user, sprout_result **out);
/* Adds a message to the history without generating (earlier turns, as a
 * Modelfile's MESSAGE lines give them): role "system", "user", "assistant"
 * or "tool", content valid UTF-8. The next sprout_chat_generate renders it
 * with the rest. SPROUT_ERR_INVALID_ARGUMENT outside a chat. */
sprout_status sprout_chat_add_message(sprout_pipeline *p, const char *role, const char *content);
/* Messages in the history (system included). */
size_t sprout_chat_history_length(const sprout_pipeline *p);
sprout_status sprout_chat_history_message(const sprout_pipeline *p, size_t i, const char **role, const char **content);
void sprout_chat_finish(sprout_pipeline *p);

SPROUT_END_DECLS

#endif /* SPROUT_API_CHAT_H */
