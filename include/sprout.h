/*
 * sprout.h — the public C API of libsprout, an on-device LLM runtime.
 *
 * Conventions (they hold for every function below):
 *  - Calls that can fail return a sprout_status. On failure the calling
 *    thread's message (sprout_last_error()) says what failed and where, for
 *    example "tensor 'blk.3.ffn_up.weight': data ends past end of file
 *    (offset 123, size 456, file 400)". The message stays until the next
 *    failing call on the same thread.
 *  - Handles are opaque. Destructors accept NULL.
 *  - Pointers returned by accessors of a handle stay valid until the handle
 *    is freed; the library never frees them behind the caller's back.
 *  - Strings read from a model file are not NUL-terminated: they come as a
 *    pointer plus a length, because a GGUF string may contain any byte.
 *    Names (metadata keys, tensor names) are the exception: they are checked
 *    and returned NUL-terminated.
 */
#ifndef SPROUT_H
#define SPROUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* libsprout.so is built with -fvisibility=hidden: what this header declares
 * is its whole exported interface (tests/test_exports.sh checks both ways). */
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define SPROUT_VERSION_MAJOR 0
#define SPROUT_VERSION_MINOR 1
#define SPROUT_VERSION_PATCH 0

/* "MAJOR.MINOR.PATCH" of the library actually linked. */
const char *sprout_version(void);

/* ---------------------------------------------------------------------------
 * Status codes
 * ------------------------------------------------------------------------- */
typedef enum sprout_status {
    SPROUT_OK = 0,
    SPROUT_ERR_INVALID_ARGUMENT = 1, /* the caller passed something unusable */
    SPROUT_ERR_IO = 2,               /* open/read/map/write failed */
    SPROUT_ERR_FORMAT = 3,           /* the file is malformed or inconsistent */
    SPROUT_ERR_UNSUPPORTED = 4,      /* well-formed, but sprout cannot use it */
    SPROUT_ERR_OUT_OF_MEMORY = 5,
    SPROUT_ERR_NOT_FOUND = 6,        /* a key, tensor or file that is absent */
    SPROUT_ERR_TYPE_MISMATCH = 7,    /* a value of another type than asked for */
    SPROUT_ERR_OUT_OF_RANGE = 8,     /* a value that does not fit the request */
    SPROUT_ERR_INTERNAL = 9,
    SPROUT_ERR_CANCELLED = 10,       /* a callback asked to stop */
    SPROUT_ERR_BUSY = 11             /* no room now (a full queue); try again later */
} sprout_status;

/* A fixed English name for a status ("format error"); never NULL. */
const char *sprout_status_str(sprout_status status);

/* The message of the last failing call on this thread ("" if none). */
const char *sprout_last_error(void);

/* ---------------------------------------------------------------------------
 * Logging. The library never writes to stdout or stderr: what it has to say
 * (a kernel level that cannot be had, a fallback taken) goes to the callback
 * set here, and nowhere when none is set (the default). The callback may be
 * called from any of the library's threads, several at once (it must be
 * thread-safe), and may itself call the library; the message has no
 * trailing newline.
 * ------------------------------------------------------------------------- */
typedef enum sprout_log_level {
    SPROUT_LOG_ERROR = 0,
    SPROUT_LOG_WARN = 1,
    SPROUT_LOG_INFO = 2,
    SPROUT_LOG_DEBUG = 3
} sprout_log_level;

typedef void (*sprout_log_fn)(sprout_log_level level, const char *message, void *user);

/* Installs fn (NULL: silence) for every later message of the process. */
void sprout_log_set(sprout_log_fn fn, void *user);
/* "error", "warn", "info", "debug"; "?" for other values. */
const char *sprout_log_level_name(sprout_log_level level);

/* Length of the valid UTF-8 character at s[0..n), or 0 if the bytes there are
 * not one (invalid, overlong, surrogate, past U+10FFFF, or cut short). */
size_t sprout_utf8_char_len(const char *s, size_t n);

/* ---------------------------------------------------------------------------
 * Tensor types. The numeric values are the GGUF/ggml type ids, so they can be
 * stored in files and compared with llama.cpp's.
 * ------------------------------------------------------------------------- */
typedef enum sprout_type {
    SPROUT_TYPE_F32 = 0,
    SPROUT_TYPE_F16 = 1,
    SPROUT_TYPE_Q4_0 = 2,
    SPROUT_TYPE_Q4_1 = 3,
    SPROUT_TYPE_Q5_0 = 6,
    SPROUT_TYPE_Q5_1 = 7,
    SPROUT_TYPE_Q8_0 = 8,
    SPROUT_TYPE_Q8_1 = 9,
    SPROUT_TYPE_Q2_K = 10,
    SPROUT_TYPE_Q3_K = 11,
    SPROUT_TYPE_Q4_K = 12,
    SPROUT_TYPE_Q5_K = 13,
    SPROUT_TYPE_Q6_K = 14,
    SPROUT_TYPE_Q8_K = 15,
    SPROUT_TYPE_IQ2_XXS = 16,
    SPROUT_TYPE_IQ2_XS = 17,
    SPROUT_TYPE_IQ3_XXS = 18,
    SPROUT_TYPE_IQ1_S = 19,
    SPROUT_TYPE_IQ4_NL = 20,
    SPROUT_TYPE_IQ3_S = 21,
    SPROUT_TYPE_IQ2_S = 22,
    SPROUT_TYPE_IQ4_XS = 23,
    SPROUT_TYPE_I8 = 24,
    SPROUT_TYPE_I16 = 25,
    SPROUT_TYPE_I32 = 26,
    SPROUT_TYPE_I64 = 27,
    SPROUT_TYPE_F64 = 28,
    SPROUT_TYPE_IQ1_M = 29,
    SPROUT_TYPE_BF16 = 30,
    SPROUT_TYPE_TQ1_0 = 34,
    SPROUT_TYPE_TQ2_0 = 35,
    SPROUT_TYPE_MXFP4 = 39,
    SPROUT_TYPE_COUNT = 40 /* one past the largest id; not a type */
} sprout_type;

/* True for ids that name a known tensor type (of any kind). */
bool sprout_type_is_known(int type);
/* The name as llama.cpp spells it ("Q4_K", "F16"); "?" for unknown ids. */
const char *sprout_type_name(int type);
/* Parses a name case-insensitively; returns false if there is no such type. */
bool sprout_type_from_name(const char *name, sprout_type *out);
/* Elements per block (1 for plain types, 32 or 256 for block formats). */
int64_t sprout_type_block_size(int type);
/* Bytes per block. */
size_t sprout_type_block_bytes(int type);
/* True for block-quantized types. */
bool sprout_type_is_quantized(int type);
/* True if sprout can convert this type to floats (and so compute with it). */
bool sprout_type_can_dequantize(int type);
/* Dequantizes n elements (a multiple of the block size) of `type` to floats. */
sprout_status sprout_dequantize(int type, const void *src, float *dst, int64_t n);
/* Quantizes n floats (a multiple of the block size) with the reference
 * quantizer of `type`; dst must hold n / block_size blocks. */
sprout_status sprout_quantize(int type, const float *src, void *dst, int64_t n);

/* The kernel set the CPU was given at first use ("portable", "avx2" ...);
 * SPROUT_CPU=generic in the environment forces the portable one. */
const char *sprout_kernels_name(void);

/* The name llama.cpp gives a general.file_type value ("Q4_K_M",
 * "MOSTLY_F16" is spelt "F16"); NULL for values it does not define. */
const char *sprout_file_type_name(uint32_t file_type);

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

/* ---------------------------------------------------------------------------
 * GGUF files
 *
 * A sprout_gguf is a parsed, validated GGUF model mapped read-only into
 * memory: one file, or every part of a split model
 * ("name-00001-of-00003.gguf" and its siblings) presented as one. Tensor
 * data are views into the mapping, never copies.
 *
 *   sprout_gguf *g = NULL;
 *   if (sprout_gguf_open(path, &g) != SPROUT_OK) {
 *       fprintf(stderr, "%s\n", sprout_last_error());
 *       return 1;
 *   }
 *   uint32_t n_layer;
 *   if (sprout_gguf_get_u32(g, "llama.block_count", &n_layer) == SPROUT_OK) ...
 *   sprout_gguf_close(g);
 * ------------------------------------------------------------------------- */
