/* Growing arrays by doubling. */
#ifndef SPROUT_CORE_GROW_H
#define SPROUT_CORE_GROW_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

/* Room for `need` elements of `size` bytes in *p (capacity *cap, doubled
 * from 64); false, with *p and *cap unchanged, when out of memory or when
 * the size would overflow. */
static inline bool sp_grow(void **p, size_t *cap, size_t need, size_t size) {
    if (need <= *cap) return true;
    size_t c = *cap ? *cap : 64;
    while (c < need) {
        if (c > SIZE_MAX / 2) return false;
        c *= 2;
    }
    if (c > SIZE_MAX / size) return false;
    void *q = realloc(*p, c * size);
    if (!q) return false;
    *p = q, *cap = c;
    return true;
}

#endif
