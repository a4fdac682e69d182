/* Continuous batching: N slots share one KV cache (one sequence each) and
 * one engine thread. Every step runs one forward pass over a token for each
 * generating slot (and, when its request speculates, the proposals after
 * it: scheduler_assist.c) plus bounded prompt chunks of prefilling slots;
 * each slot's sequence state machine then samples from its own logits rows
 * and keeps the proposals that are what it chose (sp_seq_verify).
 *
 * Threads: callers touch only the queue and the stats (under the
 * scheduler's lock) and their requests (under each request's lock); slots
 * belong to the engine thread alone. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cpu.h"
#include "core/error.h"
#include "core/log.h"
#include "core/versioned.h"
#include "pipeline/assist.h"
#include "pipeline/embedding.h"
#include "pipeline/pipeline_internal.h"
#include "pipeline/prefill_budget.h"
#include "pipeline/scheduler_assist.h"
#include "pipeline/sequence.h"

struct sprout_request {
    sprout_scheduler *sched;
    int32_t *prompt;
    size_t n_prompt;
    sprout_generation_config cfg; /* its stop lists point into the request */
    char **stops;
    int32_t *stop_ids;
    sprout_logit_bias *biases; /* the config's logit_bias, owned */
    char **breakers;           /* the config's DRY sequence breakers, owned (NULL: the default ones) */
    char *samplers;            /* the config's sampler order, owned */
    char *grammar, *json_schema, *grammar_trigger; /* the config's constraint, owned */
    sp_lora_set lora;          /* the config's adapters, owned (cfg.lora points into it) */
    sprout_streamer streamer;
    void (*on_done)(sprout_request *req, void *user);
    void (*on_token)(sprout_request *req, sprout_token id, float logprob, const sprout_token *top_ids, const float *top_logprobs,
                     size_t n_top, void *user);
    void *user;
    bool embed, normalize; /* an embedding request, and its pooling (resolved) */
    sprout_pooling pooling;
    double t_submit;
    atomic_bool cancel;
    /* the end, under the request's own lock (it outlives the scheduler) */
    pthread_mutex_t mu;
    pthread_cond_t ended;
    bool done, taken;
    int refs; /* the caller's and the engine's */
    sprout_status status;
    char error[512];
    sprout_result *result;
    sprout_request *next; /* in the queue, under sched->mu */
};

typedef struct slot {
    sprout_request *req;  /* NULL: free */
    sp_seq seq;
    sp_sampler sampler;
    int32_t *cached;      /* the tokens this slot's KV cache holds, in order */
    int32_t n_cached;
    int32_t n_fed_prompt; /* prompt tokens in the cache (== n_prompt once prefilled) */
    bool prompt_path;     /* whether those went the prompt path (prompt_path_for) */
    sp_lora_set lora;     /* the adapters those were computed with (a copy) */
    int32_t pending;      /* the sampled token to feed next; -1: none */
    int32_t logits_row;   /* this step's (first) row of logits; -1: none */
    int32_t n_proposed;   /* proposals after the pending token this step (their rows follow) */
    int32_t embd_row;     /* an embedding's first row of hidden states this step */
    int32_t n_step_tokens;
    /* an embedding request (req->embed): its pooling, when its prompt
     * started and how many prompt tokens it computes */
    sp_pool pool;
    double t_prefill;
    int32_t n_prefill;
    uint64_t last_used;   /* for choosing among equally good free slots */
    int32_t shift_keep;   /* after a context shift: the cached tokens a later request may reuse; -1: all */
} slot;

struct sprout_scheduler {
    const sprout_model *model;
    sp_context ctx;
    int32_t n_slots, n_ctx, n_batch, prefill_chunk, n_queue;
    slot *slots;
    float *logits;        /* logits_rows rows: n_slots, more once slots speculate */
    int32_t logits_rows;
    sp_sched_assist assist; /* proposals: prompt lookup, the draft model */
    sp_assist_want *want;   /* n_slots: the slots speculating this step */
    float *embd;          /* n_batch rows of hidden states, made for the first embedding request */
    sp_batch_token *batch;
    uint64_t clock;
    int32_t prefill_turn; /* round-robin start among prefilling slots */
    sp_prefill_budget prefill; /* the prompt tokens a step beside generating slots may carry */
    /* a token computed the prompt path may differ from the same token
     * computed as generated ones are (sp_context_kinds_differ): a new
     * request then reuses only cached tokens computed the way it would
     * compute them itself, so its numbers never depend on what ran before */
    bool kinds_differ;
    pthread_t engine;
    bool engine_started;
    /* under mu */
    pthread_mutex_t mu;
    pthread_cond_t work;
    sprout_request *queue_head, *queue_tail;
    int32_t queued, busy;
    bool stopping;
    sprout_scheduler_stats stats;
};

/* --- requests ---------------------------------------------------------------------------------------- */

/* Frees n strings and their array. */
static void free_strings(char **s, size_t n) {
    for (size_t i = 0; s && i < n; i++) free(s[i]);
    free(s);
}

/* A malloc'd copy of n strings (NULL ones as ""), or NULL. */
static char **copy_strings(const char *const *src, size_t n) {
    char **copy = calloc(n ? n : 1, sizeof *copy);
    for (size_t i = 0; copy && i < n; i++)
        if (!(copy[i] = strdup(src[i] ? src[i] : ""))) {
            free_strings(copy, i);
            return NULL;
        }
    return copy;
}

