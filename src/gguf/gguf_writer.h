/* Writes GGUF files (version 3): metadata of every value type, the tensor
 * table, alignment padding, and optional splitting into parts that both
 * sprout's reader and llama.cpp load as one model. Files appear atomically:
 * each part is written to a temporary file, synced, and renamed only when all
 * parts are complete, so an interrupted run never leaves a truncated file
 * under the output name. */
#ifndef SPROUT_GGUF_WRITER_H
#define SPROUT_GGUF_WRITER_H

#include <stdbool.h>
#include <stdint.h>

#include "sprout.h"

typedef struct sp_gguf_writer sp_gguf_writer;

sp_gguf_writer *sp_gguf_writer_new(void);
void sp_gguf_writer_free(sp_gguf_writer *w);

/* Metadata. Setting a key again replaces its value (keeping its place).
 * Scalars are passed as a pointer to the C type matching `type` (uint8_t for
 * u8 ... double for f64, bool for bool). Arrays of numbers are packed C arrays
 * of that type. */
sprout_status sp_gguf_writer_set_scalar(sp_gguf_writer *w, const char *key, sprout_gguf_type type, const void *value);
sprout_status sp_gguf_writer_set_str(sp_gguf_writer *w, const char *key, const char *str, size_t len);
sprout_status sp_gguf_writer_set_array(sp_gguf_writer *w, const char *key, sprout_gguf_type elem_type, const void *data,
                                       uint64_t count);
sprout_status sp_gguf_writer_set_str_array(sp_gguf_writer *w, const char *key, const char *const *strs, const size_t *lens,
                                           uint64_t count);
/* Copies a value read from another file, nested arrays included. */
sprout_status sp_gguf_writer_set_value(sp_gguf_writer *w, const char *key, const sprout_gguf_value *value);
/* Copies every key of `src` (except split.*, which the writer manages). */
sprout_status sp_gguf_writer_copy_metadata(sp_gguf_writer *w, const sprout_gguf *src);
sprout_status sp_gguf_writer_remove(sp_gguf_writer *w, const char *key);
/* general.alignment (a power of two; default 32). */
sprout_status sp_gguf_writer_set_alignment(sp_gguf_writer *w, uint32_t alignment);

/* Tensors, in output order. `data` (row-major, ne[0] contiguous) must stay
 * valid until the write; NULL means the fill callback provides it. */
sprout_status sp_gguf_writer_add_tensor(sp_gguf_writer *w, const char *name, sprout_type type, int n_dims,
                                        const int64_t *ne, const void *data);
/* Tensor `index` of `src` (its name and shape) as `type`, with data as above:
 * how a converter carries a file's tensors over. */
sprout_status sp_gguf_writer_add_tensor_like(sp_gguf_writer *w, const sprout_gguf *src, int64_t index, sprout_type type,
                                             const void *data);

/* Produces the data of tensor `index` (bytes long) into dst. */
typedef sprout_status (*sp_gguf_fill_fn)(void *user, int64_t index, void *dst, uint64_t bytes);

typedef struct sp_gguf_write_options {
    uint64_t split_max_bytes;   /* 0: no limit; else no part file exceeds it (unless one tensor does) */
    int64_t split_max_tensors;  /* 0: no limit */
    sp_gguf_fill_fn fill;       /* for tensors added with data == NULL */
    void *fill_user;
} sp_gguf_write_options;

/* Writes `path` (or, if the options split it into N > 1 parts,
 * PATH_WITHOUT_.gguf-00001-of-0000N.gguf ...). *n_parts_out (optional) gets
 * the number of parts written. */
sprout_status sp_gguf_writer_write(sp_gguf_writer *w, const char *path, const sp_gguf_write_options *opts,
                                   uint32_t *n_parts_out);

/* The name of part i (0-based) of n for an output path: "x.gguf" ->
 * "x-00001-of-00003.gguf". The caller frees the result. */
char *sp_gguf_split_path(const char *path, uint32_t i, uint32_t n);

#endif
