#include "core/strmap.h"

#include <stdlib.h>
#include <string.h>

static uint64_t hash_bytes(const char *s, size_t len) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return h ^ (h >> 29);
}

bool sp_strmap_init(sp_strmap *map, size_t expected) {
    size_t cap = 16;
    while (cap < expected * 2) {
        if (cap > SIZE_MAX / 4 / sizeof(sp_strmap_slot)) return false;
        cap *= 2;
    }
    map->slots = calloc(cap, sizeof *map->slots);
    map->cap = map->slots ? cap : 0;
    map->count = 0;
    return map->slots != NULL;
}

void sp_strmap_free(sp_strmap *map) {
    free(map->slots);
    map->slots = NULL;
    map->cap = map->count = 0;
}

static sp_strmap_slot *probe(sp_strmap_slot *slots, size_t cap, const char *key, size_t len, uint64_t h) {
    size_t i = (size_t)h & (cap - 1);
    for (;;) {
        sp_strmap_slot *s = &slots[i];
        if (!s->key || (s->hash == h && s->len == len && memcmp(s->key, key, len) == 0)) return s;
        i = (i + 1) & (cap - 1);
    }
}

static bool grow(sp_strmap *map) {
    if (map->cap > SIZE_MAX / 4 / sizeof(sp_strmap_slot)) return false;
    size_t cap = map->cap ? map->cap * 2 : 16;
    sp_strmap_slot *slots = calloc(cap, sizeof *slots);
    if (!slots) return false;
    for (size_t i = 0; i < map->cap; i++) {
        sp_strmap_slot *s = &map->slots[i];
        if (s->key) *probe(slots, cap, s->key, s->len, s->hash) = *s;
    }
    free(map->slots);
    map->slots = slots;
    map->cap = cap;
    return true;
}

int sp_strmap_insert(sp_strmap *map, const char *key, size_t len, int64_t value, int64_t *existing) {
    if ((map->count + 1) * 2 > map->cap && !grow(map)) return -1;
    uint64_t h = hash_bytes(key, len);
    sp_strmap_slot *s = probe(map->slots, map->cap, key, len, h);
    if (s->key) {
        if (existing) *existing = s->value;
        return 0;
    }
    s->key = key;
    s->len = len;
    s->hash = h;
    s->value = value;
    map->count++;
    return 1;
}

int64_t sp_strmap_find(const sp_strmap *map, const char *key, size_t len) {
    if (!map->cap) return -1;
    const sp_strmap_slot *s = probe(map->slots, map->cap, key, len, hash_bytes(key, len));
    return s->key ? s->value : -1;
}
