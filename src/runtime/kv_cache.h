/* The KV cache: per layer, a pool of cells, each holding one token's keys
 * and values. A cell belongs to one sequence; each sequence keeps its cells
 * ordered by position, so it can be truncated (roll back a turn) or cleared
 * without touching the others. Sized once; nothing is allocated after. */
#ifndef SPROUT_RUNTIME_KV_CACHE_H
#define SPROUT_RUNTIME_KV_CACHE_H

#include <stdint.h>

#include "kernels/kernels.h"
#include "sprout.h"

typedef struct sp_kv_seq {
    int32_t *cells; /* ordered by position */
    int32_t n;
} sp_kv_seq;

typedef struct sp_kv_cache {
    sp_kv_type type;
    int32_t n_cells, n_layer, n_seq;
    int64_t k_row, v_row; /* elements per cell and layer */
    void **k, **v;        /* [layer] -> n_cells rows */
    int32_t *cell_pos;    /* position of each cell (-1: free) */
    int32_t *free_cells;
    int32_t n_free;
    sp_kv_seq *seqs;
} sp_kv_cache;

sprout_status sp_kv_init(sp_kv_cache *kv, sp_kv_type type, int32_t n_cells, int32_t n_layer, int32_t n_seq, int64_t k_row,
                         int64_t v_row);
void sp_kv_free(sp_kv_cache *kv);
/* Keeps the first `keep` cells (by position) of a sequence. */
void sp_kv_truncate(sp_kv_cache *kv, int32_t seq, int32_t keep);
static inline void sp_kv_clear(sp_kv_cache *kv, int32_t seq) { sp_kv_truncate(kv, seq, 0); }
/* Appends a cell for (seq, pos); pos must exceed the sequence's last. */
sprout_status sp_kv_append(sp_kv_cache *kv, int32_t seq, int32_t pos, int32_t *cell);
/* Cells of seq with position <= pos (a prefix of its list). */
int32_t sp_kv_visible(const sp_kv_cache *kv, int32_t seq, int32_t pos);
/* The first cell index (in seq's list) with position > pos - window. */
int32_t sp_kv_window_start(const sp_kv_cache *kv, int32_t seq, int32_t pos, int32_t window);

#endif
