/* The 2-bit grid IQ formats in the x86 int8 path (included by
 * x86_matmul_loops.h after x86_matmul_grids.h): IQ2_XXS, IQ2_XS, IQ2_S,
 * IQ1_S and IQ1_M. As the IQ3 formats, a super-block's eight sub-blocks of
 * 32 are the lanes; each group of 8 weights is a grid point, 8 level
 * indices of 2 bits (quant/iq_grids.h), read from the grid a point at a
 * time, spread to one byte each and looked up in the format's levels by a
 * byte shuffle. IQ2 levels (8, 25, 43) take their signs as IQ3's do; IQ1
 * points (-1, 0, 1) shifted by +-1/8 are taken times 8, so that the shift
 * is part of the level (8 g +- 1, exact in a byte) and the scale carries
 * the 1/8; IQ2's scale d (2 s + 1) / 8 likewise. Levels are signed bytes
 * as byte_level_dot_acc takes them (plus 128 with VNNI, the offset then
 * starting each sum through the activations' block sums, as IQ4_XS's). The
 * formats with a scale per 32 (IQ2_XXS, IQ1_S) go through
 * byte_lanes_dots; those with one per 16 (IQ2_XS, IQ2_S, IQ1_M) through
 * split_k_chunk's halves, with integer scales, as Q3_K's. */
#ifndef SPROUT_KERNELS_X86_MATMUL_GRIDS2_H
#define SPROUT_KERNELS_X86_MATMUL_GRIDS2_H

#include "quant/iq_grids.h"

static inline bool grid2_type(sprout_type type) {
    switch (type) {
    case SPROUT_TYPE_IQ2_XXS:
    case SPROUT_TYPE_IQ2_XS:
    case SPROUT_TYPE_IQ2_S:
    case SPROUT_TYPE_IQ1_S:
    case SPROUT_TYPE_IQ1_M: return true;
    default: return false;
    }
}

/* The grid formats with a scale per 16 elements: their activations carry
 * the sums of each half (prepare_act_tile's split sums). */
static inline bool grid2_scale_per_16(sprout_type type) {
    return type == SPROUT_TYPE_IQ2_XS || type == SPROUT_TYPE_IQ2_S || type == SPROUT_TYPE_IQ1_M;
}

static inline size_t grid2_block_bytes(sprout_type type) {
    switch (type) {
    case SPROUT_TYPE_IQ2_XXS: return sizeof(sp_block_iq2_xxs);
    case SPROUT_TYPE_IQ2_XS: return sizeof(sp_block_iq2_xs);
    case SPROUT_TYPE_IQ2_S: return sizeof(sp_block_iq2_s);
    case SPROUT_TYPE_IQ1_S: return sizeof(sp_block_iq1_s);
    default: return sizeof(sp_block_iq1_m);
    }
}

/* A sub-block's four points (codes of 16 bits, code l at bits 16 l) as 32
 * indices into grid2_table: byte 8 l + j takes field j of code l, left at
 * bit 0 (fields 0 and 2) or bit 2 (fields 1 and 3) of its nibble, so that
 * a byte shuffle and one mask free it without per-byte shifts (fields 2
 * and 3 come from a copy of the codes a nibble down). */
static inline __m256i grid2_fields(uint64_t codes) {
    const __m256i all = _mm256_set1_epi64x((long long)codes);
    const __m256i both = _mm256_blend_epi32(all, _mm256_srli_epi64(all, 4), 0xCC); /* per 128-bit lane: codes, then a nibble down */
    const __m256i pick = _mm256_setr_epi8(0, 0, 8, 8, 1, 1, 9, 9, 2, 2, 10, 10, 3, 3, 11, 11, 4, 4, 12, 12, 5, 5, 13, 13, 6, 6, 14, 14, 7, 7,
                                          15, 15);
    const __m256i spread = _mm256_shuffle_epi8(both, pick);
    return _mm256_and_si256(spread, _mm256_set1_epi16(0x0C03));
}

/* Four levels as grid2_fields indexes them: index f (a field at bit 0)
 * and 4 f (at bit 2) both stand for level f. */
