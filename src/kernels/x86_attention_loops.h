/* The tiles' loop of the x86 attention kernels, included last by
 * attention_avx2.c and attention_avx512.c after what their level defines:
 *   CELL_BLOCK         cells whose scores are made at once;
 *   widen_tile         a tile's keys (as the level lays them out) and values;
 *   rows_weights       a register block of rows' weights for a tile;
 *   weigh_all_values   a register block of rows times the tile's values. */
#ifndef SPROUT_KERNELS_X86_ATTENTION_LOOPS_H
#define SPROUT_KERNELS_X86_ATTENTION_LOOPS_H

#include "kernels/x86_attention.h"

/* Cells per tile for heads of dk-element keys and dv-element values: a
 * multiple of CELL_BLOCK (0: too wide). */
static int tile_cells(int64_t dk, int64_t dv) {
    const int64_t fit = TILE_BUFFER / (dk > dv ? dk : dv) & ~(int64_t)(CELL_BLOCK - 1);
    return fit >= TILE ? TILE : (int)fit;
}

/* The rows of one block (at most MAX_ROWS, all of one sequence), tile by tile. */
static void attend_rows(const sp_attention_args *a, query_row *rows, int n_rows) {
    const int64_t dv = a->head_dim_v, dv8 = dv & ~(int64_t)7;
    const int tile = tile_cells(a->head_dim_k, dv);
    int64_t lo = INT32_MAX, hi = 0;
    for (int r = 0; r < n_rows; r++) {
        for (int64_t d = 0; d < dv; d++) rows[r].out[d] = 0.f;
        rows[r].max = -INFINITY;
        rows[r].sum = 0.f;
        if (rows[r].lo < rows[r].hi) {
            lo = rows[r].lo < lo ? rows[r].lo : lo;
            hi = rows[r].hi > hi ? rows[r].hi : hi;
        }
    }
    float kbuf[TILE_BUFFER], vbuf[TILE_BUFFER], scores[MAX_ROWS][TILE];
    for (int64_t c0 = lo >= hi ? hi : lo / tile * tile; c0 < hi; c0 += tile) {
        /* the tile's cells that some row sees: [ta, tb) */
        const int64_t ta = lo > c0 ? lo - c0 : 0, tb = hi < c0 + tile ? hi - c0 : tile;
        widen_tile(a, c0, ta, tb, tile, kbuf, vbuf);
        for (int r = 0; r < n_rows; r++) {
            query_row *row = &rows[r];
            row->a = row->lo > c0 ? row->lo - c0 : 0;
            row->b = row->hi < c0 + tile ? row->hi - c0 : tile;
        }
        for (int r0 = 0; r0 < n_rows; r0 += 4) {
            const int MR = n_rows - r0 < 4 ? n_rows - r0 : 4;
            int64_t c_a = tb, c_b = ta;
            for (int r = r0; r < r0 + MR; r++)
                if (rows[r].a < rows[r].b) {
                    c_a = rows[r].a < c_a ? rows[r].a : c_a;
                    c_b = rows[r].b > c_b ? rows[r].b : c_b;
                }
            if (c_a >= c_b) continue;
            switch (MR) { /* a constant row count in each copy: the accumulators stay in registers */
            case 1: rows_weights(a, kbuf, tile, rows, r0, 1, c_a, c_b, scores), weigh_all_values(vbuf, dv, scores, rows, r0, 1, c_a, c_b); break;
            case 2: rows_weights(a, kbuf, tile, rows, r0, 2, c_a, c_b, scores), weigh_all_values(vbuf, dv, scores, rows, r0, 2, c_a, c_b); break;
            case 3: rows_weights(a, kbuf, tile, rows, r0, 3, c_a, c_b, scores), weigh_all_values(vbuf, dv, scores, rows, r0, 3, c_a, c_b); break;
            default: rows_weights(a, kbuf, tile, rows, r0, 4, c_a, c_b, scores), weigh_all_values(vbuf, dv, scores, rows, r0, 4, c_a, c_b); break;
            }
        }
        for (int r = 0; r < n_rows; r++)
            for (int64_t d = dv8; d < dv; d++)
                for (int64_t c = rows[r].a; c < rows[r].b; c++)
                    rows[r].out[d] += scores[r][c] * vbuf[c * dv + d];
    }
    for (int r = 0; r < n_rows; r++) {
        const float inv = sp_attention_finish(a, rows[r].head, rows[r].max, rows[r].sum);
        for (int64_t d = 0; d < dv; d++) rows[r].out[d] *= inv;
    }
}

/* The level's attention: blocks of query rows that share a KV head, of
 * up to MAX_ROWS / heads tokens. */
static inline __attribute__((always_inline)) void attention_x86(const sp_attention_args *a) {
    const int64_t n_heads = a->n_q_heads > 0 ? a->n_q_heads : 1, n_tokens = a->n_tokens > 0 ? a->n_tokens : 1;
    if (tile_cells(a->head_dim_k, a->head_dim_v) == 0) { /* heads wider than any model's (over 512 elements with AVX-512, 1024 with AVX2): a tile would not fit */
        sp_attention_portable(a);
        return;
    }
    const int64_t heads = n_heads < MAX_HEADS ? n_heads : MAX_HEADS, tokens = MAX_ROWS / heads;
    for (int64_t h0 = 0; h0 < n_heads; h0 += heads) {
        const int64_t nh = n_heads - h0 < heads ? n_heads - h0 : heads;
        for (int64_t i0 = 0; i0 < n_tokens; i0 += tokens) {
            const int64_t ni = n_tokens - i0 < tokens ? n_tokens - i0 : tokens;
            query_row rows[MAX_ROWS];
            int n_rows = 0;
            for (int64_t i = i0; i < i0 + ni; i++) {
                const sp_cell_range range = sp_attention_range(a, i);
                for (int64_t h = h0; h < h0 + nh; h++)
                    rows[n_rows++] = (query_row){.q = a->q + i * a->q_stride + h * a->head_dim_k,
                                                .out = a->out + i * a->out_stride + h * a->head_dim_v,
                                                .lo = range.begin,
                                                .hi = range.end,
                                                .head = h};
            }
            attend_rows(a, rows, n_rows);
        }
    }
}

#endif
