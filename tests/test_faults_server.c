/* Allocation failures in the HTTP server's request path (issue 39): the
 * server runs in this process (sp_server_run on a thread, port 0, linked
 * with tests/fault_inject.c) and a hand-written client, which allocates
 * nothing, sends it one request at a time over loopback. For an OpenAI chat
 * completion (plain and streamed) and an Ollama /api/generate, every
 * allocation the server makes while handling the request is made to fail
 * in turn. Each failure must end in an error answer (500 or 503 with a JSON
 * error body), a dropped connection, or a stream cut short or ending in an
 * error; never a crash, a hang, an answer that claims success with other
 * text, or a leak (LeakSanitizer, once the server has stopped). The next,
 * fault-free request must get the clean run's answer. The suite sweeps the
 * first allocations and a stride after them; SPROUT_FAULTS_FULL=1 (`make
 * test-faults`) sweeps them all. */
#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "fault_inject.h"
#include "server/server.h"
#include "test_util.h"

enum { REPLY_CAP = 64 * 1024, HANG_SECONDS = 60 };

static atomic_int server_port;
static atomic_bool server_ready, server_error;

/* The server's notices, read for its port and readiness (no allocation:
 * they may come while a fault is armed). */
static void on_notice(sprout_log_level level, const char *message, void *user) {
    (void)user;
    int port;
    if (sscanf(message, "listening on http://127.0.0.1:%d", &port) == 1) atomic_store(&server_port, port);
    if (!strncmp(message, "ready", 5)) atomic_store(&server_ready, true);
    if (level == SPROUT_LOG_ERROR) {
        atomic_store(&server_error, true);
        fprintf(stderr, "server: %s\n", message);
    }
}

typedef struct server_run {
    sp_server_options opt;
    sigset_t signals;
    int rc;
} server_run;

static void *serve(void *arg) {
    server_run *s = arg;
    s->rc = sp_server_run(&s->opt, &s->signals);
    return NULL;
}

/* One HTTP/1.0 exchange (the answer ends with the connection, streams
 * unchunked). Returns the bytes of the answer, 0 when the connection was
 * dropped before any, -1 when no answer came within HANG_SECONDS. */
static ssize_t http_post(const char *path, const char *body, char *reply, size_t cap) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return 0;
    struct timeval tv = {HANG_SECONDS, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atomic_load(&server_port))};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    char head[512];
    const int n_head = snprintf(head, sizeof head,
                                "POST %s HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n",
                                path, strlen(body));
    size_t got = 0;
    ssize_t n = -2;
    if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0 && send(fd, head, (size_t)n_head, MSG_NOSIGNAL) == n_head &&
        send(fd, body, strlen(body), MSG_NOSIGNAL) == (ssize_t)strlen(body))
        while (got + 1 < cap && (n = recv(fd, reply + got, cap - 1 - got, 0)) > 0) got += (size_t)n;
    reply[got] = 0;
    close(fd);
    return n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK) ? -1 : (ssize_t)got;
}

static int status_of(const char *reply) {
    int status = 0;
    return sscanf(reply, "HTTP/1.%*d %d", &status) == 1 ? status : 0;
}

static const char *body_of(const char *reply) {
    const char *b = strstr(reply, "\r\n\r\n");
    return b ? b + 4 : "";
}

/* The generated text as the answer spells it: every `key` string value in
 * order (one for a plain answer, a delta per chunk for a stream), still
 * JSON-escaped, which is enough to compare two answers. */
static void text_of(const char *body, const char *key, char *out, size_t cap) {
    char pattern[64];
    snprintf(pattern, sizeof pattern, "\"%s\":\"", key);
    size_t len = 0;
    out[0] = 0;
    for (const char *p = strstr(body, pattern); p; p = strstr(p, pattern)) {
        p += strlen(pattern);
        for (; *p && *p != '"' && len + 1 < cap; p++) {
            if (*p == '\\' && p[1]) out[len++] = *p++;
            out[len++] = *p;
        }
        out[len] = 0;
    }
}

typedef struct request_case {
    const char *name, *path, *body;
    const char *text_key; /* where the generated text is */
    const char *end_mark; /* what a whole answer ends with */
    char clean_text[4096];
} request_case;

static bool full_sweep(void) {
    const char *v = getenv("SPROUT_FAULTS_FULL");
    return v && *v && strcmp(v, "0");
}

