/* Public structs carry their size first and only grow at the end, so a
 * caller built against an older header passes a shorter struct: copies go
 * over the bytes both sides know (0 from a caller means "mine"). */
#ifndef SPROUT_CORE_VERSIONED_H
#define SPROUT_CORE_VERSIONED_H

#include <stddef.h>

static inline size_t sp_versioned_bytes(size_t caller_size, size_t ours) {
    return caller_size && caller_size < ours ? caller_size : ours;
}

#endif
