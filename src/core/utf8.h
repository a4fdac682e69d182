/* UTF-8 checks shared by everything that shows file text to a user or puts
 * it into JSON (which must be valid UTF-8). */
#ifndef SPROUT_CORE_UTF8_H
#define SPROUT_CORE_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/* Length of the valid UTF-8 sequence at s[0..n), or 0 if it is invalid or
 * truncated (overlongs, surrogates and code points past U+10FFFF are
 * invalid, as in the Unicode standard). */
size_t sp_utf8_valid_prefix_len(const unsigned char *s, size_t n);

/* True if all n bytes are valid UTF-8. */
bool sp_utf8_is_valid(const char *s, size_t n);

#endif
