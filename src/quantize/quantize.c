/* sprout_quantize_model: plan every tensor's type, then stream the output
 * through the GGUF writer, converting each tensor row-parallel in slabs so
 * that memory stays bounded by one output tensor and progress (and
 * cancellation) come at a steady pace. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/cpu.h"
#include "core/error.h"
#include "core/mapped_file.h"
#include "gguf/gguf_writer.h"
#include "quant/quant.h"
#include "quantize/imatrix.h"
#include "quantize/recipe.h"
#include "runtime/threadpool.h"
#include "sprout.h"

/* Elements per parallel slab: large enough to keep both cores busy, small
 * enough that progress and cancellation are never far apart. */
#define SLAB_ELEMENTS (int64_t)(8 << 20)
/* Elements a thread converts per grab of rows. */
#define CHUNK_ELEMENTS (int64_t)16384

typedef struct tensor_plan {
    sprout_type from, to;
    bool convert;
    int64_t ne0, n_rows;
    int64_t rows_per_matrix; /* ne1: rows before the next expert's matrix */
    uint64_t in_bytes, out_bytes;
    const float *importance; /* ne0 per matrix, or NULL */
} tensor_plan;

typedef struct quantize_job {
    const sprout_gguf *in;
    const sprout_quantize_params *params;
    sp_imatrix *imatrix;
    tensor_plan *plan;
    int64_t n_tensors;
    sp_threadpool *pool;
    float **scratch; /* per thread, CHUNK_ELEMENTS or one row, whichever is larger */
    uint64_t bytes_read, bytes_total, bytes_written;
    /* the slab being converted */
    const char *src;
    char *dst;
    const tensor_plan *tp;
    int64_t rows_per_chunk, slab_end;
    _Atomic int64_t next_row;
} quantize_job;

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void sprout_quantize_params_default(sprout_quantize_params *p) {
    memset(p, 0, sizeof *p);
    p->struct_size = sizeof *p;
    p->file_type = SPROUT_FTYPE_Q4_K_M;
    p->output_type = -1;
    p->token_embedding_type = -1;
}

static void convert_rows(void *ctx, int ith, int nth) {
    (void)nth;
    quantize_job *job = ctx;
    const tensor_plan *tp = job->tp;
    const sp_type_traits *from = sp_type_traits_of(tp->from), *to = sp_type_traits_of(tp->to);
    const uint64_t in_row = tp->in_bytes / (uint64_t)tp->n_rows, out_row = tp->out_bytes / (uint64_t)tp->n_rows;
    for (;;) {
        const int64_t r0 = atomic_fetch_add_explicit(&job->next_row, job->rows_per_chunk, memory_order_relaxed);
        if (r0 >= job->slab_end) return;
        const int64_t rows = r0 + job->rows_per_chunk > job->slab_end ? job->slab_end - r0 : job->rows_per_chunk;
        const int64_t n = rows * tp->ne0;
        const void *src = job->src + (uint64_t)r0 * in_row;
        const float *values = src;
        if (tp->from != SPROUT_TYPE_F32) {
            from->dequantize(src, job->scratch[ith], n);
            values = job->scratch[ith];
        }
        if (!tp->importance) {
            to->quantize_ref(values, job->dst + (uint64_t)r0 * out_row, n);
            continue;
        }
        for (int64_t r = r0; r < r0 + rows; r++) /* each row with its matrix's importance */
            to->quantize_weighted(values + (r - r0) * tp->ne0, job->dst + (uint64_t)r * out_row, tp->ne0,
                                  tp->importance + r / tp->rows_per_matrix * tp->ne0);
    }
}

static bool report_progress(quantize_job *job, int64_t index) {
    const sprout_quantize_params *p = job->params;
    if (!p->progress) return true;
    const sprout_quantize_progress progress = {
        .tensor_index = index,
        .n_tensors = job->n_tensors,
        .tensor_name = sprout_gguf_tensor_name(job->in, index),
        .from_type = job->plan[index].from,
        .to_type = job->plan[index].to,
        .bytes_read = job->bytes_read,
        .bytes_total = job->bytes_total,
        .bytes_written = job->bytes_written,
    };
    return p->progress(p->user, &progress);
}

