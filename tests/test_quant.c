/* The tensor formats: half/bfloat conversions, hand-built blocks decoded to
 * hand-computed values, quantize/dequantize round trips within per-type error
 * bounds, and llama.cpp's own quantized files (../shared/arch) decoded and
 * re-encoded. */
#include <stdint.h>

#include "quant/blocks.h"
#include "quant/fp16.h"
#include "quant/quant.h"
#include "test_util.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
__attribute__((target("f16c"))) static uint16_t hw_fp32_to_fp16(float f) { return (uint16_t)_cvtss_sh(f, 0); }
#define HAVE_HW_F16C 1
#endif

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint32_t rng_u32(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 32);
}
static float rng_uniform(void) { return ((float)rng_u32() + 0.5f) / 4294967296.0f; }
static float rng_normal(void) {
    float u = rng_uniform(), v = rng_uniform();
    return sqrtf(-2.f * logf(u)) * cosf(6.2831853f * v);
}

static void test_fp16(void) {
    int mismatches = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = sp_fp16_to_fp32((uint16_t)h);
        if (isnan(f)) continue;
        if (sp_fp32_to_fp16(f) != h) mismatches++;
    }
    CHECK_MSG(mismatches == 0, "%d halves do not round-trip", mismatches);
    CHECK(sp_fp16_to_fp32(0x3C00) == 1.f);
    CHECK(sp_fp16_to_fp32(0xC000) == -2.f);
    CHECK(sp_fp16_to_fp32(0x7BFF) == 65504.f);
    CHECK(sp_fp16_to_fp32(0x0001) == ldexpf(1.f, -24));
    CHECK(sp_fp16_to_fp32(0x03FF) == ldexpf(1023.f, -24));
    CHECK(isinf(sp_fp16_to_fp32(0xFC00)) && sp_fp16_to_fp32(0xFC00) < 0);
    CHECK(sp_fp32_to_fp16(65520.f) == 0x7C00);                /* rounds up to inf */
    CHECK(sp_fp32_to_fp16(65519.f) == 0x7BFF);
    CHECK(sp_fp32_to_fp16(1.f + ldexpf(1.f, -11)) == 0x3C00); /* tie: to even */
    CHECK(sp_fp32_to_fp16(1.f + 3 * ldexpf(1.f, -11)) == 0x3C02);
    CHECK(sp_fp32_to_fp16(ldexpf(1.f, -25)) == 0x0000);       /* tie between 0 and the smallest subnormal */
    CHECK(sp_fp32_to_fp16(ldexpf(3.f, -26)) == 0x0001);
    CHECK(sp_fp32_to_fp16(-0.f) == 0x8000);
    CHECK((sp_fp32_to_fp16(NAN) & 0x7C00) == 0x7C00 && (sp_fp32_to_fp16(NAN) & 0x3FF));
    CHECK(sp_bf16_to_fp32(0x3F80) == 1.f);
    CHECK(sp_fp32_to_bf16(1.f + ldexpf(1.f, -8)) == 0x3F80); /* tie: to even */
    CHECK(sp_fp32_to_bf16(1.f + 3 * ldexpf(1.f, -8)) == 0x3F82);
#ifdef HAVE_HW_F16C
    if (__builtin_cpu_supports("f16c")) {
        int diff = 0;
        for (int i = 0; i < 1000000; i++) {
            uint32_t bits = rng_u32();
            float f;
            memcpy(&f, &bits, 4);
            if (isnan(f)) continue;
            if (sp_fp32_to_fp16(f) != hw_fp32_to_fp16(f)) diff++;
        }
        CHECK_MSG(diff == 0, "%d of 1e6 random floats convert differently from F16C", diff);
    }
#endif
}

static void put_half(uint16_t *dst, float v) { *dst = sp_fp32_to_fp16(v); }

/* Blocks built by hand from the documented layouts, decoded and compared
 * with values computed by hand (exact: every value is a small dyadic). */