static inline __m256i grid2_table(int l0, int l1, int l2, int l3) {
    return _mm256_broadcastsi128_si256(_mm_setr_epi8((char)l0, (char)l1, (char)l2, (char)l3, (char)l1, 0, 0, 0, (char)l2, 0, 0, 0, (char)l3, 0, 0, 0));
}

/* The signs of 32 IQ2 points from their 7 stored bits (one a byte, bit 7
 * clear), as sp_iq_signs makes them: bit 7 evens the count. The 16-bit
 * shifts fold each byte's parity into its bit 0; what they bring down
 * from the byte above lands on bit 1 at the lowest. */
static inline __m256i iq2_signs(__m256i seven) {
    __m256i p = _mm256_xor_si256(seven, _mm256_srli_epi16(seven, 4));
    p = _mm256_xor_si256(p, _mm256_srli_epi16(p, 2));
    p = _mm256_xor_si256(p, _mm256_srli_epi16(p, 1));
    return _mm256_or_si256(seven, _mm256_slli_epi16(_mm256_and_si256(p, _mm256_set1_epi8(1)), 7));
}

/* Grid code l of sub-block s: its index (with the high bits the format
 * keeps apart) into the format's grid. */
static inline __attribute__((always_inline)) uint16_t grid2_code(sprout_type type, const uint8_t *blk, int s, int l) {
    switch (type) {
    case SPROUT_TYPE_IQ2_XXS: return sp_iq2xxs_grid[((const sp_block_iq2_xxs *)blk)->qs[4 * s + l / 2] >> (8 * (l % 2)) & 255];
    case SPROUT_TYPE_IQ2_XS: return sp_iq2xs_grid[((const sp_block_iq2_xs *)blk)->qs[4 * s + l] & 511];
    case SPROUT_TYPE_IQ2_S: {
        const sp_block_iq2_s *x = (const sp_block_iq2_s *)blk;
        return sp_iq2s_grid[x->qs[4 * s + l] | (x->qh[s] >> (2 * l) & 3) << 8];
    }
    case SPROUT_TYPE_IQ1_S: {
        const sp_block_iq1_s *x = (const sp_block_iq1_s *)blk;
        return sp_iq1s_grid[x->qs[4 * s + l] | (x->qh[s] >> (3 * l) & 7) << 8];
    }
    default: {
        const sp_block_iq1_m *x = (const sp_block_iq1_m *)blk;
        return sp_iq1s_grid[x->qs[4 * s + l] | (x->qh[2 * s + l / 2] >> (4 * (l % 2)) & 7) << 8];
    }
    }
}

static inline __attribute__((always_inline)) uint64_t grid2_codes(sprout_type type, const uint8_t *blk, int s) {
    uint64_t codes = 0;
    for (int l = 0; l < 4; l++) codes |= (uint64_t)grid2_code(type, blk, s, l) << (16 * l);
    return codes;
}

/* An IQ2_XXS super-block's eight words (lane s: sub-block s's, dword
 * 2 s + 1 of qs after its four indices): the points' signs and the scale. */
static inline __m256i iq2_xxs_words(const uint8_t *blk) {
    const uint16_t *qs = ((const sp_block_iq2_xxs *)blk)->qs;
    const __m256 lo = _mm256_loadu_ps((const float *)(const void *)qs), hi = _mm256_loadu_ps((const float *)(const void *)(qs + 16));
    return _mm256_permute4x64_epi64(_mm256_castps_si256(_mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1))), _MM_SHUFFLE(3, 1, 2, 0));
}

