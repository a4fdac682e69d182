#include "files.h"

#include <stdlib.h>

char *cli_read_stream(FILE *f, size_t *len) {
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
    if (buf && ferror(f)) {
        free(buf);
        buf = NULL;
    }
    if (buf) {
        buf[n] = 0;
        if (len) *len = n;
    }
    return buf;
}

char *cli_read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = cli_read_stream(f, len);
    fclose(f);
    return buf;
}

int cli_print_json(json_t *v) {
    if (!v) return 1;
    int rc = json_dumpf(v, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(16));
    fputc('\n', stdout);
    return rc == 0 ? 0 : 1;
}
