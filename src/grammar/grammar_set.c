/* The set of parse stacks a grammar state holds: records in one array,
 * compared one by one while few, through a hash index once many. */
#include "grammar/grammar.h"

#include <stdlib.h>
#include <string.h>

#include "core/grow.h"

void sp_gset_free(sp_gset *s) {
    free(s->data);
    free(s->slots);
    *s = (sp_gset){0};
}

/* Stacks a set holds before it indexes them: a state's few stacks are
 * compared one by one, but a hostile grammar's thousands made each add
 * a scan of all (a fuzzed grammar spent 93% of 7 s a mask there). */
enum { GSET_INDEX_FROM = 32 };

/* A short stack hashes in one multiply chain; over deep ones (each
 * nesting level adds positions) that chain was most of a step's time, so
 * four chains over two words each run side by side, then mix. */
static uint32_t stack_hash(const uint32_t *stack, uint32_t n) {
    const uint64_t k = 0x9E3779B97F4A7C15ull;
    if (n < 16) {
        uint64_t h = (1469598103934665603ull ^ n) * 1099511628211ull;
        for (uint32_t i = 0; i < n; i++) h = (h ^ stack[i]) * 1099511628211ull;
        return (uint32_t)(h ^ (h >> 32));
    }
    uint64_t h[4] = {n, 0x243F6A8885A308D3ull, 0x13198A2E03707344ull, 0xA4093822299F31D0ull};
    uint32_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 4; j++) {
            uint64_t w;
            memcpy(&w, stack + i + 2 * j, sizeof w);
            h[j] = (h[j] ^ w) * k;
        }
    for (; i < n; i++) h[i & 3] = (h[i & 3] ^ stack[i]) * k;
    uint64_t x = h[0] ^ (h[1] << 16 | h[1] >> 48) ^ (h[2] << 32 | h[2] >> 32) ^ (h[3] << 48 | h[3] >> 16);
    x = (x ^ (x >> 33)) * 0xFF51AFD7ED558CCDull; /* the high words' bits down into the slot bits */
    return (uint32_t)(x ^ (x >> 33));
}

static bool same_stack(const sp_gset *s, size_t at, const uint32_t *stack, uint32_t n) {
    return s->data[at] == n && (n == 0 || !memcmp(s->data + at + 1, stack, n * sizeof *stack));
}

/* The index's slot for `stack`: the one holding its record, or the empty
 * one where it would go (n_slots a power of two, at most half full). */
static uint32_t *index_slot(const sp_gset *s, const uint32_t *stack, uint32_t n) {
    uint32_t i = stack_hash(stack, n) & (s->n_slots - 1);
    while (s->slots[i] && !same_stack(s, s->slots[i] - 1, stack, n)) i = (i + 1) & (s->n_slots - 1);
    return &s->slots[i];
}

/* The index of all the set's records, in slots enough for one more. */
static bool index_all(sp_gset *s) {
    uint32_t want = 64;
    while (want < 2 * (s->count + 1)) want *= 2;
    if (want > s->n_slots) {
        uint32_t *slots = realloc(s->slots, want * sizeof *slots);
        if (!slots) return false;
        s->slots = slots, s->n_slots = want;
    }
    memset(s->slots, 0, s->n_slots * sizeof *s->slots);
    for (size_t at = 0; at < s->len; at += 1 + s->data[at]) *index_slot(s, s->data + at + 1, s->data[at]) = (uint32_t)at + 1;
    s->n_indexed = s->count;
    return true;
}

bool sp_gset_add(sp_gset *s, const uint32_t *stack, uint32_t n) {
    uint32_t *slot = NULL;
    if (s->count < GSET_INDEX_FROM) {
        for (size_t i = 0; i < s->len; i += 1 + s->data[i])
            if (same_stack(s, i, stack, n)) return true;
    } else {
        if ((s->n_indexed != s->count || 2 * (s->count + 1) > s->n_slots) && !index_all(s)) return false;
        slot = index_slot(s, stack, n);
        if (*slot) return true;
    }
    if (s->count >= SP_GRAMMAR_MAX_STACKS) return false;
    if (!sp_grow((void **)&s->data, &s->cap, s->len + n + 1, sizeof *s->data)) return false;
    if (slot) *slot = (uint32_t)s->len + 1, s->n_indexed++;
    s->data[s->len] = n;
    if (n) memcpy(s->data + s->len + 1, stack, n * sizeof *stack);
    s->len += n + 1;
    s->count++;
    return true;
}

bool sp_gset_copy(sp_gset *dst, const sp_gset *src) {
    if (!sp_grow((void **)&dst->data, &dst->cap, src->len + 1, sizeof *dst->data)) return false;
    if (src->len) memcpy(dst->data, src->data, src->len * sizeof *src->data);
    dst->len = src->len, dst->count = src->count, dst->n_indexed = 0;
    return true;
}
