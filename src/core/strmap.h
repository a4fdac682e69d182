/* A hash map from byte strings to indices (tensor names, metadata keys, token
 * texts). The keys are not copied: they must outlive the map. Open
 * addressing with linear probing; the table never fills past one half. */
#ifndef SPROUT_CORE_STRMAP_H
#define SPROUT_CORE_STRMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct sp_strmap_slot {
    const char *key; /* NULL: empty */
    size_t len;
    uint64_t hash;
    int64_t value;
} sp_strmap_slot;

typedef struct sp_strmap {
    sp_strmap_slot *slots;
    size_t cap; /* a power of two */
    size_t count;
} sp_strmap;

/* Room for `expected` keys without growing; false when out of memory. */
bool sp_strmap_init(sp_strmap *map, size_t expected);
void sp_strmap_free(sp_strmap *map);

/* Inserts key -> value. Returns 1 if inserted, 0 if the key was already there
 * (then *existing, if not NULL, gets its value and nothing changes), -1 when
 * out of memory. */
int sp_strmap_insert(sp_strmap *map, const char *key, size_t len, int64_t value, int64_t *existing);

/* The value of key, or -1. */
int64_t sp_strmap_find(const sp_strmap *map, const char *key, size_t len);

#endif
