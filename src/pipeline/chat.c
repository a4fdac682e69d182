/* Chat sessions: the history is rendered with the chat template at every
 * turn and tokenized whole; the generation loop then reuses the cached
 * prefix, so only the new turn's tokens are computed, and the result is
 * exactly what rendering the whole conversation at once would give. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/utf8.h"
#include "pipeline/pipeline_internal.h"
#include "pipeline/prompt.h"
#include "pipeline/sequence.h"

static sprout_status push_message(sprout_pipeline *p, const char *role, const char *content, size_t len) {
    if (p->n_messages == p->cap_messages) {
        size_t cap = p->cap_messages ? 2 * p->cap_messages : 8;
        chat_message *m = realloc(p->messages, cap * sizeof *m);
        if (!m) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
        p->messages = m;
        p->cap_messages = cap;
    }
    chat_message *m = &p->messages[p->n_messages];
    m->role = strdup(role);
    m->content = strndup(content, len);
    if (!m->role || !m->content) {
        free(m->role);
        free(m->content);
        return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    p->n_messages++;
    return SPROUT_OK;
}

static void pop_message(sprout_pipeline *p) {
    if (!p->n_messages) return;
    p->n_messages--;
    free(p->messages[p->n_messages].role);
    free(p->messages[p->n_messages].content);
}

sprout_status sprout_chat_set_template(sprout_pipeline *p, const char *name_or_source) {
    if (!p) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "NULL pipeline");
    const char *src;
    size_t len;
    sprout_status st = sprout_template_for_model(p->model->gguf, name_or_source, &src, &len);
    sprout_template *t = NULL;
    if (st == SPROUT_OK) st = sprout_template_parse(src, len, &t);
    if (st != SPROUT_OK) return st;
    sprout_template_free(p->chat_template);
    p->chat_template = t;
    return SPROUT_OK;
}

sprout_status sprout_chat_start(sprout_pipeline *p, const char *system_prompt) {
    if (!p) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "NULL pipeline");
    if (!p->model->tokenizer) return sp_fail(SPROUT_ERR_UNSUPPORTED, "the model has no vocabulary: chat needs one");
    sprout_chat_finish(p);
    sp_pipeline_forget_shift(p); /* a new conversation */
    if (!p->chat_template) {
        sprout_status st = sprout_chat_set_template(p, NULL);
        if (st != SPROUT_OK) return st;
    }
    if (!p->bos_text && !p->eos_text) {
        sprout_status st = sp_bos_eos_text(p->model->tokenizer, &p->bos_text, &p->eos_text);
        if (st != SPROUT_OK) return st;
    }
    p->chat_active = true;
    if (system_prompt && *system_prompt) {
        if (!sp_utf8_is_valid(system_prompt, strlen(system_prompt)))
            return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "the system prompt is not valid UTF-8");
        return push_message(p, "system", system_prompt, strlen(system_prompt));
    }
    return SPROUT_OK;
}

sprout_status sprout_chat_add_message(sprout_pipeline *p, const char *role, const char *content) {
    if (!p || !role || !content) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "NULL argument");
    if (!p->chat_active) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "no chat: sprout_chat_start first");
    static const char *const roles[] = {"system", "user", "assistant", "tool"};
    bool known = false;
    for (size_t i = 0; i < sizeof roles / sizeof *roles; i++) known |= !strcmp(role, roles[i]);
    if (!known) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "unknown role \"%.32s\" (system, user, assistant or tool)", role);
    const size_t len = strlen(content);
    if (!sp_utf8_is_valid(content, len)) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "the %s message is not valid UTF-8", role);
    return push_message(p, role, content, len);
}

size_t sprout_chat_history_length(const sprout_pipeline *p) { return p ? p->n_messages : 0; }

sprout_status sprout_chat_history_message(const sprout_pipeline *p, size_t i, const char **role, const char **content) {
    if (!p || i >= p->n_messages) return sp_fail(SPROUT_ERR_OUT_OF_RANGE, "no message %zu", i);
    if (role) *role = p->messages[i].role;
    if (content) *content = p->messages[i].content;
    return SPROUT_OK;
}

