/* Chat sessions: the history is rendered with the chat template at every
 * turn and tokenized whole; the generation loop then reuses the cached
 * prefix, so only the new turn's tokens are computed, and the result is
 * exactly what rendering the whole conversation at once would give. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/utf8.h"
#include "pipeline/pipeline_internal.h"
#include "pipeline/sequence.h"
#include "tokenizer/tokenizer_internal.h"

static char *dup_text(const char *s, size_t n) {
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = 0;
    }
    return d;
}

static sprout_status push_message(sprout_pipeline *p, const char *role, const char *content, size_t len) {
    if (p->n_messages == p->cap_messages) {
        size_t cap = p->cap_messages ? 2 * p->cap_messages : 8;
        chat_message *m = realloc(p->messages, cap * sizeof *m);
        if (!m) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
        p->messages = m;
        p->cap_messages = cap;
    }
    chat_message *m = &p->messages[p->n_messages];
    m->role = dup_text(role, strlen(role));
    m->content = dup_text(content, len);
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

static char *special_text(const sprout_tokenizer *tok, sprout_special which) {
    sprout_token id = sprout_tokenizer_special(tok, which);
    const char *text;
    size_t len;
    if (!tok || id < 0 || sprout_token_text(tok, id, &text, &len) != SPROUT_OK) return NULL;
    return dup_text(text, len);
}

/* A rendered template to ids: the template writes special tokens as text;
 * BOS is added only if the model wants one and the template did not write it. */
static sprout_status templated_tokens(const sprout_tokenizer *tok, const char *text, size_t len, int32_t **ids, size_t *n) {
    sp_token_list list = {0};
    sp_token_list_push(&list, -1); /* room for a BOS in front */
    sprout_status st = sp_tokenize_all(tok, text, len, SPROUT_TOKENIZE_PARSE_SPECIAL, &list);
    size_t count = list.n > 0 ? list.n - 1 : 0;
    sprout_token bos = sprout_tokenizer_special(tok, SPROUT_SPECIAL_BOS);
    if (st == SPROUT_OK && !list.ids) st = sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
    if (st == SPROUT_OK && sprout_tokenizer_adds_bos(tok) && bos >= 0 && (count == 0 || list.ids[1] != bos)) {
        list.ids[0] = bos;
        count++;
    } else if (st == SPROUT_OK) {
        memmove(list.ids, list.ids + 1, count * sizeof *list.ids);
    }
    if (st != SPROUT_OK) {
        free(list.ids);
        return st;
    }
    *ids = list.ids;
    *n = count;
    return SPROUT_OK;
}

/* Text the tokenizer may take: valid UTF-8, else an error naming the byte. */
static sprout_status check_utf8(const char *text, size_t len, const char *what) {
    for (size_t i = 0; i < len;) {
        const size_t cl = sp_utf8_valid_prefix_len((const unsigned char *)text + i, len - i);
        if (!cl) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "the %s is not valid UTF-8 (byte %zu: 0x%02x)", what, i, (unsigned char)text[i]);
        i += cl;
    }
    return SPROUT_OK;
}

sprout_status sprout_model_tokenize_prompt(const sprout_model *model, const char *text, size_t len, bool parse_special,
                                           sprout_token **ids, size_t *n_ids) {
    if (!model || (!text && len) || !ids || !n_ids) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "NULL model, text or output");
    *ids = NULL;
    *n_ids = 0;
    if (!model->tokenizer) return sp_fail(SPROUT_ERR_UNSUPPORTED, "the model has no vocabulary");
    if (!text) text = "";
    sprout_status st = check_utf8(text, len, "prompt");
    if (st != SPROUT_OK) return st;
    if (parse_special) return templated_tokens(model->tokenizer, text, len, ids, n_ids);
    sp_token_list list = {0};
    /* a byte-fallback vocabulary can need more ids than the prompt has bytes */
    st = sp_tokenize_all(model->tokenizer, text, len, SPROUT_TOKENIZE_ADD_SPECIAL, &list);
    if (st != SPROUT_OK) {
        free(list.ids);
        return st;
    }
    *ids = list.ids;
    *n_ids = list.n;
    return SPROUT_OK;
}

