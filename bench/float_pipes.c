/* The multiply-add rates of 512-bit instructions that could take 16-bit
 * float rows exactly, one core: twelve independent chains of each, timed
 * on the thread's CPU clock (the host is shared). vdpbf16ps does 32
 * products an instruction, vfmadd231ps 16; what each issues a nanosecond
 * says which one a BF16 kernel should use, and the widening a float FMA
 * needs (two instructions a row line) is measured beside it. Not a test.
 *
 * usage: build/float_pipes */
#include <stdio.h>
#include <time.h>

static double cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

enum { ITERATIONS = 50000000 };

#define OP12(op)                                                                                                       \
    op " %%zmm0,%%zmm1,%%zmm2\n" op " %%zmm0,%%zmm1,%%zmm3\n" op " %%zmm0,%%zmm1,%%zmm4\n" op " %%zmm0,%%zmm1,%%zmm5\n" \
    op " %%zmm0,%%zmm1,%%zmm6\n" op " %%zmm0,%%zmm1,%%zmm7\n" op " %%zmm0,%%zmm1,%%zmm8\n" op " %%zmm0,%%zmm1,%%zmm9\n" \
    op " %%zmm0,%%zmm1,%%zmm10\n" op " %%zmm0,%%zmm1,%%zmm11\n" op " %%zmm0,%%zmm1,%%zmm12\n" op " %%zmm0,%%zmm1,%%zmm13\n"
/* a BF16 line's two widenings into registers no chain reads */
#define WIDEN2 "vpslld $16,%%zmm0,%%zmm14\n vpandd %%zmm1,%%zmm0,%%zmm15\n"
/* two F16 rows' widenings of 16 (each of a 6-token tile's rows meets 6
 * tokens: 2 beside 12 FMAs) */
#define CVT2 "vcvtph2ps %%ymm0,%%zmm14\n vcvtph2ps %%ymm1,%%zmm15\n"
#define CLOBBERS                                                                                                       \
    "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15"

/* instructions of the 12 chains per nanosecond, and multiply-adds (macs each) */
#define RATE(name, body, macs)                                                                                         \
    do {                                                                                                               \
        const double t0 = cpu_s();                                                                                     \
        for (long i = 0; i < ITERATIONS; i++) __asm__ volatile(body ::: CLOBBERS);                                     \
        const double per_ns = ITERATIONS * 12.0 / (cpu_s() - t0) * 1e-9;                                               \
        printf("| %s | %.2f | %.0f |\n", name, per_ns, per_ns * (macs));                                               \
    } while (0)

/* compiled for AVX-512 BF16 alone, so that main runs anywhere to say so */
__attribute__((target("avx512f,avx512bf16"), noinline)) static void measure(void) {
    __asm__ volatile("vpxord %%zmm0,%%zmm0,%%zmm0\n vpxord %%zmm1,%%zmm1,%%zmm1\n" ::: "xmm0", "xmm1");
    printf("| 12 chains of | per ns | GMAC/s |\n|---|---|---|\n");
    RATE("vdpbf16ps", OP12("vdpbf16ps"), 32);
    RATE("vfmadd231ps", OP12("vfmadd231ps"), 16);
    RATE("vfmadd231ps, 2 BF16 widenings beside (a 6-token tile's share)", OP12("vfmadd231ps") WIDEN2, 16);
    RATE("vfmadd231ps, 2 vcvtph2ps beside (F16, the same share)", OP12("vfmadd231ps") CVT2, 16);
}

int main(void) {
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx512bf16")) {
        printf("this CPU has no AVX512-BF16\n");
        return 0;
    }
    measure();
    return 0;
}
