#include "quantize/recipe.h"

#include <string.h>
#include <strings.h>

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !memcmp(s + n - m, suffix, m);
}

sp_tensor_role sp_tensor_role_of(const char *name) {
    static const struct {
        const char *part;
        sp_tensor_role role;
    } parts[] = {
        {"attn_qkv.weight", SP_ROLE_ATTN_QKV},     {"attn_v.weight", SP_ROLE_ATTN_V},
        {"attn_kv_b.weight", SP_ROLE_ATTN_V}, /* llama-quantize: deepseek2's fused k_b/v_b count as attn_v */
        {"attn_k.weight", SP_ROLE_ATTN_K},       {"attn_q.weight", SP_ROLE_ATTN_Q},
        {"attn_output.weight", SP_ROLE_ATTN_OUTPUT}, {"ffn_up", SP_ROLE_FFN_UP},
        {"ffn_gate", SP_ROLE_FFN_GATE},          {"ffn_down", SP_ROLE_FFN_DOWN},
    };
    if (!strcmp(name, "output.weight")) return SP_ROLE_OUTPUT;
    if (!strcmp(name, "token_embd.weight")) return SP_ROLE_TOKEN_EMBD;
    const sp_tensor_role experts = strstr(name, "_exps.") ? SP_ROLE_EXPERTS : SP_ROLE_OTHER;
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        if (strstr(name, parts[i].part)) return (sp_tensor_role)(parts[i].role | experts);
    return experts;
}

sprout_type sp_file_type_base(sprout_file_type file_type) {
    switch (file_type) {
    case SPROUT_FTYPE_F32: return SPROUT_TYPE_F32;
    case SPROUT_FTYPE_F16: return SPROUT_TYPE_F16;
    case SPROUT_FTYPE_BF16: return SPROUT_TYPE_BF16;
    case SPROUT_FTYPE_Q4_0: return SPROUT_TYPE_Q4_0;
    case SPROUT_FTYPE_Q4_1: return SPROUT_TYPE_Q4_1;
    case SPROUT_FTYPE_Q5_0: return SPROUT_TYPE_Q5_0;
    case SPROUT_FTYPE_Q5_1: return SPROUT_TYPE_Q5_1;
    case SPROUT_FTYPE_Q8_0: return SPROUT_TYPE_Q8_0;
    case SPROUT_FTYPE_Q2_K: return SPROUT_TYPE_Q2_K;
    case SPROUT_FTYPE_Q3_K_S:
    case SPROUT_FTYPE_Q3_K_M:
    case SPROUT_FTYPE_Q3_K_L: return SPROUT_TYPE_Q3_K;
    case SPROUT_FTYPE_Q4_K_S:
    case SPROUT_FTYPE_Q4_K_M: return SPROUT_TYPE_Q4_K;
    case SPROUT_FTYPE_Q5_K_S:
    case SPROUT_FTYPE_Q5_K_M: return SPROUT_TYPE_Q5_K;
    case SPROUT_FTYPE_Q6_K: return SPROUT_TYPE_Q6_K;
    case SPROUT_FTYPE_IQ4_NL: return SPROUT_TYPE_IQ4_NL;
    case SPROUT_FTYPE_IQ4_XS: return SPROUT_TYPE_IQ4_XS;
    case SPROUT_FTYPE_TQ1_0: return SPROUT_TYPE_TQ1_0;
    case SPROUT_FTYPE_TQ2_0: return SPROUT_TYPE_TQ2_0;
    case SPROUT_FTYPE_MXFP4_MOE: return SPROUT_TYPE_MXFP4;
    case SPROUT_FTYPE_IQ2_XXS: return SPROUT_TYPE_IQ2_XXS;
    case SPROUT_FTYPE_IQ2_XS:
    case SPROUT_FTYPE_IQ2_S: return SPROUT_TYPE_IQ2_XS; /* as llama.cpp: IQ2_S the file type is mostly IQ2_XS */
    case SPROUT_FTYPE_IQ2_M: return SPROUT_TYPE_IQ2_S;
    case SPROUT_FTYPE_IQ3_XXS: return SPROUT_TYPE_IQ3_XXS;
    case SPROUT_FTYPE_IQ3_XS:
    case SPROUT_FTYPE_IQ3_S:
    case SPROUT_FTYPE_IQ3_M: return SPROUT_TYPE_IQ3_S;
    case SPROUT_FTYPE_IQ1_S: return SPROUT_TYPE_IQ1_S;
    case SPROUT_FTYPE_IQ1_M: return SPROUT_TYPE_IQ1_M;
    }
    return SPROUT_TYPE_COUNT;
}

