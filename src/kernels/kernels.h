/* The compute kernels, behind one dispatch table filled once at start-up
 * (sp_kernels_get). This file's portable C versions are the reference every
 * optimised one is tested against; per-ISA versions (op_type_isa.c) replace
 * table entries when the CPU supports them. */
#ifndef SPROUT_KERNELS_H
#define SPROUT_KERNELS_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sprout.h"

/* A weight matrix as stored in the file: n_out rows of n_in elements of
 * `type` (ggml order: ne0 = n_in is contiguous). */
typedef struct sp_weight {
    const uint8_t *data;
    sprout_type type;
    int64_t n_in, n_out;
    size_t row_bytes;
} sp_weight;

/* A KV cache row's element type: its ggml type id. The block types (Q8_0,
 * Q4_0) hold 32 elements a block along the row, so a head's part of a row
 * must be whole blocks (a head size a multiple of 32). */
typedef enum sp_kv_type { SP_KV_F32 = 0, SP_KV_F16 = 1, SP_KV_Q4_0 = 2, SP_KV_Q8_0 = 8, SP_KV_BF16 = 30 } sp_kv_type;

/* Elements per block of a KV type (1 for the float types). */
static inline int64_t sp_kv_block(sp_kv_type t) { return t == SP_KV_Q8_0 || t == SP_KV_Q4_0 ? 32 : 1; }

/* Bytes of n elements of a KV row (n a whole number of blocks), which is
 * also the byte offset of element n from the row's start. */
static inline size_t sp_kv_bytes(sp_kv_type t, int64_t n) {
    switch (t) {
    case SP_KV_F32: return (size_t)n * 4;
    case SP_KV_Q8_0: return (size_t)(n / 32) * 34;
    case SP_KV_Q4_0: return (size_t)(n / 32) * 18;
    default: return (size_t)n * 2; /* F16, BF16 */
    }
}

/* The part of a cell list one query token sees: entries [begin, end). */
typedef struct sp_cell_range {
    int32_t begin, end;
} sp_cell_range;

/* Attention of the query heads that share one KV head (grouped-query
 * attention; n_q_heads 0 means 1), for one query token or several of one
 * sequence (n_tokens 0 means 1): softmax(q.k * scale (soft-capped)) . v
 * over the cache cells the token sees, with an online softmax (the score
 * vector is never stored). keys/values point at cell 0 of this KV head; a
 * cell's vector is `stride` elements further per cell (sp_kv_bytes of
 * them). Token i's head h
 * reads its query at q + i * q_stride + h * head_dim_k and writes its
 * output at out + i * out_stride + h * head_dim_v; it sees entries
 * ranges[i] of `cells` (ranges NULL: all n_cells of them). Each (token,
 * head)'s result is the same whatever else the call holds: a head alone or
 * in a group, a token alone or among others. */
typedef struct sp_attention_args {
    const float *q;        /* head_dim_k per head */
    const void *keys, *values;
    sp_kv_type k_type, v_type; /* quantized rows are dequantized in the kernel's loop, a tile at a time */
    int64_t stride;        /* elements between cells (whole blocks) */
    const int32_t *cells;  /* which cells to attend to, n_cells of them */
    int64_t n_cells;
    int64_t head_dim_k, head_dim_v;
    float scale, softcap;  /* softcap 0: none */
    float *out;            /* head_dim_v per head */
    int64_t n_q_heads;     /* heads that share the KV head (0: 1) */
    int64_t n_tokens;      /* query tokens (0: 1) */
    int64_t q_stride, out_stride; /* floats between tokens' queries, outputs */
    const sp_cell_range *ranges;  /* per token (NULL: [0, n_cells) for all) */
    const float *sinks;    /* per query head (NULL: none): a logit with no value that joins the softmax's sum (gpt-oss) */
} sp_attention_args;

/* A row's softmax after its last cell, with head h's sink: the sink's
 * weight joins the sum (raising the maximum where the sink is above it,
 * as llama.cpp's flash attention does); returns what the accumulated
 * values are multiplied by: the rescale to the new maximum over the sum. */
