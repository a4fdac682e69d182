#include "core/arena.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct sp_arena_chunk {
    sp_arena_chunk *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
};

enum { SP_ARENA_CHUNK = 64 * 1024 };

void *sp_arena_alloc(sp_arena *arena, size_t size) {
    if (size > SIZE_MAX / 2) return NULL;
    size = (size + 15) & ~(size_t)15;
    sp_arena_chunk *c = arena->head;
    if (!c || c->cap - c->used < size) {
        size_t cap = size > SP_ARENA_CHUNK ? size : SP_ARENA_CHUNK;
        c = malloc(sizeof *c + cap);
        if (!c) return NULL;
        c->used = 0;
        c->cap = cap;
        /* a big block gets its own chunk behind the head, so the head's free
         * space stays usable */
        if (arena->head && size > SP_ARENA_CHUNK) {
            c->next = arena->head->next;
            arena->head->next = c;
        } else {
            c->next = arena->head;
            arena->head = c;
        }
    }
    void *p = c->data + c->used;
    c->used += size;
    memset(p, 0, size);
    return p;
}

char *sp_arena_strndup(sp_arena *arena, const char *s, size_t len) {
    if (len == SIZE_MAX) return NULL;
    char *p = sp_arena_alloc(arena, len + 1);
    if (p) memcpy(p, s, len);
    return p;
}

void sp_arena_free(sp_arena *arena) {
    sp_arena_chunk *c = arena->head;
    while (c) {
        sp_arena_chunk *next = c->next;
        free(c);
        c = next;
    }
    arena->head = NULL;
}
