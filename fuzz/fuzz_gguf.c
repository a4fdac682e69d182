/* libFuzzer target over the GGUF reader: any byte string must parse or be
 * rejected cleanly, and everything a successful parse exposes must be
 * readable without touching memory outside the input. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "gguf/gguf_reader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile uint64_t sink;

static void walk(const sprout_gguf_value *v, int depth) {
    uint64_t u;
    int64_t i;
    double d;
    bool b;
    const char *s;
    size_t n;
    if (sprout_gguf_value_type(v) != SPROUT_GGUF_ARRAY) {
        if (sprout_gguf_value_u64(v, &u) == SPROUT_OK) sink += u;
        if (sprout_gguf_value_i64(v, &i) == SPROUT_OK) sink += (uint64_t)i;
        if (sprout_gguf_value_f64(v, &d) == SPROUT_OK) sink += (uint64_t)(d == d);
        if (sprout_gguf_value_bool(v, &b) == SPROUT_OK) sink += b;
        if (sprout_gguf_value_str(v, &s, &n) == SPROUT_OK && n) sink += (uint8_t)s[n - 1];
        return;
    }
    uint64_t len = sprout_gguf_array_len(v);
    for (uint64_t k = 0; k < len && k < 4096; k++) {
        if (sprout_gguf_array_type(v) == SPROUT_GGUF_ARRAY) {
            walk(sprout_gguf_array_elem(v, k), depth + 1);
        } else if (sprout_gguf_array_str(v, k, &s, &n) == SPROUT_OK) {
            if (n) sink += (uint8_t)s[n - 1];
        } else if (sprout_gguf_array_f64(v, k, &d) == SPROUT_OK) {
            sink += (uint64_t)(d == d);
        } else if (sprout_gguf_array_bool(v, k, &b) == SPROUT_OK) {
            sink += b;
        }
    }
    if (len) sprout_gguf_array_i64(v, len, &i); /* one past the end: refused */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    sp_gguf_part part = {0};
    if (sp_gguf_part_parse(data, size, "fuzz", &part) == SPROUT_OK) {
        for (int64_t k = 0; k < part.n_kv; k++) walk(&part.kvs[k].value, 0);
        for (int64_t k = 0; k < part.n_tensors; k++) {
            const sp_gguf_tensor *t = &part.tensors[k];
            if (t->bytes) sink += t->data[0] + t->data[t->bytes - 1]; /* both ends inside the input */
        }
    }
    sp_gguf_part_free(&part);
    return 0;
}