static void test_hand_blocks(void) {
    float y[256];
    { /* Q4_0: x = d (q - 8), element j low nibble of qs[j], j+16 high */
        sp_block_q4_0 b;
        put_half(&b.d, 0.5f);
        for (int j = 0; j < 16; j++) b.qs[j] = (uint8_t)(j | ((15 - j) << 4));
        sp_dequantize_q4_0(&b, y, 32);
        int bad = 0;
        for (int j = 0; j < 16; j++) bad += y[j] != (j - 8) * 0.5f || y[j + 16] != (7 - j) * 0.5f;
        CHECK(bad == 0);
    }
    { /* Q4_1: x = d q + m */
        sp_block_q4_1 b;
        put_half(&b.d, 0.25f);
        put_half(&b.m, -1.f);
        for (int j = 0; j < 16; j++) b.qs[j] = (uint8_t)(j | (3 << 4));
        sp_dequantize_q4_1(&b, y, 32);
        int bad = 0;
        for (int j = 0; j < 16; j++) bad += y[j] != j * 0.25f - 1.f || y[j + 16] != 3 * 0.25f - 1.f;
        CHECK(bad == 0);
    }
    { /* Q5_0: bit 4 of element j is bit j of qh (little-endian u32) */
        sp_block_q5_0 b;
        put_half(&b.d, 1.f);
        uint32_t qh = 0xA5A5F00Fu;
        memcpy(b.qh, &qh, 4);
        for (int j = 0; j < 16; j++) b.qs[j] = (uint8_t)(j | ((15 - j) << 4));
        sp_dequantize_q5_0(&b, y, 32);
        int bad = 0;
        for (int j = 0; j < 16; j++) {
            bad += y[j] != (float)((j | (int)((qh >> j) & 1) << 4) - 16);
            bad += y[j + 16] != (float)(((15 - j) | (int)((qh >> (j + 16)) & 1) << 4) - 16);
        }
        CHECK(bad == 0);
    }
    { /* Q5_1 */
        sp_block_q5_1 b;
        put_half(&b.d, 0.5f);
        put_half(&b.m, 2.f);
        uint32_t qh = 0x0000FFFFu;
        memcpy(b.qh, &qh, 4);
        memset(b.qs, 0x21, 16);
        sp_dequantize_q5_1(&b, y, 32);
        CHECK(y[0] == (1 + 16) * 0.5f + 2.f && y[16] == 2 * 0.5f + 2.f);
    }
    { /* Q8_0 */
        sp_block_q8_0 b;
        put_half(&b.d, 2.f);
        for (int j = 0; j < 32; j++) b.qs[j] = (int8_t)(j - 16);
        sp_dequantize_q8_0(&b, y, 32);
        int bad = 0;
        for (int j = 0; j < 32; j++) bad += y[j] != 2.f * (j - 16);
        CHECK(bad == 0);
    }
    { /* Q2_K: every byte 0b11100100 puts level g in the g-th 2-bit field,
       * so the element i has level (i % 128) / 32 */
        sp_block_q2_K b;
        put_half(&b.d, 0.5f);
        put_half(&b.dmin, 0.25f);
        for (int s = 0; s < 16; s++) b.scales[s] = (uint8_t)((s % 16) | ((15 - s) << 4));
        memset(b.qs, 0xE4, sizeof b.qs);
        sp_dequantize_q2_K(&b, y, 256);
        int bad = 0;
        for (int i = 0; i < 256; i++) {
            int s = i / 16, level = (i % 128) / 32;
            bad += y[i] != 0.5f * (float)(s % 16) * (float)level - 0.25f * (float)(15 - s);
        }
        CHECK(bad == 0);
    }
    { /* Q3_K: every 6-bit scale 33 (i.e. +1); hmask bit (i / 32) of byte
       * i % 32 set for even i / 32 (0x55) */
        sp_block_q3_K b;
        put_half(&b.d, 1.f);
        memset(b.scales, 0x11, 8);
        memset(b.scales + 8, 0xAA, 4);
        memset(b.qs, 0xE4, sizeof b.qs);
        memset(b.hmask, 0x55, sizeof b.hmask);
        sp_dequantize_q3_K(&b, y, 256);
        int bad = 0;
        for (int i = 0; i < 256; i++) {
            int level = (i % 128) / 32, high = (i / 32) % 2 == 0;
            bad += y[i] != (float)(level - (high ? 0 : 4));
        }
        CHECK(bad == 0);
    }
    { /* IQ4_NL: element j takes level j, element j + 16 level 15 - j */
        sp_block_iq4_nl b;
        put_half(&b.d, 0.5f);
        for (int j = 0; j < 16; j++) b.qs[j] = (uint8_t)(j | ((15 - j) << 4));
        sp_dequantize_iq4_nl(&b, y, 32);
        static const float levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
        int bad = 0;
        for (int j = 0; j < 16; j++) bad += y[j] != 0.5f * levels[j], bad += y[j + 16] != 0.5f * levels[15 - j];
        CHECK(bad == 0);
    }
    { /* IQ4_XS: sub-block scales (6 bits, less 32) that use both the low
       * nibbles and the top two bits; qs bytes 0x3C: level 12 for the
       * first 16 elements of each sub-block, level 3 for the last 16 */
        sp_block_iq4_xs b;
        put_half(&b.d, 0.25f);
        static const int ls[8] = {0, 63, 32, 33, 16, 48, 31, 47};
        b.scales_h = 0;
        memset(b.scales_l, 0, sizeof b.scales_l);
        for (int j = 0; j < 8; j++) {
            b.scales_l[j / 2] |= (uint8_t)((ls[j] & 15) << (4 * (j % 2)));
            b.scales_h |= (uint16_t)((ls[j] >> 4) << (2 * j));
        }
        memset(b.qs, 0x3C, sizeof b.qs);
        sp_dequantize_iq4_xs(&b, y, 256);
        int bad = 0;
        for (int i = 0; i < 256; i++) bad += y[i] != 0.25f * (float)(ls[i / 32] - 32) * (i % 32 < 16 ? 53.f : -65.f);
        CHECK(bad == 0);
    }
    { /* Q4_K: scale j = j + 1, min j = 2 j; qs bytes 0x5A: low nibble 10
       * (first 32 of each 64), high nibble 5 (second 32) */
        sp_block_q4_K b;
        put_half(&b.d, 1.f);
        put_half(&b.dmin, 0.5f);
        uint8_t sc[8], mn[8];
        for (int j = 0; j < 8; j++) sc[j] = (uint8_t)(j + 1), mn[j] = (uint8_t)(2 * j + 40);
        memset(b.scales, 0, 12);
        for (int j = 0; j < 4; j++) {
            b.scales[j] = (uint8_t)(sc[j] | ((sc[j + 4] >> 4) << 6));
            b.scales[j + 4] = (uint8_t)(mn[j] | ((mn[j + 4] >> 4) << 6));
            b.scales[j + 8] = (uint8_t)((sc[j + 4] & 15) | ((mn[j + 4] & 15) << 4));
        }
        memset(b.qs, 0x5A, sizeof b.qs);
        sp_dequantize_q4_K(&b, y, 256);
        int bad = 0;
        for (int i = 0; i < 256; i++) {
            int sb = i / 32, q = (sb % 2) ? 5 : 10;
            bad += y[i] != (float)(sc[sb] * q) - 0.5f * (float)mn[sb];
        }
        CHECK(bad == 0);

        /* Q5_K shares the scale layout; qh bit 2j of byte l adds 16 to the
         * first 32 of group j, bit 2j+1 to the second */
        sp_block_q5_K c;
        c.d = b.d;
        c.dmin = b.dmin;
        memcpy(c.scales, b.scales, 12);
        memcpy(c.qs, b.qs, sizeof c.qs);
        memset(c.qh, 0x99, sizeof c.qh); /* bits 0, 3, 4, 7 */
        sp_dequantize_q5_K(&c, y, 256);
        bad = 0;
        for (int i = 0; i < 256; i++) {
            int sb = i / 32, q = ((sb % 2) ? 5 : 10) + ((0x99 >> sb) & 1) * 16;
            bad += y[i] != (float)(sc[sb] * q) - 0.5f * (float)mn[sb];
        }
        CHECK(bad == 0);
    }
    { /* Q6_K: ql bytes 0x21 (low nibble 1 for quarters 0-1, high nibble 2
       * for quarters 2-3); qh 0xE4 puts g in the 2-bit field of quarter g;
       * scale index 8 h + (l / 16) + 2 g */
        sp_block_q6_K b;
        put_half(&b.d, 0.5f);
        for (int j = 0; j < 16; j++) b.scales[j] = (int8_t)(j - 8);
        memset(b.ql, 0x21, sizeof b.ql);
        memset(b.qh, 0xE4, sizeof b.qh);
        sp_dequantize_q6_K(&b, y, 256);
        int bad = 0;
        for (int i = 0; i < 256; i++) {
            int h = i / 128, g = (i % 128) / 32, l = i % 32;
            int q = ((g < 2 ? 1 : 2) | (g << 4)) - 32;
            bad += y[i] != 0.5f * (float)(b.scales[8 * h + l / 16 + 2 * g] * q);
        }
        CHECK(bad == 0);
    }
    { /* Q8_K */
        sp_block_q8_K b;
        b.d = 0.25f;
        for (int i = 0; i < 256; i++) b.qs[i] = (int8_t)(i - 128);
        sp_dequantize_q8_K(&b, y, 256);
        int bad = 0;
        for (int i = 0; i < 256; i++) bad += y[i] != 0.25f * (float)(i - 128);
        CHECK(bad == 0);
    }
}

