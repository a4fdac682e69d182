#include "pipeline/assist.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

/* llama.cpp's margins: vocabularies may differ by padding at the end;
 * the first ids (control tokens of some vocabularies) are not compared. */
enum { VOCAB_MAX_SIZE_DIFFERENCE = 128, VOCAB_CHECK_FROM = 5, DEFAULT_NGRAM = 3 };

int32_t sp_assist_ngram(const sprout_generation_config *cfg) { return cfg->max_ngram_size > 0 ? cfg->max_ngram_size : DEFAULT_NGRAM; }

sprout_status sp_vocab_compatible(const sprout_model *target, const sprout_model *draft) {
    const sprout_tokenizer *t = target->tokenizer, *d = draft->tokenizer;
    if (!t || !d) return sp_fail(SPROUT_ERR_UNSUPPORTED, "draft model: both models need a vocabulary");
    if (sprout_tokenizer_type(t) != sprout_tokenizer_type(d))
        return sp_fail(SPROUT_ERR_UNSUPPORTED, "draft model: another kind of vocabulary (%d, the model's %d)", (int)sprout_tokenizer_type(d),
                       (int)sprout_tokenizer_type(t));
    const int32_t nt = sprout_tokenizer_vocab_size(t), nd = sprout_tokenizer_vocab_size(d);
    if (abs(nt - nd) > VOCAB_MAX_SIZE_DIFFERENCE)
        return sp_fail(SPROUT_ERR_UNSUPPORTED, "draft model: %d tokens of vocabulary, the model %d (at most %d apart)", nd, nt,
                       VOCAB_MAX_SIZE_DIFFERENCE);
    if (sprout_tokenizer_adds_bos(t) != sprout_tokenizer_adds_bos(d) || sprout_tokenizer_adds_eos(t) != sprout_tokenizer_adds_eos(d) ||
        sprout_tokenizer_special(t, SPROUT_SPECIAL_BOS) != sprout_tokenizer_special(d, SPROUT_SPECIAL_BOS) ||
        sprout_tokenizer_special(t, SPROUT_SPECIAL_EOS) != sprout_tokenizer_special(d, SPROUT_SPECIAL_EOS))
        return sp_fail(SPROUT_ERR_UNSUPPORTED, "draft model: other BOS/EOS tokens or rules than the model's");
    for (int32_t id = VOCAB_CHECK_FROM; id < (nt < nd ? nt : nd); id++) {
        const char *a, *b;
        size_t na, nb;
        if (sprout_token_text(t, id, &a, &na) != SPROUT_OK || sprout_token_text(d, id, &b, &nb) != SPROUT_OK || na != nb ||
            memcmp(a, b, na) != 0)
            return sp_fail(SPROUT_ERR_UNSUPPORTED, "draft model: token %d is another text than the model's", id);
    }
    return SPROUT_OK;
}

sprout_status sprout_pipeline_set_draft(sprout_pipeline *p, sprout_pipeline *draft) {
    if (!p) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "NULL pipeline");
    if (draft == p) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "a pipeline cannot be its own draft");
    if (draft) {
        sprout_status st = sp_vocab_compatible(p->model, draft->model);
        if (st != SPROUT_OK) return st;
    }
    p->draft = draft;
    return SPROUT_OK;
}

sprout_status sp_assist_begin(sprout_pipeline *p, const sprout_generation_config *cfg, int32_t *cap) {
    *cap = 0;
    if (cfg->num_assistant_tokens <= 0 || (!cfg->prompt_lookup && !p->draft)) return SPROUT_OK;
    /* a verifying pass holds the pending token and the proposals */
    int32_t want = cfg->num_assistant_tokens < p->ctx.n_batch - 1 ? cfg->num_assistant_tokens : p->ctx.n_batch - 1;
    if (want > p->verify_cap) {
        const size_t n_vocab = (size_t)p->model->hp.n_vocab;
        float *rows = realloc(p->verify_logits, (size_t)(want + 1) * n_vocab * sizeof *rows);
        if (rows) p->verify_logits = rows;
        int32_t *proposal = rows ? realloc(p->proposal, (size_t)want * sizeof *proposal) : NULL;
        if (proposal) p->proposal = proposal;
        if (!rows || !proposal) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
        p->verify_cap = want;
    }
    if (cfg->prompt_lookup) {
        const int32_t ngram = sp_assist_ngram(cfg);
        if (ngram != p->lookup.max_ngram) {
            sp_lookup_free(&p->lookup);
            sprout_status st = sp_lookup_init(&p->lookup, ngram, p->n_ctx);
            if (st != SPROUT_OK) return st;
        }
        sp_lookup_reset(&p->lookup);
    }
    *cap = want;
    p->assist_budget = want;
    return SPROUT_OK;
}

