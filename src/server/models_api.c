/* The endpoints that describe models, in Ollama's and OpenAI's shapes:
 * GET /api/tags and /v1/models (every model: the -m one, or the store's,
 * listed afresh each time so models created since appear), GET /api/ps
 * (those loaded), POST /api/show, POST /api/pull, GET /api/version. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "json/json_util.h"
#include "server/server_internal.h"

/* --- a model's description ---------------------------------------------------------------------------------- */

/* "1.1B", "260K": the parameter count as Ollama shows it. */
static json_t *parameter_size(const sprout_gguf *g) {
    double n = 0;
    for (int64_t i = 0; i < sprout_gguf_tensor_count(g); i++) n += (double)sprout_gguf_tensor_elements(g, i);
    char text[32];
    if (n >= 1e9) snprintf(text, sizeof text, "%.1fB", n / 1e9);
    else if (n >= 1e6) snprintf(text, sizeof text, "%.0fM", n / 1e6);
    else snprintf(text, sizeof text, "%.0fK", n / 1e3);
    return json_string(text);
}

static json_t *details(const sprout_gguf *g) {
    const char *arch = "";
    size_t arch_len = 0;
    if (!g || sprout_gguf_get_str(g, "general.architecture", &arch, &arch_len) != SPROUT_OK) arch = "", arch_len = 0;
    uint32_t ftype = 0;
    const char *quant = g && sprout_gguf_get_u32(g, "general.file_type", &ftype) == SPROUT_OK ? sprout_file_type_name(ftype) : NULL;
    return json_pack("{s:s, s:s, s:s%, s:[s%], s:o, s:s}", "parent_model", "", "format", "gguf", "family", arch, arch_len, "families", arch,
                     arch_len, "parameter_size", g ? parameter_size(g) : json_string(""), "quantization_level", quant ? quant : "unknown");
}

/* What a model's GGUF says, for a model that may not be loaded: the
 * loaded model's metadata, or the file's (mapped, not loaded). */
typedef struct model_view {
    sp_model_entry *held;      /* a loaded entry (referenced), or NULL */
    sprout_store_model *sm;    /* a store model not loaded, or NULL */
    sprout_gguf *file;         /* its GGUF when not loaded */
    const sprout_gguf *gguf;
    const sprout_store_model *modelfile;
    const char *name, *digest, *path;
    int64_t modified;
    uint64_t size;
} model_view;

static void view_free(sp_server *srv, model_view *v) {
    if (v->held) { /* describing a model keeps it no longer: its expiry stays as it was */
        pthread_mutex_lock(&srv->models_lock);
        v->held->refs--;
        pthread_cond_broadcast(&srv->models_changed);
        pthread_mutex_unlock(&srv->models_lock);
    }
    sprout_gguf_close(v->file);
    sprout_store_model_free(v->sm);
}

/* The model loaded under `name` if it is (held without changing its
 * expiry), else the store's; false after a 404 (or 500) reply. */
static bool view_open(sp_server *srv, struct MHD_Connection *c, const char *name, model_view *v, enum MHD_Result *res) {
    *v = (model_view){0};
    pthread_mutex_lock(&srv->models_lock);
    for (size_t i = 0; i < srv->n_entries && !v->held; i++) {
        sp_model_entry *e = srv->entries[i];
        if (e->state == SP_ENTRY_LOADED && sp_model_name_matches(e, name)) {
            e->refs++;
            v->held = e;
        }
    }
    pthread_mutex_unlock(&srv->models_lock);
    if (v->held) {
        const sp_model_entry *e = v->held;
        v->gguf = sprout_model_gguf(e->model);
        v->modelfile = e->store_model;
        v->name = e->name;
        v->digest = e->digest;
        v->path = e->path;
        v->modified = e->modified;
        v->size = e->file_bytes;
        return true;
    }
    sprout_status st = SPROUT_ERR_NOT_FOUND;
    if (srv->store && !srv->pinned) {
        pthread_mutex_lock(&srv->store_lock);
        st = sprout_store_resolve(srv->store, name ? name : "", &v->sm);
        pthread_mutex_unlock(&srv->store_lock);
    }
    if (st != SPROUT_OK) {
        char names[2048];
        sp_models_names(srv, names, sizeof names);
        const bool missing = st == SPROUT_ERR_NOT_FOUND || st == SPROUT_ERR_INVALID_ARGUMENT;
        *res = missing ? sp_reply_error(srv, c, SP_STYLE_OLLAMA, 404, "model", "model '%s' not found (this server has %s)", name ? name : "", names)
                       : sp_reply_error(srv, c, SP_STYLE_OLLAMA, 500, NULL, "%s", sprout_last_error());
        return false;
    }
    v->path = sprout_store_model_path(v->sm);
    if (sprout_gguf_open(v->path, &v->file) != SPROUT_OK) {
        *res = sp_reply_error(srv, c, SP_STYLE_OLLAMA, 500, NULL, "%s", sprout_last_error());
        view_free(srv, v);
        return false;
    }
    v->gguf = v->file;
    v->modelfile = v->sm;
    v->name = sprout_store_model_name(v->sm);
    v->digest = sprout_store_model_digest(v->sm);
    if (!strncmp(v->digest, "sha256:", 7)) v->digest += 7;
    v->modified = sprout_store_model_modified(v->sm);
    v->size = sprout_store_model_size(v->sm);
    return true;
}

