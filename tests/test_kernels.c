/* Every kernel level this CPU has against the portable reference, on random
 * data: each weight type, row lengths from one block up, odd row counts,
 * batches of 1..9 tokens (both sides of the int8 path's limit), strided
 * inputs and outputs, and a row range that must leave other outputs alone.
 * Levels the CPU lacks are skipped with a message. */
#include "kernels/kernels.h"
#include "quant/blocks.h"
#include "quant/fp16.h"
#include "quant/quant.h"
#include "test_util.h"

static uint64_t rng = 88172645463325252ull;
static float frand(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)(rng >> 40) / (float)(1 << 24) * 2.f - 1.f;
}

/* Every type the kernels compute, walked by each check. */
static const sprout_type all_types[] = {SPROUT_TYPE_F32,  SPROUT_TYPE_F16,  SPROUT_TYPE_BF16, SPROUT_TYPE_Q8_0,   SPROUT_TYPE_Q4_0,
                                        SPROUT_TYPE_Q4_1, SPROUT_TYPE_Q5_0, SPROUT_TYPE_Q5_1, SPROUT_TYPE_Q2_K,   SPROUT_TYPE_Q3_K,
                                        SPROUT_TYPE_Q4_K, SPROUT_TYPE_Q5_K, SPROUT_TYPE_Q6_K, SPROUT_TYPE_IQ4_NL, SPROUT_TYPE_IQ4_XS,
                                        SPROUT_TYPE_MXFP4, SPROUT_TYPE_TQ2_0, SPROUT_TYPE_TQ1_0, SPROUT_TYPE_IQ3_S, SPROUT_TYPE_IQ3_XXS,
                                        SPROUT_TYPE_IQ2_S, SPROUT_TYPE_IQ2_XS, SPROUT_TYPE_IQ2_XXS, SPROUT_TYPE_IQ1_M, SPROUT_TYPE_IQ1_S};
#define N_TYPES (sizeof all_types / sizeof all_types[0])

/* The table a check names: a level's, or "amx-prompt", the amx level with
 * its matmul for prompt tokens (kernels.h) in the matmul's place, checked
 * for the types it computes apart (the rest are the amx matmul's). */
static const sp_kernels *kernels_for(const char *level) {
    if (strcmp(level, "amx-prompt")) return sp_kernels_for_level(level);
    const sp_kernels *amx = sp_kernels_for_level("amx");
    if (!amx || !amx->matmul_prompt) return NULL;
    static sp_kernels prompt;
    prompt = *amx;
    prompt.matmul = amx->matmul_prompt;
    return &prompt;
}

/* Whether a check of level passes over type: "amx-prompt" only where its
 * matmul is not the amx level's. */
static bool level_covers(const char *level, sprout_type type) {
    return strcmp(level, "amx-prompt") || sp_prompt_path_differs(sp_kernels_for_level("amx"), type);
}

/* SPROUT_TEST_QUICK=1 (set under the sanitizers) or =emulated (under an
 * emulator, 70x slower than native) drops the longest rows and contexts:
 * every code path is still walked (spans of rows, tails, group sizes, AMX's
 * token blocks), on fewer elements. Emulated, the portable level's own
 * checks run only where it is the active level (natively they always do).
 * test_quick_run (test_util.h) reads the first; this, the second. */
static bool emulated_run(void) {
    const char *v = getenv("SPROUT_TEST_QUICK");
    return v && !strcmp(v, "emulated");
}

/* The matmul checks' batch sizes: 1-6, 13 (a tile split into token groups
 * of 7 and 6), 37 and 68 (tiles of 32 and their tails); emulated only 1,
 * 2, 6 and 37 (every level's kernels also run natively at every size on
 * the host that has them). */
static int64_t next_token_count(int64_t n) {
    if (emulated_run()) return n == 1 ? 2 : n == 2 ? 6 : n + 31;
    return n < 6 ? n + 1 : n == 6 ? 13 : n == 13 ? 37 : n + 31;
}

/* Relative RMS error allowed against the portable float path: float
 * kernels only reorder sums; the int8 path also rounds the activations to
 * 8 bits per 32-element block: about 1% of a dot of random signs. */
static double bound_for(sprout_type type) {
    return sp_x86_int8_type(type) ? 2.5e-2 : 1e-5;
}

/* An IQ1_M block's half-float d, which lies in its four scale words' top
 * nibbles (byte 2k + 1 of the scales holds nibble k of d on top). */
static void set_iq1_m_d(uint8_t *blk, uint16_t d) {
    for (int k = 0; k < 4; k++) {
        uint8_t *top = blk + offsetof(sp_block_iq1_m, scales) + 2 * k + 1;
        *top = (uint8_t)((*top & 0x0F) | ((d >> (4 * k)) & 0x0F) << 4);
    }
}

/* A row of a type sprout decodes but does not write (the grid IQ formats):
 * random bytes, every super-block's half-float scale made 1/16 (IQ1_M's
 * lies in its four scale words' top nibbles). */
static void random_blocks(sprout_type type, uint8_t *row, int64_t n) {
    const size_t block_bytes = sprout_type_block_bytes(type);
    const uint16_t scale = 0x2C00;
    for (size_t i = 0; i < (size_t)(n / 256) * block_bytes; i++) row[i] = (uint8_t)(frand() * 128.f + 128.f);
    for (int64_t b = 0; b < n / 256; b++) {
        uint8_t *blk = row + (size_t)b * block_bytes;
        if (type != SPROUT_TYPE_IQ1_M) {
            memcpy(blk, &scale, sizeof scale);
            continue;
        }
        set_iq1_m_d(blk, scale);
    }
}

