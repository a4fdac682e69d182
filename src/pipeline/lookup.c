#include "pipeline/lookup.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"

/* FNV-1a over the ids and the length, never 0 (0 marks an empty entry). */
static uint64_t ngram_hash(const int32_t *t, int32_t n) {
    uint64_t h = 0xcbf29ce484222325ull ^ (uint64_t)n;
    for (int32_t i = 0; i < n; i++) {
        h ^= (uint32_t)t[i];
        h *= 0x100000001b3ull;
    }
    return h ? h : 1;
}

sprout_status sp_lookup_init(sp_lookup *l, int32_t max_ngram, int32_t max_tokens) {
    memset(l, 0, sizeof *l);
    if (max_ngram < 1 || max_tokens < 1) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "prompt lookup: n-grams of %d, %d tokens", max_ngram, max_tokens);
    /* at most one entry per (end, length): a table twice that stays sparse */
    uint64_t size = 16;
    while (size < 2ull * (uint64_t)max_ngram * (uint64_t)max_tokens) size *= 2;
    l->table = calloc(size, sizeof *l->table);
    if (!l->table) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
    l->max_ngram = max_ngram;
    l->mask = size - 1;
    return SPROUT_OK;
}

void sp_lookup_free(sp_lookup *l) {
    free(l->table);
    memset(l, 0, sizeof *l);
}

void sp_lookup_reset(sp_lookup *l) {
    if (l->table) memset(l->table, 0, (size_t)(l->mask + 1) * sizeof *l->table);
    l->indexed = 0;
}

/* The entry of the n-gram text[start, start + n): its own, or the empty
 * one where it goes. Entries are never removed, so probing stops at an
 * empty one. */
static sp_lookup_entry *find(const sp_lookup *l, const int32_t *text, int32_t start, int32_t n) {
    const uint64_t key = ngram_hash(text + start, n);
    for (uint64_t i = key & l->mask;; i = (i + 1) & l->mask) {
        sp_lookup_entry *e = &l->table[i];
        if (!e->key) return e;
        /* equal hashes: the ids decide */
        if (e->key == key && e->n == n && !memcmp(text + e->after - n, text + start, (size_t)n * sizeof *text)) return e;
    }
}

/* Each n-gram that ends before text[at] now has a follower: its latest. */
static void index_follower(sp_lookup *l, const int32_t *text, int32_t at) {
    for (int32_t n = 1; n <= l->max_ngram && n <= at; n++) {
        sp_lookup_entry *e = find(l, text, at - n, n);
        if (!e->key) {
            e->key = ngram_hash(text + at - n, n);
            e->n = n;
        }
        e->after = at;
    }
}

int32_t sp_lookup_propose(sp_lookup *l, const int32_t *text, int32_t n, int32_t max, int32_t *out) {
    if (n < l->indexed) sp_lookup_reset(l);
    /* the table never fills: each (end, length) adds at most one entry */
    for (; l->indexed < n; l->indexed++) index_follower(l, text, l->indexed);
    for (int32_t g = l->max_ngram < n ? l->max_ngram : n - 1; g >= 1; g--) {
        const sp_lookup_entry *e = find(l, text, n - g, g);
        if (!e->key) continue;
        int32_t k = 0;
        for (int32_t i = e->after; i < n && k < max; i++) out[k++] = text[i];
        if (k) return k;
    }
    return 0;
}