/* An entry's name as /api/tags and /api/ps show it: a -m file's gets the tag. */
static void shown_name(const sp_model_entry *e, char *out, size_t cap) {
    snprintf(out, cap, "%s%s", e->name, e->store_model ? "" : ":latest");
}

/* /api/tags' entry: name, model, modified_at, size, digest, details. */
static json_t *tag_json(const char *name, int64_t modified, uint64_t size, const char *digest, const sprout_gguf *g) {
    return json_pack("{s:o, s:o, s:o, s:I, s:s, s:o}", "name", json_string_lossy(name, strlen(name)), "model",
                     json_string_lossy(name, strlen(name)), "modified_at", sp_rfc3339(modified, 0), "size", (json_int_t)size, "digest",
                     digest, "details", details(g));
}

/* A store model's GGUF details, opened for the listing; NULL when it cannot be read. */
static sprout_gguf *open_listed(sp_server *srv, const char *name) {
    sprout_store_model *sm = NULL;
    sprout_gguf *g = NULL;
    pthread_mutex_lock(&srv->store_lock);
    const sprout_status st = sprout_store_resolve(srv->store, name, &sm);
    pthread_mutex_unlock(&srv->store_lock);
    if (st == SPROUT_OK && sprout_gguf_open(sprout_store_model_path(sm), &g) != SPROUT_OK) g = NULL;
    sprout_store_model_free(sm);
    return g;
}

/* Every model: (name, modified, size, digest) through fn. False when the store cannot be listed. */
typedef void (*each_model_fn)(sp_server *srv, const char *name, int64_t modified, uint64_t size, const char *digest, void *user);
static bool each_model(sp_server *srv, each_model_fn fn, void *user) {
    if (srv->pinned) {
        fn(srv, srv->pinned->name, srv->pinned->modified, srv->pinned->file_bytes, srv->pinned->digest, user);
        return true;
    }
    sprout_store_entry *list = NULL;
    size_t n = 0;
    pthread_mutex_lock(&srv->store_lock);
    const sprout_status st = sprout_store_list(srv->store, &list, &n);
    pthread_mutex_unlock(&srv->store_lock);
    if (st != SPROUT_OK) return false;
    for (size_t i = 0; i < n; i++)
        fn(srv, list[i].name, list[i].modified, list[i].size, strncmp(list[i].digest, "sha256:", 7) ? list[i].digest : list[i].digest + 7, user);
    sprout_store_entries_free(list, n);
    return true;
}

static void add_tag(sp_server *srv, const char *name, int64_t modified, uint64_t size, const char *digest, void *user) {
    if (srv->pinned) {
        char tagged[300];
        shown_name(srv->pinned, tagged, sizeof tagged);
        json_array_append_new(user, tag_json(tagged, modified, size, digest, sprout_model_gguf(srv->pinned->model)));
        return;
    }
    sprout_gguf *g = open_listed(srv, name);
    json_array_append_new(user, tag_json(name, modified, size, digest, g));
    sprout_gguf_close(g);
}

enum MHD_Result sp_handle_ollama_tags(sp_server *srv, struct MHD_Connection *c, const char *url, const char *body, size_t len) {
    (void)url, (void)body, (void)len;
    json_t *models = json_array();
    if (!each_model(srv, add_tag, models)) {
        json_decref(models);
        return sp_reply_error(srv, c, SP_STYLE_OLLAMA, 500, NULL, "cannot list the models: %s", sprout_last_error());
    }
    return sp_reply_json(srv, c, 200, json_pack("{s:o}", "models", models));
}

/* --- OpenAI's list ---------------------------------------------------------------------------------------------------- */

static json_t *openai_model(const char *name, int64_t created) {
    return json_pack("{s:o, s:s, s:I, s:s}", "id", json_string_lossy(name, strlen(name)), "object", "model", "created", (json_int_t)created,
                     "owned_by", "sprout");
}

