/* The machine's memory read bandwidth as decode sees it: a buffer well
 * above the last-level cache summed by n threads with the widest loads the
 * CPU has, best of a few passes. `sprout bench` holds decode's weight reads
 * against it (the memory roofline). */
#ifndef SPROUT_CLI_READ_BANDWIDTH_H
#define SPROUT_CLI_READ_BANDWIDTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct cli_read_bandwidth {
    double gb_per_s;  /* 1e9 bytes a second, the best pass */
    size_t bytes;     /* the buffer read each pass */
    int n_threads;
    const char *loop; /* "avx512", "avx2" or "portable" */
} cli_read_bandwidth;

/* The default buffer: four times the last-level cache, at least 1 GiB. */
size_t cli_read_bandwidth_default_bytes(void);

/* Reads `bytes` (rounded down to 4 KiB, at least 4 KiB) `passes` times
 * with n_threads threads. False, with errno set, when the buffer or a
 * thread cannot be had. */
bool cli_measure_read_bandwidth(size_t bytes, int n_threads, int passes, cli_read_bandwidth *out);

/* The bytes [p, p + n) summed (any alignment and length) with the loop
 * cli_measure_read_bandwidth uses, into *loop where not NULL: a read that
 * does nothing else, for a kernel's reads of the same bytes to be held
 * against (bench/decode_pace.c). */
uint64_t cli_read_bytes(const uint8_t *p, size_t n, const char **loop);

#endif
