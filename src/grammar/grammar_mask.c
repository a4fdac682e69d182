#include "grammar/grammar_mask.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"

/* --- tries ------------------------------------------------------------------------
 * Nodes in depth-first order: node i's subtree is nodes [i + 1, end[i]), its
 * first child i + 1 (when i + 1 < end[i]), a child c's next sibling end[c].
 * The items (tokens, or the rests of tokens) are sorted by their bytes, so a
 * subtree's items are ids[lo[i] .. hi[i]), those ending at i the first ones,
 * ids[lo[i] .. mid[i]). */
typedef struct trie {
    uint32_t n_nodes, max_depth;
    uint8_t *byte; /* the byte into the node */
    uint32_t *end, *lo, *mid, *hi;
    uint32_t *ids;  /* token ids in sorted order */
} trie;

typedef struct item {
    const uint8_t *s;
    uint32_t len, id;
} item;

static int cmp_item(const void *x, const void *y) {
    const item *a = x, *b = y;
    const uint32_t n = a->len < b->len ? a->len : b->len;
    int c = n ? memcmp(a->s, b->s, n) : 0;
    if (c) return c;
    if (a->len != b->len) return a->len < b->len ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}

static void trie_free(trie *t) {
    free(t->byte), free(t->end), free(t->lo), free(t->mid), free(t->hi), free(t->ids);
    *t = (trie){0};
}

static size_t trie_bytes(const trie *t) { return (size_t)t->n_nodes * 17 + (t->ids ? (size_t)(t->hi[0]) * 4 : 0); }

/* Builds the trie of items[0..n) (sorted here). False when out of memory. */
static bool trie_build(trie *t, item *items, uint32_t n) {
    *t = (trie){0};
    qsort(items, n, sizeof *items, cmp_item);
    uint64_t nodes = 1;
    uint32_t max_len = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t l = 0;
        if (i) {
            const uint32_t m = items[i].len < items[i - 1].len ? items[i].len : items[i - 1].len;
            while (l < m && items[i].s[l] == items[i - 1].s[l]) l++;
        }
        nodes += items[i].len - l;
        if (items[i].len > max_len) max_len = items[i].len;
    }
    if (nodes > UINT32_MAX / 2) return false;
    t->byte = malloc(nodes);
    t->end = malloc(nodes * 4), t->lo = malloc(nodes * 4), t->mid = malloc(nodes * 4), t->hi = malloc(nodes * 4);
    t->ids = malloc((size_t)n * 4 + 4);
    uint32_t *path = malloc(((size_t)max_len + 1) * 4);
    if (!t->byte || !t->end || !t->lo || !t->mid || !t->hi || !t->ids || !path) {
        free(path);
        trie_free(t);
        return false;
    }
    t->max_depth = max_len;
    uint32_t depth = 0, count = 1;
    path[0] = 0;
    t->byte[0] = 0, t->lo[0] = 0, t->mid[0] = 0;
    for (uint32_t i = 0; i < n; i++) {
        t->ids[i] = items[i].id;
        uint32_t l = 0;
        if (i) {
            const uint32_t m = items[i].len < items[i - 1].len ? items[i].len : items[i - 1].len;
            while (l < m && items[i].s[l] == items[i - 1].s[l]) l++;
        }
        while (depth > l) { /* close the nodes this item does not share */
            t->end[path[depth]] = count, t->hi[path[depth]] = i;
            depth--;
        }
        while (depth < items[i].len) { /* open its own */
            const uint32_t c = count++;
            t->byte[c] = items[i].s[depth];
            t->lo[c] = t->mid[c] = i;
            path[++depth] = c;
        }
        t->mid[path[depth]] = i + 1; /* it ends here */
    }
    while (depth != UINT32_MAX) {
        t->end[path[depth]] = count, t->hi[path[depth]] = n;
        if (depth == 0) break;
        depth--;
    }
    t->end[0] = count, t->hi[0] = n;
    t->n_nodes = count;
    free(path);
    return true;
}

/* --- the vocabulary ------------------------------------------------------------------ */

struct sp_grammar_vocab {
    uint32_t n;
    uint8_t **text;
    uint32_t *len;
    uint32_t *empty; /* ids of the tokens with no text (special tokens) */
    uint32_t n_empty;
    trie trie;
};

