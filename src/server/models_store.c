/* The endpoints that change the store, in Ollama's shapes: POST
 * /api/create (its current body turned into a Modelfile), POST /api/copy,
 * DELETE /api/delete, and the blobs a create refers to: HEAD
 * /api/blobs/sha256:<hex> (is it here?) and POST (uploaded as it comes,
 * its digest checked before it joins the store). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/json_util.h"
#include "server/server_internal.h"

/* A store change needs the store: a server started with -m FILE has none. */
static bool store_needed(sp_server *srv, struct MHD_Connection *c, enum MHD_Result *res) {
    if (srv->store) return true;
    *res = sp_reply_error(srv, c, SP_STYLE_OLLAMA, 400, NULL, "this server serves one file (-m) and has no model store");
    return false;
}

/* The body of a store call, once the server is known to have a store: the
 * parsed object, or NULL after the reply (*res). */
static json_t *store_request(sp_server *srv, struct MHD_Connection *c, const char *body, size_t len, enum MHD_Result *res) {
    *res = MHD_NO;
    if (!store_needed(srv, c, res)) return NULL;
    return sp_parse_object(srv, c, SP_STYLE_OLLAMA, body, len, res);
}

/* Ollama's `model`, or the older `name` its clients still send. */
static const json_t *model_field(const json_t *req) {
    const json_t *name = json_object_get(req, "model");
    return name && !json_is_null(name) ? name : json_object_get(req, "name");
}

/* The reply to a store call that failed: 404 for a name not there, 403 for
 * Ollama's read-only models, 400 for what the request got wrong. */
static enum MHD_Result reply_store_error(sp_server *srv, struct MHD_Connection *c, sprout_status st) {
    const unsigned status = st == SPROUT_ERR_NOT_FOUND     ? 404
                            : st == SPROUT_ERR_UNSUPPORTED ? 403
                            : st == SPROUT_ERR_IO || st == SPROUT_ERR_OUT_OF_MEMORY || st == SPROUT_ERR_INTERNAL ? 500
                                                                                                                 : 400;
    return sp_reply_error(srv, c, SP_STYLE_OLLAMA, status, NULL, "%s", sprout_last_error());
}

/* --- create ----------------------------------------------------------------------------------------------------- */

/* A Modelfile value: always quoted, with the two escapes the parser reads. */
static bool put_quoted(sp_buf *b, const char *s) {
    bool ok = sp_buf_put(b, "\"", 1);
    for (; *s && ok; s++) ok = (*s == '"' || *s == '\\' ? sp_buf_put(b, "\\", 1) : true) && sp_buf_put(b, s, 1);
    return ok && sp_buf_put(b, "\"", 1);
}

static bool put_line(sp_buf *b, const char *word, const char *key, const char *value) {
    bool ok = sp_buf_put(b, word, strlen(word)) && sp_buf_put(b, " ", 1);
    if (key) ok = ok && sp_buf_put(b, key, strlen(key)) && sp_buf_put(b, " ", 1);
    return ok && put_quoted(b, value) && sp_buf_put(b, "\n", 1);
}

/* A "sha256:<hex>" digest as the blobs API and FROM take it; the "sha256-"
 * spelling of file names is accepted too. */
static bool digest_ok(const char *d) {
    if (!d || (strncmp(d, "sha256:", 7) && strncmp(d, "sha256-", 7)) || strlen(d) != 7 + 64) return false;
    for (const char *p = d + 7; *p; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'))) return false;
    return true;
}

/* {name: digest} of files or adapters: the digests in order, as Modelfile
 * lines; false with `error` naming the bad field. */
static bool files_lines(sp_buf *b, const json_t *files, const char *field, const char *word, char *error, size_t cap) {
    if (!files) return true;
    if (!json_is_object(files)) return snprintf(error, cap, "%s: expected an object of file names and digests", field), false;
    const char *name;
    json_t *digest;
    json_object_foreach((json_t *)files, name, digest) {
        if (!json_is_string(digest) || !digest_ok(json_string_value(digest)))
            return snprintf(error, cap, "%s.%s: expected a digest \"sha256:<64 hex digits>\"", field, name), false;
        char d[80];
        snprintf(d, sizeof d, "sha256:%s", json_string_value(digest) + 7);
        if (!put_line(b, word, NULL, d)) return snprintf(error, cap, "out of memory"), false;
    }
    return true;
}

/* A scalar parameter's text: a number as JSON writes it, a string as it is, true/false. */
static char *parameter_text(const json_t *v) {
    if (json_is_string(v)) return strdup(json_string_value(v));
    if (json_is_number(v) || json_is_boolean(v)) return json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    return NULL;
}

static bool parameter_lines(sp_buf *b, const json_t *params, char *error, size_t cap) {
    if (!params) return true;
    if (!json_is_object(params)) return snprintf(error, cap, "parameters: expected an object"), false;
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)params, key, value) {
        const size_t n = json_is_array(value) ? json_array_size(value) : 1;
        for (size_t i = 0; i < n; i++) {
            char *text = parameter_text(json_is_array(value) ? json_array_get(value, i) : value);
            if (!text) return snprintf(error, cap, "parameters.%s: expected a number, a string, a boolean or a list of them", key), false;
            const bool ok = put_line(b, "PARAMETER", key, text);
            free(text);
            if (!ok) return snprintf(error, cap, "out of memory"), false;
        }
    }
    return true;
}