static void add_openai_model(sp_server *srv, const char *name, int64_t modified, uint64_t size, const char *digest, void *user) {
    (void)srv, (void)size, (void)digest;
    json_array_append_new(user, openai_model(name, modified));
}

enum MHD_Result sp_handle_openai_models(sp_server *srv, struct MHD_Connection *c, const char *url, const char *body, size_t len) {
    (void)url, (void)body, (void)len;
    json_t *data = json_array();
    if (!each_model(srv, add_openai_model, data)) {
        json_decref(data);
        return sp_reply_error(srv, c, SP_STYLE_OPENAI, 500, NULL, "cannot list the models: %s", sprout_last_error());
    }
    return sp_reply_json(srv, c, 200, json_pack("{s:s, s:o}", "object", "list", "data", data));
}

enum MHD_Result sp_handle_openai_model(sp_server *srv, struct MHD_Connection *c, const char *url, const char *body, size_t len) {
    (void)body, (void)len;
    const char *name = url + strlen("/v1/models/");
    if (srv->pinned && sp_model_name_matches(srv->pinned, name))
        return sp_reply_json(srv, c, 200, openai_model(srv->pinned->name, srv->pinned->modified));
    sprout_store_model *sm = NULL;
    sprout_status st = SPROUT_ERR_NOT_FOUND;
    if (srv->store && !srv->pinned) {
        pthread_mutex_lock(&srv->store_lock);
        st = sprout_store_resolve(srv->store, name, &sm);
        pthread_mutex_unlock(&srv->store_lock);
    }
    if (st != SPROUT_OK) {
        char names[2048];
        sp_models_names(srv, names, sizeof names);
        return sp_reply_error(srv, c, SP_STYLE_OPENAI, 404, "model", "The model '%s' does not exist (this server has %s)", name, names);
    }
    enum MHD_Result res = sp_reply_json(srv, c, 200, openai_model(sprout_store_model_name(sm), sprout_store_model_modified(sm)));
    sprout_store_model_free(sm);
    return res;
}

/* --- loaded models -------------------------------------------------------------------------------------------------- */

typedef struct loaded_list {
    json_t *models;
    int64_t keep_alive_ms; /* the server's default */
} loaded_list;

static void add_loaded(sp_model_entry *e, void *user) {
    loaded_list *list = user;
    char name[300];
    shown_name(e, name, sizeof name);
    json_t *m = tag_json(name, e->modified, e->mem_bytes, e->digest, sprout_model_gguf(e->model));
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    const int64_t now_ms = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
    /* kept: ten years on, as Ollama shows "forever"; in use: its keep_alive starts when its requests end */
    int64_t expires_ms = e->expires_wall_ms;
    const bool kept = e->pinned || (!e->refs && e->expires_ms == SP_KEEP_FOREVER) || (e->refs && list->keep_alive_ms < 0);
    if (kept) expires_ms = now_ms + 10LL * 365 * 86400 * 1000;
    else if (e->refs) expires_ms = now_ms + list->keep_alive_ms;
    json_object_set_new(m, "expires_at", sp_rfc3339(expires_ms / 1000, (long)(expires_ms % 1000) * 1000000L));
    json_object_set_new(m, "size_vram", json_integer(0));
    json_object_set_new(m, "context_length", json_integer(e->n_ctx));
    json_array_append_new(list->models, m);
}

enum MHD_Result sp_handle_ollama_ps(sp_server *srv, struct MHD_Connection *c, const char *url, const char *body, size_t len) {
    (void)url, (void)body, (void)len;
    loaded_list list = {json_array(), srv->opt.keep_alive_ms};
    sp_models_each_loaded(srv, add_loaded, &list);
    return sp_reply_json(srv, c, 200, json_pack("{s:o}", "models", list.models));
}

enum MHD_Result sp_handle_ollama_version(sp_server *srv, struct MHD_Connection *c, const char *url, const char *body, size_t len) {
    (void)url, (void)body, (void)len;
    return sp_reply_json(srv, c, 200, json_pack("{s:s}", "version", sprout_version()));
}

/* --- show and pull -------------------------------------------------------------------------------------------------- */

/* A body's model name (`model`, or the older `name`): the parsed body, or
 * NULL after a 400. */
