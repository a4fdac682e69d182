/* The server's guards against a hostile network: deadlines for a request's
 * headers and body (slowloris: a thread per connection is cheap, a thread
 * held for ever by a byte a second is not), the Host check that defeats
 * DNS rebinding on a loopback server, the Origin check and CORS answers
 * browsers need, and the API key compared in constant time.
 *
 * Deadlines: libmicrohttpd's own timeout is an idle timeout, which a byte a
 * second never reaches. Each connection is tracked here from accept to
 * close, with the moment by which its request must be in; a reaper thread
 * shuts down (never closes: the fd stays libmicrohttpd's) the sockets that
 * miss theirs, and libmicrohttpd's thread then sees the end of the stream
 * and closes the connection. The connection leaves the table before
 * libmicrohttpd closes its fd, so the reaper never touches a reused one. */
#include <arpa/inet.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "server/server_internal.h"

typedef struct tracked {
    struct tracked *prev, *next;
    int fd;
    int64_t deadline_ms; /* monotonic; 0: none (its answer is being written) */
} tracked;

struct sp_guard {
    pthread_mutex_t mu;
    pthread_cond_t wake;
    pthread_t reaper;
    bool reaper_started, stop;
    tracked *head;
    int64_t header_ms, body_ms, idle_ms;
    bool check_host; /* loopback (or --allowed-hosts): the Host must be one of ours */
    char **hosts, **origins; /* --allowed-hosts, and the origins allowed: Ollama's defaults, then --allowed-origins */
    size_t n_hosts, n_origins;
    atomic_ullong timeouts, refused;
};

static int64_t now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* --- matching (pure: the unit test calls these) ------------------------------------------------------------ */

bool sp_secret_equal(const char *secret, const char *given) {
    /* every byte of the secret is compared whatever the first difference, and
     * the given text is read only as far as the secret's length (past its end
     * as zeros), so the time depends on the secret's length alone */
    const size_t n = strlen(secret);
    volatile unsigned char diff = 0;
    bool given_ended = false;
    for (size_t i = 0; i < n; i++) {
        const unsigned char g = given_ended ? 0 : (unsigned char)given[i];
        given_ended |= g == 0;
        diff |= (unsigned char)((unsigned char)secret[i] ^ g);
    }
    diff |= (unsigned char)(!given_ended && given[n] != 0); /* longer than the secret */
    diff |= (unsigned char)given_ended;                     /* shorter */
    return n > 0 && diff == 0;
}

bool sp_wildcard_match(const char *pattern, const char *text) {
    /* '*' matches any run of characters; case does not matter (hosts and schemes) */
    const char *star = NULL, *resume = NULL;
    while (*text) {
        if (*pattern == '*') {
            star = pattern++;
            resume = text;
        } else if (tolower((unsigned char)*pattern) == tolower((unsigned char)*text)) {
            pattern++;
            text++;
        } else if (star) {
            pattern = star + 1;
            text = ++resume;
        } else {
            return false;
        }
    }
    while (*pattern == '*') pattern++;
    return !*pattern;
}

/* The name in a Host header or an origin's authority, without port or
 * brackets, lower case: false when it does not fit. */
static bool host_name(const char *authority, size_t len, char *name, size_t cap) {
    const char *end = authority + len;
    if (len && authority[0] == '[') {
        const char *close = memchr(authority, ']', len);
        if (!close) return false;
        authority++;
        end = close;
    } else {
        const char *colon = memchr(authority, ':', len);
        if (colon && !memchr(colon + 1, ':', (size_t)(end - colon - 1))) end = colon; /* several: a bare IPv6 address */
    }
    const size_t n = (size_t)(end - authority);
    if (n == 0 || n >= cap) return false;
    for (size_t i = 0; i < n; i++) name[i] = (char)tolower((unsigned char)authority[i]);
    name[n] = 0;
    if (n > 1 && name[n - 1] == '.') name[n - 1] = 0; /* "localhost." is localhost */
    return true;
}