static sprout_status fill_tensor(void *user, int64_t index, void *dst, uint64_t bytes) {
    quantize_job *job = user;
    const tensor_plan *tp = &job->plan[index];
    const char *src = sprout_gguf_tensor_data(job->in, index);
    if (bytes != tp->out_bytes) return sp_fail(SPROUT_ERR_INTERNAL, "tensor %lld: size mismatch", (long long)index);
    const int64_t slab_rows = tp->ne0 >= SLAB_ELEMENTS ? 1 : SLAB_ELEMENTS / tp->ne0;
    const uint64_t in_row = tp->in_bytes / (uint64_t)tp->n_rows, out_row = tp->out_bytes / (uint64_t)tp->n_rows;
    for (int64_t r = 0; r < tp->n_rows; r += slab_rows) {
        const int64_t end = r + slab_rows < tp->n_rows ? r + slab_rows : tp->n_rows;
        if (!tp->convert) {
            memcpy((char *)dst + (uint64_t)r * in_row, src + (uint64_t)r * in_row, (uint64_t)(end - r) * in_row);
        } else {
            job->src = src;
            job->dst = dst;
            job->tp = tp;
            job->rows_per_chunk = tp->ne0 >= CHUNK_ELEMENTS ? 1 : CHUNK_ELEMENTS / tp->ne0;
            job->slab_end = end;
            atomic_store_explicit(&job->next_row, r, memory_order_relaxed);
            sp_threadpool_run(job->pool, convert_rows, job);
        }
        job->bytes_read += (uint64_t)(end - r) * in_row;
        job->bytes_written += (uint64_t)(end - r) * out_row;
        if (!report_progress(job, index)) return sp_fail(SPROUT_ERR_CANCELLED, "quantization cancelled");
    }
    return SPROUT_OK;
}

static int metadata_int(const sprout_gguf *in, const char *arch, size_t arch_len, const char *suffix, int fallback) {
    char key[160];
    snprintf(key, sizeof key, "%.*s.%s", (int)(arch_len < 64 ? arch_len : 64), arch, suffix);
    uint32_t v;
    return sprout_gguf_get_u32(in, key, &v) == SPROUT_OK && v > 0 && v < (1u << 30) ? (int)v : fallback;
}

static sprout_status check_params(const char *in_path, const char *out_path, const sprout_quantize_params *p) {
    if (!in_path || !out_path || !p) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "quantize: missing argument");
    if (p->struct_size != sizeof *p)
        return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "quantize: params.struct_size is %zu, expected %zu", p->struct_size,
                       sizeof *p);
    if (sp_file_type_base(p->file_type) == SPROUT_TYPE_COUNT)
        return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "quantize: file type %d is not one sprout can produce", (int)p->file_type);
    const int32_t overrides[2] = {p->output_type, p->token_embedding_type};
    for (int i = 0; i < 2; i++)
        if (overrides[i] != -1 &&
            (!sprout_type_is_known(overrides[i]) ||
             !(sp_type_traits_of(overrides[i])->quantize_ref || (p->imatrix_path && sp_type_traits_of(overrides[i])->quantize_weighted))))
            return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "quantize: cannot write tensor type %d", (int)overrides[i]);
    if (sp_same_file(in_path, out_path))
        return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "quantize: input and output are the same file (%s)", out_path);
    return SPROUT_OK;
}

/* Finds a tensor's importance, where its type uses one, and refuses what
 * llama-quantize refuses: a type that needs importance without it, and an
 * entry whose size is not the tensor's ne0 per matrix. */
static sprout_status plan_importance(const sprout_gguf *in, int64_t i, const sp_imatrix *imatrix, const char *imatrix_path,
                                     sp_tensor_role role, tensor_plan *tp) {
    const char *name = sprout_gguf_tensor_name(in, i);
    const sp_type_traits *to = sp_type_traits_of(tp->to);
    const bool needs = tp->convert && (sp_recipe_needs_imatrix(role, tp->to) || !to->quantize_ref);
    int64_t n = 0;
    const float *importance = imatrix && tp->convert && to->quantize_weighted ? sp_imatrix_find(imatrix, name, &n) : NULL;
    const int64_t matrices = tp->n_rows / tp->rows_per_matrix;
    if (importance && n != tp->ne0 * matrices) {
        if (role == SP_ROLE_TOKEN_EMBD) importance = NULL; /* llama-quantize ignores it there too */
        else
            return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "%s: '%s' has %lld values, the tensor needs %lld (%lld x %lld)",
                           imatrix_path, name, (long long)n, (long long)(tp->ne0 * matrices), (long long)tp->ne0,
                           (long long)matrices);
    }
    if (needs && !importance) {
        if (!imatrix)
            return sp_fail(SPROUT_ERR_INVALID_ARGUMENT,
                           "tensor '%s': %s needs an importance matrix: pass --imatrix FILE (made by llama-imatrix)", name,
                           sprout_type_name(tp->to));
        return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "tensor '%s': %s needs importance, and %s has none for it", name,
                       sprout_type_name(tp->to), imatrix_path);
    }
    tp->importance = importance;
    return SPROUT_OK;
}

