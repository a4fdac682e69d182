/* The search structures the IQ2/IQ3/IQ1 quantizers share: for each grid,
 * a map from every combination of level indices a group can round to
 * (packed as the grid's points are, iq_grids.h) to its point, and for the
 * combinations that are not points, the points nearest to them (every
 * point within the few smallest distances, nearest first). A quantizer
 * rounds a group to levels, and when that misses the grid picks the
 * neighbour that fits the group best. Built once, on first use. */
#ifndef SPROUT_QUANT_IQ_LATTICE_H
#define SPROUT_QUANT_IQ_LATTICE_H

#include <stdbool.h>
#include <stdint.h>

typedef enum sp_iq_lattice_id {
    SP_LATTICE_IQ2XXS,
    SP_LATTICE_IQ2XS,
    SP_LATTICE_IQ2S,
    SP_LATTICE_IQ1S, /* IQ1_S and IQ1_M */
    SP_LATTICE_IQ3XXS,
    SP_LATTICE_IQ3S,
    SP_LATTICE_COUNT
} sp_iq_lattice_id;

/* The most points any grid has (IQ1's): scratch for sp_iq_lattice_neighbours. */
#define SP_LATTICE_MAX_POINTS 2048

typedef struct sp_iq_lattice {
    const uint16_t *points; /* packed level indices, element 0 lowest */
    int n_points;
    int dims;  /* elements per point: 8, or 4 for IQ3 */
    int bits;  /* bits per element's index: 2, or 3 for IQ3 */
    int rings; /* distinct distances a neighbour list spans */
    /* per packed combination: its point, or -1 off the grid (and for
     * combinations with an index no point uses) */
    int32_t *point_of;
    /* per combination off the grid: where its list starts in neighbours,
     * which holds each list's length and then its points; NULL when the
     * lists could not be allocated (they are then made on each call) */
    uint32_t *list_at;
    uint16_t *neighbours;
} sp_iq_lattice;

/* The tables of a grid, built on the first call (thread-safe). */
const sp_iq_lattice *sp_iq_lattice_of(sp_iq_lattice_id id);

/* Level index of element j of point p. */
static inline int sp_iq_lattice_level(const sp_iq_lattice *lat, int p, int j) {
    return lat->points[p] >> (lat->bits * j) & ((1 << lat->bits) - 1);
}

/* The neighbour list of `key`, a combination off the grid: its length, and
 * *list pointing at it (in the tables, or in scratch, which holds
 * SP_LATTICE_MAX_POINTS). */
int sp_iq_lattice_neighbours(const sp_iq_lattice *lat, unsigned key, uint16_t *scratch, const uint16_t **list);

/* Of the neighbours of `key` (off the grid), the point nearest to x at this
 * scale under the weights w, a point's level l standing for value[l]: what
 * a group whose rounding missed the grid takes (first of equals). */
int sp_iq_lattice_nearest(const sp_iq_lattice *lat, unsigned key, const float *x, const float *w, float scale, const float *value);

#endif