bool sp_tensor_is_quantizable(const char *name, int n_dims) {
    return n_dims >= 2 && ends_with(name, "weight") && !strstr(name, "_norm.weight") &&
           !strstr(name, "ffn_gate_inp.weight") && strcmp(name, "position_embd.weight") &&
           strcmp(name, "token_types.weight") && !strstr(name, "ssm_conv1d") && !strstr(name, "attn_rel_b.weight");
}

/* The first and last eighth of the layers, and every third one between,
 * are the ones whose errors hurt most. */
static bool use_more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

/* The 1- and 2-bit mixes share one set of rules. */
static bool is_low_bit_iq(sprout_file_type ft) {
    return ft == SPROUT_FTYPE_IQ2_XXS || ft == SPROUT_FTYPE_IQ2_XS || ft == SPROUT_FTYPE_IQ2_S || ft == SPROUT_FTYPE_IQ2_M ||
           ft == SPROUT_FTYPE_IQ1_S || ft == SPROUT_FTYPE_IQ1_M;
}

static bool is_iq3(sprout_file_type ft) {
    return ft == SPROUT_FTYPE_IQ3_XXS || ft == SPROUT_FTYPE_IQ3_XS || ft == SPROUT_FTYPE_IQ3_S || ft == SPROUT_FTYPE_IQ3_M;
}

/* llama_tensor_get_type's branch for the 1- and 2-bit mixes: the token
 * embedding, attention V, the first eighth of FFN down and attention
 * output get more bits; IQ2_S and IQ2_M lean on IQ3_S, the others on Q2_K. */
static sprout_type low_bit_iq_mix(sp_recipe *r, sp_tensor_role role) {
    const sprout_file_type ft = r->file_type;
    const bool iq2_sm = ft == SPROUT_FTYPE_IQ2_S || ft == SPROUT_FTYPE_IQ2_M;
    const sprout_type more = iq2_sm ? SPROUT_TYPE_IQ3_S : SPROUT_TYPE_Q2_K;
    switch (role) {
    case SP_ROLE_TOKEN_EMBD: return more;
    case SP_ROLE_ATTN_V:
    case SP_ROLE_ATTN_QKV:
        r->i_attn_v++;
        return r->n_gqa >= 4 || r->n_expert >= 4 ? SPROUT_TYPE_Q4_K : more;
    case SP_ROLE_ATTN_K:
        if (r->n_expert == 8) return SPROUT_TYPE_Q4_K;
        break;
    case SP_ROLE_FFN_DOWN:
        if (r->i_ffn_down++ < r->n_layer / 8) return more;
        break;
    case SP_ROLE_ATTN_OUTPUT:
        if (r->n_expert == 8) return SPROUT_TYPE_Q5_K;
        if (ft == SPROUT_FTYPE_IQ1_S || ft == SPROUT_FTYPE_IQ1_M) return SPROUT_TYPE_IQ2_XXS;
        if (iq2_sm) return SPROUT_TYPE_IQ3_S;
        break;
    default: break;
    }
    return sp_file_type_base(ft);
}

