/* A whole file mapped read-only. Model weights are used straight from the
 * mapping, so the page cache holds the only copy. */
#ifndef SPROUT_CORE_MAPPED_FILE_H
#define SPROUT_CORE_MAPPED_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "sprout.h"

typedef struct sp_mapped_file {
    const uint8_t *data;
    uint64_t size;
} sp_mapped_file;

/* Maps `path`. An empty file maps to data == NULL, size == 0. */
sprout_status sp_mapped_file_open(const char *path, sp_mapped_file *out);
void sp_mapped_file_close(sp_mapped_file *file);

#endif
