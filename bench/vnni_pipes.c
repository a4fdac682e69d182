/* Which instructions share the execution pipes of vpdpbusd (256-bit) on
 * this CPU: twelve independent vpdpbusd chains per iteration, alone and
 * with four other instructions beside them. If the four run on pipes of
 * their own, the vpdpbusd rate stays; if they share its pipes, it drops to
 * 12/16 of it. The int8 matmul kernels spend one multiply and one fused
 * multiply-add per eight vpdpbusd (each token's block sums times the
 * weight's and the activations' scales): this says what that costs. A
 * second table says what a 512-bit vpdpbusd issues at, and what the loads
 * of a row pair's activations cost beside them (one 256-bit load per two
 * 256-bit vpdpbusd, or a 256-to-512-bit broadcast per 512-bit one).
 * Not a test.
 *
 * usage: build/vnni_pipes */
#include <stdio.h>
#include <time.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static char activations[512] __attribute__((aligned(64)));

#define DP12(src)                                                                                                      \
    "vpdpbusd " src ",%%ymm1,%%ymm2\n vpdpbusd " src ",%%ymm1,%%ymm3\n vpdpbusd " src ",%%ymm1,%%ymm4\n"              \
    "vpdpbusd " src ",%%ymm1,%%ymm5\n vpdpbusd " src ",%%ymm1,%%ymm6\n vpdpbusd " src ",%%ymm1,%%ymm7\n"              \
    "vpdpbusd " src ",%%ymm1,%%ymm8\n vpdpbusd " src ",%%ymm1,%%ymm9\n vpdpbusd " src ",%%ymm1,%%ymm10\n"             \
    "vpdpbusd " src ",%%ymm1,%%ymm11\n vpdpbusd " src ",%%ymm1,%%ymm12\n vpdpbusd " src ",%%ymm1,%%ymm13\n"
#define CLOBBERS                                                                                                       \
    "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", \
        "xmm16", "xmm17"

enum { ITERATIONS = 50000000 };

/* vpdpbusd per nanosecond for one loop body (12 of them and `extra`) */
#define RATE(name, body)                                                                                               \
    do {                                                                                                               \
        const double t0 = now_s();                                                                                     \
        for (long i = 0; i < ITERATIONS; i++) __asm__ volatile(body ::"r"(activations) : CLOBBERS);                     \
        printf("| %s | %.2f |\n", name, ITERATIONS * 12.0 / (now_s() - t0) * 1e-9);                                   \
    } while (0)

#define DP12_512(src)                                                                                                  \
    "vpdpbusd " src ",%%zmm1,%%zmm2\n vpdpbusd " src ",%%zmm1,%%zmm3\n vpdpbusd " src ",%%zmm1,%%zmm4\n"              \
    "vpdpbusd " src ",%%zmm1,%%zmm5\n vpdpbusd " src ",%%zmm1,%%zmm6\n vpdpbusd " src ",%%zmm1,%%zmm7\n"              \
    "vpdpbusd " src ",%%zmm1,%%zmm8\n vpdpbusd " src ",%%zmm1,%%zmm9\n vpdpbusd " src ",%%zmm1,%%zmm10\n"             \
    "vpdpbusd " src ",%%zmm1,%%zmm11\n vpdpbusd " src ",%%zmm1,%%zmm12\n vpdpbusd " src ",%%zmm1,%%zmm13\n"
/* a load of 32 bytes at offset o of the activations into register r (14-17) */
#define LOAD256(r, o) "vmovdqu32 " #o "(%0),%%ymm" #r "\n"
#define BROADCAST512(r, o) "vbroadcasti64x4 " #o "(%0),%%zmm" #r "\n"
#define SIX(op) op(14, 0) op(15, 32) op(16, 64) op(17, 96) op(14, 128) op(15, 160)
#define TWELVE(op) SIX(op) op(16, 192) op(17, 224) op(14, 256) op(15, 288) op(16, 320) op(17, 352)