/* The signs of an IQ2 super-block's 32 points, sub-block s's in dword s. */
static inline __attribute__((always_inline)) __m256i iq2_block_signs(sprout_type type, const uint8_t *blk) {
    if (type == SPROUT_TYPE_IQ2_S) return _mm256_loadu_si256((const __m256i *)(((const sp_block_iq2_s *)blk)->qs + SP_QK_K / 8));
    if (type == SPROUT_TYPE_IQ2_XS) { /* the top 7 bits of each word */
        const uint16_t *qs = ((const sp_block_iq2_xs *)blk)->qs;
        const __m256i a = _mm256_srli_epi16(_mm256_loadu_si256((const __m256i *)qs), 9);
        const __m256i b = _mm256_srli_epi16(_mm256_loadu_si256((const __m256i *)(qs + 16)), 9);
        return iq2_signs(_mm256_permute4x64_epi64(_mm256_packus_epi16(a, b), _MM_SHUFFLE(3, 1, 2, 0)));
    }
    /* IQ2_XXS: four 7-bit signs in each sub-block's word */
    const __m256i words = iq2_xxs_words(blk);
    __m256i f[4];
    for (int l = 0; l < 4; l++) f[l] = _mm256_and_si256(_mm256_srli_epi32(words, 7 * l), _mm256_set1_epi32(127));
    /* per 128-bit lane, byte 4 l + s (sub-blocks 0-3, then 4-7) to 4 s + l */
    const __m256i fields = _mm256_packus_epi16(_mm256_packus_epi32(f[0], f[1]), _mm256_packus_epi32(f[2], f[3]));
    const __m256i to_points = _mm256_broadcastsi128_si256(_mm_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15));
    return iq2_signs(_mm256_shuffle_epi8(fields, to_points));
}

/* IQ1 levels 8 g + 1 from the fields; where bit i of `minus` is set,
 * element i takes the shift the other way (8 g - 1). */
static inline __m256i iq1_levels(__m256i fields, uint32_t minus) {
    const __m256i plus = _mm256_shuffle_epi8(grid2_table(8 * sp_iq1_levels[0] + 1, 8 * sp_iq1_levels[1] + 1, 8 * sp_iq1_levels[2] + 1,
                                                         8 * sp_iq1_levels[3] + 1),
                                             fields);
#ifdef __AVX512BW__
    const __m256i levels = _mm256_mask_sub_epi8(plus, (__mmask32)minus, plus, _mm256_set1_epi8(2));
#else
    const __m256i m = bytes_where(minus);
    const __m256i levels = _mm256_add_epi8(plus, _mm256_add_epi8(m, m));
#endif
    return Q8_0_UNSIGNED ? _mm256_xor_si256(levels, _mm256_set1_epi8((char)0x80)) : levels;
}

/* The minus shifts of an IQ1_M super-block's 32 groups: bit 4 s + l for
 * group l of sub-block s (bit 3 of nibble l of qh[2 s], qh[2 s + 1]), each
 * nibble's bit 3 moved to its byte's top and taken by a byte movemask. */
static inline uint32_t iq1_m_minus_bits(const sp_block_iq1_m *x) {
    const __m128i qh = _mm_loadu_si128((const __m128i *)x->qh), low_nibble_top = _mm_slli_epi16(qh, 4);
    const uint32_t lo = (uint32_t)_mm_movemask_epi8(_mm_unpacklo_epi8(low_nibble_top, qh));
    const uint32_t hi = (uint32_t)_mm_movemask_epi8(_mm_unpackhi_epi8(low_nibble_top, qh));
    return lo | hi << 16;
}

/* Four groups' bits (bit l: group l) to their bytes' bits (group l: bits
 * 8 l..8 l + 7), by a multiply whose partial products never meet. */
static inline uint32_t group_bits_to_bytes(uint32_t four) { return ((four * 0x00204081u) & 0x01010101u) * 0xFFu; }

/* Odd integer scales 2 s + 1 from eight 3- or 4-bit fields. */
static inline __m256i odd_scales(__m256i fields) { return _mm256_add_epi32(_mm256_add_epi32(fields, fields), _mm256_set1_epi32(1)); }

/* Super-block b of a row: the eight sub-blocks' levels (lane j sub-block
 * j), the integer scales of their halves (equal where the format has one
 * per 32) and the float factor d / 8. */