typedef struct sprout_gguf sprout_gguf;
typedef struct sprout_gguf_value sprout_gguf_value;

/* Metadata value types; the numeric values are those of the GGUF format. */
typedef enum sprout_gguf_type {
    SPROUT_GGUF_UINT8 = 0,
    SPROUT_GGUF_INT8 = 1,
    SPROUT_GGUF_UINT16 = 2,
    SPROUT_GGUF_INT16 = 3,
    SPROUT_GGUF_UINT32 = 4,
    SPROUT_GGUF_INT32 = 5,
    SPROUT_GGUF_FLOAT32 = 6,
    SPROUT_GGUF_BOOL = 7,
    SPROUT_GGUF_STRING = 8,
    SPROUT_GGUF_ARRAY = 9,
    SPROUT_GGUF_UINT64 = 10,
    SPROUT_GGUF_INT64 = 11,
    SPROUT_GGUF_FLOAT64 = 12
} sprout_gguf_type;

/* "u32", "string", "array", ... */
const char *sprout_gguf_type_name(sprout_gguf_type type);

/* Opens, maps and validates a GGUF file (and its sibling parts, if it is one
 * part of a split model). On failure *out is NULL and the message names the
 * problem and where it is (key or tensor name, byte offset). */
sprout_status sprout_gguf_open(const char *path, sprout_gguf **out);
void sprout_gguf_close(sprout_gguf *gguf);

uint32_t sprout_gguf_version(const sprout_gguf *gguf);
/* Bytes of all parts together. */
uint64_t sprout_gguf_file_size(const sprout_gguf *gguf);
uint32_t sprout_gguf_split_count(const sprout_gguf *gguf);
uint32_t sprout_gguf_alignment(const sprout_gguf *gguf);

/* Metadata, in file order (of the first part, for split models). */
int64_t sprout_gguf_kv_count(const sprout_gguf *gguf);
const char *sprout_gguf_kv_key(const sprout_gguf *gguf, int64_t index);
const sprout_gguf_value *sprout_gguf_kv_value(const sprout_gguf *gguf, int64_t index);
/* The value of `key`, or NULL when the file has no such key. */
const sprout_gguf_value *sprout_gguf_find(const sprout_gguf *gguf, const char *key);

/* Typed look-ups by key. SPROUT_ERR_NOT_FOUND if the key is absent,
 * SPROUT_ERR_TYPE_MISMATCH if it holds another kind of value,
 * SPROUT_ERR_OUT_OF_RANGE if an integer does not fit. Integer getters accept
 * any integer type whose value fits; float getters accept f32 and f64. */
sprout_status sprout_gguf_get_u32(const sprout_gguf *gguf, const char *key, uint32_t *out);
sprout_status sprout_gguf_get_i32(const sprout_gguf *gguf, const char *key, int32_t *out);
sprout_status sprout_gguf_get_u64(const sprout_gguf *gguf, const char *key, uint64_t *out);
sprout_status sprout_gguf_get_f32(const sprout_gguf *gguf, const char *key, float *out);
sprout_status sprout_gguf_get_bool(const sprout_gguf *gguf, const char *key, bool *out);
sprout_status sprout_gguf_get_str(const sprout_gguf *gguf, const char *key, const char **str, size_t *len);
/* An array value; elem_type may be NULL to accept any element type. */
sprout_status sprout_gguf_get_array(const sprout_gguf *gguf, const char *key, const sprout_gguf_value **array,
                                    sprout_gguf_type *elem_type, uint64_t *count);

/* Values (from sprout_gguf_find, _kv_value or _array_elem). */
sprout_gguf_type sprout_gguf_value_type(const sprout_gguf_value *value);
sprout_status sprout_gguf_value_u64(const sprout_gguf_value *value, uint64_t *out);
sprout_status sprout_gguf_value_i64(const sprout_gguf_value *value, int64_t *out);
sprout_status sprout_gguf_value_f64(const sprout_gguf_value *value, double *out);
sprout_status sprout_gguf_value_bool(const sprout_gguf_value *value, bool *out);
sprout_status sprout_gguf_value_str(const sprout_gguf_value *value, const char **str, size_t *len);
/* Arrays: element type, element count, and element i (bounds-checked). */
sprout_gguf_type sprout_gguf_array_type(const sprout_gguf_value *array);
uint64_t sprout_gguf_array_len(const sprout_gguf_value *array);
sprout_status sprout_gguf_array_u64(const sprout_gguf_value *array, uint64_t i, uint64_t *out);
sprout_status sprout_gguf_array_i64(const sprout_gguf_value *array, uint64_t i, int64_t *out);
sprout_status sprout_gguf_array_f64(const sprout_gguf_value *array, uint64_t i, double *out);
sprout_status sprout_gguf_array_bool(const sprout_gguf_value *array, uint64_t i, bool *out);
sprout_status sprout_gguf_array_str(const sprout_gguf_value *array, uint64_t i, const char **str, size_t *len);
/* Element i of an array of arrays. */
const sprout_gguf_value *sprout_gguf_array_elem(const sprout_gguf_value *array, uint64_t i);

/* Tensors, in file order (part by part). */
int64_t sprout_gguf_tensor_count(const sprout_gguf *gguf);
/* Index of the tensor called `name`, or -1. */
int64_t sprout_gguf_find_tensor(const sprout_gguf *gguf, const char *name);
const char *sprout_gguf_tensor_name(const sprout_gguf *gguf, int64_t index);
sprout_type sprout_gguf_tensor_type(const sprout_gguf *gguf, int64_t index);
int sprout_gguf_tensor_n_dims(const sprout_gguf *gguf, int64_t index);
/* Extent of dimension d (0 = the contiguous one); 1 for d >= n_dims. */
int64_t sprout_gguf_tensor_dim(const sprout_gguf *gguf, int64_t index, int d);
int64_t sprout_gguf_tensor_elements(const sprout_gguf *gguf, int64_t index);
uint64_t sprout_gguf_tensor_bytes(const sprout_gguf *gguf, int64_t index);
/* Absolute byte offset of the data inside its part, and that part's index. */
uint64_t sprout_gguf_tensor_file_offset(const sprout_gguf *gguf, int64_t index);
uint32_t sprout_gguf_tensor_part(const sprout_gguf *gguf, int64_t index);
/* The data, a view into the read-only mapping. */
const void *sprout_gguf_tensor_data(const sprout_gguf *gguf, int64_t index);

/* ---------------------------------------------------------------------------
 * Tokenizer
 *
 * Built from the vocabulary inside a GGUF (tokenizer.ggml.*): SentencePiece
 * ("llama"), byte-level BPE ("gpt2", with the pre-tokenizer named by
 * tokenizer.ggml.pre) and WordPiece ("bert"). Token for token what llama.cpp
 * and Hugging Face produce. A tokenizer is immutable once created: any number
 * of threads may use one at once.
 *
 *   sprout_tokenizer *tok;
 *   sprout_tokenizer_create(gguf, &tok);        // gguf must outlive tok
 *   sprout_token ids[256];
 *   size_t n;
 *   sprout_tokenize(tok, text, strlen(text), SPROUT_TOKENIZE_ADD_SPECIAL, ids, 256, &n);
 *   sprout_tokenizer_free(tok);
 * ------------------------------------------------------------------------- */
typedef struct sprout_tokenizer sprout_tokenizer;
typedef int32_t sprout_token;
#define SPROUT_TOKEN_NONE ((sprout_token)-1)

typedef enum sprout_vocab_type {
    SPROUT_VOCAB_SPM = 1, /* tokenizer.ggml.model "llama" */
    SPROUT_VOCAB_BPE = 2, /* "gpt2" */
    SPROUT_VOCAB_WPM = 3  /* "bert" */
} sprout_vocab_type;

/* Which special token sprout_tokenizer_special() returns. */
typedef enum sprout_special {
    SPROUT_SPECIAL_BOS = 0,
    SPROUT_SPECIAL_EOS,
    SPROUT_SPECIAL_EOT, /* end of turn (<|eot_id|>, <|im_end|>, <end_of_turn> ...) */
    SPROUT_SPECIAL_EOM, /* end of message (<|eom_id|>) */
    SPROUT_SPECIAL_UNK,
    SPROUT_SPECIAL_SEP,
    SPROUT_SPECIAL_PAD,
    SPROUT_SPECIAL_CLS,
    SPROUT_SPECIAL_MASK,
    SPROUT_SPECIAL_NEWLINE, /* the token of "\n" */
    SPROUT_SPECIAL_FIM_PRE, /* fill-in-the-middle: before the prefix (<|fim_prefix|>, <fim_prefix>, <PRE> ...) */
    SPROUT_SPECIAL_FIM_SUF, /* before the suffix */
    SPROUT_SPECIAL_FIM_MID, /* where the middle is to be written */
    SPROUT_SPECIAL_COUNT
} sprout_special;

