/* sprout/scheduler.h: many concurrent generations over one model.
 * Part of <sprout.h>, whose conventions hold here. */
#ifndef SPROUT_API_SCHEDULER_H
#define SPROUT_API_SCHEDULER_H

#include "generate.h"

SPROUT_BEGIN_DECLS

/* ---------------------------------------------------------------------------
 * Scheduler: many concurrent generations over one model
 *
 * A scheduler owns N slots (sequences in one shared KV cache) and one engine
 * thread. Any thread may submit a request (prompt tokens, its own config,
 * streamer and completion callback); the engine thread steps all active
 * requests in one batched forward pass per step: one token for each request
 * that is generating, plus a bounded chunk of prompt for requests still
 * prefilling (beside generating requests, only as many prompt tokens as
 * cost about one decode step: prefill_budget), so a long prompt never
 * stalls the others. Requests beyond the
 * slots wait in a bounded queue; beyond it, submit fails with SPROUT_ERR_BUSY.
 * A request whose prompt starts with tokens a free slot still caches reuses
 * them: all of them, or, where a CPU computes prompt and generated tokens
 * apart (sprout_generate; here by the length of the whole prompt), only
 * those computed the way the new request would compute them, so outputs do
 * not depend on what else is running or ran before.
 *
 * Callbacks run on the engine thread: keep them short, never call the
 * scheduler's blocking functions from them.
 *
 *   sprout_scheduler *s;
 *   sprout_scheduler_create(model, NULL, &s);
 *   sprout_request_params rp = {.struct_size = sizeof rp, .prompt = ids, .n_prompt = n, .config = &cfg};
 *   sprout_request *req;
 *   if (sprout_scheduler_submit(s, &rp, &req) == SPROUT_OK) {
 *       sprout_result *r;
 *       if (sprout_request_wait(req, &r) == SPROUT_OK) { ...; sprout_result_free(r); }
 *       sprout_request_free(req);
 *   }
 *   sprout_scheduler_free(s);
 * ------------------------------------------------------------------------- */
typedef struct sprout_scheduler sprout_scheduler;
typedef struct sprout_request sprout_request;

typedef struct sprout_scheduler_params {
    size_t struct_size;     /* sizeof(sprout_scheduler_params) */
    int32_t n_slots;        /* concurrent generations; 0: from the cores and the context */
    int32_t n_ctx;          /* context of each slot; 0: the model's default */
    int32_t n_batch;        /* tokens per forward pass; 0: 512 */
    int32_t prefill_chunk;  /* prompt tokens one request may add to a step; 0: 256 */
    int32_t n_queue;        /* requests that may wait for a slot; 0: 64, < 0: none */
    int32_t n_threads;      /* 0: the model's default; at most SPROUT_MAX_THREADS */
    sprout_kv_type kv_type; /* used when kv_type_set; else the model's */
    bool kv_type_set;
    /* Speculative decoding: a small model of the same vocabulary (checked:
     * SPROUT_ERR_UNSUPPORTED) proposes tokens for every request whose
     * config asks for it (num_assistant_tokens > 0, prompt_lookup false);
     * requests with prompt_lookup propose from their own text without it.
     * The scheduler keeps a cache of it per slot; borrowed, it must
     * outlive the scheduler. NULL: none. */
    const sprout_model *draft_model;
    sprout_kv_type cache_type_k, cache_type_v; /* the keys' or values' type alone, over kv_type, when its _set */
    bool cache_type_k_set, cache_type_v_set;
    /* Prompt tokens that all prefilling requests together may add to a
     * step while any request is generating, so that a long prompt
     * arriving does not stall the running streams (at most
     * prefill_chunk). 0: adaptive, as many as cost about one decode-only
     * step, from running averages of the steps' times (at least 4); < 0:
     * no cap, prefill_chunk per request. With nothing generating a prompt
     * goes prefill_chunk tokens a step whatever this says. */
    int32_t prefill_budget;
} sprout_scheduler_params;

