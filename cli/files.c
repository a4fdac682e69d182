#include "files.h"

#include <stdio.h>
#include <stdlib.h>

char *cli_read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 14, n = 0, got;
    char *buf = malloc(cap + 1);
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            char *grown = realloc(buf, (cap *= 2) + 1);
            if (!grown) free(buf);
            buf = grown;
        }
    }
    const int failed = ferror(f);
    fclose(f);
    if (buf && failed) {
        free(buf);
        buf = NULL;
    }
    if (buf) {
        buf[n] = 0;
        if (len) *len = n;
    }
    return buf;
}
