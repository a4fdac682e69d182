/* A bump allocator freed all at once. Parsers of untrusted input allocate
 * from one, so that every error path frees everything with one call. */
#ifndef SPROUT_CORE_ARENA_H
#define SPROUT_CORE_ARENA_H

#include <stddef.h>

typedef struct sp_arena_chunk sp_arena_chunk;

typedef struct sp_arena {
    sp_arena_chunk *head;
} sp_arena;

/* Zeroed, 16-byte aligned memory that lives until sp_arena_free; NULL when
 * out of memory (or when size is absurd). */
void *sp_arena_alloc(sp_arena *arena, size_t size);
/* NUL-terminated copy of s[0..len). */
char *sp_arena_strndup(sp_arena *arena, const char *s, size_t len);
void sp_arena_free(sp_arena *arena);

#endif