static void request_destroy(sprout_request *req) {
    free_strings(req->stops, req->cfg.n_stop_strings);
    free_strings(req->breakers, req->cfg.n_dry_sequence_breakers);
    free(req->samplers);
    free(req->grammar);
    free(req->json_schema);
    free(req->grammar_trigger);
    free(req->stop_ids);
    free(req->biases);
    sp_lora_set_free(&req->lora);
    free(req->prompt);
    sprout_result_free(req->result);
    pthread_cond_destroy(&req->ended);
    pthread_mutex_destroy(&req->mu);
    free(req);
}

static void request_unref(sprout_request *req) {
    pthread_mutex_lock(&req->mu);
    const int left = --req->refs;
    pthread_mutex_unlock(&req->mu);
    if (left == 0) request_destroy(req);
}

/* A malloc'd copy of n elements (room for one when n is 0), or NULL. */
static void *copy_array(const void *src, size_t n, size_t size) {
    void *copy = malloc((n ? n : 1) * size);
    if (copy && n) memcpy(copy, src, n * size);
    return copy;
}

static sprout_status request_new(const sprout_model *m, const sprout_request_params *rp, sprout_request **out) {
    sprout_request *req = calloc(1, sizeof *req);
    if (!req) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
    sp_config_copy(&req->cfg, rp->config);
    /* an embedding uses no config, its adapters neither */
    sprout_status st = rp->embed ? SPROUT_OK : sp_lora_set_copy(m, req->cfg.lora, req->cfg.n_lora, &req->lora);
    req->cfg.lora = req->lora.uses;
    req->cfg.n_lora = req->lora.n;
    bool ok = true;
    req->prompt = malloc((rp->n_prompt ? rp->n_prompt : 1) * sizeof *req->prompt);
    ok = req->prompt != NULL;
    if (ok && rp->n_prompt) memcpy(req->prompt, rp->prompt, rp->n_prompt * sizeof *req->prompt);
    req->n_prompt = rp->n_prompt;
    const size_t n_stops = req->cfg.stop_strings ? req->cfg.n_stop_strings : 0;
    req->stops = copy_strings(req->cfg.stop_strings, n_stops);
    ok = ok && req->stops;
    req->cfg.stop_strings = (const char *const *)req->stops;
    req->cfg.n_stop_strings = req->stops ? n_stops : 0;
    if (req->cfg.dry_sequence_breakers) { /* NULL stays NULL: the default breakers */
        const size_t n_breakers = req->cfg.n_dry_sequence_breakers;
        req->breakers = copy_strings(req->cfg.dry_sequence_breakers, n_breakers);
        ok = ok && req->breakers;
        req->cfg.dry_sequence_breakers = (const char *const *)req->breakers;
        req->cfg.n_dry_sequence_breakers = req->breakers ? n_breakers : 0;
    }
    if (req->cfg.samplers) ok = ok && (req->cfg.samplers = req->samplers = strdup(req->cfg.samplers));
    if (req->cfg.grammar) ok = ok && (req->cfg.grammar = req->grammar = strdup(req->cfg.grammar));
    if (req->cfg.json_schema) ok = ok && (req->cfg.json_schema = req->json_schema = strdup(req->cfg.json_schema));
    if (req->cfg.grammar_trigger) ok = ok && (req->cfg.grammar_trigger = req->grammar_trigger = strdup(req->cfg.grammar_trigger));
    req->cfg.n_stop_token_ids = req->cfg.stop_token_ids ? req->cfg.n_stop_token_ids : 0;
    req->cfg.stop_token_ids = req->stop_ids = copy_array(req->cfg.stop_token_ids, req->cfg.n_stop_token_ids, sizeof *req->stop_ids);
    req->cfg.n_logit_bias = req->cfg.logit_bias ? req->cfg.n_logit_bias : 0;
    req->cfg.logit_bias = req->biases = copy_array(req->cfg.logit_bias, req->cfg.n_logit_bias, sizeof *req->biases);
    ok = ok && req->stop_ids && req->biases;
    req->streamer = rp->streamer;
    req->on_done = rp->on_done;
    req->on_token = rp->on_token;
    req->user = rp->user;
    req->embed = rp->embed;
    req->pooling = rp->pooling;
    req->normalize = rp->normalize;
    req->refs = 2;
    atomic_init(&req->cancel, false);
    pthread_mutex_init(&req->mu, NULL);
    pthread_cond_init(&req->ended, NULL);
    if (st == SPROUT_OK && !ok) st = sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
    if (st != SPROUT_OK) {
        request_destroy(req);
        return st;
    }
    *out = req;
    return SPROUT_OK;
}

/* Publishes the end of a request: on_done first, so that a waiter that
 * frees the request's user data does so after the callback. */
static void request_finish(sprout_scheduler *s, sprout_request *req, sprout_status st, sprout_result *result) {
    if (st != SPROUT_OK) snprintf(req->error, sizeof req->error, "%s", sprout_last_error());
    pthread_mutex_lock(&s->mu);
    s->stats.requests_done++;
    if (result) s->stats.generated_tokens += result->n_tokens;
    pthread_mutex_unlock(&s->mu);
    pthread_mutex_lock(&req->mu);
    req->status = st;
    req->result = result;
    pthread_mutex_unlock(&req->mu);
    if (req->on_done) req->on_done(req, req->user);
    pthread_mutex_lock(&req->mu);
    req->done = true;
    pthread_cond_broadcast(&req->ended);
    pthread_mutex_unlock(&req->mu);
    request_unref(req);
}

