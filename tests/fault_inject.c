/* The wrappers behind tests/fault_inject.h. A test binary that links this
 * file passes -Wl,--wrap=malloc (and the others below): the library's calls
 * land here, and __real_* is the allocator or libc function the process
 * would have called, the sanitizers' when they are on. */
#include "fault_inject.h"

#include <errno.h>
#include <execinfo.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <unistd.h>

/* the sanitizers' stack printer, where they are linked in */
void __sanitizer_print_stack_trace(void) __attribute__((weak));

void *__real_malloc(size_t size);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t size);
void *__real_aligned_alloc(size_t alignment, size_t size);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);
size_t __real_fwrite(const void *p, size_t size, size_t n, FILE *f);
int __real_fflush(FILE *f);
int __real_fsync(int fd);
int __real_fclose(FILE *f);
int __real_rename(const char *from, const char *to);
ssize_t __real_write(int fd, const void *p, size_t n);
void *__real_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);

void *__wrap_malloc(size_t size);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t size);
void *__wrap_aligned_alloc(size_t alignment, size_t size);
char *__wrap_strdup(const char *s);
char *__wrap_strndup(const char *s, size_t n);
size_t __wrap_fwrite(const void *p, size_t size, size_t n, FILE *f);
int __wrap_fflush(FILE *f);
int __wrap_fsync(int fd);
int __wrap_fclose(FILE *f);
int __wrap_rename(const char *from, const char *to);
ssize_t __wrap_write(int fd, const void *p, size_t n);
void *__wrap_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);

/* the engine's threads allocate too: the count is shared and atomic */
static atomic_bool alloc_armed, alloc_fired;
static atomic_uint_fast64_t alloc_count, alloc_fail_at;

void fault_alloc_arm(uint64_t fail_at) {
    atomic_store(&alloc_count, 0);
    atomic_store(&alloc_fail_at, fail_at);
    atomic_store(&alloc_fired, false);
    atomic_store(&alloc_armed, true);
}

uint64_t fault_alloc_disarm(void) {
    atomic_store(&alloc_armed, false);
    return atomic_load(&alloc_count);
}

bool fault_alloc_fired(void) { return atomic_load(&alloc_fired); }

/* The distinct call sites seen while counting (fail_at 0), by the return
 * address into the caller: how many places in the code a sweep reached. */
enum { MAX_SITES = 8192 };
static void *sites[MAX_SITES];
static atomic_size_t n_sites;
static pthread_mutex_t sites_lock = PTHREAD_MUTEX_INITIALIZER;

static void note_site(void *site) {
    pthread_mutex_lock(&sites_lock);
    size_t n = atomic_load(&n_sites);
    bool seen = false;
    for (size_t i = 0; i < n && !seen; i++) seen = sites[i] == site;
    if (!seen && n < MAX_SITES) {
        sites[n] = site;
        atomic_store(&n_sites, n + 1);
    }
    pthread_mutex_unlock(&sites_lock);
}

size_t fault_alloc_sites(void) { return atomic_load(&n_sites); }

/* Whether this allocation is the one to fail. */
static bool alloc_fails(void *site) {
    if (!atomic_load(&alloc_armed)) return false;
    if (atomic_load(&alloc_fail_at) == 0) note_site(site);
    uint64_t n = atomic_fetch_add(&alloc_count, 1) + 1;
    if (n != atomic_load(&alloc_fail_at)) return false;
    atomic_store(&alloc_fired, true);
    /* SPROUT_FAULTS_TRACE=1: where each failed allocation was asked for */
    if (getenv("SPROUT_FAULTS_TRACE")) {
        if (__sanitizer_print_stack_trace) __sanitizer_print_stack_trace();
        else { /* the release build: addresses and the symbols the binary has */
            void *frames[32];
            backtrace_symbols_fd(frames, backtrace(frames, 32), 2);
        }
    }
    errno = ENOMEM;
    return true;
}

#define CALLER __builtin_return_address(0)
void *__wrap_malloc(size_t size) { return alloc_fails(CALLER) ? NULL : __real_malloc(size); }
void *__wrap_calloc(size_t n, size_t size) { return alloc_fails(CALLER) ? NULL : __real_calloc(n, size); }
void *__wrap_realloc(void *p, size_t size) { return alloc_fails(CALLER) ? NULL : __real_realloc(p, size); }
void *__wrap_aligned_alloc(size_t alignment, size_t size) {
    return alloc_fails(CALLER) ? NULL : __real_aligned_alloc(alignment, size);
}
char *__wrap_strdup(const char *s) { return alloc_fails(CALLER) ? NULL : __real_strdup(s); }
char *__wrap_strndup(const char *s, size_t n) { return alloc_fails(CALLER) ? NULL : __real_strndup(s, n); }

