#include "tokenizer/merge.h"

#include <stdlib.h>

#include "core/error.h"

static bool before(const sp_bigram *a, const sp_bigram *b) {
    return a->priority > b->priority || (a->priority == b->priority && a->left < b->left);
}

static bool heap_push(sp_merger *m, sp_bigram b) {
    if (m->n_heap == m->cap_heap) {
        size_t cap = m->cap_heap ? 2 * m->cap_heap : 64;
        sp_bigram *h = realloc(m->heap, cap * sizeof *h);
        if (!h) return false;
        m->heap = h;
        m->cap_heap = cap;
    }
    size_t i = m->n_heap++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!before(&b, &m->heap[parent])) break;
        m->heap[i] = m->heap[parent];
        i = parent;
    }
    m->heap[i] = b;
    return true;
}

static sp_bigram heap_pop(sp_merger *m) {
    sp_bigram top = m->heap[0], last = m->heap[--m->n_heap];
    size_t i = 0, n = m->n_heap;
    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= n) break;
        if (child + 1 < n && before(&m->heap[child + 1], &m->heap[child])) child++;
        if (!before(&m->heap[child], &last)) break;
        m->heap[i] = m->heap[child];
        i = child;
    }
    if (n) m->heap[i] = last;
    return top;
}

static bool try_pair(sp_merger *m, const char *word, int32_t left, int32_t right, sp_pair_fn pair, void *ctx) {
    if (left < 0 || right < 0) return true;
    float priority;
    const sp_symbol *l = &m->sym[left], *r = &m->sym[right];
    if (!pair(ctx, word, l, r, left, right, &priority)) return true;
    return heap_push(m, (sp_bigram){left, right, priority, l->len + r->len});
}

sprout_status sp_merge_word(sp_merger *m, const char *word, size_t len, sp_pair_fn pair, void *ctx) {
    m->n_sym = 0;
    m->n_heap = 0;
    if (len > INT32_MAX) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "text of %zu bytes is too long to tokenize", len);
    if (m->cap_sym < len) {
        sp_symbol *s = realloc(m->sym, len * sizeof *s);
        if (!s) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
        m->sym = s;
        m->cap_sym = len;
    }
    for (size_t off = 0; off < len;) {
        size_t cl = sp_utf8_lead_len((unsigned char)word[off]);
        if (cl > len - off) cl = len - off;
        int32_t i = (int32_t)m->n_sym++;
        m->sym[i] = (sp_symbol){i - 1, off + cl == len ? -1 : i + 1, (uint32_t)off, (uint32_t)cl};
        off += cl;
    }
    for (size_t i = 1; i < m->n_sym; i++)
        if (!try_pair(m, word, (int32_t)i - 1, (int32_t)i, pair, ctx)) goto oom;
    while (m->n_heap) {
        sp_bigram b = heap_pop(m);
        sp_symbol *l = &m->sym[b.left], *r = &m->sym[b.right];
        /* stale: a side was merged away, or grew since the pair was proposed */
        if (l->len == 0 || r->len == 0 || l->len + r->len != b.size) continue;
        l->len += r->len;
        r->len = 0;
        l->next = r->next;
        if (r->next >= 0) m->sym[r->next].prev = b.left;
        if (!try_pair(m, word, l->prev, b.left, pair, ctx) || !try_pair(m, word, b.left, l->next, pair, ctx)) goto oom;
    }
    return SPROUT_OK;
oom:
    return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory while tokenizing");
}

void sp_merger_free(sp_merger *m) {
    free(m->sym);
    free(m->heap);
    m->sym = NULL;
    m->heap = NULL;
    m->n_sym = m->cap_sym = m->n_heap = m->cap_heap = 0;
}
