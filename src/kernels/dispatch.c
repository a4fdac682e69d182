/* Picks the kernels once, at first use, from what the CPU (and the OS, for
 * the wider register state) supports. SPROUT_CPU=generic|avx2|avx512|
 * avx512bf16|avx512bf16dot|amx|neon|i8mm caps the level, for tests and for
 * comparisons; a level the CPU lacks falls back to the best one below it. */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "kernels/kernels.h"

static const sp_kernels portable = {
    .name = "portable",
    .matmul = sp_matmul_portable,
    .attention = sp_attention_portable,
    .activation = sp_activation_portable,
};

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define SP_HAVE_X86_KERNELS 1
#include <cpuid.h>
#ifdef __linux__
#include <sys/syscall.h>
#include <unistd.h>
#endif
static const sp_kernels avx2 = {
    .name = "avx2",
    .matmul = sp_matmul_avx2,
    .quantize = sp_quantize_avx2,
    .attention = sp_attention_avx2,
    .activation = sp_activation_avx2,
};
/* The 512-bit levels below amx differ only in their matmul; they share
 * the 512-bit attention and AVX2's quantize and activations. */
#define AVX512_KERNELS(level_name, level_matmul)                                                                       \
    {                                                                                                                  \
        .name = (level_name), .matmul = (level_matmul), .quantize = sp_quantize_avx2, .attention = sp_attention_avx512, \
        .activation = sp_activation_avx2,                                                                              \
    }
static const sp_kernels avx512 = AVX512_KERNELS("avx512-vnni", sp_matmul_avx512vnni);
/* avx512's, with F16 and BF16 weights through blocked float-FMA tiles */
static const sp_kernels avx512bf16 = AVX512_KERNELS("avx512-vnni-bf16", sp_matmul_avx512bf16);
/* avx512bf16's, with BF16 rows through vdpbf16ps: where it issues at the
 * float FMAs' rate (a Zen 4: bench/float_pipes.c, 117 GMAC/s a core
 * against 59), twice the float tiles' products an instruction; where it
 * issues at a quarter of it (Emerald Rapids: 42 against 85) the float
 * tiles stay (preferred_bf16_dot). The same CPUs run a 512-bit vpdpbusd
 * as two 256-bit halves (bench/vnni_pipes.c), so the int8 row pairs take
 * theirs in 256-bit registers here (sp_matmul_avx512vnni_halves). */
static const sp_kernels avx512bf16_dot = AVX512_KERNELS("avx512-vnni-bf16dot", sp_matmul_avx512bf16_dot);
/* avx512bf16's, with batches of some int8 types through AMX tiles */
static const sp_kernels amx = {
    .name = "amx",
    .matmul = sp_matmul_amx,
    .matmul_prompt = sp_matmul_amx_prompt,
    .prompt_staged_bytes = sp_amx_float_staged_bytes,
    .stage_prompt = sp_amx_float_stage,
    .quantize = sp_quantize_avx2,
    .attention = sp_attention_avx512,
    .activation = sp_activation_avx2,
};
#endif

#if defined(__aarch64__) && defined(__linux__)
#define SP_HAVE_NEON_KERNELS 1
#include <sys/auxv.h>
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1 << 20)
#endif
static const sp_kernels neon = {
    .name = "neon-dotprod",
    .matmul = sp_matmul_neon,
    .quantize = sp_quantize_neon,
    .attention = sp_attention_portable,
    .activation = sp_activation_portable,
};
#ifndef HWCAP2_I8MM
#define HWCAP2_I8MM (1 << 13)
#endif
static const sp_kernels neon_i8mm = {
    .name = "neon-i8mm",
    .matmul = sp_matmul_neon_i8mm,
    .quantize = sp_quantize_neon,
    .attention = sp_attention_portable,
    .activation = sp_activation_portable,
};
/* the kernel reports the dot-product and int8 matrix extensions as hardware capabilities */
static bool cpu_has_neon_dotprod(void) { return (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0; }
static bool cpu_has_neon_i8mm(void) { return cpu_has_neon_dotprod() && (getauxval(AT_HWCAP2) & HWCAP2_I8MM) != 0; }
#endif

const sp_kernels *sp_kernels_portable(void) { return &portable; }

static const sp_kernels *chosen;
static pthread_once_t chosen_once = PTHREAD_ONCE_INIT;

#ifdef SP_HAVE_X86_KERNELS
static bool cpu_has_avx2(void) {
    /* __builtin_cpu_supports also checks that the OS saves the AVX state */
    __builtin_cpu_init();
    /* F16C is read from cpuid: not every compiler's builtin knows its name */
    unsigned a, b, c, d;
    const bool f16c = __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f16c;
}

static bool cpu_has_avx512_vnni(void) {
    unsigned a, b, c, d;
    const bool vnni = __get_cpuid_count(7, 0, &a, &b, &c, &d) && (c & bit_AVX512VNNI);
    return cpu_has_avx2() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && vnni;
}

static bool cpu_has_avx512_bf16(void) {
    unsigned a, b, c, d; /* leaf 7, subleaf 1, eax bit 5 */
    return cpu_has_avx512_vnni() && __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a & (1u << 5));
}

/* AMX-TILE, AMX-INT8 and AMX-BF16 (leaf 7 edx bits 24, 25, 22), the OS saving the tile
 * state (XCR0 bits 17, 18), and, on Linux, the process's grant to use the
 * tile data (asked once: ARCH_REQ_XCOMP_PERM for XTILEDATA, feature 18);
 * without the grant the first tile instruction faults. */