void sp_grammar_vocab_free(sp_grammar_vocab *v) {
    if (!v) return;
    if (v->text)
        for (uint32_t i = 0; i < v->n; i++) free(v->text[i]);
    free(v->text), free(v->len), free(v->empty);
    trie_free(&v->trie);
    free(v);
}

uint32_t sp_grammar_vocab_size(const sp_grammar_vocab *v) { return v->n; }

const uint32_t *sp_grammar_vocab_empty(const sp_grammar_vocab *v, uint32_t *n) {
    *n = v->n_empty;
    return v->empty;
}
size_t sp_grammar_mask_words(const sp_grammar_vocab *v) { return ((size_t)v->n + 63) / 64; }

sprout_status sp_grammar_vocab_create(const char *const *text, const uint32_t *len, uint32_t n, sp_grammar_vocab **out) {
    *out = NULL;
    sp_grammar_vocab *v = calloc(1, sizeof *v);
    item *items = malloc((size_t)n * sizeof *items + 1);
    if (!v || !items) goto oom;
    v->n = n;
    v->text = calloc((size_t)n + 1, sizeof *v->text);
    v->len = malloc((size_t)n * sizeof *v->len + 1);
    v->empty = malloc((size_t)n * sizeof *v->empty + 1);
    if (!v->text || !v->len || !v->empty) goto oom;
    for (uint32_t i = 0; i < n; i++) {
        v->text[i] = malloc((size_t)len[i] + 1);
        if (!v->text[i]) goto oom;
        if (len[i]) memcpy(v->text[i], text[i], len[i]);
        v->len[i] = len[i];
        if (!len[i]) v->empty[v->n_empty++] = i;
        items[i] = (item){v->text[i], len[i], i};
    }
    if (!trie_build(&v->trie, items, n)) goto oom;
    free(items);
    *out = v;
    return SPROUT_OK;
oom:
    free(items);
    sp_grammar_vocab_free(v);
    return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "grammar: out of memory for the vocabulary's trie");
}

/* --- the masker ----------------------------------------------------------------------- */

/* What a key decides: the tokens it accepts whatever lies below it, and the
 * rests of the tokens it leaves open. */
typedef struct entry {
    uint32_t *key;
    uint32_t key_len;
    uint32_t start, start_depth; /* the trie node the tokens are read from (0: the root), its depth */
    bool whole;      /* the key is a whole stack: nothing below */
    bool lengthen;   /* too many open tokens: use a longer key */
    uint64_t *accept;     /* from the root: a bitset of the vocabulary */
    uint32_t *accept_ids; /* from another node: the few token ids of its subtree */
    uint32_t n_accept_ids;
    trie open;       /* ids: token ids; items: the bytes after the key's rule ends */
    uint32_t n_open;
} entry;

enum {
    CACHE_MAX_BYTES = 512 << 20,
    OPEN_WALK_MAX_STEPS = 64, /* bytes stepped in one walk of a key's open tokens */
    /* Bytes stepped for one mask at most: each distinct stack top walks the
     * vocabulary once, so a grammar of many permissive alternatives could
     * hold the scheduler's thread for a minute; real schemas stay two
     * orders below it (bench/RESULTS.md). */
    MASK_STEP_BUDGET = 1 << 25,
};

struct sp_grammar_masker {
    const sp_grammar *g;
    const sp_grammar_vocab *v;
    size_t words;
    uint32_t open_limit; /* a key leaving more open tokens is lengthened */
    entry *entries;
    size_t n_entries, cap_entries;
    uint32_t *slots; /* hash table of entry index + 1; 0 empty */
    size_t n_slots;
    size_t bytes;
    /* scratch of the walks */
    sp_grammar_state *level; /* the state after each depth of the walk */
    uint32_t n_level;
    uint32_t *node, *child;
    bool *escaped;
    item *open; /* open tokens found by a walk */
    size_t n_open, cap_open;
    uint32_t *ids; /* accepted tokens found by a walk from a node */
    size_t n_ids, cap_ids;
    sp_grammar_state pre[4]; /* the walk through a code point begun */
    uint32_t pre_node[4], pre_child[4];
    bool out_of_memory; /* a step of this mask's walks ran out: its bits are not to be trusted */
    uint32_t step_budget; /* MASK_STEP_BUDGET, or a test's (sp_grammar_masker_set_budget) */
    uint32_t steps_left;  /* of step_budget, for this mask */
    bool over_budget;    /* ... and none were left: the walks stop, the mask is refused */
};