void sprout_request_cancel(sprout_request *req) {
    if (req) atomic_store(&req->cancel, true);
}

bool sprout_request_done(const sprout_request *req) {
    if (!req) return true;
    sprout_request *r = (sprout_request *)req; /* the lock, not the state, changes */
    pthread_mutex_lock(&r->mu);
    bool done = r->done;
    pthread_mutex_unlock(&r->mu);
    return done;
}

sprout_status sprout_request_wait(sprout_request *req, sprout_result **out) {
    if (out) *out = NULL;
    if (!req) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "NULL request");
    pthread_mutex_lock(&req->mu);
    while (!req->done) pthread_cond_wait(&req->ended, &req->mu);
    sprout_status st = req->status;
    if (st == SPROUT_OK && out) {
        if (req->taken) st = SPROUT_ERR_NOT_FOUND;
        else {
            *out = req->result;
            req->result = NULL;
            req->taken = true;
        }
    }
    pthread_mutex_unlock(&req->mu);
    if (st == SPROUT_ERR_NOT_FOUND) return sp_fail(st, "the request's result was already taken");
    if (st != SPROUT_OK) return sp_fail(st, "%s", req->error);
    return SPROUT_OK;
}

void sprout_request_free(sprout_request *req) {
    if (!req) return;
    sprout_request_cancel(req);
    pthread_mutex_lock(&req->mu);
    while (!req->done) pthread_cond_wait(&req->ended, &req->mu);
    pthread_mutex_unlock(&req->mu);
    request_unref(req);
}

/* --- the engine ------------------------------------------------------------------------------------- */

static int32_t common_prefix(const int32_t *a, int32_t na, const int32_t *b, int32_t nb) {
    int32_t i = 0;
    while (i < na && i < nb && a[i] == b[i]) i++;
    return i;
}

/* Whether a request's prompt tokens go the prompt path: by its prompt's
 * length (forward.h), never by what a slot caches, so that the same request
 * computes the same numbers whatever ran before. */
static bool prompt_path_for(const sprout_request *req) { return req->n_prompt >= SP_PROMPT_PATH_MIN_TOKENS; }

/* How many of a free slot's cached tokens a request may reuse: none
 * computed with other adapters; where the kinds differ, the prompt part if
 * it went the request's own way (a generated token never goes the prompt
 * path); all, generated ones included, if neither went it; none
 * otherwise. */
static int32_t reusable(const sprout_scheduler *s, const slot *sl, const sprout_request *req) {
    if (!sp_lora_set_equal(&sl->lora, &req->lora)) return 0;
    if (!s->kinds_differ) return sl->n_cached;
    if (sl->prompt_path != prompt_path_for(req)) return 0;
    return sl->prompt_path ? sl->n_fed_prompt : sl->n_cached;
}

/* The free slot for a request: one whose whole previous prompt starts this
 * one (the next turn of its conversation); else an empty slot, so that a
 * new conversation that only shares a system prompt or template with an
 * old one does not wipe the old one's cache before its next turn; else the
 * one that caches the longest start of the prompt. Least recently used
 * among equals, so that other cached prefixes live longer. */
static slot *choose_slot(sprout_scheduler *s, const sprout_request *req, int32_t *reuse) {
    slot *best = NULL;
    int32_t best_len = -1, best_rank = -1;
    for (int32_t i = 0; i < s->n_slots; i++) {
        slot *sl = &s->slots[i];
        if (sl->req) continue;
        int32_t len = common_prefix(sl->cached, reusable(s, sl, req), req->prompt, (int32_t)req->n_prompt);
        const int rank = len > 0 && len >= sl->n_fed_prompt ? 2 : sl->n_cached == 0 ? 1 : 0;
        if (rank > best_rank || (rank == best_rank && (len > best_len || (len == best_len && sl->last_used < best->last_used)))) {
            best = sl;
            best_len = len;
            best_rank = rank;
        }
    }
    /* the last prompt token always runs again: its logits were not kept */
    if (best_len >= (int32_t)req->n_prompt) best_len = (int32_t)req->n_prompt - 1;
    *reuse = best_len < 0 ? 0 : best_len;
    return best;
}

/* The slot is free again; its request ends with st and (st OK) r. */
static void release_slot(sprout_scheduler *s, slot *sl, sprout_status st, sprout_result *r) {
    sprout_request *req = sl->req;
    sl->req = NULL;
    sl->pending = -1;
    sl->last_used = ++s->clock;
    pthread_mutex_lock(&s->mu);
    s->busy--;
    pthread_mutex_unlock(&s->mu);
    request_finish(s, req, st, st == SPROUT_OK ? r : NULL);
}

static void end_slot(sprout_scheduler *s, slot *sl, sprout_status st) {
    sprout_result *r = NULL;
    st = sp_seq_end(&sl->seq, st, &r);
    release_slot(s, sl, st, r);
}