/* The IQ3 mixes' rules (the 3f545be chain's branches that name them). */
static sprout_type iq3_mix(sp_recipe *r, sp_tensor_role role, sprout_type t) {
    const sprout_file_type ft = r->file_type;
    const int n = r->n_layer;
    switch (role) {
    case SP_ROLE_TOKEN_EMBD:
        if (ft == SPROUT_FTYPE_IQ3_XXS) t = SPROUT_TYPE_IQ3_S;
        break;
    case SP_ROLE_ATTN_V:
    case SP_ROLE_ATTN_QKV:
        r->i_attn_v++;
        if (ft == SPROUT_FTYPE_IQ3_XXS)
            t = r->n_gqa >= 4 ? SPROUT_TYPE_Q4_K : r->has_imatrix ? SPROUT_TYPE_IQ3_XXS : SPROUT_TYPE_IQ3_S;
        else if ((ft == SPROUT_FTYPE_IQ3_XS || ft == SPROUT_FTYPE_IQ3_S) && r->n_gqa >= 4) t = SPROUT_TYPE_Q4_K;
        else if (ft == SPROUT_FTYPE_IQ3_M) t = SPROUT_TYPE_Q4_K;
        if (r->n_expert == 8) t = SPROUT_TYPE_Q8_0;
        break;
    case SP_ROLE_ATTN_K:
    case SP_ROLE_ATTN_Q:
        if (role == SP_ROLE_ATTN_K && r->n_expert == 8) t = SPROUT_TYPE_Q8_0;
        else if (ft == SPROUT_FTYPE_IQ3_XS) t = SPROUT_TYPE_IQ3_XXS;
        else if (ft == SPROUT_FTYPE_IQ3_XXS) t = SPROUT_TYPE_IQ2_S;
        break;
    case SP_ROLE_FFN_DOWN: {
        const int i = r->i_ffn_down++;
        if (ft == SPROUT_FTYPE_IQ3_XXS && !r->has_imatrix) t = i < n / 8 ? SPROUT_TYPE_Q4_K : SPROUT_TYPE_Q3_K;
        else if (ft == SPROUT_FTYPE_IQ3_M && (i < n / 8 || (r->n_expert == 8 && use_more_bits(i, n)))) t = SPROUT_TYPE_Q4_K;
        break;
    }
    case SP_ROLE_ATTN_OUTPUT:
        if (r->falcon) break;
        if (r->n_expert == 8) t = SPROUT_TYPE_Q5_K;
        else if (ft == SPROUT_FTYPE_IQ3_XXS) t = SPROUT_TYPE_IQ3_S;
        else if (ft == SPROUT_FTYPE_IQ3_M) t = SPROUT_TYPE_Q4_K;
        break;
    case SP_ROLE_FFN_GATE:
    case SP_ROLE_FFN_UP: {
        const int i = role == SP_ROLE_FFN_GATE ? r->i_ffn_gate++ : r->i_ffn_up++;
        if (ft == SPROUT_FTYPE_IQ3_XS && i >= n / 8 && i < 7 * n / 8) t = SPROUT_TYPE_IQ3_XXS;
        break;
    }
    default: break;
    }
    return t;
}

bool sp_recipe_needs_imatrix(sp_tensor_role role, sprout_type type) {
    role = (sp_tensor_role)(role & ~SP_ROLE_EXPERTS);
    if (role == SP_ROLE_OUTPUT || role == SP_ROLE_TOKEN_EMBD) return false;
    return type == SPROUT_TYPE_IQ3_XXS || type == SPROUT_TYPE_IQ2_XXS || type == SPROUT_TYPE_IQ2_XS ||
           type == SPROUT_TYPE_IQ2_S || type == SPROUT_TYPE_IQ1_M || type == SPROUT_TYPE_IQ1_S;
}

