/* A whole file mapped read-only. Model weights are used straight from the
 * mapping, so the page cache holds the only copy. */
#ifndef SPROUT_CORE_MAPPED_FILE_H
#define SPROUT_CORE_MAPPED_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sprout.h"

typedef struct sp_mapped_file {
    const uint8_t *data;
    uint64_t size;
    int fd; /* kept while mapped (data != NULL), to see the file shrink */
} sp_mapped_file;

/* Maps `path`. An empty file maps to data == NULL, size == 0. */
sprout_status sp_mapped_file_open(const char *path, sp_mapped_file *out);
void sp_mapped_file_close(sp_mapped_file *file);

/* SPROUT_ERR_IO (naming `path`) if the mapped file is now shorter than when
 * it was mapped: reading the lost pages would raise SIGBUS. */
sprout_status sp_mapped_file_check_size(const sp_mapped_file *file, const char *path);

/* Whether two paths name one file (the same string, or the same device and
 * inode): a writer must refuse to replace a file it reads from. */
bool sp_same_file(const char *a, const char *b);

#endif
