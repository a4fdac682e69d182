/* Software prefetch of a tile's weight rows, shared by the x86 float and
 * BF16 tiles (x86_matmul_tiles.h, matmul_bf16.c): one decision of which cache
 * level the lines go to, in one place. */
#ifndef SPROUT_KERNELS_X86_PREFETCH_H
#define SPROUT_KERNELS_X86_PREFETCH_H

#include <immintrin.h>
#include <stdbool.h>
#include <stddef.h>

/* The cache line `offset` bytes into each of a tile's R rows: into L1 for
 * one token (into_l1) or a lone row, whose lines are read once and soon;
 * into L2 for a tile that several tokens consume slowly (measured in
 * prefetch_ahead's comment, x86_matmul_tiles.h). */
static inline __attribute__((always_inline)) void sp_prefetch_rows(const void *const rows[], const int R, ptrdiff_t offset, bool into_l1) {
    for (int r = 0; r < R; r++) {
        const char *line = (const char *)rows[r] + offset;
        if (R == 1 || into_l1) _mm_prefetch(line, _MM_HINT_T0);
        else _mm_prefetch(line, _MM_HINT_T1);
    }
}

#endif
