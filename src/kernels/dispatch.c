/* Picks the kernels once, at first use. Only the portable set exists so
 * far; per-ISA sets are chosen here from cpuid as they are added. */
#include <pthread.h>

#include "kernels/kernels.h"

static const sp_kernels portable = {
    .name = "portable",
    .matmul = sp_matmul_portable,
    .attention = sp_attention_portable,
};

const sp_kernels *sp_kernels_portable(void) { return &portable; }

const sp_kernels *sp_kernels_get(void) { return &portable; }
