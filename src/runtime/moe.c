/* Mixture of experts as llama.cpp's build_moe_ffn computes it for mixtral
 * (llama), qwen2moe, qwen3moe, olmoe and deepseek2: a softmax (deepseek2:
 * or a sigmoid) over the router's logits, the n_used most probable experts
 * (deepseek2: by probability plus a selection bias, among the best groups
 * of experts), their probabilities as weights (renormalized to sum 1 and
 * scaled where the architecture says), each chosen expert's SwiGLU FFN,
 * the outputs summed with those weights; then the shared expert, gated by
 * a sigmoid (qwen2moe) or not (deepseek2). gpt-oss: the router's logits
 * biased, the n_used largest, a softmax over those alone; biases on each
 * expert's projections and its clamped SwiGLU (swiglu_oai).
 * docs/INTERNALS.md has the math per architecture.
 *
 * Batch invariance: a token's experts depend on its own logits only; its
 * rows go through sp_matmul_parts with its own batch entry (so the same
 * kernel entry as alone: prompt or not), and its experts' outputs are
 * added in the order of their index, whatever else the batch holds and
 * however its experts are grouped (expert_group). The adapters'
 * terms of an expert's projections (lora_apply.h) follow each of its
 * matmuls over the same rows, before its biases, as llama.cpp's
 * build_lora_mm_id. */
#include "runtime/moe.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/lora_apply.h"
#include "runtime/matmul.h"
#include "runtime/parallel.h"
#include "runtime/vector_ops.h"

/* llama.cpp clamps the sum of the chosen weights to the smallest normal
 * F16 before dividing by it. */
#define MOE_MIN_WEIGHT_SUM 6.103515625e-5f

/* Rows of a group of experts, one expert's after another: moe.order's
 * (token, slot) pairs [first, first + count). */
typedef struct expert_step {
    int32_t first, count;
    const sp_batch_token *layer_rows; /* the layer's batch entries */
    sp_rows act;                      /* the down projection's input, rows of `width` */
    int64_t width;
    const sp_layer *ly; /* whose experts' biases (gpt-oss) the rows take; NULL: none (the shared expert) */
} expert_step;

/* The most experts whose projections run in one group (expert_group). */
enum { MOE_GROUP_MAX_EXPERTS = 64 };

/* An expert's bias of `width` (NULL where its layer has none). */
static const float *expert_bias(const float *biases, int32_t expert, int64_t width) { return biases ? biases + expert * width : NULL; }

/* The expert of row i of a step: its pair's. */
static int32_t row_expert(const sp_context *ctx, const expert_step *s, int32_t i) {
    return ctx->moe.ids[ctx->moe.order[s->first + i]];
}

/* --- routing ------------------------------------------------------------------------------- */

/* p[0..n) = its softmax as ggml_soft_max computes it: the sum in double,
 * then its inverse as a float scale. */
static void softmax(float *p, int32_t n) {
    float max = p[0];
    for (int32_t i = 1; i < n; i++) max = p[i] > max ? p[i] : max;
    double sum = 0;
    for (int32_t i = 0; i < n; i++) sum += (double)(p[i] = expf(p[i] - max));
    const float inv = (float)(1.0 / sum);
    for (int32_t i = 0; i < n; i++) p[i] *= inv;
}

/* The index of the largest of x[0..n) (ties to the lower index). */
static int32_t arg_max(const float *x, int32_t n) {
    int32_t best = 0;
    for (int32_t i = 1; i < n; i++) best = x[i] > x[best] ? i : best;
    return best;
}

/* Group-limited routing (DeepSeek-V3, llama.cpp's build_moe_ffn): each
 * group of sel scored by the sum of its two best, and every group but the
 * n_group_used best masked out of sel. */
