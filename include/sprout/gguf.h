/* sprout/gguf.h: reading GGUF files.
 * Part of <sprout.h>, whose conventions hold here. */
#ifndef SPROUT_API_GGUF_H
#define SPROUT_API_GGUF_H

#include "types.h"

SPROUT_BEGIN_DECLS

/* ---------------------------------------------------------------------------
 * GGUF files
 *
 * A sprout_gguf is a parsed, validated GGUF model mapped read-only into
 * memory: one file, or every part of a split model
 * ("name-00001-of-00003.gguf" and its siblings) presented as one. Tensor
 * data are views into the mapping, never copies.
 *
 *   sprout_gguf *g = NULL;
 *   if (sprout_gguf_open(path, &g) != SPROUT_OK) {
 *       fprintf(stderr, "%s\n", sprout_last_error());
 *       return 1;
 *   }
 *   uint32_t n_layer;
 *   if (sprout_gguf_get_u32(g, "llama.block_count", &n_layer) == SPROUT_OK) ...
 *   sprout_gguf_close(g);
 * ------------------------------------------------------------------------- */
typedef struct sprout_gguf sprout_gguf;
typedef struct sprout_gguf_value sprout_gguf_value;

/* Metadata value types; the numeric values are those of the GGUF format. */
typedef enum sprout_gguf_type {
    SPROUT_GGUF_UINT8 = 0,
    SPROUT_GGUF_INT8 = 1,
    SPROUT_GGUF_UINT16 = 2,
    SPROUT_GGUF_INT16 = 3,
    SPROUT_GGUF_UINT32 = 4,
    SPROUT_GGUF_INT32 = 5,
    SPROUT_GGUF_FLOAT32 = 6,
    SPROUT_GGUF_BOOL = 7,
    SPROUT_GGUF_STRING = 8,
    SPROUT_GGUF_ARRAY = 9,
    SPROUT_GGUF_UINT64 = 10,
    SPROUT_GGUF_INT64 = 11,
    SPROUT_GGUF_FLOAT64 = 12
} sprout_gguf_type;

/* "u32", "string", "array", ... */
const char *sprout_gguf_type_name(sprout_gguf_type type);

/* Opens, maps and validates a GGUF file (and its sibling parts, if it is one
 * part of a split model). On failure *out is NULL and the message names the
 * problem and where it is (key or tensor name, byte offset). */
sprout_status sprout_gguf_open(const char *path, sprout_gguf **out);
void sprout_gguf_close(sprout_gguf *gguf);

uint32_t sprout_gguf_version(const sprout_gguf *gguf);
/* Bytes of all parts together. */
uint64_t sprout_gguf_file_size(const sprout_gguf *gguf);
uint32_t sprout_gguf_split_count(const sprout_gguf *gguf);
uint32_t sprout_gguf_alignment(const sprout_gguf *gguf);

/* Metadata, in file order (of the first part, for split models). */
int64_t sprout_gguf_kv_count(const sprout_gguf *gguf);
const char *sprout_gguf_kv_key(const sprout_gguf *gguf, int64_t index);
const sprout_gguf_value *sprout_gguf_kv_value(const sprout_gguf *gguf, int64_t index);
/* The value of `key`, or NULL when the file has no such key. */
const sprout_gguf_value *sprout_gguf_find(const sprout_gguf *gguf, const char *key);

/* Typed look-ups by key. SPROUT_ERR_NOT_FOUND if the key is absent,
 * SPROUT_ERR_TYPE_MISMATCH if it holds another kind of value,
 * SPROUT_ERR_OUT_OF_RANGE if an integer does not fit. Integer getters accept
 * any integer type whose value fits; float getters accept f32 and f64. */
sprout_status sprout_gguf_get_u32(const sprout_gguf *gguf, const char *key, uint32_t *out);
sprout_status sprout_gguf_get_i32(const sprout_gguf *gguf, const char *key, int32_t *out);
sprout_status sprout_gguf_get_u64(const sprout_gguf *gguf, const char *key, uint64_t *out);
sprout_status sprout_gguf_get_f32(const sprout_gguf *gguf, const char *key, float *out);
sprout_status sprout_gguf_get_bool(const sprout_gguf *gguf, const char *key, bool *out);
sprout_status sprout_gguf_get_str(const sprout_gguf *gguf, const char *key, const char **str, size_t *len);
/* An array value; elem_type may be NULL to accept any element type. */
sprout_status sprout_gguf_get_array(const sprout_gguf *gguf, const char *key, const sprout_gguf_value **array,
                                    sprout_gguf_type *elem_type, uint64_t *count);

/* Values (from sprout_gguf_find, _kv_value or _array_elem). */
sprout_gguf_type sprout_gguf_value_type(const sprout_gguf_value *value);
sprout_status sprout_gguf_value_u64(const sprout_gguf_value *value, uint64_t *out);
sprout_status sprout_gguf_value_i64(const sprout_gguf_value *value, int64_t *out);
sprout_status sprout_gguf_value_f64(const sprout_gguf_value *value, double *out);
sprout_status sprout_gguf_value_bool(const sprout_gguf_value *value, bool *out);
sprout_status sprout_gguf_value_str(const sprout_gguf_value *value, const char **str, size_t *len);
/* Arrays: element type, element count, and element i (bounds-checked). */
sprout_gguf_type sprout_gguf_array_type(const sprout_gguf_value *array);
uint64_t sprout_gguf_array_len(const sprout_gguf_value *array);
sprout_status sprout_gguf_array_u64(const sprout_gguf_value *array, uint64_t i, uint64_t *out);
sprout_status sprout_gguf_array_i64(const sprout_gguf_value *array, uint64_t i, int64_t *out);
sprout_status sprout_gguf_array_f64(const sprout_gguf_value *array, uint64_t i, double *out);
sprout_status sprout_gguf_array_bool(const sprout_gguf_value *array, uint64_t i, bool *out);
sprout_status sprout_gguf_array_str(const sprout_gguf_value *array, uint64_t i, const char **str, size_t *len);
/* Element i of an array of arrays. */
const sprout_gguf_value *sprout_gguf_array_elem(const sprout_gguf_value *array, uint64_t i);

/* Tensors, in file order (part by part). */
int64_t sprout_gguf_tensor_count(const sprout_gguf *gguf);
/* Index of the tensor called `name`, or -1. */
int64_t sprout_gguf_find_tensor(const sprout_gguf *gguf, const char *name);
const char *sprout_gguf_tensor_name(const sprout_gguf *gguf, int64_t index);
sprout_type sprout_gguf_tensor_type(const sprout_gguf *gguf, int64_t index);
int sprout_gguf_tensor_n_dims(const sprout_gguf *gguf, int64_t index);
/* Extent of dimension d (0 = the contiguous one); 1 for d >= n_dims. */
int64_t sprout_gguf_tensor_dim(const sprout_gguf *gguf, int64_t index, int d);
int64_t sprout_gguf_tensor_elements(const sprout_gguf *gguf, int64_t index);
uint64_t sprout_gguf_tensor_bytes(const sprout_gguf *gguf, int64_t index);
/* Absolute byte offset of the data inside its part, and that part's index. */
uint64_t sprout_gguf_tensor_file_offset(const sprout_gguf *gguf, int64_t index);
uint32_t sprout_gguf_tensor_part(const sprout_gguf *gguf, int64_t index);
/* The data, a view into the read-only mapping. */
const void *sprout_gguf_tensor_data(const sprout_gguf *gguf, int64_t index);

SPROUT_END_DECLS

#endif /* SPROUT_API_GGUF_H */
