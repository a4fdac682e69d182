/* The format's limits and the parsed form of one GGUF file: what the reader
 * makes, the split-model assembly and the public accessors read, and the
 * writer encodes. Nothing here is copied from the file except names: values
 * and tensor data point into the mapping. */
#ifndef SPROUT_GGUF_READER_H
#define SPROUT_GGUF_READER_H

#include <stdbool.h>
#include <stdint.h>

#include "core/arena.h"
#include "core/mapped_file.h"
#include "sprout.h"

#define SP_GGUF_MAGIC "GGUF"
#define SP_GGUF_DEFAULT_ALIGNMENT 32u
#define SP_GGUF_MAX_DIMS 4
#define SP_GGUF_MAX_KEY_LEN 65535u  /* the format's limit */
#define SP_GGUF_MAX_NAME_LEN 64u    /* tensor names, as the format specifies */
#define SP_GGUF_MAX_ARRAY_DEPTH 8   /* nested arrays; real files use 1 */

typedef struct sp_gguf_str {
    const char *ptr; /* into the mapping */
    uint64_t len;
} sp_gguf_str;

struct sprout_gguf_value {
    sprout_gguf_type type;
    union {
        uint64_t u64;
        int64_t i64;
        double f64;
        bool b;
        sp_gguf_str str;
        struct {
            sprout_gguf_type elem_type;
            uint64_t len;
            const uint8_t *raw;                /* numeric and bool elements, as in the file */
            sp_gguf_str *strs;                 /* string elements */
            struct sprout_gguf_value *items;   /* array elements */
        } arr;
    } as;
};

typedef struct sp_gguf_kv {
    const char *key; /* NUL-terminated copy */
    sprout_gguf_value value;
} sp_gguf_kv;

typedef struct sp_gguf_tensor {
    const char *name; /* NUL-terminated copy */
    sprout_type type;
    int n_dims;
    int64_t ne[SP_GGUF_MAX_DIMS]; /* ne[0] is contiguous; unused dims are 1 */
    int64_t n_elements;
    uint64_t offset;      /* relative to the part's data section */
    uint64_t file_offset; /* absolute, in its part */
    uint64_t bytes;
    uint32_t part;
    const uint8_t *data;
} sp_gguf_tensor;

/* One file, parsed and validated on its own. */
typedef struct sp_gguf_part {
    char *path;
    sp_mapped_file map;
    uint32_t version;
    uint32_t alignment;
    uint64_t data_offset;
    int64_t n_kv;
    sp_gguf_kv *kvs;
    int64_t n_tensors;
    sp_gguf_tensor *tensors;
    sp_arena arena;
} sp_gguf_part;

/* Parses and validates the file at `path` into *part (zeroed by the caller).
 * On failure the message names the file, the problem and where it is;
 * sp_gguf_part_free must still be called. */
sprout_status sp_gguf_part_load(const char *path, sp_gguf_part *part);
/* Parses an in-memory image (the fuzzer's entry point; `name` is used in
 * messages). The bytes must outlive the part. */
sprout_status sp_gguf_part_parse(const uint8_t *data, uint64_t size, const char *name, sp_gguf_part *part);
void sp_gguf_part_free(sp_gguf_part *part);

/* The value of `key` in one part, or NULL. */
const sprout_gguf_value *sp_gguf_part_find(const sp_gguf_part *part, const char *key);

/* Decodes one little-endian scalar of `type` at p into *v. */
void sp_gguf_decode_scalar(sprout_gguf_type type, const uint8_t *p, sprout_gguf_value *v);

/* Element size of a fixed-size value type; 0 for string and array. */
uint64_t sp_gguf_type_size(sprout_gguf_type type);

#endif
