/* sprout ps and sprout stop: Ollama's verbs for a running server. ps lists
 * the models it has loaded (GET /api/ps); stop unloads one now (POST
 * /api/generate with keep_alive 0, as `ollama stop` does). The server is
 * --host, else $SPROUT_HOST, else 127.0.0.1:8080. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "commands.h"
#include "http_client.h"
#include "options.h"

typedef struct client_options {
    const char *host;
} client_options;

static const cli_option client_table[] = {
    CLI_OPT_STRING("--host", "ADDR", offsetof(client_options, host), "the server: HOST:PORT (default $SPROUT_HOST, else 127.0.0.1:8080)"),
};

static const cli_command ps_command = {
    .name = "ps",
    .usage = "ps [--host HOST:PORT]",
    .about = "The models a running `sprout serve` has loaded, and until when each stays.\n",
    CLI_TABLE(client_table),
};

static const cli_command stop_command = {
    .name = "stop",
    .usage = "stop NAME [--host HOST:PORT]",
    .about = "Unloads a model from a running `sprout serve` now (its requests running finish first).\n",
    CLI_TABLE(client_table),
    .max_args = 1,
};

/* The server's error message from a reply's body, or the body itself. */
static const char *reply_error(const cli_http_reply *r, char *buf, size_t cap) {
    json_t *v = json_loads(r->body ? r->body : "", 0, NULL);
    const json_t *e = json_object_get(v, "error");
    const char *text = json_is_string(e) ? json_string_value(e) : json_string_value(json_object_get(e, "message"));
    snprintf(buf, cap, "%s", text ? text : r->body && *r->body ? r->body : "no message");
    json_decref(v);
    return buf;
}

/* "1.2 GB": bytes as Ollama's ps shows them (decimal units). */
static void human_size(double bytes, char *out, size_t cap) {
    static const char *const units[] = {"B", "KB", "MB", "GB", "TB"};
    size_t u = 0;
    while (bytes >= 1000 && u + 1 < sizeof units / sizeof *units) bytes /= 1000, u++;
    snprintf(out, cap, u ? "%.1f %s" : "%.0f %s", bytes, units[u]);
}

/* "4 minutes from now", "Forever", "Stopping...": an RFC 3339 time from now. */
static void until(const char *when, char *out, size_t cap) {
    struct tm tm = {0};
    if (!when || !strptime(when, "%Y-%m-%dT%H:%M:%S", &tm)) {
        snprintf(out, cap, "?");
        return;
    }
    const double left = difftime(timegm(&tm), time(NULL));
    if (left > 365.0 * 86400) snprintf(out, cap, "Forever");
    else if (left <= 0) snprintf(out, cap, "Stopping...");
    else if (left < 120) snprintf(out, cap, "%.0f seconds from now", left);
    else if (left < 7200) snprintf(out, cap, "%.0f minutes from now", left / 60);
    else snprintf(out, cap, "%.0f hours from now", left / 3600);
}

int cmd_ps(int argc, char **argv) {
    cli_common c;
    client_options co = {0};
    const int status = cli_parse(&ps_command, &c, &co, argc, argv);
    if (status != CLI_CONTINUE) return status;
    const char *address = cli_server_address(co.host);
    cli_http_reply r;
    char error[512];
    if (cli_http_request(address, "GET", "/api/ps", NULL, &r, error, sizeof error) != 0) {
        fprintf(stderr, "sprout ps: %s\n", error);
        return 1;
    }
    json_t *v = r.status == 200 ? json_loads(r.body, 0, NULL) : NULL;
    const json_t *models = json_object_get(v, "models");
    if (!json_is_array(models)) {
        fprintf(stderr, "sprout ps: %s answered %d: %s\n", address, r.status, reply_error(&r, error, sizeof error));
        json_decref(v);
        free(r.body);
        return 1;
    }
    printf("%-32s %-14s %-10s %-10s %-8s %s\n", "NAME", "ID", "SIZE", "PROCESSOR", "CONTEXT", "UNTIL");
    for (size_t i = 0; i < json_array_size(models); i++) {
        const json_t *m = json_array_get(models, i);
        const char *name = json_string_value(json_object_get(m, "name")), *digest = json_string_value(json_object_get(m, "digest"));
        char size[32], left[64];
        human_size((double)json_integer_value(json_object_get(m, "size")), size, sizeof size);
        until(json_string_value(json_object_get(m, "expires_at")), left, sizeof left);
        printf("%-32s %-14.12s %-10s %-10s %-8lld %s\n", name ? name : "?", digest ? digest : "", size, "100% CPU",
               (long long)json_integer_value(json_object_get(m, "context_length")), left);
    }
    json_decref(v);
    free(r.body);
    return 0;
}

int cmd_stop(int argc, char **argv) {
    cli_common c;
    client_options co = {0};
    const int status = cli_parse(&stop_command, &c, &co, argc, argv);
    if (status != CLI_CONTINUE) return status;
    if (c.n_args != 1) return cli_usage_error(&stop_command, "which model? (sprout stop NAME)");
    const char *address = cli_server_address(co.host);
    json_t *req = json_pack("{s:s, s:i, s:b}", "model", c.args[0], "keep_alive", 0, "stream", 0);
    char *body = req ? json_dumps(req, JSON_COMPACT) : NULL;
    json_decref(req);
    if (!body) return 1;
    cli_http_reply r;
    char error[512];
    const int rc = cli_http_request(address, "POST", "/api/generate", body, &r, error, sizeof error);
    free(body);
    if (rc != 0) {
        fprintf(stderr, "sprout stop: %s\n", error);
        return 1;
    }
    const bool ok = r.status == 200;
    if (!ok) fprintf(stderr, "sprout stop: %s\n", reply_error(&r, error, sizeof error));
    free(r.body);
    return ok ? 0 : 1;
}