static json_t *naming_request(sp_server *srv, struct MHD_Connection *c, const char *body, size_t len, const char **name,
                              enum MHD_Result *res) {
    json_t *req = sp_parse_object(srv, c, SP_STYLE_OLLAMA, body, len, res);
    if (!req) return NULL;
    const json_t *v = json_object_get(req, "model");
    if (!v || json_is_null(v)) v = json_object_get(req, "name");
    if (v && !json_is_string(v)) {
        json_decref(req);
        *res = sp_reply_error(srv, c, SP_STYLE_OLLAMA, 400, "model", "model: expected a string");
        return NULL;
    }
    *name = v ? json_string_value(v) : NULL;
    return req;
}

/* POST /api/pull: sprout downloads nothing; a model that is here is "pulled". */
enum MHD_Result sp_handle_ollama_pull(sp_server *srv, struct MHD_Connection *c, const char *url, const char *body, size_t len) {
    (void)url;
    enum MHD_Result res = MHD_NO;
    const char *name = NULL;
    json_t *req = naming_request(srv, c, body, len, &name, &res);
    if (!req) return res;
    model_view v;
    const bool here = srv->pinned ? sp_model_name_matches(srv->pinned, name) : view_open(srv, c, name, &v, &res);
    if (!here) {
        if (srv->pinned)
            res = sp_reply_error(srv, c, SP_STYLE_OLLAMA, 404, "model", "model '%s' not found (this server has '%s' and downloads nothing)",
                                 name ? name : "", srv->pinned->name);
        json_decref(req);
        return res;
    }
    if (!srv->pinned) view_free(srv, &v);
    const bool ndjson = !json_is_false(json_object_get(req, "stream")); /* Ollama streams unless told not to */
    json_decref(req);
    if (!ndjson) return sp_reply_json(srv, c, 200, json_pack("{s:s}", "status", "success"));
    return sp_reply_text(srv, c, 200, "application/x-ndjson", "{\"status\":\"success\"}\n");
}

/* "WORD value\n", a line of a Modelfile. */
static void modelfile_line(sp_buf *b, const char *word, const char *value) {
    sp_buf_put(b, word, strlen(word));
    sp_buf_put(b, " ", 1);
    sp_buf_put(b, value, strlen(value));
    sp_buf_put(b, "\n", 1);
}

/* The -m model's Modelfile and parameters (its file, its adapters, the server's sampling defaults). */
static void pinned_modelfile(sp_server *srv, sp_buf *modelfile, char *parameters, size_t cap) {
    static const char header[] = "# Modelfile generated by sprout\n";
    sp_buf_put(modelfile, header, sizeof header - 1);
    modelfile_line(modelfile, "FROM", srv->pinned->path);
    for (size_t i = 0; i < srv->pinned->n_lora; i++) modelfile_line(modelfile, "ADAPTER", srv->pinned->lora_paths[i]);
    snprintf(parameters, cap, "num_ctx %d\ntemperature 0.8\ntop_k 40\ntop_p 0.9\nrepeat_penalty 1.1\n", srv->pinned->n_ctx);
}

/* Ollama's parameters text: "name value" lines, a list's values a line each, strings quoted. */
static void parameters_text(const char *params_json, sp_buf *out) {
    json_t *params = json_loads(params_json ? params_json : "{}", 0, NULL);
    const char *key;
    json_t *value;
    json_object_foreach(params, key, value) {
        const size_t n = json_is_array(value) ? json_array_size(value) : 1;
        for (size_t i = 0; i < n; i++) {
            const json_t *one = json_is_array(value) ? json_array_get(value, i) : value;
            char *text = json_dumps(one, JSON_ENCODE_ANY | JSON_COMPACT);
            char line[96];
            snprintf(line, sizeof line, "%-30s ", key);
            sp_buf_put(out, line, strlen(line));
            if (text) sp_buf_put(out, text, strlen(text));
            sp_buf_put(out, "\n", 1);
            free(text);
        }
    }
    json_decref(params);
}

/* As Ollama words them: text or embeddings; insert (FIM tokens), tools
 * and thinking where the template renders them. */
