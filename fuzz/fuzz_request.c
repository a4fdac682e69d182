/* libFuzzer target over the server's request path: the first byte picks
 * the API ('0' OpenAI chat, '1' completions, '2' Ollama chat, '3' Ollama
 * generate, '4' OpenAI embeddings, '5' Ollama embed, '6' its older
 * embeddings), the rest is the body. Parsing and validation must accept or
 * name the bad field, never crash; what they accept must render with the
 * real model's chat template and tokenize, as the server then does. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/api_request.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static sprout_model *model;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    const char *dir = getenv("SPROUT_SHARED_DIR");
    char path[1024];
    snprintf(path, sizeof path, "%s/models/stories260K.gguf", dir && *dir ? dir : SPROUT_SHARED_DIR_DEFAULT);
    if (sprout_model_load(path, NULL, &model) != SPROUT_OK) {
        fprintf(stderr, "fuzz_request: %s\n", sprout_last_error());
        abort();
    }
    return 0;
}

/* An embedding request: what it accepts has 1..SP_EMBED_MAX_INPUTS inputs
 * of text (not empty) or ids, and each text tokenizes. */
static int embed_request(sp_embed_kind kind, const uint8_t *data, size_t size) {
    sp_embed_request req;
    char error[256];
    if (!sp_embed_request_parse(kind, (const char *)data, size, &req, error, sizeof error)) {
        if (!error[0]) abort();
        sp_embed_request_free(&req);
        return 0;
    }
    if (req.n_inputs > SP_EMBED_MAX_INPUTS || req.dimensions < 0 || (req.n_inputs && !req.inputs)) abort();
    for (size_t i = 0; i < req.n_inputs; i++) {
        const sp_embed_input *in = &req.inputs[i];
        if (!in->text == !in->ids || (in->text && !*in->text) || (in->ids && !in->n_ids)) abort();
        sprout_token *ids = NULL;
        size_t n = 0;
        if (in->text) sprout_model_tokenize_prompt(model, in->text, strlen(in->text), false, &ids, &n);
        sprout_free(ids);
    }
    sp_embed_request_free(&req);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    const unsigned pick = (unsigned)(uint8_t)(data[0] - '0') % 7;
    if (pick >= 4) return embed_request((sp_embed_kind)(pick - 4), data + 1, size - 1);
    const sp_api_kind kind = (sp_api_kind)pick;
    sp_api_request req;
    char error[256];
    if (!sp_api_request_parse(kind, (const char *)data + 1, size - 1, &req, error, sizeof error)) {
        if (!error[0]) abort(); /* a rejection always says why */
        sp_api_request_free(&req);
        return 0;
    }
    if (req.cfg.n_stop_strings > SP_API_MAX_STOPS || req.cfg.max_new_tokens < 0 || req.logprobs > 20) abort();
    sprout_token *ids = NULL;
    size_t n = 0;
    if (req.messages_json) {
        json_t *again = json_loads(req.messages_json, 0, NULL); /* what the template sees is valid JSON */
        if (!json_is_array(again)) abort();
        json_decref(again);
        json_t *vars = req.vars_json ? json_loads(req.vars_json, 0, NULL) : NULL;
        if ((req.vars_json && !json_is_object(vars)) || (req.tools && !json_is_array(json_object_get(vars, "tools")))) abort();
        json_decref(vars);
        sprout_model_chat_prompt_vars(model, NULL, req.messages_json, req.vars_json, true, NULL, NULL, &ids, &n);
    } else if (req.prompt) {
        sprout_model_tokenize_prompt(model, req.prompt, strlen(req.prompt), true, &ids, &n);
    }
    sprout_free(ids);
    sp_api_request_free(&req);
    return 0;
}
