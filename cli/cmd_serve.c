/* sprout serve: an OpenAI- and Ollama-compatible HTTP server over the library's
 * continuous-batching scheduler. SIGINT/SIGTERM stop it cleanly (exit 0). */
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "commands.h"
#include "files.h"
#include "options.h"
#include "server/server.h"

typedef struct serve_options {
    const char *host, *api_key, *alias, *chat_template, *chat_template_file, *webui_path;
    const char *keep_alive, *max_memory, *load_timeout, *drain_timeout, *replica_id;
    const char *allowed_hosts, *allowed_origins, *tls_cert, *tls_key;
    int32_t port, n_slots, max_body, n_queue, max_loaded;
    int32_t idle_timeout, header_timeout, body_timeout, max_connections, max_connections_per_ip;
    bool lora_init_without_apply, no_webui, context_shift;
} serve_options;

#define OWN(field) offsetof(serve_options, field)
static const cli_option serve_table[] = {
    CLI_OPT_STRING("--host", "ADDR", OWN(host), "address to listen on (default 127.0.0.1)"),
    CLI_OPT_INT("--port", "N", OWN(port), 0, 65535, "port (default 8080; 0 picks a free one)"),
    CLI_OPT_INT("-np, --parallel", "N", OWN(n_slots), 1, 256, "requests generating at once (default: from the cores and the context)"),
    CLI_OPT_STRING("--api-key", "KEY", OWN(api_key), "require 'Authorization: Bearer KEY' (also $SPROUT_API_KEY)"),
    CLI_OPT_STRING("--alias", "NAME", OWN(alias), "the model's name in the APIs (default: the file name)"),
    CLI_OPT_INT("--max-body", "BYTES", OWN(max_body), 1, INT32_MAX, "largest request body (default 16777216)"),
    CLI_OPT_INT("--queue", "N", OWN(n_queue), 0, 1 << 20, "requests that may wait for a slot before 503 (default 64)"),
    CLI_OPT_STRING("--chat-template", "T", OWN(chat_template),
     "a built-in template (chatml llama2 llama3 zephyr phi3 gemma mistral) or Jinja source (default: the model's)"),
    CLI_OPT_STRING("--chat-template-file", "FILE", OWN(chat_template_file), "the chat template from a file"),
    CLI_OPT_FLAG("--lora-init-without-apply", OWN(lora_init_without_apply),
                 "load the adapters at scale 0 (POST /lora-adapters or a request's \"lora\" applies them)"),
    CLI_OPT_FLAG("--no-webui", OWN(no_webui), "no web chat page at / (the APIs only)"),
    CLI_OPT_FLAG("--context-shift", OWN(context_shift),
                 "a generation that fills its context drops half of it after the first num_keep tokens (Ollama's option; "
                 "default 0) and goes on, as llama-server's --context-shift; off: it ends with finish \"length\""),
    CLI_OPT_STRING("--webui-path", "DIR", OWN(webui_path), "serve the web page's files from DIR instead of the built-in ones"),
    CLI_OPT_STRING("--keep-alive", "DURATION", OWN(keep_alive),
                   "how long a model stays loaded after its last request: 5m, 30s, 1h, seconds; negative: forever (default 5m, $SPROUT_KEEP_ALIVE)"),
    CLI_OPT_INT("--max-loaded", "N", OWN(max_loaded), 1, 1024, "models loaded at once (default 3, $SPROUT_MAX_LOADED)"),
    CLI_OPT_STRING("--max-memory", "SIZE", OWN(max_memory),
                   "memory of the models loaded at once: files plus KV caches, 512M, 8G (default: no limit, $SPROUT_MAX_MEMORY)"),
    CLI_OPT_STRING("--load-timeout", "DURATION", OWN(load_timeout),
                   "how long a request waits for room to load its model before 503 (default 5m, $SPROUT_LOAD_TIMEOUT)"),
    CLI_OPT_STRING("--drain-timeout", "DURATION", OWN(drain_timeout),
                   "on SIGTERM/SIGINT: new requests get 503 while those in flight finish, for at most this long (default 30s; 0: none)"),
    CLI_OPT_STRING("--replica-id", "NAME", OWN(replica_id), "this replica's name in every response's X-Sprout-Replica (default HOST:PORT)"),
    CLI_OPT_INT("--timeout", "SECONDS", OWN(idle_timeout), 1, 86400, "close a connection idle this long between requests (default 60)"),
    CLI_OPT_INT("--header-timeout", "SECONDS", OWN(header_timeout), 1, 86400,
                "a request's headers must arrive within this (default 10; slowloris)"),
    CLI_OPT_INT("--body-timeout", "SECONDS", OWN(body_timeout), 1, 86400,
                "a request's body must arrive within this after its headers (default 60; blob uploads excepted)"),
    CLI_OPT_INT("--max-connections", "N", OWN(max_connections), 1, 65536, "connections at once, further ones refused (default 512)"),
    CLI_OPT_INT("--max-connections-per-ip", "N", OWN(max_connections_per_ip), 1, 65536, "connections at once from one address (default: no limit)"),
    CLI_OPT_STRING("--allowed-hosts", "LIST", OWN(allowed_hosts),
                   "Host names accepted besides localhost, comma-separated, * wildcards (a loopback server refuses others: DNS rebinding)"),
    CLI_OPT_STRING("--allowed-origins", "LIST", OWN(allowed_origins),
                   "browser origins accepted besides the page's own and localhost's, comma-separated, * wildcards ($SPROUT_ORIGINS)"),
    CLI_OPT_STRING("--tls-cert", "FILE", OWN(tls_cert), "serve HTTPS with this PEM certificate (chain), with --tls-key"),
    CLI_OPT_STRING("--tls-key", "FILE", OWN(tls_key), "the PEM private key of --tls-cert"),
};