/* Token attributes (bits), from tokenizer.ggml.token_type. */
enum {
    SPROUT_TOKEN_ATTR_UNDEFINED = 0,
    SPROUT_TOKEN_ATTR_UNKNOWN = 1 << 0,
    SPROUT_TOKEN_ATTR_UNUSED = 1 << 1,
    SPROUT_TOKEN_ATTR_NORMAL = 1 << 2,
    SPROUT_TOKEN_ATTR_CONTROL = 1 << 3,
    SPROUT_TOKEN_ATTR_USER_DEFINED = 1 << 4,
    SPROUT_TOKEN_ATTR_BYTE = 1 << 5,
    SPROUT_TOKEN_ATTR_LSTRIP = 1 << 6, /* eats the whitespace before it */
    SPROUT_TOKEN_ATTR_RSTRIP = 1 << 7  /* eats the whitespace after it */
};

/* Builds the tokenizer of `gguf`, which must stay open while the tokenizer
 * lives. Fails with SPROUT_ERR_NOT_FOUND when the file has no vocabulary and
 * SPROUT_ERR_UNSUPPORTED for tokenizer models sprout does not implement. An
 * unknown pre-tokenizer is not an error: sprout_tokenizer_warning() says so
 * and the default pre-tokenizer is used. */
sprout_status sprout_tokenizer_create(const sprout_gguf *gguf, sprout_tokenizer **out);
void sprout_tokenizer_free(sprout_tokenizer *tok);
/* A warning from loading ("" if none). */
const char *sprout_tokenizer_warning(const sprout_tokenizer *tok);

sprout_vocab_type sprout_tokenizer_type(const sprout_tokenizer *tok);
int32_t sprout_tokenizer_vocab_size(const sprout_tokenizer *tok);
/* The pre-tokenizer in use ("llama-bpe", "default", ...; "" for SPM/WPM). */
const char *sprout_tokenizer_pre(const sprout_tokenizer *tok);
sprout_token sprout_tokenizer_special(const sprout_tokenizer *tok, sprout_special which);
/* Whether tokenizing with SPROUT_TOKENIZE_ADD_SPECIAL adds BOS / EOS. */
bool sprout_tokenizer_adds_bos(const sprout_tokenizer *tok);
bool sprout_tokenizer_adds_eos(const sprout_tokenizer *tok);
/* True for tokens that end generation (EOS, EOT, EOM and their kin). */
bool sprout_tokenizer_is_eog(const sprout_tokenizer *tok, sprout_token id);
/* SPROUT_TOKEN_ATTR_* bits of a token (0 for an id out of range). */
uint32_t sprout_token_attr(const sprout_tokenizer *tok, sprout_token id);
/* The token's text as the vocabulary stores it ("▁the", "Ġthe", "<0x0A>"). */
sprout_status sprout_token_text(const sprout_tokenizer *tok, sprout_token id, const char **text, size_t *len);
/* The id of a vocabulary text, or SPROUT_TOKEN_NONE. */
sprout_token sprout_token_from_text(const sprout_tokenizer *tok, const char *text, size_t len);

enum {
    SPROUT_TOKENIZE_ADD_SPECIAL = 1 << 0,  /* add BOS/EOS as the model wants */
    SPROUT_TOKENIZE_PARSE_SPECIAL = 1 << 1 /* match control tokens written in the text ("<|im_start|>") */
};

/* Tokenizes text[0..len) (any bytes: invalid UTF-8 is replaced, not
 * rejected). Up to `cap` ids go to `tokens`; *n_tokens gets the full count.
 * If cap is too small the result is SPROUT_ERR_OUT_OF_RANGE and *n_tokens
 * says how much room to give. User-defined tokens are always matched, as
 * Hugging Face does; control tokens only with SPROUT_TOKENIZE_PARSE_SPECIAL. */
sprout_status sprout_tokenize(const sprout_tokenizer *tok, const char *text, size_t len, unsigned flags,
                              sprout_token *tokens, size_t cap, size_t *n_tokens);

/* The bytes a token stands for ("▁the" -> " the", "<0x0A>" -> "\n", "Ġthe"
 * -> " the"). Control and unknown tokens give "" unless `special`. The
 * pointer is valid while the tokenizer lives. A piece may be a fragment of a
 * UTF-8 character (byte tokens). */
sprout_status sprout_token_to_piece(const sprout_tokenizer *tok, sprout_token id, bool special, const char **piece,
                                    size_t *len);

enum {
    SPROUT_DETOKENIZE_REMOVE_SPECIAL = 1 << 0,  /* drop a leading BOS / trailing EOS the model adds */
    SPROUT_DETOKENIZE_UNPARSE_SPECIAL = 1 << 1, /* render control tokens as their text */
    SPROUT_DETOKENIZE_CLEAN_SPACES = 1 << 2,    /* Hugging Face's clean_up_tokenization_spaces, where the model asks for it */
    SPROUT_DETOKENIZE_CONTINUATION = 1 << 3     /* the tokens continue earlier text: keep the first piece's leading space */
};

/* Joins the pieces of tokens[0..n) into text (at most cap bytes, not
 * NUL-terminated; *len gets the full length, SPROUT_ERR_OUT_OF_RANGE if it
 * did not fit). The space that SPM puts before the first word is removed, as
 * llama.cpp does. */
sprout_status sprout_detokenize(const sprout_tokenizer *tok, const sprout_token *tokens, size_t n, unsigned flags,
                                char *text, size_t cap, size_t *len);

/* Streaming detokenizer: push ids one at a time and get text out only in
 * whole UTF-8 characters (a character split across byte tokens comes out
 * once its last byte arrives; bytes that can never form one come out as
 * U+FFFD). The text returned is valid until the next call on the stream. */
typedef struct sprout_detokenizer sprout_detokenizer;
sprout_status sprout_detokenizer_create(const sprout_tokenizer *tok, unsigned flags, sprout_detokenizer **out);
void sprout_detokenizer_free(sprout_detokenizer *d);
sprout_status sprout_detokenizer_push(sprout_detokenizer *d, sprout_token id, const char **text, size_t *len);
/* Ends the stream: whatever bytes are held back come out (as U+FFFD if they
 * are an unfinished character), and the stream starts afresh. */
sprout_status sprout_detokenizer_flush(sprout_detokenizer *d, const char **text, size_t *len);

/* ---------------------------------------------------------------------------
 * Chat templates
 *
 * A Jinja2 interpreter for the chat templates models ship in
 * tokenizer.chat_template, rendering byte for byte what Hugging Face
 * transformers renders with Python's jinja2 (trim_blocks and lstrip_blocks
 * on, raise_exception and strftime_now defined, tojson as json.dumps).
 *
 * It also takes Ollama's Go text/template (a Modelfile's TEMPLATE) and
 * renders it as Ollama does, from the same messages JSON and extra_json
 * (tools, think, suffix). The dialect comes from the source: one without
 * "{%" or "{#" is Go when an action starts (after an optional "-") with
 * ".", "$", a comment, if/else/end/break/continue, or a word then a space
 * and a field or variable (range .X); anything else is Jinja.
 * docs/TEMPLATES.md.
 *
 *   sprout_template *t;
 *   sprout_template_parse(src, strlen(src), &t);
 *   sprout_chat_message msgs[] = {{"system", "Be brief."}, {"user", "Hi"}};
 *   sprout_template_options opt = {sizeof opt, .add_generation_prompt = true, .bos_token = "<s>"};
 *   char *prompt; size_t len;
 *   if (sprout_template_render(t, msgs, 2, &opt, &prompt, &len) == SPROUT_OK) { ...; sprout_free(prompt); }
 *   sprout_template_free(t);
 *
 * Errors (syntax, run time, or the template's own raise_exception) are
 * SPROUT_ERR_FORMAT; sprout_last_error() gives "line L, column C: what" or,
 * for raise_exception, the template's message verbatim, and the accessors
 * below give the position.
 * ------------------------------------------------------------------------- */