static atomic_int io_call;
static atomic_bool io_fired;
static atomic_uint_fast64_t io_arg, io_seen;

void fault_io_arm(fault_io_call call, uint64_t arg) {
    atomic_store(&io_arg, arg);
    atomic_store(&io_seen, 0);
    atomic_store(&io_fired, false);
    atomic_store(&io_call, (int)call);
}

void fault_io_disarm(void) { atomic_store(&io_call, FAULT_IO_NONE); }

bool fault_io_fired(void) { return atomic_load(&io_fired); }

uint64_t fault_io_seen(void) { return atomic_load(&io_seen); }

static bool io_fails(fault_io_call call, int err) {
    if (atomic_load(&io_call) != (int)call) return false;
    atomic_store(&io_fired, true);
    errno = err;
    return true;
}

/* A disk that fills up after `arg` bytes: the call that crosses the limit
 * writes what fits and reports the shortfall, as fwrite does. */
size_t __wrap_fwrite(const void *p, size_t size, size_t n, FILE *f) {
    if (atomic_load(&io_call) != FAULT_IO_FWRITE || size == 0) return __real_fwrite(p, size, n, f);
    uint64_t seen = atomic_load(&io_seen), limit = atomic_load(&io_arg);
    uint64_t room = seen >= limit ? 0 : limit - seen;
    size_t fit = (uint64_t)size * n <= room ? n : (size_t)(room / size);
    size_t done = fit ? __real_fwrite(p, size, fit, f) : 0;
    atomic_store(&io_seen, seen + (uint64_t)done * size);
    if (done == n) return n;
    io_fails(FAULT_IO_FWRITE, ENOSPC);
    return done;
}

/* The same full disk for write(2): a short write, then ENOSPC. */
ssize_t __wrap_write(int fd, const void *p, size_t n) {
    if (atomic_load(&io_call) != FAULT_IO_WRITE || n == 0) return __real_write(fd, p, n);
    const uint64_t seen = atomic_load(&io_seen), limit = atomic_load(&io_arg);
    const uint64_t room = seen >= limit ? 0 : limit - seen;
    if (room == 0) {
        io_fails(FAULT_IO_WRITE, ENOSPC);
        return -1;
    }
    const ssize_t done = __real_write(fd, p, n <= room ? n : (size_t)room);
    if (done > 0) atomic_store(&io_seen, seen + (uint64_t)done);
    return done;
}

int __wrap_fflush(FILE *f) { return io_fails(FAULT_IO_FFLUSH, ENOSPC) ? EOF : __real_fflush(f); }
/* Whether this call of the armed kind is past the `arg` let through. */
static bool past_calls_let_through(fault_io_call call) {
    return atomic_load(&io_call) == (int)call && atomic_fetch_add(&io_seen, 1) >= atomic_load(&io_arg);
}

int __wrap_fsync(int fd) { return past_calls_let_through(FAULT_IO_FSYNC) && io_fails(FAULT_IO_FSYNC, EIO) ? -1 : __real_fsync(fd); }

int __wrap_fclose(FILE *f) {
    if (atomic_load(&io_call) != FAULT_IO_FCLOSE) return __real_fclose(f);
    __real_fclose(f);
    io_fails(FAULT_IO_FCLOSE, EIO);
    return EOF;
}

int __wrap_rename(const char *from, const char *to) {
    if (past_calls_let_through(FAULT_IO_RENAME) && io_fails(FAULT_IO_RENAME, EXDEV)) return -1;
    return __real_rename(from, to);
}

static char map_truncate_path[4096];
static int64_t map_truncate_size = -1;

void fault_map_truncate(const char *path, int64_t size) {
    snprintf(map_truncate_path, sizeof map_truncate_path, "%s", path);
    map_truncate_size = size;
}

void *__wrap_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
    void *p = __real_mmap(addr, len, prot, flags, fd, off);
    if (p != MAP_FAILED && fd >= 0 && map_truncate_size >= 0) {
        if (truncate(map_truncate_path, map_truncate_size) != 0) perror(map_truncate_path);
        map_truncate_size = -1;
    }
    return p;
}
