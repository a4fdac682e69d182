/* sprout/lora_export.h: merging adapters into a model file.
 * Part of <sprout.h>, whose conventions hold here. */
#ifndef SPROUT_API_LORA_EXPORT_H
#define SPROUT_API_LORA_EXPORT_H

#include "types.h"

SPROUT_BEGIN_DECLS

/* ---------------------------------------------------------------------------
 * Merging adapters into a model (llama.cpp's llama-export-lora)
 *
 * Writes a copy of a base model in which every weight W an adapter targets
 * becomes W + sum_i s_i * B_i A_i (s_i as at run time: scale * alpha / rank,
 * or scale without alpha). The adapters are loaded against the base model
 * and checked as sprout_lora_load checks them. Every other tensor and all
 * metadata are copied unchanged. A merged tensor gets output_type, or by
 * default what llama-export-lora gives it: F32 stays F32, any other type
 * (F16, BF16, quantized) becomes F16. Rows that do not divide into the
 * type's blocks fall back as sprout_quantize_model's do (wanted_type then
 * differs from to_type). The output appears only when it is complete.
 * ------------------------------------------------------------------------- */

/* Passed to the progress callback once per tensor, before it is written. */
typedef struct sprout_lora_export_progress {
    int64_t tensor_index; /* 0-based, in file order */
    int64_t n_tensors;
    const char *tensor_name;
    sprout_type from_type, to_type;
    sprout_type wanted_type; /* differs from to_type when the rows do not fit its blocks */
    int32_t n_merged;        /* adapters merged into this tensor; 0: copied byte for byte */
} sprout_lora_export_progress;

/* Return false to cancel: the call then fails with SPROUT_ERR_CANCELLED. */
typedef bool (*sprout_lora_export_progress_fn)(void *user, const sprout_lora_export_progress *progress);

typedef struct sprout_lora_export_params {
    size_t struct_size;               /* sizeof(sprout_lora_export_params) */
    const char *base_path;            /* the model (one GGUF or the first part of a split set) */
    const char *const *adapter_paths; /* n_adapters LoRA GGUFs */
    const float *scales;              /* n_adapters scales; NULL: 1 for each */
    size_t n_adapters;                /* at least 1 */
    const char *output_path;
    int32_t output_type;              /* a sprout_type for the merged tensors, or -1 for the default rule */
    int32_t n_threads;                /* <= 0: one per core; at most SPROUT_MAX_THREADS */
    sprout_lora_export_progress_fn progress;
    void *user;
} sprout_lora_export_params;

/* Zero paths, no adapters, output_type -1, all cores. */
void sprout_lora_export_params_default(sprout_lora_export_params *params);

/* Errors: SPROUT_ERR_INVALID_ARGUMENT for missing paths, a non-finite
 * scale, a type sprout cannot write or an output that is one of the inputs;
 * the model's and the adapters' loading errors (an adapter of another model:
 * SPROUT_ERR_FORMAT naming the file); SPROUT_ERR_IO for a failed write;
 * SPROUT_ERR_CANCELLED when the progress callback says stop. */
sprout_status sprout_lora_export(const sprout_lora_export_params *params);

SPROUT_END_DECLS

#endif /* SPROUT_API_LORA_EXPORT_H */