static void check_level(const char *level) {
    const sp_kernels *k = kernels_for(level), *ref = sp_kernels_portable();
    if (!k) {
        printf("  %-8s skipped: not supported by this CPU or build\n", level);
        return;
    }
    /* 8 and 17 (float types only): rows shorter than a vector, and one
     * vector plus a tail; 352: a partial group of 8 blocks after a whole
     * one; 2336: several spans, the last partial, and for the x86 int8
     * path more rows than its blocks of rows hold (256), so that its
     * accumulators wait between spans for rows of two blocks */
    static const int64_t lengths[] = {8, 17, 32, 96, 256, 352, 512, 768, 2048, 2336};
    const size_t n_lengths = sizeof lengths / sizeof lengths[0];
    double worst_int8 = 0, worst_float = 0;
    int cases = 0;
    for (size_t ti = 0; ti < N_TYPES; ti++) {
        const sprout_type type = all_types[ti];
        if (!level_covers(level, type)) continue;
        for (size_t li = 0; li < n_lengths; li++) {
            /* only the x86 int8 path has blocks of rows; the others (and qemu's time) are spared */
            const bool amx = !strncmp(level, "amx", 3);
            /* (and the prompt tiles' groups of 8 panels of 32 rows) */
            const bool row_blocks =
                li + 1 == n_lengths && (((!strncmp(level, "avx", 3) || amx) && bound_for(type) > 1e-4) || !strcmp(level, "amx-prompt"));
            /* amx: a tile of 32 rows, most lengths one of 16 as well, and rows left over */
            const int64_t n_in = lengths[li], n_out = row_blocks ? 300 : 7 + (int64_t)li * 2 + (amx ? 40 : 0);
            if (n_in % sprout_type_block_size(type) || (test_quick_run() && n_in > 352 && !row_blocks)) continue;
            uint64_t row_bytes = 0;
            sp_type_row_bytes(type, n_in, &row_bytes);
            uint8_t *wdata = malloc((size_t)(row_bytes * (uint64_t)n_out) + 1);
            float *row = malloc((size_t)n_in * sizeof(float));
            for (int64_t o = 0; o < n_out; o++) {
                for (int64_t i = 0; i < n_in; i++) row[i] = frand();
                if (sprout_quantize(type, row, wdata + (size_t)o * row_bytes, n_in) != SPROUT_OK)
                    random_blocks(type, wdata + (size_t)o * row_bytes, n_in);
            }
            const sp_weight w = {wdata, type, n_in, n_out, (size_t)row_bytes};
            /* emulated, the long rows' blocks take 1, 2 and 6 tokens: the prompt
             * tiles' token counts run on the short rows (a 37-token batch of
             * 2336 x 300 is most of an emulated run's time and no new path) */
            const int64_t max_tokens = emulated_run() && row_blocks ? 6 : test_quick_run() ? 37 : 70;
            for (int64_t n_tokens = 1; n_tokens <= max_tokens; n_tokens = next_token_count(n_tokens)) {
                /* quick (under the sanitizers), the long rows' blocks at 1, 6 and 37
                 * tokens: the counts between run on the short rows */
                if (test_quick_run() && !emulated_run() && row_blocks && n_tokens != 1 && n_tokens != 6 && n_tokens != 37) continue;
                const int64_t x_stride = n_in + 5, y_stride = n_out + 3;
                float *x = malloc((size_t)(x_stride * n_tokens) * sizeof(float));
                float *y = malloc((size_t)(y_stride * n_tokens) * sizeof(float));
                float *y_ref = malloc((size_t)(y_stride * n_tokens) * sizeof(float));
                float *scratch = malloc((size_t)sp_matmul_scratch_floats(n_in) * sizeof(float));
                for (int64_t i = 0; i < x_stride * n_tokens; i++) x[i] = frand();
                for (int64_t i = 0; i < y_stride * n_tokens; i++) y[i] = y_ref[i] = 12345.f;
                /* rows [1, n_out - 1): the first and last outputs must stay untouched */
                ref->matmul(&w, x, x_stride, NULL, n_tokens, y_ref, y_stride, 1, n_out - 1, scratch);
                k->matmul(&w, x, x_stride, NULL, n_tokens, y, y_stride, 1, n_out - 1, scratch);
                double err = 0, norm = 0;
                bool untouched = true;
                for (int64_t t = 0; t < n_tokens; t++) {
                    for (int64_t o = 0; o < y_stride; o++) {
                        const float a = y[t * y_stride + o], b = y_ref[t * y_stride + o];
                        if (o == 0 || o >= n_out - 1) {
                            untouched &= a == 12345.f;
                            continue;
                        }
                        err += ((double)a - b) * ((double)a - b);
                        norm += (double)b * b;
                    }
                }
                const double rel = sqrt(err / (norm > 0 ? norm : 1));
                const double bound = bound_for(type);
                if (bound > 1e-4) worst_int8 = rel > worst_int8 ? rel : worst_int8;
                else worst_float = rel > worst_float ? rel : worst_float;
                CHECK_MSG(rel <= bound && untouched, "%s %s n_in %lld n_out %lld tokens %lld: rel %.3g (bound %.3g)%s", level,
                          sprout_type_name(type), (long long)n_in, (long long)n_out, (long long)n_tokens, rel, bound,
                          untouched ? "" : ", wrote outside its rows");
                cases++;
                free(x);
                free(y);
                free(y_ref);
                free(scratch);
            }
            free(wdata);
            free(row);
        }
    }
    printf("  %-8s %d cases, worst rel RMS: float paths %.2g, int8 paths %.2g\n", level, cases, worst_float, worst_int8);
}

static float kv_value(const void *base, int kv, int64_t i) {
    return kv == SP_KV_F32 ? ((const float *)base)[i] : sp_fp16_to_fp32(((const uint16_t *)base)[i]);
}

/* softmax(q.k * scale (soft-capped)) . v written out plainly, in double;
 * with sinks, head h's sink one more logit of the softmax, with no value. */