sprout_status sprout_model_fim_prompt(const sprout_model *model, const char *prefix, const char *suffix, sprout_token **ids,
                                      size_t *n_ids) {
    if (!model || !prefix || !suffix || !ids || !n_ids) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "NULL model, text or output");
    *ids = NULL;
    *n_ids = 0;
    const sprout_tokenizer *tok = model->tokenizer;
    if (!tok) return sp_fail(SPROUT_ERR_UNSUPPORTED, "the model has no vocabulary");
    const sprout_token pre = sprout_tokenizer_special(tok, SPROUT_SPECIAL_FIM_PRE), suf = sprout_tokenizer_special(tok, SPROUT_SPECIAL_FIM_SUF),
                       mid = sprout_tokenizer_special(tok, SPROUT_SPECIAL_FIM_MID);
    if (pre < 0 || suf < 0 || mid < 0)
        return sp_fail(SPROUT_ERR_UNSUPPORTED, "this model has no fill-in-the-middle tokens: it cannot complete between a prefix and a suffix");
    sprout_status st = check_utf8(prefix, strlen(prefix), "prefix");
    if (st == SPROUT_OK) st = check_utf8(suffix, strlen(suffix), "suffix");
    if (st != SPROUT_OK) return st;
    sp_token_list list = {0};
    if (sprout_tokenizer_adds_bos(tok)) sp_token_list_push(&list, sprout_tokenizer_special(tok, SPROUT_SPECIAL_BOS));
    sp_token_list_push(&list, pre);
    st = sp_tokenize_all(tok, prefix, strlen(prefix), 0, &list);
    sp_token_list_push(&list, suf);
    if (st == SPROUT_OK) st = sp_tokenize_all(tok, suffix, strlen(suffix), 0, &list);
    sp_token_list_push(&list, mid);
    if (st == SPROUT_OK && list.oom) st = sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
    if (st != SPROUT_OK) {
        free(list.ids);
        return st;
    }
    *ids = list.ids;
    *n_ids = list.n;
    return SPROUT_OK;
}

sprout_status sprout_model_chat_prompt(const sprout_model *model, const char *template_override, const char *messages_json,
                                       bool add_generation_prompt, char **text, size_t *text_len, sprout_token **ids,
                                       size_t *n_ids) {
    return sprout_model_chat_prompt_vars(model, template_override, messages_json, NULL, add_generation_prompt, text, text_len, ids,
                                         n_ids);
}

sprout_status sprout_model_chat_prompt_vars(const sprout_model *model, const char *template_override, const char *messages_json,
                                            const char *vars_json, bool add_generation_prompt, char **text, size_t *text_len,
                                            sprout_token **ids, size_t *n_ids) {
    if (!model || !messages_json) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "NULL model or messages");
    if (!model->tokenizer) return sp_fail(SPROUT_ERR_UNSUPPORTED, "the model has no vocabulary: chat needs one");
    const char *src;
    size_t src_len;
    sprout_template *t = NULL;
    sprout_status st = sprout_template_for_model(model->gguf, template_override, &src, &src_len);
    if (st == SPROUT_OK) st = sprout_template_parse(src, src_len, &t);
    if (st != SPROUT_OK) return st;
    char *bos = special_text(model->tokenizer, SPROUT_SPECIAL_BOS), *eos = special_text(model->tokenizer, SPROUT_SPECIAL_EOS);
    sprout_template_options opt = {.struct_size = sizeof opt,
                                   .add_generation_prompt = add_generation_prompt,
                                   .bos_token = bos,
                                   .eos_token = eos,
                                   .extra_json = vars_json};
    char *rendered = NULL;
    size_t rendered_len = 0;
    st = sprout_template_render_json(t, messages_json, &opt, &rendered, &rendered_len);
    sprout_template_free(t);
    free(bos);
    free(eos);
    if (st == SPROUT_OK && ids && n_ids) st = templated_tokens(model->tokenizer, rendered, rendered_len, ids, n_ids);
    if (st == SPROUT_OK && text) {
        *text = rendered;
        if (text_len) *text_len = rendered_len;
    } else {
        free(rendered);
    }
    return st;
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
    if (!p->chat_template) {
        sprout_status st = sprout_chat_set_template(p, NULL);
        if (st != SPROUT_OK) return st;
    }
    if (!p->bos_text) p->bos_text = special_text(p->model->tokenizer, SPROUT_SPECIAL_BOS);
    if (!p->eos_text) p->eos_text = special_text(p->model->tokenizer, SPROUT_SPECIAL_EOS);
    p->chat_active = true;
    if (system_prompt && *system_prompt) {
        if (!sp_utf8_is_valid(system_prompt, strlen(system_prompt)))
            return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "the system prompt is not valid UTF-8");
        return push_message(p, "system", system_prompt, strlen(system_prompt));
    }
    return SPROUT_OK;
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
    if ((st = render(p, &prompt, &prompt_len)) == SPROUT_OK) st = templated_tokens(p->model->tokenizer, prompt, prompt_len, &ids, &n);
    sprout_generation_config c;
    if (st == SPROUT_OK) {
        sp_config_copy(&c, cfg ? cfg : &p->config);
        c.echo = false;
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