/* sp_grammar_step within the mask's budget: false, with over_budget, once
 * it is spent. */
static bool budget_step(sp_grammar_masker *m, const sp_grammar_state *in, unsigned char b, sp_grammar_state *out) {
    if (m->steps_left == 0) {
        m->over_budget = true;
        return false;
    }
    m->steps_left--;
    return sp_grammar_step(in, b, out);
}

static void entry_free(entry *e) {
    free(e->key), free(e->accept), free(e->accept_ids);
    trie_free(&e->open);
}

static void cache_clear(sp_grammar_masker *m) {
    for (size_t i = 0; i < m->n_entries; i++) entry_free(&m->entries[i]);
    m->n_entries = 0;
    if (m->slots) memset(m->slots, 0, m->n_slots * sizeof *m->slots);
    m->bytes = 0;
}

void sp_grammar_masker_free(sp_grammar_masker *m) {
    if (!m) return;
    cache_clear(m);
    free(m->entries), free(m->slots);
    if (m->level)
        for (uint32_t i = 0; i < m->n_level; i++) {
            sp_gset_free(&m->level[i].set), sp_gset_free(&m->level[i].spare), sp_gset_free(&m->level[i].spare2);
        }
    for (int i = 0; i < 4; i++) sp_gset_free(&m->pre[i].set), sp_gset_free(&m->pre[i].spare), sp_gset_free(&m->pre[i].spare2);
    free(m->level), free(m->node), free(m->child), free(m->escaped), free(m->open), free(m->ids);
    free(m);
}

sprout_status sp_grammar_masker_create(const sp_grammar *g, const sp_grammar_vocab *v, sp_grammar_masker **out) {
    *out = NULL;
    sp_grammar_masker *m = calloc(1, sizeof *m);
    if (!m) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "grammar: out of memory");
    m->g = g, m->v = v;
    m->words = sp_grammar_mask_words(v);
    m->open_limit = 256 + v->n / 256;
    m->step_budget = MASK_STEP_BUDGET;
    m->n_level = v->trie.max_depth + 2;
    m->level = calloc(m->n_level, sizeof *m->level);
    m->node = malloc(m->n_level * sizeof *m->node);
    m->child = malloc(m->n_level * sizeof *m->child);
    m->escaped = calloc(m->n_level, sizeof *m->escaped);
    m->n_slots = 1024;
    m->slots = calloc(m->n_slots, sizeof *m->slots);
    if (!m->level || !m->node || !m->child || !m->escaped || !m->slots) {
        sp_grammar_masker_free(m);
        return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "grammar: out of memory");
    }
    for (uint32_t i = 0; i < m->n_level; i++) m->level[i].g = g;
    for (int i = 0; i < 4; i++) m->pre[i].g = g;
    *out = m;
    return SPROUT_OK;
}

void sp_grammar_mask_stats_get(const sp_grammar_masker *m, sp_grammar_mask_stats *out) {
    *out = (sp_grammar_mask_stats){.keys = m->n_entries, .bytes = m->bytes};
    for (size_t i = 0; i < m->n_entries; i++) {
        out->lengthened += m->entries[i].lengthen;
        out->dependent += m->entries[i].n_open;
    }
}

static void set_range(uint64_t *bits, const uint32_t *ids, uint32_t lo, uint32_t hi) {
    for (uint32_t i = lo; i < hi; i++) bits[ids[i] >> 6] |= 1ull << (ids[i] & 63);
}

/* Every token of t whose bytes the state `start` (m->level[0]) takes joins
 * bits. Returns the bytes stepped. */
static uint64_t walk_all(sp_grammar_masker *m, const trie *t, uint64_t *bits) {
    if (t->n_nodes == 0) return 0;
    uint64_t steps = 0;
    set_range(bits, t->ids, t->lo[0], t->mid[0]);
    int32_t d = 0;
    m->node[0] = 0, m->child[0] = 1;
    while (d >= 0 && !m->over_budget) {
        const uint32_t c = m->child[d];
        if (c >= t->end[m->node[d]]) {
            d--;
            continue;
        }
        m->child[d] = t->end[c];
        steps++;
        if (!budget_step(m, &m->level[d], t->byte[c], &m->level[d + 1])) {
            m->out_of_memory |= m->level[d + 1].out_of_memory;
            continue;
        }
        set_range(bits, t->ids, t->lo[c], t->mid[c]);
        if (t->mid[c] < t->hi[c]) {
            d++;
            m->node[d] = c, m->child[d] = c + 1;
        }
    }
    return steps;
}

