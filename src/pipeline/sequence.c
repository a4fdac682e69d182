/* The generation state machine shared by pipelines and the scheduler:
 * sample, record, stream, stop. Text reaches the streamer in whole UTF-8
 * characters and never includes text that may still become part of a stop
 * string. */
#include "pipeline/sequence.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/error.h"
#include "core/text_stream.h"
#include "gguf/gguf_resident.h"
#include "model/model.h"
#include "pipeline/result.h"
#include "runtime/kv_cache.h"
#include "tokenizer/tokenizer.h"

double sp_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}


/* --- stop strings ----------------------------------------------------------------------------- */

/* Where the earliest stop string starts in text[from..len), or -1. */
static int64_t find_stop(const sprout_generation_config *cfg, const char *text, size_t len, size_t from, size_t *stop_len) {
    int64_t best = -1;
    for (size_t i = 0; i < cfg->n_stop_strings; i++) {
        const char *s = cfg->stop_strings[i];
        size_t n = s ? strlen(s) : 0;
        if (!n || len < n) continue;
        size_t start = from > n ? from - n : 0; /* a match may begin in text already checked */
        const char *hit = memmem(text + start, len - start, s, n);
        if (hit && (best < 0 || hit - text < best)) {
            best = hit - text;
            *stop_len = n;
        }
    }
    return best;
}

/* Bytes at the end of text that begin some stop string (held back). */
static size_t stop_prefix_tail(const sprout_generation_config *cfg, const char *text, size_t len) {
    size_t hold = 0;
    for (size_t i = 0; i < cfg->n_stop_strings; i++) {
        const char *s = cfg->stop_strings[i];
        const size_t tail = s ? sp_marker_tail(text, len, s, strlen(s)) : 0;
        if (tail > hold) hold = tail;
    }
    return hold;
}

/* --- streaming ------------------------------------------------------------------------------------ */

/* Sends text[emitted..upto) to the streamer. */
static void emit(sp_seq *s, size_t upto) {
    if (upto <= s->emitted) return;
    if (s->streamer && s->stream == SPROUT_STREAM_RUNNING) {
        sprout_stream_status st = s->streamer(s->text.data + s->emitted, upto - s->emitted, s->user);
        if (st == SPROUT_STREAM_STOP || st == SPROUT_STREAM_CANCEL) s->stream = st;
    }
    s->emitted = upto;
}

/* New text from the detokenizer: check for stop strings, stream what is
 * safe. Returns false when a stop string ended generation. */
static bool add_text(sp_seq *s, const char *piece, size_t n, bool final) {
    const size_t before = s->text.len;
    if (n && !sp_buf_put(&s->text, piece, n)) {
        s->oom = true;
        return false;
    }
    size_t stop_len = 0;
    int64_t at = s->cfg->n_stop_strings ? find_stop(s->cfg, s->text.data, s->text.len, before, &stop_len) : -1;
    if (at >= 0) {
        s->final_len = (size_t)at + (s->cfg->include_stop_string ? stop_len : 0);
        s->stopped_by_string = true;
        emit(s, s->final_len);
        return false;
    }
    size_t hold = final ? 0 : stop_prefix_tail(s->cfg, s->text.data, s->text.len);
    emit(s, s->text.len - hold);
    return true;
}

/* --- the sequence --------------------------------------------------------------------------------- */

static sprout_result *new_result(const int32_t *prompt, size_t n_prompt, int32_t max_tokens, int32_t top_k) {
    sprout_result *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    const size_t n_out = (size_t)(max_tokens > 0 ? max_tokens : 1);
    r->prompt_tokens = malloc((n_prompt ? n_prompt : 1) * sizeof(int32_t));
    r->tokens = malloc(n_out * sizeof(int32_t));
    r->logprob = top_k >= 0 ? malloc(n_out * sizeof(float)) : NULL;
    r->top_k = top_k;
    if (top_k > 0) {
        r->top_ids = malloc(n_out * (size_t)top_k * sizeof(int32_t));
        r->top_logprobs = malloc(n_out * (size_t)top_k * sizeof(float));
    }
    if (!r->prompt_tokens || !r->tokens || (top_k >= 0 && !r->logprob) || (top_k > 0 && (!r->top_ids || !r->top_logprobs))) {
        sprout_result_free(r);
        return NULL;
    }
    if (n_prompt) memcpy(r->prompt_tokens, prompt, n_prompt * sizeof(int32_t));
    r->n_prompt_tokens = n_prompt;
    return r;
}