static const cli_command serve_command = {
    .name = "serve",
    .usage = "serve [-m MODEL.gguf|NAME] [options]",
    .about = "The OpenAI and Ollama HTTP APIs; -c is the context of each request. Without -m every model of the store\n"
             "($SPROUT_MODELS, and Ollama's) is served, each loaded by the first request that names it and unloaded after\n"
             "its keep_alive; with -m that one model, kept loaded. The listening and ready lines are\n"
             "said on stderr unless --log-disable. LoRA adapters (--lora) get ids 0, 1, ... in the order given; their\n"
             "scales are the defaults of requests without \"lora\" (GET/POST /lora-adapters). With --model-draft or\n"
             "--lookup every request speculates (output unchanged); a request's \"speculative.n_max\": 0 opts out.\n",
    .shared = CLI_SHARED_MODEL | CLI_SHARED_THREADS | CLI_SHARED_CTX | CLI_SHARED_BATCH | CLI_SHARED_KV | CLI_SHARED_LORA | CLI_SHARED_ASSIST | CLI_SHARED_STRUCTURED,
    CLI_TABLE(serve_table),
};

/* The server's notices (ERROR, WARN, INFO): what a user of `serve` waits for (the port, "ready") is the command's
 * output, so all show at the default level; --log-disable silences all but the errors that end the server. */
static void on_notice(sprout_log_level level, const char *message, void *user) {
    const cli_common *c = user;
    if (level == SPROUT_LOG_ERROR || !c->log_disable)
        fprintf(stderr, "sprout serve: %s%s\n", level == SPROUT_LOG_WARN ? "warning: " : "", message);
}

/* The options of models loaded on demand (a flag, else its environment variable); false after saying which is bad. */
static bool on_demand_options(const serve_options *so, sp_server_options *o) {
    const char *keep = so->keep_alive ? so->keep_alive : getenv("SPROUT_KEEP_ALIVE");
    const char *memory = so->max_memory ? so->max_memory : getenv("SPROUT_MAX_MEMORY");
    const char *timeout = so->load_timeout ? so->load_timeout : getenv("SPROUT_LOAD_TIMEOUT");
    const char *loaded = getenv("SPROUT_MAX_LOADED");
    o->keep_alive_ms = SP_KEEP_DEFAULT;
    if (keep && *keep && !sp_parse_duration(keep, &o->keep_alive_ms)) {
        fprintf(stderr, "sprout serve: --keep-alive %s: expected a duration (5m, 30s, 1h) or seconds\n", keep);
        return false;
    }
    if (memory && *memory && !sp_parse_size(memory, &o->max_memory)) {
        fprintf(stderr, "sprout serve: --max-memory %s: expected a size (512M, 8G) or bytes\n", memory);
        return false;
    }
    if (timeout && *timeout && (!sp_parse_duration(timeout, &o->load_timeout_ms) || o->load_timeout_ms < 0)) {
        fprintf(stderr, "sprout serve: --load-timeout %s: expected a duration (5m, 30s)\n", timeout);
        return false;
    }
    if (so->drain_timeout && (!sp_parse_duration(so->drain_timeout, &o->drain_timeout_ms) || o->drain_timeout_ms < 0)) {
        fprintf(stderr, "sprout serve: --drain-timeout %s: expected a duration (30s, 2m) or seconds\n", so->drain_timeout);
        return false;
    }
    if (so->drain_timeout && o->drain_timeout_ms == 0) o->drain_timeout_ms = -1; /* 0 given: no drain; the field's 0 is the default */
    o->replica_id = so->replica_id;
    o->max_loaded = so->max_loaded ? so->max_loaded : loaded ? atoi(loaded) : 0;
    if (o->max_loaded < 0) {
        fprintf(stderr, "sprout serve: $SPROUT_MAX_LOADED %s: expected a count\n", loaded);
        return false;
    }
    return true;
}

