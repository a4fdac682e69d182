/* The lattice grids of the IQ2, IQ3 and IQ1 formats (iq_grids.c), each
 * point packed as level indices, and the sign patterns the IQ2 and IQ3
 * formats pair with them. */
#ifndef SPROUT_QUANT_IQ_GRIDS_H
#define SPROUT_QUANT_IQ_GRIDS_H

#include <stdint.h>

extern const uint16_t sp_iq2xxs_grid[256];
extern const uint16_t sp_iq2xs_grid[512];
extern const uint16_t sp_iq2s_grid[1024];
extern const uint16_t sp_iq3xxs_grid[256];
extern const uint16_t sp_iq3s_grid[512];
extern const uint16_t sp_iq1s_grid[2048];

/* The magnitudes each grid's indices stand for. */
static const uint8_t sp_iq2_levels[4] = {8, 25, 43, 0};
static const uint8_t sp_iq3xxs_levels[8] = {4, 12, 20, 28, 36, 44, 52, 62};
static const uint8_t sp_iq3s_levels[8] = {1, 3, 5, 7, 9, 11, 13, 15};
static const int8_t sp_iq1_levels[4] = {-1, 0, 1, 0};

/* Element j's value of an IQ2 or IQ1 point (2-bit indices). */
static inline int sp_iq2_point(uint16_t point, int j) { return sp_iq2_levels[(point >> (2 * j)) & 3]; }
static inline int sp_iq1_point(uint16_t point, int j) { return sp_iq1_levels[(point >> (2 * j)) & 3]; }

/* Element j of 4 of an IQ3 point (3-bit indices). */
static inline int sp_iq3_point(const uint8_t levels[8], uint16_t point, int j) { return levels[(point >> (3 * j)) & 7]; }

/* The signs of 8 elements from 7 stored bits: the eighth makes the count of
 * minus signs even. Bit j set: element j is negative. */
static inline uint8_t sp_iq_signs(unsigned seven) {
    seven &= 127;
    unsigned parity = seven ^ seven >> 4;
    parity ^= parity >> 2;
    parity ^= parity >> 1;
    return (uint8_t)(seven | (parity & 1) << 7);
}

#endif