static int metadata_experts(const sprout_gguf *in, const char *arch, size_t arch_len) {
    char key[160];
    snprintf(key, sizeof key, "%.*s.expert_count", (int)(arch_len < 64 ? arch_len : 64), arch);
    uint32_t v;
    return sprout_gguf_get_u32(in, key, &v) == SPROUT_OK && v < (1u << 20) ? (int)v : 0;
}

/* Decides every tensor's output type and tells the caller. */
static sprout_status plan_tensors(const sprout_gguf *in, const sprout_quantize_params *p, const sp_imatrix *imatrix,
                                  tensor_plan *plan, sprout_quantize_report *report) {
    /* metadata strings are not NUL-terminated */
    const char *arch = "";
    size_t arch_len = 0;
    if (sprout_gguf_get_str(in, "general.architecture", &arch, &arch_len) != SPROUT_OK) arch_len = 0;
    const int64_t n = sprout_gguf_tensor_count(in);
    const int n_head = metadata_int(in, arch, arch_len, "attention.head_count", 1);
    sp_recipe recipe = {
        .file_type = p->file_type,
        .falcon = arch_len == 6 && !memcmp(arch, "falcon", 6),
        .n_gqa = n_head / metadata_int(in, arch, arch_len, "attention.head_count_kv", n_head),
        .n_layer = metadata_int(in, arch, arch_len, "block_count", 0),
        .has_output = sprout_gguf_find_tensor(in, "output.weight") >= 0,
        .has_imatrix = imatrix != NULL,
        .n_expert = metadata_experts(in, arch, arch_len),
    };
    for (int64_t i = 0; i < n; i++) {
        const sp_tensor_role role = sp_tensor_role_of(sprout_gguf_tensor_name(in, i));
        recipe.n_attn_v += role == SP_ROLE_ATTN_V || role == SP_ROLE_ATTN_QKV;
    }
    const sprout_type base = sp_file_type_base(p->file_type);
    for (int64_t i = 0; i < n; i++) {
        const char *name = sprout_gguf_tensor_name(in, i);
        tensor_plan *tp = &plan[i];
        tp->from = sprout_gguf_tensor_type(in, i);
        tp->ne0 = sprout_gguf_tensor_dim(in, i, 0);
        tp->rows_per_matrix = sprout_gguf_tensor_dim(in, i, 1);
        if (tp->rows_per_matrix < 1) tp->rows_per_matrix = 1;
        const int64_t elements = sprout_gguf_tensor_elements(in, i);
        tp->n_rows = tp->ne0 > 0 ? elements / tp->ne0 : 0;
        tp->in_bytes = sprout_gguf_tensor_bytes(in, i);
        const sp_tensor_role role = sp_tensor_role_of(name);
        sprout_type wanted = tp->from;
        if (elements > 0 && sp_tensor_is_quantizable(name, sprout_gguf_tensor_n_dims(in, i)) &&
            !(p->leave_output_tensor && role == SP_ROLE_OUTPUT)) {
            if (role == SP_ROLE_TOKEN_EMBD && p->token_embedding_type >= 0) wanted = (sprout_type)p->token_embedding_type;
            else if (role == SP_ROLE_OUTPUT && p->output_type >= 0) wanted = (sprout_type)p->output_type;
            else if (sprout_type_is_quantized(base) && !p->pure) wanted = sp_recipe_choose(&recipe, role, tp->ne0);
            else wanted = base;
        }
        tp->to = sp_type_fitting_rows(wanted, tp->ne0);
        tp->convert = tp->to != tp->from;
        if (tp->convert && !sp_type_traits_of(tp->from)->dequantize)
            return sp_fail(SPROUT_ERR_UNSUPPORTED, "tensor '%s': cannot convert from %s", name, sprout_type_name(tp->from));
        if (tp->convert) {
            const sprout_status st = plan_importance(in, i, imatrix, p->imatrix_path, role, tp);
            if (st != SPROUT_OK) return st;
        }
        if (!sp_type_row_bytes(tp->to, tp->ne0, &tp->out_bytes)) tp->out_bytes = 0;
        tp->out_bytes *= (uint64_t)tp->n_rows;
        report->bytes_in += tp->in_bytes;
        report->bytes_out += tp->out_bytes;
        report->n_converted += tp->convert;
        report->n_fallback += tp->to != wanted;
        report->n_requantized += tp->convert && sprout_type_is_quantized(tp->from);
        if (p->plan) {
            const sprout_quantize_tensor_plan info = {
                .tensor_index = i, .tensor_name = name, .from_type = tp->from, .to_type = tp->to,
                .wanted_type = wanted, .converted = tp->convert,
            };
            p->plan(p->user, &info);
        }
    }
    report->n_tensors = n;
    return SPROUT_OK;
}

