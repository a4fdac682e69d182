/* `sprout serve`: HTTP (libmicrohttpd) mapped onto the library's
 * scheduler, speaking the OpenAI and Ollama APIs. */
#ifndef SPROUT_SERVER_H
#define SPROUT_SERVER_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sprout.h"

/* keep_alive as a request or --keep-alive gives it: milliseconds; "not
 * given" uses the server's default, a negative one keeps the model. */
#define SP_KEEP_DEFAULT INT64_MIN
#define SP_KEEP_FOREVER INT64_MAX

/* The network's defaults (seconds, connections): see sp_server_options. */
#define SP_DEFAULT_HEADER_TIMEOUT_S 10
#define SP_DEFAULT_BODY_TIMEOUT_S 60
#define SP_DEFAULT_IDLE_TIMEOUT_S 60
#define SP_DEFAULT_MAX_CONNECTIONS 512

typedef struct sp_server_options {
    /* a GGUF file or a store name, served alone and kept loaded; NULL: every
     * model of the store, each loaded when a request names it */
    const char *model_path;
    /* Models loaded on demand: how long one stays after its last request
     * (ms; SP_KEEP_DEFAULT: 5 minutes, < 0: forever), how many may be
     * loaded at once (0: 3), their memory (mapped files plus KV caches'
     * estimates, bytes; 0: no limit), and how long a request waits for
     * room before 503 (ms; 0: 5 minutes). */
    const char *store_root; /* the store's folder; NULL: $SPROUT_MODELS or its default */
    int64_t keep_alive_ms;
    int32_t max_loaded;
    uint64_t max_memory;
    int64_t load_timeout_ms;
    const char *host;     /* address to bind; default 127.0.0.1 */
    int port;             /* default 8080; 0: any free port (printed) */
    int32_t n_slots;      /* 0: the scheduler's default */
    int32_t n_ctx;        /* per slot; 0: the model's default */
    int32_t n_batch;      /* tokens per forward pass; 0: the scheduler's default */
    int32_t n_threads;    /* 0: all cores */
    sprout_kv_type kv_type; /* used when kv_type_set; else F16 */
    bool kv_type_set;
    sprout_kv_type cache_type_k, cache_type_v; /* one side's, over kv_type, when its _set */
    bool cache_type_k_set, cache_type_v_set;
    int32_t n_queue;      /* 0: the scheduler's default */
    const char *api_key;  /* NULL: no authentication */
    const char *alias;    /* the model's name in the APIs; NULL: the file's */
    size_t max_body;      /* bytes; 0: 16 MiB */
    const char *chat_template; /* a built-in name or Jinja source; NULL: the model's */
    /* LoRA adapters (GGUF) loaded against the model once it loads, ids
     * 0..n_lora-1 in this order; each scale is its default (requests
     * without "lora"), 0 for all with lora_init_without_apply. The strings
     * must outlive sp_server_run. */
    const char *const *lora_paths;
    const float *lora_scales;
    size_t n_lora;
    bool lora_init_without_apply;
    /* Assisted generation for every request, output unchanged (a request's
     * "speculative.n_max", ".n_min", ".p_min" override; n_max 0 opts out):
     * a draft model's file (NULL: none; loaded with the model, its
     * vocabulary checked) or prompt lookup (`lookup`, n-grams of up to
     * lookup_ngram tokens, 0: 3); up to assist_max tokens proposed a pass
     * (0: none, the server decodes plainly), fewer than assist_min not
     * checked, and the draft stops below probability draft_p_min. */
    const char *draft_path;
    bool lookup;
    int32_t assist_max, assist_min, lookup_ngram;
    float draft_p_min;
    /* Structured output for every request that brings none of its own
     * (grammar, json_schema, response_format, format), as llama-server's
     * --grammar and --json-schema: GBNF text, or a JSON schema's text; at
     * most one. Checked once the model has loaded: a bad one stops the
     * server (ERROR notice, exit 1). NULL: none. */
    const char *grammar;
    const char *json_schema;
    /* The web chat page at / (browsers) and /webui/: off with no_webui;
     * webui_path serves a folder's files instead of the built-in copies. */
    bool no_webui;
    /* every generation shifts its context when full (llama-server's
     * --context-shift; requests cannot ask, Ollama's num_keep sets what
     * stays) */
    bool context_shift;
    const char *webui_path;
    /* In a fleet: the name every response's X-Sprout-Replica gives (NULL:
     * HOST:PORT with the machine's name), and how long the stop signal
     * lets the generations in flight run on while new ones get 503 (ms;
     * 0: 30 s; < 0: not at all). */
    const char *replica_id;
    int64_t drain_timeout_ms;
    /* The network (guard.c). Timeouts in seconds, 0: the default below:
     * the headers of a new connection's request must be in within
     * header_timeout_s, its body within body_timeout_s after them (blob
     * uploads excepted), a connection idle between requests closes after
     * idle_timeout_s; an answer being made or written has none. At most
     * max_connections at once (0: 512), max_connections_per_ip from one
     * address (0: no limit). Bound to loopback, a request's Host must name
     * loopback or an allowed_hosts entry (comma-separated, '*' wildcards;
     * given, it is checked on any address); a browser's Origin must be the
     * page's own, Ollama's local defaults or an allowed_origins entry. TLS
     * with tls_cert and tls_key (PEM text, both or neither). */
    int32_t header_timeout_s, body_timeout_s, idle_timeout_s;
    int32_t max_connections, max_connections_per_ip;
    const char *allowed_hosts, *allowed_origins;
    const char *tls_cert, *tls_key;
    /* What the server has to tell its operator: where it listens, that the
     * model is ready, that a signal stops it (INFO), why it cannot start
     * (ERROR), and the HTTP library's complaints (WARN). The server prints
     * nothing itself; NULL says it to nobody. Called from the serving
     * thread, and for WARN from the HTTP library's threads too. */
    sprout_log_fn notice;
    void *notice_user;
} sp_server_options;

/* Durations as Ollama writes them ("5m", "30s", "1h30m", "250ms", a bare
 * number of seconds, negative for "forever"), in milliseconds; and sizes
 * ("2G", "512M", "1.5GiB", bytes). False when the text is neither. */
bool sp_parse_duration(const char *text, int64_t *ms);
bool sp_parse_size(const char *text, uint64_t *bytes);

/* Listens, loads the model (GET /health says 503 meanwhile), serves until
 * one of `signals` (blocked in every thread by the caller) arrives, then
 * drains (new work 503, /health 503, in-flight requests end within
 * drain_timeout_ms; the signal again cuts it short), stops, and returns
 * the process exit status (0 after a signal). */
int sp_server_run(const sp_server_options *options, const sigset_t *signals);

#endif