int cmd_serve(int argc, char **argv) {
    cli_common c;
    serve_options so = {.host = "127.0.0.1", .port = 8080, .api_key = getenv("SPROUT_API_KEY"), .n_queue = -1 /* not given */};
    const int status = cli_parse(&serve_command, &c, &so, argc, argv);
    if (status != CLI_CONTINUE) return status;
    struct stat st;
    if (so.webui_path && (stat(so.webui_path, &st) || !S_ISDIR(st.st_mode))) {
        fprintf(stderr, "sprout serve: --webui-path %s is not a folder\n", so.webui_path);
        return 2;
    }
    char *tls_text[2] = {NULL, NULL};
    const char *tls_files[2] = {so.tls_cert, so.tls_key};
    for (int i = 0; i < 2; i++)
        if (tls_files[i] && !(tls_text[i] = cli_read_file(tls_files[i], NULL))) {
            fprintf(stderr, "sprout serve: cannot read %s\n", tls_files[i]);
            free(tls_text[0]);
            return 2;
        }
    char *template_text = NULL;
    if (so.chat_template_file) {
        if (!(template_text = cli_read_file(so.chat_template_file, NULL))) {
            fprintf(stderr, "sprout serve: cannot read %s\n", so.chat_template_file);
            free(tls_text[0]);
            free(tls_text[1]);
            return 2;
        }
        so.chat_template = template_text;
    }
    sp_server_options o = {
        .model_path = c.model, .host = so.host, .port = so.port, .n_slots = so.n_slots, .n_ctx = c.n_ctx, .n_batch = c.n_batch,
        .n_threads = c.n_threads, .kv_type = c.kv_type, .kv_type_set = c.kv_type_set, CLI_KV_SIDES(&c), .n_queue = so.n_queue < 0 ? 0 : so.n_queue ? so.n_queue : -1,
        .api_key = so.api_key, .alias = so.alias, .max_body = (size_t)so.max_body, .chat_template = so.chat_template,
        .lora_paths = c.loras.path, .lora_scales = c.loras.scale, .n_lora = c.loras.n, .lora_init_without_apply = so.lora_init_without_apply,
        .draft_path = c.draft_path, .lookup = c.cfg.prompt_lookup, .assist_max = c.cfg.num_assistant_tokens,
        .assist_min = c.cfg.min_assistant_tokens, .lookup_ngram = c.cfg.max_ngram_size, .draft_p_min = c.cfg.assistant_confidence_threshold,
        .grammar = c.cfg.grammar && *c.cfg.grammar ? c.cfg.grammar : NULL,
        .json_schema = c.cfg.json_schema && *c.cfg.json_schema ? c.cfg.json_schema : NULL,
        .no_webui = so.no_webui, .context_shift = so.context_shift, .webui_path = so.webui_path, .notice = on_notice, .notice_user = &c,
        .idle_timeout_s = so.idle_timeout, .header_timeout_s = so.header_timeout, .body_timeout_s = so.body_timeout,
        .max_connections = so.max_connections, .max_connections_per_ip = so.max_connections_per_ip,
        .allowed_hosts = so.allowed_hosts, .allowed_origins = so.allowed_origins ? so.allowed_origins : getenv("SPROUT_ORIGINS"),
        .tls_cert = tls_text[0], .tls_key = tls_text[1],
    };
    o.store_root = c.models_dir;
    if (c.stored) { /* -m NAME: the server serves it by its name, with its Modelfile (adapters included) */
        const size_t own = sprout_store_model_n_adapters(c.stored);
        o.model_path = sprout_store_model_name(c.stored);
        o.lora_paths += own;
        o.lora_scales += own;
        o.n_lora -= own;
    }
    if (!on_demand_options(&so, &o)) {
        free(template_text);
        free(tls_text[0]);
        free(tls_text[1]);
        return 2;
    }
    /* the signals go to sigwait in this thread only: block them before any
     * other thread starts, so every thread inherits the mask */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN); /* a client that hangs up is an error return, not a death */
    const int rc = sp_server_run(&o, &stop);
    free(template_text);
    free(tls_text[0]);
    free(tls_text[1]);
    free(c.structured_texts[0]);
    free(c.structured_texts[1]);
    return rc;
}
