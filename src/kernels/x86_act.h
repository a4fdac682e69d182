/* The quantized activations of the x86 levels (AVX2, AVX-512, AMX): what
 * their quantize writes and every int8 matmul of theirs reads. */
#ifndef SPROUT_KERNELS_X86_ACT_H
#define SPROUT_KERNELS_X86_ACT_H

#include <stdint.h>

#include "kernels/kernels.h"

/* Activations as Q8_0 blocks, but with the scale kept in float: it is
 * multiplied into every row's dot, so converting it once pays. */
typedef struct act_block {
    float d;
    int16_t sum[2]; /* of qs[0..15] and qs[16..31]: for the K-quants' mins and offsets */
    int8_t qs[32];
} act_block;
_Static_assert(sizeof(act_block) == SP_ACT_BLOCK_BYTES, "the size kernels.h promises");

#endif