static bool message_lines(sp_buf *b, const json_t *messages, char *error, size_t cap) {
    if (!messages) return true;
    if (!json_is_array(messages)) return snprintf(error, cap, "messages: expected an array"), false;
    for (size_t i = 0; i < json_array_size(messages); i++) {
        const json_t *m = json_array_get(messages, i);
        const char *role = json_string_value(json_object_get(m, "role")), *content = json_string_value(json_object_get(m, "content"));
        if (!role || !content) return snprintf(error, cap, "messages[%zu]: expected {\"role\", \"content\"} strings", i), false;
        if (strspn(role, "abcdefghijklmnopqrstuvwxyz") != strlen(role) || !*role)
            return snprintf(error, cap, "messages[%zu].role: expected system, user or assistant", i), false;
        if (!put_line(b, "MESSAGE", role, content)) return snprintf(error, cap, "out of memory"), false;
    }
    return true;
}

/* A string field, or NULL; false when it is there and not a string. */
static bool optional_string(const json_t *req, const char *field, const char **out, char *error, size_t cap) {
    const json_t *v = json_object_get(req, field);
    *out = json_string_value(v);
    if (v && !json_is_null(v) && !*out) return snprintf(error, cap, "%s: expected a string", field), false;
    return true;
}

/* The Modelfile Ollama's server would build from a create body. */
static bool create_modelfile(const json_t *req, sp_buf *b, char *error, size_t cap) {
    const char *from, *tmpl, *system;
    if (!optional_string(req, "from", &from, error, cap) || !optional_string(req, "template", &tmpl, error, cap) ||
        !optional_string(req, "system", &system, error, cap))
        return false;
    const json_t *files = json_object_get(req, "files"), *license = json_object_get(req, "license");
    const char *modelfile = json_string_value(json_object_get(req, "modelfile"));
    if (!from && !json_object_size(files) && modelfile) /* the older body: Modelfile text as it is */
        return sp_buf_put(b, modelfile, strlen(modelfile)) || (snprintf(error, cap, "out of memory"), false);
    if (json_object_size(files)) {
        if (!files_lines(b, files, "files", "FROM", error, cap)) return false;
    } else if (from && *from) {
        if (!put_line(b, "FROM", NULL, from)) return snprintf(error, cap, "out of memory"), false;
    } else {
        return snprintf(error, cap, "from: required (a model's name or path), or files"), false;
    }
    if (!files_lines(b, json_object_get(req, "adapters"), "adapters", "ADAPTER", error, cap)) return false;
    if (tmpl && !put_line(b, "TEMPLATE", NULL, tmpl)) return snprintf(error, cap, "out of memory"), false;
    if (system && !put_line(b, "SYSTEM", NULL, system)) return snprintf(error, cap, "out of memory"), false;
    if (json_is_string(license) && !put_line(b, "LICENSE", NULL, json_string_value(license))) return snprintf(error, cap, "out of memory"), false;
    for (size_t i = 0; json_is_array(license) && i < json_array_size(license); i++) {
        const char *text = json_string_value(json_array_get(license, i));
        if (!text) return snprintf(error, cap, "license[%zu]: expected a string", i), false;
        if (!put_line(b, "LICENSE", NULL, text)) return snprintf(error, cap, "out of memory"), false;
    }
    if (license && !json_is_null(license) && !json_is_string(license) && !json_is_array(license))
        return snprintf(error, cap, "license: expected a string or an array of strings"), false;
    return parameter_lines(b, json_object_get(req, "parameters"), error, cap) && message_lines(b, json_object_get(req, "messages"), error, cap);
}

