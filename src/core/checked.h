/* Overflow-checked size arithmetic for code that handles untrusted counts:
 * every product or sum of numbers read from a file goes through these. */
#ifndef SPROUT_CORE_CHECKED_H
#define SPROUT_CORE_CHECKED_H

#include <stdbool.h>
#include <stdint.h>

/* *out = a * b; false (and *out unspecified) on overflow. */
static inline bool sp_mul_u64(uint64_t a, uint64_t b, uint64_t *out) { return !__builtin_mul_overflow(a, b, out); }
static inline bool sp_add_u64(uint64_t a, uint64_t b, uint64_t *out) { return !__builtin_add_overflow(a, b, out); }

/* Rounds x up to a multiple of the power of two `align`; false on overflow. */
static inline bool sp_align_up_u64(uint64_t x, uint64_t align, uint64_t *out) {
    uint64_t t;
    if (!sp_add_u64(x, align - 1, &t)) return false;
    *out = t & ~(align - 1);
    return true;
}

static inline bool sp_is_pow2(uint64_t x) { return x && !(x & (x - 1)); }

#endif
