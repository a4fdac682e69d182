/* sprout_lora_export: merges LoRA adapters into a copy of their base model,
 * as llama.cpp's llama-export-lora does. The adapters are loaded (and so
 * checked) against the loaded base model; every weight one of them targets
 * is rewritten row by row, W'[o] = W[o] + sum_i s_i sum_k B_i[o][k] A_i[k],
 * row-parallel; a mixture of experts' 3-D expert tensor slice by slice,
 * each expert's rows with that expert's pair (as llama-export-lora merges
 * a 3-D tensor); every other tensor and the metadata are copied. The output
 * streams through the GGUF writer, one tensor in memory at a time, and
 * appears only when it is complete. */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/cpu.h"
#include "core/error.h"
#include "core/mapped_file.h"
#include "gguf/gguf_writer.h"
#include "model/lora.h"
#include "model/model.h"
#include "quant/quant.h"
#include "quantize/recipe.h"
#include "runtime/threadpool.h"
#include "sprout.h"

/* Elements a thread merges per grab of rows. */
#define CHUNK_ELEMENTS (int64_t)16384

typedef struct tensor_plan {
    int64_t pair; /* index in sprout_lora.pairs of its (first slice's) pair, or -1: copied */
    int64_t n_slices; /* an expert tensor's experts, each with its pair; 1 for a 2-D weight */
    int32_t n_merged;
    sprout_type from, wanted, to;
    int64_t ne0, n_rows, slice_rows; /* n_rows: every slice's */
    uint64_t out_row; /* bytes of an output row */
} tensor_plan;

/* One adapter's term of the tensor being merged: per slice e, A_e
 * [r][ne0] and B_e [slice_rows][r] decoded to floats (every A_e, then
 * every B_e), and its s. */
typedef struct merge_term {
    const float *a, *b;
    int64_t r;
    float s;
} merge_term;

typedef struct export_job {
    const sprout_lora_export_params *p;
    const sprout_gguf *in;
    sprout_lora **loras;
    size_t n_loras;
    tensor_plan *plan;
    int64_t n_tensors;
    sp_threadpool *pool;
    float *scratch;          /* per thread: a row and its delta, 2 * scratch_row floats */
    int64_t scratch_row;
    float *halves;           /* the decoded pairs of the tensor being merged */
    merge_term *terms;
    size_t n_terms;
    /* the tensor being merged */
    const tensor_plan *tp;
    const char *src;
    char *dst;
    uint64_t in_row;
    int64_t rows_per_chunk;
    _Atomic int64_t next_row;
} export_job;

void sprout_lora_export_params_default(sprout_lora_export_params *p) {
    memset(p, 0, sizeof *p);
    p->struct_size = sizeof *p;
    p->output_type = -1;
}

/* Rows of the tensor being merged, grabbed a chunk at a time: each decoded,
 * given every adapter's term (summed apart, then scaled and added, so the
 * small terms are not rounded away against W one product at a time) and
 * encoded in the output type. */
static void merge_rows(void *ctx, int ith, int nth) {
    (void)nth;
    export_job *job = ctx;
    const tensor_plan *tp = job->tp;
    const int64_t ne0 = tp->ne0;
    float *row = job->scratch + (int64_t)ith * 2 * job->scratch_row, *delta = row + job->scratch_row;
    const sp_dequantize_fn decode = sp_type_traits_of(tp->from)->dequantize;
    const sp_quantize_fn encode = sp_type_traits_of(tp->to)->quantize_ref;
    for (;;) {
        const int64_t r0 = atomic_fetch_add_explicit(&job->next_row, job->rows_per_chunk, memory_order_relaxed);
        if (r0 >= tp->n_rows) return;
        const int64_t r1 = r0 + job->rows_per_chunk < tp->n_rows ? r0 + job->rows_per_chunk : tp->n_rows;
        for (int64_t o = r0; o < r1; o++) {
            const int64_t e = o / tp->slice_rows, oe = o % tp->slice_rows;
            decode(job->src + (uint64_t)o * job->in_row, row, ne0);
            for (size_t t = 0; t < job->n_terms; t++) {
                const merge_term *m = &job->terms[t];
                const float *a_e = m->a + e * m->r * ne0, *b_row = m->b + (e * tp->slice_rows + oe) * m->r;
                memset(delta, 0, (size_t)ne0 * sizeof *delta);
                for (int64_t k = 0; k < m->r; k++) {
                    const float c = b_row[k], *a = a_e + k * ne0;
                    for (int64_t i = 0; i < ne0; i++) delta[i] += c * a[i];
                }
                for (int64_t i = 0; i < ne0; i++) row[i] += m->s * delta[i];
            }
            encode(row, job->dst + (uint64_t)o * tp->out_row, ne0);
        }
    }
}