sprout_status sp_prompt_check(const sprout_model *model, size_t max_tokens, const int32_t *prompt, size_t n_prompt) {
    if (n_prompt == 0) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "the prompt is empty (no tokens, and the model adds no BOS)");
    if (n_prompt > max_tokens) return sp_fail(SPROUT_ERR_OUT_OF_RANGE, "the prompt has %zu tokens but at most %zu fit", n_prompt, max_tokens);
    for (size_t i = 0; i < n_prompt; i++)
        if (prompt[i] < 0 || prompt[i] >= model->hp.n_vocab)
            return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "prompt token %zu: id %d is outside the vocabulary (0..%d)", i, prompt[i],
                           model->hp.n_vocab - 1);
    /* a model file truncated since it was loaded would raise SIGBUS in the
     * forward pass: the request is refused instead */
    return sp_gguf_check_size(model->gguf);
}

static bool vocab_pieces(sp_sampler *smp, const sprout_tokenizer *tok, int32_t n_vocab);

/* llama.cpp's sequence breakers for DRY (common_params_sampling). */
static const char *const default_breakers[] = {"\n", ":", "\"", "*"};

/* The samplers' settings that have no meaning (the server's 400, the API's
 * INVALID_ARGUMENT); the field leads the message. */
static sprout_status sampling_check(const sprout_generation_config *cfg) {
    uint8_t order[SP_MAX_STAGES];
    char why[160];
    if (!sp_sampler_parse_order(cfg->samplers, order, why, sizeof why))
        return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "samplers: %s", why);
    if (cfg->mirostat < 0 || cfg->mirostat > 2)
        return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "mirostat: %d is not 0, 1 or 2", cfg->mirostat);
    if (cfg->mirostat && (!isfinite(cfg->mirostat_tau) || !isfinite(cfg->mirostat_eta)))
        return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "mirostat_tau, mirostat_eta: must be finite");
    if (!isfinite(cfg->dry_multiplier) || cfg->dry_multiplier < 0)
        return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "dry_multiplier: %g is not a number from 0", (double)cfg->dry_multiplier);
    if (cfg->dry_multiplier > 0 && (!isfinite(cfg->dry_base) || cfg->dry_allowed_length < 0 || cfg->dry_penalty_last_n < -1))
        return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "dry_base, dry_allowed_length, dry_penalty_last_n: a finite base, a length "
                                                    "from 0, a window from -1");
    /* assisted generation: an n-gram index walks max_ngram_size entries a token, a pass verifies the proposals */
    if (cfg->num_assistant_tokens < 0 || cfg->num_assistant_tokens > 1024)
        return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "num_assistant_tokens: %d is not 0 to 1024", cfg->num_assistant_tokens);
    if (cfg->max_ngram_size < 0 || cfg->max_ngram_size > 64)
        return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "max_ngram_size: %d is not 0 to 64", cfg->max_ngram_size);
    if (cfg->min_assistant_tokens < 0 || !(cfg->assistant_confidence_threshold >= 0.f && cfg->assistant_confidence_threshold <= 1.f))
        return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "min_assistant_tokens, assistant_confidence_threshold: from 0, and 0 to 1");
    for (size_t i = 0; cfg->dry_sequence_breakers && i < cfg->n_dry_sequence_breakers; i++)
        if (!cfg->dry_sequence_breakers[i] || !*cfg->dry_sequence_breakers[i])
            return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "dry_sequence_breakers[%zu]: empty", i);
    return SPROUT_OK;
}

