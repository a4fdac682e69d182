#include "runtime/kv_cache.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"

const char *sp_kv_type_name(sp_kv_type t) {
    switch (t) {
    case SP_KV_F32: return "f32";
    case SP_KV_F16: return "f16";
    case SP_KV_BF16: return "bf16";
    case SP_KV_Q8_0: return "q8_0";
    case SP_KV_Q4_0: return "q4_0";
    }
    return NULL;
}

sprout_status sp_kv_init(sp_kv_cache *kv, sp_kv_types type, int64_t head_dim, int32_t n_cells, int32_t n_layer, int32_t n_seq,
                         int64_t k_row, int64_t v_row) {
    memset(kv, 0, sizeof *kv);
    const sp_kv_type sides[2] = {type.k, type.v};
    for (int i = 0; i < 2; i++) {
        if (!sp_kv_type_name(sides[i])) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "KV cache type %d is none of f32, f16, bf16, q8_0, q4_0", (int)sides[i]);
        if (head_dim % sp_kv_block(sides[i]))
            return sp_fail(SPROUT_ERR_UNSUPPORTED, "a %s KV cache needs heads of a multiple of %d elements; this model's have %lld",
                           sp_kv_type_name(sides[i]), (int)sp_kv_block(sides[i]), (long long)head_dim);
    }
    kv->type = type;
    const bool quantized_k = sp_kv_block(type.k) > 1, quantized_v = sp_kv_block(type.v) > 1;
    if (quantized_k && head_dim % 64 == 0)
        for (kv->rotate_k = 64; head_dim % (2 * kv->rotate_k) == 0;) kv->rotate_k *= 2;
    kv->rotate_v = quantized_v && head_dim % 64 == 0 ? 64 : 0;
    kv->n_cells = n_cells;
    kv->n_layer = n_layer;
    kv->n_seq = n_seq;
    kv->k_row = k_row;
    kv->v_row = v_row;
    kv->k = calloc((size_t)n_layer, sizeof *kv->k);
    kv->v = calloc((size_t)n_layer, sizeof *kv->v);
    kv->cell_pos = malloc((size_t)n_cells * sizeof *kv->cell_pos);
    kv->free_cells = malloc((size_t)n_cells * sizeof *kv->free_cells);
    kv->seqs = calloc((size_t)n_seq, sizeof *kv->seqs);
    bool ok = kv->k && kv->v && kv->cell_pos && kv->free_cells && kv->seqs;
    for (int32_t l = 0; ok && l < n_layer; l++) {
        /* calloc: untouched pages stay unmapped until used */
        kv->k[l] = calloc((size_t)n_cells, sp_kv_bytes(type.k, k_row));
        kv->v[l] = calloc((size_t)n_cells, sp_kv_bytes(type.v, v_row));
        ok = kv->k[l] && kv->v[l];
    }
    for (int32_t s = 0; ok && s < n_seq; s++) ok = (kv->seqs[s].cells = malloc((size_t)n_cells * sizeof(int32_t))) != NULL;
    if (!ok) {
        sp_kv_free(kv);
        return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory for a KV cache of %d cells", n_cells);
    }
    for (int32_t c = 0; c < n_cells; c++) {
        kv->cell_pos[c] = -1;
        kv->free_cells[c] = n_cells - 1 - c; /* pop from the end: cell 0 first */
    }
    kv->n_free = n_cells;
    return SPROUT_OK;
}

void sp_kv_free(sp_kv_cache *kv) {
    for (int32_t l = 0; l < kv->n_layer; l++) {
        if (kv->k) free(kv->k[l]);
        if (kv->v) free(kv->v[l]);
    }
    for (int32_t s = 0; kv->seqs && s < kv->n_seq; s++) free(kv->seqs[s].cells);
    free(kv->k);
    free(kv->v);
    free(kv->cell_pos);
    free(kv->free_cells);
    free(kv->seqs);
    memset(kv, 0, sizeof *kv);
}

size_t sp_kv_bytes_per_token(const sp_kv_cache *kv) {
    return (size_t)kv->n_layer * (sp_kv_bytes(kv->type.k, kv->k_row) + sp_kv_bytes(kv->type.v, kv->v_row));
}

void sp_kv_truncate(sp_kv_cache *kv, int32_t seq, int32_t keep) {
    sp_kv_seq *s = &kv->seqs[seq];
    if (keep < 0) keep = 0;
    while (s->n > keep) {
        int32_t cell = s->cells[--s->n];
        kv->cell_pos[cell] = -1;
        kv->free_cells[kv->n_free++] = cell;
    }
}

sprout_status sp_kv_append(sp_kv_cache *kv, int32_t seq, int32_t pos, int32_t *cell) {
    sp_kv_seq *s = &kv->seqs[seq];
    if (s->n > 0 && kv->cell_pos[s->cells[s->n - 1]] >= pos)
        return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "sequence %d: position %d after position %d", seq, pos,
                       kv->cell_pos[s->cells[s->n - 1]]);
    if (kv->n_free == 0) return sp_fail(SPROUT_ERR_OUT_OF_RANGE, "the KV cache is full (%d cells)", kv->n_cells);
    int32_t c = kv->free_cells[--kv->n_free];
    kv->cell_pos[c] = pos;
    s->cells[s->n++] = c;
    *cell = c;
    return SPROUT_OK;
}

int32_t sp_kv_visible(const sp_kv_cache *kv, int32_t seq, int32_t pos) {
    const sp_kv_seq *s = &kv->seqs[seq];
    int32_t lo = 0, hi = s->n; /* first index with position > pos */
    while (lo < hi) {
        int32_t mid = (lo + hi) / 2;
        if (kv->cell_pos[s->cells[mid]] <= pos) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

int32_t sp_kv_window_start(const sp_kv_cache *kv, int32_t seq, int32_t pos, int32_t window) {
    const sp_kv_seq *s = &kv->seqs[seq];
    int32_t lo = 0, hi = s->n; /* first index with pos - cell_pos < window */
    while (lo < hi) {
        int32_t mid = (lo + hi) / 2;
        if (pos - kv->cell_pos[s->cells[mid]] >= window) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}