static json_t *capabilities(const model_view *v, const char *tmpl, size_t tmpl_len) {
    json_t *caps = json_array();
    const sprout_gguf *g = v->gguf;
    const char *arch = "";
    size_t arch_len = 0;
    sprout_gguf_get_str(g, "general.architecture", &arch, &arch_len);
    /* not loaded: the encoders (BERT's family) are the models without a head */
    const bool embeds_only = v->held ? !sprout_model_generates(v->held->model) : memmem(arch, arch_len, "bert", 4) != NULL;
    if (embeds_only) {
        json_array_append_new(caps, json_string("embedding"));
        return caps;
    }
    json_array_append_new(caps, json_string("completion"));
    const sprout_tokenizer *tok = v->held ? sprout_model_tokenizer(v->held->model) : NULL;
    const bool fim = tok ? sprout_tokenizer_special(tok, SPROUT_SPECIAL_FIM_PRE) >= 0 && sprout_tokenizer_special(tok, SPROUT_SPECIAL_FIM_SUF) >= 0 &&
                               sprout_tokenizer_special(tok, SPROUT_SPECIAL_FIM_MID) >= 0
                         : sprout_gguf_find(g, "tokenizer.ggml.fim_pre_token_id") != NULL; /* not loaded: what its metadata says */
    if (fim) json_array_append_new(caps, json_string("insert"));
    if (tmpl_len && memmem(tmpl, tmpl_len, "tools", 5)) json_array_append_new(caps, json_string("tools"));
    if (tmpl_len && (memmem(tmpl, tmpl_len, "<think>", 7) || memmem(tmpl, tmpl_len, ".Think", 6) || memmem(tmpl, tmpl_len, "enable_thinking", 15)))
        json_array_append_new(caps, json_string("thinking"));
    return caps;
}

enum MHD_Result sp_handle_ollama_show(sp_server *srv, struct MHD_Connection *c, const char *url, const char *body, size_t len) {
    (void)url;
    enum MHD_Result res = MHD_NO;
    const char *name = NULL;
    json_t *req = naming_request(srv, c, body, len, &name, &res);
    if (!req) return res;
    const bool verbose = json_is_true(json_object_get(req, "verbose"));
    model_view v;
    if (!view_open(srv, c, name && *name ? name : srv->pinned ? srv->pinned->name : "", &v, &res)) {
        json_decref(req);
        return res;
    }
    json_decref(req);

    const sprout_gguf *g = v.gguf;
    json_t *info = json_object();
    for (int64_t i = 0; i < sprout_gguf_kv_count(g); i++) {
        const sprout_gguf_value *val = sprout_gguf_kv_value(g, i);
        const bool big = sprout_gguf_value_type(val) == SPROUT_GGUF_ARRAY && sprout_gguf_array_len(val) > 64;
        /* vocabularies are large: Ollama leaves them out unless asked */
        json_object_set_new(info, sprout_gguf_kv_key(g, i), big && !verbose ? json_null() : json_gguf_value(val, UINT64_MAX, false));
    }
    double n_params = 0;
    for (int64_t i = 0; i < sprout_gguf_tensor_count(g); i++) n_params += (double)sprout_gguf_tensor_elements(g, i);
    json_object_set_new(info, "general.parameter_count", json_integer((json_int_t)n_params));
    const char *own = v.modelfile ? sprout_store_model_template(v.modelfile) : NULL;
    const char *tmpl = "";
    size_t tmpl_len = 0;
    if (own) tmpl = own, tmpl_len = strlen(own);
    else if (sprout_template_for_model(g, NULL, &tmpl, &tmpl_len) != SPROUT_OK) tmpl_len = 0;
    sp_buf modelfile = {0}, parameters = {0};
    char pinned_params[256] = "";
    if (v.modelfile) {
        const char *text = sprout_store_model_modelfile(v.modelfile);
        sp_buf_put(&modelfile, text, strlen(text));
        parameters_text(sprout_store_model_parameters_json(v.modelfile), &parameters);
    } else {
        pinned_modelfile(srv, &modelfile, pinned_params, sizeof pinned_params);
        sp_buf_put(&parameters, pinned_params, strlen(pinned_params));
    }
    const char *system = v.modelfile ? sprout_store_model_system(v.modelfile) : NULL;
    const char *license = v.modelfile ? sprout_store_model_license(v.modelfile) : NULL;
    json_t *out = json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "modelfile", json_string_lossy(modelfile.data ? modelfile.data : "", modelfile.len),
                            "parameters", json_string_lossy(parameters.data ? parameters.data : "", parameters.len), "template",
                            json_string_lossy(tmpl, tmpl_len), "details", details(g), "model_info", info, "capabilities",
                            capabilities(&v, tmpl, tmpl_len), "modified_at", sp_rfc3339(v.modified, 0));
    if (system) json_object_set_new(out, "system", json_string_lossy(system, strlen(system)));
    if (license) json_object_set_new(out, "license", json_string_lossy(license, strlen(license)));
    if (v.modelfile) json_object_set_new(out, "messages", json_loads(sprout_store_model_messages_json(v.modelfile), 0, NULL));
    if (v.held && v.held->pinned) json_object_set_new(out, "adapters", sp_lora_json(v.held, false));
    free(modelfile.data);
    free(parameters.data);
    view_free(srv, &v);
    return sp_reply_json(srv, c, 200, out);
}