static bool has_empty_stack(const sp_gset *s) {
    for (size_t i = 0; i < s->len; i += 1 + s->data[i])
        if (s->data[i] == 0) return true;
    return false;
}

/* Records tokens ids[lo..hi) of the vocabulary as open, once per escape on the
 * path (depths 1..d below the walk's start, at start_depth); false once
 * there are too many. */
static bool add_open(sp_grammar_masker *m, uint32_t lo, uint32_t hi, int32_t d, uint32_t start_depth) {
    const sp_grammar_vocab *v = m->v;
    for (int32_t e = 1; e <= d; e++) {
        if (!m->escaped[e]) continue;
        for (uint32_t i = lo; i < hi; i++) {
            if (m->n_open >= m->open_limit) return false;
            if (m->n_open == m->cap_open) {
                size_t cap = m->cap_open ? m->cap_open * 2 : 256;
                item *o = realloc(m->open, cap * sizeof *o);
                if (!o) return false;
                m->open = o, m->cap_open = cap;
            }
            const uint32_t id = v->trie.ids[i];
            const uint32_t at = start_depth + (uint32_t)e;
            m->open[m->n_open++] = (item){v->text[id] + at, v->len[id] - at, id};
        }
    }
    return true;
}

/* Fills e (its key set) by walking the vocabulary from the key alone. False:
 * out of memory; e->lengthen: too many open tokens. */
static bool entry_fill(sp_grammar_masker *m, entry *e) {
    const trie *t = &m->v->trie;
    sp_grammar_state *L = m->level;
    sp_gset_clear(&L[0].set);
    L[0].need = 0, L[0].cp = 0, L[0].size = 0;
    if (!sp_gset_add(&L[0].set, e->key, e->key_len)) return false;
    if (e->start == 0) {
        e->accept = calloc(m->words, sizeof *e->accept);
        if (!e->accept) return false;
    }
    m->n_open = 0, m->n_ids = 0;
    bool full = false, oom = false;
    int32_t d = 0;
    m->node[0] = e->start, m->child[0] = e->start + 1, m->escaped[0] = false;
    while (d >= 0 && !full) {
        const uint32_t c = m->child[d];
        if (c >= t->end[m->node[d]]) {
            d--;
            continue;
        }
        m->child[d] = t->end[c];
        if (!budget_step(m, &L[d], t->byte[c], &L[d + 1])) {
            if (L[d + 1].out_of_memory || m->over_budget) return false; /* a verdict missed, not a refusal: never cached */
            if (!e->whole && !add_open(m, t->lo[c], t->hi[c], d, e->start_depth)) full = true;
            continue;
        }
        if (e->accept) set_range(e->accept, t->ids, t->lo[c], t->mid[c]);
        else
            for (uint32_t i = t->lo[c]; i < t->mid[c] && !oom; i++) {
                if (m->n_ids == m->cap_ids) {
                    size_t cap = m->cap_ids ? m->cap_ids * 2 : 256;
                    uint32_t *ids = realloc(m->ids, cap * sizeof *ids);
                    if (!ids) {
                        oom = full = true;
                        break;
                    }
                    m->ids = ids, m->cap_ids = cap;
                }
                m->ids[m->n_ids++] = t->ids[i];
            }
        const bool esc = L[d + 1].need == 0 && has_empty_stack(&L[d + 1].set);
        m->escaped[d + 1] = esc;
        if (t->mid[c] == t->hi[c]) continue;
        if (L[d + 1].set.count > (esc ? 1u : 0u)) {
            d++;
            m->node[d] = c, m->child[d] = c + 1;
        } else if (!e->whole && !add_open(m, t->mid[c], t->hi[c], d + 1, e->start_depth))
            full = true;
    }
    if (oom) return false;
    if (full) {
        e->lengthen = true;
        free(e->accept);
        e->accept = NULL;
        return m->n_open >= m->open_limit; /* else out of memory */
    }
    if (e->start != 0 && m->n_ids) {
        e->accept_ids = malloc(m->n_ids * sizeof *e->accept_ids);
        if (!e->accept_ids) return false;
        memcpy(e->accept_ids, m->ids, m->n_ids * sizeof *e->accept_ids);
        e->n_accept_ids = (uint32_t)m->n_ids;
    }
    e->n_open = (uint32_t)m->n_open;
    if (m->n_open && !trie_build(&e->open, m->open, (uint32_t)m->n_open)) return false;
    return true;
}

