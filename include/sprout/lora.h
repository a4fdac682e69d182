/* sprout/lora.h: LoRA adapters applied at run time.
 * Part of <sprout.h>, whose conventions hold here. */
#ifndef SPROUT_API_LORA_H
#define SPROUT_API_LORA_H

#include "model.h"

SPROUT_BEGIN_DECLS

/* A LoRA adapter loaded against a model (sprout_lora_load, below). */
typedef struct sprout_lora sprout_lora;

/* An adapter and the scale a generation applies it with. */
typedef struct sprout_lora_use {
    const sprout_lora *adapter;
    float scale;
} sprout_lora_use;

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

SPROUT_END_DECLS

#endif /* SPROUT_API_LORA_H */