static void naive_attention(const sp_attention_args *a, int64_t h, double *out) {
    const int64_t dim = a->head_dim_k, n = a->n_cells;
    double *p = malloc((size_t)(n ? n : 1) * sizeof *p), max = -INFINITY, sum = 0;
    for (int64_t c = 0; c < n; c++) {
        double s = 0;
        for (int64_t d = 0; d < dim; d++) s += (double)a->q[h * dim + d] * kv_value(a->keys, a->k_type, (int64_t)a->cells[c] * a->stride + d);
        s *= a->scale;
        if (a->softcap > 0) s = a->softcap * tanh(s / a->softcap);
        p[c] = s;
        max = s > max ? s : max;
    }
    if (a->sinks) max = a->sinks[h] > max ? a->sinks[h] : max;
    for (int64_t c = 0; c < n; c++) sum += p[c] = exp(p[c] - max);
    if (a->sinks) sum += exp(a->sinks[h] - max);
    for (int64_t d = 0; d < a->head_dim_v; d++) {
        double o = 0;
        for (int64_t c = 0; c < n; c++) o += p[c] * kv_value(a->values, a->v_type, (int64_t)a->cells[c] * a->stride + d);
        out[d] = o / sum;
    }
    free(p);
}

/* Attention of the query heads of one KV head (1, 2, 4, 8 and 11 of them)
 * over n cells in a shuffled order, every other cell of a wider cache (as
 * a sliding window or another sequence leaves them), against the naive
 * softmax(QK^T)V: f32 and f16 caches, head sizes with and without a tail of
 * 8, soft-capping on and off, attention sinks (gpt-oss; above and below
 * the scores) on every other case. Each head must also come out bit for
 * bit as it does alone. */
/* Heads that reach the kernels' layout edges (256: AVX-512 tiles of 32
 * cells; 40: 16-element key blocks with a tail) but need no long rows:
 * more tiles would add nothing but minutes to the emulated runs, which
 * also skip the several-token check's heads of 256, and stop every head
 * at 300 cells (each level's long contexts run natively where it exists). */
static bool layout_edge_head(int64_t dim) { return dim == 256 || dim == 40; }

static void check_attention_level(const char *level) {
    const sp_kernels *k = sp_kernels_for_level(level);
    if (!k) {
        printf("  %-8s attention skipped: not supported by this CPU or build\n", level);
        return;
    }
    static const int64_t dims[] = {64, 80, 128, 13, 256, 40};
    static const int64_t lengths[] = {1, 2, 7, 64, 65, 300, 3000};
    static const int64_t group_sizes[] = {1, 2, 4, 8, 11};
    double worst = 0;
    int cases = 0;
    for (size_t di = 0; di < sizeof dims / sizeof dims[0]; di++) {
        for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++) {
            for (int kv = 0; kv < 2; kv++) {
                for (int capped = 0; capped < 2; capped++) {
                    const int64_t dim = dims[di], cap = layout_edge_head(dim) || emulated_run() ? 300 : test_quick_run() ? 1000 : lengths[li],
                                  n = lengths[li] > cap ? cap : lengths[li], stride = dim + 3,
                                  total = 2 * n + 1;
                    if (li > 0 && lengths[li - 1] >= cap) continue; /* capped: the previous length's case again */
                    const int64_t heads = group_sizes[(di + li + (size_t)kv + (size_t)capped) % 5];
                    float *q = malloc((size_t)(heads * dim) * sizeof(float));
                    void *keys = malloc((size_t)(total * stride) * 4), *values = malloc((size_t)(total * stride) * 4);
                    int32_t *cells = malloc((size_t)n * sizeof *cells);
                    float *out = malloc((size_t)(heads * dim) * sizeof(float)), *alone = malloc((size_t)dim * sizeof(float));
                    double *want = malloc((size_t)dim * sizeof(double));
                    float sinks[11];
                    for (int64_t h = 0; h < heads; h++) sinks[h] = 8.f * frand();
                    for (int64_t i = 0; i < heads * dim; i++) q[i] = frand();
                    for (int64_t i = 0; i < total * stride; i++) {
                        const float kf = 3.f * frand(), vf = frand();
                        if (kv == SP_KV_F32) {
                            ((float *)keys)[i] = kf;
                            ((float *)values)[i] = vf;
                        } else {
                            sprout_quantize(SPROUT_TYPE_F16, &kf, (uint16_t *)keys + i, 1);
                            sprout_quantize(SPROUT_TYPE_F16, &vf, (uint16_t *)values + i, 1);
                        }
                    }
                    for (int64_t c = 0; c < n; c++) cells[c] = (int32_t)((c * 7919) % n) * 2 + 1;
                    sp_attention_args args = {.q = q, .keys = keys, .values = values, .k_type = (sp_kv_type)kv, .v_type = (sp_kv_type)kv, .stride = stride,
                                              .cells = cells, .n_cells = n, .head_dim_k = dim, .head_dim_v = dim,
                                              .scale = 1.f / sqrtf((float)dim), .softcap = capped ? 5.f : 0.f, .out = out,
                                              .n_q_heads = heads, .sinks = (di + li + (size_t)kv) % 2 ? sinks : NULL};
                    k->attention(&args);
                    for (int64_t h = 0; h < heads; h++) {
                        naive_attention(&args, h, want);
                        double err = 0, norm = 0;
                        for (int64_t d = 0; d < dim; d++) {
                            err += (out[h * dim + d] - want[d]) * (out[h * dim + d] - want[d]);
                            norm += want[d] * want[d];
                        }
                        const double rel = sqrt(err / (norm > 0 ? norm : 1));
                        worst = rel > worst ? rel : worst;
                        CHECK_MSG(rel <= 1e-5, "%s attention dim %lld n %lld kv %d softcap %d sinks %d heads %lld: head %lld rel %.3g", level,
                                  (long long)dim, (long long)n, kv, capped, args.sinks != NULL, (long long)heads, (long long)h, rel);
                        sp_attention_args one = args;
                        one.q = q + h * dim;
                        if (args.sinks) one.sinks = sinks + h;
                        one.out = alone;
                        one.n_q_heads = 1;
                        k->attention(&one);
                        CHECK_MSG(!memcmp(alone, out + h * dim, (size_t)dim * sizeof(float)), "%s attention: head %lld of %lld differs alone",
                                  level, (long long)h, (long long)heads);
                        cases++;
                    }
                    free(q);
                    free(keys);
                    free(values);
                    free(cells);
                    free(out);
                    free(alone);
                    free(want);
                }
            }
        }
    }
    printf("  %-8s attention vs naive softmax(QK^T)V: %d heads, worst rel RMS %.2g\n", level, cases, worst);
}