static inline __attribute__((always_inline)) void grid2_unpack(sprout_type type, const uint8_t *row, int64_t b, split_k_block *k) {
    const uint8_t *blk = row + (size_t)b * grid2_block_bytes(type);
    const bool iq1 = type == SPROUT_TYPE_IQ1_S || type == SPROUT_TYPE_IQ1_M;
    uint16_t d16;
    if (iq1) {
        if (type == SPROUT_TYPE_IQ1_S) {
            const sp_block_iq1_s *x = (const sp_block_iq1_s *)blk;
            d16 = x->d;
            for (int s = 0; s < 8; s++) k->lv[s] = iq1_levels(grid2_fields(grid2_codes(type, blk, s)), x->qh[s] & 0x8000 ? ~0u : 0u);
            const __m256i qh = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)x->qh));
            k->sc_lo = k->sc_hi = odd_scales(_mm256_and_si256(_mm256_srli_epi32(qh, 12), _mm256_set1_epi32(7)));
        } else {
            const sp_block_iq1_m *x = (const sp_block_iq1_m *)blk;
            const uint32_t minus = iq1_m_minus_bits(x);
            for (int s = 0; s < 8; s++) k->lv[s] = iq1_levels(grid2_fields(grid2_codes(type, blk, s)), group_bits_to_bytes(minus >> (4 * s) & 15));
            uint16_t words[4];
            memcpy(words, x->scales, sizeof words);
            d16 = (uint16_t)(words[0] >> 12 | (words[1] >> 8 & 0x00F0) | (words[2] >> 4 & 0x0F00) | (words[3] & 0xF000));
            /* sub-block s's halves: bits 6 (s % 2) and 6 (s % 2) + 3 of word s / 2 */
            const __m128i w4 = _mm_loadl_epi64((const __m128i *)words);
            const __m256i w = _mm256_cvtepu16_epi32(_mm_unpacklo_epi16(w4, w4));
            const __m256i seven = _mm256_set1_epi32(7);
            k->sc_lo = odd_scales(_mm256_and_si256(_mm256_srlv_epi32(w, _mm256_setr_epi32(0, 6, 0, 6, 0, 6, 0, 6)), seven));
            k->sc_hi = odd_scales(_mm256_and_si256(_mm256_srlv_epi32(w, _mm256_setr_epi32(3, 9, 3, 9, 3, 9, 3, 9)), seven));
        }
    } else {
        uint32_t signs[8];
        _mm256_storeu_si256((__m256i *)signs, iq2_block_signs(type, blk));
        const __m256i magnitudes = grid2_table(sp_iq2_levels[0], sp_iq2_levels[1], sp_iq2_levels[2], sp_iq2_levels[3]);
        for (int s = 0; s < 8; s++) k->lv[s] = signed_levels(_mm256_shuffle_epi8(magnitudes, grid2_fields(grid2_codes(type, blk, s))), signs[s]);
        memcpy(&d16, blk, sizeof d16);
        if (type == SPROUT_TYPE_IQ2_XXS) { /* the top 4 bits of each sub-block's word */
            k->sc_lo = k->sc_hi = odd_scales(_mm256_srli_epi32(iq2_xxs_words(blk), 28));
        } else { /* IQ2_XS, IQ2_S: the first half's scale in the low nibble */
            const uint8_t *scales = type == SPROUT_TYPE_IQ2_XS ? ((const sp_block_iq2_xs *)blk)->scales : ((const sp_block_iq2_s *)blk)->scales;
            const __m256i sc = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)scales));
            k->sc_lo = odd_scales(_mm256_and_si256(sc, _mm256_set1_epi32(15)));
            k->sc_hi = odd_scales(_mm256_srli_epi32(sc, 4));
        }
    }
    k->d = _mm256_set1_ps(_cvtsh_ss(d16) * 0.125f);
}

/* IQ2_XXS and IQ1_S: a scale per sub-block, as IQ3's lanes. */
static inline __attribute__((always_inline)) void grid2_lanes_chunk(sprout_type type, const uint8_t *row, const act_tile *at, int64_t t0,
                                                                    const int G, int64_t b, __m256 acc[]) {
    if (G == 1) decode_prefetch(row + (size_t)b * grid2_block_bytes(type), grid2_block_bytes(type));
    split_k_block k;
    grid2_unpack(type, row, b, &k);
    byte_lanes_dots(type, k.lv, _mm256_mul_ps(k.d, _mm256_cvtepi32_ps(k.sc_lo)), at, t0, G, b, acc);
}

#endif