/* The store's call: the Modelfile made into `name` (store_lock held while
 * it runs), and a model so named that is loaded goes, so that the next
 * request loads the new one. sprout_last_error() says why it failed. */
static sprout_status run_create(sp_server *srv, const char *name, const sp_buf *modelfile, const char *quantize,
                                bool (*progress)(const char *status, void *user), void *user) {
    sprout_store_create_params cp = {.struct_size = sizeof cp, .quantize = quantize && *quantize ? quantize : NULL, .progress = progress,
                                     .progress_user = user};
    pthread_mutex_lock(&srv->store_lock);
    const sprout_status st = sprout_store_create(srv->store, name, modelfile->data ? modelfile->data : "", modelfile->len, &cp);
    pthread_mutex_unlock(&srv->store_lock);
    if (st == SPROUT_OK) {
        sp_notice(srv, SPROUT_LOG_INFO, "created \"%s\"", name);
        sp_models_unload(srv, name);
    }
    return st;
}

static bool no_progress(const char *status, void *user) {
    (void)status, (void)user;
    return true;
}

/* A streamed create: the store works on a thread of its own and its status
 * lines go out as it says them (a quantization takes minutes); a client
 * that hangs up cancels it (the store is left unchanged). */
typedef struct create_job {
    sp_server *srv;
    char *name, *quantize;
    sp_buf modelfile;
    int fd;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    sp_buf out;  /* NDJSON lines not yet sent */
    size_t sent;
    bool done, cancelled, said_success;
} create_job;

static void job_line(create_job *j, json_t *v) {
    pthread_mutex_lock(&j->mu);
    sp_buf_json(&j->out, "", v, "\n");
    pthread_cond_signal(&j->cond);
    pthread_mutex_unlock(&j->mu);
}

static bool job_progress(const char *status, void *user) {
    create_job *j = user;
    if (!strcmp(status, "success")) j->said_success = true;
    job_line(j, json_pack("{s:o}", "status", json_string_lossy(status, strlen(status))));
    pthread_mutex_lock(&j->mu);
    const bool go_on = !j->cancelled;
    pthread_mutex_unlock(&j->mu);
    return go_on;
}

static void *create_main(void *arg) {
    create_job *j = arg;
    const sprout_status st = run_create(j->srv, j->name, &j->modelfile, j->quantize, job_progress, j);
    /* Ollama's stream ends in success, or in an error line its clients raise */
    if (st != SPROUT_OK) job_line(j, json_pack("{s:o}", "error", json_string_lossy(sprout_last_error(), strlen(sprout_last_error()))));
    else if (!j->said_success) job_line(j, json_pack("{s:s}", "status", "success"));
    pthread_mutex_lock(&j->mu);
    j->done = true;
    pthread_cond_signal(&j->cond);
    pthread_mutex_unlock(&j->mu);
    return NULL;
}

static ssize_t create_reader(void *cls, uint64_t pos, char *buf, size_t max) {
    (void)pos;
    create_job *j = cls;
    pthread_mutex_lock(&j->mu);
    while (!j->done && j->out.len == j->sent) {
        sp_wait_a_while(&j->cond, &j->mu);
        if (sp_client_gone(j->fd)) j->cancelled = true;
    }
    ssize_t n = MHD_CONTENT_READER_END_OF_STREAM;
    if (j->out.len > j->sent) {
        const size_t avail = j->out.len - j->sent;
        n = (ssize_t)(avail < max ? avail : max);
        memcpy(buf, j->out.data + j->sent, (size_t)n);
        j->sent += (size_t)n;
        if (j->sent == j->out.len) j->out.len = j->sent = 0;
    }
    pthread_mutex_unlock(&j->mu);
    return n;
}

static void create_free(void *cls) {
    create_job *j = cls;
    pthread_mutex_lock(&j->mu);
    j->cancelled = true; /* the response ended early (the client left): stop the store at its next line */
    pthread_mutex_unlock(&j->mu);
    pthread_join(j->thread, NULL);
    pthread_cond_destroy(&j->cond);
    pthread_mutex_destroy(&j->mu);
    free(j->out.data);
    free(j->modelfile.data);
    free(j->name);
    free(j->quantize);
    free(j);
}