static inline float sp_attention_finish(const sp_attention_args *a, int64_t h, float max, float sum) {
    float rescale = 1.f;
    if (a->sinks) {
        const float s = a->sinks[h];
        if (s > max) {
            rescale = expf(max - s); /* 0 when no cell was seen */
            sum = sum * rescale + 1.f;
        } else {
            sum += expf(s - max);
        }
    }
    return sum > 0.f ? rescale / sum : 0.f;
}

/* Token i's part of the cell list. */
static inline sp_cell_range sp_attention_range(const sp_attention_args *a, int64_t i) {
    return a->ranges ? a->ranges[i] : (sp_cell_range){0, (int32_t)a->n_cells};
}

/* F16 and BF16 weight rows are dotted with the activations rounded to
 * their own format (to nearest even), at every level: llama.cpp computes
 * them so (the format is its vec_dot_type for those weights). Those
 * rounded activations of a block of tokens, widened back to floats
 * (exactly), take up to this many floats of scratch beside a decoded row. */
#define SP_ROUNDED_BLOCK_FLOATS (128 << 10)

/* One token's weight rows stream at the pace of its arithmetic, too slowly
 * for the hardware prefetcher alone: the x86 int8 one-token kernels ask for
 * the lines this many bytes ahead of what they read, a chunk's worth at a
 * time (a whole row at once, as the several-token kernels do, gave
 * nothing). 2 KiB suits four streams a thread (below); one stream wanted
 * 6 KiB. */
#define SP_DECODE_AHEAD 2048
/* The float rows' one-token tiles ask for nothing ahead (0): on a Zen 4
 * their 2 KiB ahead into L1 held F16 and BF16 decode 20-30% below the
 * hardware prefetcher's own pace (at every x86 level), and on an Emerald
 * Rapids it made no difference. The int8 tiles' helped on the Intel hosts;
 * on the Zen 4 dropping it measured +10-14% for Q8_0 but +9% or -7% for
 * Q4_0 on one thread depending on how the runs alternated (bench/RESULTS.md),
 * so it stays. */
#define SP_FLOAT_DECODE_AHEAD 0

/* And a thread's rows for one token are read as SP_DECODE_STREAMS streams
 * at once: its range cut into that many stretches, a row from each at a
 * time. A core keeps more lines in flight over several streams (the
 * L2 streamer follows each, within its 4 KiB pages) than over one: four
 * streams 2 KiB ahead read faster than one, and more streams or other
 * distances were no better. Each row's arithmetic is unchanged, only the
 * order of the rows. Whole rows go side by side, a chunk from each stretch
 * in turn (x86_matmul_loops.h's rows_side_by_side), so that all the
 * streams are read at once. */
#define SP_DECODE_STREAMS 4

/* Rows per stretch for rows [o0, o1), and the k-th row to take (k from 0
 * to stretch * SP_DECODE_STREAMS), or -1 past the end of the last stretch. */
static inline int64_t sp_decode_stretch(int64_t o0, int64_t o1) { return (o1 - o0 + SP_DECODE_STREAMS - 1) / SP_DECODE_STREAMS; }

static inline int64_t sp_decode_row(int64_t o0, int64_t o1, int64_t stretch, int64_t k) {
    const int64_t o = o0 + (k % SP_DECODE_STREAMS) * stretch + k / SP_DECODE_STREAMS;
    return o < o1 ? o : -1;
}

/* The i-th set of rows side by side (i from 0 to stretch): a row from each
 * stretch that has one, into rows and their indices into os; returns how
 * many (the stretches that have one come first, so a short set is the
 * first ones). */
static inline int sp_decode_rows(const sp_weight *w, int64_t o0, int64_t o1, int64_t stretch, int64_t i,
                                 const uint8_t *rows[SP_DECODE_STREAMS], int64_t os[SP_DECODE_STREAMS]) {
    int n = 0;
    for (int k = 0; k < SP_DECODE_STREAMS; k++) {
        const int64_t o = sp_decode_row(o0, o1, stretch, i * SP_DECODE_STREAMS + k);
        if (o >= 0) os[n] = o, rows[n++] = w->data + (size_t)o * w->row_bytes;
    }
    return n;
}

