/* Building the grids' maps and neighbour lists (iq_lattice.h). The lists
 * are the ones the format's authors search: every point whose squared
 * distance to the combination, in level indices, is among the `rings`
 * smallest such distances, ordered by distance and then by point, so that
 * a tie in the fit goes to the same point as in llama.cpp's quantizer.
 * Combinations with an index above the grid's highest level (3 in a 2-bit
 * grid) are never looked up: the quantizers clamp to the levels the points
 * use. */
#include "quant/iq_lattice.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>

#include "quant/iq_grids.h"

/* The largest squared index distance: 8 elements 2 apart (2-bit), 4 elements 7 apart (3-bit). */
#define MAX_DISTANCE 196

static int32_t point_of_iq2xxs[1 << 16], point_of_iq2xs[1 << 16], point_of_iq2s[1 << 16], point_of_iq1s[1 << 16];
static int32_t point_of_iq3xxs[1 << 12], point_of_iq3s[1 << 12];

static sp_iq_lattice lattices[SP_LATTICE_COUNT] = {
    [SP_LATTICE_IQ2XXS] = {sp_iq2xxs_grid, 256, 8, 2, 2, point_of_iq2xxs, NULL, NULL},
    [SP_LATTICE_IQ2XS] = {sp_iq2xs_grid, 512, 8, 2, 2, point_of_iq2xs, NULL, NULL},
    [SP_LATTICE_IQ2S] = {sp_iq2s_grid, 1024, 8, 2, 1, point_of_iq2s, NULL, NULL},
    [SP_LATTICE_IQ1S] = {sp_iq1s_grid, 2048, 8, 2, 3, point_of_iq1s, NULL, NULL},
    [SP_LATTICE_IQ3XXS] = {sp_iq3xxs_grid, 256, 4, 3, 2, point_of_iq3xxs, NULL, NULL},
    [SP_LATTICE_IQ3S] = {sp_iq3s_grid, 512, 4, 3, 3, point_of_iq3s, NULL, NULL},
};
static pthread_once_t built_once[SP_LATTICE_COUNT] = {
    PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT,
};

static unsigned combinations(const sp_iq_lattice *lat) { return 1u << (lat->bits * lat->dims); }

/* Whether every index of `key` is one the grid's levels cover (2-bit grids
 * use indices 0..2 only). */
static bool key_in_range(const sp_iq_lattice *lat, unsigned key) {
    if (lat->bits == 3) return true;
    for (int j = 0; j < lat->dims; j++)
        if ((key >> (2 * j) & 3) == 3) return false;
    return true;
}

static int distance(const sp_iq_lattice *lat, unsigned key, int p) {
    const int mask = (1 << lat->bits) - 1;
    int d2 = 0;
    for (int j = 0; j < lat->dims; j++) {
        const int diff = (int)(key >> (lat->bits * j) & (unsigned)mask) - sp_iq_lattice_level(lat, p, j);
        d2 += diff * diff;
    }
    return d2;
}

/* Writes key's neighbours to out (room for every point), returns how many:
 * a counting sort by distance keeps each ring in point order. */
static int make_list(const sp_iq_lattice *lat, unsigned key, uint16_t *out) {
    uint8_t d2[SP_LATTICE_MAX_POINTS];
    int count[MAX_DISTANCE + 1] = {0};
    for (int p = 0; p < lat->n_points; p++) count[d2[p] = (uint8_t)distance(lat, key, p)]++;
    int cutoff = -1, rings = 0;
    for (int d = 0; d <= MAX_DISTANCE && rings < lat->rings; d++)
        if (count[d]) cutoff = d, rings++;
    int start[MAX_DISTANCE + 1], n = 0;
    for (int d = 0; d <= cutoff; d++) start[d] = n, n += count[d];
    for (int p = 0; p < lat->n_points; p++)
        if (d2[p] <= cutoff) out[start[d2[p]]++] = (uint16_t)p;
    return n;
}

static void build(sp_iq_lattice *lat) {
    const unsigned n_keys = combinations(lat);
    for (unsigned k = 0; k < n_keys; k++) lat->point_of[k] = -1;
    for (int p = 0; p < lat->n_points; p++) lat->point_of[lat->points[p]] = p;
    uint32_t *list_at = malloc(n_keys * sizeof *list_at);
    uint16_t scratch[SP_LATTICE_MAX_POINTS];
    size_t total = 0;
    for (unsigned k = 0; list_at && k < n_keys; k++)
        if (lat->point_of[k] < 0 && key_in_range(lat, k)) {
            list_at[k] = (uint32_t)total;
            total += 1 + (size_t)make_list(lat, k, scratch);
        }
    uint16_t *neighbours = list_at ? malloc(total * sizeof *neighbours) : NULL;
    if (!neighbours) { /* the quantizers then make each list when they need it */
        free(list_at);
        return;
    }
    for (unsigned k = 0; k < n_keys; k++)
        if (lat->point_of[k] < 0 && key_in_range(lat, k))
            neighbours[list_at[k]] = (uint16_t)make_list(lat, k, neighbours + list_at[k] + 1);
    lat->list_at = list_at;
    lat->neighbours = neighbours;
}

#define BUILD_FN(id) \
    static void build_##id(void) { build(&lattices[id]); }
BUILD_FN(SP_LATTICE_IQ2XXS)
BUILD_FN(SP_LATTICE_IQ2XS)
BUILD_FN(SP_LATTICE_IQ2S)
BUILD_FN(SP_LATTICE_IQ1S)
BUILD_FN(SP_LATTICE_IQ3XXS)
BUILD_FN(SP_LATTICE_IQ3S)

const sp_iq_lattice *sp_iq_lattice_of(sp_iq_lattice_id id) {
    static void (*const builders[SP_LATTICE_COUNT])(void) = {
        build_SP_LATTICE_IQ2XXS, build_SP_LATTICE_IQ2XS,  build_SP_LATTICE_IQ2S,
        build_SP_LATTICE_IQ1S,   build_SP_LATTICE_IQ3XXS, build_SP_LATTICE_IQ3S,
    };
    pthread_once(&built_once[id], builders[id]);
    return &lattices[id];
}

int sp_iq_lattice_neighbours(const sp_iq_lattice *lat, unsigned key, uint16_t *scratch, const uint16_t **list) {
    if (lat->neighbours) {
        const uint16_t *at = lat->neighbours + lat->list_at[key];
        *list = at + 1;
        return at[0];
    }
    *list = scratch;
    return make_list(lat, key, scratch);
}

int sp_iq_lattice_nearest(const sp_iq_lattice *lat, unsigned key, const float *x, const float *w, float scale, const float *value) {
    uint16_t scratch[SP_LATTICE_MAX_POINTS];
    const uint16_t *list;
    const int n = sp_iq_lattice_neighbours(lat, key, scratch, &list);
    float best = INFINITY;
    int p = list[0];
    for (int k = 0; k < n; k++) {
        float d2 = 0;
        for (int i = 0; i < lat->dims; i++) {
            const float diff = scale * value[sp_iq_lattice_level(lat, list[k], i)] - x[i];
            d2 += w[i] * diff * diff;
        }
        if (d2 < best) best = d2, p = list[k];
    }
    return p;
}
