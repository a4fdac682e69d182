/* The scheduler's proposals (scheduler_assist.h): prompt lookup per slot,
 * and a draft model whose passes serve all speculating slots at once. */
#include "pipeline/scheduler_assist.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "model/model.h"
#include "pipeline/assist.h"
#include "runtime/forward.h"

sprout_status sp_sched_assist_init(sp_sched_assist *a, const sprout_model *target, const sprout_model *draft, int32_t n_slots,
                                   int32_t n_ctx, int32_t n_batch, int n_threads, sp_kv_types kv) {
    memset(a, 0, sizeof *a);
    a->n_slots = n_slots;
    a->n_ctx = n_ctx;
    a->n_batch = n_batch;
    a->slots = calloc((size_t)n_slots, sizeof *a->slots);
    if (!a->slots) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
    for (int32_t i = 0; i < n_slots; i++)
        if (!(a->slots[i].proposal = malloc((size_t)n_batch * sizeof(int32_t)))) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
    if (!draft) return SPROUT_OK;
    sprout_status st = sp_vocab_compatible(target, draft);
    if (st != SPROUT_OK) return st;
    /* a draft with learned positions proposes only as far as they go */
    a->draft_ctx = n_ctx;
    if (draft->pos_embd.data && (int64_t)draft->pos_embd.n_out < a->draft_ctx) a->draft_ctx = (int32_t)draft->pos_embd.n_out;
    if ((st = sp_context_init_kv(&a->dctx, draft, n_slots * n_ctx, n_batch, n_slots, n_threads, kv)) != SPROUT_OK) return st;
    a->dctx_ready = true;
    a->draft = draft;
    const size_t n_vocab = (size_t)draft->hp.n_vocab;
    a->batch = malloc((size_t)n_batch * sizeof *a->batch);
    a->rows = malloc((size_t)n_batch * n_vocab * sizeof *a->rows);
    a->last = malloc((size_t)n_slots * n_vocab * sizeof *a->last);
    if (!a->batch || !a->rows || !a->last) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
    for (int32_t i = 0; i < n_slots; i++)
        if (!(a->slots[i].dcached = malloc((size_t)n_ctx * sizeof(int32_t)))) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
    return SPROUT_OK;
}

void sp_sched_assist_free(sp_sched_assist *a) {
    for (int32_t i = 0; a->slots && i < a->n_slots; i++) {
        sp_lookup_free(&a->slots[i].lookup);
        free(a->slots[i].proposal);
        free(a->slots[i].dcached);
    }
    free(a->slots);
    free(a->batch);
    free(a->rows);
    free(a->last);
    if (a->dctx_ready) sp_context_free(&a->dctx);
    memset(a, 0, sizeof *a);
}

void sp_sched_assist_begin(sp_sched_assist *a, int32_t slot) {
    a->slots[slot].k = 0;
    a->slots[slot].budget = INT32_MAX; /* the config's number, until a pass says otherwise */
    sp_lookup_reset(&a->slots[slot].lookup);
}

bool sp_sched_assist_wanted(const sp_sched_assist *a, const sprout_generation_config *cfg) {
    return cfg->num_assistant_tokens > 0 && (cfg->prompt_lookup || a->draft);
}

/* One draft pass over a->batch[0, n): each slot's row of logits is kept
 * and its tokens join its cached ones. On failure the slots of the batch
 * drop what the pass appended and stop proposing. */
static bool draft_pass(sp_sched_assist *a, int32_t n) {
    const size_t n_vocab = (size_t)a->draft->hp.n_vocab;
    if (sp_forward(&a->dctx, a->batch, n, a->rows) != SPROUT_OK) {
        for (int32_t t = 0; t < n; t++) {
            sp_slot_assist *sa = &a->slots[a->batch[t].seq];
            sp_kv_truncate(&a->dctx.kv, a->batch[t].seq, sa->n_dcached);
            sa->proposing = false;
        }
        return false;
    }
    for (int32_t t = 0, row = 0; t < n; t++) {
        sp_slot_assist *sa = &a->slots[a->batch[t].seq];
        sa->dcached[sa->n_dcached++] = a->batch[t].token;
        if (a->batch[t].logits) memcpy(a->last + (size_t)a->batch[t].seq * n_vocab, a->rows + (size_t)row++ * n_vocab, n_vocab * sizeof *a->rows);
    }
    return true;
}

