#include <ctype.h>

#include "core/checked.h"
#include "core/error.h"
#include "quant/blocks.h"
#include "quant/quant.h"

/* Types sprout can read (their sizes are known, so a file holding them is
 * valid) but not compute with have no converters: the engine rejects them at
 * load, naming the tensor, instead of the reader calling the file broken. */
static const sp_type_traits type_traits[SPROUT_TYPE_COUNT] = {
    [SPROUT_TYPE_F32] = {"F32", 1, 4, false, sp_dequantize_f32, sp_quantize_f32},
    [SPROUT_TYPE_F16] = {"F16", 1, 2, false, sp_dequantize_f16, sp_quantize_f16},
    [SPROUT_TYPE_BF16] = {"BF16", 1, 2, false, sp_dequantize_bf16, sp_quantize_bf16},
    [SPROUT_TYPE_Q4_0] = {"Q4_0", SP_QK32, sizeof(sp_block_q4_0), true, sp_dequantize_q4_0, sp_quantize_q4_0},
    [SPROUT_TYPE_Q4_1] = {"Q4_1", SP_QK32, sizeof(sp_block_q4_1), true, sp_dequantize_q4_1, sp_quantize_q4_1},
    [SPROUT_TYPE_Q5_0] = {"Q5_0", SP_QK32, sizeof(sp_block_q5_0), true, sp_dequantize_q5_0, sp_quantize_q5_0},
    [SPROUT_TYPE_Q5_1] = {"Q5_1", SP_QK32, sizeof(sp_block_q5_1), true, sp_dequantize_q5_1, sp_quantize_q5_1},
    [SPROUT_TYPE_Q8_0] = {"Q8_0", SP_QK32, sizeof(sp_block_q8_0), true, sp_dequantize_q8_0, sp_quantize_q8_0},
    [SPROUT_TYPE_Q8_1] = {"Q8_1", SP_QK32, sizeof(sp_block_q8_1), true, sp_dequantize_q8_1, sp_quantize_q8_1},
    [SPROUT_TYPE_Q2_K] = {"Q2_K", SP_QK_K, sizeof(sp_block_q2_K), true, sp_dequantize_q2_K, sp_quantize_q2_K},
    [SPROUT_TYPE_Q3_K] = {"Q3_K", SP_QK_K, sizeof(sp_block_q3_K), true, sp_dequantize_q3_K, sp_quantize_q3_K},
    [SPROUT_TYPE_Q4_K] = {"Q4_K", SP_QK_K, sizeof(sp_block_q4_K), true, sp_dequantize_q4_K, sp_quantize_q4_K},
    [SPROUT_TYPE_Q5_K] = {"Q5_K", SP_QK_K, sizeof(sp_block_q5_K), true, sp_dequantize_q5_K, sp_quantize_q5_K},
    [SPROUT_TYPE_Q6_K] = {"Q6_K", SP_QK_K, sizeof(sp_block_q6_K), true, sp_dequantize_q6_K, sp_quantize_q6_K},
    [SPROUT_TYPE_Q8_K] = {"Q8_K", SP_QK_K, sizeof(sp_block_q8_K), true, sp_dequantize_q8_K, sp_quantize_q8_K},
    [SPROUT_TYPE_IQ2_XXS] = {"IQ2_XXS", SP_QK_K, sizeof(sp_block_iq2_xxs), true, sp_dequantize_iq2_xxs, NULL, sp_quantize_iq2_xxs_weighted},
    [SPROUT_TYPE_IQ2_XS] = {"IQ2_XS", SP_QK_K, sizeof(sp_block_iq2_xs), true, sp_dequantize_iq2_xs, NULL, sp_quantize_iq2_xs_weighted},
    [SPROUT_TYPE_IQ3_XXS] = {"IQ3_XXS", SP_QK_K, sizeof(sp_block_iq3_xxs), true, sp_dequantize_iq3_xxs, sp_quantize_iq3_xxs, sp_quantize_iq3_xxs_weighted},
    [SPROUT_TYPE_IQ1_S] = {"IQ1_S", SP_QK_K, sizeof(sp_block_iq1_s), true, sp_dequantize_iq1_s, NULL, sp_quantize_iq1_s_weighted},
    [SPROUT_TYPE_IQ4_NL] = {"IQ4_NL", SP_QK32, sizeof(sp_block_iq4_nl), true, sp_dequantize_iq4_nl, sp_quantize_iq4_nl},
    [SPROUT_TYPE_IQ3_S] = {"IQ3_S", SP_QK_K, sizeof(sp_block_iq3_s), true, sp_dequantize_iq3_s, sp_quantize_iq3_s, sp_quantize_iq3_s_weighted},
    [SPROUT_TYPE_IQ2_S] = {"IQ2_S", SP_QK_K, sizeof(sp_block_iq2_s), true, sp_dequantize_iq2_s, sp_quantize_iq2_s, sp_quantize_iq2_s_weighted},
    [SPROUT_TYPE_IQ4_XS] = {"IQ4_XS", SP_QK_K, sizeof(sp_block_iq4_xs), true, sp_dequantize_iq4_xs, sp_quantize_iq4_xs},
    [SPROUT_TYPE_I8] = {"I8", 1, 1, false, NULL, NULL},
    [SPROUT_TYPE_I16] = {"I16", 1, 2, false, NULL, NULL},
    [SPROUT_TYPE_I32] = {"I32", 1, 4, false, NULL, NULL},
    [SPROUT_TYPE_I64] = {"I64", 1, 8, false, NULL, NULL},
    [SPROUT_TYPE_F64] = {"F64", 1, 8, false, NULL, NULL},
    [SPROUT_TYPE_IQ1_M] = {"IQ1_M", SP_QK_K, sizeof(sp_block_iq1_m), true, sp_dequantize_iq1_m, sp_quantize_iq1_m, sp_quantize_iq1_m_weighted},
    [SPROUT_TYPE_TQ1_0] = {"TQ1_0", SP_QK_K, sizeof(sp_block_tq1_0), true, sp_dequantize_tq1_0, sp_quantize_tq1_0},
    [SPROUT_TYPE_TQ2_0] = {"TQ2_0", SP_QK_K, sizeof(sp_block_tq2_0), true, sp_dequantize_tq2_0, sp_quantize_tq2_0},
    [SPROUT_TYPE_MXFP4] = {"MXFP4", SP_QK32, sizeof(sp_block_mxfp4), true, sp_dequantize_mxfp4, sp_quantize_mxfp4},
};