/* A weight of n_out rows of n_in as floats (rows decoded one at a time). */
static void decode_weight(const sp_weight *w, float *out) {
    const sp_dequantize_fn decode = sp_type_traits_of(w->type)->dequantize;
    for (int64_t o = 0; o < w->n_out; o++) decode(w->data + (size_t)o * w->row_bytes, out + o * w->n_in, w->n_in);
}

/* Decodes every adapter's pairs for plan tp's slices into job->halves
 * (an adapter has every expert's pair of a tensor or none, all of one
 * rank). */
static void gather_terms(export_job *job, const tensor_plan *tp) {
    float *next = job->halves;
    job->n_terms = 0;
    for (size_t i = 0; i < job->n_loras; i++) {
        const sp_lora_pair *pairs = &job->loras[i]->pairs[tp->pair];
        if (!pairs[0].a.data) continue;
        const int64_t r = pairs[0].a.n_out;
        float *a = next, *b = next + tp->n_slices * r * tp->ne0;
        for (int64_t e = 0; e < tp->n_slices; e++) {
            decode_weight(&pairs[e].a, a + e * r * tp->ne0);
            decode_weight(&pairs[e].b, b + e * tp->slice_rows * r);
        }
        job->terms[job->n_terms++] = (merge_term){.a = a, .b = b, .r = r,
                                                  .s = (job->p->scales ? job->p->scales[i] : 1.f) * pairs[0].alpha_over_rank};
        next += r * (tp->n_slices * tp->ne0 + tp->n_rows);
    }
}

static sprout_status fill_tensor(void *user, int64_t index, void *dst, uint64_t bytes) {
    export_job *job = user;
    const tensor_plan *tp = &job->plan[index];
    const sprout_lora_export_params *p = job->p;
    if (p->progress) {
        const sprout_lora_export_progress progress = {
            .tensor_index = index, .n_tensors = job->n_tensors, .tensor_name = sprout_gguf_tensor_name(job->in, index),
            .from_type = tp->from, .to_type = tp->to, .wanted_type = tp->wanted, .n_merged = tp->n_merged,
        };
        if (!p->progress(p->user, &progress)) return sp_fail(SPROUT_ERR_CANCELLED, "export-lora cancelled");
    }
    const char *src = sprout_gguf_tensor_data(job->in, index);
    if (tp->pair < 0) {
        if (bytes != sprout_gguf_tensor_bytes(job->in, index))
            return sp_fail(SPROUT_ERR_INTERNAL, "tensor %lld: size mismatch", (long long)index);
        memcpy(dst, src, bytes);
        return SPROUT_OK;
    }
    if (bytes != tp->out_row * (uint64_t)tp->n_rows) return sp_fail(SPROUT_ERR_INTERNAL, "tensor %lld: size mismatch", (long long)index);
    gather_terms(job, tp);
    job->tp = tp;
    job->src = src;
    job->dst = dst;
    job->in_row = sprout_gguf_tensor_bytes(job->in, index) / (uint64_t)tp->n_rows;
    job->rows_per_chunk = tp->ne0 >= CHUNK_ELEMENTS ? 1 : CHUNK_ELEMENTS / tp->ne0;
    atomic_store_explicit(&job->next_row, 0, memory_order_relaxed);
    sp_threadpool_run(job->pool, merge_rows, job);
    return SPROUT_OK;
}