sprout_status sp_seq_check(const sprout_model *model, int32_t n_ctx, const int32_t *prompt, size_t n_prompt,
                           const sprout_generation_config *cfg) {
    if (!model->output.data)
        return sp_fail(SPROUT_ERR_UNSUPPORTED, "this %s model has no output head: it gives embeddings, not text", model->hp.arch_name);
    if (n_prompt >= (size_t)n_ctx && n_prompt > 0)
        return sp_fail(SPROUT_ERR_OUT_OF_RANGE, "the prompt has %zu tokens but the context holds %d (at least one must stay free)",
                       n_prompt, n_ctx);
    sprout_status st = sp_prompt_check(model, (size_t)n_ctx, prompt, n_prompt);
    if (st != SPROUT_OK) return st;
    if (cfg && cfg->max_new_tokens < 0)
        return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "max_new_tokens is negative (%d)", cfg->max_new_tokens);
    if (cfg && (st = sampling_check(cfg)) != SPROUT_OK) return st;
    if (cfg && cfg->context_shift && cfg->n_keep < -1) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "n_keep: %d is not -1 or more", cfg->n_keep);
    if (cfg && cfg->context_shift && (st = sp_kv_shift_check(model)) != SPROUT_OK) return st;
    return cfg ? sp_constraint_check(cfg) : SPROUT_OK;
}

int32_t sp_seq_n_keep(const sprout_model *model, const sprout_generation_config *cfg, size_t n_prompt) {
    if (cfg->n_keep < 0 || (size_t)cfg->n_keep >= n_prompt) return (int32_t)n_prompt;
    const bool bos = model->tokenizer && sprout_tokenizer_adds_bos(model->tokenizer);
    return cfg->n_keep + bos;
}

sprout_status sp_seq_shift(sp_kv_cache *kv, const sprout_model *model, int32_t seq, int32_t *cached, int32_t *n_cached, int32_t n_keep,
                           int32_t *dropped) {
    const int32_t discard = (*n_cached - n_keep) / 2;
    if (n_keep < 0 || discard <= 0)
        return sp_fail(SPROUT_ERR_OUT_OF_RANGE, "context shift: keeping %d of the context's %d tokens leaves none to drop", n_keep,
                       *n_cached);
    sprout_status st = sp_kv_shift(kv, model, seq, n_keep, discard);
    if (st != SPROUT_OK) return st;
    memmove(cached + n_keep, cached + n_keep + discard, (size_t)(*n_cached - n_keep - discard) * sizeof *cached);
    *n_cached -= discard;
    *dropped = discard;
    return SPROUT_OK;
}

