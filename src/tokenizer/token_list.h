/* A growable list of token ids, the output of every tokenizer. */
#ifndef SPROUT_TOKENIZER_TOKEN_LIST_H
#define SPROUT_TOKENIZER_TOKEN_LIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

typedef struct sp_token_list {
    int32_t *ids;
    size_t n, cap;
    bool oom; /* a push failed; the list is incomplete */
} sp_token_list;

static inline void sp_token_list_push(sp_token_list *l, int32_t id) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 256;
        int32_t *p = l->oom ? NULL : realloc(l->ids, cap * sizeof *p);
        if (!p) {
            l->oom = true;
            return;
        }
        l->ids = p;
        l->cap = cap;
    }
    l->ids[l->n++] = id;
}

#endif
