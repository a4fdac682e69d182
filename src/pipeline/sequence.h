/* One generation as a state machine, independent of how its forward passes
 * are run: a pipeline drives one at a time, the scheduler drives many in
 * one batch. The caller prefills the prompt, then repeatedly hands the
 * logits of the last fed token to sp_seq_next(), which samples, records,
 * streams and checks every stop condition, and says which token to feed
 * next. sp_seq_end() turns it into a sprout_result. */
#ifndef SPROUT_PIPELINE_SEQUENCE_H
#define SPROUT_PIPELINE_SEQUENCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "pipeline/constraint.h"
#include "runtime/kv_cache.h"
#include "sampler/sampler.h"
#include "sprout.h"

typedef struct sp_seq {
    const sprout_model *model;
    const sprout_generation_config *cfg; /* must outlive the sequence */
    sprout_streamer streamer;
    void *user;
    /* each chosen token, before its text (set after sp_seq_begin; may be NULL) */
    void (*on_token)(void *ctx, int32_t id, float logprob, const int32_t *top_ids, const float *top_logprobs, int32_t n_top);
    void *token_ctx;
    sp_sampler *sampler;
    sp_sampling sampling;
    sprout_detokenizer *detok;
    sprout_result *result;
    const int32_t *eog; /* end-of-generation ids (the vocabulary's) */
    size_t n_eog;
    sp_buf text;
    size_t emitted;   /* bytes of text already given to the streamer */
    size_t final_len; /* text kept after a stop string */
    bool stopped_by_string, oom;
    sprout_status error; /* another failure that ends the sequence (a grammar's mask past its budget) */
    char error_text[256]; /* ... its message, said again by sp_seq_end */
    sprout_stream_status stream;
    sprout_finish_reason finish;
    int32_t n_prefill;      /* prompt tokens computed (the rest were cached) */
    sp_constraint constraint; /* a grammar, a JSON schema or JSON mode: the output read so far */
    int32_t n_draft, n_accepted, n_passes; /* assisted generation's counts (the metrics') */
    double t_start, t_prefill, t_prefilled, t_first, t_last, tpot_sum, tpot_sq, tokenize_ms;
} sp_seq;

/* A prompt of 1..max_tokens ids, all in the vocabulary. */
sprout_status sp_prompt_check(const sprout_model *model, size_t max_tokens, const int32_t *prompt, size_t n_prompt);

/* What sp_seq_begin refuses: an empty prompt, one that fills the context,
 * ids outside the vocabulary, a negative max_new_tokens (cfg may be NULL). */
sprout_status sp_seq_check(const sprout_model *model, int32_t n_ctx, const int32_t *prompt, size_t n_prompt,
                           const sprout_generation_config *cfg);

/* Context shift's kept tokens: llama.cpp's rule, the prompt's first
 * cfg->n_keep and its BOS (the vocabulary adds one), or the whole prompt
 * (n_keep -1, or as long as the prompt). */
int32_t sp_seq_n_keep(const sprout_model *model, const sprout_generation_config *cfg, size_t n_prompt);

/* A context shift of sequence seq of kv, whose tokens are cached[0, *n_cached):
 * keeps n_keep, drops half of the rest (llama.cpp's n_discard, counted in
 * *dropped) from the cache and the list. SPROUT_ERR_OUT_OF_RANGE when
 * nothing would go. */
sprout_status sp_seq_shift(sp_kv_cache *kv, const sprout_model *model, int32_t seq, int32_t *cached, int32_t *n_cached, int32_t n_keep,
                           int32_t *dropped);

/* Checks the prompt against the vocabulary and the context, allocates the
 * result, seeds the sampler and streams the echo. t_start: when the call
 * began (tokenizing included). */
sprout_status sp_seq_begin(sp_seq *s, const sprout_model *model, sp_sampler *sampler, int32_t n_ctx, const int32_t *prompt,
                           size_t n_prompt, const char *prompt_text, size_t prompt_len, double t_start, double tokenize_ms,
                           const sprout_generation_config *cfg, sprout_streamer streamer, void *user);

/* Marks the prefill of n_prefill prompt tokens as started / finished. */
void sp_seq_prefill_started(sp_seq *s, int32_t n_prefill);
void sp_seq_prefill_done(sp_seq *s);

/* Given the logits after the last fed token and the tokens the sequence's
 * cache holds (what the penalties look at): samples the next token. Returns
 * true with *feed set when that token must go through the model (also when
 * generation has just ended by a streamer STOP or a stop string: the cache
 * then holds the whole reply); `room` says whether the context has space
 * for it. sp_seq_finished() tells whether to call again. */
bool sp_seq_next(sp_seq *s, const float *logits, const int32_t *history, size_t n_history, bool room, int32_t *feed);
static inline bool sp_seq_finished(const sp_seq *s) { return s->finish != SPROUT_FINISH_NONE || s->oom || s->error != SPROUT_OK; }

/* A decoding pass's verification, shared by the pipeline and the
 * scheduler: the pass fed `pending` and then proposal[0, k), with logits
 * rows (n_vocab floats each) for all k + 1. The pending token joins the
 * history; then each row is sampled as plain decoding would sample it, and
 * a proposal is kept (joining the history: its row is computed) only while
 * it is the token sampled, so the output is plain decoding's. Counts the
 * pass, the proposals and those kept. Returns whether to go on, with the
 * next token to feed in *next (false: the sequence finished). The caller
 * drops the cache cells of the proposals not kept (those past *n_history).
 * history has room for n_ctx tokens. */
bool sp_seq_verify(sp_seq *s, const float *rows, size_t n_vocab, int32_t pending, const int32_t *proposal, int32_t k,
                   int32_t *history, int32_t *n_history, int32_t n_ctx, int32_t *next);


/* Ends the sequence: a status other than OK (a failed forward pass) frees
 * everything and is returned; otherwise the result goes to *out. */
sprout_status sp_seq_end(sp_seq *s, sprout_status st, sprout_result **out);

double sp_now_ms(void);

#endif
