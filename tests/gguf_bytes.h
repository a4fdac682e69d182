/* Builds GGUF images byte by byte, so tests (and the fuzz seed generator) can
 * write files that are broken in exactly one place. */
#ifndef SPROUT_TEST_GGUF_BYTES_H
#define SPROUT_TEST_GGUF_BYTES_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct gbytes {
    uint8_t *data;
    size_t len, cap;
} gbytes;

static inline void gb_put(gbytes *b, const void *p, size_t n) {
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n) cap *= 2;
        b->data = realloc(b->data, cap);
        if (!b->data) abort();
        b->cap = cap;
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
}

static inline void gb_le(gbytes *b, uint64_t v, int n) {
    for (int i = 0; i < n; i++) {
        uint8_t c = (uint8_t)(v >> (8 * i));
        gb_put(b, &c, 1);
    }
}
static inline void gb_u32(gbytes *b, uint32_t v) { gb_le(b, v, 4); }
static inline void gb_u64(gbytes *b, uint64_t v) { gb_le(b, v, 8); }
static inline void gb_str(gbytes *b, const char *s) {
    gb_u64(b, strlen(s));
    gb_put(b, s, strlen(s));
}
static inline void gb_header(gbytes *b, uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
    gb_put(b, "GGUF", 4);
    gb_u32(b, version);
    gb_u64(b, n_tensors);
    gb_u64(b, n_kv);
}
/* key, type 4 (u32), value */
static inline void gb_kv_u32(gbytes *b, const char *key, uint32_t v) {
    gb_str(b, key);
    gb_u32(b, 4);
    gb_u32(b, v);
}
static inline void gb_kv_str(gbytes *b, const char *key, const char *v) {
    gb_str(b, key);
    gb_u32(b, 8);
    gb_str(b, v);
}
static inline void gb_tensor(gbytes *b, const char *name, uint32_t n_dims, const uint64_t *ne, uint32_t type, uint64_t offset) {
    gb_str(b, name);
    gb_u32(b, n_dims);
    for (uint32_t d = 0; d < n_dims; d++) gb_u64(b, ne[d]);
    gb_u32(b, type);
    gb_u64(b, offset);
}
static inline void gb_pad(gbytes *b, size_t align) {
    while (b->len % align) gb_le(b, 0, 1);
}
static inline void gb_free(gbytes *b) {
    free(b->data);
    memset(b, 0, sizeof *b);
}

#endif