/* Every allocation of the first `dense`, then a stride (as test_faults). */
static uint64_t next_point(uint64_t n, uint64_t total) {
    const uint64_t dense = test_quick_run() ? 60 : 150;
    if (full_sweep() || n < dense) return n + 1;
    return n + (total - dense) / dense + 1;
}

static uint64_t points_swept, points_absorbed, points_dropped, points_error, points_cut;

static char reply[REPLY_CAP];

/* A fault-free request gets the clean answer. */
static bool answers_clean(request_case *rc, const char *when) {
    ssize_t n = http_post(rc->path, rc->body, reply, sizeof reply);
    char text[4096];
    text_of(body_of(reply), rc->text_key, text, sizeof text);
    const bool ok = n > 0 && status_of(reply) == 200 && strstr(body_of(reply), rc->end_mark) && !strcmp(text, rc->clean_text);
    CHECK_MSG(ok, "%s: %s: the fault-free request got %s", rc->name, when, n < 0 ? "no answer (hang)" : reply);
    return ok;
}

/* What the request got while allocation `at` failed: an error answer, a
 * dropped connection, a stream cut short or ending in an error, or (the
 * failure absorbed) the clean answer; never another answer or a hang. */
static void judge(request_case *rc, uint64_t at, ssize_t n) {
    const int status = status_of(reply);
    const char *body = body_of(reply);
    char text[4096];
    text_of(body, rc->text_key, text, sizeof text);
    if (n < 0) {
        CHECK_MSG(false, "%s: allocation %llu failed: no answer in %d s", rc->name, (unsigned long long)at, HANG_SECONDS);
    } else if (n == 0 || !status) {
        points_dropped++;
    } else if (status == 500 || status == 503) {
        json_error_t err;
        json_t *v = json_loads(body, 0, &err);
        CHECK_MSG(json_is_object(v) && json_object_get(v, "error"), "%s: allocation %llu failed: %d without a JSON error: %s",
                  rc->name, (unsigned long long)at, status, body);
        json_decref(v);
        points_error++;
    } else if (status == 200 && strstr(body, rc->end_mark) && !strstr(body, "\"error\"")) {
        CHECK_MSG(!strcmp(text, rc->clean_text), "%s: allocation %llu failed: a whole answer with other text: %s (clean: %s)",
                  rc->name, (unsigned long long)at, text, rc->clean_text);
        points_absorbed++;
    } else if (status == 200 && strstr(reply, "text/event-stream") == NULL && strstr(reply, "ndjson") == NULL) {
        CHECK_MSG(false, "%s: allocation %llu failed: a plain answer cut short: %s", rc->name, (unsigned long long)at, reply);
    } else if (status == 200) {
        points_cut++; /* a stream cut short, or ending in an error event */
    } else {
        CHECK_MSG(false, "%s: allocation %llu failed: status %d: %s", rc->name, (unsigned long long)at, status, body);
    }
}

/* SPROUT_FAULTS_ONLY=part-of-a-name and SPROUT_FAULTS_AT=n study one point
 * (with SPROUT_FAULTS_TRACE=1 under the sanitizers: its stack). */
static void sweep(request_case *rc) {
    const char *only = getenv("SPROUT_FAULTS_ONLY"), *at = getenv("SPROUT_FAULTS_AT");
    if (only && !strstr(rc->name, only)) return;
    fault_alloc_arm(0);
    ssize_t n = http_post(rc->path, rc->body, reply, sizeof reply);
    const uint64_t total = fault_alloc_disarm();
    text_of(body_of(reply), rc->text_key, rc->clean_text, sizeof rc->clean_text);
    CHECK_MSG(n > 0 && status_of(reply) == 200 && strstr(body_of(reply), rc->end_mark) && *rc->clean_text,
              "%s: fails without a fault: %s", rc->name, reply);
    if (n <= 0 || status_of(reply) != 200) return;
    uint64_t swept = 0;
    for (uint64_t p = at ? strtoull(at, NULL, 10) : 1; p <= total; p = at ? total + 1 : next_point(p, total)) {
        fault_alloc_arm(p);
        n = http_post(rc->path, rc->body, reply, sizeof reply);
        const bool fired = fault_alloc_fired();
        fault_alloc_disarm();
        if (!fired) continue; /* fewer allocations this time (the threads' timing) */
        swept++;
        judge(rc, p, n);
        char when[64];
        snprintf(when, sizeof when, "after allocation %llu failed", (unsigned long long)p);
        if (!answers_clean(rc, when)) break; /* the server is broken: the rest would say the same */
    }
    points_swept += swept;
    printf("%s: %llu allocations, %llu of them failed in turn\n", rc->name, (unsigned long long)total, (unsigned long long)swept);
}