static uint64_t key_hash(const uint32_t *k, uint32_t n, bool whole, uint32_t start) {
    uint64_t h = (1469598103934665603ull ^ whole ^ (uint64_t)start << 1) * 1099511628211ull;
    for (uint32_t i = 0; i < n; i++) h = (h ^ k[i]) * 1099511628211ull;
    return h ^ (h >> 29);
}

/* The entry of a key, made when new; NULL when out of memory. */
static entry *lookup(sp_grammar_masker *m, const uint32_t *key, uint32_t n, bool whole, uint32_t start,
                     uint32_t start_depth) {
    const uint64_t h = key_hash(key, n, whole, start);
    size_t s = h & (m->n_slots - 1);
    for (; m->slots[s]; s = (s + 1) & (m->n_slots - 1)) {
        entry *e = &m->entries[m->slots[s] - 1];
        if (e->key_len == n && e->whole == whole && e->start == start && !memcmp(e->key, key, n * sizeof *key)) return e;
    }
    if (m->bytes > CACHE_MAX_BYTES) { /* start again rather than grow without bound */
        cache_clear(m);
        s = h & (m->n_slots - 1);
    }
    if ((m->n_entries + 1) * 2 > m->n_slots) {
        size_t ns = m->n_slots * 2;
        uint32_t *slots = calloc(ns, sizeof *slots);
        if (!slots) return NULL;
        for (size_t i = 0; i < m->n_entries; i++) {
            const entry *e = &m->entries[i];
            size_t t = key_hash(e->key, e->key_len, e->whole, e->start) & (ns - 1);
            while (slots[t]) t = (t + 1) & (ns - 1);
            slots[t] = (uint32_t)i + 1;
        }
        free(m->slots);
        m->slots = slots, m->n_slots = ns;
        for (s = h & (ns - 1); m->slots[s]; s = (s + 1) & (ns - 1)) {}
    }
    if (m->n_entries == m->cap_entries) {
        size_t cap = m->cap_entries ? m->cap_entries * 2 : 64;
        entry *es = realloc(m->entries, cap * sizeof *es);
        if (!es) return NULL;
        m->entries = es, m->cap_entries = cap;
    }
    entry *e = &m->entries[m->n_entries];
    *e = (entry){.key = malloc(n * sizeof *key + 1), .key_len = n, .whole = whole, .start = start, .start_depth = start_depth};
    if (!e->key) return NULL;
    memcpy(e->key, key, n * sizeof *key);
    if (!entry_fill(m, e)) {
        entry_free(e);
        return NULL;
    }
    m->slots[s] = (uint32_t)++m->n_entries;
    m->bytes += n * 4 + (e->accept ? m->words * 8 : 0) + e->n_accept_ids * 4 + trie_bytes(&e->open) + sizeof *e;
    return e;
}

/* bits gains the tokens one stack s[0..n) (top last, n > 0) allows, of
 * the tokens under trie node `start` (at depth start_depth) read from there. */
static bool mask_stack(sp_grammar_masker *m, const uint32_t *s, uint32_t n, uint64_t *bits, uint32_t start,
                       uint32_t start_depth) {
    const sp_grammar *g = m->g;
    uint32_t t = 1;
    while (t < n && !sp_grammar_pos_named(g, s[n - t])) t++;
    entry *e;
    for (;;) {
        e = lookup(m, s + n - t, t, t == n, start, start_depth);
        if (!e) return false;
        if (!e->lengthen) break;
        t++; /* one more frame, then down to the next named rule */
        while (t < n && !sp_grammar_pos_named(g, s[n - t])) t++;
    }
    if (e->accept)
        for (size_t w = 0; w < m->words; w++) bits[w] |= e->accept[w];
    for (uint32_t i = 0; i < e->n_accept_ids; i++) bits[e->accept_ids[i] >> 6] |= 1ull << (e->accept_ids[i] & 63);
    if (t == n || e->n_open == 0) return true;
    /* the open tokens' rests, read by what lies below the key */
    sp_grammar_state *L = m->level;
    bool out_of_memory;
    if (!sp_gset_advance(g, s, n - t, &L[0].set, &out_of_memory)) return !out_of_memory; /* a bound passed: nothing below can read */
    L[0].need = 0, L[0].cp = 0, L[0].size = 0;
    /* a key whose open tokens cost more than a few microseconds a step is
     * lengthened from now on (the next stacks with it look further down) */
    if (walk_all(m, &e->open, bits) > OPEN_WALK_MAX_STEPS) e->lengthen = true;
    return true;
}