/* An embedding request's end: its vector on success (st OK), or the error. */
static void end_embed_slot(sprout_scheduler *s, slot *sl, sprout_status st) {
    const sprout_request *req = sl->req;
    sprout_result *r = NULL;
    if (st == SPROUT_OK) {
        r = sp_pool_result(&sl->pool, req->normalize, req->prompt, req->n_prompt);
        if (!r) st = sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    if (r) {
        const double t_end = sp_now_ms();
        sprout_perf_metrics *m = &r->metrics;
        m->load_ms = sprout_model_load_ms(s->model);
        m->n_prefill_tokens = sl->n_prefill;
        m->prefill_tokens_per_s = t_end > sl->t_prefill ? sl->n_prefill / ((t_end - sl->t_prefill) / 1e3) : 0;
        m->total_ms = t_end - req->t_submit;
    }
    sp_pool_free(&sl->pool);
    release_slot(s, sl, st, r);
}

/* Either kind of request's end. */
static void end_any_slot(sprout_scheduler *s, slot *sl, sprout_status st) {
    if (sl->req->embed) end_embed_slot(s, sl, st);
    else end_slot(s, sl, st);
}

/* A request given up (cancel, shutdown): a generation ends with what it
 * has, finish "cancelled"; an embedding has nothing to give. */
static void cancel_slot(sprout_scheduler *s, slot *sl) {
    if (sl->req->embed) {
        end_embed_slot(s, sl, sp_fail(SPROUT_ERR_CANCELLED, "the embedding request was cancelled"));
        return;
    }
    sl->seq.finish = SPROUT_FINISH_CANCELLED;
    end_slot(s, sl, SPROUT_OK);
}

/* An embedding request takes its slot: the hidden states come from the
 * prompt's tokens, so mean and CLS pooling compute them all. */
static sprout_status begin_embed(sprout_scheduler *s, slot *sl, int32_t *reuse) {
    const sprout_request *req = sl->req;
    /* a bidirectional model's cached states depend on the text after them */
    if (req->pooling != SPROUT_POOLING_LAST || !s->model->hp.causal) *reuse = 0;
    if (!s->embd) {
        s->embd = malloc((size_t)s->n_batch * (size_t)s->model->hp.n_embd * sizeof *s->embd);
        if (!s->embd) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    sl->n_prefill = (int32_t)req->n_prompt - *reuse;
    sl->t_prefill = sp_now_ms();
    return sp_pool_init(&sl->pool, req->pooling, s->model->hp.n_embd);
}

static void token_to_caller(void *ctx, int32_t id, float logprob, const int32_t *top_ids, const float *top_logprobs, int32_t n_top) {
    sprout_request *req = ctx;
    req->on_token(req, id, logprob, top_ids, top_logprobs, (size_t)n_top, req->user);
}

/* Moves queued requests into free slots. Called without mu. */
static void admit(sprout_scheduler *s) {
    for (;;) {
        pthread_mutex_lock(&s->mu);
        sprout_request *req = s->busy < s->n_slots ? s->queue_head : NULL;
        if (req) {
            s->queue_head = req->next;
            if (!s->queue_head) s->queue_tail = NULL;
            s->queued--;
            s->busy++;
        }
        pthread_mutex_unlock(&s->mu);
        if (!req) return;
        int32_t reuse = 0;
        slot *sl = choose_slot(s, req, &reuse);
        sl->req = req;
        sl->pending = -1;
        sprout_status st = req->embed ? begin_embed(s, sl, &reuse)
                                      : sp_seq_begin(&sl->seq, s->model, &sl->sampler, s->n_ctx, req->prompt, req->n_prompt, NULL, 0,
                                                     req->t_submit, 0, &req->cfg, req->streamer, req->user);
        if (st != SPROUT_OK) {
            release_slot(s, sl, st, NULL);
            continue;
        }
        if (req->on_token && !req->embed) {
            sl->seq.on_token = token_to_caller;
            sl->seq.token_ctx = req;
        }
        if (!req->embed) sp_sched_assist_begin(&s->assist, (int32_t)(sl - s->slots));
        if (atomic_load(&req->cancel)) { /* given up while it waited: free the slot now */
            cancel_slot(s, sl);
            continue;
        }
        if (!sp_lora_set_equal(&sl->lora, &req->lora)) { /* reuse is 0: the cache is the request's now */
            sp_lora_set_free(&sl->lora);
            if ((st = sp_lora_set_copy(s->model, req->lora.uses, req->lora.n, &sl->lora)) != SPROUT_OK) {
                sl->n_cached = 0;
                end_any_slot(s, sl, st);
                continue;
            }
        }
        if (sl->shift_keep >= 0 && reuse > sl->shift_keep) reuse = sl->shift_keep; /* computed beside tokens now gone */
        sl->shift_keep = -1;
        sp_kv_truncate(&s->ctx.kv, (int32_t)(sl - s->slots), reuse);
        sl->n_cached = reuse;
        sl->n_fed_prompt = reuse;
        sl->prompt_path = prompt_path_for(req);
        if (!req->embed) sp_seq_prefill_started(&sl->seq, (int32_t)req->n_prompt - reuse);
        pthread_mutex_lock(&s->mu);
        s->stats.prompt_tokens += req->n_prompt;
        s->stats.cached_prompt_tokens += (uint64_t)reuse;
        pthread_mutex_unlock(&s->mu);
    }
}

static void add_token(sprout_scheduler *s, int32_t *n, slot *sl, int32_t token, bool logits, bool embd, bool prompt) {
    s->batch[*n] = (sp_batch_token){token, sl->n_cached + sl->n_step_tokens, (int32_t)(sl - s->slots), logits, embd, prompt,
                                    sp_lora_set_or_null(&sl->req->lora)};
    sl->n_step_tokens++;
    (*n)++;
}

/* Room for `rows` rows of logits; false (speculation waits a step) when
 * memory is short. */
static bool logits_room(sprout_scheduler *s, int32_t rows) {
    if (rows <= s->logits_rows) return true;
    float *more = realloc(s->logits, (size_t)rows * (size_t)s->model->hp.n_vocab * sizeof *more);
    if (!more) return false;
    s->logits = more;
    s->logits_rows = rows;
    return true;
}

/* The proposals of the generating slots whose requests speculate: each
 * within its context, the tokens it may still generate after the pending
 * one, its config's number, and the batch's room after every generating
 * slot's own token. */
static void propose(sprout_scheduler *s, int32_t n_generating) {
    int32_t room = s->n_batch - n_generating, n_want = 0, rows = s->n_slots;
    for (int32_t i = 0; i < s->n_slots && room > 0; i++) {
        slot *sl = &s->slots[i];
        if (!sl->req || sl->req->embed || sl->pending < 0 || !sp_sched_assist_wanted(&s->assist, &sl->req->cfg)) continue;
        const sprout_generation_config *cfg = &sl->req->cfg;
        const int32_t budget = s->assist.slots[i].budget;
        int32_t max = budget < cfg->num_assistant_tokens ? budget : cfg->num_assistant_tokens;
        const int32_t left = cfg->max_new_tokens - (int32_t)sl->seq.result->n_tokens;
        if (s->n_ctx - sl->n_cached - 1 < max) max = s->n_ctx - sl->n_cached - 1;
        if (left - 1 < max) max = left - 1;
        if (room < max) max = room;
        if (max <= 0) continue;
        room -= max;
        rows += max;
        sl->cached[sl->n_cached] = sl->pending; /* the text so far: the cache, then the pending token */
        s->want[n_want++] = (sp_assist_want){i, cfg, sl->cached, sl->n_cached + 1, max};
    }
    if (n_want == 0 || !logits_room(s, rows)) return;
    sp_sched_assist_propose(&s->assist, s->model->hp.n_vocab, s->want, n_want);
    for (int32_t w = 0; w < n_want; w++) s->slots[s->want[w].slot].n_proposed = s->assist.slots[s->want[w].slot].k;
}

/* One forward pass over all active slots. */
static void step(sprout_scheduler *s) {
    const double t0 = sp_now_ms(); /* the draft's passes count as engine time too */
    int32_t n = 0, n_rows = 0, n_embd_rows = 0, n_generating = 0;
    for (int32_t i = 0; i < s->n_slots; i++) {
        slot *sl = &s->slots[i];
        sl->logits_row = -1;
        sl->n_step_tokens = 0;
        sl->n_proposed = 0;
        if (!sl->req) continue;
        if (atomic_load(&sl->req->cancel)) {
            cancel_slot(s, sl);
            continue;
        }
        if (sl->req->embed) continue; /* all prompt: below */
        if (sp_seq_finished(&sl->seq)) {
            end_slot(s, sl, SPROUT_OK);
            continue;
        }
        n_generating += sl->pending >= 0;
    }
    for (int32_t i = 0; i < s->n_slots; i++) { /* context shift, where a pending token would fill the context (generate.c) */
        slot *sl = &s->slots[i];
        if (!sl->req || sl->req->embed || sl->pending < 0 || !sl->req->cfg.context_shift || sl->n_cached + 1 < s->n_ctx) continue;
        const int32_t keep = sp_seq_n_keep(s->model, &sl->req->cfg, sl->req->n_prompt);
        int32_t dropped;
        const sprout_status st = sp_seq_shift(&s->ctx.kv, s->model, i, sl->cached, &sl->n_cached, keep, &dropped);
        if (st != SPROUT_OK) {
            n_generating--;
            end_any_slot(s, sl, st);
        } else {
            sl->shift_keep = keep;
            sp_lookup_reset(&s->assist.slots[i].lookup); /* its index is of the text before the shift */
        }
    }
    propose(s, n_generating);
    /* each generating slot's pending token, then its proposals: generated
     * tokens (never the prompt path), each with its row of logits */
    for (int32_t i = 0; i < s->n_slots; i++) {
        slot *sl = &s->slots[i];
        if (!sl->req || sl->req->embed || sl->pending < 0) continue;
        sl->logits_row = n_rows;
        n_rows += 1 + sl->n_proposed;
        add_token(s, &n, sl, sl->pending, true, false, false);
        for (int32_t j = 0; j < sl->n_proposed; j++) add_token(s, &n, sl, s->assist.slots[i].proposal[j], true, false, false);
    }
    /* prompt chunks in the room left, taking turns so no prompt starves;
     * beside generating slots only as many as the budget, so that a long
     * prompt arriving never holds their next tokens back by much more than
     * a step (a bidirectional model's text goes whole, and never generates) */
    const int32_t n_decode = n;
    int32_t budget = s->model->hp.causal ? sp_prefill_budget_tokens(&s->prefill, n_decode) : INT32_MAX;
    for (int32_t k = 0; k < s->n_slots && n < s->n_batch && budget > 0; k++) {
        slot *sl = &s->slots[(s->prefill_turn + k) % s->n_slots];
        if (!sl->req || sl->n_fed_prompt >= (int32_t)sl->req->n_prompt) continue;
        int32_t left = (int32_t)sl->req->n_prompt - sl->n_fed_prompt;
        int32_t chunk = left < s->prefill_chunk ? left : s->prefill_chunk;
        if (!s->model->hp.causal) { /* every token sees the whole text: all of it in one pass, or wait for room */
            if (left > s->n_batch - n) continue;
            chunk = left;
        }
        if (chunk > s->n_batch - n) chunk = s->n_batch - n;
        if (chunk > budget) chunk = budget;
        budget -= chunk;
        sl->embd_row = n_embd_rows;
        for (int32_t j = 0; j < chunk; j++) {
            const int32_t at = sl->n_fed_prompt + j, n_prompt = (int32_t)sl->req->n_prompt;
            const bool embd = sl->req->embed && sp_pool_wants(sl->req->pooling, at, n_prompt);
            const bool logits = !sl->req->embed && at == n_prompt - 1;
            if (logits) sl->logits_row = n_rows++;
            n_embd_rows += embd;
            add_token(s, &n, sl, sl->req->prompt[at], logits, embd, sl->prompt_path);
        }
    }
    s->prefill_turn = (s->prefill_turn + 1) % s->n_slots;
    if (n == 0) return;

    const double t_pass = sp_now_ms();
    sprout_status st = sp_forward_out(&s->ctx, s->batch, n, s->logits, s->embd);
    if (st == SPROUT_OK) sp_prefill_budget_observe(&s->prefill, n_decode, n - n_decode, sp_now_ms() - t_pass);
    /* counted before any request of this pass is reported done, so that
     * its owner reads statistics that include it */
    pthread_mutex_lock(&s->mu);
    s->stats.steps++;
    pthread_mutex_unlock(&s->mu);
    for (int32_t i = 0; i < s->n_slots; i++) {
        slot *sl = &s->slots[i];
        if (!sl->req || !sl->n_step_tokens) continue;
        if (st != SPROUT_OK) {
            sp_kv_truncate(&s->ctx.kv, i, sl->n_cached);
            end_any_slot(s, sl, st);
            continue;
        }
        const size_t n_vocab = (size_t)s->model->hp.n_vocab;
        if (sl->pending >= 0) { /* the pending token and the proposals: verified */
            int32_t next;
            const int32_t n_before = sl->n_cached; /* the pending token is fed too */
            const bool more = sp_seq_verify(&sl->seq, s->logits + (size_t)sl->logits_row * n_vocab, n_vocab, sl->pending,
                                            s->assist.slots[i].proposal, sl->n_proposed, sl->cached, &sl->n_cached,
                                            sl->req->cfg.context_shift ? INT32_MAX : s->n_ctx, &next);
            sp_slot_assist *sa = &s->assist.slots[i];
            const int32_t cap = sl->req->cfg.num_assistant_tokens;
            sa->budget = sp_assist_next_budget(sa->budget, cap, sl->n_proposed, sl->n_cached - n_before - 1);
            if (sl->n_proposed) sp_kv_truncate(&s->ctx.kv, i, sl->n_cached); /* the proposals not kept */
            sl->pending = more ? next : -1;
            /* a sequence that just ended needs no more passes: its cache
             * keeps what was computed, which later prompts may reuse */
            if (sp_seq_finished(&sl->seq)) end_slot(s, sl, SPROUT_OK);
            continue;
        }
        /* the prompt tokens just computed are now cached */
        for (int32_t t = 0; t < n; t++)
            if (s->batch[t].seq == i) sl->cached[sl->n_cached++] = s->batch[t].token;
        if (sl->req->embed) {
            const int32_t n_prompt = (int32_t)sl->req->n_prompt;
            for (int32_t j = 0, row = sl->embd_row; j < sl->n_step_tokens; j++)
                if (sp_pool_wants(sl->req->pooling, sl->n_fed_prompt + j, n_prompt))
                    sp_pool_add(&sl->pool, s->embd + (size_t)row++ * (size_t)s->model->hp.n_embd);
            sl->n_fed_prompt += sl->n_step_tokens;
            if (sl->n_fed_prompt == n_prompt) end_embed_slot(s, sl, SPROUT_OK);
            continue;
        }
        sl->n_fed_prompt += sl->n_step_tokens;
        if (sl->n_fed_prompt == (int32_t)sl->req->n_prompt) sp_seq_prefill_done(&sl->seq);
        if (sl->logits_row < 0) continue;
        int32_t next; /* the first token, from the prompt's last row */
        if (sp_seq_next(&sl->seq, s->logits + (size_t)sl->logits_row * n_vocab, sl->cached, (size_t)sl->n_cached,
                        sl->req->cfg.context_shift || sl->n_cached < s->n_ctx, &next))
            sl->pending = next;
        if (sp_seq_finished(&sl->seq)) end_slot(s, sl, SPROUT_OK);
    }
    int64_t used = 0; /* the slots still running after this pass: ended ones keep their cache only for reuse */
    for (int32_t i = 0; i < s->n_slots; i++)
        if (s->slots[i].req) used += s->slots[i].n_cached;
    pthread_mutex_lock(&s->mu);
    s->stats.busy_ms += sp_now_ms() - t0;
    s->stats.kv_cells_used = used;
    pthread_mutex_unlock(&s->mu);
}

static void *engine_main(void *arg) {
    sprout_scheduler *s = arg;
    for (;;) {
        pthread_mutex_lock(&s->mu);
        while (!s->stopping && s->busy == 0 && s->queued == 0) pthread_cond_wait(&s->work, &s->mu);
        const bool stopping = s->stopping;
        pthread_mutex_unlock(&s->mu);
        if (stopping) break;
        admit(s);
        step(s);
    }
    /* shutting down: running requests end as cancelled, queued ones fail */
    for (int32_t i = 0; i < s->n_slots; i++)
        if (s->slots[i].req) cancel_slot(s, &s->slots[i]);
    for (;;) {
        pthread_mutex_lock(&s->mu);
        sprout_request *req = s->queue_head;
        if (req) {
            s->queue_head = req->next;
            s->queued--;
        }
        s->queue_tail = s->queue_head ? s->queue_tail : NULL;
        pthread_mutex_unlock(&s->mu);
        if (!req) break;
        sp_fail(SPROUT_ERR_CANCELLED, "the scheduler shut down before the request started");
        request_finish(s, req, SPROUT_ERR_CANCELLED, NULL);
    }
    return NULL;
}

/* --- setup and submission ------------------------------------------------------------------------------ */

int32_t sprout_scheduler_default_slots(int32_t n_ctx, size_t kv_bytes_per_token) {
    int32_t n = 2 * sp_cpu_count();
    if (n < 2) n = 2;
    if (n > 8) n = 8;
    while (n > 1 && (double)kv_bytes_per_token * n_ctx * n > 2.0 * 1024 * 1024 * 1024) n--;
    return n;
}

static int32_t default_slots(const sprout_model *m, int32_t n_ctx, sp_kv_types kv) {
    const int64_t row = (int64_t)m->hp.n_head_kv * m->hp.head_dim_k;
    return sprout_scheduler_default_slots(n_ctx, (size_t)m->hp.n_layer * (sp_kv_bytes(kv.k, row) + sp_kv_bytes(kv.v, row)));
}

sprout_status sprout_scheduler_create(const sprout_model *model, const sprout_scheduler_params *params, sprout_scheduler **out) {
    if (!out) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "NULL output pointer");
    *out = NULL;
    if (!model) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "NULL model");
    sprout_scheduler_params sp = {.struct_size = sizeof sp};
    if (params) memcpy(&sp, params, sp_versioned_bytes(params->struct_size, sizeof sp));
    sp_kv_types kv, draft_kv = {SP_KV_F16, SP_KV_F16};
    const sp_kv_ask ask = {sp.kv_type, sp.cache_type_k, sp.cache_type_v, sp.kv_type_set, sp.cache_type_k_set, sp.cache_type_v_set};
    sprout_status st = sp_kv_types_resolve(model, ask, &kv);
    if (st == SPROUT_OK && sp.draft_model) st = sp_kv_types_resolve(sp.draft_model, ask, &draft_kv);
    if (st == SPROUT_OK && sp.draft_model) st = sp_vocab_compatible(model, sp.draft_model);
    if (st != SPROUT_OK) return st;
    const int32_t n_ctx = sp.n_ctx > 0 ? sp.n_ctx : model->params.n_ctx;
    if (n_ctx < 2 || n_ctx > (1 << 24)) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "context length %d", n_ctx);
    const int32_t n_slots = sp.n_slots > 0 ? sp.n_slots : default_slots(model, n_ctx, kv);
    if (n_slots > 256) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "%d slots (at most 256)", n_slots);
    if ((int64_t)n_slots * n_ctx > (1 << 24))
        return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "%d slots of %d tokens is too large a cache", n_slots, n_ctx);
    int32_t n_batch = sp.n_batch > 0 ? sp.n_batch : 512;
    if (n_batch < n_slots) n_batch = n_slots; /* every generating slot gets its token each step */
    const int32_t n_threads = sp.n_threads > 0 ? sp.n_threads : model->params.n_threads;

    sprout_scheduler *s = calloc(1, sizeof *s);
    if (!s) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
    s->model = model;
    s->n_slots = n_slots;
    s->n_ctx = n_ctx;
    s->n_batch = n_batch;
    s->prefill_chunk = sp.prefill_chunk > 0 ? sp.prefill_chunk : 256;
    sp_prefill_budget_init(&s->prefill, sp.prefill_budget, s->prefill_chunk);
    s->n_queue = sp.n_queue > 0 ? sp.n_queue : sp.n_queue < 0 ? 0 : 64;
    s->stats.struct_size = sizeof s->stats;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->work, NULL);
    st = sp_context_init_kv(&s->ctx, model, n_slots * n_ctx, n_batch, n_slots, n_threads, kv);
    s->kinds_differ = st == SPROUT_OK && sp_context_kinds_differ(&s->ctx);
    s->slots = calloc((size_t)n_slots, sizeof *s->slots);
    s->logits = malloc((size_t)n_slots * (size_t)model->hp.n_vocab * sizeof *s->logits);
    s->logits_rows = n_slots;
    s->batch = malloc((size_t)n_batch * sizeof *s->batch);
    s->want = malloc((size_t)n_slots * sizeof *s->want);
    if (st == SPROUT_OK && (!s->slots || !s->logits || !s->batch || !s->want)) st = sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
    if (st == SPROUT_OK) st = sp_sched_assist_init(&s->assist, model, sp.draft_model, n_slots, n_ctx, n_batch, n_threads, draft_kv);
    for (int32_t i = 0; st == SPROUT_OK && i < n_slots; i++) {
        s->slots[i].pending = -1;
        s->slots[i].shift_keep = -1;
        s->slots[i].cached = malloc((size_t)n_ctx * sizeof(int32_t));
        if (!s->slots[i].cached) st = sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
        else st = sp_sampler_init(&s->slots[i].sampler, model->hp.n_vocab, 0);
    }
    if (st == SPROUT_OK && pthread_create(&s->engine, NULL, engine_main, s) != 0)
        st = sp_fail(SPROUT_ERR_INTERNAL, "cannot start the engine thread");
    if (st != SPROUT_OK) {
        sprout_scheduler_free(s);
        return st;
    }
    s->engine_started = true;
    char kv_label[16];
    sp_log(SPROUT_LOG_INFO, "scheduler: %d slots of %d tokens, %s KV cache, batches of %d, %d threads, %s kernels%s", n_slots, n_ctx,
           sp_kv_types_label(kv, kv_label, sizeof kv_label), n_batch, n_threads, sprout_kernels_name(), sp.draft_model ? ", a draft model" : "");
    *out = s;
    return SPROUT_OK;
}