typedef struct sprout_template sprout_template;

typedef struct sprout_chat_message {
    const char *role;
    const char *content;
} sprout_chat_message;

typedef struct sprout_template_options {
    size_t struct_size;          /* sizeof(sprout_template_options), for future fields */
    bool add_generation_prompt;
    const char *bos_token;       /* NULL: left undefined, as transformers does */
    const char *eos_token;
    const char *extra_json;      /* a JSON object of more variables (tools, enable_thinking ...), or NULL */
    const char *now;             /* "YYYY-MM-DDTHH:MM:SS" for strftime_now; NULL: the current local time */
} sprout_template_options;

sprout_status sprout_template_parse(const char *source, size_t len, sprout_template **out);
void sprout_template_free(sprout_template *t);

/* Renders with messages given as role/content pairs. *out is NUL-terminated
 * and freed with sprout_free(). */
sprout_status sprout_template_render(const sprout_template *t, const sprout_chat_message *messages, size_t n_messages,
                                     const sprout_template_options *options, char **out, size_t *out_len);
/* Renders with messages given as a JSON array of objects (any fields:
 * role, content, tool_calls, ...). */
sprout_status sprout_template_render_json(const sprout_template *t, const char *messages_json,
                                          const sprout_template_options *options, char **out, size_t *out_len);

/* Where the last failed template call on this thread failed (1-based; 0 if
 * unknown), and whether it was the template's own raise_exception(). */
int sprout_template_error_line(void);
int sprout_template_error_column(void);
bool sprout_template_error_raised(void);

/* The source of a built-in template: "chatml", "llama2", "llama3",
 * "zephyr", "phi3", "gemma", "mistral"; NULL for other names. */
const char *sprout_template_builtin(const char *name);

/* The template to use for a model: `override` if given (a built-in name, or
 * else template source itself), otherwise tokenizer.chat_template from the
 * file, otherwise the ChatML built-in. *source points into the file or a
 * static string. */
sprout_status sprout_template_for_model(const sprout_gguf *gguf, const char *override, const char **source, size_t *len);

/* ---------------------------------------------------------------------------
 * Models and pipelines
 *
 * A sprout_model is the immutable part (mapped weights, tokenizer): load it
 * once and share it between pipelines and threads. A sprout_pipeline holds
 * what one conversation needs (KV cache, sampler state, chat history) and is
 * used by one thread at a time. Free pipelines before their model.
 *
 *   sprout_model *m;
 *   sprout_model_load("model.gguf", NULL, &m);
 *   sprout_pipeline *p;
 *   sprout_pipeline_create(m, NULL, &p);
 *   sprout_generation_config cfg;
 *   sprout_generation_config_init(&cfg);
 *   cfg.max_new_tokens = 64;
 *   sprout_result *r;
 *   if (sprout_generate(p, "Once upon a time", &cfg, on_piece, NULL, &r) == SPROUT_OK) {
 *       printf("%s\n", sprout_result_text(r, NULL));
 *       sprout_result_free(r);
 *   }
 *   sprout_pipeline_free(p);
 *   sprout_model_free(m);
 * ------------------------------------------------------------------------- */
typedef struct sprout_model sprout_model;
typedef struct sprout_pipeline sprout_pipeline;
typedef struct sprout_result sprout_result;
/* A LoRA adapter loaded against a model (sprout_lora_load, below). */
typedef struct sprout_lora sprout_lora;

/* An adapter and the scale a generation applies it with. */
typedef struct sprout_lora_use {
    const sprout_lora *adapter;
    float scale;
} sprout_lora_use;

/* A KV cache element type (llama.cpp's --cache-type-k/-v). The numbers are
 * the ggml type ids (those of sprout_type). The default is F16: a params
 * struct's kv_type (keys and values) counts only where its kv_type_set is
 * true, and its cache_type_k / cache_type_v (one side, over kv_type) only
 * where their _set flags are, so zeroed params keep the default. Q8_0 and
 * Q4_0 store 32-element blocks along each head: a model whose head size is
 * not a multiple of 32 refuses them (SPROUT_ERR_UNSUPPORTED). */
typedef enum sprout_kv_type {
    SPROUT_KV_F32 = 0,
    SPROUT_KV_F16 = 1,
    SPROUT_KV_Q4_0 = 2,
    SPROUT_KV_Q8_0 = 8,
    SPROUT_KV_BF16 = 30
} sprout_kv_type;

/* "f32", "f16", "bf16", "q8_0", "q4_0" (NULL for other values), and back
 * (SPROUT_ERR_INVALID_ARGUMENT naming the choices for other names). */
const char *sprout_kv_type_name(sprout_kv_type type);
sprout_status sprout_kv_type_from_name(const char *name, sprout_kv_type *out);

/* The most threads a pipeline, scheduler or quantization can use: a larger
 * n_threads fails with SPROUT_ERR_OUT_OF_RANGE (it is not lowered). "All
 * cores" (n_threads 0) means at most this many. */
#define SPROUT_MAX_THREADS 256

typedef struct sprout_model_params {
    size_t struct_size;      /* sizeof(sprout_model_params) */
    int32_t n_threads;       /* default for pipelines; 0: the number of CPUs; at most SPROUT_MAX_THREADS */
    int32_t n_ctx;           /* default context length; 0: the model's, at most 4096 */
    sprout_kv_type kv_type;  /* default KV cache type of pipelines and schedulers, used when kv_type_set (else F16) */
    bool kv_type_set;
    sprout_kv_type cache_type_k, cache_type_v; /* the keys' or values' default alone, over kv_type, when its _set */
    bool cache_type_k_set, cache_type_v_set;
} sprout_model_params;

/* Loads a model (one GGUF or a split set). NULL params: defaults. Fails with
 * SPROUT_ERR_UNSUPPORTED naming the architecture, metadata or tensor type
 * sprout cannot run. */
sprout_status sprout_model_load(const char *path, const sprout_model_params *params, sprout_model **out);
void sprout_model_free(sprout_model *model);
const sprout_tokenizer *sprout_model_tokenizer(const sprout_model *model);
const sprout_gguf *sprout_model_gguf(const sprout_model *model);
const char *sprout_model_architecture(const sprout_model *model);
int32_t sprout_model_n_ctx_train(const sprout_model *model);
int32_t sprout_model_n_vocab(const sprout_model *model);
/* Whether the model writes text (it has an output head); encoders such as
 * BERT give embeddings only. */
bool sprout_model_generates(const sprout_model *model);
/* Width of the hidden state: the length of an embedding. */
int32_t sprout_model_n_embd(const sprout_model *model);

/* How a prompt's hidden states (each token's, after the final norm) become
 * one embedding. The numbers of 1-3 are GGUF's pooling_type values. */
typedef enum sprout_pooling {
    SPROUT_POOLING_MODEL = 0, /* what the model's GGUF says; mean where it says none */
    SPROUT_POOLING_MEAN = 1,  /* the average over the prompt's tokens */
    SPROUT_POOLING_CLS = 2,   /* the first token's */
    SPROUT_POOLING_LAST = 3   /* the last token's (what causal embedding models such as Qwen3-Embedding use) */
} sprout_pooling;

/* The pooling SPROUT_POOLING_MODEL stands for with this model. */
sprout_pooling sprout_model_pooling(const sprout_model *model);
/* "mean", "cls", "last" (and back; NULL / SPROUT_ERR_INVALID_ARGUMENT for
 * other values). */
const char *sprout_pooling_name(sprout_pooling pooling);
sprout_status sprout_pooling_from_name(const char *name, sprout_pooling *out);
/* Milliseconds spent loading. */
double sprout_model_load_ms(const sprout_model *model);

typedef struct sprout_pipeline_params {
    size_t struct_size;      /* sizeof(sprout_pipeline_params) */
    int32_t n_ctx;           /* 0: the model's default */
    int32_t n_batch;         /* tokens per forward pass; 0: 512 */
    int32_t n_threads;       /* 0: the model's default; at most SPROUT_MAX_THREADS */
    sprout_kv_type kv_type;  /* used when kv_type_set; else the model's */
    bool kv_type_set;
    sprout_kv_type cache_type_k, cache_type_v; /* the keys' or values' type alone, over kv_type, when its _set */
    bool cache_type_k_set, cache_type_v_set;
} sprout_pipeline_params;

