/* Build step: writes a C file holding the web page's files, each raw and
 * gzipped, as the table src/server/webui_assets.h declares.
 *
 *   embed_assets OUT.c NAME FILE GZFILE [NAME FILE GZFILE ...]
 *
 * GZFILE "-" leaves the compressed copy out (a build without gzip). The
 * output is written beside, then renamed, so an interrupted build leaves
 * no half file that make would take as current. */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/webui_assets.h"

static unsigned char *read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    unsigned char *data = malloc(cap);
    while (data) {
        n += fread(data + n, 1, cap - n, f);
        if (n < cap) break;
        unsigned char *more = realloc(data, cap *= 2);
        if (!more) free(data);
        data = more;
    }
    const int failed = ferror(f);
    fclose(f);
    if (failed) {
        free(data);
        return NULL;
    }
    *len = n;
    return data;
}

static void write_array(FILE *out, const char *label, size_t index, const unsigned char *data, size_t len) {
    fprintf(out, "static const unsigned char %s_%zu[%zu] = {", label, index, len ? len : 1);
    for (size_t i = 0; i < len; i++) fprintf(out, "%s%u,", i % 24 ? "" : "\n", data[i]);
    fprintf(out, "%s};\n", len ? "\n" : "0");
}

int main(int argc, char **argv) {
    if (argc < 2 || (argc - 2) % 3) {
        fprintf(stderr, "usage: embed_assets OUT.c NAME FILE GZFILE [NAME FILE GZFILE ...]\n");
        return 2;
    }
    const size_t n = (size_t)(argc - 2) / 3;
    for (size_t i = 0; i < n; i++) /* names go into C strings and URLs as they are */
        if (!*argv[2 + 3 * i] || strspn(argv[2 + 3 * i], "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != strlen(argv[2 + 3 * i])) {
            fprintf(stderr, "embed_assets: bad asset name '%s' (letters, digits, '.', '_', '-')\n", argv[2 + 3 * i]);
            return 2;
        }
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", argv[1]);
    FILE *out = fopen(tmp, "w");
    if (!out) {
        fprintf(stderr, "embed_assets: cannot write %s\n", tmp);
        return 1;
    }
    fprintf(out, "/* Written by tools/embed_assets.c at build time: do not edit. */\n#include \"server/webui_assets.h\"\n\n");
    uint64_t *hash = calloc(n ? n : 1, sizeof *hash);
    size_t *lens = calloc(n ? n : 1, sizeof *lens), *gz_lens = calloc(n ? n : 1, sizeof *gz_lens);
    if (!hash || !lens || !gz_lens) return 1;
    for (size_t i = 0; i < n; i++) {
        const char *path = argv[3 + 3 * i], *gz_path = argv[4 + 3 * i];
        unsigned char *data = read_all(path, &lens[i]);
        if (!data) {
            fprintf(stderr, "embed_assets: cannot read %s\n", path);
            fclose(out);
            remove(tmp);
            return 1;
        }
        hash[i] = sp_webui_hash(data, lens[i]);
        write_array(out, "raw", i, data, lens[i]);
        free(data);
        if (strcmp(gz_path, "-")) {
            unsigned char *gz = read_all(gz_path, &gz_lens[i]);
            if (!gz || gz_lens[i] < 18 || gz[0] != 0x1f || gz[1] != 0x8b) {
                fprintf(stderr, "embed_assets: %s is not a gzip file\n", gz_path);
                free(gz);
                fclose(out);
                remove(tmp);
                return 1;
            }
            write_array(out, "gz", i, gz, gz_lens[i]);
            free(gz);
        }
    }
    fprintf(out, "\nconst sp_webui_asset sp_webui_assets[] = {\n");
    for (size_t i = 0; i < n; i++) {
        const bool has_gz = strcmp(argv[4 + 3 * i], "-") != 0;
        fprintf(out, "    {\"%s\", raw_%zu, %zu, ", argv[2 + 3 * i], i, lens[i]);
        if (has_gz) fprintf(out, "gz_%zu, %zu, ", i, gz_lens[i]);
        else fprintf(out, "NULL, 0, ");
        fprintf(out, "\"%016" PRIx64 "\"},\n", hash[i]);
    }
    fprintf(out, "    {0}\n};\nconst size_t sp_webui_n_assets = %zu;\n", n);
    free(hash);
    free(lens);
    free(gz_lens);
    if (fclose(out) || rename(tmp, argv[1])) {
        fprintf(stderr, "embed_assets: cannot write %s\n", argv[1]);
        remove(tmp);
        return 1;
    }
    return 0;
}