/* Relative RMS error bounds for Gaussian data, as a fraction of the data's
 * RMS. Each is about 1.3x the error measured here, and consistent with the
 * format's step: a uniform rounding error of step s has RMS s / sqrt(12), and
 * for 32 normal values the absmax is about 2.1 sigma, so e.g. Q8_0's step is
 * 2.1 / 127 and its error about 0.0048; Q4_0's step 2.1 / 8 gives 0.076; Q8_K
 * scales 256 values (absmax about 3.8 sigma), so 0.0087. The K-quants'
 * searched scales do better than the plain step. */
typedef struct bound {
    sprout_type type;
    double rel_rmse;
} bound;

static const bound bounds[] = {
    {SPROUT_TYPE_F32, 0.0},       {SPROUT_TYPE_F16, 0.0004},   {SPROUT_TYPE_BF16, 0.003},
    {SPROUT_TYPE_Q8_0, 0.0065},   {SPROUT_TYPE_Q8_1, 0.0065},  {SPROUT_TYPE_Q5_0, 0.05},
    {SPROUT_TYPE_Q5_1, 0.05},     {SPROUT_TYPE_Q4_0, 0.10},    {SPROUT_TYPE_Q4_1, 0.10},
    {SPROUT_TYPE_Q8_K, 0.009},   {SPROUT_TYPE_Q6_K, 0.025},   {SPROUT_TYPE_Q5_K, 0.045},
    {SPROUT_TYPE_Q4_K, 0.09},     {SPROUT_TYPE_Q3_K, 0.20},    {SPROUT_TYPE_Q2_K, 0.40},
    {SPROUT_TYPE_IQ4_NL, 0.09},   {SPROUT_TYPE_IQ4_XS, 0.09},
};

