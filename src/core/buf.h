/* A growing byte buffer, always NUL-terminated after its bytes (text
 * builders: generated text, HTTP bodies, stream chunks). */
#ifndef SPROUT_CORE_BUF_H
#define SPROUT_CORE_BUF_H

#include <stdbool.h>
#include <stddef.h>

typedef struct sp_buf {
    char *data;
    size_t len, cap;
} sp_buf;

/* Appends s[0..n); false (the buffer unchanged) when out of memory. */
bool sp_buf_put(sp_buf *b, const char *s, size_t n);

#endif