/* Starts the streamed create; the job owns modelfile's text from here. */
static enum MHD_Result stream_create(sp_server *srv, struct MHD_Connection *c, const char *name, const char *quantize, sp_buf *modelfile) {
    create_job *j = calloc(1, sizeof *j);
    if (!j) return MHD_NO;
    j->srv = srv;
    j->fd = sp_connection_fd(c);
    j->modelfile = *modelfile;
    *modelfile = (sp_buf){0};
    j->name = strdup(name);
    j->quantize = quantize ? strdup(quantize) : NULL;
    pthread_mutex_init(&j->mu, NULL);
    pthread_cond_init(&j->cond, NULL);
    if (!j->name || (quantize && !j->quantize) || pthread_create(&j->thread, NULL, create_main, j) != 0) {
        pthread_cond_destroy(&j->cond);
        pthread_mutex_destroy(&j->mu);
        free(j->modelfile.data);
        free(j->name);
        free(j->quantize);
        free(j);
        return sp_reply_error(srv, c, SP_STYLE_OLLAMA, 500, NULL, "cannot start the create");
    }
    struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, create_reader, j, create_free);
    if (!r) {
        create_free(j);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", "application/x-ndjson");
    sp_add_common_headers(srv, c, r);
    const enum MHD_Result res = MHD_queue_response(c, 200, r);
    MHD_destroy_response(r); /* the job now belongs to the response */
    return res;
}

enum MHD_Result sp_handle_ollama_create(sp_server *srv, struct MHD_Connection *c, const char *url, const char *body, size_t len) {
    (void)url;
    enum MHD_Result res;
    json_t *req = store_request(srv, c, body, len, &res);
    if (!req) return res;
    const json_t *name = model_field(req);
    const char *quantize = json_string_value(json_object_get(req, "quantize"));
    char error[512] = "";
    sp_buf modelfile = {0};
    if (!json_is_string(name) || !*json_string_value(name)) snprintf(error, sizeof error, "model: required, a string");
    else if (json_object_get(req, "quantize") && !json_is_null(json_object_get(req, "quantize")) && !quantize)
        snprintf(error, sizeof error, "quantize: expected a type name (\"Q4_K_M\")");
    else create_modelfile(req, &modelfile, error, sizeof error);
    if (*error) res = sp_reply_error(srv, c, SP_STYLE_OLLAMA, 400, NULL, "%s", error);
    else if (!json_is_false(json_object_get(req, "stream"))) /* Ollama streams unless told not to */
        res = stream_create(srv, c, json_string_value(name), quantize, &modelfile);
    else {
        const sprout_status st = run_create(srv, json_string_value(name), &modelfile, quantize, no_progress, NULL);
        res = st == SPROUT_OK ? sp_reply_json(srv, c, 200, json_pack("{s:s}", "status", "success")) : reply_store_error(srv, c, st);
    }
    free(modelfile.data);
    json_decref(req);
    return res;
}

/* --- copy and delete ------------------------------------------------------------------------------------------------ */

enum MHD_Result sp_handle_ollama_copy(sp_server *srv, struct MHD_Connection *c, const char *url, const char *body, size_t len) {
    (void)url;
    enum MHD_Result res;
    json_t *req = store_request(srv, c, body, len, &res);
    if (!req) return res;
    const char *src = json_string_value(json_object_get(req, "source")), *dst = json_string_value(json_object_get(req, "destination"));
    if (!src || !dst) res = sp_reply_error(srv, c, SP_STYLE_OLLAMA, 400, NULL, "%s: required, a string", src ? "destination" : "source");
    else {
        pthread_mutex_lock(&srv->store_lock);
        const sprout_status st = sprout_store_copy(srv->store, src, dst);
        pthread_mutex_unlock(&srv->store_lock);
        res = st == SPROUT_OK ? sp_reply_json(srv, c, 200, json_object()) : reply_store_error(srv, c, st);
    }
    json_decref(req);
    return res;
}

/* DELETE /api/delete: the name goes from the store; a loaded model with
 * that name stays loaded until its requests end and its keep_alive passes. */