static double rel_rmse(const float *a, const float *b, int64_t n) {
    double err = 0, ref = 0;
    for (int64_t i = 0; i < n; i++) {
        err += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
        ref += (double)a[i] * a[i];
    }
    return ref > 0 ? sqrt(err / ref) : sqrt(err);
}

static void test_round_trips(void) {
    const int64_t n = 256 * 256;
    float *x = malloc((size_t)n * sizeof *x), *y = malloc((size_t)n * sizeof *y);
    void *q = malloc((size_t)n * 8);
    for (int64_t i = 0; i < n; i++) x[i] = rng_normal();
    for (size_t k = 0; k < sizeof bounds / sizeof bounds[0]; k++) {
        const bound *b = &bounds[k];
        CHECK(sprout_quantize(b->type, x, q, n) == SPROUT_OK);
        CHECK(sprout_dequantize(b->type, q, y, n) == SPROUT_OK);
        double e = rel_rmse(x, y, n);
        printf("round trip %-5s rel. RMSE %.5f (bound %.4f)\n", sprout_type_name(b->type), e, b->rel_rmse);
        CHECK_MSG(e <= b->rel_rmse, "%s: %.5f > %.5f", sprout_type_name(b->type), e, b->rel_rmse);
        /* zeros stay zeros, and a constant row decodes near itself */
        float zeros[256] = {0}, out[256];
        sprout_quantize(b->type, zeros, q, 256);
        sprout_dequantize(b->type, q, out, 256);
        int nonzero = 0;
        for (int i = 0; i < 256; i++) nonzero += out[i] != 0.f;
        CHECK_MSG(nonzero == 0, "%s: zeros decode to non-zero", sprout_type_name(b->type));
        /* inf and nan inputs must not crash or trip the sanitizers */
        float odd[256];
        for (int i = 0; i < 256; i++) odd[i] = i % 3 == 0 ? INFINITY : (i % 3 == 1 ? NAN : -1e30f);
        sprout_quantize(b->type, odd, q, 256);
        sprout_dequantize(b->type, q, out, 256);
    }
    /* the public entry points check their arguments */
    CHECK(sprout_quantize(SPROUT_TYPE_Q4_0, x, q, 31) == SPROUT_ERR_INVALID_ARGUMENT);
    CHECK(sprout_quantize(SPROUT_TYPE_IQ2_XXS, x, q, 256) == SPROUT_ERR_UNSUPPORTED);
    CHECK(sprout_dequantize(77, q, y, 32) == SPROUT_ERR_INVALID_ARGUMENT);
    CHECK(sprout_dequantize(SPROUT_TYPE_Q4_K, NULL, y, 256) == SPROUT_ERR_INVALID_ARGUMENT);
    free(x);
    free(y);
    free(q);
}

