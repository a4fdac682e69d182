/* Assisted generation in the scheduler: each slot's proposals for its next
 * step, from its own n-gram index (prompt lookup) or from a draft model
 * the scheduler owns. The draft has a context of its own with one
 * sequence per slot, a cache only: each step it catches up with every
 * speculating slot's text by common prefix, then proposes greedily, every
 * draft forward pass serving all the slots still proposing. The scheduler
 * (scheduler.c) puts the proposals into its batch after each slot's
 * pending token and verifies them with sp_seq_verify. Engine thread only. */
#ifndef SPROUT_PIPELINE_SCHEDULER_ASSIST_H
#define SPROUT_PIPELINE_SCHEDULER_ASSIST_H

#include <stdbool.h>
#include <stdint.h>

#include "pipeline/lookup.h"
#include "runtime/context.h"
#include "sprout.h"

/* One slot's speculation state. */
typedef struct sp_slot_assist {
    sp_lookup lookup;   /* prompt lookup's index of the slot's text (reset when a request takes the slot) */
    int32_t *proposal;  /* this step's proposals (n_batch of room) */
    int32_t k;          /* how many */
    int32_t budget;     /* how many the next step asks for at most (sp_assist_next_budget; 0 or less: none) */
    int32_t *dcached;   /* the tokens the draft's cache holds for this slot, in order */
    int32_t n_dcached;
    /* during sp_sched_assist_propose: the slot's want */
    const sprout_generation_config *cfg;
    const int32_t *text;
    int32_t n_text, max;
    bool proposing, prompt_path;
} sp_slot_assist;

typedef struct sp_sched_assist {
    const sprout_model *draft; /* NULL: prompt lookup only */
    sp_context dctx;           /* the draft's: one sequence per slot */
    int32_t n_slots, n_ctx, n_batch;
    int32_t draft_ctx;         /* positions the draft can take per slot */
    bool dctx_ready;
    sp_batch_token *batch;     /* n_batch */
    float *rows;               /* a draft pass's logits: n_batch rows */
    float *last;               /* each slot's latest draft logits: n_slots rows */
    sp_slot_assist *slots;
} sp_sched_assist;

/* Room for n_slots slots; a draft (may be NULL) gets its context of
 * n_slots sequences of n_ctx cells, whose vocabulary must be the target's
 * (SPROUT_ERR_UNSUPPORTED otherwise). */
sprout_status sp_sched_assist_init(sp_sched_assist *a, const sprout_model *target, const sprout_model *draft, int32_t n_slots,
                                   int32_t n_ctx, int32_t n_batch, int n_threads, sp_kv_types kv);
void sp_sched_assist_free(sp_sched_assist *a);

/* A request takes slot `slot`: no proposals yet, its n-gram index starts
 * afresh (the draft's cache stays: it is synced by common prefix). */
void sp_sched_assist_begin(sp_sched_assist *a, int32_t slot);

/* Whether a request with this config speculates at all. */
bool sp_sched_assist_wanted(const sp_sched_assist *a, const sprout_generation_config *cfg);

/* One slot that speculates this step: its text (the cached tokens, then
 * the pending one) and how many proposals its batch rows may verify. */
typedef struct sp_assist_want {
    int32_t slot;
    const sprout_generation_config *cfg;
    const int32_t *text;
    int32_t n;
    int32_t max;
} sp_assist_want;

/* Proposals for each slot of `want` into a->slots[slot].proposal and .k:
 * prompt lookup where its config asks for it, the draft's greedy
 * continuation for the others (all those slots' catch-up and greedy steps
 * batched together). A failed draft pass proposes nothing for its slots
 * (the draft's cache is left consistent). */
void sp_sched_assist_propose(sp_sched_assist *a, int32_t n_vocab_target, const sp_assist_want *want, int32_t n_want);

#endif
