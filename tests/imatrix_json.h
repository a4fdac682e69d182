/* Writes an importance matrix kept as JSON (tests/data/quant_iq/README.md)
 * back into the GGUF llama-imatrix made, so the repository holds no GGUF:
 * the same four keys of the same types, then per entry NAME.in_sum2 (F32
 * [ne0, n_mat]) and NAME.counts (F32 [1, n_mat]), each with the dimensions
 * ggml stores (trailing ones dropped), in the JSON's (sorted) order. Made
 * from llama-imatrix's files, these come out byte for byte as they were. */
#ifndef SPROUT_TEST_IMATRIX_JSON_H
#define SPROUT_TEST_IMATRIX_JSON_H

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf_writer.h"

/* A JSON array of numbers as floats (the caller frees them), or NULL. */
static inline float *imatrix_json_floats(const json_t *array, int64_t *n) {
    *n = (int64_t)json_array_size(array);
    float *v = *n > 0 ? malloc((size_t)*n * sizeof *v) : NULL;
    for (int64_t i = 0; v && i < *n; i++) {
        const json_t *x = json_array_get(array, (size_t)i);
        if (!json_is_number(x)) {
            free(v);
            return NULL;
        }
        v[i] = (float)json_number_value(x);
    }
    return v;
}

static inline bool imatrix_json_metadata(sp_gguf_writer *w, const json_t *root) {
    const char *type = json_string_value(json_object_get(root, "general.type"));
    const json_t *datasets = json_object_get(root, "imatrix.datasets");
    const json_t *chunk_count = json_object_get(root, "imatrix.chunk_count"), *chunk_size = json_object_get(root, "imatrix.chunk_size");
    if (!type || !json_is_array(datasets) || json_array_size(datasets) > 16 || !json_is_integer(chunk_count) || !json_is_integer(chunk_size))
        return false;
    const char *names[16];
    size_t lens[16];
    for (size_t i = 0; i < json_array_size(datasets); i++) {
        names[i] = json_string_value(json_array_get(datasets, i));
        if (!names[i]) return false;
        lens[i] = strlen(names[i]);
    }
    const uint32_t count = (uint32_t)json_integer_value(chunk_count), size = (uint32_t)json_integer_value(chunk_size);
    return sp_gguf_writer_set_str(w, "general.type", type, strlen(type)) == SPROUT_OK &&
           sp_gguf_writer_set_str_array(w, "imatrix.datasets", names, lens, json_array_size(datasets)) == SPROUT_OK &&
           sp_gguf_writer_set_scalar(w, "imatrix.chunk_count", SPROUT_GGUF_UINT32, &count) == SPROUT_OK &&
           sp_gguf_writer_set_scalar(w, "imatrix.chunk_size", SPROUT_GGUF_UINT32, &size) == SPROUT_OK;
}

/* Writes json_path's matrix to gguf_path; false (with a message on stderr)
 * if the JSON is not one of these files or the write fails. */
static inline bool imatrix_json_to_gguf(const char *json_path, const char *gguf_path) {
    json_error_t error;
    json_t *root = json_load_file(json_path, 0, &error);
    const json_t *entries = json_object_get(root, "entries");
    const size_t n_entries = json_array_size(entries);
    sp_gguf_writer *w = sp_gguf_writer_new();
    float **data = calloc(2 * n_entries + 1, sizeof *data); /* alive until the write */
    bool ok = root && w && data && n_entries > 0 && imatrix_json_metadata(w, root);
    for (size_t e = 0; ok && e < n_entries; e++) {
        const json_t *entry = json_array_get(entries, e);
        const char *name = json_string_value(json_object_get(entry, "name"));
        int64_t n_sums = 0, n_mat = 0;
        float *sums = data[2 * e] = imatrix_json_floats(json_object_get(entry, "in_sum2"), &n_sums);
        float *counts = data[2 * e + 1] = imatrix_json_floats(json_object_get(entry, "counts"), &n_mat);
        char tensor[256];
        ok = name && sums && counts && n_sums % n_mat == 0;
        if (!ok) break;
        const int64_t sums_ne[2] = {n_sums / n_mat, n_mat}, counts_ne[2] = {1, n_mat};
        snprintf(tensor, sizeof tensor, "%s.in_sum2", name);
        ok = sp_gguf_writer_add_tensor(w, tensor, SPROUT_TYPE_F32, n_mat > 1 ? 2 : 1, sums_ne, sums) == SPROUT_OK;
        snprintf(tensor, sizeof tensor, "%s.counts", name);
        ok = ok && sp_gguf_writer_add_tensor(w, tensor, SPROUT_TYPE_F32, n_mat > 1 ? 2 : 1, counts_ne, counts) == SPROUT_OK;
    }
    ok = ok && sp_gguf_writer_write(w, gguf_path, NULL, NULL) == SPROUT_OK;
    if (!ok) fprintf(stderr, "%s: cannot write it as %s: %s %s\n", json_path, gguf_path, root ? "" : error.text, sprout_last_error());
    for (size_t i = 0; data && i < 2 * n_entries; i++) free(data[i]);
    free(data);
    sp_gguf_writer_free(w);
    json_decref(root);
    return ok;
}

#endif