/* Dots one token with n rows side by side (SP_DECODE_STREAMS of them, or
 * one) into dots; ctx is the caller's (the token, its format). */
typedef void (*sp_decode_tile_fn)(const uint8_t *const rows[], int n, const void *ctx, float *dots);

/* One token against rows [o0, o1) into y: each set of rows side by side
 * (sp_decode_rows) in one call of tile, a short set (the last) a row at a
 * time, so that a row's arithmetic is its tile's whichever rows share it.
 * The float levels' one-token path; the int8 one keeps its own loop, whose
 * block type must stay a constant in each inlined copy. */
static inline void sp_decode_sets(const sp_weight *w, int64_t o0, int64_t o1, float *y, sp_decode_tile_fn tile, const void *ctx) {
    const int64_t stretch = sp_decode_stretch(o0, o1);
    for (int64_t i = 0; i < stretch; i++) {
        const uint8_t *rows[SP_DECODE_STREAMS];
        int64_t os[SP_DECODE_STREAMS];
        const int n = sp_decode_rows(w, o0, o1, stretch, i, rows, os);
        float dots[SP_DECODE_STREAMS];
        if (n == SP_DECODE_STREAMS) tile(rows, n, ctx, dots);
        else
            for (int k = 0; k < n; k++) tile(rows + k, 1, ctx, dots + k);
        for (int k = 0; k < n; k++) y[os[k]] = dots[k];
    }
}

/* Accumulators of 256 rows (8 tokens' scale and min terms, 8 lanes each)
 * that an int8 matmul keeps between the spans of wide rows. */
#define SP_ROW_STATE_FLOATS (256 * 2 * 8 * 8)

/* Floats of per-thread scratch a matmul over rows of n_in elements may use:
 * decoded rows, or the 8-bit activations of a tile of 32 tokens (40 bytes
 * per 32 elements each, plus 64 for a reordered copy with its scales and
 * sums, padded to a multiple of 8 blocks and a chunk per 256 elements,
 * aligned to a cache line), a block of rounded activations and the
 * accumulators a block of rows keeps between spans of its rows.
 * Callers size their scratch with it once, so no kernel allocates inside
 * the token loop. */
/* Floats of scratch per input element that a tile of activations may
 * fill, and beyond them for a row's padding to whole chunks (each level's
 * kernel asserts its tile fits). */
#define SP_TILE_FLOATS_PER_ELEMENT 27
#define SP_TILE_PADDING_FLOATS (17 * 32 * 8)

/* The scratch every level's matmul sizes its own parts by (the portable
 * float rows their block of rounded tokens). */
static inline int64_t sp_matmul_level_scratch_floats(int64_t n_in) {
    return SP_TILE_FLOATS_PER_ELEMENT * n_in + SP_TILE_PADDING_FLOATS + 64 + SP_ROUNDED_BLOCK_FLOATS + SP_ROW_STATE_FLOATS;
}

/* Beyond it, room for the AMX-BF16 kernel's prompt tokens where it stages
 * them itself (one thread, a small matmul, runs past the forward pass's
 * buffer; matmul_amx_float.c): 8 MiB, and 64 more bytes an element, so that its
 * least block of 32 tokens (128 bytes an element) fits at every width. Its
 * pages are touched by that kernel alone. */
#define SP_AMX_FLOAT_BLOCK_FLOATS ((int64_t)2 << 20)
#define SP_AMX_FLOAT_FLOATS_PER_ELEMENT 16

static inline int64_t sp_matmul_scratch_floats(int64_t n_in) {
    return sp_matmul_level_scratch_floats(n_in) + SP_AMX_FLOAT_BLOCK_FLOATS + SP_AMX_FLOAT_FLOATS_PER_ELEMENT * n_in;
}

/* The K-quants with a scale per 16 elements: the int8 kernels keep their
 * block sums per half. */