static bool is_loopback_name(const char *name) {
    struct in_addr a4;
    struct in6_addr a6;
    const size_t n = strlen(name);
    if (!strcmp(name, "localhost") || (n > 10 && !strcmp(name + n - 10, ".localhost"))) return true;
    if (inet_pton(AF_INET, name, &a4) == 1) return (ntohl(a4.s_addr) >> 24) == 127;
    return inet_pton(AF_INET6, name, &a6) == 1 && (IN6_IS_ADDR_LOOPBACK(&a6) || (IN6_IS_ADDR_V4MAPPED(&a6) && a6.s6_addr[12] == 127));
}

bool sp_host_allowed(const char *host, const char *const *allowed, size_t n_allowed) {
    char name[256];
    if (!host_name(host, strlen(host), name, sizeof name)) return false;
    if (is_loopback_name(name)) return true;
    for (size_t i = 0; i < n_allowed; i++)
        if (sp_wildcard_match(allowed[i], name)) return true;
    return false;
}

/* Ollama's OLLAMA_ORIGINS defaults: pages served from this machine and the
 * desktop shells' own schemes. */
static const char *const default_origins[] = {
    "http://localhost",      "https://localhost",      "http://localhost:*",      "https://localhost:*",
    "http://127.0.0.1",      "https://127.0.0.1",      "http://127.0.0.1:*",      "https://127.0.0.1:*",
    "http://[::1]",          "https://[::1]",          "http://[::1]:*",          "https://[::1]:*",
    "http://0.0.0.0",        "https://0.0.0.0",        "http://0.0.0.0:*",        "https://0.0.0.0:*",
    "app://*",               "file://*",               "tauri://*",               "vscode-webview://*",
    "vscode-file://*",
};

bool sp_origin_allowed(const char *origin, const char *host, const char *const *allowed, size_t n_allowed) {
    /* the page this server sent (the web chat page): its origin's authority is the Host it asked */
    const char *authority = strstr(origin, "://");
    if (authority && host && !strcasecmp(authority + 3, host)) return true;
    for (size_t i = 0; i < sizeof default_origins / sizeof default_origins[0]; i++)
        if (sp_wildcard_match(default_origins[i], origin)) return true;
    for (size_t i = 0; i < n_allowed; i++)
        if (sp_wildcard_match(allowed[i], origin)) return true;
    return false;
}

/* --- set-up ------------------------------------------------------------------------------------------------ */

/* "a, b,c" into its trimmed, non-empty items. */
static bool split_list(const char *text, char ***items, size_t *n) {
    *items = NULL;
    *n = 0;
    if (!text) return true;
    size_t cap = 1;
    for (const char *p = text; *p; p++) cap += *p == ',';
    if (!(*items = calloc(cap, sizeof **items))) return false;
    const char *p = text;
    while (*p) {
        while (*p == ',' || isspace((unsigned char)*p)) p++;
        const char *end = p;
        while (*end && *end != ',') end++;
        size_t len = (size_t)(end - p);
        while (len && isspace((unsigned char)p[len - 1])) len--;
        if (len && !((*items)[(*n)++] = strndup(p, len))) return false;
        p = end;
    }
    return true;
}

static void free_list(char **items, size_t n) {
    for (size_t i = 0; i < n; i++) free(items[i]);
    free(items);
}

static bool bound_to_loopback(const char *host) { return is_loopback_name(host); }

static void *reaper_main(void *arg) {
    sp_guard *g = arg;
    pthread_mutex_lock(&g->mu);
    while (!g->stop) {
        const int64_t now = now_ms();
        for (tracked *t = g->head; t; t = t->next)
            if (t->deadline_ms && now >= t->deadline_ms) {
                shutdown(t->fd, SHUT_RDWR); /* libmicrohttpd's thread reads the end and closes */
                t->deadline_ms = 0;
                atomic_fetch_add(&g->timeouts, 1);
            }
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_nsec += 200 * 1000 * 1000;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&g->wake, &g->mu, &until);
    }
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