static bool wait_ready(void) {
    for (int i = 0; i < 6000 && !atomic_load(&server_error); i++) {
        if (atomic_load(&server_ready) && atomic_load(&server_port)) return true;
        usleep(10 * 1000);
    }
    return false;
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    /* jansson's allocations are counted and failed too: the server routes
     * them through its watch (sp_oom_watch_json), whose malloc is the wrapper */
    char model_path[1024];
    snprintf(model_path, sizeof model_path, "%s/models/stories260K.gguf", test_shared_dir());
    server_run s = {.opt = {.model_path = model_path, .port = 0, .n_slots = 1, .n_ctx = 256, .n_threads = 1, .no_webui = true,
                            .notice = on_notice}};
    sigemptyset(&s.signals);
    sigaddset(&s.signals, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &s.signals, NULL); /* every thread inherits it; the server waits for it */
    pthread_t server;
    CHECK(pthread_create(&server, NULL, serve, &s) == 0);
    const bool ready = wait_ready();
    CHECK_MSG(ready, "the server did not start");
    if (ready) {
        request_case cases[] = {
            {.name = "OpenAI chat",
             .path = "/v1/chat/completions",
             .body = "{\"messages\":[{\"role\":\"user\",\"content\":\"Once upon a time\"}],\"max_tokens\":6,\"temperature\":0,\"seed\":1}",
             .text_key = "content",
             .end_mark = "\"finish_reason\""},
            {.name = "OpenAI chat streamed",
             .path = "/v1/chat/completions",
             .body = "{\"messages\":[{\"role\":\"user\",\"content\":\"Once upon a time\"}],\"max_tokens\":6,\"temperature\":0,\"seed\":1,"
                     "\"stream\":true}",
             .text_key = "content",
             .end_mark = "data: [DONE]"},
            {.name = "OpenAI chat to a JSON schema",
             .path = "/v1/chat/completions",
             .body = "{\"messages\":[{\"role\":\"user\",\"content\":\"Once upon a time\"}],\"max_tokens\":6,\"temperature\":0,\"seed\":1,"
                     "\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"pet\",\"schema\":{\"type\":\"object\","
                     "\"properties\":{\"name\":{\"type\":\"string\"},\"age\":{\"type\":\"integer\"}},\"required\":[\"name\"]}}}}",
             .text_key = "content",
             .end_mark = "\"finish_reason\""},
            {.name = "OpenAI chat with tools",
             .path = "/v1/chat/completions",
             .body = "{\"messages\":[{\"role\":\"user\",\"content\":\"Once upon a time\"}],\"max_tokens\":6,\"temperature\":0,\"seed\":1,"
                     "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"description\":\"The weather\","
                     "\"parameters\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}},\"required\":[\"city\"]}}}]}",
             .text_key = "content",
             .end_mark = "\"finish_reason\""},
            {.name = "Ollama chat",
             .path = "/api/chat",
             .body = "{\"model\":\"stories260K\",\"messages\":[{\"role\":\"system\",\"content\":\"Be brief.\"},"
                     "{\"role\":\"user\",\"content\":\"Once upon a time\"}],\"stream\":false,"
                     "\"options\":{\"temperature\":0,\"seed\":1,\"num_predict\":6}}",
             .text_key = "content",
             .end_mark = "\"done\":true"},
            {.name = "Ollama generate",
             .path = "/api/generate",
             .body = "{\"model\":\"stories260K\",\"prompt\":\"Once upon a time\",\"stream\":false,"
                     "\"options\":{\"temperature\":0,\"seed\":1,\"num_predict\":6}}",
             .text_key = "response",
             .end_mark = "\"done\":true"},
        };
        for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) sweep(&cases[i]);
    }
    pthread_kill(server, SIGUSR1);
    pthread_join(server, NULL);
    CHECK_MSG(s.rc == 0, "the server exited with %d", s.rc);
    printf("%llu allocation points failed in turn (%s sweep) from %zu call sites: %llu error answers, %llu dropped connections, "
           "%llu streams cut short, %llu absorbed\n",
           (unsigned long long)points_swept, full_sweep() ? "full" : "bounded", fault_alloc_sites(), (unsigned long long)points_error,
           (unsigned long long)points_dropped, (unsigned long long)points_cut, (unsigned long long)points_absorbed);
    TEST_MAIN_END();
}