int32_t sp_assist_next_budget(int32_t budget, int32_t cap, int32_t proposed, int32_t kept) {
    if (!proposed) return budget < 1 ? budget + 1 : budget; /* resting, or nothing was found to propose */
    if (!kept) return budget <= 1 ? 1 - SP_ASSIST_REST : 1; /* a lone proposal missed too: rest */
    const int64_t next = kept == proposed ? 2 * (int64_t)(budget < cap ? budget : cap) : kept + 1;
    return next < cap ? (int32_t)next : cap;
}

void sp_assist_done(sprout_pipeline *p, int32_t proposed, int32_t kept) {
    p->assist_budget = sp_assist_next_budget(p->assist_budget, p->verify_cap, proposed, kept);
}

/* The draft's best token and its probability. */
static int32_t draft_best(const float *logits, int32_t n_vocab, float *p) {
    int32_t best = 0;
    for (int32_t i = 1; i < n_vocab; i++)
        if (logits[i] > logits[best]) best = i;
    double sum = 0;
    for (int32_t i = 0; i < n_vocab; i++) sum += exp((double)logits[i] - logits[best]);
    *p = (float)(1.0 / sum);
    return best;
}

bool sp_draft_confident(const sprout_generation_config *cfg, const float *logits, int32_t n_vocab, int32_t n_vocab_target, int32_t *best) {
    float prob;
    *best = draft_best(logits, n_vocab, &prob);
    return *best < n_vocab_target && (cfg->assistant_confidence_threshold <= 0 || prob >= cfg->assistant_confidence_threshold);
}

/* The draft's greedy continuation of text[0, n): its cache first catches
 * up with the text (reusing what it holds of it), then each proposal goes
 * through it, while it stays confident. */
static sprout_status draft_propose(sprout_pipeline *d, const sprout_generation_config *cfg, int32_t n_vocab_target, const int32_t *text,
                                   int32_t n, int32_t max, int32_t *out, int32_t *n_out) {
    *n_out = 0;
    if (n + max > d->n_ctx) max = d->n_ctx - n;
    if (max <= 0) return SPROUT_OK;
    int32_t keep = 0;
    while (keep < d->n_cached && keep < n - 1 && d->cached[keep] == text[keep]) keep++;
    sp_kv_truncate(&d->ctx.kv, 0, keep);
    d->n_cached = keep;
    sprout_status st = sp_pipeline_feed(d, text, keep, n);
    const int32_t n_vocab = d->model->hp.n_vocab;
    for (int32_t k = 0; st == SPROUT_OK && k < max; k++) {
        int32_t best;
        if (!sp_draft_confident(cfg, d->logits, n_vocab, n_vocab_target, &best)) break;
        out[(*n_out)++] = best;
        if (k + 1 == max) break;
        sp_batch_token bt = {best, d->n_cached, 0, true, false, false, NULL};
        st = sp_forward(&d->ctx, &bt, 1, d->logits);
        if (st == SPROUT_OK) d->cached[d->n_cached++] = best;
    }
    return st;
}

sprout_status sp_assist_propose(sprout_pipeline *p, const sprout_generation_config *cfg, const int32_t *text, int32_t n, int32_t max,
                                int32_t *n_proposed) {
    *n_proposed = 0;
    if (max > p->assist_budget) max = p->assist_budget;
    if (max <= 0) return SPROUT_OK;
    sprout_status st = SPROUT_OK;
    if (cfg->prompt_lookup) *n_proposed = sp_lookup_propose(&p->lookup, text, n, max, p->proposal);
    else st = draft_propose(p->draft, cfg, p->model->hp.n_vocab, text, n, max, p->proposal, n_proposed);
    if (*n_proposed < cfg->min_assistant_tokens) *n_proposed = 0;
    return st;
}