/* Several query tokens of one sequence in one call, as a prompt's are:
 * token i sees the first base + i cells of the list (causal), or with a
 * sliding window only the last `window` of them, ranges that begin and end
 * inside tiles and cross their edges. Every (token, head) must match the
 * naive form over its own cells, and come out bit for bit as it does in a
 * call of its own (a token's output may not depend on its batch). */
static void check_attention_tokens_level(const char *level) {
    const sp_kernels *k = sp_kernels_for_level(level);
    if (!k) return;
    static const int64_t dims[] = {64, 80, 13, 40, 256};
    static const int64_t group_sizes[] = {1, 3, 8, 11};
    static const int64_t token_counts[] = {1, 2, 5, 37};
    static const int64_t windows[] = {0, 70, 9};
    double worst = 0;
    int cases = 0;
    for (size_t di = 0; di < sizeof dims / sizeof dims[0]; di++)
        for (size_t gi = 0; gi < sizeof group_sizes / sizeof group_sizes[0] && !(test_quick_run() && dims[di] > 128); gi++)
            for (size_t ti = 0; ti < sizeof token_counts / sizeof token_counts[0]; ti++)
                for (size_t wi = 0; wi < sizeof windows / sizeof windows[0]; wi++) {
                    const int64_t dim = dims[di], heads = group_sizes[gi], base = 60 + 7 * (int64_t)di;
                    const int64_t n_tok = test_quick_run() && token_counts[ti] > 9 ? 9 : token_counts[ti];
                    const int64_t n = base + n_tok, stride = dim + 5, q_stride = heads * dim + 3, out_stride = heads * dim + 1;
                    float *q = malloc((size_t)(n_tok * q_stride) * sizeof(float));
                    float *out = malloc((size_t)(n_tok * out_stride) * sizeof(float)), *alone = malloc((size_t)(heads * dim) * sizeof(float));
                    uint16_t *keys = malloc((size_t)(n * stride) * 2), *values = malloc((size_t)(n * stride) * 2);
                    int32_t *cells = malloc((size_t)n * sizeof *cells);
                    sp_cell_range *ranges = malloc((size_t)n_tok * sizeof *ranges);
                    double *want = malloc((size_t)dim * sizeof(double));
                    float sinks[11];
                    for (int64_t h = 0; h < heads; h++) sinks[h] = 8.f * frand();
                    for (int64_t i = 0; i < n_tok * q_stride; i++) q[i] = frand();
                    for (int64_t i = 0; i < n * stride; i++) {
                        const float kf = 3.f * frand(), vf = frand();
                        sprout_quantize(SPROUT_TYPE_F16, &kf, keys + i, 1);
                        sprout_quantize(SPROUT_TYPE_F16, &vf, values + i, 1);
                    }
                    for (int64_t c = 0; c < n; c++) cells[c] = (int32_t)((c * 31) % n);
                    for (int64_t i = 0; i < n_tok; i++) {
                        const int64_t end = base + i + 1, begin = windows[wi] && end > windows[wi] ? end - windows[wi] : 0;
                        ranges[i] = (sp_cell_range){(int32_t)begin, (int32_t)end};
                    }
                    const sp_attention_args args = {.q = q, .keys = keys, .values = values, .k_type = SP_KV_F16, .v_type = SP_KV_F16, .stride = stride,
                                                    .cells = cells, .n_cells = n, .head_dim_k = dim, .head_dim_v = dim,
                                                    .scale = 1.f / sqrtf((float)dim), .softcap = windows[wi] == 70 ? 5.f : 0.f, /* as Gemma 2's sliding layers */
                                                    .out = out, .n_q_heads = heads, .n_tokens = n_tok,
                                                    .q_stride = q_stride, .out_stride = out_stride, .ranges = ranges,
                                                    .sinks = (ti + wi) % 2 ? sinks : NULL};
                    k->attention(&args);
                    for (int64_t i = 0; i < n_tok; i++) {
                        sp_attention_args one = args;
                        one.q = q + i * q_stride;
                        one.out = alone;
                        one.n_tokens = 1;
                        one.ranges = ranges + i;
                        k->attention(&one);
                        CHECK_MSG(!memcmp(alone, out + i * out_stride, (size_t)(heads * dim) * sizeof(float)),
                                  "%s attention dim %lld heads %lld: token %lld of %lld (window %lld) differs alone", level, (long long)dim,
                                  (long long)heads, (long long)i, (long long)n_tok, (long long)windows[wi]);
                        sp_attention_args mine = one; /* the naive form over the token's cells alone */
                        mine.cells = cells + ranges[i].begin;
                        mine.n_cells = ranges[i].end - ranges[i].begin;
                        mine.ranges = NULL;
                        for (int64_t h = 0; h < heads; h++) {
                            naive_attention(&mine, h, want);
                            double err = 0, norm = 0;
                            for (int64_t d = 0; d < dim; d++) {
                                const double got = out[i * out_stride + h * dim + d];
                                err += (got - want[d]) * (got - want[d]);
                                norm += want[d] * want[d];
                            }
                            const double rel = sqrt(err / (norm > 0 ? norm : 1));
                            worst = rel > worst ? rel : worst;
                            CHECK_MSG(rel <= 1e-5, "%s attention dim %lld heads %lld tokens %lld window %lld: token %lld head %lld rel %.3g",
                                      level, (long long)dim, (long long)heads, (long long)n_tok, (long long)windows[wi], (long long)i,
                                      (long long)h, rel);
                            cases++;
                        }
                    }
                    free(q);
                    free(out);
                    free(alone);
                    free(keys);
                    free(values);
                    free(cells);
                    free(ranges);
                    free(want);
                }
    printf("  %-8s attention of several tokens (causal, sliding windows, sinks): %d (token, head) pairs, worst rel RMS %.2g\n", level, cases,
           worst);
}

