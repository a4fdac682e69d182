/* The formats sprout decodes inside the matmul but that ../shared has no
 * files of (MXFP4, the ternary and the grid-based IQ formats): blocks of
 * arbitrary bytes decoded by llama.cpp (tests/data/quant_types/README.md)
 * must decode to the same float bits here, and where llama-quantize needs
 * no importance matrix, sprout's quantizer must write llama.cpp's bytes. */
#include <stdint.h>

#include "quant/blocks.h"
#include "quant/quant.h"
#include "test_util.h"

/* Elements in each reference file: four super-blocks, 32 blocks of 32. */
#define N_REF 1024

typedef struct ref_type {
    const char *name;
    bool quantizer; /* a .quant reference exists */
} ref_type;

static const ref_type ref_types[] = {
    {"MXFP4", true},    {"TQ1_0", true},   {"TQ2_0", true},  {"IQ3_S", false}, {"IQ3_XXS", false},
    {"IQ2_XXS", false}, {"IQ2_XS", false}, {"IQ2_S", false}, {"IQ1_S", false}, {"IQ1_M", false},
};

/* The whole of a reference file into buf (at most cap bytes); its size, or -1. */
static long read_ref(const char *name, const char *ext, void *buf, size_t cap) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.%s", SPROUT_QUANT_TYPES_DATA_DIR, name, ext);
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    const size_t got = fread(buf, 1, cap, f);
    const bool more = fgetc(f) != EOF;
    fclose(f);
    return more ? -1 : (long)got;
}

static size_t ref_bytes(sprout_type type) { return N_REF / (size_t)sprout_type_block_size(type) * sprout_type_block_bytes(type); }

static void test_dequantize(const ref_type *r, sprout_type type) {
    static uint8_t blocks[8192];
    static float want[N_REF], got[N_REF];
    CHECK_MSG(read_ref(r->name, "blocks", blocks, sizeof blocks) == (long)ref_bytes(type), "%s.blocks", r->name);
    CHECK_MSG(read_ref(r->name, "floats", want, sizeof want) == (long)sizeof want, "%s.floats", r->name);
    CHECK(sprout_dequantize(type, blocks, got, N_REF) == SPROUT_OK);
    int differ = 0, first = -1;
    for (int i = 0; i < N_REF; i++)
        if (memcmp(&got[i], &want[i], sizeof got[i])) differ++, first = first < 0 ? i : first;
    CHECK_MSG(differ == 0, "%s: %d of %d floats differ from llama.cpp's (first at %d: %g, not %g)", r->name, differ, N_REF, first,
              first < 0 ? 0. : (double)got[first], first < 0 ? 0. : (double)want[first]);
}

/* The values test_quant's IQ4 references quantize: cubes of uniform
 * values, whose heavy tails reach every level. */
static void cubes(float *x, int n) {
    uint32_t state = 12345;
    for (int i = 0; i < n; i++) {
        state = state * 1664525u + 1013904223u;
        const float v = (float)((int)(state >> 20) - 2048) / 512.f;
        x[i] = v * v * v;
    }
}

static void test_quantize(const ref_type *r, sprout_type type) {
    static uint8_t want[8192], got[8192];
    static float x[N_REF];
    const size_t bytes = ref_bytes(type);
    CHECK_MSG(read_ref(r->name, "quant", want, sizeof want) == (long)bytes, "%s.quant", r->name);
    cubes(x, N_REF);
    CHECK(sprout_quantize(type, x, got, N_REF) == SPROUT_OK);
    int differ = 0;
    for (size_t i = 0; i < bytes; i++) differ += got[i] != want[i];
    CHECK_MSG(differ == 0, "%s: %d of %zu bytes differ from llama.cpp's", r->name, differ, bytes);
    /* zeros stay zeros; inf and nan must not crash or trip the sanitizers */
    static float zeros[256], out[256];
    CHECK(sprout_quantize(type, zeros, got, 256) == SPROUT_OK && sprout_dequantize(type, got, out, 256) == SPROUT_OK);
    int nonzero = 0;
    for (int i = 0; i < 256; i++) nonzero += out[i] != 0.f;
    CHECK_MSG(nonzero == 0, "%s: zeros decode to non-zero", r->name);
    float odd[256];
    for (int i = 0; i < 256; i++) odd[i] = i % 3 == 0 ? INFINITY : (i % 3 == 1 ? NAN : -1e30f);
    sprout_quantize(type, odd, got, 256);
    sprout_dequantize(type, got, out, 256);
}

/* MXFP4's power-of-two scale reaches the subnormal floats and the top of
 * the range: checked by hand beside the references. */
static void test_mxfp4_scales(void) {
    CHECK(sp_e8m0_half(127) == 0.5f && sp_e8m0_half(128) == 1.f && sp_e8m0_half(254) == ldexpf(1.f, 126));
    CHECK(sp_e8m0_half(1) == ldexpf(1.f, -127) && sp_e8m0_half(0) == ldexpf(1.f, -128));
    sp_block_mxfp4 b = {.e = 129}; /* scale 2 */
    for (int j = 0; j < 16; j++) b.qs[j] = (uint8_t)(j | (15 - j) << 4);
    float y[32];
    sp_dequantize_mxfp4(&b, y, 32);
    CHECK(y[0] == 0.f && y[7] == 24.f && y[15] == -24.f && y[16] == -24.f && y[31] == 0.f && y[9] == -2.f);
}

int main(void) {
    for (size_t k = 0; k < sizeof ref_types / sizeof ref_types[0]; k++) {
        const ref_type *r = &ref_types[k];
        sprout_type type;
        CHECK_MSG(sprout_type_from_name(r->name, &type) && sprout_type_can_dequantize(type), "%s decodes", r->name);
        test_dequantize(r, type);
        if (r->quantizer) test_quantize(r, type);
    }
    test_mxfp4_scales();
    TEST_MAIN_END();
}