static void test_traits(void) {
    sprout_type t;
    CHECK(sprout_type_from_name("q4_k", &t) && t == SPROUT_TYPE_Q4_K);
    CHECK(sprout_type_from_name("BF16", &t) && t == SPROUT_TYPE_BF16);
    CHECK(!sprout_type_from_name("Q4_K_M", &t));
    CHECK(!sprout_type_is_known(4) && !sprout_type_is_known(-1) && !sprout_type_is_known(SPROUT_TYPE_COUNT));
    CHECK(!strcmp(sprout_type_name(SPROUT_TYPE_Q6_K), "Q6_K") && !strcmp(sprout_type_name(1000), "?"));
    CHECK(sprout_type_block_size(SPROUT_TYPE_Q4_K) == 256 && sprout_type_block_bytes(SPROUT_TYPE_Q4_K) == 144);
    CHECK(sprout_type_block_bytes(SPROUT_TYPE_Q8_K) == 292 && sprout_type_block_bytes(SPROUT_TYPE_IQ4_XS) == 136);
    CHECK(sprout_type_is_quantized(SPROUT_TYPE_Q2_K) && !sprout_type_is_quantized(SPROUT_TYPE_BF16));
    CHECK(sprout_type_can_dequantize(SPROUT_TYPE_Q3_K) && !sprout_type_can_dequantize(SPROUT_TYPE_I8));
    uint64_t bytes;
    CHECK(sp_type_row_bytes(SPROUT_TYPE_Q5_K, 512, &bytes) && bytes == 352);
    CHECK(!sp_type_row_bytes(SPROUT_TYPE_Q5_K, 500, &bytes));
    CHECK(!strcmp(sprout_file_type_name(15), "Q4_K_M") && sprout_file_type_name(4) == NULL);
}

/* ../shared has no IQ4 files: these are the blocks llama.cpp's quantizer
 * (ggml_quantize_chunk, ngxson/llama.cpp 3f545be, no importance matrix)
 * wrote for 1024 fixed values. Its search tries 15
 * starting scales and keeps the best weighted fit; a different search, a
 * different weighting or other rounding of the IQ4_XS sub-block scales
 * lands on other blocks. (Its files of arch/llama-F32.gguf's tensors,
 * made with llama-quantize --pure, matched sprout's blocks 57344 of 57344
 * for IQ4_NL and 7168 of 7168 for IQ4_XS.) */