/* Every proposing slot's draft cache catches up with its text (reusing
 * the common prefix), all slots' tokens sharing passes of n_batch. */
static void draft_catch_up(sp_sched_assist *a) {
    for (;;) {
        int32_t n = 0;
        for (int32_t i = 0; i < a->n_slots && n < a->n_batch; i++) {
            const sp_slot_assist *sa = &a->slots[i];
            if (!sa->proposing) continue;
            for (int32_t at = sa->n_dcached; at < sa->n_text && n < a->n_batch; at++)
                a->batch[n++] = (sp_batch_token){sa->text[at], at, i, at == sa->n_text - 1, false, sa->prompt_path, NULL};
        }
        if (n == 0) return;
        draft_pass(a, n); /* a failure stops its slots; the others go on */
    }
}

/* The greedy continuations: each round proposes one token for every slot
 * still proposing and feeds those that need a next one in one pass. */
static void draft_greedy(sp_sched_assist *a, int32_t n_vocab_target) {
    const int32_t n_vocab = a->draft->hp.n_vocab;
    for (;;) {
        int32_t n = 0;
        for (int32_t i = 0; i < a->n_slots; i++) {
            sp_slot_assist *sa = &a->slots[i];
            if (!sa->proposing) continue;
            int32_t best;
            if (!sp_draft_confident(sa->cfg, a->last + (size_t)i * (size_t)n_vocab, n_vocab, n_vocab_target, &best)) {
                sa->proposing = false;
                continue;
            }
            sa->proposal[sa->k++] = best;
            if (sa->k == sa->max) sa->proposing = false; /* the last one needs no pass */
            else a->batch[n++] = (sp_batch_token){best, sa->n_dcached, i, true, false, false, NULL};
        }
        if (n == 0) return;
        draft_pass(a, n); /* a failure stops its slots with what they proposed */
    }
}

static void draft_propose(sp_sched_assist *a, int32_t n_vocab_target) {
    for (int32_t i = 0; i < a->n_slots; i++) {
        sp_slot_assist *sa = &a->slots[i];
        if (!sa->proposing) continue;
        if (sa->n_text + sa->max > a->draft_ctx) sa->max = a->draft_ctx - sa->n_text;
        if (sa->max <= 0) {
            sa->proposing = false;
            continue;
        }
        /* the last token always runs: its logits start the proposals */
        int32_t keep = 0;
        while (keep < sa->n_dcached && keep < sa->n_text - 1 && sa->dcached[keep] == sa->text[keep]) keep++;
        sp_kv_truncate(&a->dctx.kv, i, keep);
        sa->n_dcached = keep;
        sa->prompt_path = sa->n_text - keep >= SP_PROMPT_PATH_MIN_TOKENS;
    }
    draft_catch_up(a);
    draft_greedy(a, n_vocab_target);
}

void sp_sched_assist_propose(sp_sched_assist *a, int32_t n_vocab_target, const sp_assist_want *want, int32_t n_want) {
    bool draft = false;
    for (int32_t w = 0; w < n_want; w++) {
        sp_slot_assist *sa = &a->slots[want[w].slot];
        const sprout_generation_config *cfg = want[w].cfg;
        *sa = (sp_slot_assist){.lookup = sa->lookup, .proposal = sa->proposal, .budget = sa->budget, .dcached = sa->dcached, .n_dcached = sa->n_dcached,
                               .cfg = cfg, .text = want[w].text, .n_text = want[w].n, .max = want[w].max};
        if (sa->max <= 0) continue;
        if (cfg->prompt_lookup) {
            const int32_t ngram = sp_assist_ngram(cfg);
            if (ngram != sa->lookup.max_ngram) {
                sp_lookup_free(&sa->lookup);
                if (sp_lookup_init(&sa->lookup, ngram, a->n_ctx) != SPROUT_OK) continue; /* no index: no proposals */
            }
            sa->k = sp_lookup_propose(&sa->lookup, sa->text, sa->n_text, sa->max, sa->proposal);
        } else if (a->draft) {
            sa->proposing = draft = true;
        }
    }
    if (draft) draft_propose(a, n_vocab_target);
    for (int32_t w = 0; w < n_want; w++) {
        sp_slot_assist *sa = &a->slots[want[w].slot];
        if (sa->k < want[w].cfg->min_assistant_tokens) sa->k = 0;
    }
}
