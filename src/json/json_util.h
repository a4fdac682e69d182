/* JSON helpers shared by the CLI's --json output and the server (jansson).
 * Printing is the CLI's (cli/files.c): this library writes to no stream. */
#ifndef SPROUT_JSON_UTIL_H
#define SPROUT_JSON_UTIL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sprout.h"

/* A JSON string of s[0..n): bytes that are not valid UTF-8 (file text is
 * untrusted) become U+FFFD, since JSON text must be UTF-8. */
json_t *json_string_lossy(const char *s, size_t n);

/* A JSON number for a float read from a file, printed with the fewest
 * digits that give the float back (1e-05, not 9.99999974737875e-06). */
json_t *json_float32(float f);

/* A GGUF metadata value as JSON. Arrays longer than `limit` keep their
 * first `limit` elements; `described` wraps arrays as {"type": "array",
 * "element_type", "count", "values", "truncated"}, else they are plain. */
json_t *json_gguf_value(const sprout_gguf_value *v, uint64_t limit, bool described);

#endif