static void keep_best_groups(const sp_hparams *hp, float *sel) {
    const int32_t n_groups = hp->n_expert_groups, per = hp->n_expert / n_groups;
    float score[SP_MAX_EXPERTS];
    for (int32_t g = 0; g < n_groups; g++) {
        const float *x = sel + g * per;
        const int32_t first = arg_max(x, per);
        int32_t second = first == 0 ? 1 : 0;
        for (int32_t i = 0; i < per; i++) second = i != first && x[i] > x[second] ? i : second;
        score[g] = x[first] + x[second];
    }
    bool kept[SP_MAX_EXPERTS] = {false};
    for (int32_t j = 0; j < hp->n_group_used; j++) {
        const int32_t g = arg_max(score, n_groups);
        kept[g] = true;
        score[g] = -INFINITY;
    }
    for (int32_t g = 0; g < n_groups; g++)
        if (!kept[g])
            for (int32_t i = 0; i < per; i++) sel[g * per + i] = -INFINITY;
}

/* p[0..n) = the gate's probabilities from the logits in p: softmax or
 * sigmoid; gpt-oss's gating keeps the logits (its weights are softmaxed
 * after the choice). */
static void gate_probabilities(sp_moe_gating gating, float *p, int32_t n) {
    if (gating == SP_GATING_SOFTMAX) softmax(p, n);
    else if (gating == SP_GATING_SIGMOID)
        for (int32_t i = 0; i < n; i++) p[i] = 1.f / (1.f + expf(-p[i]));
}

/* Tokens [t0, t1): the gate's probabilities from the logits (plus the
 * router's bias where the layer has one); the n_used experts with the
 * largest of them (plus the selection bias where the layer has one, in
 * the best groups where experts are grouped); their probabilities as
 * weights, softmaxed among themselves (gpt-oss), renormalized and scaled
 * where the model says. */
static void route_tokens(sp_context *ctx, const void *arg, int32_t t0, int32_t t1) {
    const sp_layer *ly = arg;
    const sp_hparams *hp = &ctx->model->hp;
    const int32_t n_expert = hp->n_expert, k = hp->n_expert_used;
    sp_moe_buffers *b = &ctx->moe;
    float sel[SP_MAX_EXPERTS];
    for (int32_t t = t0; t < t1; t++) {
        float *p = b->logits + (size_t)t * (size_t)n_expert;
        sp_add_bias(p, ly->router_b, 1, n_expert, n_expert);
        gate_probabilities(hp->expert_gating, p, n_expert);
        for (int32_t i = 0; i < n_expert; i++) sel[i] = p[i] + (ly->exp_probs_b ? ly->exp_probs_b[i] : 0.f);
        if (hp->n_expert_groups > 1) keep_best_groups(hp, sel);
        int32_t *ids = b->ids + (size_t)t * (size_t)k;
        float *w = b->weights + (size_t)t * (size_t)k;
        for (int32_t j = 0; j < k; j++) {
            const int32_t best = arg_max(sel, n_expert);
            ids[j] = best;
            w[j] = p[best];
            sel[best] = -INFINITY; /* taken */
        }
        if (hp->expert_gating == SP_GATING_SOFTMAX_TOP_K) softmax(w, k);
        if (hp->expert_weights_norm) {
            double chosen = 0;
            for (int32_t j = 0; j < k; j++) chosen += (double)w[j];
            const float total = (float)chosen > MOE_MIN_WEIGHT_SUM ? (float)chosen : MOE_MIN_WEIGHT_SUM;
            for (int32_t j = 0; j < k; j++) w[j] /= total;
        }
        if (hp->expert_weights_scale != 1.f)
            for (int32_t j = 0; j < k; j++) w[j] *= hp->expert_weights_scale;
    }
}

void sp_moe_route(sp_context *ctx, const sp_layer *ly, int32_t n) {
    sp_matmul(ctx, &ly->router, &ctx->h, ctx->moe.logits, n);
    sp_for_each_token(ctx, n, 4 * (int64_t)ctx->model->hp.n_expert, route_tokens, ly);
}

/* --- the experts --------------------------------------------------------------------------- */

/* moe.order = the (token, slot) pairs t * n_used + j by expert, tokens in
 * batch order within each (a counting sort); moe.first[x] = expert x's
 * first pair, first[n_expert] = all of them. */