sprout_status sp_seq_begin(sp_seq *s, const sprout_model *model, sp_sampler *sampler, int32_t n_ctx, const int32_t *prompt,
                           size_t n_prompt, const char *prompt_text, size_t prompt_len, double t_start, double tokenize_ms,
                           const sprout_generation_config *cfg, sprout_streamer streamer, void *user) {
    memset(s, 0, sizeof *s);
    sprout_status st = sp_seq_check(model, n_ctx, prompt, n_prompt, cfg);
    if (st == SPROUT_OK) st = sp_constraint_begin(&s->constraint, model, cfg);
    if (st != SPROUT_OK) return st;
    /* logprobs: -1 records none; 0..64 the chosen token's and that many best */
    const int32_t top_k = cfg->logprobs > 0 ? (cfg->logprobs < 64 ? cfg->logprobs : 64) : -1;
    const sprout_tokenizer *tok = model->tokenizer;
    s->model = model;
    s->cfg = cfg;
    s->streamer = streamer;
    s->user = user;
    s->sampler = sampler;
    s->t_start = t_start;
    s->tokenize_ms = tokenize_ms;
    s->result = new_result(prompt, n_prompt, cfg->max_new_tokens, top_k);
    if (!s->result || (tok && sprout_detokenizer_create(tok, SPROUT_DETOKENIZE_CONTINUATION, &s->detok) != SPROUT_OK)) {
        sprout_result_free(s->result);
        s->result = NULL;
        sp_constraint_free(&s->constraint);
        return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    s->sampling = (sp_sampling){.temperature = cfg->temperature,
                                .top_k = cfg->top_k,
                                .top_p = cfg->top_p,
                                .min_p = cfg->min_p,
                                .repetition_penalty = cfg->repetition_penalty,
                                .repeat_last_n = cfg->repeat_last_n,
                                .presence_penalty = cfg->presence_penalty,
                                .frequency_penalty = cfg->frequency_penalty,
                                .bias = cfg->logit_bias,
                                .n_bias = cfg->logit_bias ? cfg->n_logit_bias : 0,
                                .typical_p = cfg->typical_p,
                                .top_n_sigma = cfg->top_n_sigma,
                                .xtc_probability = cfg->xtc_probability,
                                .xtc_threshold = cfg->xtc_threshold,
                                .mirostat = cfg->mirostat,
                                .mirostat_tau = cfg->mirostat_tau,
                                .mirostat_eta = cfg->mirostat_eta,
                                .dry_multiplier = cfg->dry_multiplier,
                                .dry_base = cfg->dry_base,
                                .dry_allowed_length = cfg->dry_allowed_length,
                                .dry_penalty_last_n = cfg->dry_penalty_last_n,
                                .dry_breakers = cfg->dry_sequence_breakers ? cfg->dry_sequence_breakers : default_breakers,
                                .n_dry_breakers = cfg->dry_sequence_breakers ? cfg->n_dry_sequence_breakers
                                                                             : sizeof default_breakers / sizeof *default_breakers};
    char why[160];
    sp_sampler_parse_order(cfg->samplers, s->sampling.order, why, sizeof why); /* sp_seq_check saw it parse */
    /* DRY reads the tokens' text: the vocabulary's pieces */
    if (cfg->dry_multiplier != 0.f && cfg->dry_base >= 1.f && cfg->dry_penalty_last_n != 0 && cfg->mirostat == 0 &&
        (!vocab_pieces(sampler, tok, model->hp.n_vocab) ||
         !sp_sampler_dry_prepare(sampler, s->sampling.dry_breakers, s->sampling.n_dry_breakers))) {
        sprout_detokenizer_free(s->detok);
        s->detok = NULL;
        sprout_result_free(s->result);
        s->result = NULL;
        sp_constraint_free(&s->constraint);
        return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    /* end-of-generation tokens, masked under ignore_eos and before min_new_tokens: the
     * vocabulary's own list, which lives as long as the model */
    s->eog = sp_tokenizer_eog(tok, &s->n_eog);
    sp_sampler_reset(sampler, &s->sampling, cfg->seed);
    if (cfg->echo && prompt_text) {
        s->oom = !sp_buf_put(&s->text, prompt_text, prompt_len);
        emit(s, s->text.len);
    }
    return SPROUT_OK;
}

void sp_seq_prefill_started(sp_seq *s, int32_t n_prefill) {
    s->n_prefill = n_prefill;
    s->t_prefill = sp_now_ms();
}

void sp_seq_prefill_done(sp_seq *s) { s->t_prefilled = s->t_last = sp_now_ms(); }

static bool in_list(const int32_t *list, size_t n, int32_t id) {
    for (size_t i = 0; i < n; i++)
        if (list[i] == id) return true;
    return false;
}

/* Whether the mask allows a token not in `except` (n_vocab ids). */
static bool allows_other_than(const uint64_t *allowed, const int32_t *except, size_t n_except, int32_t n_vocab) {
    for (int32_t w = 0; w < (n_vocab + 63) / 64; w++) {
        uint64_t bits = allowed[w];
        for (size_t i = 0; i < n_except; i++)
            if (except[i] / 64 == w) bits &= ~(1ull << (except[i] % 64));
        if (bits) return true;
    }
    return false;
}

/* The vocabulary's pieces, once per sampler (DRY reads the tokens' text).
 * False when out of memory. */
static bool vocab_pieces(sp_sampler *smp, const sprout_tokenizer *tok, int32_t n_vocab) {
    if (smp->piece) return true;
    smp->piece = malloc((size_t)n_vocab * sizeof *smp->piece);
    smp->piece_len = malloc((size_t)n_vocab * sizeof *smp->piece_len);
    if (!smp->piece || !smp->piece_len) {
        free(smp->piece), free(smp->piece_len);
        smp->piece = NULL, smp->piece_len = NULL;
        return false;
    }
    for (int32_t id = 0; id < n_vocab; id++) {
        const char *text = "";
        size_t len = 0;
        if (!tok || sprout_token_to_piece(tok, id, false, &text, &len) != SPROUT_OK) len = 0;
        smp->piece[id] = text;
        smp->piece_len[id] = (uint32_t)len;
    }
    return true;
}

bool sp_seq_next(sp_seq *s, const float *logits, const int32_t *history, size_t n_history, bool room, int32_t *feed) {
    sprout_result *r = s->result;
    const sprout_generation_config *cfg = s->cfg;
    const sprout_tokenizer *tok = s->model->tokenizer;
    if (sp_seq_finished(s)) return false;
    const int32_t i = (int32_t)r->n_tokens;
    if (i >= cfg->max_new_tokens) {
        s->finish = SPROUT_FINISH_LENGTH;
        return false;
    }
    const bool mask_eog = cfg->ignore_eos || i < cfg->min_new_tokens;
    const int32_t *banned = s->eog;
    size_t n_banned = mask_eog ? s->n_eog : 0;
    const uint64_t *allowed = NULL;
    if (sp_constraint_active(&s->constraint) && !sp_constraint_waiting(&s->constraint)) {
        sprout_status status;
        allowed = sp_constraint_mask(&s->constraint, &status);
        if (status == SPROUT_ERR_OUT_OF_MEMORY) s->oom = true;
        else if (status != SPROUT_OK) {
            s->error = status;
            snprintf(s->error_text, sizeof s->error_text, "%s", sprout_last_error());
        }
        if (status != SPROUT_OK) return false;
        if (!allowed || (mask_eog && !allows_other_than(allowed, s->eog, s->n_eog, s->model->hp.n_vocab))) {
            s->finish = SPROUT_FINISH_LENGTH; /* no token can continue the output */
            return false;
        }
    }
    const int32_t next = sp_sample_allowed(s->sampler, logits, &s->sampling, history, n_history, banned, n_banned, allowed);
    const double t_now = sp_now_ms();
    if (i == 0) s->t_first = t_now;
    else {
        s->tpot_sum += t_now - s->t_last;
        s->tpot_sq += (t_now - s->t_last) * (t_now - s->t_last);
    }
    s->t_last = t_now;
    if (r->logprob)
        r->logprob[i] = sp_logprob_top(logits, s->model->hp.n_vocab, next, r->top_k > 0 ? r->top_k : 0,
                                       r->top_ids ? r->top_ids + (size_t)i * (size_t)r->top_k : NULL,
                                       r->top_logprobs ? r->top_logprobs + (size_t)i * (size_t)r->top_k : NULL);
    if (!cfg->ignore_eos && tok && sprout_tokenizer_is_eog(tok, next)) {
        s->finish = SPROUT_FINISH_EOS;
        return false;
    }
    if (in_list(cfg->stop_token_ids, cfg->n_stop_token_ids, next)) {
        s->finish = SPROUT_FINISH_STOP_TOKEN;
        return false;
    }
    if (s->on_token)
        s->on_token(s->token_ctx, next, r->logprob ? r->logprob[i] : 0.f, r->top_ids ? r->top_ids + (size_t)i * (size_t)r->top_k : NULL,
                    r->top_logprobs ? r->top_logprobs + (size_t)i * (size_t)r->top_k : NULL, r->top_k > 0 ? r->top_k : 0);
    r->tokens[r->n_tokens++] = next;
    if (sp_constraint_active(&s->constraint)) {
        const char *text = "";
        size_t len = 0;
        if (tok && sprout_token_to_piece(tok, next, false, &text, &len) != SPROUT_OK) len = 0;
        sp_constraint_accept(&s->constraint, text, len);
        if (s->constraint.out_of_memory) s->oom = true;
        else if (s->constraint.gave_up) s->finish = SPROUT_FINISH_LENGTH; /* cut short, as when no token may follow */
        else if (sp_constraint_must_end(&s->constraint)) s->finish = SPROUT_FINISH_EOS; /* the grammar is complete: nothing may follow */
    }
    if (s->detok) {
        const char *piece;
        size_t n;
        if (sprout_detokenizer_push(s->detok, next, &piece, &n) != SPROUT_OK) s->oom = true; /* its only failure here */
        else if (!add_text(s, piece, n, false) && !s->oom) s->finish = SPROUT_FINISH_STOP_STRING;
    }
    if (s->oom) return false;
    if (s->stream == SPROUT_STREAM_CANCEL) {
        s->finish = SPROUT_FINISH_CANCELLED;
        return false;
    }
    if (s->stream == SPROUT_STREAM_STOP) s->finish = SPROUT_FINISH_STOPPED;
    if (s->finish == SPROUT_FINISH_NONE && r->n_tokens >= (size_t)cfg->max_new_tokens) s->finish = SPROUT_FINISH_LENGTH;
    /* a token that ends the sequence is not fed back: nothing would read its pass */
    if (sp_seq_finished(s)) return false;
    if (!room) { /* no room to feed it: the context is full */
        if (s->finish == SPROUT_FINISH_NONE) s->finish = SPROUT_FINISH_LENGTH;
        return false;
    }
    *feed = next;
    return true;
}

bool sp_seq_verify(sp_seq *s, const float *rows, size_t n_vocab, int32_t pending, const int32_t *proposal, int32_t k,
                   int32_t *history, int32_t *n_history, int32_t n_ctx, int32_t *next) {
    s->n_passes++;
    s->n_draft += k;
    history[(*n_history)++] = pending;
    if (sp_seq_finished(s)) return false; /* a token fed only to complete the cache */
    for (int32_t i = 0;; i++) {
        const bool more = sp_seq_next(s, rows + (size_t)i * n_vocab, history, (size_t)*n_history, *n_history < n_ctx, next);
        if (!more || i == k || *next != proposal[i]) return more;
        /* the proposal was the choice: its row is computed already */
        s->n_accepted++;
        history[(*n_history)++] = *next;
    }
}

sprout_status sp_seq_end(sp_seq *s, sprout_status st, sprout_result **out) {
    sprout_result *r = s->result;
    if (s->finish == SPROUT_FINISH_NONE) s->finish = SPROUT_FINISH_LENGTH;
    if (st == SPROUT_OK && !s->oom && s->detok && s->finish != SPROUT_FINISH_CANCELLED && !s->stopped_by_string) {
        /* the held-back tail, and any unfinished character */
        const char *piece;
        size_t n;
        sprout_detokenizer_flush(s->detok, &piece, &n);
        add_text(s, piece, n, true);
        if (s->stopped_by_string) s->finish = SPROUT_FINISH_STOP_STRING;
    }
    sprout_detokenizer_free(s->detok);
    s->detok = NULL;
    /* a stop string inside structured output leaves it unfinished: what
     * there is, as when the length runs out */
    if (s->finish == SPROUT_FINISH_STOP_STRING && sp_constraint_active(&s->constraint) && !sp_constraint_waiting(&s->constraint) &&
        !sp_grammar_can_end(s->constraint.state))
        s->finish = SPROUT_FINISH_LENGTH;
    sp_constraint_free(&s->constraint);
    if (st == SPROUT_OK && s->oom) st = sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
    if (st == SPROUT_OK && s->error != SPROUT_OK) st = sp_fail(s->error, "%s", s->error_text);
    if (st != SPROUT_OK) {
        free(s->text.data);
        sprout_result_free(r);
        s->result = NULL;
        return st;
    }
    const size_t final_len = s->stopped_by_string ? s->final_len : s->text.len;
    r->text = s->text.data ? s->text.data : calloc(1, 1);
    r->text_len = r->text ? final_len : 0;
    if (r->text) r->text[r->text_len] = 0;
    r->finish = s->finish;

    const double t_end = sp_now_ms();
    sprout_perf_metrics *m = &r->metrics;
    m->struct_size = sizeof *m;
    m->load_ms = s->model->load_ms;
    m->tokenize_ms = s->tokenize_ms;
    m->n_prompt_tokens = (int32_t)r->n_prompt_tokens;
    m->n_prefill_tokens = s->n_prefill;
    m->n_generated_tokens = (int32_t)r->n_tokens;
    m->ttft_ms = s->t_first > 0 ? s->t_first - s->t_start : 0;
    const double n_tpot = r->n_tokens > 1 ? (double)r->n_tokens - 1 : 0;
    m->tpot_mean_ms = n_tpot > 0 ? s->tpot_sum / n_tpot : 0;
    m->tpot_std_ms = n_tpot > 0 ? sqrt(fmax(0, s->tpot_sq / n_tpot - m->tpot_mean_ms * m->tpot_mean_ms)) : 0;
    m->prefill_tokens_per_s =
        s->t_prefilled > s->t_prefill && s->n_prefill ? s->n_prefill / ((s->t_prefilled - s->t_prefill) / 1e3) : 0;
    m->decode_tokens_per_s = s->tpot_sum > 0 ? n_tpot / (s->tpot_sum / 1e3) : 0;
    m->total_ms = t_end - s->t_start;
    m->n_draft_tokens = s->n_draft;
    m->n_accepted_tokens = s->n_accepted;
    m->n_decode_passes = s->n_passes;
    s->result = NULL;
    *out = r;
    return SPROUT_OK;
}