/* A state inside a code point: the trie is walked plainly to where the code
 * point ends (at most 3 bytes), and from each node there on as from the
 * root, with keys cached per node. */
static sprout_status mask_inside_code_point(sp_grammar_masker *m, const sp_grammar_state *st, uint64_t *bits) {
    const trie *t = &m->v->trie;
    if (!sp_grammar_state_copy(&m->pre[0], st)) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "grammar: out of memory");
    set_range(bits, t->ids, t->lo[0], t->mid[0]); /* tokens of no bytes */
    int32_t d = 0;
    m->pre_node[0] = 0, m->pre_child[0] = 1;
    while (d >= 0) {
        const uint32_t c = m->pre_child[d];
        if (c >= t->end[m->pre_node[d]]) {
            d--;
            continue;
        }
        m->pre_child[d] = t->end[c];
        if (!budget_step(m, &m->pre[d], t->byte[c], &m->pre[d + 1])) {
            m->out_of_memory |= m->pre[d + 1].out_of_memory;
            if (m->over_budget) return SPROUT_OK; /* sp_grammar_mask says so */
            continue;
        }
        set_range(bits, t->ids, t->lo[c], t->mid[c]);
        if (t->mid[c] == t->hi[c]) continue;
        if (m->pre[d + 1].need > 0) {
            d++;
            m->pre_node[d] = c, m->pre_child[d] = c + 1;
            continue;
        }
        const sp_gset *set = &m->pre[d + 1].set;
        for (size_t i = 0; i < set->len; i += 1 + set->data[i])
            if (set->data[i] && !mask_stack(m, set->data + i + 1, set->data[i], bits, c, (uint32_t)d + 1)) {
                memset(bits, 0, m->words * sizeof *bits);
                return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "grammar: out of memory for the mask cache");
            }
    }
    return SPROUT_OK;
}

static sprout_status mask_state(sp_grammar_masker *m, const sp_grammar_state *st, uint64_t *bits) {
    const trie *t = &m->v->trie;
    if (st->need > 0) return mask_inside_code_point(m, st, bits);
    set_range(bits, t->ids, t->lo[0], t->mid[0]); /* tokens of no bytes */
    for (size_t i = 0; i < st->set.len; i += 1 + st->set.data[i]) {
        const uint32_t n = st->set.data[i];
        if (n == 0) continue;
        if (!mask_stack(m, st->set.data + i + 1, n, bits, 0, 0)) {
            memset(bits, 0, m->words * sizeof *bits);
            return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "grammar: out of memory for the mask cache");
        }
    }
    return SPROUT_OK;
}

void sp_grammar_masker_set_budget(sp_grammar_masker *m, uint32_t steps) { m->step_budget = steps ? steps : MASK_STEP_BUDGET; }

sprout_status sp_grammar_mask(sp_grammar_masker *m, const sp_grammar_state *st, uint64_t *bits) {
    memset(bits, 0, m->words * sizeof *bits);
    if (st->g != m->g) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "grammar: the state is of another grammar than the masker");
    if (st->set.count == 0) return SPROUT_OK;
    m->out_of_memory = false, m->over_budget = false;
    m->steps_left = m->step_budget;
    const sprout_status status = mask_state(m, st, bits);
    if (m->over_budget) {
        memset(bits, 0, m->words * sizeof *bits);
        return sp_fail(SPROUT_ERR_UNSUPPORTED,
                       "grammar: a token mask needs more than %u steps through the vocabulary (a grammar of many ambiguous alternatives)",
                       m->step_budget);
    }
    if (status == SPROUT_OK && m->out_of_memory) {
        memset(bits, 0, m->words * sizeof *bits);
        return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "grammar: out of memory while reading tokens for the mask");
    }
    return status;
}
