/* LoRA adapters in llama.cpp's GGUF layout, read against a loaded model:
 * per target weight W ([n_in] -> [n_out]) a pair A ([n_in] -> [r]) and B
 * ([r] -> [n_out]) whose product B A is added to W's output at run time,
 * never merged: the base mapping stays read-only and shared, and any set of
 * adapters may apply to any token. The adapter's own file stays mapped. */
#ifndef SPROUT_MODEL_LORA_H
#define SPROUT_MODEL_LORA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/model.h"

/* Ranks above this are refused: the run-time term keeps a token's r values
 * on the stack of whichever thread computes it. Real adapters use 4 to 256. */
#define SP_LORA_MAX_RANK 1024

/* Outputs per tile of a pair's repacked B (sp_lora_pair.b_tiles). */
#define SP_LORA_B_TILE 32

/* One target's pair: a.n_in = W's n_in, a.n_out = r; b.n_in = r, b.n_out =
 * W's n_out. a.data NULL: the adapter leaves that weight alone. */
typedef struct sp_lora_pair {
    sp_weight a, b;
    /* B again, in tiles of SP_LORA_B_TILE outputs, each tile r rows of its
     * outputs' k-th elements (the last tile padded with zeros): B (A x) is
     * then a sum of r scaled rows, with no horizontal sums and no call per
     * row of r elements. As floats (b_tiles), or an F16 B as its halves
     * where the CPU widens them in registers (b_tiles_f16, half the bytes
     * to stream; the same values). Made at load: the adapter's file is
     * read once; the base's weights are never copied. */
    float *b_tiles;
    uint16_t *b_tiles_f16;
    float alpha_over_rank; /* alpha / r, or 1 without alpha (llama.cpp's scale) */
} sp_lora_pair;

/* Whether an F16 B is kept as halves (b_tiles_f16): x86 with AVX2 and
 * F16C, where lora_apply.c widens them. */
bool sp_lora_f16_tiles(void);

/* Tiles of a pair's b_tiles. */
static inline int64_t sp_lora_b_tile_count(const sp_lora_pair *p) { return (p->b.n_out + SP_LORA_B_TILE - 1) / SP_LORA_B_TILE; }

struct sprout_lora {
    uint64_t id;         /* unique in the process: a set outlives its adapters' addresses (see sp_lora_set) */
    sprout_gguf *gguf;
    const sprout_model *model;
    sp_lora_pair *pairs; /* indexed as sp_model_weight, then each expert's (sp_lora_expert_index) */
    int64_t n_pairs;     /* pairs' count (freed without the model) */
};

/* A layer's expert tensors an adapter may carry a pair for (llama.cpp's
 * 3-D lora_a [n_in, r, n_expert] and lora_b [r, n_out, n_expert]: expert
 * x's pair is slice x of both). */
typedef enum sp_lora_experts { SP_LORA_GATE_EXPS, SP_LORA_UP_EXPS, SP_LORA_DOWN_EXPS, SP_LORA_EXPERT_KINDS } sp_lora_experts;

/* The index in sprout_lora.pairs of expert x's pair on layer il's `kind`
 * tensor: after the model's weights, layer by layer, kind by kind. */
static inline int64_t sp_lora_expert_index(const sprout_model *m, int32_t il, sp_lora_experts kind, int32_t x) {
    return sp_model_weight_count(m) + ((int64_t)il * SP_LORA_EXPERT_KINDS + kind) * m->hp.n_expert + x;
}

/* The base tensor's name ("blk.IL.ffn_gate_exps.weight" ...). */
void sp_lora_expert_name(int32_t il, sp_lora_experts kind, char *buf, size_t cap);

/* What applies to a batch token (sp_batch_token.lora): n adapters, each
 * with its scale (none of them 0). NULL or n 0: the base model alone. */
typedef struct sp_lora_set {
    size_t n;
    const sprout_lora_use *uses;
    /* the adapters' ids: a cache keyed by a set is compared after its
     * adapters may have been freed, and a new adapter can take a freed
     * one's address */
    const uint64_t *ids;
} sp_lora_set;

/* A set's own copy of a caller's list, checked against m (each adapter
 * loaded against it, each scale finite); scale-0 uses are left out, so
 * that "scale 0" and "no adapter" are one set. */
sprout_status sp_lora_set_copy(const sprout_model *m, const sprout_lora_use *uses, size_t n, sp_lora_set *out);
/* Same adapters, same scales, same order (the terms add in that order). */
bool sp_lora_set_equal(const sp_lora_set *a, const sp_lora_set *b);
/* The set a token carries: NULL for the empty set. */
static inline const sp_lora_set *sp_lora_set_or_null(const sp_lora_set *s) { return s && s->n ? s : NULL; }
void sp_lora_set_free(sp_lora_set *s);

/* Checks an open adapter file against m and builds the adapter (takes
 * ownership of g on success). */
sprout_status sp_lora_build(sprout_gguf *g, const sprout_model *m, sprout_lora **out);

#endif
