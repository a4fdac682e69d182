/* A replica among many behind a balancer: the headers that say which
 * replica answered and how much of the prompt its cache held, liveness
 * apart from readiness, the drain that a stop signal starts (new work 503
 * with Retry-After, in-flight work finishes), and LoRA adapters named in
 * "model" as the inference gateway routes them. */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "server/server_internal.h"

/* One server per process (it owns the process's stop signals), so the
 * response hook that every reply path calls needs no server argument. */
static char replica[256];
static const sp_server *serving;
/* Set by a generation just before its one-piece reply, read once by the
 * reply's headers: each connection has its own thread. */
static _Thread_local int64_t reply_cached = -1;

double sp_fleet_now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

void sp_fleet_start(sp_server *srv, int port) {
    serving = srv;
    if (srv->opt.replica_id && *srv->opt.replica_id) {
        snprintf(replica, sizeof replica, "%s", srv->opt.replica_id);
        return;
    }
    char host[128] = "localhost";
    if (gethostname(host, sizeof host - 1) != 0) snprintf(host, sizeof host, "localhost");
    snprintf(replica, sizeof replica, "%s:%d", host, port);
}

void sp_fleet_headers(struct MHD_Response *r) {
    if (!serving) return;
    MHD_add_response_header(r, "X-Sprout-Replica", replica);
    if (reply_cached >= 0) {
        char text[32];
        snprintf(text, sizeof text, "%lld", (long long)reply_cached);
        MHD_add_response_header(r, "X-Sprout-Cached-Tokens", text);
        reply_cached = -1;
    }
    if (atomic_load(&serving->draining)) {
        MHD_add_response_header(r, "Retry-After", "1");
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
    }
}

void sp_fleet_note_cached(int64_t tokens) { reply_cached = tokens; }

bool sp_fleet_refuses(const sp_server *srv, const char *path) { return atomic_load(&srv->draining) && strcmp(path, "/metrics") != 0; }

void sp_fleet_drain(sp_server *srv, const sigset_t *signals) {
    atomic_store(&srv->draining, true);
    const int64_t timeout = srv->opt.drain_timeout_ms == 0 ? 30000 : srv->opt.drain_timeout_ms;
    const double until = sp_fleet_now_ms() + (double)(timeout > 0 ? timeout : 0);
    const int in_flight = atomic_load(&srv->active_jobs);
    sp_notice(srv, SPROUT_LOG_INFO, "draining: %d request%s in flight, new ones get 503 (up to %.3g s; the signal again stops now)",
              in_flight, in_flight == 1 ? "" : "s", (double)(timeout > 0 ? timeout : 0) / 1e3);
    const struct timespec tick = {0, 50 * 1000 * 1000};
    while (atomic_load(&srv->active_jobs) > 0 && sp_fleet_now_ms() < until)
        if (sigtimedwait(signals, NULL, &tick) >= 0) break;
    const int left = atomic_load(&srv->active_jobs);
    if (left) sp_notice(srv, SPROUT_LOG_WARN, "drain over with %d request%s still running: they are cut short", left, left == 1 ? "" : "s");
}

enum MHD_Result sp_handle_health_live(sp_server *srv, struct MHD_Connection *c, const char *url, const char *body, size_t len) {
    (void)url, (void)body, (void)len;
    return sp_reply_json(srv, c, 200, json_pack("{s:s}", "status", "alive"));
}

/* --- adapters by name -------------------------------------------------------------------------------------- */

void sp_fleet_adapter_name(const char *path, char *out, size_t cap) {
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    size_t n = strlen(base);
    if (n > 5 && !strcmp(base + n - 5, ".gguf")) n -= 5;
    snprintf(out, cap, "%.*s", (int)n, base);
}

/* The id of the -m model's adapter called `name`, or -1. */
static int32_t adapter_id(const sp_model_entry *e, const char *name) {
    char own[256];
    for (size_t i = 0; i < e->n_lora; i++) {
        sp_fleet_adapter_name(e->lora_paths[i], own, sizeof own);
        if (!strcmp(own, name)) return (int32_t)i;
    }
    return -1;
}

bool sp_fleet_adapter_of(const sp_server *srv, const char *name, char *base, size_t cap, int32_t *adapter) {
    const sp_model_entry *e = srv->pinned;
    if (!e || !name || !*name || !atomic_load(&srv->ready) || sp_model_name_matches(e, name)) return false;
    int32_t id = adapter_id(e, name);
    const char *colon = strrchr(name, ':');
    if (id < 0 && colon && colon > name) { /* "MODEL:ADAPTER", MODEL the -m model's name */
        char model[256];
        snprintf(model, sizeof model, "%.*s", (int)(colon - name), name);
        if (sp_model_name_matches(e, model)) id = adapter_id(e, colon + 1);
    }
    if (id < 0) return false;
    snprintf(base, cap, "%s", e->name);
    *adapter = id;
    return true;
}
