/* The HTTP side: libmicrohttpd with a thread per connection (a generation
 * blocks its connection's thread, never the engine), request bodies up to
 * --max-body, routing (guard.c checks keys, Host and Origin, and keeps the
 * deadlines), and the server's life cycle: listen, load, serve, drain on a
 * signal. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core/error.h"
#include "json/json_util.h"
#include "server/server_internal.h"
#include "server/webui.h"

/* Numbers in replies: nine significant digits give back every float32 (the
 * library's numbers: log-probabilities, embeddings) exactly, and no more. */
#define SP_JSON_REAL JSON_REAL_PRECISION(9)

/* --- replies ------------------------------------------------------------------------------------------- */

sp_api_style sp_style_of(const char *url) { return !strncmp(url, "/api/", 5) ? SP_STYLE_OLLAMA : SP_STYLE_OPENAI; }

void sp_add_common_headers(const sp_server *srv, struct MHD_Connection *c, struct MHD_Response *r) {
    sp_guard_cors(srv, c, r);
    MHD_add_response_header(r, "Server", "sprout");
    sp_fleet_headers(r);
}

/* Sends body (freed here) with `status`; `allow` (may be NULL) becomes the
 * Allow header a 405 needs. */
static enum MHD_Result send_body_allow(sp_server *srv, struct MHD_Connection *c, unsigned status, const char *type, char *body,
                                       size_t len, const char *allow) {
    if (status >= 400) atomic_fetch_add(&srv->http_errors, 1);
    struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", type);
    if (allow) MHD_add_response_header(r, "Allow", allow);
    sp_add_common_headers(srv, c, r);
    enum MHD_Result res = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return res;
}

static enum MHD_Result send_body(sp_server *srv, struct MHD_Connection *c, unsigned status, const char *type, char *body, size_t len) {
    return send_body_allow(srv, c, status, type, body, len, NULL);
}

enum MHD_Result sp_reply_json(sp_server *srv, struct MHD_Connection *c, unsigned status, json_t *v) {
    char *body = v ? json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER | SP_JSON_REAL) : NULL;
    json_decref(v);
    if (!body) return MHD_NO;
    return send_body(srv, c, status, "application/json", body, strlen(body));
}

enum MHD_Result sp_reply_text(sp_server *srv, struct MHD_Connection *c, unsigned status, const char *type, const char *text) {
    char *body = strdup(text);
    if (!body) return MHD_NO;
    return send_body(srv, c, status, type, body, strlen(body));
}

static const char *openai_error_type(unsigned status) {
    switch (status) {
    case 401: return "authentication_error";
    case 404: return "not_found_error";
    case 503: return "server_busy";
    }
    return status >= 500 ? "server_error" : "invalid_request_error";
}

json_t *sp_error_json(sp_api_style style, unsigned status, const char *param, const char *message) {
    if (style == SP_STYLE_OLLAMA) return json_pack("{s:o*}", "error", json_string_lossy(message, strlen(message)));
    return json_pack("{s:{s:o*, s:s, s:s?, s:i}}", "error", "message", json_string_lossy(message, strlen(message)), "type",
                     openai_error_type(status), "param", param, "code", (int)status);
}

enum MHD_Result sp_reply_error(sp_server *srv, struct MHD_Connection *c, sp_api_style style, unsigned status, const char *param,
                               const char *fmt, ...) {
    char message[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    return sp_reply_json(srv, c, status, sp_error_json(style, status, param, message));
}


bool sp_buf_json(sp_buf *b, const char *prefix, json_t *v, const char *suffix) {
    char *text = v ? json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER | SP_JSON_REAL) : NULL;
    json_decref(v);
    bool ok = text && sp_buf_put(b, prefix, strlen(prefix)) && sp_buf_put(b, text, strlen(text)) && sp_buf_put(b, suffix, strlen(suffix));
    free(text);
    if (!ok) sp_oom_note();
    return ok;
}

json_t *sp_json_text(const char *s, size_t n) {
    json_t *v = json_string_lossy(s, n);
    if (!v) sp_oom_note();
    return v;
}

void sp_error_param(const char *error, char *param, size_t cap) {
    const char *colon = strchr(error, ':');
    param[0] = 0;
    if (colon && strncmp(error, "invalid JSON", 12) && (size_t)(colon - error) < cap) snprintf(param, cap, "%.*s", (int)(colon - error), error);
}