static sprout_status check_params(const sprout_lora_export_params *p) {
    if (!p) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "export-lora: NULL params");
    if (p->struct_size != sizeof *p)
        return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "export-lora: params.struct_size is %zu, expected %zu", p->struct_size, sizeof *p);
    if (!p->base_path || !p->output_path) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "export-lora: no base model or output path");
    if (p->n_adapters == 0 || !p->adapter_paths) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "export-lora: no adapter");
    if (p->output_type != -1 && (!sprout_type_is_known(p->output_type) || !sp_type_traits_of(p->output_type)->quantize_ref))
        return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "export-lora: cannot write tensor type %d", (int)p->output_type);
    if (sp_same_file(p->base_path, p->output_path))
        return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "export-lora: the output is the base model (%s)", p->output_path);
    for (size_t i = 0; i < p->n_adapters; i++) {
        if (!p->adapter_paths[i]) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "export-lora: adapter %zu has no path", i);
        if (p->scales && !isfinite(p->scales[i]))
            return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "export-lora: adapter %zu's scale is not finite", i);
        if (sp_same_file(p->adapter_paths[i], p->output_path))
            return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "export-lora: the output is an adapter (%s)", p->output_path);
    }
    return SPROUT_OK;
}

/* Tensor `name`'s merge, if an adapter has a pair for it: pairs pair ..
 * pair + n_slices - 1 of each adapter, slice e's on the tensor's slice e.
 * *most_halves grows to the floats its decoded pairs take. */
static sprout_status plan_merge(export_job *job, const char *name, int64_t pair, int64_t n_slices, int64_t *most_halves) {
    int64_t halves = 0, n_merged = 0, n_out = 0;
    for (size_t a = 0; a < job->n_loras; a++) {
        const sp_lora_pair *p = &job->loras[a]->pairs[pair];
        if (!p->a.data) continue;
        n_merged++;
        n_out = p->b.n_out;
        halves += n_slices * p->a.n_out * (p->a.n_in + p->b.n_out);
    }
    if (!n_merged) return SPROUT_OK;
    const int64_t i = sprout_gguf_find_tensor(job->in, name);
    if (i < 0) return sp_fail(SPROUT_ERR_INTERNAL, "export-lora: no tensor '%s'", name);
    tensor_plan *tp = &job->plan[i];
    if (tp->n_rows != n_slices * n_out) return sp_fail(SPROUT_ERR_INTERNAL, "export-lora: tensor '%s' is not %lld slices", name, (long long)n_slices);
    tp->pair = pair;
    tp->n_slices = n_slices;
    tp->slice_rows = n_out;
    tp->n_merged = (int32_t)n_merged;
    /* llama-export-lora's get_out_tensor_type: F32 stays, all else F16 */
    tp->wanted = job->p->output_type >= 0 ? (sprout_type)job->p->output_type
                                           : tp->from == SPROUT_TYPE_F32 ? SPROUT_TYPE_F32 : SPROUT_TYPE_F16;
    tp->to = sp_type_fitting_rows(tp->wanted, tp->ne0);
    if (!sp_type_traits_of(tp->from)->dequantize || !sp_type_row_bytes(tp->to, tp->ne0, &tp->out_row))
        return sp_fail(SPROUT_ERR_UNSUPPORTED, "tensor '%s': cannot convert from %s", name, sprout_type_name(tp->from));
    if (halves > *most_halves) *most_halves = halves;
    if (tp->ne0 > job->scratch_row) job->scratch_row = tp->ne0;
    return SPROUT_OK;
}

/* Every tensor's fate: which weight or expert tensor an adapter changes
 * and its types. Sizes job->halves, job->terms and the scratch rows for
 * the largest merge. */
