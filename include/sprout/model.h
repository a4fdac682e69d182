/* sprout/model.h: models and the pipelines that run them.
 * Part of <sprout.h>, whose conventions hold here. */
#ifndef SPROUT_API_MODEL_H
#define SPROUT_API_MODEL_H

#include "tokenizer.h"

SPROUT_BEGIN_DECLS

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

SPROUT_END_DECLS

#endif /* SPROUT_API_MODEL_H */