static inline bool sp_scale_per_16(sprout_type type) {
    return type == SPROUT_TYPE_Q6_K || type == SPROUT_TYPE_Q3_K || type == SPROUT_TYPE_Q2_K;
}

/* The types every optimized level dots in int8 against quantized
 * activations (rows of n_in % 32 == 0); the rest go through float rows. */
static inline bool sp_int8_type(sprout_type type) {
    switch (type) {
    case SPROUT_TYPE_Q8_0:
    case SPROUT_TYPE_Q4_0:
    case SPROUT_TYPE_Q4_1:
    case SPROUT_TYPE_Q5_0:
    case SPROUT_TYPE_Q5_1:
    case SPROUT_TYPE_Q4_K:
    case SPROUT_TYPE_Q5_K:
    case SPROUT_TYPE_Q2_K:
    case SPROUT_TYPE_Q3_K:
    case SPROUT_TYPE_Q6_K:
    case SPROUT_TYPE_IQ4_NL:
    case SPROUT_TYPE_IQ4_XS: return true;
    default: return false;
    }
}

/* ... and with them the types only the x86 levels dot in int8 so far
 * (MXFP4, TQ1_0, TQ2_0 and the grid IQ formats); the NEON levels decode
 * those to float rows. */
static inline bool sp_x86_int8_type(sprout_type type) {
    switch (type) {
    case SPROUT_TYPE_MXFP4:
    case SPROUT_TYPE_TQ1_0:
    case SPROUT_TYPE_TQ2_0:
    case SPROUT_TYPE_IQ3_XXS:
    case SPROUT_TYPE_IQ3_S:
    case SPROUT_TYPE_IQ2_XXS:
    case SPROUT_TYPE_IQ2_XS:
    case SPROUT_TYPE_IQ2_S:
    case SPROUT_TYPE_IQ1_S:
    case SPROUT_TYPE_IQ1_M: return true;
    default: return sp_int8_type(type);
    }
}

/* Bytes of every level's quantized activations per 32 elements: a float
 * scale, four bytes of sums and 32 levels (each level lays them out its
 * own way). */
#define SP_ACT_BLOCK_BYTES 40

/* The FFN's activation functions. */
typedef enum sp_activation { SP_ACT_SILU, SP_ACT_GELU } sp_activation;

typedef struct sp_kernels {
    const char *name;
    /* y[t * y_stride + o] = W[o] . x[t * x_stride + :] for o in [o0, o1),
     * t in [0, n_tokens). scratch holds sp_matmul_scratch_floats(n_in).
     * xq: NULL, or x already put through this table's quantize (token t's
     * blocks at t * (n_in / 32) * SP_ACT_BLOCK_BYTES), which the int8 paths
     * then read instead of quantizing x again in every call and thread. */
    void (*matmul)(const sp_weight *w, const float *x, int64_t x_stride, const void *xq, int64_t n_tokens, float *y,
                   int64_t y_stride, int64_t o0, int64_t o1, float *scratch);
    /* The same for prompt tokens, where a level computes them another way
     * (NULL: matmul): the amx level's F16 and BF16 rows through AMX-BF16
     * tiles, whose sums differ from matmul's by float rounding and a
     * product left out, under 2^-15 of each term (matmul_amx_float.c; a tile
     * unit's order of additions that no vector code replays, and one token
     * through the tiles would convert every weight each time). Each entry
     * alone gives a token the same bits whatever its batch; the forward
     * pass chooses by what a token is (sp_batch_token.prompt: one of a long
     * enough prompt), never by the batch, so a request's output does not
     * depend on what else runs. */
    void (*matmul_prompt)(const sp_weight *w, const float *x, int64_t x_stride, const void *xq, int64_t n_tokens, float *y,
                          int64_t y_stride, int64_t o0, int64_t o1, float *scratch);
    /* For the types matmul_prompt computes its own way (sp_prompt_entry_type),
     * its xq is NULL or the tokens staged for it once per matmul, so that
     * its threads do not each stage all of them: stage_prompt stages token
     * tiles [k0, k1) (tiles of sp_prompt_tile_tokens(n_tokens)) of x's
     * n_tokens into `staged` (64-byte aligned, prompt_staged_bytes of it).
     * NULL where matmul_prompt is. */
    size_t (*prompt_staged_bytes)(sprout_type type, int64_t n_in, int64_t n_tokens);
    void (*stage_prompt)(const sp_weight *w, const float *x, int64_t x_stride, int64_t n_tokens, int64_t k0, int64_t k1, void *staged);
    /* The 8-bit blocks the int8 matmuls dot against, from n (a multiple of
     * 32) floats: done once per token where the activations are made (a
     * norm, the FFN's activation, attention) and shared by every matmul
     * that reads them. NULL where this level's matmuls read floats only. */
    void (*quantize)(const float *x, int64_t n, void *out);
    void (*attention)(const sp_attention_args *a);
    /* out[i] = act(x[i]) * up[i] (up NULL: act(x[i])) for i < n; out may
     * be x. GELU is the tanh form. */
    void (*activation)(sp_activation kind, const float *x, const float *up, float *out, int64_t n);
} sp_kernels;

