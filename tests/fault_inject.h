/* Fault injection for the tests linked with tests/fault_inject.c: the
 * library's calls to the allocator and to the file-writing functions go
 * through wrappers (the linker's --wrap, so only code linked into the test
 * binary is affected, and the sanitizers' allocator still serves the calls
 * that go through). Armed, the allocator fails its N-th call; the I/O
 * wrappers fail the call chosen by fault_io_arm. */
#ifndef SPROUT_TEST_FAULT_INJECT_H
#define SPROUT_TEST_FAULT_INJECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Counts allocations from now on and fails the fail_at-th (1-based; 0:
 * count only). */
void fault_alloc_arm(uint64_t fail_at);
/* Stops counting and failing; returns the number of allocations seen
 * while armed. */
uint64_t fault_alloc_disarm(void);
/* Whether the armed failure happened. */
bool fault_alloc_fired(void);
/* Distinct places in the code (call sites) that allocated while counting. */
size_t fault_alloc_sites(void);

typedef enum fault_io_call {
    FAULT_IO_NONE,
    FAULT_IO_FWRITE, /* fails with ENOSPC once `arg` bytes went through */
    FAULT_IO_FFLUSH, /* ENOSPC: the buffered tail does not fit */
    FAULT_IO_FSYNC,  /* EIO once `arg` calls went through */
    FAULT_IO_FCLOSE, /* EIO (the stream is still closed, as the standard says) */
    FAULT_IO_RENAME, /* EXDEV once `arg` calls went through */
    FAULT_IO_WRITE,  /* write(2): ENOSPC once `arg` bytes went through */
} fault_io_call;

/* `arg`: for FAULT_IO_FWRITE and FAULT_IO_WRITE the bytes let through
 * first, for FAULT_IO_FSYNC and FAULT_IO_RENAME the calls let through
 * first; otherwise unused. */
void fault_io_arm(fault_io_call call, uint64_t arg);
void fault_io_disarm(void);
bool fault_io_fired(void);
/* What the armed call let through so far: bytes or calls, as `arg` counts
 * them (armed with UINT64_MAX: the whole of a clean run). */
uint64_t fault_io_seen(void);

/* The next mmap of a file is followed by truncate(path, size): a file cut
 * short by another process between its opening and its reading. */
void fault_map_truncate(const char *path, int64_t size);

#endif