static void sort_by_expert(sp_context *ctx, int32_t n) {
    const int32_t n_expert = ctx->model->hp.n_expert, pairs = n * ctx->model->hp.n_expert_used;
    sp_moe_buffers *b = &ctx->moe;
    int32_t *first = b->first, *next = b->first + n_expert + 1;
    memset(first, 0, (size_t)(n_expert + 1) * sizeof *first);
    for (int32_t a = 0; a < pairs; a++) first[b->ids[a] + 1]++;
    for (int32_t x = 0; x < n_expert; x++) first[x + 1] += first[x];
    memcpy(next, first, (size_t)n_expert * sizeof *next);
    for (int32_t a = 0; a < pairs; a++) b->order[next[b->ids[a]]++] = a;
}

/* Rows [i0, i1) of a step: their tokens' h rows (and blocks) and batch
 * entries, one after another. */
static void gather_rows(sp_context *ctx, const void *arg, int32_t i0, int32_t i1) {
    const expert_step *s = arg;
    const sp_hparams *hp = &ctx->model->hp;
    const int64_t e = hp->n_embd;
    sp_moe_buffers *b = &ctx->moe;
    for (int32_t i = i0; i < i1; i++) {
        const int32_t t = b->order[s->first + i] / hp->n_expert_used;
        memcpy(b->x.f32 + i * e, ctx->h.f32 + t * e, (size_t)e * sizeof(float));
        if (b->x.blocks) memcpy(sp_rows_block_at(b->x.blocks, e, i, 0), sp_rows_block_at(ctx->h.blocks, e, t, 0), (size_t)(e / 32) * SP_ACT_BLOCK_BYTES);
        b->rows[i] = s->layer_rows[t];
    }
}

/* llama.cpp's swiglu_oai (alpha 1.702, limit 7): out = x sigmoid(alpha x)
 * (y + 1), x the gate clamped above at the limit, y the up projection
 * clamped to [-limit, limit]; out may be gate. */
static void swiglu_oai(const float *gate, const float *up, float *out, int64_t n) {
    const float alpha = 1.702f, limit = 7.f;
    for (int64_t j = 0; j < n; j++) {
        const float x = gate[j] < limit ? gate[j] : limit, y = up[j] < -limit ? -limit : up[j] > limit ? limit : up[j];
        out[j] = x / (1.f + expf(-alpha * x)) * (y + 1.f);
    }
}

/* Rows [i0, i1): the gate's and up's biases where the expert has them,
 * act(gate) * up into act (silu, or gpt-oss's swiglu_oai), quantized while
 * in cache. */
static void swiglu_rows(sp_context *ctx, const void *arg, int32_t i0, int32_t i1) {
    const expert_step *s = arg;
    for (int32_t i = i0; i < i1; i++) {
        float *g = s->act.f32 + i * s->width, *u = ctx->moe.up + i * s->width;
        if (s->ly) {
            const int32_t x = row_expert(ctx, s, i);
            sp_add_bias(g, expert_bias(s->ly->gate_exps_b, x, s->width), 1, s->width, s->width);
            sp_add_bias(u, expert_bias(s->ly->up_exps_b, x, s->width), 1, s->width, s->width);
        }
        if (ctx->model->hp.ffn_kind == SP_FFN_SWIGLU_OAI) swiglu_oai(g, u, g, s->width);
        else ctx->kernels->activation(SP_ACT_SILU, g, u, g, s->width);
        sp_rows_quantize(ctx, &s->act, s->width, i);
    }
}

/* out += w times an expert's output y (plus its bias, as llama.cpp, where
 * it has one). */
static void add_expert_output(float *out, float w, const float *y, const float *down_b, int64_t e) {
    if (down_b)
        for (int64_t j = 0; j < e; j++) out[j] += w * (y[j] + down_b[j]);
    else
        for (int64_t j = 0; j < e; j++) out[j] += w * y[j];
}

/* Tokens [t0, t1): each one's outputs of the step's experts (the step's
 * rows in moe.y), weighted: the rows in their order, which is their
 * experts' index. A token's rows are all its own thread's. */
static void scatter_tokens(sp_context *ctx, const void *arg, int32_t t0, int32_t t1) {
    const expert_step *s = arg;
    const sp_hparams *hp = &ctx->model->hp;
    const int64_t e = hp->n_embd;
    const sp_moe_buffers *b = &ctx->moe;
    for (int32_t i = 0; i < s->count; i++) {
        const int32_t pair = b->order[s->first + i], t = pair / hp->n_expert_used;
        if (t >= t0 && t < t1)
            add_expert_output(ctx->ff_out + t * e, b->weights[pair], b->y + i * e, expert_bias(s->ly->down_exps_b, b->ids[pair], e), e);
    }
}

