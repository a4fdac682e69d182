#include "grammar/grammar_cache.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

struct sp_grammar_entry {
    char *text;            /* the key; NULL: a free entry */
    sp_grammar *grammar;
    sp_grammar_masker *masker;
    pthread_mutex_t lock;  /* the masker's */
    int refs;              /* sequences holding it (under the cache's lock) */
    uint64_t last_used;
    bool standalone;       /* made outside the table (every entry was held): freed on release */
};

struct sp_grammar_cache {
    const sp_grammar_vocab *vocab;
    pthread_mutex_t lock;
    uint64_t clock;
    int capacity;
    sp_grammar_entry *entries;
};

sprout_status sp_grammar_cache_create(const sp_grammar_vocab *v, int capacity, sp_grammar_cache **out) {
    *out = NULL;
    sp_grammar_cache *c = calloc(1, sizeof *c);
    if (c) c->entries = calloc((size_t)capacity, sizeof *c->entries);
    if (!c || !c->entries) {
        free(c);
        return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    c->vocab = v;
    c->capacity = capacity;
    pthread_mutex_init(&c->lock, NULL);
    for (int i = 0; i < capacity; i++) pthread_mutex_init(&c->entries[i].lock, NULL);
    *out = c;
    return SPROUT_OK;
}

static void entry_clear(sp_grammar_entry *e) {
    sp_grammar_masker_free(e->masker);
    sp_grammar_free(e->grammar);
    free(e->text);
    e->text = NULL, e->grammar = NULL, e->masker = NULL;
}

void sp_grammar_cache_free(sp_grammar_cache *c) {
    if (!c) return;
    for (int i = 0; i < c->capacity; i++) {
        entry_clear(&c->entries[i]);
        pthread_mutex_destroy(&c->entries[i].lock);
    }
    pthread_mutex_destroy(&c->lock);
    free(c->entries);
    free(c);
}

sprout_status sp_grammar_cache_get(sp_grammar_cache *c, const char *text, sp_grammar_entry **out) {
    *out = NULL;
    pthread_mutex_lock(&c->lock);
    sp_grammar_entry *victim = NULL;
    for (int i = 0; i < c->capacity; i++) {
        sp_grammar_entry *e = &c->entries[i];
        if (e->text && !strcmp(e->text, text)) {
            e->refs++;
            e->last_used = ++c->clock;
            pthread_mutex_unlock(&c->lock);
            *out = e;
            return SPROUT_OK;
        }
        if (e->refs == 0 && (!victim || !e->text || (victim->text && e->last_used < victim->last_used))) victim = e;
    }
    /* compiled under the cache's lock: rare (a new grammar), and two
     * sequences bringing the same new one then share it */
    sprout_status st = SPROUT_OK;
    sp_grammar *g = NULL;
    sp_grammar_masker *m = NULL;
    char *key = NULL;
    if ((st = sp_grammar_compile(text, strlen(text), "root", &g)) == SPROUT_OK) st = sp_grammar_masker_create(g, c->vocab, &m);
    if (st == SPROUT_OK && !(key = strdup(text))) st = sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
    if (st == SPROUT_OK && !victim) { /* every entry is held: this sequence's own, not kept */
        if (!(victim = calloc(1, sizeof *victim))) st = sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
        else {
            victim->standalone = true;
            pthread_mutex_init(&victim->lock, NULL);
        }
    }
    if (st != SPROUT_OK) {
        pthread_mutex_unlock(&c->lock);
        sp_grammar_masker_free(m);
        sp_grammar_free(g);
        free(key);
        return st;
    }
    entry_clear(victim);
    victim->text = key;
    victim->grammar = g;
    victim->masker = m;
    victim->refs = 1;
    victim->last_used = ++c->clock;
    pthread_mutex_unlock(&c->lock);
    *out = victim;
    return SPROUT_OK;
}

void sp_grammar_cache_release(sp_grammar_cache *c, sp_grammar_entry *e) {
    if (!e) return;
    if (e->standalone) {
        entry_clear(e);
        pthread_mutex_destroy(&e->lock);
        free(e);
        return;
    }
    pthread_mutex_lock(&c->lock);
    e->refs--;
    pthread_mutex_unlock(&c->lock);
}

const sp_grammar *sp_grammar_entry_grammar(const sp_grammar_entry *e) { return e->grammar; }

sprout_status sp_grammar_entry_mask(sp_grammar_entry *e, const sp_grammar_state *st, uint64_t *bits) {
    pthread_mutex_lock(&e->lock);
    const sprout_status s = sp_grammar_mask(e->masker, st, bits);
    pthread_mutex_unlock(&e->lock);
    return s;
}