/* The whole conversation as the model's template renders it. */
static sprout_status render(sprout_pipeline *p, char **prompt, size_t *len) {
    sprout_chat_message *msgs = malloc((p->n_messages ? p->n_messages : 1) * sizeof *msgs);
    if (!msgs) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
    for (size_t i = 0; i < p->n_messages; i++) msgs[i] = (sprout_chat_message){p->messages[i].role, p->messages[i].content};
    sprout_template_options opt = {.struct_size = sizeof opt,
                                   .add_generation_prompt = true,
                                   .bos_token = p->bos_text,
                                   .eos_token = p->eos_text};
    sprout_status st = sprout_template_render(p->chat_template, msgs, p->n_messages, &opt, prompt, len);
    free(msgs);
    return st;
}

/* The rendered conversation as the cache holds it after context shifts:
 * the run of tokens dropped after the first shift_keep is cut out of it
 * too; then, while the turn does not fit and the config allows it, more
 * is dropped from what is cached (llama.cpp's halving each time). The
 * tokens stay in ids[0, *n). */
static sprout_status fit_turn(sprout_pipeline *p, const sprout_generation_config *cfg, int32_t *ids, size_t *n) {
    if (p->n_dropped) {
        const size_t gap_end = (size_t)p->shift_keep + (size_t)p->n_dropped;
        if (*n <= gap_end) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "the conversation no longer reaches past its dropped tokens");
        memmove(ids + p->shift_keep, ids + gap_end, (*n - gap_end) * sizeof *ids);
        *n -= (size_t)p->n_dropped;
    }
    while (*n >= (size_t)p->n_ctx) {
        if (!cfg->context_shift)
            return sp_fail(SPROUT_ERR_OUT_OF_RANGE, "the chat has outgrown the context: %zu tokens, the context holds %d (start a new chat, "
                                                    "give a larger context, or turn context shift on)", *n, p->n_ctx);
        int32_t reuse = 0;
        while (reuse < p->n_cached && (size_t)reuse < *n - 1 && p->cached[reuse] == ids[reuse]) reuse++;
        sp_kv_truncate(&p->ctx.kv, 0, reuse);
        p->n_cached = reuse;
        const int32_t keep = p->n_dropped ? p->shift_keep : sp_seq_n_keep(p->model, cfg, *n), before = p->n_cached;
        if (reuse <= keep)
            return sp_fail(SPROUT_ERR_OUT_OF_RANGE, "the new turn does not fit the context of %d tokens even after dropping older ones "
                                                    "(%zu tokens, %d kept)", p->n_ctx, *n, keep);
        sprout_status st = sp_pipeline_shift(p, keep);
        if (st != SPROUT_OK) return st;
        const int32_t dropped = before - p->n_cached;
        memmove(ids + keep, ids + keep + dropped, (*n - (size_t)keep - (size_t)dropped) * sizeof *ids);
        *n -= (size_t)dropped;
    }
    return SPROUT_OK;
}

sprout_status sprout_chat_generate(sprout_pipeline *p, const char *user_message, const sprout_generation_config *cfg,
                                   sprout_streamer streamer, void *user, sprout_result **out) {
    if (!p || !user_message || !out) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "NULL pipeline, message or output");
    *out = NULL;
    if (!p->chat_active) {
        sprout_status st = sprout_chat_start(p, NULL);
        if (st != SPROUT_OK) return st;
    }
    const size_t msg_len = strlen(user_message);
    if (!sp_utf8_is_valid(user_message, msg_len)) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "the message is not valid UTF-8");
    sprout_status st = push_message(p, "user", user_message, msg_len);
    if (st != SPROUT_OK) return st;

    const double t0 = sp_now_ms();
    char *prompt = NULL;
    size_t prompt_len = 0;
    int32_t *ids = NULL;
    size_t n = 0;
    if ((st = render(p, &prompt, &prompt_len)) == SPROUT_OK) st = sp_templated_tokens(p->model->tokenizer, prompt, prompt_len, &ids, &n);
    sprout_generation_config c;
    if (st == SPROUT_OK) {
        sp_config_copy(&c, cfg ? cfg : &p->config);
        c.echo = false;
        st = fit_turn(p, &c, ids, &n);
    }
    if (st == SPROUT_OK) {
        st = sp_generate(p, ids, n, NULL, 0, sp_now_ms() - t0, &c, streamer, user, out);
    }
    free(prompt);
    free(ids);
    if (st != SPROUT_OK || sprout_result_finish_reason(*out) == SPROUT_FINISH_CANCELLED) {
        pop_message(p); /* the turn never happened */
        return st;
    }
    size_t len;
    const char *reply = sprout_result_text(*out, &len);
    st = push_message(p, "assistant", reply, len);
    if (st != SPROUT_OK) {
        sprout_result_free(*out);
        *out = NULL;
    }
    return st;
}
