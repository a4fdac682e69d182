/* What the server's files share: the server state, the HTTP reply helpers,
 * and the per-API formats of generation responses. */
#ifndef SPROUT_SERVER_INTERNAL_H
#define SPROUT_SERVER_INTERNAL_H

#include <jansson.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "core/buf.h"
#include "server/api_request.h"
#include "server/reasoning.h"
#include "server/server.h"
#include "sprout.h"

/* --- models: entries of the registry (registry.c) -------------------------------------------------------------
 * The one `-m` names (loaded at start, never unloaded) or every model of the
 * store, each loaded on the first request that names it and unloaded after
 * its keep_alive, within --max-loaded and --max-memory. Requests hold a
 * reference while they run; an entry with references is never unloaded. */
typedef enum sp_entry_state { SP_ENTRY_LOADING, SP_ENTRY_LOADED } sp_entry_state;

typedef struct sp_model_entry {
    char name[256];                  /* as the APIs show it: "name:tag", or the -m file's name (or --alias) */
    char digest[80];                 /* hex, no "sha256:" */
    int64_t modified;                /* seconds since the epoch */
    uint64_t file_bytes;
    char *path;                      /* the GGUF */
    sprout_store_model *store_model; /* its Modelfile's settings; NULL for a -m file */
    bool pinned;                     /* the -m model: loaded at start, never unloaded */
    /* set by the loader before the state is LOADED, then read only */
    sprout_model *model, *draft;
    sprout_scheduler *sched;
    pthread_rwlock_t sched_lock;     /* readers use sched; shutdown frees it */
    int32_t n_ctx;                   /* each slot's */
    const char *chat_template;       /* the Modelfile's TEMPLATE, else --chat-template, else NULL (the GGUF's) */
    sprout_lora **loras;             /* ids 0..n_lora-1 */
    char **lora_paths;
    size_t n_lora;
    float *lora_scales;              /* the defaults of requests without "lora" (POST /lora-adapters sets them) */
    pthread_mutex_t lora_lock;       /* guards lora_scales */
    uint64_t mem_bytes;              /* the mapped file plus the KV cache's estimate */
    /* below: under the registry's lock */
    sp_entry_state state;
    int refs;                        /* requests using it */
    int64_t last_used_ms;            /* monotonic */
    int64_t expires_ms;              /* monotonic; SP_KEEP_FOREVER: never */
    int64_t expires_wall_ms;         /* the same moment on the wall clock, for /api/ps */
    bool failed;                     /* the load failed: waiters read `error` */
    char error[512];
} sp_model_entry;

typedef struct sp_request_stats sp_request_stats; /* metrics_vllm.c */
typedef struct sp_guard sp_guard;

typedef struct sp_server {
    sp_server_options opt;
    struct MHD_Daemon *daemon;
    sp_guard *guard;               /* deadlines, Host and Origin (guard.c) */
    atomic_bool ready, stopping;
    atomic_bool draining;          /* a signal came: new work gets 503, in-flight work ends (fleet.c) */
    sp_request_stats *request_stats; /* per model: tokens and latency histograms (metrics_vllm.c) */
    sprout_store *store;           /* the models by name; NULL when -m names a file */
    pthread_mutex_t store_lock;    /* one store call at a time */
    /* the models loaded or loading (registry.c) */
    pthread_mutex_t models_lock;
    pthread_cond_t models_changed; /* a load ended, a reference went, a model unloaded */
    sp_model_entry **entries;
    size_t n_entries, cap_entries;
    sp_model_entry *pinned;        /* the -m model, NULL without -m */
    atomic_ullong model_loads, model_unloads, model_load_failures;
    sprout_scheduler_stats retired; /* the counters of the models unloaded (under models_lock) */
    atomic_ullong http_requests, http_errors;
    atomic_ullong requests_cancelled; /* generations cut short because their client hung up (/metrics) */
    atomic_ullong draft_tokens, draft_accepted; /* assisted generation's proposals and those kept (/metrics) */
    atomic_int active_jobs;
    atomic_ullong seed_counter;
} sp_server;

/* --- replies ------------------------------------------------------------------------------------------- */

/* Which error shape a URL's clients expect. */
typedef enum sp_api_style { SP_STYLE_OPENAI, SP_STYLE_OLLAMA } sp_api_style;
sp_api_style sp_style_of(const char *url);