sprout_status sprout_pipeline_create(const sprout_model *model, const sprout_pipeline_params *params, sprout_pipeline **out);
void sprout_pipeline_free(sprout_pipeline *p);
int32_t sprout_pipeline_n_ctx(const sprout_pipeline *p);
/* Threads the pipeline computes with (0 for NULL). */
int32_t sprout_pipeline_n_threads(const sprout_pipeline *p);
/* Tokens currently held in the KV cache (prompt and output of earlier calls). */
int32_t sprout_pipeline_cached_tokens(const sprout_pipeline *p);
/* Bytes one token takes in the KV cache (keys and values, every layer; 0
 * for NULL). */
size_t sprout_pipeline_kv_bytes_per_token(const sprout_pipeline *p);
/* Tokens the last generate call actually ran through the model for its
 * prompt (the rest came from the cache). */
int32_t sprout_pipeline_last_prefill_tokens(const sprout_pipeline *p);

/* Everything that steers one generation. Initialise with
 * sprout_generation_config_init(); pointers must stay valid during the call. */
/* A change to one token's logit before sampling (OpenAI's logit_bias):
 * +-100 all but forces or forbids it. */
typedef struct sprout_logit_bias {
    int32_t token;
    float bias;
} sprout_logit_bias;

typedef struct sprout_generation_config {
    size_t struct_size;               /* sizeof(sprout_generation_config) */
    int32_t max_new_tokens;           /* default 256; 0 generates nothing */
    int32_t min_new_tokens;           /* end-of-generation tokens are masked until then */
    bool ignore_eos;                  /* never stop at end-of-generation tokens (they are masked) */
    float temperature;                /* <= 0: greedy (ties go to the lowest id); default 0.8 */
    int32_t top_k;                    /* <= 0: off; default 40 */
    float top_p;                      /* >= 1: off; default 0.95 */
    float min_p;                      /* <= 0: off; default 0.05 */
    float repetition_penalty;         /* 1: off (default) */
    int32_t repeat_last_n;            /* tokens the penalties look back at; default 64; -1: the whole context */
    float presence_penalty, frequency_penalty; /* 0: off */
    const char *const *stop_strings;  /* generation ends when the text contains one */
    size_t n_stop_strings;
    bool include_stop_string;         /* keep the matched stop string in the output */
    const int32_t *stop_token_ids;    /* generation ends at one of these (in the output unless ignore) */
    size_t n_stop_token_ids;
    uint64_t seed;                    /* same seed, same output, on every machine */
    bool echo;                        /* the result text starts with the prompt */
    int32_t logprobs;                 /* > 0: record the chosen token's and this many top log-probabilities */
    bool json_object;                 /* JSON mode: the output is one JSON object; generation ends when it closes
                                         (finish EOS) and only tokens that keep it valid are drawn */
    const sprout_logit_bias *logit_bias; /* added to the logits before everything else; ids outside the
                                            vocabulary are ignored */
    size_t n_logit_bias;
    const sprout_lora_use *lora;      /* LoRA adapters (loaded against the same model) applied to this generation, in
                                         this order, each with its scale; a scale of 0 leaves its adapter out. n_lora 0:
                                         a pipeline's own (sprout_pipeline_set_lora), a scheduler's request none. Cached
                                         tokens are reused only by a generation with the same adapters and scales */
    size_t n_lora;
    /* Assisted generation (speculative decoding): proposed tokens are
     * checked by one batched forward pass of the model and kept as far as
     * the model itself would have chosen them, so the output is token for
     * token what plain decoding gives (greedy and seeded sampling alike) */
    int32_t num_assistant_tokens;     /* tokens proposed per pass at most (up to 1024); 0: plain decoding (the default) */
    float assistant_confidence_threshold; /* a draft model stops proposing at a token it gives less probability
                                             than this (llama.cpp's --draft-p-min); 0: never */
    int32_t min_assistant_tokens;     /* fewer proposals than this are not checked (--draft-min); 0 */
    bool prompt_lookup;               /* propose the tokens that followed the latest earlier occurrence of the
                                         text's last n-gram (prompt and output) instead of asking a draft model */
    int32_t max_ngram_size;           /* prompt lookup: the longest n-gram matched (up to 64); 0: 3 */
    /* llama.cpp's other samplers, each off by default. The chain runs in
     * `samplers` order (llama.cpp's default: penalties, dry, top_n_sigma,
     * top_k, typ_p, top_p, min_p, xtc, temperature), then draws; Mirostat
     * replaces it (only logit_bias and temperature come before it). */
    float typical_p;                  /* locally typical sampling: keep the tokens whose surprisal is closest to the
                                         entropy until they hold this mass; <= 0 or >= 1: off (default 1) */
    int32_t mirostat;                 /* 1: Mirostat, 2: Mirostat 2.0 (its state starts anew each generation); 0: off */
    float mirostat_tau;               /* Mirostat's target surprise in bits (default 5) */
    float mirostat_eta;               /* Mirostat's learning rate (default 0.1) */
    float dry_multiplier;             /* DRY: a token extending a repeat of n >= dry_allowed_length tokens loses
                                         multiplier * base^(n - allowed_length) of logit; 0: off (default) */
    float dry_base;                   /* default 1.75; < 1: off */
    int32_t dry_allowed_length;       /* default 2 */
    int32_t dry_penalty_last_n;       /* tokens DRY looks back at; -1: the whole context (default); 0: off */
    const char *const *dry_sequence_breakers; /* repeats never reach back past these texts; NULL: "\n", ":",
                                                 "\"", "*"; else n_dry_sequence_breakers of them (0: none);
                                                 a scheduler's request copies them */
    size_t n_dry_sequence_breakers;
    float xtc_probability;            /* XTC: with this chance, drop every token of probability >= xtc_threshold
                                         but the least likely of them; 0: off (default) */
    float xtc_threshold;              /* default 0.1; > 0.5: off */
    float top_n_sigma;                /* keep the logits >= max - n * their standard deviation; <= 0: off (default -1) */
    const char *samplers;             /* the chain's order, llama.cpp's --samplers ("penalties;dry;top_k;...", also
                                         its other spellings: "top-k", "temp" ...) or --sampling-seq letters
                                         ("edskypmxt"); NULL or "": the default; copied by a scheduler */
    /* Structured output: the output is a text of this GBNF grammar (llama.cpp's dialect, start rule `root`), or a
     * JSON value valid against this JSON Schema (text); only tokens that keep it so are drawn, end-of-generation
     * only once it is complete, and generation ends when nothing may follow. One or the other (a schema rules
     * over json_object); NULL or "": none. A bad grammar or schema fails the call (SPROUT_ERR_FORMAT, or
     * SPROUT_ERR_UNSUPPORTED naming a schema keyword sprout cannot enforce); copied by a scheduler */
    const char *grammar;
    const char *json_schema;
    /* A lazy grammar (llama.cpp's grammar_lazy with a word trigger): the output is free until this text appears in
     * it, and from its first letter on it must follow the grammar or schema (a tool call that the model may or may
     * not make). NULL or "": the grammar holds from the start. Copied by a scheduler */
    const char *grammar_trigger;
    /* Context shift (llama.cpp's --context-shift, off by default): when the context is full, keep the prompt's
     * first n_keep tokens (after its BOS, which is kept too; -1: the whole prompt), drop half of the rest and go
     * on; a chat turn that no longer fits drops the same way. Off: generation ends with SPROUT_FINISH_LENGTH, and
     * a chat turn that does not fit fails with SPROUT_ERR_OUT_OF_RANGE. SPROUT_ERR_UNSUPPORTED for a model whose
     * positions cannot shift (learned positions, sliding-window attention). Ollama's num_keep is n_keep */
    bool context_shift;
    int32_t n_keep;
} sprout_generation_config;

void sprout_generation_config_init(sprout_generation_config *config);
/* The pipeline's default config (used when a call passes NULL). */
sprout_status sprout_pipeline_get_config(const sprout_pipeline *p, sprout_generation_config *config);
sprout_status sprout_pipeline_set_config(sprout_pipeline *p, const sprout_generation_config *config);

typedef enum sprout_stream_status {
    SPROUT_STREAM_RUNNING = 0, /* go on */
    SPROUT_STREAM_STOP = 1,    /* end now; keep this turn in history and cache */
    SPROUT_STREAM_CANCEL = 2   /* end now; drop this turn's prompt and output from history and cache */
} sprout_stream_status;