enum MHD_Result sp_handle_ollama_delete(sp_server *srv, struct MHD_Connection *c, const char *url, const char *body, size_t len) {
    (void)url;
    enum MHD_Result res;
    json_t *req = store_request(srv, c, body, len, &res);
    if (!req) return res;
    const json_t *name = model_field(req);
    if (!json_is_string(name)) res = sp_reply_error(srv, c, SP_STYLE_OLLAMA, 400, "model", "model: required, a string");
    else {
        pthread_mutex_lock(&srv->store_lock);
        const sprout_status st = sprout_store_remove(srv->store, json_string_value(name));
        pthread_mutex_unlock(&srv->store_lock);
        if (st == SPROUT_OK) sp_models_unload(srv, json_string_value(name));
        res = st == SPROUT_OK ? sp_reply_json(srv, c, 200, json_object()) : reply_store_error(srv, c, st);
    }
    json_decref(req);
    return res;
}

/* --- blobs ------------------------------------------------------------------------------------------------------------- */

enum MHD_Result sp_handle_blob_head(sp_server *srv, struct MHD_Connection *c, const char *url, const char *body, size_t len) {
    (void)body, (void)len;
    const char *digest = url + strlen("/api/blobs/");
    if (!srv->store || !digest_ok(digest)) return sp_reply_text(srv, c, srv->store ? 400 : 404, "text/plain", "");
    pthread_mutex_lock(&srv->store_lock);
    const bool here = sprout_store_blob_exists(srv->store, digest);
    pthread_mutex_unlock(&srv->store_lock);
    return sp_reply_text(srv, c, here ? 200 : 404, "text/plain", "");
}

/* An upload in flight: the writer, or why there is none (replied at the end). */
typedef struct blob_upload {
    sprout_blob_writer *writer;
    unsigned status; /* an error's, 0: none yet */
    char error[512];
} blob_upload;

static void *blob_open(sp_server *srv, const char *url) {
    blob_upload *u = calloc(1, sizeof *u);
    if (!u) return NULL;
    const char *digest = url + strlen("/api/blobs/");
    if (!srv->store) {
        u->status = 400;
        snprintf(u->error, sizeof u->error, "this server serves one file (-m) and has no model store");
    } else if (!digest_ok(digest)) {
        u->status = 400;
        snprintf(u->error, sizeof u->error, "%s is not a digest (sha256:<64 hex digits>)", digest);
    } else {
        pthread_mutex_lock(&srv->store_lock);
        const sprout_status st = sprout_store_blob_begin(srv->store, digest, &u->writer);
        pthread_mutex_unlock(&srv->store_lock);
        if (st != SPROUT_OK) {
            u->status = 500;
            snprintf(u->error, sizeof u->error, "%s", sprout_last_error());
        }
    }
    return u;
}

static void blob_write(void *state, const char *data, size_t len) {
    blob_upload *u = state;
    if (!u->writer || u->status) return;
    if (sprout_blob_writer_write(u->writer, data, len) != SPROUT_OK) {
        u->status = 500;
        snprintf(u->error, sizeof u->error, "%s", sprout_last_error());
    }
}

static void blob_abort(void *state) {
    blob_upload *u = state;
    sprout_blob_writer_abort(u->writer);
    free(u);
}

static enum MHD_Result blob_close(sp_server *srv, struct MHD_Connection *c, const char *url, void *state) {
    (void)url;
    blob_upload *u = state;
    if (!u->status) {
        pthread_mutex_lock(&srv->store_lock);
        const sprout_status st = sprout_blob_writer_finish(u->writer);
        pthread_mutex_unlock(&srv->store_lock);
        u->writer = NULL;
        if (st != SPROUT_OK) {
            u->status = st == SPROUT_ERR_FORMAT ? 400 : 500;
            snprintf(u->error, sizeof u->error, "%s", sprout_last_error());
        }
    }
    enum MHD_Result res = u->status ? sp_reply_error(srv, c, SP_STYLE_OLLAMA, u->status, NULL, "%s", u->error)
                                    : sp_reply_text(srv, c, 201, "text/plain", "");
    blob_abort(u);
    return res;
}

const sp_body_sink sp_blob_upload = {blob_open, blob_write, blob_close, blob_abort};

enum MHD_Result sp_handle_blob_upload(sp_server *srv, struct MHD_Connection *c, const char *url, const char *body, size_t len) {
    void *state = blob_open(srv, url);
    if (!state) return MHD_NO;
    blob_write(state, body, len);
    return blob_close(srv, c, url, state);
}