/* The weight types a prompt entry computes its own way (the amx level's:
 * F16 and BF16 rows in AMX-BF16 tiles); it hands every other type to its
 * level's matmul. */
static inline bool sp_prompt_entry_type(sprout_type type) { return type == SPROUT_TYPE_F16 || type == SPROUT_TYPE_BF16; }

/* Tokens a staged tile of a prompt run of n tokens holds (stage_prompt),
 * and the rows the prompt entry converts at once (its panels): pieces of
 * rows handed to threads are best whole groups. */
#define SP_PROMPT_TILE_TOKENS 16
#define SP_PROMPT_ROW_GROUP 256
static inline int64_t sp_prompt_tile_tokens(int64_t n) { return n < SP_PROMPT_TILE_TOKENS ? n : SP_PROMPT_TILE_TOKENS; }

/* Whether k computes prompt tokens of a weight type apart from generated
 * ones. */
static inline bool sp_prompt_path_differs(const sp_kernels *k, sprout_type type) {
    return k->matmul_prompt && sp_prompt_entry_type(type);
}

const sp_kernels *sp_kernels_get(void);
/* Whether this x86-64 CPU has AVX2, FMA and F16C (and the OS saves the AVX
 * state): the avx2 level's test, for code outside the kernels that widens
 * halves with F16C. False elsewhere. */
bool sp_cpu_has_x86_avx2(void);
/* The portable table, for tests that compare against it. */
const sp_kernels *sp_kernels_portable(void);

void sp_matmul_portable(const sp_weight *w, const float *x, int64_t x_stride, const void *xq, int64_t n_tokens, float *y,
                        int64_t y_stride, int64_t o0, int64_t o1, float *scratch);
/* The float path of the portable and NEON levels: each row decoded once
 * per block of tokens into scratch, dotted with every token by dot_fn
 * (F16 and BF16 rows with the tokens' rounded activations). */
void sp_matmul_float_rows(const sp_weight *w, const float *x, int64_t x_stride, int64_t n_tokens, float *y, int64_t y_stride,
                          int64_t o0, int64_t o1, float *scratch, float (*dot_fn)(const float *row, const float *x, int64_t n));
void sp_attention_portable(const sp_attention_args *a);
void sp_activation_portable(sp_activation kind, const float *x, const float *up, float *out, int64_t n);
/* 64-bit Arm with NEON and the dot-product extension (matmul_neon.c). */
void sp_matmul_neon(const sp_weight *w, const float *x, int64_t x_stride, const void *xq, int64_t n_tokens, float *y,
                    int64_t y_stride, int64_t o0, int64_t o1, float *scratch);
void sp_quantize_neon(const float *x, int64_t n, void *out);
/* ... and with the int8 matrix multiply (matmul_neon_i8mm.c). */
void sp_matmul_neon_i8mm(const sp_weight *w, const float *x, int64_t x_stride, const void *xq, int64_t n_tokens, float *y,
                         int64_t y_stride, int64_t o0, int64_t o1, float *scratch);
