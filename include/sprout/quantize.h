/* sprout/quantize.h: converting a model file to other tensor types.
 * Part of <sprout.h>, whose conventions hold here. */
#ifndef SPROUT_API_QUANTIZE_H
#define SPROUT_API_QUANTIZE_H

#include "types.h"

SPROUT_BEGIN_DECLS

/* ---------------------------------------------------------------------------
 * Quantizing a model file
 *
 * Converts a GGUF (one file or a split model) to another tensor type or to
 * one of llama.cpp's named mixes (Q4_K_M gives the output matrix, attention V
 * and some FFN-down layers more bits), keeping its metadata, and writes it
 * atomically: a failed or cancelled run leaves nothing under the output name.
 * ------------------------------------------------------------------------- */

/* general.file_type values sprout can produce (llama.cpp's numbers). */
typedef enum sprout_file_type {
    SPROUT_FTYPE_F32 = 0,
    SPROUT_FTYPE_F16 = 1,
    SPROUT_FTYPE_Q4_0 = 2,
    SPROUT_FTYPE_Q4_1 = 3,
    SPROUT_FTYPE_Q8_0 = 7,
    SPROUT_FTYPE_Q5_0 = 8,
    SPROUT_FTYPE_Q5_1 = 9,
    SPROUT_FTYPE_Q2_K = 10,
    SPROUT_FTYPE_Q3_K_S = 11,
    SPROUT_FTYPE_Q3_K_M = 12,
    SPROUT_FTYPE_Q3_K_L = 13,
    SPROUT_FTYPE_Q4_K_S = 14,
    SPROUT_FTYPE_Q4_K_M = 15,
    SPROUT_FTYPE_Q5_K_S = 16,
    SPROUT_FTYPE_Q5_K_M = 17,
    SPROUT_FTYPE_Q6_K = 18,
    SPROUT_FTYPE_IQ2_XXS = 19, /* this and the next four, IQ2_S, IQ2_M and IQ1_M: need an importance matrix */
    SPROUT_FTYPE_IQ2_XS = 20,
    SPROUT_FTYPE_IQ3_XS = 22,
    SPROUT_FTYPE_IQ3_XXS = 23,
    SPROUT_FTYPE_IQ1_S = 24,
    SPROUT_FTYPE_IQ4_NL = 25,
    SPROUT_FTYPE_IQ3_S = 26,
    SPROUT_FTYPE_IQ3_M = 27,
    SPROUT_FTYPE_IQ2_S = 28,
    SPROUT_FTYPE_IQ2_M = 29,
    SPROUT_FTYPE_IQ4_XS = 30,
    SPROUT_FTYPE_IQ1_M = 31,
    SPROUT_FTYPE_BF16 = 32,
    SPROUT_FTYPE_TQ1_0 = 36,
    SPROUT_FTYPE_TQ2_0 = 37,
    SPROUT_FTYPE_MXFP4_MOE = 38
} sprout_file_type;

/* Parses a file type name as llama-quantize spells it ("Q4_K_M", "q8_0",
 * "F16"); false for names sprout cannot produce. */
bool sprout_file_type_from_name(const char *name, sprout_file_type *out);

/* Passed to the progress callback after each slice of work. */
typedef struct sprout_quantize_progress {
    int64_t tensor_index; /* the tensor being written, 0-based */
    int64_t n_tensors;
    const char *tensor_name;
    sprout_type from_type, to_type;
    uint64_t bytes_read, bytes_total; /* of the input's tensor data */
    uint64_t bytes_written;           /* of the output's tensor data */
} sprout_quantize_progress;

/* Return false to cancel: the call then fails with SPROUT_ERR_CANCELLED. */
typedef bool (*sprout_quantize_progress_fn)(void *user, const sprout_quantize_progress *progress);

/* Told once per tensor, before any data is written, which type it gets. */
typedef struct sprout_quantize_tensor_plan {
    int64_t tensor_index;
    const char *tensor_name;
    sprout_type from_type, to_type;
    sprout_type wanted_type; /* differs from to_type when the rows do not fit its blocks */
    bool converted;          /* false: the bytes are copied as they are */
} sprout_quantize_tensor_plan;
typedef void (*sprout_quantize_plan_fn)(void *user, const sprout_quantize_tensor_plan *plan);

typedef struct sprout_quantize_params {
    size_t struct_size;             /* sizeof(sprout_quantize_params) */
    sprout_file_type file_type;
    int32_t n_threads;              /* <= 0: one per core; at most SPROUT_MAX_THREADS */
    bool pure;                      /* every quantizable matrix gets the base type: no mix */
    int32_t output_type;            /* a sprout_type for output.weight, or -1 for the recipe's */
    int32_t token_embedding_type;   /* likewise for token_embd.weight */
    bool leave_output_tensor;       /* keep output.weight as it is in the input */
    uint64_t split_max_bytes;       /* 0: one file; else parts of at most this size */
    sprout_quantize_progress_fn progress;
    sprout_quantize_plan_fn plan;
    void *user;
    /* an importance matrix (llama-imatrix's GGUF or legacy .dat), or NULL;
     * the IQ1, IQ2 and IQ3 types use it, and IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS,
     * IQ2_S and IQ3_XXS matrices (not output or token_embd) need it, as in
     * llama-quantize: SPROUT_ERR_INVALID_ARGUMENT without it */
    const char *imatrix_path;
} sprout_quantize_params;

/* Defaults: Q4_K_M, all cores, recipe types, one file. */
void sprout_quantize_params_default(sprout_quantize_params *params);

typedef struct sprout_quantize_report {
    uint64_t bytes_in, bytes_out;  /* tensor data, before and after */
    int64_t n_tensors;
    int64_t n_converted;           /* tensors whose type changed */
    int64_t n_fallback;            /* tensors whose rows did not fit the wanted type */
    int64_t n_requantized;         /* converted from an already quantized type (loses quality) */
    uint32_t n_parts;              /* files written */
    double seconds;
} sprout_quantize_report;

/* Reads in_path, writes out_path (or its -0000i-of-0000n parts when split).
 * Errors: SPROUT_ERR_INVALID_ARGUMENT for an unknown file type or the same
 * path for input and output, SPROUT_ERR_IO for unreadable input or a failed
 * write, SPROUT_ERR_CANCELLED when the progress callback says stop.
 * report may be NULL. */
sprout_status sprout_quantize_model(const char *in_path, const char *out_path, const sprout_quantize_params *params,
                                    sprout_quantize_report *report);

SPROUT_END_DECLS

#endif /* SPROUT_API_QUANTIZE_H */