/* The down projection's input rows for FFN width f (blocks where f divides into them). */
static sp_rows act_rows(const sp_context *ctx, int64_t f) { return (sp_rows){ctx->moe.act.f32, f % 32 == 0 ? ctx->moe.act.blocks : NULL}; }

/* Rows [first, first + count) of `rows` (each `width` wide): their floats and blocks. */
static sp_rows rows_from(const sp_rows *rows, int64_t width, int32_t first) {
    return (sp_rows){rows->f32 + first * width, rows->blocks ? sp_rows_block_at(rows->blocks, width, first, 0) : NULL};
}

/* The adapters' terms of expert x's `kind` projection over its rows
 * (batch entries from `first` in moe.rows). */
static void expert_adapters(const sp_context *ctx, int32_t il, sp_lora_experts kind, int32_t x, const sp_weight *w, int32_t first,
                            int32_t count, const float *in, float *out) {
    sp_lora_apply_expert(ctx, ctx->moe.rows + first, il, kind, x, w, in, out, count);
}

/* Experts [x0, x1), whose pairs (moe.order[first[x0] .. first[x1]), at
 * most n_batch) all fit the buffers: their rows gathered, the gate and up
 * projections of all of them in one run of the pool (sp_matmul_parts; a
 * prompt's a part at a time), the activations, the down projections, and
 * each token's outputs of these experts added. Every expert's rows go
 * through the same kernels whatever shares its group, and a token's
 * outputs are added in the order of their experts' index, group after
 * group: the numbers do not depend on how the experts were grouped. A
 * decode batch's experts make one group, where expert by expert a token's
 * eight took six runs of the pool each (OLMoE's decode gained within the
 * host's noise, bench/RESULTS.md). */
static void expert_group(sp_context *ctx, const sp_layer *ly, int32_t n, int32_t x0, int32_t x1) {
    const sp_hparams *hp = &ctx->model->hp;
    const int64_t e = hp->n_embd, f = hp->n_ff_exp;
    sp_moe_buffers *b = &ctx->moe;
    const int32_t il = (int32_t)(ly - ctx->model->layers), p0 = b->first[x0], count_all = b->first[x1] - p0;
    const expert_step s = {.first = p0, .count = count_all, .layer_rows = ctx->rows, .act = act_rows(ctx, f), .width = f, .ly = ly};
    sp_for_each_token(ctx, count_all, 2 * e, gather_rows, &s);
    sp_weight gate[MOE_GROUP_MAX_EXPERTS], up[MOE_GROUP_MAX_EXPERTS], down[MOE_GROUP_MAX_EXPERTS];
    sp_rows in[MOE_GROUP_MAX_EXPERTS], act[MOE_GROUP_MAX_EXPERTS];
    sp_matmul_part gate_up[2 * MOE_GROUP_MAX_EXPERTS], down_parts[MOE_GROUP_MAX_EXPERTS];
    int32_t expert[MOE_GROUP_MAX_EXPERTS], at[MOE_GROUP_MAX_EXPERTS], count[MOE_GROUP_MAX_EXPERTS];
    int m = 0;
    for (int32_t x = x0; x < x1; x++) {
        if (b->first[x + 1] == b->first[x]) continue; /* never read */
        at[m] = b->first[x] - p0, count[m] = b->first[x + 1] - b->first[x], expert[m] = x;
        gate[m] = sp_expert(&ly->gate_exps, x), up[m] = sp_expert(&ly->up_exps, x), down[m] = sp_expert(&ly->down_exps, x);
        in[m] = rows_from(&b->x, e, at[m]), act[m] = rows_from(&s.act, f, at[m]);
        gate_up[2 * m] = (sp_matmul_part){&gate[m], &in[m], act[m].f32, count[m], b->rows + at[m]};
        gate_up[2 * m + 1] = (sp_matmul_part){&up[m], &in[m], b->up + at[m] * f, count[m], b->rows + at[m]};
        down_parts[m] = (sp_matmul_part){&down[m], &act[m], b->y + at[m] * e, count[m], b->rows + at[m]};
        m++;
    }
    sp_matmul_parts(ctx, gate_up, 2 * m);
    for (int i = 0; i < m; i++) {
        expert_adapters(ctx, il, SP_LORA_GATE_EXPS, expert[i], &gate[i], at[i], count[i], in[i].f32, act[i].f32);
        expert_adapters(ctx, il, SP_LORA_UP_EXPS, expert[i], &up[i], at[i], count[i], in[i].f32, b->up + at[i] * f);
    }
    sp_for_each_token(ctx, count_all, 16 * f, swiglu_rows, &s);
    sp_matmul_parts(ctx, down_parts, m);
    for (int i = 0; i < m; i++)
        expert_adapters(ctx, il, SP_LORA_DOWN_EXPS, expert[i], &down[i], at[i], count[i], act[i].f32, b->y + at[i] * e);
    sp_for_each_token(ctx, n, 2 * e * hp->n_expert_used, scatter_tokens, &s);
}