static void test_iq4_against_llama_cpp(void) {
    static const char *const expected[] = {
        "1db88f1f8828038c888898867eb7d14d87f82c378897789f80aa87578f8888c888e49e4ae1b437788814840c8e5832f6888ae88214f835b8"
        "89a677580bf984f886c78d3715988a23eab6d28b778848c8c08688888888888881d8cb3707758880839c363d8348882076a47a86acb7a878"
        "77479c88801dc98804729888788ab337cb588b98d9495e888b7088819c837888e0b594cc378d18e8c9df8b8b907989328583a635c8108887"
        "57a58abd8488b789f45e8a0078b738848980486f888889858a48f18582f8cb37e88768988860aa85580af812ea85db814a388e6477898078"
        "8c5198e8881bd976ac79c8b7868fa2a8888f9a8768199078289398ec93b78885f6808868075878d8d8a74f9e818c5eb790b9408a7408875e"
        "88f8d0788819982cfe36a8840299d88c80a587b80d8bc9aacadacb37da87097a88e88ff18b34688ea8f8f8b5db36a8888c7595387788b108"
        "acf4798c838cd6b581887888d0cb8e86d8a8876098f38877cbb78898838789858dfc87053952799c7d74fdb58883d866c08c28881928c493"
        "f796886d35b8861488808a8888ea78a8ac983fa8cf98beb788d93328f88889f6a680889a895858981e38278f88a068e888f88789988ce89a"
        "88fa11380f7f978a6981897887688f4d78687429a437d5958c3d8801387d5881a7895f80158dc5b6896860928a10f7f78a2821808bb7c819"
        "c7378c02e8839898b899c8b8fd8858561828353838795888682898587702cd7ae1aa2b4af43610888627981e8e7773b22886984887ac4137"
        "810888826f08b8b20838c89d856f8802",
        "35240cccb10de6d38f1f8828038c888898867eb7d14d87f88897789f80aa87578f8888c888e49e4a37788815840c8e5842f6888ae88214f8"
        "89a677580bf984f886c78d3715988a23d28b778848c8c08687888888888881d807758880839c363d8348882076a47a86a87877479c88801d"
        "c98804729888788acb588b98d9495e888b7088819c8378884aa433fcb63cd0bc94cc378c18e8c9df8b8b907989328583c810888757a58abd"
        "8488b789f45e8a0038848980486f888889858a48f18582f8e88768988860aa85580af812ea85db818e64778980788c5198e8881bd976ac79"
        "868fa2a8888f9a8768199078289398ec8885f6808868075878d8d8a74f9e818c90b9408a7408875e88f8d0789819982c35243f00ebaa9230"
        "a8840299d88c80a587b80c8bc9aacadada87097a88e88ff18b35688ea8f8f8b5a8888c7595387788b108acf4798c838c81887888d0cb8e86"
        "d8a8876098f388678898838789858dfc87053952799c8d748883d866c08b28881928c493f796886d861488808a8888ea78a8ac983fa8cf98"
        "88d93328f88889f6a680889a8958589835a4c00011a30246278f88a068e888f88789988ce89a88fa0f7f978a6981897887688f4d78687429"
        "d5958c3d8801387d5881a7895f80158d896860928a10f7f78a2821808bb7c8198c02e8839898b899c8b8fd88585618283879588868289858"
        "7702cd7ae1aa2b4a10888627981e8e7773b22886a84887ac810888826f08b8a20838c89d856f8802",
    };
    static const sprout_type types[] = {SPROUT_TYPE_IQ4_NL, SPROUT_TYPE_IQ4_XS};
    /* cubes of uniform values: heavy tails, so that the search's outer starting scales win somewhere */
    static float x[1024];
    uint32_t state = 12345;
    for (int i = 0; i < 1024; i++) {
        state = state * 1664525u + 1013904223u;
        const float v = (float)((int)(state >> 20) - 2048) / 512.f;
        x[i] = v * v * v;
    }
    for (int k = 0; k < 2; k++) {
        static uint8_t mine[1024];
        CHECK(sprout_quantize(types[k], x, mine, 1024) == SPROUT_OK);
        const size_t bytes = 1024 / (size_t)sprout_type_block_size(types[k]) * sprout_type_block_bytes(types[k]);
        CHECK(strlen(expected[k]) == 2 * bytes);
        int differ = 0;
        for (size_t i = 0; i < bytes; i++) {
            unsigned theirs = 0;
            sscanf(expected[k] + 2 * i, "%2x", &theirs);
            differ += mine[i] != theirs;
        }
        CHECK_MSG(differ == 0, "%s: %d of %zu bytes differ from llama.cpp's", sprout_type_name(types[k]), differ, bytes);
    }
}

/* llama.cpp quantized each arch/llama-TYPE.gguf from arch/llama-F32.gguf
 * (--pure). Decoding its blocks must land within the type's bound of the
 * F32 weights (this checks the layouts against real files), and quantizing
 * the F32 weights with sprout's reference quantizer must give the same
 * blocks (bit for bit where both computed the same floats). */