/* The FFN's activations (SiLU and tanh-GELU, gated or not, in place or
 * not) against the portable ones in double-checked float, over lengths
 * with and without a vector tail and inputs from tiny to overflowing. The
 * tanh form loses digits near zero for negative inputs (1 + tanh(y) with
 * tanh(y) near -1), so the bound is absolute, scaled by |x| + 1. */
static void check_activation_level(const char *level) {
    const sp_kernels *k = sp_kernels_for_level(level);
    if (!k) {
        printf("  %-8s activations skipped: not supported by this CPU or build\n", level);
        return;
    }
    static const int64_t lengths[] = {1, 7, 8, 13, 37, 5632};
    static const float special[] = {0.f, -0.f, 1e-30f, -1e-30f, 20.f, -20.f, 88.f, -88.f, 100.f, -100.f, 1e30f, -1e30f};
    double worst = 0;
    int cases = 0;
    for (int kind = 0; kind < 2; kind++)
        for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++)
            for (int gated = 0; gated < 2; gated++) {
                const int64_t n = lengths[li];
                float *x = malloc((size_t)n * sizeof(float)), *up = malloc((size_t)n * sizeof(float));
                float *ref = malloc((size_t)n * sizeof(float)), *out = malloc((size_t)n * sizeof(float));
                for (int64_t i = 0; i < n; i++) {
                    x[i] = i % 5 == 4 ? special[(size_t)i / 5 % (sizeof special / sizeof special[0])] : 12.f * frand();
                    up[i] = frand();
                }
                const sp_activation act = kind ? SP_ACT_GELU : SP_ACT_SILU;
                sp_activation_portable(act, x, gated ? up : NULL, ref, n);
                memcpy(out, x, (size_t)n * sizeof(float));
                k->activation(act, out, gated ? up : NULL, out, n); /* in place, as the forward pass calls it */
                for (int64_t i = 0; i < n; i++) {
                    const double scale = (fabs((double)x[i]) + 1) * (gated ? fabs((double)up[i]) + 1e-3 : 1);
                    const double err = fabs((double)out[i] - ref[i]) / scale;
                    worst = err > worst ? err : worst;
                    CHECK_MSG(err <= 4e-6, "%s %s n %lld: x %g gives %g, portable %g", level, kind ? "gelu" : "silu", (long long)n,
                              (double)x[i], (double)out[i], (double)ref[i]);
                    cases++;
                }
                free(x);
                free(up);
                free(ref);
                free(out);
            }
    printf("  %-8s activations vs portable: %d values, worst scaled error %.2g\n", level, cases, worst);
}

/* A token's output must not depend on what else is in the batch, nor on
 * which rows a thread takes: continuous batching promises each request the
 * output it gets alone. Nor on whether the level's quantize ran in the
 * call or before it. Bit for bit, at every level, for every type. */