json_t *sp_parse_object(sp_server *srv, struct MHD_Connection *c, sp_api_style style, const char *body, size_t len,
                        enum MHD_Result *res) {
    json_error_t err;
    json_t *v = json_loadb(body, len, 0, &err);
    if (json_is_object(v)) return v;
    *res = sp_reply_error(srv, c, style, 400, NULL, "invalid JSON: %s", v ? "expected an object" : err.text);
    json_decref(v);
    return NULL;
}

int sp_connection_fd(struct MHD_Connection *c) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    return ci ? ci->connect_fd : -1;
}

bool sp_client_gone(int fd) {
    if (fd < 0) return false;
    struct pollfd p = {.fd = fd, .events = POLLIN | POLLRDHUP};
    if (poll(&p, 1, 0) <= 0) return false;
    if (p.revents & (POLLHUP | POLLERR | POLLRDHUP | POLLNVAL)) return true;
    char byte;
    return (p.revents & POLLIN) && recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

void sp_wait_a_while(pthread_cond_t *cond, pthread_mutex_t *mu) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += 100 * 1000 * 1000;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(cond, mu, &until);
}

/* --- routing ------------------------------------------------------------------------------------------- */

#define GENERATION_HANDLER(name, kind)                                                                               \
    static enum MHD_Result name(sp_server *srv, struct MHD_Connection *c, const char *url, const char *body, size_t len) { \
        return sp_handle_generation(srv, c, kind, url, body, len);                                                   \
    }
GENERATION_HANDLER(handle_openai_chat, SP_API_OPENAI_CHAT)
GENERATION_HANDLER(handle_openai_completion, SP_API_OPENAI_COMPLETION)
GENERATION_HANDLER(handle_ollama_chat, SP_API_OLLAMA_CHAT)
GENERATION_HANDLER(handle_ollama_generate, SP_API_OLLAMA_GENERATE)

typedef struct route {
    const char *method, *path;
    sp_handler handler;
    bool before_ready; /* answers while the model loads (and without a key) */
} route;

/* A path ending in '/' (other than the root itself) serves each name under it. */
static bool route_serves(const route *r, const char *url) {
    const size_t n = strlen(r->path);
    if (n > 1 && r->path[n - 1] == '/') return !strncmp(url, r->path, n) && url[n] && !strchr(url + n, '/');
    return !strcmp(url, r->path);
}

static const route routes[] = {
    {"GET", "/", sp_handle_webui, true},
    {"GET", SP_WEBUI_PREFIX, sp_handle_webui, true},
    {"GET", "/health", sp_handle_health, true},
    {"GET", "/health/ready", sp_handle_health, true},
    {"GET", "/health/live", sp_handle_health_live, true},
    {"GET", "/metrics", sp_handle_metrics, false},
    {"POST", "/tokenize", sp_handle_tokenize, false},
    {"POST", "/detokenize", sp_handle_detokenize, false},
    {"GET", "/lora-adapters", sp_handle_lora_list, false},
    {"POST", "/lora-adapters", sp_handle_lora_set, false},
    {"GET", "/v1/models", sp_handle_openai_models, false},
    {"GET", "/v1/models/", sp_handle_openai_model, false},
    {"POST", "/v1/chat/completions", handle_openai_chat, false},
    {"POST", "/v1/completions", handle_openai_completion, false},
    {"POST", "/chat/completions", handle_openai_chat, false},
    {"POST", "/completions", handle_openai_completion, false},
    {"POST", "/v1/embeddings", sp_handle_openai_embeddings, false},
    {"POST", "/embeddings", sp_handle_openai_embeddings, false},
    {"POST", "/api/generate", handle_ollama_generate, false},
    {"POST", "/api/chat", handle_ollama_chat, false},
    {"POST", "/api/embed", sp_handle_ollama_embed, false},
    {"POST", "/api/embeddings", sp_handle_ollama_embeddings, false},
    {"GET", "/api/tags", sp_handle_ollama_tags, false},
    {"POST", "/api/show", sp_handle_ollama_show, false},
    {"POST", "/api/pull", sp_handle_ollama_pull, false},
    {"GET", "/api/version", sp_handle_ollama_version, true},
    {"GET", "/api/ps", sp_handle_ollama_ps, false},
    /* the model store (models_api.c) */
    {"POST", "/api/create", sp_handle_ollama_create, false},
    {"POST", "/api/copy", sp_handle_ollama_copy, false},
    {"DELETE", "/api/delete", sp_handle_ollama_delete, false},
    {"HEAD", "/api/blobs/", sp_handle_blob_head, false},
    {"POST", "/api/blobs/", sp_handle_blob_upload, false},
};

