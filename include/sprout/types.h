/* sprout/types.h: tensor types, their blocks and their conversions.
 * Part of <sprout.h>, whose conventions hold here. */
#ifndef SPROUT_API_TYPES_H
#define SPROUT_API_TYPES_H

#include "base.h"

SPROUT_BEGIN_DECLS

/* ---------------------------------------------------------------------------
 * Tensor types. The numeric values are the GGUF/ggml type ids, so they can be
 * stored in files and compared with llama.cpp's.
 * ------------------------------------------------------------------------- */
typedef enum sprout_type {
    SPROUT_TYPE_F32 = 0,
    SPROUT_TYPE_F16 = 1,
    SPROUT_TYPE_Q4_0 = 2,
    SPROUT_TYPE_Q4_1 = 3,
    SPROUT_TYPE_Q5_0 = 6,
    SPROUT_TYPE_Q5_1 = 7,
    SPROUT_TYPE_Q8_0 = 8,
    SPROUT_TYPE_Q8_1 = 9,
    SPROUT_TYPE_Q2_K = 10,
    SPROUT_TYPE_Q3_K = 11,
    SPROUT_TYPE_Q4_K = 12,
    SPROUT_TYPE_Q5_K = 13,
    SPROUT_TYPE_Q6_K = 14,
    SPROUT_TYPE_Q8_K = 15,
    SPROUT_TYPE_IQ2_XXS = 16,
    SPROUT_TYPE_IQ2_XS = 17,
    SPROUT_TYPE_IQ3_XXS = 18,
    SPROUT_TYPE_IQ1_S = 19,
    SPROUT_TYPE_IQ4_NL = 20,
    SPROUT_TYPE_IQ3_S = 21,
    SPROUT_TYPE_IQ2_S = 22,
    SPROUT_TYPE_IQ4_XS = 23,
    SPROUT_TYPE_I8 = 24,
    SPROUT_TYPE_I16 = 25,
    SPROUT_TYPE_I32 = 26,
    SPROUT_TYPE_I64 = 27,
    SPROUT_TYPE_F64 = 28,
    SPROUT_TYPE_IQ1_M = 29,
    SPROUT_TYPE_BF16 = 30,
    SPROUT_TYPE_TQ1_0 = 34,
    SPROUT_TYPE_TQ2_0 = 35,
    SPROUT_TYPE_MXFP4 = 39,
    SPROUT_TYPE_COUNT = 40 /* one past the largest id; not a type */
} sprout_type;

/* True for ids that name a known tensor type (of any kind). */
bool sprout_type_is_known(int type);
/* The name as llama.cpp spells it ("Q4_K", "F16"); "?" for unknown ids. */
const char *sprout_type_name(int type);
/* Parses a name case-insensitively; returns false if there is no such type. */
bool sprout_type_from_name(const char *name, sprout_type *out);
/* Elements per block (1 for plain types, 32 or 256 for block formats). */
int64_t sprout_type_block_size(int type);
/* Bytes per block. */
size_t sprout_type_block_bytes(int type);
/* True for block-quantized types. */
bool sprout_type_is_quantized(int type);
/* True if sprout can convert this type to floats (and so compute with it). */
bool sprout_type_can_dequantize(int type);
/* Dequantizes n elements (a multiple of the block size) of `type` to floats. */
sprout_status sprout_dequantize(int type, const void *src, float *dst, int64_t n);
/* Quantizes n floats (a multiple of the block size) with the reference
 * quantizer of `type`; dst must hold n / block_size blocks. */
sprout_status sprout_quantize(int type, const float *src, void *dst, int64_t n);

/* The kernel set the CPU was given at first use ("portable", "avx2" ...);
 * SPROUT_CPU=generic in the environment forces the portable one. */
const char *sprout_kernels_name(void);

/* The name llama.cpp gives a general.file_type value ("Q4_K_M",
 * "MOSTLY_F16" is spelt "F16"); NULL for values it does not define. */
const char *sprout_file_type_name(uint32_t file_type);

SPROUT_END_DECLS

#endif /* SPROUT_API_TYPES_H */
