/* Which type each tensor of a model gets under a file type: the per-tensor
 * mixes llama-quantize users know (Q4_K_M keeps the output matrix at Q6_K,
 * gives attention V and FFN-down more bits in the layers that matter most),
 * and the fallbacks for rows that do not fit a type's blocks. The decisions
 * follow llama.cpp's so that a sprout Q4_K_M is the Q4_K_M people compare. */
#ifndef SPROUT_QUANTIZE_RECIPE_H
#define SPROUT_QUANTIZE_RECIPE_H

#include <stdbool.h>
#include <stdint.h>

#include "sprout.h"

typedef enum sp_tensor_role {
    SP_ROLE_OTHER,
    SP_ROLE_OUTPUT,
    SP_ROLE_TOKEN_EMBD,
    SP_ROLE_ATTN_V,
    SP_ROLE_ATTN_QKV, /* fused Q, K and V (Phi-3, Falcon) */
    SP_ROLE_ATTN_K,
    SP_ROLE_ATTN_Q,
    SP_ROLE_ATTN_OUTPUT,
    SP_ROLE_FFN_UP,
    SP_ROLE_FFN_GATE,
    SP_ROLE_FFN_DOWN,
    /* beside an FFN role: the tensor holds every expert's matrix
     * (ffn_*_exps), which MXFP4_MOE alone tells apart */
    SP_ROLE_EXPERTS = 0x100,
} sp_tensor_role;

sp_tensor_role sp_tensor_role_of(const char *name);

/* The type every quantizable matrix gets before the mix adjusts it. */
sprout_type sp_file_type_base(sprout_file_type file_type);

/* True for tensors a quantizer may touch: matrices named *weight, except
 * norms, MoE routers and position/token-type embeddings. */
bool sp_tensor_is_quantizable(const char *name, int n_dims);

typedef struct sp_recipe {
    sprout_file_type file_type;
    bool falcon;       /* Falcon's recipe differs for FFN down and attention output */
    int n_gqa;         /* query heads per KV head */
    int n_layer;
    int n_attn_v;      /* attn_v and attn_qkv tensors in the file */
    bool has_output;   /* false: the token embedding doubles as the output */
    bool has_imatrix;  /* an importance matrix was given: the IQ3 mixes then differ */
    int n_expert;      /* experts per MoE layer, 0 for a dense model */
    int i_attn_v, i_ffn_down, i_ffn_gate, i_ffn_up; /* running counters, in file order, as llama.cpp counts */
} sp_recipe;

/* The mix's type for a quantizable tensor with rows of ne0 elements; call
 * once per tensor in file order (the layer counters advance). */
sprout_type sp_recipe_choose(sp_recipe *recipe, sp_tensor_role role, int64_t ne0);

/* Whether llama-quantize refuses to make a tensor of this role and type
 * without an importance matrix (the lowest-bit IQ types; never the output
 * or the token embedding). */
bool sp_recipe_needs_imatrix(sp_tensor_role role, sprout_type type);

/* `wanted` if rows of ne0 elements fit its blocks, else the nearest type
 * that fits (Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0 ..., F16 at worst). */
sprout_type sp_type_fitting_rows(sprout_type wanted, int64_t ne0);

#endif
