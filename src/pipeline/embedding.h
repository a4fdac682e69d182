/* Embeddings: which of a prompt's hidden states a pooling needs, and how
 * they become one vector. The scheduler feeds the rows as its forward
 * passes make them (a prompt may take several). */
#ifndef SPROUT_PIPELINE_EMBEDDING_H
#define SPROUT_PIPELINE_EMBEDDING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sprout.h"

typedef struct sp_pool {
    sprout_pooling pooling; /* mean, cls or last (never MODEL) */
    int32_t dim;
    double *acc;            /* mean: the sum so far; cls and last: the row kept */
    int32_t n_rows;
} sp_pool;

/* MODEL resolved against the model; SPROUT_ERR_INVALID_ARGUMENT for a value
 * outside the enum. */
sprout_status sp_pooling_resolve(const sprout_model *model, sprout_pooling requested, sprout_pooling *out);

/* Whether prompt token i (of n) goes into the pooling. */
static inline bool sp_pool_wants(sprout_pooling pooling, int32_t i, int32_t n) {
    return pooling == SPROUT_POOLING_MEAN || (pooling == SPROUT_POOLING_CLS && i == 0) || (pooling == SPROUT_POOLING_LAST && i == n - 1);
}

sprout_status sp_pool_init(sp_pool *p, sprout_pooling pooling, int32_t dim);
/* The hidden state of the next wanted token, in prompt order. */
void sp_pool_add(sp_pool *p, const float *row);
/* The embedding's result: the vector (dim floats, unit length if asked; a
 * zero vector stays zero), the prompt and its token count in the metrics;
 * NULL out of memory. */
sprout_result *sp_pool_result(const sp_pool *p, bool normalize, const int32_t *prompt, size_t n_prompt);
void sp_pool_free(sp_pool *p);

#endif
