/* What text that streams needs in more than one place: whether the end of
 * what has come so far may be the start of a marker still arriving (a stop
 * string, a tool call's tag, </think>), so that it is held back; and JSON's
 * whitespace, which the readers of model output skip. */
#ifndef SPROUT_CORE_TEXT_STREAM_H
#define SPROUT_CORE_TEXT_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

/* The length of the longest proper prefix of marker[0..m) that s[0..n)
 * ends with (0 if none). */
static inline size_t sp_marker_tail(const char *s, size_t n, const char *marker, size_t m) {
    for (size_t k = m > 0 ? m - 1 : 0; k > 0; k--)
        if (k <= n && !memcmp(s + n - k, marker, k)) return k;
    return 0;
}

/* JSON's whitespace (RFC 8259): space, tab, newline, carriage return. */
static inline bool sp_json_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

#endif
