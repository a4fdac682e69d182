/* One element of a KV cache row of any KV type, decoded as the kernels
 * decode it (ggml's dequantization: a block's half-precision scale times
 * its integer, exact in f32). The portable attention reads the cache
 * through this; the x86 kernels decode 8 or 16 at a time and use it for
 * the odd tail of a float row. */
#ifndef SPROUT_KERNELS_KV_ELEMENT_H
#define SPROUT_KERNELS_KV_ELEMENT_H

#include "kernels/kernels.h"
#include "quant/blocks.h"
#include "quant/fp16.h"

static inline float sp_kv_element(const void *base, sp_kv_type t, int64_t idx) {
    switch (t) {
    case SP_KV_F32: return ((const float *)base)[idx];
    case SP_KV_BF16: return sp_bf16_to_fp32(((const uint16_t *)base)[idx]);
    case SP_KV_Q8_0: {
        const sp_block_q8_0 *b = (const sp_block_q8_0 *)base + idx / 32;
        return (float)b->qs[idx % 32] * sp_fp16_to_fp32(b->d);
    }
    case SP_KV_Q4_0: {
        const sp_block_q4_0 *b = (const sp_block_q4_0 *)base + idx / 32;
        const int j = (int)(idx % 32), nibble = j < 16 ? b->qs[j] & 15 : b->qs[j - 16] >> 4;
        return (float)(nibble - 8) * sp_fp16_to_fp32(b->d);
    }
    default: return sp_fp16_to_fp32(((const uint16_t *)base)[idx]);
    }
}

#endif