sprout_status sprout_scheduler_create(const sprout_model *model, const sprout_scheduler_params *params, sprout_scheduler **out);
/* Ends what is running (finish reason "cancelled") or queued (wait fails
 * with SPROUT_ERR_CANCELLED), stops the engine thread, frees. Requests not
 * yet freed stay valid for wait and free. */
void sprout_scheduler_free(sprout_scheduler *s);
int32_t sprout_scheduler_n_slots(const sprout_scheduler *s);
/* The slots a scheduler gets when its params ask for 0: two per core (a
 * batched step costs far less than one step per request), 2 to 8, then
 * fewer while their KV cache (n_ctx tokens each, kv_bytes_per_token apiece)
 * would pass 2 GiB. For sizing a model before it is loaded. */
int32_t sprout_scheduler_default_slots(int32_t n_ctx, size_t kv_bytes_per_token);
int32_t sprout_scheduler_n_ctx(const sprout_scheduler *s);
/* Bytes one token takes in the slots' KV cache (0 for NULL). */
size_t sprout_scheduler_kv_bytes_per_token(const sprout_scheduler *s);
/* The longest prompt an embedding request may have: the context, and less
 * where the model has fewer learned positions or (bidirectional models,
 * whose text goes through in one pass) a smaller batch. */
int32_t sprout_scheduler_max_embed_tokens(const sprout_scheduler *s);

typedef struct sprout_request_params {
    size_t struct_size;                      /* sizeof(sprout_request_params) */
    const sprout_token *prompt;              /* copied */
    size_t n_prompt;
    const sprout_generation_config *config;  /* copied, stop strings included; NULL: defaults */
    sprout_streamer streamer;                /* may be NULL */
    void (*on_done)(sprout_request *req, void *user); /* once, when the result is ready; may be NULL */
    void *user;
    /* each token that joins the output, as it is chosen (before its text
     * is streamed), with its log-probability and the config's `logprobs`
     * best alternatives (logprob 0 and n_top 0 unless config->logprobs > 0);
     * may be NULL */
    void (*on_token)(sprout_request *req, sprout_token id, float logprob, const sprout_token *top_ids, const float *top_logprobs,
                     size_t n_top, void *user);
    /* An embedding instead of a generation: the prompt's hidden states
     * pooled into one vector (sprout_result_embedding); nothing is
     * generated, and config, streamer and on_token are not used. The prompt
     * may fill the whole context. Mean and CLS pooling compute every prompt
     * token (cached ones too); last-token pooling reuses a cached prefix. */
    bool embed;
    sprout_pooling pooling;
    bool normalize;                          /* scaled to unit length (L2), as OpenAI's and Ollama's /api/embed give */
} sprout_request_params;

/* Queues a request. SPROUT_ERR_BUSY: the queue is full. SPROUT_ERR_OUT_OF_RANGE:
 * the prompt does not fit a slot's context. */
sprout_status sprout_scheduler_submit(sprout_scheduler *s, const sprout_request_params *params, sprout_request **out);
/* Ends a request as soon as possible (finish reason "cancelled"); safe from
 * any thread, also from its own streamer, and on a finished request. */
void sprout_request_cancel(sprout_request *req);
bool sprout_request_done(const sprout_request *req);
/* Waits for the end; on success the result goes to *out (once: the caller
 * frees it). */
sprout_status sprout_request_wait(sprout_request *req, sprout_result **out);
/* Cancels if still running, waits for the end and frees. */
void sprout_request_free(sprout_request *req);

typedef struct sprout_scheduler_stats {
    size_t struct_size;
    int32_t n_slots, busy_slots, queued;
    uint64_t requests_done, requests_rejected;
    uint64_t prompt_tokens, cached_prompt_tokens, generated_tokens;
    uint64_t steps;          /* forward passes */
    double busy_ms;          /* time spent in steps */
    /* KV cache cells (tokens) held by the requests running now, and all
     * the cells of every slot: their ratio is vLLM's kv_cache_usage_perc */
    int64_t kv_cells_used, kv_cells;
} sprout_scheduler_stats;

sprout_status sprout_scheduler_stats_get(const sprout_scheduler *s, sprout_scheduler_stats *out);

SPROUT_END_DECLS

#endif /* SPROUT_API_SCHEDULER_H */
