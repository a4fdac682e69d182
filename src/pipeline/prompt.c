/* A model's prompts as token ids: raw text, fill-in-the-middle, and chat
 * messages rendered with the model's template. No pipeline is involved:
 * pipelines, chat sessions and the server's requests all start here. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/utf8.h"
#include "model/model.h"
#include "pipeline/prompt.h"
#include "tokenizer/tokenizer.h"

static char *special_text(const sprout_tokenizer *tok, sprout_special which, bool *failed) {
    sprout_token id = sprout_tokenizer_special(tok, which);
    const char *text;
    size_t len;
    if (!tok || id < 0 || sprout_token_text(tok, id, &text, &len) != SPROUT_OK) return NULL;
    char *copy = strndup(text, len);
    if (!copy) *failed = true;
    return copy;
}

sprout_status sp_bos_eos_text(const sprout_tokenizer *tok, char **bos, char **eos) {
    bool failed = false;
    *bos = special_text(tok, SPROUT_SPECIAL_BOS, &failed);
    *eos = special_text(tok, SPROUT_SPECIAL_EOS, &failed);
    if (!failed) return SPROUT_OK;
    free(*bos);
    free(*eos);
    *bos = *eos = NULL;
    return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
}

sprout_status sp_templated_tokens(const sprout_tokenizer *tok, const char *text, size_t len, int32_t **ids, size_t *n) {
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
    if (parse_special) return sp_templated_tokens(model->tokenizer, text, len, ids, n_ids);
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
    char *bos, *eos;
    if ((st = sp_bos_eos_text(model->tokenizer, &bos, &eos)) != SPROUT_OK) {
        sprout_template_free(t);
        return st;
    }
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
    if (st == SPROUT_OK && ids && n_ids) st = sp_templated_tokens(model->tokenizer, rendered, rendered_len, ids, n_ids);
    if (st == SPROUT_OK && text) {
        *text = rendered;
        if (text_len) *text_len = rendered_len;
    } else {
        free(rendered);
    }
    return st;
}
