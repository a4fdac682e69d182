#include "runtime/kv_cache.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "model/model.h"
#include "quant/fp16.h"
#include "quant/quant.h"
#include "runtime/vector_ops.h"

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
    kv->shift_row = malloc((size_t)(k_row > 0 ? k_row : 1) * sizeof *kv->shift_row);
    bool ok = kv->k && kv->v && kv->cell_pos && kv->free_cells && kv->seqs && kv->shift_row;
    for (int32_t l = 0; ok && l < n_layer; l++) {
        /* calloc: untouched pages stay unmapped until used */
        kv->k[l] = calloc((size_t)n_cells, sp_kv_bytes(type.k, k_row));
        kv->v[l] = v_row > 0 ? calloc((size_t)n_cells, sp_kv_bytes(type.v, v_row)) : NULL; /* none: values in the keys' rows (MLA) */
        ok = kv->k[l] && (v_row == 0 || kv->v[l]);
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
    free(kv->shift_row);
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

void sp_kv_store_row(const float *x, void *dst, sp_kv_type t, int64_t n) {
    switch (t) {
    case SP_KV_F32: memcpy(dst, x, (size_t)n * sizeof(float)); break;
    case SP_KV_BF16: sp_quantize_bf16(x, dst, n); break;
    case SP_KV_Q8_0: sp_quantize_q8_0(x, dst, n); break;
    case SP_KV_Q4_0: sp_quantize_q4_0(x, dst, n); break;
    default:
        for (int64_t i = 0; i < n; i++) ((uint16_t *)dst)[i] = sp_fp32_to_fp16(x[i]);
    }
}

void sp_kv_load_row(const void *src, float *x, sp_kv_type t, int64_t n) {
    switch (t) {
    case SP_KV_F32: memcpy(x, src, (size_t)n * sizeof(float)); break;
    case SP_KV_BF16: sp_dequantize_bf16(src, x, n); break;
    case SP_KV_Q8_0: sp_dequantize_q8_0(src, x, n); break;
    case SP_KV_Q4_0: sp_dequantize_q4_0(src, x, n); break;
    default:
        for (int64_t i = 0; i < n; i++) x[i] = sp_fp16_to_fp32(((const uint16_t *)src)[i]);
    }
}

/* Sylvester's matrix of size n (a power of two): entry (i, j) is
 * (-1)^popcount(i & j) / sqrt(n), symmetric and its own inverse. */
static void hadamard(float *x, int64_t n) {
    for (int64_t s = 1; s < n; s *= 2)
        for (int64_t i = 0; i < n; i += 2 * s)
            for (int64_t j = i; j < i + s; j++) {
                const float a = x[j], b = x[j + s];
                x[j] = a + b;
                x[j + s] = a - b;
            }
    const float scale = 1.f / sqrtf((float)n);
    for (int64_t i = 0; i < n; i++) x[i] *= scale;
}

void sp_kv_rotate(float *x, int64_t n, int32_t size) {
    for (int64_t i = 0; size > 0 && i < n; i += size) hadamard(x + i, size);
}

sprout_status sp_kv_shift_check(const sprout_model *model) {
    const sp_hparams *hp = &model->hp;
    if (hp->rope_kind == SP_ROPE_NONE)
        return sp_fail(SPROUT_ERR_UNSUPPORTED, "context shift: this %s model has learned absolute positions, which cannot be shifted",
                       hp->arch_name);
    for (int32_t l = 0; l < hp->n_layer; l++)
        if (model->layers[l].sliding)
            return sp_fail(SPROUT_ERR_UNSUPPORTED, "context shift: this %s model's sliding-window layers cannot be shifted", hp->arch_name);
    return SPROUT_OK;
}

sprout_status sp_kv_shift(sp_kv_cache *kv, const sprout_model *model, int32_t seq, int32_t keep, int32_t discard) {
    sprout_status st = sp_kv_shift_check(model);
    if (st != SPROUT_OK) return st;
    sp_kv_seq *s = &kv->seqs[seq];
    const int32_t first = sp_kv_visible(kv, seq, keep - 1), end = sp_kv_visible(kv, seq, keep + discard - 1);
    if (keep < 0 || discard <= 0 || end == s->n)
        return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "context shift: cannot drop %d tokens after the first %d of %d", discard, keep, s->n);
    float *row = kv->shift_row;
    for (int32_t i = first; i < end; i++) {
        kv->cell_pos[s->cells[i]] = -1;
        kv->free_cells[kv->n_free++] = s->cells[i];
    }
    const sp_hparams *hp = &model->hp;
    const size_t row_bytes = sp_kv_bytes(kv->type.k, kv->k_row);
    /* a latent cache's row is [latent | k_pe]: only k_pe was rotated */
    const int64_t rope_at = hp->n_lora_kv;
    const int rope_heads = hp->n_lora_kv > 0 ? 1 : hp->n_head_kv, rope_head_dim = hp->n_lora_kv > 0 ? hp->n_rot : hp->head_dim_k;
    for (int32_t i = end; i < s->n; i++) {
        const int32_t cell = s->cells[i];
        kv->cell_pos[cell] -= discard;
        s->cells[i - (end - first)] = cell;
        for (int32_t l = 0; l < kv->n_layer; l++) {
            const sp_layer *ly = &model->layers[l];
            void *k = (char *)kv->k[l] + (size_t)cell * row_bytes;
            sp_kv_load_row(k, row, kv->type.k, kv->k_row);
            sp_kv_rotate(row, kv->k_row, kv->rotate_k); /* out of the rotated basis (its own inverse) */
            sp_rope_shift(hp, model->rope_factors, row + rope_at, rope_heads, rope_head_dim, -discard, ly->rope_base, ly->rope_freq_scale);
            sp_kv_rotate(row, kv->k_row, kv->rotate_k);
            sp_kv_store_row(row, k, kv->type.k, kv->k_row);
        }
    }
    s->n -= end - first;
    return SPROUT_OK;
}
