#include "pipeline/embedding.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "model/model.h"
#include "pipeline/result.h"

sprout_pooling sprout_model_pooling(const sprout_model *m) {
    /* llama.cpp's numbers: 1 mean, 2 cls, 3 last; load kept only those */
    return m && m->hp.pooling >= 1 && m->hp.pooling <= 3 ? (sprout_pooling)m->hp.pooling : SPROUT_POOLING_MEAN;
}

static const char *const pooling_names[] = {[SPROUT_POOLING_MEAN] = "mean", [SPROUT_POOLING_CLS] = "cls", [SPROUT_POOLING_LAST] = "last"};

const char *sprout_pooling_name(sprout_pooling pooling) {
    return pooling >= SPROUT_POOLING_MEAN && pooling <= SPROUT_POOLING_LAST ? pooling_names[pooling] : NULL;
}

sprout_status sprout_pooling_from_name(const char *name, sprout_pooling *out) {
    for (int p = SPROUT_POOLING_MEAN; name && p <= SPROUT_POOLING_LAST; p++)
        if (!strcmp(name, pooling_names[p])) {
            if (out) *out = (sprout_pooling)p;
            return SPROUT_OK;
        }
    return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "unknown pooling '%s' (mean, cls or last)", name ? name : "(null)");
}

sprout_status sp_pooling_resolve(const sprout_model *model, sprout_pooling requested, sprout_pooling *out) {
    if (requested == SPROUT_POOLING_MODEL) requested = sprout_model_pooling(model);
    if (!sprout_pooling_name(requested)) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "unknown pooling %d", (int)requested);
    *out = requested;
    return SPROUT_OK;
}

sprout_status sp_pool_init(sp_pool *p, sprout_pooling pooling, int32_t dim) {
    *p = (sp_pool){.pooling = pooling, .dim = dim, .acc = calloc((size_t)dim, sizeof(double))};
    return p->acc ? SPROUT_OK : sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
}

void sp_pool_add(sp_pool *p, const float *row) {
    /* in double: a mean over thousands of tokens does not lose the small ones */
    for (int32_t i = 0; i < p->dim; i++) p->acc[i] = p->pooling == SPROUT_POOLING_MEAN ? p->acc[i] + row[i] : row[i];
    p->n_rows++;
}

sprout_result *sp_pool_result(const sp_pool *p, bool normalize, const int32_t *prompt, size_t n_prompt) {
    sprout_result *r = calloc(1, sizeof *r);
    float *v = malloc((size_t)(p->dim ? p->dim : 1) * sizeof *v);
    int32_t *ids = malloc((n_prompt ? n_prompt : 1) * sizeof *ids);
    if (!r || !v || !ids) {
        free(r);
        free(v);
        free(ids);
        return NULL;
    }
    const double scale = p->pooling == SPROUT_POOLING_MEAN && p->n_rows > 0 ? 1.0 / p->n_rows : 1.0;
    double norm2 = 0;
    for (int32_t i = 0; i < p->dim; i++) norm2 += (p->acc[i] * scale) * (p->acc[i] * scale);
    const double unit = normalize && norm2 > 0 ? 1.0 / sqrt(norm2) : 1.0;
    for (int32_t i = 0; i < p->dim; i++) v[i] = (float)(p->acc[i] * scale * unit);
    if (n_prompt) memcpy(ids, prompt, n_prompt * sizeof *ids);
    r->embedding = v;
    r->n_embedding = (size_t)p->dim;
    r->prompt_tokens = ids;
    r->n_prompt_tokens = n_prompt;
    r->metrics.struct_size = sizeof r->metrics;
    r->metrics.n_prompt_tokens = (int32_t)n_prompt;
    return r;
}

void sp_pool_free(sp_pool *p) {
    free(p->acc);
    p->acc = NULL;
}