sprout_type sp_recipe_choose(sp_recipe *r, sp_tensor_role role, int64_t ne0) {
    const sprout_file_type ft = r->file_type;
    sprout_type t = sp_file_type_base(ft);
    const bool experts = role & SP_ROLE_EXPERTS;
    role = (sp_tensor_role)(role & ~SP_ROLE_EXPERTS);
    if (role == SP_ROLE_OUTPUT || (!r->has_output && role == SP_ROLE_TOKEN_EMBD)) {
        if (ft == SPROUT_FTYPE_MXFP4_MOE || r->falcon || ne0 % sprout_type_block_size(t)) return SPROUT_TYPE_Q8_0;
        if (is_low_bit_iq(ft) || ft == SPROUT_FTYPE_IQ3_XXS) return SPROUT_TYPE_Q5_K;
        return t == SPROUT_TYPE_Q8_0 ? t : SPROUT_TYPE_Q6_K;
    }
    if (ft == SPROUT_FTYPE_MXFP4_MOE) return experts ? SPROUT_TYPE_MXFP4 : SPROUT_TYPE_Q8_0;
    if (is_low_bit_iq(ft)) return low_bit_iq_mix(r, role);
    if (is_iq3(ft)) return iq3_mix(r, role, t);
    switch (role) {
    case SP_ROLE_TOKEN_EMBD: /* an embedding looked up row by row keeps more bits than ternary */
        if (ft == SPROUT_FTYPE_TQ1_0 || ft == SPROUT_FTYPE_TQ2_0) t = SPROUT_TYPE_Q4_K;
        break;
    case SP_ROLE_ATTN_V: {
        const int i = r->i_attn_v++;
        if (ft == SPROUT_FTYPE_Q2_K) t = r->n_gqa >= 4 ? SPROUT_TYPE_Q4_K : SPROUT_TYPE_Q3_K;
        else if (ft == SPROUT_FTYPE_Q3_K_M) t = i < 2 ? SPROUT_TYPE_Q5_K : SPROUT_TYPE_Q4_K;
        else if (ft == SPROUT_FTYPE_Q3_K_L) t = SPROUT_TYPE_Q5_K;
        else if ((ft == SPROUT_FTYPE_Q4_K_M || ft == SPROUT_FTYPE_Q5_K_M) && use_more_bits(i, r->n_attn_v))
            t = SPROUT_TYPE_Q6_K;
        else if (ft == SPROUT_FTYPE_Q4_K_S && i < 4) t = SPROUT_TYPE_Q5_K;
        else if ((ft == SPROUT_FTYPE_IQ4_NL || ft == SPROUT_FTYPE_IQ4_XS) && r->n_gqa >= 4) t = SPROUT_TYPE_Q5_K;
        break;
    }
    case SP_ROLE_FFN_DOWN: {
        const int i = r->i_ffn_down++, n = r->n_layer;
        if (ft == SPROUT_FTYPE_Q2_K) t = SPROUT_TYPE_Q3_K;
        else if (ft == SPROUT_FTYPE_Q3_K_M)
            t = i < n / 16 ? SPROUT_TYPE_Q5_K
                : (!r->falcon || use_more_bits(i, n)) ? SPROUT_TYPE_Q4_K
                                                      : SPROUT_TYPE_Q3_K;
        else if (ft == SPROUT_FTYPE_Q3_K_L) t = r->falcon ? SPROUT_TYPE_Q4_K : SPROUT_TYPE_Q5_K;
        else if (ft == SPROUT_FTYPE_Q4_K_M) {
            if (r->falcon)
                t = i < n / 16 ? SPROUT_TYPE_Q6_K : use_more_bits(i, n) ? SPROUT_TYPE_Q5_K : SPROUT_TYPE_Q4_K;
            else if (use_more_bits(i, n))
                t = SPROUT_TYPE_Q6_K;
        } else if (ft == SPROUT_FTYPE_Q5_K_M && use_more_bits(i, n))
            t = SPROUT_TYPE_Q6_K;
        else if (ft == SPROUT_FTYPE_Q4_K_S && !r->falcon && i < n / 8)
            t = SPROUT_TYPE_Q5_K;
        else if ((ft == SPROUT_FTYPE_IQ4_NL || ft == SPROUT_FTYPE_IQ4_XS) && i < n / 8) /* without an importance matrix */
            t = SPROUT_TYPE_Q5_K;
        break;
    }
    case SP_ROLE_ATTN_QKV:
        if (ft == SPROUT_FTYPE_Q3_K_M || ft == SPROUT_FTYPE_Q3_K_L) t = SPROUT_TYPE_Q4_K;
        else if (ft == SPROUT_FTYPE_Q4_K_M) t = SPROUT_TYPE_Q5_K;
        else if (ft == SPROUT_FTYPE_Q5_K_M) t = SPROUT_TYPE_Q6_K;
        break;
    case SP_ROLE_ATTN_OUTPUT:
        if (!r->falcon) {
            if (ft == SPROUT_FTYPE_Q2_K) t = SPROUT_TYPE_Q3_K;
            else if (ft == SPROUT_FTYPE_Q3_K_M) t = SPROUT_TYPE_Q4_K;
            else if (ft == SPROUT_FTYPE_Q3_K_L) t = SPROUT_TYPE_Q5_K;
        } else if (ft == SPROUT_FTYPE_Q3_K_L) {
            t = SPROUT_TYPE_Q4_K;
        }
        break;
    default: break;
    }
    return t;
}

sprout_type sp_type_fitting_rows(sprout_type wanted, int64_t ne0) {
    if (ne0 % sprout_type_block_size(wanted) == 0) return wanted;
    sprout_type fallback;
    switch (wanted) {
    case SPROUT_TYPE_Q2_K:
    case SPROUT_TYPE_Q3_K:
    case SPROUT_TYPE_Q4_K: fallback = SPROUT_TYPE_Q5_0; break;
    case SPROUT_TYPE_TQ1_0:
    case SPROUT_TYPE_TQ2_0: fallback = SPROUT_TYPE_Q4_0; break; /* as llama-quantize's */
    case SPROUT_TYPE_Q5_K: fallback = SPROUT_TYPE_Q5_1; break;
    case SPROUT_TYPE_Q6_K: fallback = SPROUT_TYPE_Q8_0; break;
    case SPROUT_TYPE_IQ1_S:
    case SPROUT_TYPE_IQ1_M:
    case SPROUT_TYPE_IQ2_XXS:
    case SPROUT_TYPE_IQ2_XS:
    case SPROUT_TYPE_IQ2_S:
    case SPROUT_TYPE_IQ3_XXS:
    case SPROUT_TYPE_IQ3_S:
    case SPROUT_TYPE_IQ4_XS: fallback = SPROUT_TYPE_IQ4_NL; break;
    default: fallback = SPROUT_TYPE_F16; break;
    }
    return ne0 % sprout_type_block_size(fallback) == 0 ? fallback : SPROUT_TYPE_F16;
}