/* The headers every reply carries: CORS for an allowed origin, the server's
 * name, the replica's. Streamed replies add them as the others do. */
void sp_add_common_headers(const sp_server *srv, struct MHD_Connection *c, struct MHD_Response *r);
/* Sends v (consumed) as the body with `status`. */
enum MHD_Result sp_reply_json(sp_server *srv, struct MHD_Connection *c, unsigned status, json_t *v);
enum MHD_Result sp_reply_text(sp_server *srv, struct MHD_Connection *c, unsigned status, const char *type, const char *text);
/* An error in the style the URL's API uses; `param` names the field (may be NULL). */
enum MHD_Result sp_reply_error(sp_server *srv, struct MHD_Connection *c, sp_api_style style, unsigned status, const char *param,
                               const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* The field a parser's error names (the text before its first ':', as in
 * "messages[1].content: expected a string"), or "" (invalid JSON). */
void sp_error_param(const char *error, char *param, size_t cap);

/* A request body that must be a JSON object; NULL after replying 400. */
json_t *sp_parse_object(sp_server *srv, struct MHD_Connection *c, sp_api_style style, const char *body, size_t len,
                        enum MHD_Result *res);

/* The client's socket (-1 if unknown), and whether the client closed its
 * end (or the socket failed): long waits poll it to cancel their work. */
int sp_connection_fd(struct MHD_Connection *c);
bool sp_client_gone(int fd);
/* Waits on cond (mu held) for 100 ms at most: long waits wake to poll the client. */
void sp_wait_a_while(pthread_cond_t *cond, pthread_mutex_t *mu);

/* The JSON value of an error, for replies and for stream events. */
json_t *sp_error_json(sp_api_style style, unsigned status, const char *param, const char *message);


/* --- generation ------------------------------------------------------------------------------------------ */

/* Appends v (consumed) as compact JSON between prefix and suffix. */
bool sp_buf_json(sp_buf *b, const char *prefix, json_t *v, const char *suffix);
/* json_string_lossy for an answer's text: a failure is noted (sp_oom_take),
 * since jansson's packers take its NULL quietly. */
json_t *sp_json_text(const char *s, size_t n);

typedef struct sp_job sp_job;

/* A generated token with its log-probability and best alternatives. */
enum { SP_MAX_TOP_LOGPROBS = 20 };
typedef struct sp_token_lp {
    sprout_token id;
    float logprob;
    int n_top;
    sprout_token top_ids[SP_MAX_TOP_LOGPROBS];
    float top_logprobs[SP_MAX_TOP_LOGPROBS];
} sp_token_lp;

/* How one API words a generation. */
typedef struct sp_api_format {
    const char *stream_type; /* Content-Type of a streamed response */
    /* streamed text */
    void (*piece)(sp_job *job, const char *text, size_t len, sp_buf *out);
    /* the end of a stream: st is the generation's status, r its result (NULL on error) */
    void (*stream_end)(sp_job *job, sprout_status st, const sprout_result *r, sp_buf *out);
    /* the whole response of a request that does not stream */
    json_t *(*response)(sp_job *job, const sprout_result *r);
} sp_api_format;

struct sp_job {
    sp_server *srv;
    sp_model_entry *model; /* held (a reference) until the job is freed */
    int64_t keep_alive_ms; /* the request's keep_alive, or SP_KEEP_DEFAULT */
    const sp_api_format *fmt;
    sp_api_request req;
    sprout_lora_use *lora; /* req.cfg.lora points here */
    char id[48];
    int64_t created;       /* seconds since the epoch */
    sprout_token *prompt;
    size_t n_prompt;
    bool role_sent;        /* OpenAI chat streams open with the role */
    char error[256];       /* why the prompt could not be built, when the library did not say */
    /* below: shared with the engine thread, under mu */
    pthread_mutex_t mu;
    pthread_cond_t cond;
    sp_buf out;
    size_t out_sent;
    sp_token_lp *pending;  /* streamed tokens whose log-probabilities await a chunk */
    size_t n_pending, cap_pending;
    size_t text_offset;    /* completions: where the next token's text starts */
    sp_buf reply;          /* chat with tools: the streamed answer so far */
    size_t reply_sent;     /* how much of it went out as text (the rest may be a tool call) */
    bool split_reasoning;  /* the reasoning goes apart from the answer */
    bool reasoning_opened; /* the prompt opened a <think> block */
    sp_reasoning reasoning;
    sp_buf answer;         /* scratch: a streamed piece's answer part */
    bool engine_done, final_written;
    bool output_lost;      /* a chunk could not be written (out of memory): the stream is cut there */
    sprout_request *sreq;
    int fd;                /* the client's socket, to notice a hang-up */
    bool client_left;      /* it hung up mid-generation (counted once) */
    double t_arrival_ms, t_submit_ms; /* monotonic: the request came, went to the scheduler (latency metrics) */
};