const sp_type_traits *sp_type_traits_of(int type) {
    if (type < 0 || type >= SPROUT_TYPE_COUNT || !type_traits[type].name) return NULL;
    return &type_traits[type];
}

bool sp_type_row_bytes(int type, int64_t n, uint64_t *bytes) {
    const sp_type_traits *t = sp_type_traits_of(type);
    if (!t || n < 0 || n % t->block_size != 0) return false;
    return sp_mul_u64((uint64_t)(n / t->block_size), t->block_bytes, bytes);
}

bool sprout_type_is_known(int type) { return sp_type_traits_of(type) != NULL; }

const char *sprout_type_name(int type) {
    const sp_type_traits *t = sp_type_traits_of(type);
    return t ? t->name : "?";
}

bool sprout_type_from_name(const char *name, sprout_type *out) {
    if (!name) return false;
    for (int i = 0; i < SPROUT_TYPE_COUNT; i++) {
        const char *tn = type_traits[i].name;
        if (!tn) continue;
        size_t k = 0;
        while (tn[k] && name[k] && toupper((unsigned char)name[k]) == tn[k]) k++;
        if (!tn[k] && !name[k]) {
            *out = (sprout_type)i;
            return true;
        }
    }
    return false;
}

int64_t sprout_type_block_size(int type) {
    const sp_type_traits *t = sp_type_traits_of(type);
    return t ? t->block_size : 0;
}

size_t sprout_type_block_bytes(int type) {
    const sp_type_traits *t = sp_type_traits_of(type);
    return t ? t->block_bytes : 0;
}

bool sprout_type_is_quantized(int type) {
    const sp_type_traits *t = sp_type_traits_of(type);
    return t && t->is_quantized;
}

bool sprout_type_can_dequantize(int type) {
    const sp_type_traits *t = sp_type_traits_of(type);
    return t && t->dequantize;
}

static sprout_status check_conversion(int type, const void *a, const void *b, int64_t n, bool quantize,
                                      const sp_type_traits **out) {
    const sp_type_traits *t = sp_type_traits_of(type);
    if (!t) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "unknown tensor type id %d", type);
    if (quantize && !t->quantize_ref && t->quantize_weighted)
        return sp_fail(SPROUT_ERR_UNSUPPORTED, "type %s is quantized only with an importance matrix (--imatrix)", t->name);
    if ((quantize ? (void *)t->quantize_ref : (void *)t->dequantize) == NULL)
        return sp_fail(SPROUT_ERR_UNSUPPORTED, "type %s cannot be %s by sprout", t->name,
                       quantize ? "quantized" : "dequantized");
    if (n < 0 || n % t->block_size != 0)
        return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "%lld elements is not a multiple of the %s block size %lld",
                       (long long)n, t->name, (long long)t->block_size);
    if (n > 0 && (!a || !b)) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "NULL buffer");
    *out = t;
    return SPROUT_OK;
}

sprout_status sprout_dequantize(int type, const void *src, float *dst, int64_t n) {
    const sp_type_traits *t = NULL;
    sprout_status st = check_conversion(type, src, dst, n, false, &t);
    if (st == SPROUT_OK && n > 0) t->dequantize(src, dst, n);
    return st;
}

sprout_status sprout_quantize(int type, const float *src, void *dst, int64_t n) {
    const sp_type_traits *t = NULL;
    sprout_status st = check_conversion(type, src, dst, n, true, &t);
    if (st == SPROUT_OK && n > 0) t->quantize_ref(src, dst, n);
    return st;
}