/* Receives each new piece of text (whole UTF-8 characters; never text that
 * may still turn out to be part of a stop string). */
typedef sprout_stream_status (*sprout_streamer)(const char *piece, size_t len, void *user);

typedef enum sprout_finish_reason {
    SPROUT_FINISH_NONE = 0,
    SPROUT_FINISH_EOS,         /* an end-of-generation token */
    SPROUT_FINISH_STOP_STRING,
    SPROUT_FINISH_STOP_TOKEN,
    SPROUT_FINISH_LENGTH,      /* max_new_tokens or the end of the context */
    SPROUT_FINISH_STOPPED,     /* the streamer said STOP */
    SPROUT_FINISH_CANCELLED    /* the streamer said CANCEL */
} sprout_finish_reason;

/* "eos", "stop", "length", "cancelled" ... (OpenAI's words where they exist). */
const char *sprout_finish_reason_str(sprout_finish_reason reason);

/* Completes `prompt` (raw text: BOS added as the model wants, special-token
 * text not parsed). Tokens already in the cache from earlier calls that
 * match the new prompt's start are reused, generated ones included: on a
 * CPU with AMX, an F16 or BF16 model computes the tokens of a prompt of 32
 * or more new tokens in other kernels than generated ones (and shorter
 * prompts), so a conversation continued on its cache can differ by float
 * rounding (and a dropped term under 2^-15 of each product) from the same
 * text prompted afresh.
 * cfg NULL: the pipeline default. */
sprout_status sprout_generate(sprout_pipeline *p, const char *prompt, const sprout_generation_config *cfg, sprout_streamer streamer,
                              void *user, sprout_result **out);
/* The same from token ids (nothing is added). */
sprout_status sprout_generate_tokens(sprout_pipeline *p, const sprout_token *prompt, size_t n_prompt,
                                     const sprout_generation_config *cfg, sprout_streamer streamer, void *user,
                                     sprout_result **out);

/* Chat: a conversation rendered with the model's chat template (or the one
 * set with sprout_chat_set_template). Each call adds the user message and the
 * reply to the history; only tokens not already in the cache are computed. */
sprout_status sprout_chat_start(sprout_pipeline *p, const char *system_prompt);
sprout_status sprout_chat_set_template(sprout_pipeline *p, const char *name_or_source);
sprout_status sprout_chat_generate(sprout_pipeline *p, const char *user_message, const sprout_generation_config *cfg,
                                   sprout_streamer streamer, void *user, sprout_result **out);
/* Adds a message to the history without generating (earlier turns, as a
 * Modelfile's MESSAGE lines give them): role "system", "user", "assistant"
 * or "tool", content valid UTF-8. The next sprout_chat_generate renders it
 * with the rest. SPROUT_ERR_INVALID_ARGUMENT outside a chat. */
sprout_status sprout_chat_add_message(sprout_pipeline *p, const char *role, const char *content);
/* Messages in the history (system included). */
size_t sprout_chat_history_length(const sprout_pipeline *p);
sprout_status sprout_chat_history_message(const sprout_pipeline *p, size_t i, const char **role, const char **content);
void sprout_chat_finish(sprout_pipeline *p);

/* Results. Pointers stay valid until sprout_result_free. */
const char *sprout_result_text(const sprout_result *r, size_t *len);
const sprout_token *sprout_result_tokens(const sprout_result *r, size_t *n);
const sprout_token *sprout_result_prompt_tokens(const sprout_result *r, size_t *n);
/* An embedding request's vector (*n floats: sprout_model_n_embd); NULL for
 * generations. */
const float *sprout_result_embedding(const sprout_result *r, size_t *n);
sprout_finish_reason sprout_result_finish_reason(const sprout_result *r);
/* Log-probabilities (when cfg.logprobs > 0): for generated token i, its own
 * and the top-k (ids best first). Log-softmax of the raw logits. */
sprout_status sprout_result_logprob(const sprout_result *r, size_t i, float *logprob, const sprout_token **top_ids,
                                    const float **top_logprobs, size_t *k);
void sprout_result_free(sprout_result *r);

typedef struct sprout_perf_metrics {
    size_t struct_size;
    double load_ms;             /* model load */
    double tokenize_ms;
    double ttft_ms;             /* call start to the first generated token */
    double tpot_mean_ms, tpot_std_ms; /* time per output token after the first */
    double prefill_tokens_per_s, decode_tokens_per_s;
    int32_t n_prompt_tokens;    /* the whole prompt */
    int32_t n_prefill_tokens;   /* those computed (the rest came from the cache) */
    int32_t n_generated_tokens;
    double total_ms;
    /* assisted generation: tokens proposed, those kept, and the model's
     * forward passes after the prompt (n_generated_tokens per pass is the
     * gain; plain decoding makes one per token) */
    int32_t n_draft_tokens, n_accepted_tokens, n_decode_passes;
    /* wall time of the forward passes' attention over the cache (every
     * layer, all threads together) during the prompt and during decoding;
     * decode_attention_ms / (tpot_mean_ms * (n_generated_tokens - 1)) is
     * attention's share of a decode step. A pipeline's generations fill
     * them; a scheduler's requests, whose passes are shared, leave 0 */
    double prefill_attention_ms, decode_attention_ms;
} sprout_perf_metrics;

sprout_status sprout_result_metrics(const sprout_result *r, sprout_perf_metrics *out);

/* LoRA adapters (llama.cpp's GGUF layout: general.type "adapter",
 * adapter.type "lora", optional adapter.lora.alpha, pairs
 * "<weight>.lora_a" / ".lora_b"), applied at run time and never merged: a
 * weight W's output gains s * B (A x), s = scale * alpha / rank (scale
 * alone without alpha), for the attention and FFN projections and the
 * output head. An adapter is loaded against one model, checked against it
 * (architecture, each target, shapes and ranks: SPROUT_ERR_FORMAT naming
 * the tensor), stays mapped, and may be used by any number of pipelines
 * and schedulers at once; free it after them. Which adapters apply is a
 * generation's choice (sprout_generation_config.lora): requests with
 * different sets run in the same batched forward pass of a scheduler.
 *
 *   sprout_lora *a;
 *   sprout_lora_load(m, "adapter.gguf", &a);
 *   sprout_lora_use use = {a, 1.0f};
 *   cfg.lora = &use;
 *   cfg.n_lora = 1;
 */
sprout_status sprout_lora_load(const sprout_model *model, const char *path, sprout_lora **out);
void sprout_lora_free(sprout_lora *lora);
/* The pipeline's own adapters: those of its default config (calls with a
 * NULL config), and of every call whose config names none (n_lora 0); n 0
 * clears them. The pipeline copies the arrays, not the adapters. */
sprout_status sprout_pipeline_set_lora(sprout_pipeline *p, sprout_lora *const *adapters, const float *scales, size_t n);

/* A JSON Schema (text) as the GBNF grammar that enforces it (llama.cpp's
 * json_schema_to_grammar; freed with sprout_free). SPROUT_ERR_UNSUPPORTED
 * names a keyword that would not be enforced (never a silent downgrade);
 * SPROUT_ERR_FORMAT a malformed schema. */
sprout_status sprout_json_schema_to_grammar(const char *schema, size_t len, char **grammar);

/* A draft pipeline for assisted generation: its model (small, the same
 * vocabulary: type, size within 128, BOS and EOS, each token's text, as
 * llama.cpp checks) proposes greedily what generations of `p` with
 * num_assistant_tokens > 0 and no prompt_lookup verify. It keeps its own
 * KV cache, which follows the accepted text (a chat reuses both caches).
 * One draft serves one pipeline at a time; free it after p. NULL detaches.
 * SPROUT_ERR_UNSUPPORTED naming the difference for another vocabulary. */
sprout_status sprout_pipeline_set_draft(sprout_pipeline *p, sprout_pipeline *draft);

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

/* ---------------------------------------------------------------------------
 * Prompts for chat models
 *
 * Renders an OpenAI-style messages array (JSON text: [{"role":..,
 * "content":..}, ...], any extra fields visible to the template) with the
 * model's chat template (or `template_override`: a built-in name or Jinja
 * source) and tokenizes it the way the template expects: special-token
 * text is parsed, BOS is added when the model wants one and the template
 * did not write it. Text and ids are freed with sprout_free(); either
 * output may be NULL.
 * ------------------------------------------------------------------------- */