void sprout_scheduler_free(sprout_scheduler *s) {
    if (!s) return;
    if (s->engine_started) {
        pthread_mutex_lock(&s->mu);
        s->stopping = true;
        pthread_cond_broadcast(&s->work);
        pthread_mutex_unlock(&s->mu);
        pthread_join(s->engine, NULL);
    }
    for (int32_t i = 0; s->slots && i < s->n_slots; i++) {
        free(s->slots[i].cached);
        sp_lora_set_free(&s->slots[i].lora);
        sp_pool_free(&s->slots[i].pool);
        sp_sampler_free(&s->slots[i].sampler);
    }
    free(s->slots);
    sp_sched_assist_free(&s->assist);
    free(s->want);
    free(s->logits);
    free(s->embd);
    free(s->batch);
    sp_context_free(&s->ctx);
    pthread_cond_destroy(&s->work);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

int32_t sprout_scheduler_n_slots(const sprout_scheduler *s) { return s ? s->n_slots : 0; }
int32_t sprout_scheduler_n_ctx(const sprout_scheduler *s) { return s ? s->n_ctx : 0; }

size_t sprout_scheduler_kv_bytes_per_token(const sprout_scheduler *s) { return s ? sp_kv_bytes_per_token(&s->ctx.kv) : 0; }

int32_t sprout_scheduler_max_embed_tokens(const sprout_scheduler *s) {
    if (!s) return 0;
    const sprout_model *m = s->model;
    int32_t limit = s->n_ctx;
    if (m->pos_embd.data && m->pos_embd.n_out < limit) limit = (int32_t)m->pos_embd.n_out;
    if (!m->hp.causal && s->n_batch < limit) limit = s->n_batch;
    return limit;
}

sprout_status sprout_scheduler_submit(sprout_scheduler *s, const sprout_request_params *params, sprout_request **out) {
    if (!out) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "NULL output pointer");
    *out = NULL;
    if (!s || !params || (!params->prompt && params->n_prompt)) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "NULL scheduler or prompt");
    sprout_request_params rp = {.struct_size = sizeof rp};
    memcpy(&rp, params, sp_versioned_bytes(params->struct_size, sizeof rp));
    /* refused now rather than after waiting in the queue; an embedding's
     * prompt may fill the context, nothing follows it */
    sprout_status st = rp.embed ? sp_prompt_check(s->model, (size_t)sprout_scheduler_max_embed_tokens(s), rp.prompt, rp.n_prompt)
                                : sp_seq_check(s->model, s->n_ctx, rp.prompt, rp.n_prompt, rp.config);
    if (st == SPROUT_OK && rp.embed) st = sp_pooling_resolve(s->model, rp.pooling, &rp.pooling);
    if (st != SPROUT_OK) return st;
    sprout_request *req = NULL;
    if ((st = request_new(s->model, &rp, &req)) != SPROUT_OK) return st;
    req->sched = s;
    req->t_submit = sp_now_ms();
    pthread_mutex_lock(&s->mu);
    const bool room = !s->stopping && s->queued < s->n_queue + (s->n_slots - s->busy);
    if (room) {
        if (s->queue_tail) s->queue_tail->next = req;
        else s->queue_head = req;
        s->queue_tail = req;
        s->queued++;
        pthread_cond_signal(&s->work);
    } else {
        s->stats.requests_rejected++;
    }
    pthread_mutex_unlock(&s->mu);
    if (!room) request_destroy(req);
    if (!room) return sp_fail(SPROUT_ERR_BUSY, "all %d slots are busy and %d requests are waiting", s->n_slots, s->n_queue);
    *out = req;
    return SPROUT_OK;
}

sprout_status sprout_scheduler_stats_get(const sprout_scheduler *s, sprout_scheduler_stats *out) {
    if (!s || !out) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "NULL scheduler or output");
    sprout_scheduler *m = (sprout_scheduler *)s; /* the mutex, not the state, changes */
    pthread_mutex_lock(&m->mu);
    sprout_scheduler_stats st = m->stats;
    st.n_slots = m->n_slots;
    st.busy_slots = m->busy;
    st.queued = m->queued;
    st.kv_cells = (int64_t)m->n_slots * m->n_ctx;
    if (m->busy == 0) st.kv_cells_used = 0; /* the last pass's count, before its requests ended */
    pthread_mutex_unlock(&m->mu);
    size_t n = sp_versioned_bytes(out->struct_size, sizeof st);
    memcpy(out, &st, n);
    out->struct_size = n;
    return SPROUT_OK;
}