static void check_batch_invariance(const char *level) {
    const sp_kernels *k = kernels_for(level);
    if (!k) return;
    /* 17: float types, a vector and a tail; 1280 (amx, its K-quants):
     * rows whose lanes take their blocks in several chunks; 2336: rows in
     * spans */
    static const int64_t lengths[] = {17, 96, 256, 352, 768, 1280, 2336};
    /* 17 and 33: AMX tiles, whole and partial; 400 (amx, the longest rows only): tokens in several blocks */
    /* 900 (amx-prompt, the longest rows): the float tiles' blocks of tokens (800 of them there) */
    static const int64_t batches[] = {2, 5, 9, 17, 33, 400, 900};
    const bool amx = !strncmp(level, "amx", 3);
    int cases = 0, differing = 0;
    for (size_t ti = 0; ti < N_TYPES; ti++) {
        const sprout_type type = all_types[ti];
        if (!level_covers(level, type)) continue;
        for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++) {
            /* amx: a tile of 32 rows, one of 16 and rows left over */
            const int64_t n_in = lengths[li], n_out = amx ? 55 : 19;
            const bool k_quant_tiles = type == SPROUT_TYPE_Q4_K || type == SPROUT_TYPE_Q6_K;
            if (n_in % sprout_type_block_size(type) || (n_in == 1280 && (!amx || !k_quant_tiles))) continue;
            uint64_t row_bytes = 0;
            sp_type_row_bytes(type, n_in, &row_bytes);
            uint8_t *wdata = malloc((size_t)(row_bytes * (uint64_t)n_out));
            float *row = malloc((size_t)n_in * sizeof(float));
            for (int64_t o = 0; o < n_out; o++) {
                for (int64_t i = 0; i < n_in; i++) row[i] = frand();
                if (sprout_quantize(type, row, wdata + (size_t)o * row_bytes, n_in) != SPROUT_OK)
                    random_blocks(type, wdata + (size_t)o * row_bytes, n_in);
            }
            const sp_weight w = {wdata, type, n_in, n_out, (size_t)row_bytes};
            float *scratch = malloc((size_t)sp_matmul_scratch_floats(n_in) * sizeof(float));
            for (size_t bi = 0; bi < sizeof batches / sizeof batches[0]; bi++) {
                const int64_t n = batches[bi];
                const bool amx_type = type == SPROUT_TYPE_Q4_0 || type == SPROUT_TYPE_Q8_0 || type == SPROUT_TYPE_IQ4_NL;
                const bool prompt_tiles = !strcmp(level, "amx-prompt");
                if (n > 33 && (!amx || n_in != 2336 || (n == 900) != prompt_tiles || (!amx_type && !prompt_tiles))) continue;
                float *x = malloc((size_t)(n_in * n) * sizeof(float));
                float *y = malloc((size_t)(n_out * n) * sizeof(float)), *alone = malloc((size_t)n_out * sizeof(float));
                for (int64_t i = 0; i < n_in * n; i++) x[i] = frand();
                k->matmul(&w, x, n_in, NULL, n, y, n_out, 0, n_out, scratch);
                if (prompt_tiles && sp_prompt_entry_type(type)) { /* staged once by the caller, two threads' tiles, as the forward pass does */
                    void *staged = aligned_alloc(64, (k->prompt_staged_bytes(type, n_in, n) + 63) / 64 * 64);
                    float *ys = malloc((size_t)(n_out * n) * sizeof(float));
                    const int64_t tiles = (n + sp_prompt_tile_tokens(n) - 1) / sp_prompt_tile_tokens(n);
                    k->stage_prompt(&w, x, n_in, n, tiles / 2, tiles, staged);
                    k->stage_prompt(&w, x, n_in, n, 0, tiles / 2, staged);
                    k->matmul(&w, x, n_in, staged, n, ys, n_out, 0, n_out, scratch);
                    const bool same = !memcmp(ys, y, (size_t)(n_out * n) * sizeof(float));
                    differing += !same;
                    CHECK_MSG(same, "%s %s n_in %lld, %lld tokens: staged tokens give other outputs", level, sprout_type_name(type),
                              (long long)n_in, (long long)n);
                    free(staged);
                    free(ys);
                } else if (k->quantize && n_in % 32 == 0) { /* quantized once by the caller, as the forward pass does */
                    char *xq = malloc((size_t)(n * n_in / 32) * SP_ACT_BLOCK_BYTES);
                    float *yq = malloc((size_t)(n_out * n) * sizeof(float));
                    for (int64_t t = 0; t < n; t++) k->quantize(x + t * n_in, n_in, xq + (size_t)(t * n_in / 32) * SP_ACT_BLOCK_BYTES);
                    k->matmul(&w, x, n_in, xq, n, yq, n_out, 0, n_out, scratch);
                    const bool same = !memcmp(yq, y, (size_t)(n_out * n) * sizeof(float));
                    differing += !same;
                    CHECK_MSG(same, "%s %s n_in %lld, %lld tokens: pre-quantized activations give other outputs", level,
                              sprout_type_name(type), (long long)n_in, (long long)n);
                    free(xq);
                    free(yq);
                }
                for (int64_t t = 0; t < n; t++) {
                    const int64_t split = 1 + (t * 7) % (n_out - 1); /* another thread's share */
                    k->matmul(&w, x + t * n_in, n_in, NULL, 1, alone, n_out, 0, split, scratch);
                    k->matmul(&w, x + t * n_in, n_in, NULL, 1, alone, n_out, split, n_out, scratch);
                    const bool same = !memcmp(alone, y + t * n_out, (size_t)n_out * sizeof(float));
                    differing += !same;
                    CHECK_MSG(same, "%s %s n_in %lld: token %lld of %lld differs from the same token alone", level, sprout_type_name(type),
                              (long long)n_in, (long long)t, (long long)n);
                    cases++;
                }
                free(x);
                free(y);
                free(alone);
            }
            free(scratch);
            free(wdata);
            free(row);
        }
    }
    printf("  %-8s batch invariance: %d tokens, %d differ from alone\n", level, cases, differing);
}

/* Every level of a row at the top of its range (bottom: at the bottom,
 * where an offset makes the largest negative ones), with unit scales and
 * no mins (Q8_0: +127 or -128), written as raw blocks. At the bottom the
 * packed scales of Q4_K, Q5_K and Q2_K are zero too (their rows sum to
 * zero); Q6_K's are set to 1. */