/* A generation request of any of the four kinds. */
enum MHD_Result sp_handle_generation(sp_server *srv, struct MHD_Connection *c, sp_api_kind kind, const char *url, const char *body,
                                     size_t len);

/* The four formats (openai.c, ollama.c). */
extern const sp_api_format sp_openai_chat_format, sp_openai_completion_format, sp_ollama_chat_format, sp_ollama_generate_format;

/* Embedding requests (embeddings.c): OpenAI's /v1/embeddings, Ollama's
 * /api/embed and /api/embeddings. */
enum MHD_Result sp_handle_openai_embeddings(sp_server *srv, struct MHD_Connection *c, const char *url, const char *body, size_t len);
enum MHD_Result sp_handle_ollama_embed(sp_server *srv, struct MHD_Connection *c, const char *url, const char *body, size_t len);
enum MHD_Result sp_handle_ollama_embeddings(sp_server *srv, struct MHD_Connection *c, const char *url, const char *body, size_t len);

/* Ollama's answer to a request without a prompt: the model is loaded
 * (done_reason "load"), or unloaded ("unload"). */
json_t *sp_ollama_loaded(const char *model, sp_api_kind kind, const char *reason);

/* A time in RFC 3339 with nanoseconds, as Ollama writes times. */
json_t *sp_rfc3339(int64_t seconds, long nanos);