sprout_status sprout_model_chat_prompt(const sprout_model *model, const char *template_override, const char *messages_json,
                                       bool add_generation_prompt, char **text, size_t *text_len, sprout_token **ids,
                                       size_t *n_ids);
/* The same with more template variables: vars_json, a JSON object such as
 * {"tools": [...]} or {"enable_thinking": false} (NULL: none). */
sprout_status sprout_model_chat_prompt_vars(const sprout_model *model, const char *template_override, const char *messages_json,
                                            const char *vars_json, bool add_generation_prompt, char **text, size_t *text_len,
                                            sprout_token **ids, size_t *n_ids);
/* A fill-in-the-middle prompt for code models (prefix, hole, suffix):
 * BOS as the model wants, then FIM_PRE prefix FIM_SUF suffix FIM_MID, the
 * texts tokenized as raw text; the reply is the middle.
 * SPROUT_ERR_UNSUPPORTED when the vocabulary has no FIM tokens. */
sprout_status sprout_model_fim_prompt(const sprout_model *model, const char *prefix, const char *suffix, sprout_token **ids,
                                      size_t *n_ids);
/* A raw-text prompt as sprout_generate tokenizes it (BOS as the model wants,
 * special-token text not parsed, unless parse_special). */
sprout_status sprout_model_tokenize_prompt(const sprout_model *model, const char *text, size_t len, bool parse_special,
                                           sprout_token **ids, size_t *n_ids);

/* ---------------------------------------------------------------------------
 * Scheduler: many concurrent generations over one model
 *
 * A scheduler owns N slots (sequences in one shared KV cache) and one engine
 * thread. Any thread may submit a request (prompt tokens, its own config,
 * streamer and completion callback); the engine thread steps all active
 * requests in one batched forward pass per step: one token for each request
 * that is generating, plus a bounded chunk of prompt for requests still
 * prefilling, so a long prompt never stalls the others. Requests beyond the
 * slots wait in a bounded queue; beyond it, submit fails with SPROUT_ERR_BUSY.
 * A request whose prompt starts with tokens a free slot still caches reuses
 * them: all of them, or, where a CPU computes prompt and generated tokens
 * apart (sprout_generate; here by the length of the whole prompt), only
 * those computed the way the new request would compute them, so outputs do
 * not depend on what else is running or ran before.
 *
 * Callbacks run on the engine thread: keep them short, never call the
 * scheduler's blocking functions from them.
 *
 *   sprout_scheduler *s;
 *   sprout_scheduler_create(model, NULL, &s);
 *   sprout_request_params rp = {.struct_size = sizeof rp, .prompt = ids, .n_prompt = n, .config = &cfg};
 *   sprout_request *req;
 *   if (sprout_scheduler_submit(s, &rp, &req) == SPROUT_OK) {
 *       sprout_result *r;
 *       if (sprout_request_wait(req, &r) == SPROUT_OK) { ...; sprout_result_free(r); }
 *       sprout_request_free(req);
 *   }
 *   sprout_scheduler_free(s);
 * ------------------------------------------------------------------------- */
typedef struct sprout_scheduler sprout_scheduler;
typedef struct sprout_request sprout_request;

typedef struct sprout_scheduler_params {
    size_t struct_size;     /* sizeof(sprout_scheduler_params) */
    int32_t n_slots;        /* concurrent generations; 0: from the cores and the context */
    int32_t n_ctx;          /* context of each slot; 0: the model's default */
    int32_t n_batch;        /* tokens per forward pass; 0: 512 */
    int32_t prefill_chunk;  /* prompt tokens one request may add to a step; 0: 256 */
    int32_t n_queue;        /* requests that may wait for a slot; 0: 64, < 0: none */
    int32_t n_threads;      /* 0: the model's default; at most SPROUT_MAX_THREADS */
    sprout_kv_type kv_type; /* used when kv_type_set; else the model's */
    bool kv_type_set;
    /* Speculative decoding: a small model of the same vocabulary (checked:
     * SPROUT_ERR_UNSUPPORTED) proposes tokens for every request whose
     * config asks for it (num_assistant_tokens > 0, prompt_lookup false);
     * requests with prompt_lookup propose from their own text without it.
     * The scheduler keeps a cache of it per slot; borrowed, it must
     * outlive the scheduler. NULL: none. */
    const sprout_model *draft_model;
    sprout_kv_type cache_type_k, cache_type_v; /* the keys' or values' type alone, over kv_type, when its _set */
    bool cache_type_k_set, cache_type_v_set;
} sprout_scheduler_params;

sprout_status sprout_scheduler_create(const sprout_model *model, const sprout_scheduler_params *params, sprout_scheduler **out);
/* Ends what is running (finish reason "cancelled") or queued (wait fails
 * with SPROUT_ERR_CANCELLED), stops the engine thread, frees. Requests not
 * yet freed stay valid for wait and free. */
void sprout_scheduler_free(sprout_scheduler *s);
int32_t sprout_scheduler_n_slots(const sprout_scheduler *s);
int32_t sprout_scheduler_n_ctx(const sprout_scheduler *s);
/* Bytes one token takes in the slots' KV cache (0 for NULL). */
size_t sprout_scheduler_kv_bytes_per_token(const sprout_scheduler *s);
/* The longest prompt an embedding request may have: the context, and less
 * where the model has fewer learned positions or (bidirectional models,
 * whose text goes through in one pass) a smaller batch. */
int32_t sprout_scheduler_max_embed_tokens(const sprout_scheduler *s);

typedef struct sprout_request_params {
    size_t struct_size;                      /* sizeof(sprout_request_params) */
    const sprout_token *prompt;              /* copied */
    size_t n_prompt;
    const sprout_generation_config *config;  /* copied, stop strings included; NULL: defaults */
    sprout_streamer streamer;                /* may be NULL */
    void (*on_done)(sprout_request *req, void *user); /* once, when the result is ready; may be NULL */
    void *user;
    /* each token that joins the output, as it is chosen (before its text
     * is streamed), with its log-probability and the config's `logprobs`
     * best alternatives (logprob 0 and n_top 0 unless config->logprobs > 0);
     * may be NULL */
    void (*on_token)(sprout_request *req, sprout_token id, float logprob, const sprout_token *top_ids, const float *top_logprobs,
                     size_t n_top, void *user);
    /* An embedding instead of a generation: the prompt's hidden states
     * pooled into one vector (sprout_result_embedding); nothing is
     * generated, and config, streamer and on_token are not used. The prompt
     * may fill the whole context. Mean and CLS pooling compute every prompt
     * token (cached ones too); last-token pooling reuses a cached prefix. */
    bool embed;
    sprout_pooling pooling;
    bool normalize;                          /* scaled to unit length (L2), as OpenAI's and Ollama's /api/embed give */
} sprout_request_params;

/* Queues a request. SPROUT_ERR_BUSY: the queue is full. SPROUT_ERR_OUT_OF_RANGE:
 * the prompt does not fit a slot's context. */
sprout_status sprout_scheduler_submit(sprout_scheduler *s, const sprout_request_params *params, sprout_request **out);
/* Ends a request as soon as possible (finish reason "cancelled"); safe from
 * any thread, also from its own streamer, and on a finished request. */
void sprout_request_cancel(sprout_request *req);
bool sprout_request_done(const sprout_request *req);
/* Waits for the end; on success the result goes to *out (once: the caller
 * frees it). */
sprout_status sprout_request_wait(sprout_request *req, sprout_result **out);
/* Cancels if still running, waits for the end and frees. */
void sprout_request_free(sprout_request *req);

typedef struct sprout_scheduler_stats {
    size_t struct_size;
    int32_t n_slots, busy_slots, queued;
    uint64_t requests_done, requests_rejected;
    uint64_t prompt_tokens, cached_prompt_tokens, generated_tokens;
    uint64_t steps;          /* forward passes */
    double busy_ms;          /* time spent in steps */
    /* KV cache cells (tokens) held by the requests running now, and all
     * the cells of every slot: their ratio is vLLM's kv_cache_usage_perc */
    int64_t kv_cells_used, kv_cells;
} sprout_scheduler_stats;

sprout_status sprout_scheduler_stats_get(const sprout_scheduler *s, sprout_scheduler_stats *out);

