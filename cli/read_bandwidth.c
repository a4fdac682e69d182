/* Each thread sums its own slice of one buffer, which it also wrote first
 * (so its pages sit on its node), and a pass is timed from before the
 * threads start to after the last one ends: the rate all of them get
 * together, as a decode step's matmuls read weights split among threads.
 * The sum goes to a volatile sink so no compiler drops the reads. */
#include "read_bandwidth.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define READ_X86 1
#endif

/* WIDEST_STEP: the bytes each loop reads a round (the AVX-512 one's 256; the others' divide it) */
enum { PAGE = 4096, MIN_DEFAULT = 1 << 30, WIDEST_STEP = 256 };

typedef uint64_t (*sum_fn)(const uint8_t *p, size_t n);

/* Eight independent sums: no add waits on the one before, so the loads
 * alone set the pace (compilers vectorize this too). */
static uint64_t sum_portable(const uint8_t *p, size_t n) {
    uint64_t s[8] = {0};
    for (size_t i = 0; i < n; i += 64)
        for (int k = 0; k < 8; k++) {
            uint64_t w;
            memcpy(&w, p + i + 8 * (size_t)k, sizeof w); /* any alignment */
            s[k] += w;
        }
    return s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7];
}

#ifdef READ_X86
__attribute__((target("avx2"))) static uint64_t sum_avx2(const uint8_t *p, size_t n) {
    __m256i a = _mm256_setzero_si256(), b = a, c = a, d = a;
    for (size_t i = 0; i < n; i += 128) {
        a = _mm256_add_epi64(a, _mm256_loadu_si256((const __m256i *)(const void *)(p + i)));
        b = _mm256_add_epi64(b, _mm256_loadu_si256((const __m256i *)(const void *)(p + i + 32)));
        c = _mm256_add_epi64(c, _mm256_loadu_si256((const __m256i *)(const void *)(p + i + 64)));
        d = _mm256_add_epi64(d, _mm256_loadu_si256((const __m256i *)(const void *)(p + i + 96)));
    }
    const __m256i s = _mm256_add_epi64(_mm256_add_epi64(a, b), _mm256_add_epi64(c, d));
    return (uint64_t)_mm256_extract_epi64(s, 0) + (uint64_t)_mm256_extract_epi64(s, 1) + (uint64_t)_mm256_extract_epi64(s, 2) +
           (uint64_t)_mm256_extract_epi64(s, 3);
}

__attribute__((target("avx512f"))) static uint64_t sum_avx512(const uint8_t *p, size_t n) {
    __m512i a = _mm512_setzero_si512(), b = a, c = a, d = a;
    for (size_t i = 0; i < n; i += 256) {
        a = _mm512_add_epi64(a, _mm512_loadu_si512((const void *)(p + i)));
        b = _mm512_add_epi64(b, _mm512_loadu_si512((const void *)(p + i + 64)));
        c = _mm512_add_epi64(c, _mm512_loadu_si512((const void *)(p + i + 128)));
        d = _mm512_add_epi64(d, _mm512_loadu_si512((const void *)(p + i + 192)));
    }
    /* lanes summed as unsigned: _mm512_reduce_add_epi64 adds signed, and the sums wrap */
    uint64_t lane[8];
    _mm512_storeu_si512((void *)lane, _mm512_add_epi64(_mm512_add_epi64(a, b), _mm512_add_epi64(c, d)));
    return lane[0] + lane[1] + lane[2] + lane[3] + lane[4] + lane[5] + lane[6] + lane[7];
}
#endif

static sum_fn pick_loop(const char **name) {
#ifdef READ_X86
    /* __builtin_cpu_supports also checks that the OS saves the wide registers */
    if (__builtin_cpu_supports("avx512f")) {
        *name = "avx512";
        return sum_avx512;
    }
    if (__builtin_cpu_supports("avx2")) {
        *name = "avx2";
        return sum_avx2;
    }
#endif
    *name = "portable";
    return sum_portable;
}

uint64_t cli_read_bytes(const uint8_t *p, size_t n, const char **loop) {
    const char *name;
    const sum_fn sum = pick_loop(&name);
    if (loop) *loop = name;
    const size_t whole = n / WIDEST_STEP * WIDEST_STEP;
    uint64_t total = sum(p, whole);
    for (size_t i = whole; i < n; i++) total += p[i];
    return total;
}

typedef struct slice {
    uint8_t *p;
    size_t n;
    sum_fn sum;
    bool fill;
    uint64_t total;
} slice;

static void *run_slice(void *arg) {
    slice *s = arg;
    if (s->fill) memset(s->p, 0x5a, s->n);
    else s->total = s->sum(s->p, s->n);
    return NULL;
}

/* Every slice on its own thread (the first on this one); false if a thread cannot start. */
static bool run_all(slice *slices, int n) {
    pthread_t tid[256];
    int started = 1;
    bool ok = true;
    for (; started < n; started++) {
        const int rc = pthread_create(&tid[started], NULL, run_slice, &slices[started]);
        if (rc != 0) {
            errno = rc;
            ok = false;
            break;
        }
    }
    run_slice(&slices[0]);
    for (int i = 1; i < started; i++) pthread_join(tid[i], NULL);
    return ok;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

size_t cli_read_bandwidth_default_bytes(void) {
    long llc = -1;
#ifdef _SC_LEVEL3_CACHE_SIZE
    llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (llc <= 0) llc = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
    const size_t four = llc > 0 ? 4 * (size_t)llc : 0;
    return four > MIN_DEFAULT ? four : MIN_DEFAULT;
}

bool cli_measure_read_bandwidth(size_t bytes, int n_threads, int passes, cli_read_bandwidth *out) {
    if (n_threads < 1) n_threads = 1;
    if (n_threads > 256) n_threads = 256;
    /* slices of whole pages: every loop's rounds fit them exactly, each load aligned */
    size_t pages = bytes / PAGE;
    if (pages < (size_t)n_threads) pages = (size_t)n_threads;
    bytes = pages * PAGE;
    uint8_t *buf = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED) return false;
#ifdef MADV_HUGEPAGE
    madvise(buf, bytes, MADV_HUGEPAGE); /* fewer TLB misses, as the mapped weights get with THP; a hint only */
#endif
    const char *name;
    const sum_fn sum = pick_loop(&name);
    slice slices[256];
    for (int t = 0; t < n_threads; t++) {
        const size_t first = pages * (size_t)t / (size_t)n_threads, last = pages * (size_t)(t + 1) / (size_t)n_threads;
        slices[t] = (slice){buf + first * PAGE, (last - first) * PAGE, sum, true, 0};
    }
    bool ok = run_all(slices, n_threads);
    double best = 0;
    volatile uint64_t sink = 0;
    for (int pass = 0; ok && pass < passes; pass++) {
        for (int t = 0; t < n_threads; t++) slices[t].fill = false;
        const double t0 = now_s();
        ok = run_all(slices, n_threads);
        const double seconds = now_s() - t0;
        for (int t = 0; t < n_threads; t++) sink += slices[t].total;
        if (seconds > 0 && (double)bytes / seconds > best) best = (double)bytes / seconds;
    }
    (void)sink;
    const int saved = errno;
    munmap(buf, bytes);
    if (!ok) {
        errno = saved ? saved : EAGAIN;
        return false;
    }
    *out = (cli_read_bandwidth){best / 1e9, bytes, n_threads, name};
    return true;
}