bool sp_guard_start(sp_server *srv) {
    sp_guard *g = calloc(1, sizeof *g);
    if (!g) return false;
    const sp_server_options *o = &srv->opt;
    g->header_ms = 1000 * (int64_t)(o->header_timeout_s > 0 ? o->header_timeout_s : SP_DEFAULT_HEADER_TIMEOUT_S);
    g->body_ms = 1000 * (int64_t)(o->body_timeout_s > 0 ? o->body_timeout_s : SP_DEFAULT_BODY_TIMEOUT_S);
    g->idle_ms = 1000 * (int64_t)(o->idle_timeout_s > 0 ? o->idle_timeout_s : SP_DEFAULT_IDLE_TIMEOUT_S);
    pthread_mutex_init(&g->mu, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&g->wake, &attr);
    pthread_condattr_destroy(&attr);
    srv->guard = g;
    if (!split_list(o->allowed_hosts, &g->hosts, &g->n_hosts) || !split_list(o->allowed_origins, &g->origins, &g->n_origins)) {
        sp_notice(srv, SPROUT_LOG_ERROR, "out of memory");
        return false;
    }
    g->check_host = bound_to_loopback(o->host ? o->host : "127.0.0.1") || g->n_hosts > 0;
    if (pthread_create(&g->reaper, NULL, reaper_main, g)) {
        sp_notice(srv, SPROUT_LOG_ERROR, "cannot start a thread");
        return false;
    }
    g->reaper_started = true;
    return true;
}

void sp_guard_stop(sp_server *srv) {
    sp_guard *g = srv->guard;
    if (!g) return;
    if (g->reaper_started) {
        pthread_mutex_lock(&g->mu);
        g->stop = true;
        pthread_cond_signal(&g->wake);
        pthread_mutex_unlock(&g->mu);
        pthread_join(g->reaper, NULL);
    }
    for (tracked *t = g->head, *next; t; t = next) { /* what the daemon's end did not report */
        next = t->next;
        free(t);
    }
    free_list(g->hosts, g->n_hosts);
    free_list(g->origins, g->n_origins);
    pthread_cond_destroy(&g->wake);
    pthread_mutex_destroy(&g->mu);
    free(g);
    srv->guard = NULL;
}

unsigned long long sp_guard_timeouts(const sp_server *srv) { return srv->guard ? atomic_load(&srv->guard->timeouts) : 0; }
unsigned long long sp_guard_refused(const sp_server *srv) { return srv->guard ? atomic_load(&srv->guard->refused) : 0; }

/* --- deadlines ---------------------------------------------------------------------------------------------- */

void sp_guard_on_connection(void *cls, struct MHD_Connection *c, void **socket_context, enum MHD_ConnectionNotificationCode code) {
    sp_server *srv = cls;
    sp_guard *g = srv->guard;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        tracked *t = calloc(1, sizeof *t);
        *socket_context = t;
        if (!t) return; /* untracked: only libmicrohttpd's idle timeout applies */
        t->fd = sp_connection_fd(c);
        t->deadline_ms = now_ms() + g->header_ms;
        pthread_mutex_lock(&g->mu);
        t->next = g->head;
        if (g->head) g->head->prev = t;
        g->head = t;
        pthread_mutex_unlock(&g->mu);
        return;
    }
    tracked *t = *socket_context;
    if (!t) return;
    pthread_mutex_lock(&g->mu);
    if (t->prev) t->prev->next = t->next;
    else g->head = t->next;
    if (t->next) t->next->prev = t->prev;
    pthread_mutex_unlock(&g->mu);
    free(t);
    *socket_context = NULL;
}

static void set_deadline(sp_server *srv, struct MHD_Connection *c, int64_t after_ms) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    tracked *t = ci ? ci->socket_context : NULL;
    if (!t || !srv->guard) return;
    pthread_mutex_lock(&srv->guard->mu);
    t->deadline_ms = after_ms ? now_ms() + after_ms : 0;
    pthread_mutex_unlock(&srv->guard->mu);
}

void sp_guard_reading_body(sp_server *srv, struct MHD_Connection *c, bool streamed) {
    /* a body taken as it comes (a blob of gigabytes) has no deadline: the idle timeout still applies */
    set_deadline(srv, c, streamed ? 0 : srv->guard->body_ms);
}

void sp_guard_answering(sp_server *srv, struct MHD_Connection *c) {
    /* A generation may wait in the queue, and a stream between tokens, far
     * longer than any idle timeout: libmicrohttpd would cut it (it checks its
     * timeout against the last byte moved, also after the handler that
     * waited). No timeout while the answer is made and written. */
    set_deadline(srv, c, 0);
    MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, 0u);
}