/* The routes that take their body as it comes (gigabytes of a blob), not
 * held up to --max-body. */
static const sp_body_sink *sink_of(const route *r) { return r && r->handler == sp_handle_blob_upload ? &sp_blob_upload : NULL; }

typedef struct upload {
    const struct route *route;
    void *sink_state;  /* the route's sink's, while its body comes */
    unsigned reject; /* the status it gets whatever its body (0: none) */
    sp_buf body;
    bool too_large;
    char refused[320]; /* why a Host or Origin was refused (403) */
} upload;

/* The checks that need no body, made as soon as the headers are in: a
 * request that fails one has its body read and dropped, not kept (nobody
 * makes the server hold 16 MiB only to hear that the key was wrong), and
 * gets its answer once the body is in, since clients that are still
 * sending do not read replies. */
static void check_early(sp_server *srv, struct MHD_Connection *c, const char *url, const char *method, upload *up) {
    if ((up->reject = sp_guard_check(srv, c, up->refused, sizeof up->refused)) || !strcmp(method, "OPTIONS")) return;
    bool path_known = false;
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
        if (route_serves(&routes[i], url)) {
            path_known = true;
            if (!strcmp(method, routes[i].method) || (!strcmp(method, "HEAD") && !strcmp(routes[i].method, "GET"))) up->route = &routes[i];
        }
    if (!up->route && path_known) up->reject = 405;
    else if (!up->route) up->reject = 404;
    else if (!up->route->before_ready && !sp_guard_authorized(srv, c)) up->reject = 401;
    else if (!up->route->before_ready && !atomic_load(&srv->ready)) up->reject = 503;
    else if (!up->route->before_ready && sp_fleet_refuses(srv, up->route->path)) up->reject = 503;
}

/* 405 with the Allow header HTTP asks for. */
static enum MHD_Result reply_not_allowed(sp_server *srv, struct MHD_Connection *c, sp_api_style style, const char *url, const char *method) {
    char message[512], allow[64] = "";
    snprintf(message, sizeof message, "%s is not allowed on %s", method, url);
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
        if (route_serves(&routes[i], url) && strlen(allow) + strlen(routes[i].method) + 3 < sizeof allow) {
            if (*allow) strcat(allow, ", ");
            strcat(allow, routes[i].method);
        }
    json_t *v = sp_error_json(style, 405, NULL, message);
    char *body = v ? json_dumps(v, JSON_COMPACT) : NULL;
    json_decref(v);
    return body ? send_body_allow(srv, c, 405, "application/json", body, strlen(body), allow) : MHD_NO;
}