/* x86-64 with AVX2 + FMA + F16C: the matmul and quantize (matmul_avx2.c), attention (attention_avx2.c, and
 * attention_avx512.c with AVX-512 F as well) and activation (activation_avx2.c). */
void sp_matmul_avx2(const sp_weight *w, const float *x, int64_t x_stride, const void *xq, int64_t n_tokens, float *y,
                    int64_t y_stride, int64_t o0, int64_t o1, float *scratch);
void sp_quantize_avx2(const float *x, int64_t n, void *out); /* every x86 level's activations */
void sp_attention_avx2(const sp_attention_args *a);
void sp_attention_avx512(const sp_attention_args *a);
void sp_activation_avx2(sp_activation kind, const float *x, const float *up, float *out, int64_t n);
/* x86-64 with AVX-512 F/BW/VL/VNNI as well (matmul_avx512vnni.c). */
void sp_matmul_avx512vnni(const sp_weight *w, const float *x, int64_t x_stride, const void *xq, int64_t n_tokens, float *y,
                          int64_t y_stride, int64_t o0, int64_t o1, float *scratch);
/* The same, the row pairs' products in 256-bit vpdpbusd (x86_matmul_pairs.h):
 * for a 512-bit datapath of two 256-bit halves (the level of dispatch.c's
 * preferred_bf16_dot) */
void sp_matmul_avx512vnni_halves(const sp_weight *w, const float *x, int64_t x_stride, const void *xq, int64_t n_tokens, float *y,
                                 int64_t y_stride, int64_t o0, int64_t o1, float *scratch);
/* ... and AVX-512 BF16 as well, for BF16 weights (matmul_bf16.c). */
void sp_matmul_avx512bf16(const sp_weight *w, const float *x, int64_t x_stride, const void *xq, int64_t n_tokens, float *y,
                          int64_t y_stride, int64_t o0, int64_t o1, float *scratch);
/* The same, with BF16 rows through vdpbf16ps (where it issues at the
 * float FMAs' rate: dispatch.c), and the int8 types through
 * sp_matmul_avx512vnni_halves */
void sp_matmul_avx512bf16_dot(const sp_weight *w, const float *x, int64_t x_stride, const void *xq, int64_t n_tokens, float *y,
                              int64_t y_stride, int64_t o0, int64_t o1, float *scratch);
/* ... and AMX-INT8 and AMX-BF16 as well: batches of Q4_0, Q8_0, IQ4_NL, Q4_K and Q6_K weights in int8 tiles
 * (matmul_amx.c); its prompt matmul sends F16 and BF16 weights to bfloat16 tiles at every batch size (matmul_amx_float.c). */
void sp_matmul_amx(const sp_weight *w, const float *x, int64_t x_stride, const void *xq, int64_t n_tokens, float *y, int64_t y_stride,
                   int64_t o0, int64_t o1, float *scratch);
void sp_matmul_amx_prompt(const sp_weight *w, const float *x, int64_t x_stride, const void *xq, int64_t n_tokens, float *y,
                          int64_t y_stride, int64_t o0, int64_t o1, float *scratch);
void sp_matmul_amx_float(const sp_weight *w, const float *x, int64_t x_stride, const void *staged, int64_t n_tokens, float *y,
                         int64_t y_stride, int64_t o0, int64_t o1, float *scratch);
size_t sp_amx_float_staged_bytes(sprout_type type, int64_t n_in, int64_t n_tokens);
void sp_amx_float_stage(const sp_weight *w, const float *x, int64_t x_stride, int64_t n_tokens, int64_t k0, int64_t k1, void *staged);
/* The table for a level ("generic", "avx2", "avx512", "avx512bf16", "amx", "neon", "i8mm"), or NULL where this CPU or
 * build has none: for tests that compare every level present. */
const sp_kernels *sp_kernels_for_level(const char *level);

#endif
