/* general.file_type: the label of a whole file's quantization mix. The
 * numbers are llama.cpp's (LLAMA_FTYPE_*), kept stable across versions. */
#include <strings.h>

#include "sprout.h"

const char *sprout_file_type_name(uint32_t file_type) {
    static const char *const names[] = {
        [0] = "F32",      [1] = "F16",     [2] = "Q4_0",    [3] = "Q4_1",     [7] = "Q8_0",    [8] = "Q5_0",
        [9] = "Q5_1",     [10] = "Q2_K",   [11] = "Q3_K_S", [12] = "Q3_K_M",  [13] = "Q3_K_L", [14] = "Q4_K_S",
        [15] = "Q4_K_M",  [16] = "Q5_K_S", [17] = "Q5_K_M", [18] = "Q6_K",    [19] = "IQ2_XXS", [20] = "IQ2_XS",
        [21] = "Q2_K_S",  [22] = "IQ3_XS", [23] = "IQ3_XXS", [24] = "IQ1_S",  [25] = "IQ4_NL", [26] = "IQ3_S",
        [27] = "IQ3_M",   [28] = "IQ2_S",  [29] = "IQ2_M",  [30] = "IQ4_XS",  [31] = "IQ1_M",  [32] = "BF16",
        [36] = "TQ1_0",   [37] = "TQ2_0",  [38] = "MXFP4_MOE",
    };
    /* files converted by llama.cpp itself set the "guessed" bit 1024 when the
     * label was inferred rather than chosen */
    file_type &= ~1024u;
    return file_type < sizeof names / sizeof names[0] ? names[file_type] : NULL;
}

bool sprout_file_type_from_name(const char *name, sprout_file_type *out) {
    static const sprout_file_type producible[] = {
        SPROUT_FTYPE_F32,    SPROUT_FTYPE_F16,    SPROUT_FTYPE_BF16,   SPROUT_FTYPE_Q4_0,   SPROUT_FTYPE_Q4_1,
        SPROUT_FTYPE_Q5_0,   SPROUT_FTYPE_Q5_1,   SPROUT_FTYPE_Q8_0,   SPROUT_FTYPE_Q2_K,   SPROUT_FTYPE_Q3_K_S,
        SPROUT_FTYPE_Q3_K_M, SPROUT_FTYPE_Q3_K_L, SPROUT_FTYPE_Q4_K_S, SPROUT_FTYPE_Q4_K_M, SPROUT_FTYPE_Q5_K_S,
        SPROUT_FTYPE_Q5_K_M, SPROUT_FTYPE_Q6_K,   SPROUT_FTYPE_IQ4_NL, SPROUT_FTYPE_IQ4_XS, SPROUT_FTYPE_TQ1_0,
        SPROUT_FTYPE_TQ2_0,  SPROUT_FTYPE_MXFP4_MOE, SPROUT_FTYPE_IQ2_XXS, SPROUT_FTYPE_IQ2_XS, SPROUT_FTYPE_IQ2_S,
        SPROUT_FTYPE_IQ2_M,  SPROUT_FTYPE_IQ3_XXS, SPROUT_FTYPE_IQ3_XS, SPROUT_FTYPE_IQ3_S, SPROUT_FTYPE_IQ3_M,
        SPROUT_FTYPE_IQ1_S,  SPROUT_FTYPE_IQ1_M,
    };
    if (!name) return false;
    for (size_t i = 0; i < sizeof producible / sizeof producible[0]; i++) {
        if (!strcasecmp(name, sprout_file_type_name(producible[i]))) {
            if (out) *out = producible[i];
            return true;
        }
    }
    return false;
}