static void test_llama_cpp_files(void) {
    char path[1024];
    snprintf(path, sizeof path, "%s/arch/llama-F32.gguf", test_shared_dir());
    sprout_gguf *ref = NULL;
    if (sprout_gguf_open(path, &ref) != SPROUT_OK) {
        fprintf(stderr, "%s\n", sprout_last_error());
        CHECK(!"arch/llama-F32.gguf opens");
        return;
    }
    static const char *const types[] = {"F16", "BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0",
                                        "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K"};
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
        snprintf(path, sizeof path, "%s/arch/llama-%s.gguf", test_shared_dir(), types[k]);
        sprout_gguf *g = NULL;
        if (sprout_gguf_open(path, &g) != SPROUT_OK) {
            CHECK_MSG(0, "%s", sprout_last_error());
            continue;
        }
        sprout_type type;
        sprout_type_from_name(types[k], &type);
        double bound_rmse = 0;
        for (size_t b = 0; b < sizeof bounds / sizeof bounds[0]; b++)
            if (bounds[b].type == type) bound_rmse = bounds[b].rel_rmse;
        int64_t blocks = 0, same_blocks = 0, tensors = 0;
        double worst = 0;
        for (int64_t i = 0; i < sprout_gguf_tensor_count(g); i++) {
            if (sprout_gguf_tensor_type(g, i) != type) continue;
            int64_t r = sprout_gguf_find_tensor(ref, sprout_gguf_tensor_name(g, i));
            CHECK(r >= 0 && sprout_gguf_tensor_type(ref, r) == SPROUT_TYPE_F32);
            if (r < 0) continue;
            int64_t n = sprout_gguf_tensor_elements(g, i);
            CHECK(n == sprout_gguf_tensor_elements(ref, r));
            const float *x = sprout_gguf_tensor_data(ref, r);
            float *y = malloc((size_t)n * sizeof *y);
            uint8_t *mine = malloc((size_t)sprout_gguf_tensor_bytes(g, i));
            CHECK(sprout_dequantize(type, sprout_gguf_tensor_data(g, i), y, n) == SPROUT_OK);
            double e = rel_rmse(x, y, n);
            if (e > worst) worst = e;
            /* quick (under the sanitizers): each tensor's first 8192 weights,
             * whole blocks of every type; the K-quants' searches are most of
             * the run there */
            const int64_t n_quantized = test_quick_run() && n > 8192 ? 8192 : n;
            CHECK(sprout_quantize(type, x, mine, n_quantized) == SPROUT_OK);
            const uint8_t *theirs = sprout_gguf_tensor_data(g, i);
            size_t bb = sprout_type_block_bytes(type);
            int64_t nb = n_quantized / sprout_type_block_size(type);
            for (int64_t j = 0; j < nb; j++) same_blocks += memcmp(mine + j * bb, theirs + j * bb, bb) == 0;
            blocks += nb;
            tensors++;
            free(y);
            free(mine);
        }
        printf("llama.cpp %-5s: %lld tensors, worst rel. RMSE %.5f, %lld of %lld blocks identical to sprout's\n", types[k],
               (long long)tensors, worst, (long long)same_blocks, (long long)blocks);
        CHECK_MSG(tensors >= 14, "%s: only %lld tensors of that type", types[k], (long long)tensors);
        /* random weights are Gaussian, so the Gaussian bounds hold */
        CHECK_MSG(worst <= bound_rmse, "%s: rel. RMSE %.5f > %.5f", types[k], worst, bound_rmse);
        /* llama.cpp's build fuses multiply-adds (FMA) where sprout's portable
         * build rounds twice, so a rare search lands on another candidate */
        CHECK_MSG(same_blocks >= blocks * 99 / 100, "%s: %lld of %lld blocks identical", types[k], (long long)same_blocks,
                  (long long)blocks);
        sprout_gguf_close(g);
    }
    sprout_gguf_close(ref);
}

int main(void) {
    test_fp16();
    test_hand_blocks();
    test_traits();
    test_round_trips();
    test_llama_cpp_files();
    test_iq4_against_llama_cpp();
    TEST_MAIN_END();
}
