#include "core/utf8.h"

#include "sprout.h"

size_t sp_utf8_valid_prefix_len(const unsigned char *s, size_t n) {
    if (n == 0) return 0;
    unsigned c = s[0];
    if (c < 0x80) return 1;
    size_t len;
    unsigned lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0) lo = 0xA0;      /* no overlongs */
        else if (c == 0xED) hi = 0x9F; /* no surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0) lo = 0x90;      /* no overlongs */
        else if (c == 0xF4) hi = 0x8F; /* nothing past U+10FFFF */
    } else {
        return 0;
    }
    if (n < len) return 0;
    if (s[1] < lo || s[1] > hi) return 0;
    for (size_t i = 2; i < len; i++)
        if ((s[i] & 0xC0) != 0x80) return 0;
    return len;
}

bool sp_utf8_is_valid(const char *s, size_t n) {
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        size_t len = sp_utf8_valid_prefix_len(p + i, n - i);
        if (len == 0) return false;
        i += len;
    }
    return true;
}

size_t sprout_utf8_char_len(const char *s, size_t n) {
    return s ? sp_utf8_valid_prefix_len((const unsigned char *)s, n) : 0;
}