static enum MHD_Result dispatch(sp_server *srv, struct MHD_Connection *c, const char *url, const char *method, upload *up) {
    const sp_api_style style = sp_style_of(url);
    sp_guard_answering(srv, c);
    switch (up->reject) {
    case 403: return sp_reply_error(srv, c, style, 403, NULL, "%s", up->refused);
    case 405: return reply_not_allowed(srv, c, style, url, method);
    case 404: return sp_reply_error(srv, c, style, 404, NULL, "no such endpoint: %s %s", method, url);
    case 401: return sp_reply_error(srv, c, style, 401, NULL, "invalid or missing API key");
    case 503:
        return sp_reply_error(srv, c, style, 503, NULL, "%s",
                              atomic_load(&srv->draining) ? "this replica is draining: retry on another" : "the model is still loading");
    default: break;
    }
    if (up->too_large) return sp_reply_error(srv, c, style, 413, NULL, "the request body is larger than %zu bytes", srv->opt.max_body);
    if (!strcmp(method, "OPTIONS")) return sp_guard_preflight(srv, c);
    if (up->sink_state) {
        void *state = up->sink_state;
        up->sink_state = NULL;
        return sink_of(up->route)->close(srv, c, url, state);
    }
    return up->route->handler(srv, c, url, up->body.data ? up->body.data : "", up->body.len);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method, const char *version,
                                  const char *upload_data, size_t *upload_size, void **con_cls) {
    (void)version;
    sp_server *srv = cls;
    upload *up = *con_cls;
    if (!up) { /* headers are in; the body (if any) follows */
        if (!(up = calloc(1, sizeof *up))) return MHD_NO;
        *con_cls = up;
        atomic_fetch_add(&srv->http_requests, 1);
        check_early(srv, c, url, method, up);
        const char *length = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        const bool sunk = sink_of(up->route) && !up->reject;
        if (length && strtoull(length, NULL, 10) > srv->opt.max_body && !sunk) up->too_large = true;
        if (sunk && !(up->sink_state = sink_of(up->route)->open(srv, url))) return MHD_NO;
        sp_guard_reading_body(srv, c, sunk);
        return MHD_YES;
    }
    if (*upload_size && up->sink_state) {
        sink_of(up->route)->write(up->sink_state, upload_data, *upload_size);
        *upload_size = 0;
        return MHD_YES;
    }
    if (*upload_size) {
        if (!up->too_large && up->body.len + *upload_size > srv->opt.max_body) up->too_large = true;
        const bool keep = !up->too_large && !up->reject;
        if (keep && !sp_buf_put(&up->body, upload_data, *upload_size)) return MHD_NO;
        if (!keep && up->body.data) { /* it went over the limit: what was kept is no use */
            free(up->body.data);
            up->body = (sp_buf){0};
        }
        *upload_size = 0;
        return MHD_YES;
    }
    return dispatch(srv, c, url, method, up);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode code) {
    if (code == MHD_REQUEST_TERMINATED_COMPLETED_OK) sp_guard_request_done(cls, c);
    upload *up = *con_cls;
    if (!up) return;
    if (up->sink_state) sink_of(up->route)->abort(up->sink_state); /* the client left mid-body */
    free(up->body.data);
    free(up);
    *con_cls = NULL;
}

/* --- life cycle ----------------------------------------------------------------------------------------- */

