/* Code points of UTF-8 text as Python's str sees them, for the built-in
 * library; bytes that are not UTF-8 count one character each. */
#include <utf8proc.h>

#include "template/text_internal.h"

int32_t tpl_decode(const char *s, size_t n, size_t *cl) {
    utf8proc_int32_t cp;
    utf8proc_ssize_t r = utf8proc_iterate((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)n, &cp);
    if (r <= 0) {
        *cl = 1;
        return (unsigned char)s[0];
    }
    *cl = (size_t)r;
    return cp;
}

size_t tpl_char_count(const char *s, size_t n) {
    size_t count = 0;
    for (size_t i = 0, cl; i < n; i += cl, count++) tpl_decode(s + i, n - i, &cl);
    return count;
}

size_t tpl_char_prefix_bytes(const char *s, size_t n, size_t chars) {
    size_t b = 0, cl;
    for (size_t c = 0; c < chars && b < n; c++, b += cl) tpl_decode(s + b, n - b, &cl);
    return b;
}

void tpl_put_cp(jbuf *b, int32_t cp) {
    utf8proc_uint8_t tmp[4];
    utf8proc_ssize_t n = utf8proc_encode_char(cp, tmp);
    jbuf_put(b, (const char *)tmp, (size_t)n);
}

bool tpl_isspace(int32_t c) {
    return c == ' ' || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

