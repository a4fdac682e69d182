/* The grid IQ formats in the x86 int8 path (included by x86_matmul_loops.h,
 * which it extends): IQ3_XXS and IQ3_S. A super-block's eight sub-blocks of
 * 32 are the lanes, as IQ4_XS's (byte_lanes_dots): each group of 4 weights
 * is a grid point, gathered as its packed level indices (quant/iq_grids.h,
 * 3 bits an element) for a whole sub-block at once, spread to bytes and
 * looked up in the format's 8 magnitudes by a byte shuffle, then negated
 * where the sign bits say. Signed levels reach 62: 8-bit levels as
 * byte_level_dot_acc takes them (IQ4_NL's way). */
#ifndef SPROUT_KERNELS_X86_MATMUL_GRIDS_H
#define SPROUT_KERNELS_X86_MATMUL_GRIDS_H

#include "quant/iq_grids.h"

/* 8 points (12-bit codes in the low bits of each dword) to 32 magnitudes:
 * element j of a point (bits 3j..3j+2) to byte j of its dword, then the
 * level table. */
static inline __m256i grid_magnitudes(__m256i codes, const uint8_t levels[8]) {
    __m256i bytes = _mm256_and_si256(codes, _mm256_set1_epi32(7));
    for (int j = 1; j < 4; j++) bytes = _mm256_or_si256(bytes, _mm256_and_si256(_mm256_slli_epi32(codes, 5 * j), _mm256_set1_epi32(7 << (8 * j))));
    const __m128i table = _mm_loadl_epi64((const __m128i *)levels);
    return _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(table), bytes);
}

/* All ones in byte i where bit i of `bits` is set (AVX2: no mask
 * registers). */
static inline __m256i bytes_where(uint32_t bits) {
    const __m256i spread = _mm256_shuffle_epi8(_mm256_set1_epi32((int)bits),
                                               _mm256_setr_epi64x(0, 0x0101010101010101ll, 0x0202020202020202ll, 0x0303030303030303ll));
    const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ull);
    return _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit);
}

/* Levels of 32 elements with signs: bit i of `signs` set makes element i
 * negative; made unsigned (plus 128) where the level's dots take them so.
 * With AVX-512 the bits are a mask register: one masked subtraction, where
 * spreading them to bytes took two shuffles (the scarce port). */
static inline __m256i signed_levels(__m256i magnitudes, uint32_t signs) {
#ifdef __AVX512BW__
    const __m256i levels = _mm256_mask_sub_epi8(magnitudes, (__mmask32)signs, _mm256_setzero_si256(), magnitudes);
#else
    const __m256i negative = bytes_where(signs);
    const __m256i levels = _mm256_sub_epi8(_mm256_xor_si256(magnitudes, negative), negative);
#endif
    return Q8_0_UNSIGNED ? _mm256_xor_si256(levels, _mm256_set1_epi8((char)0x80)) : levels;
}

/* Sub-block s of an IQ3 super-block: its eight grid codes (indices idx, 8
 * or 9 bits) from the type's grid. */
static inline __m256i grid_codes(const uint16_t *grid, __m256i idx) {
    /* dwords read at 2-byte steps: the code is the low half */
    return _mm256_and_si256(_mm256_i32gather_epi32((const int *)(const void *)grid, idx, 2), _mm256_set1_epi32(0xFFFF));
}

static inline __attribute__((always_inline)) void iq3_chunk(sprout_type type, const uint8_t *row, const act_tile *at, int64_t t0, const int G,
                                                            int64_t b, __m256 acc[]) {
    const bool xxs = type == SPROUT_TYPE_IQ3_XXS;
    const size_t block_bytes = xxs ? sizeof(sp_block_iq3_xxs) : sizeof(sp_block_iq3_s);
    if (G == 1) decode_prefetch(row + (size_t)b * block_bytes, block_bytes);
    __m256i lv[8];
    float scales[8];
    if (xxs) {
        const sp_block_iq3_xxs *blk = (const sp_block_iq3_xxs *)row + b;
        const float d = _cvtsh_ss(blk->d);
        for (int s = 0; s < 8; s++) {
            uint32_t word;
            memcpy(&word, blk->qs + SP_QK_K / 4 + 4 * s, sizeof word);
            uint32_t signs = 0;
            for (int l = 0; l < 4; l++) signs |= (uint32_t)sp_iq_signs(word >> (7 * l)) << (8 * l);
            const __m256i idx = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(blk->qs + 8 * s)));
            lv[s] = signed_levels(grid_magnitudes(grid_codes(sp_iq3xxs_grid, idx), sp_iq3xxs_levels), signs);
            scales[s] = d * (0.5f + (float)(word >> 28)) * 0.5f;
        }
    } else {
        const sp_block_iq3_s *blk = (const sp_block_iq3_s *)row + b;
        const float d = _cvtsh_ss(blk->d);
        for (int s = 0; s < 8; s++) {
            /* index k's ninth bit: bit k of qh[s] */
            const __m256i high = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(blk->qh[s]), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)),
                                                  _mm256_set1_epi32(1));
            const __m256i idx = _mm256_or_si256(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(blk->qs + 8 * s))), _mm256_slli_epi32(high, 8));
            uint32_t signs;
            memcpy(&signs, blk->signs + 4 * s, sizeof signs);
            lv[s] = signed_levels(grid_magnitudes(grid_codes(sp_iq3s_grid, idx), sp_iq3s_levels), signs);
            scales[s] = d * (float)(1 + 2 * ((blk->scales[s / 2] >> (4 * (s % 2))) & 15));
        }
    }
    byte_lanes_dots(type, lv, _mm256_loadu_ps(scales), at, t0, G, b, acc);
}

#endif