void sp_notice(const sp_server *srv, sprout_log_level level, const char *fmt, ...) {
    if (!srv->opt.notice) return;
    char message[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    srv->opt.notice(level, message, srv->opt.notice_user);
}

/* libmicrohttpd's own complaints, which it would otherwise write to stderr. */
static void on_mhd_log(void *cls, const char *fmt, va_list ap) {
    const sp_server *srv = cls;
    if (!srv->opt.notice) return;
    char message[1024];
    vsnprintf(message, sizeof message, fmt, ap);
    size_t n = strlen(message);
    while (n && message[n - 1] == '\n') message[--n] = 0;
    srv->opt.notice(SPROUT_LOG_WARN, message, srv->opt.notice_user);
}

int sp_server_run(const sp_server_options *options, const sigset_t *signals) {
    sp_server *srv = calloc(1, sizeof *srv);
    if (!srv) return 1;
    sp_oom_watch_json();
    srv->opt = *options;
    if (!srv->opt.host) srv->opt.host = "127.0.0.1";
    if (!srv->opt.max_body) srv->opt.max_body = 16u << 20;

    struct sockaddr_in6 addr6 = {0};
    struct sockaddr_in addr4 = {0};
    const struct sockaddr *addr;
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ITC | MHD_USE_ERROR_LOG;
    if (inet_pton(AF_INET, srv->opt.host, &addr4.sin_addr) == 1) {
        addr4.sin_family = AF_INET;
        addr4.sin_port = htons((uint16_t)srv->opt.port);
        addr = (const struct sockaddr *)&addr4;
    } else if (inet_pton(AF_INET6, srv->opt.host, &addr6.sin6_addr) == 1) {
        addr6.sin6_family = AF_INET6;
        addr6.sin6_port = htons((uint16_t)srv->opt.port);
        addr = (const struct sockaddr *)&addr6;
        flags |= MHD_USE_IPv6;
    } else {
        sp_notice(srv, SPROUT_LOG_ERROR, "--host %s is not an IPv4 or IPv6 address", srv->opt.host);
        free(srv);
        return 2;
    }
    const bool tls = srv->opt.tls_cert || srv->opt.tls_key;
    if (tls && (!srv->opt.tls_cert || !srv->opt.tls_key)) {
        sp_notice(srv, SPROUT_LOG_ERROR, "TLS needs both --tls-cert and --tls-key");
        free(srv);
        return 2;
    }
    if (tls && MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
        sp_notice(srv, SPROUT_LOG_ERROR, "this libmicrohttpd was built without TLS (GnuTLS): --tls-cert cannot be served");
        free(srv);
        return 2;
    }
    if (!sp_guard_start(srv)) {
        sp_guard_stop(srv);
        free(srv);
        return 1;
    }
    const unsigned idle = (unsigned)(srv->opt.idle_timeout_s > 0 ? srv->opt.idle_timeout_s : SP_DEFAULT_IDLE_TIMEOUT_S);
    const unsigned max_conn = (unsigned)(srv->opt.max_connections > 0 ? srv->opt.max_connections : SP_DEFAULT_MAX_CONNECTIONS);
    /* the logger first: libmicrohttpd writes to stderr what comes before it */
    struct MHD_OptionItem opts[16] = {
        {MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)on_mhd_log, srv},
        {MHD_OPTION_SOCK_ADDR, 0, (void *)addr},
        {MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_completed, srv},
        {MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)sp_guard_on_connection, srv},
        {MHD_OPTION_CONNECTION_LIMIT, max_conn, NULL},
        {MHD_OPTION_CONNECTION_TIMEOUT, idle, NULL},
    };
    size_t n_opts = 6;
    if (srv->opt.max_connections_per_ip > 0) opts[n_opts++] = (struct MHD_OptionItem){MHD_OPTION_PER_IP_CONNECTION_LIMIT, srv->opt.max_connections_per_ip, NULL};
    if (tls) {
        flags |= MHD_USE_TLS;
        opts[n_opts++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, (void *)srv->opt.tls_cert};
        opts[n_opts++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)srv->opt.tls_key};
    }
    opts[n_opts] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
    srv->daemon = MHD_start_daemon(flags, (uint16_t)srv->opt.port, NULL, NULL, on_request, srv, MHD_OPTION_ARRAY, opts, MHD_OPTION_END);
    if (!srv->daemon) {
        sp_notice(srv, SPROUT_LOG_ERROR, tls ? "cannot listen on %s:%d (in use, not allowed, or the TLS certificate and key are not valid PEM)"
                                             : "cannot listen on %s:%d (in use, or not allowed)", srv->opt.host, srv->opt.port);
        sp_guard_stop(srv);
        free(srv);
        return 1;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(srv->daemon, MHD_DAEMON_INFO_BIND_PORT);
    const int port = info ? info->port : srv->opt.port;
    sp_fleet_start(srv, port);
    sp_notice(srv, SPROUT_LOG_INFO, "listening on %s://%s%s%s:%d (loading %s)", tls ? "https" : "http", strchr(srv->opt.host, ':') ? "[" : "", srv->opt.host,
            strchr(srv->opt.host, ':') ? "]" : "", port, srv->opt.model_path ? srv->opt.model_path : "the store's models on demand");

    int rc = 0;
    if (!sp_request_stats_init(srv) || !sp_models_start(srv)) {
        rc = 1;
    } else {
        atomic_store(&srv->ready, true);
        /* the signal, waking every quarter second to unload the models whose keep_alive has passed */
        const struct timespec tick = {0, 250 * 1000 * 1000};
        int sig;
        while ((sig = sigtimedwait(signals, NULL, &tick)) < 0) sp_models_reap(srv);
        sp_notice(srv, SPROUT_LOG_INFO, "signal %d: finishing in-flight requests", sig);
        sp_fleet_drain(srv, signals);
    }

    /* stop accepting; give running generations a moment, then cut them short */
    atomic_store(&srv->stopping, true);
    const MHD_socket listener = MHD_quiesce_daemon(srv->daemon);
    if (listener != MHD_INVALID_SOCKET) close(listener); /* new connections are refused, not left waiting */
    for (int waited = 0; atomic_load(&srv->active_jobs) > 0 && waited < 100; waited++) usleep(20 * 1000);
    sp_models_stop(srv); /* what still runs ends "cancelled" and its response completes */
    for (int waited = 0; atomic_load(&srv->active_jobs) > 0 && waited < 500; waited++) usleep(10 * 1000);
    MHD_stop_daemon(srv->daemon);
    sp_guard_stop(srv);
    sp_models_free(srv);
    sp_request_stats_free(srv);
    sp_notice(srv, SPROUT_LOG_INFO, "stopped");
    free(srv);
    return rc;
}
