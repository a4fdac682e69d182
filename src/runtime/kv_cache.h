/* The KV cache: per layer, a pool of cells, each holding one token's keys
 * and values. A cell belongs to one sequence; each sequence keeps its cells
 * ordered by position, so it can be truncated (roll back a turn) or cleared
 * without touching the others. Sized once; nothing is allocated after.
 * Keys and values each have their own type; a quantized row (Q8_0, Q4_0)
 * is quantized as it is written and stays so: attention decodes it.
 *
 * As llama.cpp does (since its 2026 tree), a quantized side is kept in a
 * rotated basis where the heads allow: each run of rotate_k (rotate_v)
 * elements of a head's keys (values) times the orthonormal Walsh-Hadamard
 * matrix, which spreads an outlier over the run so that one block's scale
 * no longer swamps its small elements. Queries are rotated as the keys
 * (q.k is unchanged), and each attention output rotated back (the matrix
 * is its own inverse). rotate_k: the largest power of two from 64 that
 * divides the head; rotate_v: 64; 0 where the side is not quantized or its
 * heads are no multiple of 64. */
#ifndef SPROUT_RUNTIME_KV_CACHE_H
#define SPROUT_RUNTIME_KV_CACHE_H

#include <stdint.h>

#include "kernels/kernels.h"
#include "sprout.h"

typedef struct sp_kv_seq {
    int32_t *cells; /* ordered by position */
    int32_t n;
} sp_kv_seq;

/* The element types of a cache's keys and values. */
typedef struct sp_kv_types {
    sp_kv_type k, v;
} sp_kv_types;

typedef struct sp_kv_cache {
    sp_kv_types type;
    int32_t n_cells, n_layer, n_seq;
    int64_t k_row, v_row; /* elements per cell and layer */
    int32_t rotate_k, rotate_v; /* above */
    void **k, **v;        /* [layer] -> n_cells rows */
    int32_t *cell_pos;    /* position of each cell (-1: free) */
    int32_t *free_cells;
    int32_t n_free;
    sp_kv_seq *seqs;
    float *shift_row;     /* a key row as floats, for a context shift */
} sp_kv_cache;

/* SPROUT_ERR_UNSUPPORTED when a block type's rows cannot hold whole blocks
 * per head (head_dim: the heads' width, a row being heads of it). */
sprout_status sp_kv_init(sp_kv_cache *kv, sp_kv_types type, int64_t head_dim, int32_t n_cells, int32_t n_layer, int32_t n_seq, int64_t k_row,
                         int64_t v_row);
void sp_kv_free(sp_kv_cache *kv);
/* Bytes one token takes in the cache: its keys and values in every layer. */
size_t sp_kv_bytes_per_token(const sp_kv_cache *kv);
/* Whether t is a KV type, and its name ("f32", "f16", "bf16", "q8_0",
 * "q4_0"; NULL for a value that is none). */
const char *sp_kv_type_name(sp_kv_type t);
/* Keeps the first `keep` cells (by position) of a sequence. */
void sp_kv_truncate(sp_kv_cache *kv, int32_t seq, int32_t keep);
static inline void sp_kv_clear(sp_kv_cache *kv, int32_t seq) { sp_kv_truncate(kv, seq, 0); }
/* Appends a cell for (seq, pos); pos must exceed the sequence's last. */
sprout_status sp_kv_append(sp_kv_cache *kv, int32_t seq, int32_t pos, int32_t *cell);
/* A row of n floats into a cache row of type t: converted, or quantized
 * block by block (a head's blocks are its own: heads are whole blocks). */
void sp_kv_store_row(const float *x, void *dst, sp_kv_type t, int64_t n);
/* A cache row of type t back into n floats. */
void sp_kv_load_row(const void *src, float *x, sp_kv_type t, int64_t n);
/* Each run of `size` elements of x[0, n) times the orthonormal
 * Walsh-Hadamard matrix (size 0: none); its own inverse. */
void sp_kv_rotate(float *x, int64_t n, int32_t size);
/* Context shift (llama.cpp's): drops seq's cells at positions
 * [keep, keep + discard) and moves the later ones down by `discard`
 * positions, their keys turned back by that many positions of the model's
 * RoPE (dequantized, out of and back into the rotated basis, requantized).
 * SPROUT_ERR_UNSUPPORTED for a model whose positions cannot be shifted
 * (sp_kv_shift_check). */
struct sprout_model;
sprout_status sp_kv_shift(sp_kv_cache *kv, const struct sprout_model *model, int32_t seq, int32_t keep, int32_t discard);
/* Why a model's cache cannot be shifted (learned positions, sliding
 * windows), as an error; SPROUT_OK when it can. */
sprout_status sp_kv_shift_check(const struct sprout_model *model);
/* Cells of seq with position <= pos (a prefix of its list). */
int32_t sp_kv_visible(const sp_kv_cache *kv, int32_t seq, int32_t pos);
/* The first cell index (in seq's list) with position > pos - window. */
int32_t sp_kv_window_start(const sp_kv_cache *kv, int32_t seq, int32_t pos, int32_t window);

#endif