static sprout_status build_writer(const sprout_gguf *in, const sprout_quantize_params *p, const tensor_plan *plan,
                                  sp_gguf_writer *w) {
    sprout_status st = sp_gguf_writer_copy_metadata(w, in);
    const uint32_t file_type = (uint32_t)p->file_type, quantization_version = 2;
    if (st == SPROUT_OK) st = sp_gguf_writer_set_scalar(w, "general.file_type", SPROUT_GGUF_UINT32, &file_type);
    /* the version of the K-quant and legacy block layouts, as llama.cpp stamps it */
    if (st == SPROUT_OK)
        st = sp_gguf_writer_set_scalar(w, "general.quantization_version", SPROUT_GGUF_UINT32, &quantization_version);
    for (int64_t i = 0; st == SPROUT_OK && i < sprout_gguf_tensor_count(in); i++)
        st = sp_gguf_writer_add_tensor_like(w, in, i, plan[i].to, NULL);
    return st;
}

sprout_status sprout_quantize_model(const char *in_path, const char *out_path, const sprout_quantize_params *params,
                                    sprout_quantize_report *report) {
    const double t0 = now_seconds();
    sprout_quantize_report local = {0};
    if (!report) report = &local;
    memset(report, 0, sizeof *report);
    sprout_status st = check_params(in_path, out_path, params);
    if (st != SPROUT_OK) return st;
    sprout_gguf *in = NULL;
    if ((st = sprout_gguf_open(in_path, &in)) != SPROUT_OK) return st;
    const int64_t n = sprout_gguf_tensor_count(in);
    quantize_job job = {.in = in, .params = params, .n_tensors = n};
    sp_gguf_writer *w = sp_gguf_writer_new();
    job.plan = calloc(n > 0 ? (size_t)n : 1, sizeof *job.plan);
    const int n_threads = params->n_threads > 0 ? params->n_threads : sp_cpu_count();
    if (!w || !job.plan) st = sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "quantize: out of memory");
    if (st == SPROUT_OK && params->imatrix_path) st = sp_imatrix_load(params->imatrix_path, &job.imatrix);
    if (st == SPROUT_OK) st = plan_tensors(in, params, job.imatrix, job.plan, report);
    if (st == SPROUT_OK) st = build_writer(in, params, job.plan, w);
    if (st == SPROUT_OK) st = sp_threadpool_create(n_threads, &job.pool);
    int64_t scratch_elements = CHUNK_ELEMENTS;
    for (int64_t i = 0; job.plan && i < n; i++)
        if (job.plan[i].ne0 > scratch_elements) scratch_elements = job.plan[i].ne0;
    if (st == SPROUT_OK && !(job.scratch = calloc((size_t)n_threads, sizeof *job.scratch)))
        st = sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "quantize: out of memory");
    for (int t = 0; st == SPROUT_OK && t < n_threads; t++)
        if (!(job.scratch[t] = malloc((size_t)scratch_elements * sizeof(float))))
            st = sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "quantize: out of memory");
    job.bytes_total = report->bytes_in;
    if (st == SPROUT_OK) {
        const sp_gguf_write_options opts = {
            .split_max_bytes = params->split_max_bytes, .fill = fill_tensor, .fill_user = &job};
        st = sp_gguf_writer_write(w, out_path, &opts, &report->n_parts);
    }
    for (int t = 0; job.scratch && t < n_threads; t++) free(job.scratch[t]);
    free(job.scratch);
    if (job.pool) sp_threadpool_free(job.pool);
    free(job.plan);
    sp_imatrix_free(job.imatrix);
    sp_gguf_writer_free(w);
    sprout_gguf_close(in);
    report->seconds = now_seconds() - t0;
    return st;
}