void sp_guard_request_done(sp_server *srv, struct MHD_Connection *c) {
    /* keep-alive: the next request may take the idle time to start (setting
     * the timeout from 0 restarts libmicrohttpd's clock) */
    set_deadline(srv, c, srv->guard->idle_ms + srv->guard->header_ms);
    MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, (unsigned)(srv->guard->idle_ms / 1000));
}

/* --- Host, Origin, CORS, the key ------------------------------------------------------------------------------ */

unsigned sp_guard_check(sp_server *srv, struct MHD_Connection *c, char *why, size_t cap) {
    const sp_guard *g = srv->guard;
    const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
    const char *origin = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Origin");
    unsigned status = 0;
    if (g->check_host && host && !sp_host_allowed(host, (const char *const *)g->hosts, g->n_hosts)) {
        snprintf(why, cap, "host \"%.200s\" is not allowed (a loopback server answers localhost; --allowed-hosts adds names)", host);
        status = 403;
    } else if (origin && !sp_origin_allowed(origin, host, (const char *const *)g->origins, g->n_origins)) {
        snprintf(why, cap, "origin \"%.200s\" is not allowed (--allowed-origins adds origins)", origin);
        status = 403;
    }
    if (status) atomic_fetch_add(&srv->guard->refused, 1);
    return status;
}

void sp_guard_cors(const sp_server *srv, struct MHD_Connection *c, struct MHD_Response *r) {
    /* the Origin the request brought, when allowed (the 403 that refuses one says nothing to its page) */
    const sp_guard *g = srv->guard;
    const char *origin = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Origin");
    const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
    if (!origin || !g || !sp_origin_allowed(origin, host, (const char *const *)g->origins, g->n_origins)) return;
    MHD_add_response_header(r, "Access-Control-Allow-Origin", origin);
    MHD_add_response_header(r, "Vary", "Origin");
}

/* The headers a preflight may ask for: what the OpenAI and Ollama browser
 * clients send (Authorization, Content-Type, the OpenAI SDK's X-Stainless-*
 * and OpenAI-* headers, sessions' X-Session-Id), echoed when every name is
 * a plain token. */
static const char default_allow_headers[] =
    "Authorization, Content-Type, Accept, User-Agent, X-Requested-With, X-Session-Id, OpenAI-Organization, OpenAI-Project, "
    "X-Stainless-Lang, X-Stainless-Package-Version, X-Stainless-OS, X-Stainless-Arch, X-Stainless-Runtime, "
    "X-Stainless-Runtime-Version, X-Stainless-Retry-Count, X-Stainless-Timeout, X-Stainless-Async, X-Stainless-Helper-Method";

static bool header_list_ok(const char *list) {
    if (strlen(list) > 2048) return false;
    for (const char *p = list; *p; p++)
        if (!isalnum((unsigned char)*p) && !strchr("-_, ", *p)) return false;
    return true;
}

enum MHD_Result sp_guard_preflight(sp_server *srv, struct MHD_Connection *c) {
    struct MHD_Response *r = MHD_create_response_from_buffer(0, "", MHD_RESPMEM_PERSISTENT);
    if (!r) return MHD_NO;
    const char *asked = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Access-Control-Request-Headers");
    sp_guard_cors(srv, c, r);
    MHD_add_response_header(r, "Server", "sprout");
    MHD_add_response_header(r, "Access-Control-Allow-Methods", "GET, POST, DELETE, HEAD, OPTIONS");
    MHD_add_response_header(r, "Access-Control-Allow-Headers", asked && *asked && header_list_ok(asked) ? asked : default_allow_headers);
    MHD_add_response_header(r, "Access-Control-Max-Age", "86400");
    enum MHD_Result res = MHD_queue_response(c, 204, r);
    MHD_destroy_response(r);
    return res;
}

bool sp_guard_authorized(const sp_server *srv, struct MHD_Connection *c) {
    if (!srv->opt.api_key || !*srv->opt.api_key) return true;
    const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (!auth || strncasecmp(auth, "Bearer ", 7)) return false;
    auth += 7;
    while (*auth == ' ') auth++;
    return sp_secret_equal(srv->opt.api_key, auth);
}