static sprout_status plan_tensors(export_job *job, const sprout_model *m) {
    const sprout_gguf *in = job->in;
    int64_t most_halves = 0;
    for (int64_t i = 0; i < job->n_tensors; i++) {
        tensor_plan *tp = &job->plan[i];
        tp->pair = -1;
        tp->from = tp->wanted = tp->to = sprout_gguf_tensor_type(in, i);
        tp->ne0 = sprout_gguf_tensor_dim(in, i, 0);
        tp->n_rows = tp->ne0 > 0 ? sprout_gguf_tensor_elements(in, i) / tp->ne0 : 0;
    }
    char name[96];
    sprout_status st = SPROUT_OK;
    for (int64_t k = 0; st == SPROUT_OK && k < sp_model_weight_count(m); k++) {
        sp_model_weight_name(k, name, sizeof name);
        st = plan_merge(job, name, k, 1, &most_halves);
    }
    for (int32_t il = 0; m->hp.n_expert > 0 && il < m->hp.n_layer; il++) /* the adapters have room for experts' pairs only then */
        for (int kind = 0; st == SPROUT_OK && kind < SP_LORA_EXPERT_KINDS; kind++) {
            sp_lora_expert_name(il, (sp_lora_experts)kind, name, sizeof name);
            st = plan_merge(job, name, sp_lora_expert_index(m, il, (sp_lora_experts)kind, 0), m->hp.n_expert, &most_halves);
        }
    if (st != SPROUT_OK) return st;
    const int n_threads = sp_threadpool_size(job->pool);
    job->halves = malloc((size_t)(most_halves > 0 ? most_halves : 1) * sizeof(float));
    job->terms = calloc(job->n_loras, sizeof *job->terms);
    job->scratch = malloc((size_t)n_threads * 2 * (size_t)(job->scratch_row > 0 ? job->scratch_row : 1) * sizeof(float));
    if (!job->halves || !job->terms || !job->scratch) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "export-lora: out of memory");
    return SPROUT_OK;
}

sprout_status sprout_lora_export(const sprout_lora_export_params *params) {
    sprout_status st = check_params(params);
    if (st != SPROUT_OK) return st;
    export_job job = {.p = params, .n_loras = params->n_adapters};
    sprout_model *m = NULL;
    const sprout_model_params mp = {.struct_size = sizeof mp, .n_threads = params->n_threads > 0 ? params->n_threads : 0};
    if ((st = sprout_model_load(params->base_path, &mp, &m)) != SPROUT_OK) return st;
    job.in = m->gguf;
    job.n_tensors = sprout_gguf_tensor_count(job.in);
    job.loras = calloc(params->n_adapters, sizeof *job.loras);
    job.plan = calloc(job.n_tensors > 0 ? (size_t)job.n_tensors : 1, sizeof *job.plan);
    sp_gguf_writer *w = sp_gguf_writer_new();
    if (!job.loras || !job.plan || !w) st = sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "export-lora: out of memory");
    for (size_t i = 0; st == SPROUT_OK && i < params->n_adapters; i++)
        st = sprout_lora_load(m, params->adapter_paths[i], &job.loras[i]);
    if (st == SPROUT_OK) st = sp_threadpool_create(params->n_threads > 0 ? params->n_threads : sp_cpu_count(), &job.pool);
    if (st == SPROUT_OK) st = plan_tensors(&job, m);
    if (st == SPROUT_OK) st = sp_gguf_writer_copy_metadata(w, job.in);
    for (int64_t i = 0; st == SPROUT_OK && i < job.n_tensors; i++) st = sp_gguf_writer_add_tensor_like(w, job.in, i, job.plan[i].to, NULL);
    if (st == SPROUT_OK) {
        const sp_gguf_write_options opts = {.fill = fill_tensor, .fill_user = &job};
        st = sp_gguf_writer_write(w, params->output_path, &opts, NULL);
    }
    sp_gguf_writer_free(w);
    if (job.pool) sp_threadpool_free(job.pool);
    free(job.scratch);
    free(job.terms);
    free(job.halves);
    free(job.plan);
    for (size_t i = 0; job.loras && i < params->n_adapters; i++) sprout_lora_free(job.loras[i]);
    free(job.loras);
    sprout_model_free(m);
    return st;
}
