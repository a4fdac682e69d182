#include "files.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sprout.h"

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

/* A flag's file, read whole into *text (and *owned); false after saying why. */
static bool read_flag_file(const char *cmd, const char *flag, const char *path, const char **text, char **owned) {
    errno = 0;
    size_t len = 0;
    char *buf = cli_read_file(path, &len);
    if (!buf) {
        fprintf(stderr, "sprout %s: %s %s: cannot read the file: %s\n", cmd, flag, path, errno ? strerror(errno) : "out of memory");
        return false;
    }
    if (strlen(buf) != len) {
        fprintf(stderr, "sprout %s: %s %s: the file contains a NUL byte\n", cmd, flag, path);
        free(buf);
        return false;
    }
    *text = *owned = buf;
    return true;
}

int cli_structured_output(const char *cmd, const char **grammar, const char *grammar_file, const char **schema, const char *schema_file,
                          char *owned[2]) {
    owned[0] = owned[1] = NULL;
    if ((*grammar || grammar_file) && (*schema || schema_file)) {
        fprintf(stderr, "sprout %s: --grammar and --json-schema: one or the other\n", cmd);
        return 2;
    }
    if ((*grammar && grammar_file) || (*schema && schema_file)) {
        fprintf(stderr, "sprout %s: %s: the text or the file, not both\n", cmd, *grammar ? "--grammar and --grammar-file" : "--json-schema and --json-schema-file");
        return 2;
    }
    if (grammar_file && !read_flag_file(cmd, "--grammar-file", grammar_file, grammar, &owned[0])) return 1;
    if (schema_file && !read_flag_file(cmd, "--json-schema-file", schema_file, schema, &owned[1])) return 1;
    if (*schema) { /* refused now, before the model loads, as llama.cpp converts it while parsing its flags */
        char *converted = NULL;
        const sprout_status st = sprout_json_schema_to_grammar(*schema, strlen(*schema), &converted);
        sprout_free(converted);
        if (st != SPROUT_OK) {
            fprintf(stderr, "sprout %s: %s: %s\n", cmd, schema_file ? "--json-schema-file" : "--json-schema", sprout_last_error());
            free(owned[1]);
            owned[1] = NULL;
            return 1;
        }
    }
    return -1;
}