static void fill_extreme_row(sprout_type type, uint8_t *row, int64_t n_in, bool bottom) {
    const int64_t nb = n_in / sprout_type_block_size(type);
    memset(row, bottom ? 0x00 : 0xFF, (size_t)(nb * (int64_t)sprout_type_block_bytes(type)));
    const uint16_t one = sp_fp32_to_fp16(1.f);
    for (int64_t b = 0; b < nb; b++) switch (type) {
        case SPROUT_TYPE_Q8_0: ((sp_block_q8_0 *)row)[b].d = one, memset(((sp_block_q8_0 *)row)[b].qs, bottom ? 0x80 : 127, 32); break;
        case SPROUT_TYPE_Q4_0: ((sp_block_q4_0 *)row)[b].d = one; break;
        case SPROUT_TYPE_IQ4_NL: ((sp_block_iq4_nl *)row)[b].d = one; break; /* nibbles 15: level 113 */
        case SPROUT_TYPE_IQ4_XS: ((sp_block_iq4_xs *)row)[b].d = one; break; /* and scales 63: 31 times */
        case SPROUT_TYPE_MXFP4: /* exponent 128: scale 1; nibbles 7 (level 12) or 15 (-12) */
            ((sp_block_mxfp4 *)row)[b].e = 128, memset(((sp_block_mxfp4 *)row)[b].qs, bottom ? 0xFF : 0x77, 16);
            break;
        case SPROUT_TYPE_TQ2_0: ((sp_block_tq2_0 *)row)[b].d = one; break; /* trits 3 (decoded as 2) or 0 (-1) */
        case SPROUT_TYPE_TQ1_0: ((sp_block_tq1_0 *)row)[b].d = one; break; /* bytes 255 (every trit 2) or 0 (every trit 0) */
        case SPROUT_TYPE_IQ3_XXS: ((sp_block_iq3_xxs *)row)[b].d = one; break; /* the last grid point, all signs minus, scale 15 */
        case SPROUT_TYPE_IQ3_S: ((sp_block_iq3_s *)row)[b].d = one; break;
        case SPROUT_TYPE_IQ2_XXS: ((sp_block_iq2_xxs *)row)[b].d = one; break; /* grid point 255, all signs minus, scale 15 */
        case SPROUT_TYPE_IQ2_XS: ((sp_block_iq2_xs *)row)[b].d = one; break;
        case SPROUT_TYPE_IQ2_S: ((sp_block_iq2_s *)row)[b].d = one; break;
        case SPROUT_TYPE_IQ1_S: ((sp_block_iq1_s *)row)[b].d = one; break; /* the last point, the shift minus, scale 7 */
        case SPROUT_TYPE_IQ1_M: set_iq1_m_d(row + (size_t)b * sizeof(sp_block_iq1_m), one); break;
        case SPROUT_TYPE_Q4_1: ((sp_block_q4_1 *)row)[b].d = one, ((sp_block_q4_1 *)row)[b].m = 0; break;
        case SPROUT_TYPE_Q5_0: ((sp_block_q5_0 *)row)[b].d = one; break;
        case SPROUT_TYPE_Q5_1: ((sp_block_q5_1 *)row)[b].d = one, ((sp_block_q5_1 *)row)[b].m = 0; break;
        case SPROUT_TYPE_Q4_K: ((sp_block_q4_K *)row)[b].d = one, ((sp_block_q4_K *)row)[b].dmin = 0; break;
        case SPROUT_TYPE_Q5_K: ((sp_block_q5_K *)row)[b].d = one, ((sp_block_q5_K *)row)[b].dmin = 0; break;
        case SPROUT_TYPE_Q2_K: ((sp_block_q2_K *)row)[b].d = one, ((sp_block_q2_K *)row)[b].dmin = 0; break;
        case SPROUT_TYPE_Q3_K: ((sp_block_q3_K *)row)[b].d = one; break;
        default:
            ((sp_block_q6_K *)row)[b].d = one;
            if (bottom) memset(((sp_block_q6_K *)row)[b].scales, 1, sizeof ((sp_block_q6_K *)row)[b].scales);
            break;
        }
}

/* The largest sums the int8 paths can meet: every level at the top or the
 * bottom of its range against activations all at +127 or all at -127, so
 * that partial sums kept in 16 bits anywhere they do not fit would
 * overflow. One token and several, against the portable float path. */
static void check_extreme_sums(const char *level) {
    const sp_kernels *k = sp_kernels_for_level(level), *ref = sp_kernels_portable();
    if (!k) return;
    const int64_t n_in = 512, n_out = 3, n_tokens = 3;
    double worst = 0;
    for (size_t ti = 0; ti < N_TYPES; ti++) {
        const sprout_type type = all_types[ti];
        if (!sp_x86_int8_type(type)) continue; /* the float paths cannot overflow */
        uint64_t row_bytes = 0;
        sp_type_row_bytes(type, n_in, &row_bytes);
        uint8_t *wdata = malloc((size_t)(row_bytes * (uint64_t)n_out));
        float *x = malloc((size_t)(n_in * n_tokens) * sizeof(float));
        float *y = malloc((size_t)(n_out * n_tokens) * sizeof(float)), *y_ref = malloc((size_t)(n_out * n_tokens) * sizeof(float));
        float *scratch = malloc((size_t)sp_matmul_scratch_floats(n_in) * sizeof(float));
        for (int corner = 0; corner < 4; corner++) {
            const bool bottom = corner & 1;
            for (int64_t o = 0; o < n_out; o++) fill_extreme_row(type, wdata + (size_t)o * row_bytes, n_in, bottom);
            for (int64_t i = 0; i < n_in * n_tokens; i++) x[i] = corner & 2 ? -1.f : 1.f;
            const sp_weight w = {wdata, type, n_in, n_out, (size_t)row_bytes};
            for (int64_t n = 1; n <= n_tokens; n += n_tokens - 1) {
                ref->matmul(&w, x, n_in, NULL, n, y_ref, n_out, 0, n_out, scratch);
                k->matmul(&w, x, n_in, NULL, n, y, n_out, 0, n_out, scratch);
                for (int64_t i = 0; i < n * n_out; i++) /* rows that sum to zero must be zero */
                    worst = fmax(worst, y_ref[i] == 0.f ? fabs(y[i]) : fabs(y[i] - y_ref[i]) / fabs(y_ref[i]));
            }
        }
        free(wdata);
        free(x);
        free(y);
        free(y_ref);
        free(scratch);
    }
    /* the activations are exact (+-1 is +-127 times its scale): only float rounding differs */
    CHECK_MSG(worst <= 1e-5, "%s int8 matmul on extreme sums: off by %.3g", level, worst);
    printf("  %-8s extreme sums: worst relative error %.2g\n", level, worst);
}

/* w_lo.x_lo of an F16 weight and an F16-rounded activation: the product
 * the prompt tiles leave out (matmul_amx_float.c), w_lo the weight past
 * its float's top 16 bits, x_lo the activation past its nearest bfloat16. */
static double dropped_product(float w, float x) {
    uint32_t bits;
    memcpy(&bits, &w, sizeof bits);
    bits &= 0xFFFF0000u;
    float w_hi;
    memcpy(&w_hi, &bits, sizeof w_hi);
    return ((double)w - w_hi) * ((double)x - sp_bf16_round(x));
}

/* F16 and BF16 rows meet the activations rounded to their format
 * (kernels.h), at every level, one token or many: each output must match
 * the exact dot with the rounded activations far more closely than the one
 * with the raw ones (the prompt tiles' F16 rows: that dot less the product
 * they leave out, so that a product missing or added fails). */