/* A line for the operator, through options.notice: the server prints nothing itself. */
void sp_notice(const sp_server *srv, sprout_log_level level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* --- the network's guards (guard.c) ------------------------------------------------------------------------- */

/* Starts the deadline reaper and reads the allowed hosts and origins; false after an ERROR notice. */
bool sp_guard_start(sp_server *srv);
void sp_guard_stop(sp_server *srv);
/* libmicrohttpd's MHD_OPTION_NOTIFY_CONNECTION (cls: the server): a new
 * connection has header_timeout_s for its first request's headers. */
void sp_guard_on_connection(void *cls, struct MHD_Connection *c, void **socket_context, enum MHD_ConnectionNotificationCode code);
/* The request's phases: headers in (the body's deadline; none for a body
 * streamed to a sink), answering (no deadline, no idle timeout), done (the
 * next request of a kept-alive connection has the idle time to come). */
void sp_guard_reading_body(sp_server *srv, struct MHD_Connection *c, bool streamed);
void sp_guard_answering(sp_server *srv, struct MHD_Connection *c);
void sp_guard_request_done(sp_server *srv, struct MHD_Connection *c);
/* 403 (why says it) for a Host or Origin not allowed, else 0. */
unsigned sp_guard_check(sp_server *srv, struct MHD_Connection *c, char *why, size_t cap);
/* The CORS headers of a reply: the request's Origin echoed when allowed. */
void sp_guard_cors(const sp_server *srv, struct MHD_Connection *c, struct MHD_Response *r);
/* The answer to a CORS preflight (OPTIONS). */
enum MHD_Result sp_guard_preflight(sp_server *srv, struct MHD_Connection *c);
/* Whether the request carries --api-key (always, without one). */
bool sp_guard_authorized(const sp_server *srv, struct MHD_Connection *c);
/* Connections cut by a deadline, requests refused for Host or Origin (/metrics). */
unsigned long long sp_guard_timeouts(const sp_server *srv);
unsigned long long sp_guard_refused(const sp_server *srv);
/* Pure parts, for the unit test: the key compared in time that depends
 * on its length only; '*' wildcards (case-insensitive); a Host header
 * against loopback and a list; an Origin against the Host, Ollama's
 * defaults and a list. */
bool sp_secret_equal(const char *secret, const char *given);
bool sp_wildcard_match(const char *pattern, const char *text);
bool sp_host_allowed(const char *host, const char *const *allowed, size_t n_allowed);
bool sp_origin_allowed(const char *origin, const char *host, const char *const *allowed, size_t n_allowed);

/* --- models (registry.c) ----------------------------------------------------------------------------------- */

/* Opens the store, or loads the -m model; false after an ERROR notice. */
bool sp_models_start(sp_server *srv);
/* Shutdown: every scheduler freed (what runs ends "cancelled"), then, once
 * no request holds a model, everything. */
void sp_models_stop(sp_server *srv);
void sp_models_free(sp_server *srv);
/* The model a request names (NULL or "": the -m model), loaded if need be
 * and held; NULL after replying (404 naming the models there are, 503 when
 * it cannot load in --load-timeout, 500 when it fails to load). */
sp_model_entry *sp_models_acquire(sp_server *srv, struct MHD_Connection *c, sp_api_style style, const char *name, enum MHD_Result *res);
/* Lets go of a model; keep_alive_ms (or SP_KEEP_DEFAULT) sets when it unloads. */
void sp_models_release(sp_server *srv, sp_model_entry *e, int64_t keep_alive_ms);
/* keep_alive 0 for a model that may not be loaded: unloads it once idle
 * (now, when nobody uses it). False when no model has the name. */
bool sp_models_unload(sp_server *srv, const char *name);
/* Unloads the models whose keep_alive has passed. */
void sp_models_reap(sp_server *srv);
/* Calls fn for every loaded model, under the registry's lock. */
void sp_models_each_loaded(sp_server *srv, void (*fn)(sp_model_entry *e, void *user), void *user);
/* Adds the counters (not the gauges: slots, queue) of one scheduler's stats to another's. */
void sp_stats_add(sprout_scheduler_stats *to, const sprout_scheduler_stats *from);
/* The names a 404 lists: "a:latest", "b:latest" (at most `cap` bytes). */
void sp_models_names(sp_server *srv, char *out, size_t cap);
/* Whether a request's name means the entry (the -m model's file name,
 * alias, with ":latest" or ".gguf"; a store name as Ollama parses it). */
bool sp_model_name_matches(const sp_model_entry *e, const char *name);
/* A body's "keep_alive" (Ollama's: "5m", "30s", "1h30m", a number of
 * seconds; negative keeps forever): SP_KEEP_DEFAULT when absent. */
bool sp_keep_alive_parse(const char *body, size_t len, int64_t *ms, char *error, size_t error_size);

/* --- a replica in a fleet (fleet.c) ----------------------------------------------------------------------------
 * Every response names the replica that served it (X-Sprout-Replica) and,
 * for a generation answered in one piece, the prompt tokens its KV cache
 * held (X-Sprout-Cached-Tokens); while draining, every response also says
 * Retry-After and Connection: close, so that a balancer sends the client
 * elsewhere and drops its kept-alive connections to this replica. */

/* The replica's name (--replica-id, else HOST:PORT with the machine's name). */
void sp_fleet_start(sp_server *srv, int port);
/* Adds the headers above to a response about to be queued. */
void sp_fleet_headers(struct MHD_Response *r);
/* The cached prompt tokens of the reply this thread sends next (one response per connection thread at a time). */
void sp_fleet_note_cached(int64_t tokens);
/* Whether a request for `path` is turned away (503): draining, and not an
 * endpoint that monitoring reads (/metrics). */
bool sp_fleet_refuses(const sp_server *srv, const char *path);
/* After the stop signal: refuse new work, wait for the generations in
 * flight to end, at most --drain-timeout or until `signals` comes again. */
void sp_fleet_drain(sp_server *srv, const sigset_t *signals);
/* GET /health/live: 200 while the process serves HTTP, loading and draining too. */
enum MHD_Result sp_handle_health_live(sp_server *, struct MHD_Connection *, const char *, const char *, size_t);
/* A monotonic clock in milliseconds, for latencies. */
double sp_fleet_now_ms(void);
/* A LoRA adapter named in a request's "model" (the adapter's own name, its
 * file's stem, or "MODEL:ADAPTER"): which model it belongs to (`base`, the
 * name to acquire) and its id; false when `name` names no adapter (a model
 * name then). Only the -m model's adapters have names. */
bool sp_fleet_adapter_of(const sp_server *srv, const char *name, char *base, size_t cap, int32_t *adapter);
/* The name an adapter answers to: its file's name without folder and ".gguf". */
void sp_fleet_adapter_name(const char *path, char *out, size_t cap);

/* --- vLLM's metrics (metrics_vllm.c) ------------------------------------------------------------------------- */

bool sp_request_stats_init(sp_server *srv);
void sp_request_stats_free(sp_server *srv);
/* A generation that ended: its tokens, adapters and latencies (r NULL: it failed, nothing counted). */
void sp_request_stats_observe(sp_job *j, const sprout_result *r);
/* The vllm:* families of the inference gateway's model-server protocol. */
void sp_metrics_vllm(sp_server *srv, sp_buf *b);
/* A Prometheus label value: backslash, quote and newline escaped. */
void sp_put_label(sp_buf *b, const char *s);

/* --- LoRA adapters (ops.c) ------------------------------------------------------------------------------- */

/* A request's adapter set: its own list (listed ids at their scales, the
 * rest left out, as llama.cpp's server does) or, when it gave none, the
 * server's defaults at this moment; adapters at scale 0 are left out.
 * `uses` holds e->n_lora entries. False (error naming the field) when an
 * id names no adapter. */
bool sp_lora_uses(sp_model_entry *e, const sp_api_lora *list, const char *field, sprout_lora_use *uses, size_t *n, char *error,
                  size_t error_size);
/* [{"id", "path", "scale"}, ...] with the current default scales; `extra`
 * adds llama.cpp's task_name and prompt_prefix (empty: sprout reads none). */
json_t *sp_lora_json(sp_model_entry *e, bool extra);

/* --- endpoints ------------------------------------------------------------------------------------------ */

typedef enum MHD_Result (*sp_handler)(sp_server *srv, struct MHD_Connection *c, const char *url, const char *body, size_t len);
/* A route that takes its body as it comes (blob uploads of gigabytes)
 * instead of holding it: open when the headers are in (NULL: out of
 * memory), write each piece, close to reply (frees the state), abort when
 * the client leaves first. */
typedef struct sp_body_sink {
    void *(*open)(sp_server *srv, const char *url);
    void (*write)(void *state, const char *data, size_t len);
    enum MHD_Result (*close)(sp_server *srv, struct MHD_Connection *c, const char *url, void *state);
    void (*abort)(void *state);
} sp_body_sink;
extern const sp_body_sink sp_blob_upload;
/* POST /api/blobs/<digest> with the body held: the sink in one go. */
enum MHD_Result sp_handle_blob_upload(sp_server *, struct MHD_Connection *, const char *, const char *, size_t);
enum MHD_Result sp_handle_ollama_create(sp_server *, struct MHD_Connection *, const char *, const char *, size_t);
enum MHD_Result sp_handle_ollama_copy(sp_server *, struct MHD_Connection *, const char *, const char *, size_t);
enum MHD_Result sp_handle_ollama_delete(sp_server *, struct MHD_Connection *, const char *, const char *, size_t);
enum MHD_Result sp_handle_blob_head(sp_server *, struct MHD_Connection *, const char *, const char *, size_t);
enum MHD_Result sp_handle_openai_models(sp_server *, struct MHD_Connection *, const char *, const char *, size_t);
enum MHD_Result sp_handle_openai_model(sp_server *, struct MHD_Connection *, const char *, const char *, size_t);
enum MHD_Result sp_handle_ollama_tags(sp_server *, struct MHD_Connection *, const char *, const char *, size_t);
enum MHD_Result sp_handle_ollama_ps(sp_server *, struct MHD_Connection *, const char *, const char *, size_t);
enum MHD_Result sp_handle_ollama_show(sp_server *, struct MHD_Connection *, const char *, const char *, size_t);
enum MHD_Result sp_handle_ollama_pull(sp_server *, struct MHD_Connection *, const char *, const char *, size_t);
enum MHD_Result sp_handle_ollama_version(sp_server *, struct MHD_Connection *, const char *, const char *, size_t);
enum MHD_Result sp_handle_health(sp_server *, struct MHD_Connection *, const char *, const char *, size_t);
enum MHD_Result sp_handle_metrics(sp_server *, struct MHD_Connection *, const char *, const char *, size_t);
enum MHD_Result sp_handle_tokenize(sp_server *, struct MHD_Connection *, const char *, const char *, size_t);
enum MHD_Result sp_handle_detokenize(sp_server *, struct MHD_Connection *, const char *, const char *, size_t);
enum MHD_Result sp_handle_lora_list(sp_server *, struct MHD_Connection *, const char *, const char *, size_t);
enum MHD_Result sp_handle_lora_set(sp_server *, struct MHD_Connection *, const char *, const char *, size_t);

#endif