static bool amx_usable(void) {
    if (!cpu_has_avx512_bf16()) return false;
    unsigned a, b, c, d;
    const unsigned tile_int8_bf16 = 3u << 24 | 1u << 22;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || (d & tile_int8_bf16) != tile_int8_bf16) return false;
    uint32_t xcr0_lo, xcr0_hi;
    __asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
    if ((xcr0_lo & (3u << 17)) != (3u << 17)) return false;
#ifdef __linux__
    enum { ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18 };
    return syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
#else
    return false;
#endif
}

/* vdpbf16ps at the float FMAs' rate: measured on AMD's Zen 4 only; Intel's
 * CPUs with AVX-512 BF16 and no AMX are not known to have it. */
static bool preferred_bf16_dot(void) {
    unsigned a = 0, b = 0, c = 0, d = 0;
    return __get_cpuid(0, &a, &b, &c, &d) && b == 0x68747541u && d == 0x69746e65u && c == 0x444d4163u; /* "AuthenticAMD" */
}

static bool amx_granted;
static pthread_once_t amx_once = PTHREAD_ONCE_INIT;
static void ask_for_amx(void) { amx_granted = amx_usable(); }
static bool cpu_has_amx(void) {
    pthread_once(&amx_once, ask_for_amx);
    return amx_granted;
}
#endif

static bool always(void) { return true; }

/* A row's CPU test and kernels, or NULL where this build lacks the architecture. */
#ifdef SP_HAVE_X86_KERNELS
#define X86(x) (x)
#else
#define X86(x) NULL
#endif
#ifdef SP_HAVE_NEON_KERNELS
#define NEON(x) (x)
#else
#define NEON(x) NULL
#endif

/* Every level of every architecture, best first, each with what the CPU
 * must have for it: SPROUT_CPU may name any of them, so that a level of
 * another architecture is not taken for a typo. A row whose cpu_has is
 * NULL is not in this build. Within an architecture the levels nest (every
 * level's CPU test implies the ones below it), so the first row whose test
 * passes, from a cap down, is the best the CPU has at or below the cap
 * (skipping a row not preferred on this CPU unless the cap names it); the
 * other architecture's rows, with no test, are passed over. The Arm rows
 * come first so that bottom-up the names read generic, the x86 levels, then
 * the Arm ones. */
typedef struct level {
    const char *name; /* as SPROUT_CPU spells it */
    bool (*cpu_has)(void);
    const sp_kernels *kernels;
    /* NULL, or whether a CPU that has the level is faster with it than
     * with the next: a level not preferred is taken only when named */
    bool (*preferred)(void);
} level;

static const level levels[] = {
    {"i8mm", NEON(cpu_has_neon_i8mm), NEON(&neon_i8mm), NULL},
    {"neon", NEON(cpu_has_neon_dotprod), NEON(&neon), NULL},
    {"amx", X86(cpu_has_amx), X86(&amx), NULL},
    {"avx512bf16dot", X86(cpu_has_avx512_bf16), X86(&avx512bf16_dot), X86(preferred_bf16_dot)},
    {"avx512bf16", X86(cpu_has_avx512_bf16), X86(&avx512bf16), NULL},
    {"avx512", X86(cpu_has_avx512_vnni), X86(&avx512), NULL},
    {"avx2", X86(cpu_has_avx2), X86(&avx2), NULL},
    {"generic", always, &portable, NULL},
};

enum { N_LEVELS = sizeof levels / sizeof *levels };

/* The index of the level named, or N_LEVELS where no architecture has one by that name. */
static size_t level_index(const char *name) {
    size_t i = 0;
    while (i < N_LEVELS && strcmp(levels[i].name, name)) i++;
    return i;
}

static bool cpu_has(const level *l) { return l->cpu_has && l->cpu_has(); }

const sp_kernels *sp_kernels_for_level(const char *name) {
    const size_t i = level_index(name);
    return i < N_LEVELS && cpu_has(&levels[i]) ? levels[i].kernels : NULL;
}

/* The best level the CPU has at or below SPROUT_CPU; without it (or with a
 * name no level has: a typo; or another architecture's level) the best of
 * all. A name no level has, or a level that cannot be had (one this CPU or
 * build lacks), is said once, so that a typo does not pass for a measured
 * level and a comparison does not quietly measure something else. */
static void choose(void) {
    const char *cap = getenv("SPROUT_CPU");
    const size_t named = cap && *cap ? level_index(cap) : N_LEVELS;
    if (cap && *cap && named == N_LEVELS) {
        char names[128] = "";
        for (size_t i = N_LEVELS, o = 0; i-- > 0 && o < sizeof names;) /* bottom-up: generic first */
            o += (size_t)snprintf(names + o, sizeof names - o, "%s %s", i == N_LEVELS - 1 ? "" : ",", levels[i].name);
        sp_log(SPROUT_LOG_WARN, "SPROUT_CPU=%s is not one of%s: using the best level this CPU has", cap, names);
    }
    size_t i = named < N_LEVELS && levels[named].cpu_has ? named : 0;
    while (!cpu_has(&levels[i]) || (i != named && levels[i].preferred && !levels[i].preferred())) i++; /* the last, generic, always passes */
    chosen = levels[i].kernels;
    if (named < N_LEVELS && i != named)
        sp_log(SPROUT_LOG_WARN, "SPROUT_CPU=%s: this CPU or build does not have that level; using the %s kernels", cap, chosen->name);
}

const sp_kernels *sp_kernels_get(void) {
    pthread_once(&chosen_once, choose);
    return chosen;
}

bool sp_cpu_has_x86_avx2(void) {
#ifdef SP_HAVE_X86_KERNELS
    return cpu_has_avx2();
#else
    return false;
#endif
}

const char *sprout_kernels_name(void) { return sp_kernels_get()->name; }