void sp_moe_experts(sp_context *ctx, const sp_layer *ly, int32_t n) {
    const int32_t n_expert = ctx->model->hp.n_expert;
    const int32_t *first = ctx->moe.first;
    sort_by_expert(ctx, n);
    memset(ctx->ff_out, 0, (size_t)(n * ctx->model->hp.n_embd) * sizeof(float));
    /* as many experts a group as the buffers hold (an expert's tokens, at most n, always fit) */
    for (int32_t x0 = 0, x1; x0 < n_expert; x0 = x1) {
        int used = 0;
        for (x1 = x0; x1 < n_expert && used < MOE_GROUP_MAX_EXPERTS && first[x1 + 1] - first[x0] <= ctx->n_batch; x1++)
            used += first[x1 + 1] > first[x1];
        if (first[x1] > first[x0]) expert_group(ctx, ly, n, x0, x1);
    }
}

/* --- the shared expert (qwen2moe) ------------------------------------------------------------ */

/* Tokens [t0, t1): ff_out += sigmoid(gate logit) * the shared expert's
 * output (ungated, deepseek2: without a gate). */
static void add_shared(sp_context *ctx, const void *arg, int32_t t0, int32_t t1) {
    const sp_layer *ly = arg;
    const int64_t e = ctx->model->hp.n_embd;
    const sp_moe_buffers *b = &ctx->moe;
    for (int32_t t = t0; t < t1; t++) {
        const float g = ly->gate_inp_shexp.data ? 1.f / (1.f + expf(-b->shared_gate[t])) : 1.f, *y = b->y + t * e;
        float *out = ctx->ff_out + t * e;
        for (int64_t j = 0; j < e; j++) out[j] += y[j] * g;
    }
}

static void shared_expert(sp_context *ctx, const sp_layer *ly, int32_t n) {
    const sp_hparams *hp = &ctx->model->hp;
    const int64_t f = hp->n_ff_shexp;
    sp_moe_buffers *b = &ctx->moe;
    const expert_step s = {.act = act_rows(ctx, f), .width = f};
    const sp_matmul_part inputs[] = {{&ly->gate_shexp, &ctx->h, s.act.f32, n, NULL},
                                     {&ly->up_shexp, &ctx->h, b->up, n, NULL},
                                     {&ly->gate_inp_shexp, &ctx->h, b->shared_gate, n, NULL}};
    sp_matmul_parts(ctx, inputs, ly->gate_inp_shexp.data ? 3 : 2);
    sp_for_each_token(ctx, n, 16 * f, swiglu_rows, &s);
    sp_matmul(ctx, &ly->down_shexp, &s.act, b->y, n);
    sp_for_each_token(ctx, n, 2 * hp->n_embd, add_shared, ly);
}

void sp_moe_ffn(sp_context *ctx, const sp_layer *ly, int32_t n) {
    sp_moe_route(ctx, ly, n);
    sp_moe_experts(ctx, ly, n);
    if (ly->up_shexp.data) shared_expert(ctx, ly, n);
}