/* ---------------------------------------------------------------------------
 * Model store
 *
 * Models by name, in Ollama's layout so the same tools read it: manifests
 * at <root>/manifests/<host>/<namespace>/<name>/<tag> (Docker v2 manifest
 * JSON), blobs at <root>/blobs/sha256-<hex>, layers typed
 * application/vnd.ollama.image.{model,adapter,template,system,params,
 * messages,license}. Names as Ollama parses them:
 * [host/][namespace/]name[:tag], defaults registry.ollama.ai, library,
 * latest. An existing Ollama store is read too (read only, zero-copy from
 * its blobs); a name found in both is sprout's.
 *
 *   sprout_store *s;
 *   sprout_store_open(NULL, &s);
 *   sprout_store_model *m;
 *   if (sprout_store_resolve(s, "qwen2.5:0.5b", &m) == SPROUT_OK) {
 *       sprout_model_load(sprout_store_model_path(m), NULL, &model); ...
 *       sprout_store_model_free(m);
 *   }
 *   sprout_store_free(s);
 *
 * Writes are atomic (a temporary file renamed into place, the manifest
 * last) and serialized between processes by a lock file in the root.
 * ------------------------------------------------------------------------- */
typedef struct sprout_store sprout_store;

typedef struct sprout_store_params {
    size_t struct_size;      /* sizeof(sprout_store_params) */
    const char *root;        /* NULL: $SPROUT_MODELS, else ~/.local/share/sprout/models (created on first write) */
    const char *ollama_root; /* NULL: $OLLAMA_MODELS, else ~/.ollama/models (absent is fine); "": no Ollama store */
} sprout_store_params;

/* NULL params: defaults. Opening creates nothing. */
sprout_status sprout_store_open(const sprout_store_params *params, sprout_store **out);
void sprout_store_free(sprout_store *store);
/* The store's own root, and the Ollama store's (NULL when none). */
const char *sprout_store_root(const sprout_store *store);
const char *sprout_store_ollama_root(const sprout_store *store);

/* A name in full ("registry.ollama.ai/library/qwen2.5:0.5b") and as Ollama
 * shows it ("qwen2.5:0.5b": the default host and namespace left out).
 * SPROUT_ERR_INVALID_ARGUMENT for a name Ollama refuses (empty parts, bad
 * characters, "..", too long). Free with sprout_free. */
sprout_status sprout_store_name_full(const char *name, char **out);
sprout_status sprout_store_name_short(const char *name, char **out);

typedef struct sprout_store_entry {
    char *name;     /* the short form */
    char *digest;   /* "sha256:<hex>" of the manifest's bytes */
    uint64_t size;  /* bytes of its layers */
    int64_t modified; /* the manifest's time, seconds since the epoch */
    bool ollama;    /* from the Ollama store (read only) */
} sprout_store_entry;

/* Every model, sorted by name. */
sprout_status sprout_store_list(sprout_store *store, sprout_store_entry **entries, size_t *n);
void sprout_store_entries_free(sprout_store_entry *entries, size_t n);

/* What a name stands for: its files and its Modelfile's settings. */
typedef struct sprout_store_model sprout_store_model;

/* SPROUT_ERR_NOT_FOUND when no model has the name. A model referenced by
 * path (not linked or copied) has its size checked, and its hash when its
 * modification time differs from the recorded one: SPROUT_ERR_IO naming
 * the path when it has gone or changed. */
sprout_status sprout_store_resolve(sprout_store *store, const char *name, sprout_store_model **out);
void sprout_store_model_free(sprout_store_model *m);
const char *sprout_store_model_name(const sprout_store_model *m);   /* short form */
const char *sprout_store_model_digest(const sprout_store_model *m); /* the manifest's */
uint64_t sprout_store_model_size(const sprout_store_model *m);     /* bytes of its layers */
int64_t sprout_store_model_modified(const sprout_store_model *m);
bool sprout_store_model_ollama(const sprout_store_model *m);
/* The GGUF to load (a blob, or the recorded path of a referenced file). */
const char *sprout_store_model_path(const sprout_store_model *m);
/* LoRA adapters (GGUF paths), in the Modelfile's order. */
size_t sprout_store_model_n_adapters(const sprout_store_model *m);
const char *sprout_store_model_adapter(const sprout_store_model *m, size_t i);
/* TEMPLATE (Go text/template source; sprout_template_parse takes it) or
 * NULL: the GGUF's own template. SYSTEM or NULL. The LICENSE texts joined
 * by blank lines, or NULL. */
const char *sprout_store_model_template(const sprout_store_model *m);
const char *sprout_store_model_system(const sprout_store_model *m);
const char *sprout_store_model_license(const sprout_store_model *m);
/* MESSAGE lines as a JSON array of {"role","content"} ("[]" when none),
 * and the PARAMETERs as Ollama's params layer holds them, a JSON object
 * ({"temperature":0.7,"stop":["a","b"]}, "{}" when none). */
const char *sprout_store_model_messages_json(const sprout_store_model *m);
const char *sprout_store_model_parameters_json(const sprout_store_model *m);
/* A Modelfile that recreates the model (`ollama show --modelfile`). */
const char *sprout_store_model_modelfile(const sprout_store_model *m);

/* The Modelfile settings that belong to whoever loads the model; 0 where
 * the Modelfile says nothing. */
typedef struct sprout_runner_settings {
    size_t struct_size;
    int32_t num_ctx, num_thread, num_batch, num_keep;
} sprout_runner_settings;

/* Sets cfg from the model's PARAMETERs (Ollama's names, and max_new_token,
 * stop_id) and runner from the rest (NULL: ignored). cfg's stop lists point
 * into m: it must outlive their use. Request options set afterwards
 * override these defaults. */
sprout_status sprout_store_model_apply(const sprout_store_model *m, sprout_generation_config *cfg,
                                       sprout_runner_settings *runner);

typedef struct sprout_store_create_params {
    size_t struct_size;      /* sizeof(sprout_store_create_params) */
    const char *base_dir;    /* where relative FROM and ADAPTER paths start; NULL: the working directory */
    /* How a local GGUF enters the store: false (default) references it,
     * by a hard link where the file system allows, else by its recorded
     * path, size and hash; true copies it into a blob. */
    bool copy;
    const char *quantize;    /* a type name ("Q4_K_M"): the model is quantized into a new blob; NULL: as it is */
    /* Ollama's create status lines ("parsing modelfile", "using existing
     * layer sha256:...", "writing manifest", "success"); return false to
     * cancel (SPROUT_ERR_CANCELLED, the store unchanged). */
    bool (*progress)(const char *status, void *user);
    void *progress_user;
} sprout_store_create_params;

/* Creates or replaces `name` from Modelfile text. FROM is a GGUF path, a
 * blob digest ("sha256:<hex>", for /api/create's files), or a model name
 * (sprout's or Ollama's: its layers are reused, the Modelfile's own
 * instructions replace theirs). Errors name the Modelfile's line. */
sprout_status sprout_store_create(sprout_store *store, const char *name, const char *modelfile, size_t len,
                                  const sprout_store_create_params *params);
/* A new name for the same layers (no blob is copied). */
sprout_status sprout_store_copy(sprout_store *store, const char *src, const char *dst);
/* Removes the name; blobs no other manifest uses are deleted (a linked
 * file's link, never a referenced file). An Ollama model is read only:
 * SPROUT_ERR_UNSUPPORTED. */
sprout_status sprout_store_remove(sprout_store *store, const char *name);

/* Blobs by digest ("sha256:<hex>"), as /api/blobs moves them. */
bool sprout_store_blob_exists(sprout_store *store, const char *digest);
typedef struct sprout_blob_writer sprout_blob_writer;
sprout_status sprout_store_blob_begin(sprout_store *store, const char *digest, sprout_blob_writer **out);
sprout_status sprout_blob_writer_write(sprout_blob_writer *w, const void *data, size_t len);
/* Checks the digest and renames the blob into place; frees w either way.
 * SPROUT_ERR_FORMAT when the bytes do not match the digest. */
sprout_status sprout_blob_writer_finish(sprout_blob_writer *w);
/* Drops what was written; frees w. NULL-safe. */
void sprout_blob_writer_abort(sprout_blob_writer *w);

/* Frees memory the library handed to the caller. */
void sprout_free(void *p);

#ifdef __cplusplus
}
#endif

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#endif /* SPROUT_H */