static void check_rounded_activations(const char *level, sprout_type type) {
    const sp_kernels *k = kernels_for(level);
    if (!k) return;
    const bool f16 = type == SPROUT_TYPE_F16, three_products = f16 && !strcmp(level, "amx-prompt");
    static const int64_t lengths[] = {17, 256, 2336};
    /* emulated, the double-precision reference of the longest rows is most
     * of the time; its spans are walked by check_level's long rows */
    const size_t n_lengths = emulated_run() ? 2 : sizeof lengths / sizeof lengths[0];
    double worst_rounded = 0, raw_apart = 0, dropped_apart = 0;
    for (size_t li = 0; li < n_lengths; li++) {
        /* 40 rows and 37 tokens: the prompt tiles' pairs of row tiles and of
         * token tiles, and a part-filled one of each */
        const int64_t n_in = lengths[li], n_out = 40, n_tokens = 37;
        uint16_t *wdata = malloc((size_t)(n_in * n_out) * sizeof(uint16_t));
        float *x = malloc((size_t)(n_in * n_tokens) * sizeof(float)), *y = malloc((size_t)(n_out * n_tokens) * sizeof(float));
        float *scratch = malloc((size_t)sp_matmul_scratch_floats(n_in) * sizeof(float));
        for (int64_t i = 0; i < n_in * n_out; i++) wdata[i] = f16 ? sp_fp32_to_fp16(frand()) : sp_fp32_to_bf16(frand());
        for (int64_t i = 0; i < n_in * n_tokens; i++) x[i] = frand();
        const sp_weight w = {(const uint8_t *)wdata, type, n_in, n_out, (size_t)n_in * sizeof(uint16_t)};
        for (int64_t n = 1; n <= n_tokens; n += n_tokens - 1) {
            k->matmul(&w, x, n_in, NULL, n, y, n_out, 0, n_out, scratch);
            for (int64_t t = 0; t < n; t++)
                for (int64_t o = 0; o < n_out; o++) {
                    double rounded = 0, raw = 0, size = 0, dropped = 0;
                    for (int64_t i = 0; i < n_in; i++) {
                        const uint16_t wi16 = wdata[o * n_in + i];
                        const double wi = f16 ? sp_fp16_to_fp32(wi16) : sp_bf16_to_fp32(wi16), xi = x[t * n_in + i];
                        const float xr = f16 ? sp_fp16_round((float)xi) : sp_bf16_round((float)xi);
                        if (three_products) dropped += dropped_product((float)wi, xr);
                        rounded += wi * xr;
                        raw += wi * xi;
                        size += fabs(wi * xi);
                    }
                    worst_rounded = fmax(worst_rounded, fabs(y[t * n_out + o] - (rounded - dropped)) / size);
                    raw_apart = fmax(raw_apart, fabs(rounded - raw) / size);
                    dropped_apart = fmax(dropped_apart, fabs(dropped) / size);
                }
        }
        free(wdata);
        free(x);
        free(y);
        free(scratch);
    }
    /* float sums (5e-8 measured) against the raw activations 1.5e-4 to 1.9e-4 (F16), 0.9e-3 to 1.3e-3
     * (BF16): a bound between them tells them apart */
    CHECK_MSG(worst_rounded <= 1e-6 && raw_apart > 1e-5, "%s %s matmul: %.3g from the rounded activations' dot (raw ones %.3g)", level,
              sprout_type_name(type), worst_rounded, raw_apart);
    /* and the prompt tiles' F16 rows follow the dot less the dropped
     * product far more closely than the whole dot (an added product fails) */
    if (three_products)
        CHECK_MSG(worst_rounded < dropped_apart / 10, "%s F16 matmul: %.3g from the dot less w_lo.x_lo, which is %.3g from the whole one", level,
                  worst_rounded, dropped_apart);
    printf("  %-8s %s rows: %.2g from the dot with rounded activations%s (%.2g with raw ones)\n", level, sprout_type_name(type),
           worst_rounded, three_products ? " less w_lo.x_lo" : "", raw_apart);
}

int main(void) {
    printf("matmul kernels vs portable (active: %s):\n", sprout_kernels_name());
    /* "generic" is the portable reference itself: nothing to compare */
    check_level("avx2");
    check_level("avx512");
    check_level("avx512bf16");
    check_level("avx512bf16dot");
    check_level("amx");
    check_level("amx-prompt");
    check_level("neon");
    check_level("i8mm");
    /* the portable reference is checked natively; emulated, only where it is the active level */
    const bool portable_active = !emulated_run() || sp_kernels_get() == sp_kernels_portable();
    if (portable_active) {
        check_attention_level("generic");
        check_attention_tokens_level("generic");
    }
    check_attention_level("avx2");
    check_attention_level("avx512");
    check_activation_level("avx2");
    /* Batched attention and batch invariance are questions of arithmetic
     * order, which an emulator answers as the native run does: emulated,
     * where only illegal instructions and the dispatch are new, they would
     * add half a minute and no finding. */
    if (!emulated_run()) {
        check_attention_tokens_level("avx2");
        check_attention_tokens_level("avx512");
        static const char *const invariant[] = {"generic", "avx2", "avx512", "avx512bf16", "avx512bf16dot", "amx", "amx-prompt", "neon", "i8mm"};
        for (size_t i = 0; i < sizeof invariant / sizeof *invariant; i++) check_batch_invariance(invariant[i]);
    }
    static const char *const levels[] = {"generic", "avx2", "avx512", "avx512bf16", "avx512bf16dot", "amx", "amx-prompt", "neon", "i8mm"};
    for (size_t i = 0; i < sizeof levels / sizeof *levels; i++) {
        check_extreme_sums(levels[i]);
        check_rounded_activations(levels[i], SPROUT_TYPE_F16);
        check_rounded_activations(levels[i], SPROUT_TYPE_BF16);
    }
    TEST_MAIN_END();
}
