// Turns llama-imatrix's GGUF output into the *.imatrix.json kept here (README.md there): not built with sprout.
// Floats are printed with 9 significant digits, which read back as the same float.
#include <stdio.h>
#include <string.h>

#include "sprout.h"

static int fail(const char *what) {
    fprintf(stderr, "%s: %s\n", what, sprout_last_error());
    return 1;
}

static void print_floats(const float *v, int64_t n) {
    for (int64_t i = 0; i < n; i++) printf("%s%.9g", i ? ", " : "", (double)v[i]);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s NAME.imatrix.gguf > NAME.imatrix.json\n", argv[0]);
        return 2;
    }
    sprout_gguf *g = NULL;
    if (sprout_gguf_open(argv[1], &g) != SPROUT_OK) return fail(argv[1]);
    const char *type = NULL;
    size_t type_len = 0;
    uint32_t chunk_count = 0, chunk_size = 0;
    const sprout_gguf_value *datasets = NULL;
    if (sprout_gguf_get_str(g, "general.type", &type, &type_len) != SPROUT_OK ||
        sprout_gguf_get_array(g, "imatrix.datasets", &datasets, NULL, NULL) != SPROUT_OK ||
        sprout_gguf_get_u32(g, "imatrix.chunk_count", &chunk_count) != SPROUT_OK ||
        sprout_gguf_get_u32(g, "imatrix.chunk_size", &chunk_size) != SPROUT_OK || sprout_gguf_kv_count(g) != 4)
        return fail("not llama-imatrix's four keys");
    printf("{\n  \"general.type\": \"%.*s\",\n  \"imatrix.datasets\": [", (int)type_len, type);
    for (uint64_t i = 0; i < sprout_gguf_array_len(datasets); i++) {
        const char *s = NULL;
        size_t len = 0;
        if (sprout_gguf_array_str(datasets, i, &s, &len) != SPROUT_OK || memchr(s, '"', len) || memchr(s, '\\', len))
            return fail("a dataset name JSON would need escaped");
        printf("%s\"%.*s\"", i ? ", " : "", (int)len, s);
    }
    printf("],\n  \"imatrix.chunk_count\": %u,\n  \"imatrix.chunk_size\": %u,\n  \"entries\": [", chunk_count, chunk_size);
    // llama-imatrix writes NAME.in_sum2 then NAME.counts, names sorted
    const int64_t n = sprout_gguf_tensor_count(g);
    for (int64_t t = 0; t + 1 < n; t += 2) {
        const char *sums = sprout_gguf_tensor_name(g, t), *counts = sprout_gguf_tensor_name(g, t + 1);
        const size_t stem = strlen(sums) - strlen(".in_sum2");
        if (strlen(sums) <= strlen(".in_sum2") || strcmp(sums + stem, ".in_sum2") || strncmp(counts, sums, stem) ||
            strcmp(counts + stem, ".counts") || sprout_gguf_tensor_type(g, t) != SPROUT_TYPE_F32 ||
            sprout_gguf_tensor_type(g, t + 1) != SPROUT_TYPE_F32)
            return fail("not an F32 NAME.in_sum2, NAME.counts pair");
        printf("%s\n    {\"name\": \"%.*s\",\n     \"counts\": [", t ? "," : "", (int)stem, sums);
        print_floats(sprout_gguf_tensor_data(g, t + 1), sprout_gguf_tensor_elements(g, t + 1));
        printf("],\n     \"in_sum2\": [");
        print_floats(sprout_gguf_tensor_data(g, t), sprout_gguf_tensor_elements(g, t));
        printf("]}");
    }
    printf("\n  ]\n}\n");
    sprout_gguf_close(g);
    return n % 2 ? fail("an odd tensor count") : 0;
}