/* the same, with the multiply-adds each vpdpbusd does (32 a 256-bit one) */
#define RATE_MACS(name, macs, body)                                                                                    \
    do {                                                                                                               \
        const double t0 = now_s();                                                                                     \
        for (long i = 0; i < ITERATIONS; i++) __asm__ volatile(body ::"r"(activations) : CLOBBERS);                     \
        const double rate = ITERATIONS * 12.0 / (now_s() - t0) * 1e-9;                                                 \
        printf("| %s | %.2f | %.0f |\n", name, rate, rate * (macs));                                                    \
    } while (0)

/* `op src, %ymmD` into registers no vpdpbusd reads, so that nothing waits on it */
#define ONE(op, src, d) op " " src ",%%ymm" #d "\n"
/* two of op beside the twelve (in ymm14-15), and two more (in ymm16-17) */
#define FIRST2(op, src) ONE(op, src, 14) ONE(op, src, 15)
#define SECOND2(op, src) ONE(op, src, 16) ONE(op, src, 17)
#define AB "%%ymm0,%%ymm1"

/* compiled for AVX-512 alone, so that main runs anywhere to say so */
__attribute__((target("avx512f,avx512vl,avx512vnni"), noinline)) static void measure(void) {
    printf("| beside 12 vpdpbusd | vpdpbusd per ns |\n|---|---|\n");
    RATE("nothing", DP12("%%ymm0"));
    RATE("nothing, activations from memory (L1)", DP12("0(%0)"));
    RATE("2 vmulps + 2 vfmadd231ps", DP12("%%ymm0") FIRST2("vmulps", AB) SECOND2("vfmadd231ps", AB));
    RATE("4 vaddps", DP12("%%ymm0") FIRST2("vaddps", AB) SECOND2("vaddps", AB));
    RATE("2 vcvtdq2ps + 2 vpaddd", DP12("%%ymm0") FIRST2("vcvtdq2ps", "%%ymm0") SECOND2("vpaddd", AB));
    RATE("4 vpunpck*", DP12("%%ymm0") ONE("vpunpckldq", AB, 14) ONE("vpunpckhdq", AB, 15) ONE("vpunpcklqdq", AB, 16)
                           ONE("vpunpckhqdq", AB, 17));
    RATE("2 vpand + 2 vpsrlw", DP12("%%ymm0") FIRST2("vpand", AB) SECOND2("vpsrlw", "$4,%%ymm1"));
    RATE("4 vpmulld", DP12("%%ymm0") FIRST2("vpmulld", AB) SECOND2("vpmulld", AB));
    RATE("4 vpmaddwd", DP12("%%ymm0") FIRST2("vpmaddwd", AB) SECOND2("vpmaddwd", AB));
    RATE("4 vcvtph2ps", DP12("%%ymm0") FIRST2("vcvtph2ps", "%%xmm0") SECOND2("vcvtph2ps", "%%xmm1"));
    printf("\n| 12 vpdpbusd of width, and beside them | vpdpbusd per ns | multiply-adds per ns |\n|---|---|---|\n");
    RATE_MACS("256-bit", 32, DP12("%%ymm0"));
    RATE_MACS("256-bit, 6 256-bit loads (one per two)", 32, DP12("%%ymm0") SIX(LOAD256));
    RATE_MACS("256-bit, 12 256-bit loads (one each)", 32, DP12("%%ymm0") TWELVE(LOAD256));
    RATE_MACS("512-bit", 64, DP12_512("%%zmm0"));
    RATE_MACS("512-bit, 12 256-to-512-bit broadcasts (one each)", 64, DP12_512("%%zmm0") TWELVE(BROADCAST512));
}

int main(void) {
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx512vnni") || !__builtin_cpu_supports("avx512vl")) {
        printf("this CPU has no 256-bit VNNI (AVX512-VNNI with VL)\n");
        return 0;
    }
    measure();
    return 0;
}
