#include "core/buf.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

bool sp_buf_put(sp_buf *b, const char *s, size_t n) {
    if (n > SIZE_MAX / 4 || b->len > SIZE_MAX / 4) return false;
    if (b->cap - b->len < n + 1) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap - b->len < n + 1) cap *= 2;
        char *d = realloc(b->data, cap);
        if (!d) return false;
        b->data = d;
        b->cap = cap;
    }
    if (n) memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = 0;
    return true;
}
