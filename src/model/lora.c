#include "model/lora.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "kernels/kernels.h"
#include "quant/quant.h"

/* A metadata string equal to `want` (the key's absence is an error too). */
static sprout_status expect_str(const sprout_gguf *g, const char *key, const char *want) {
    const char *s;
    size_t len;
    if (sprout_gguf_get_str(g, key, &s, &len) != SPROUT_OK) return sp_fail(SPROUT_ERR_FORMAT, "not a LoRA adapter: no string '%s'", key);
    if (len != strlen(want) || memcmp(s, want, len) != 0)
        return sp_fail(SPROUT_ERR_FORMAT, "not a LoRA adapter for this model: %s is '%.*s', expected '%s'", key, (int)(len < 64 ? len : 64),
                       s, want);
    return SPROUT_OK;
}

bool sp_lora_f16_tiles(void) { return sp_cpu_has_x86_avx2(); }

/* p->b_tiles or p->b_tiles_f16 from p->b (model/lora.h): row o of B holds
 * output o's r elements; tile o / TILE gets them as its column o % TILE. */
static sprout_status pack_b(sp_lora_pair *p) {
    const int64_t r = p->b.n_in, tiles = sp_lora_b_tile_count(p);
    const size_t n = (size_t)(tiles * r * SP_LORA_B_TILE);
    if (p->b.type == SPROUT_TYPE_F16 && sp_lora_f16_tiles()) {
        if (!(p->b_tiles_f16 = calloc(n, sizeof *p->b_tiles_f16))) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
        for (int64_t o = 0; o < p->b.n_out; o++) {
            const uint8_t *row = p->b.data + (size_t)o * p->b.row_bytes;
            uint16_t *tile = p->b_tiles_f16 + (o / SP_LORA_B_TILE) * r * SP_LORA_B_TILE + o % SP_LORA_B_TILE;
            for (int64_t k = 0; k < r; k++) memcpy(tile + k * SP_LORA_B_TILE, row + 2 * k, 2);
        }
        return SPROUT_OK;
    }
    const sp_type_traits *traits = sp_type_traits_of(p->b.type);
    if (!traits || !traits->dequantize) return sp_fail(SPROUT_ERR_UNSUPPORTED, "cannot compute with a lora_b of this type");
    if (!(p->b_tiles = calloc(n, sizeof *p->b_tiles))) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
    float row[SP_LORA_MAX_RANK];
    for (int64_t o = 0; o < p->b.n_out; o++) {
        traits->dequantize(p->b.data + (size_t)o * p->b.row_bytes, row, r);
        float *tile = p->b_tiles + (o / SP_LORA_B_TILE) * r * SP_LORA_B_TILE + o % SP_LORA_B_TILE;
        for (int64_t k = 0; k < r; k++) tile[k * SP_LORA_B_TILE] = row[k];
    }
    return SPROUT_OK;
}

/* The indices of a target's two halves in g, both marked used; *found
 * false when the file has neither, an error when it has one alone. */
static sprout_status find_halves(const sprout_gguf *g, const char *base, bool *used, int64_t *ia, int64_t *ib, bool *found) {
    char name_a[112], name_b[112];
    snprintf(name_a, sizeof name_a, "%s.lora_a", base);
    snprintf(name_b, sizeof name_b, "%s.lora_b", base);
    *ia = sprout_gguf_find_tensor(g, name_a);
    *ib = sprout_gguf_find_tensor(g, name_b);
    *found = *ia >= 0 || *ib >= 0;
    if (!*found) return SPROUT_OK;
    if (*ia < 0 || *ib < 0)
        return sp_fail(SPROUT_ERR_FORMAT, "tensor '%s' has no pair: '%s' is missing", *ia < 0 ? name_b : name_a, *ia < 0 ? name_a : name_b);
    used[*ia] = used[*ib] = true;
    return SPROUT_OK;
}

/* lora_a's rank (its dim 1), within 1 and the smaller of the target's
 * input width and SP_LORA_MAX_RANK: a rank past the input width adds
 * nothing a smaller one could not, and the run-time term's buffers are
 * sized by the model's rows. */
static sprout_status check_rank(const sprout_gguf *g, int64_t ia, const char *base, int64_t n_in, int64_t *r) {
    *r = sprout_gguf_tensor_dim(g, ia, 1);
    const int64_t most = n_in < SP_LORA_MAX_RANK ? n_in : SP_LORA_MAX_RANK;
    if (*r < 1 || *r > most)
        return sp_fail(SPROUT_ERR_FORMAT, "tensor '%s' has rank %lld (1 to %lld for '%s')", sprout_gguf_tensor_name(g, ia), (long long)*r,
                       (long long)most, base);
    return SPROUT_OK;
}

/* The pair for model weight k, if the file has either half. */
static sprout_status bind_pair(const sprout_gguf *g, const sprout_model *m, int64_t k, bool *used, sp_lora_pair *p, float alpha) {
    char base[96];
    sp_model_weight_name(k, base, sizeof base);
    int64_t ia, ib, r;
    bool found;
    sprout_status st = find_halves(g, base, used, &ia, &ib, &found);
    if (st != SPROUT_OK || !found) return st;
    const sp_weight *w = sp_model_weight(m, k);
    /* a tied head is the embedding: llama.cpp finds no 'output.weight' to adapt either */
    if (!w->data || (k == 0 && sprout_gguf_find_tensor(m->gguf, "output.weight") < 0))
        return sp_fail(SPROUT_ERR_FORMAT, "tensor '%s' adapts '%s', which the model does not have", sprout_gguf_tensor_name(g, ia), base);
    if ((st = check_rank(g, ia, base, w->n_in, &r)) != SPROUT_OK) return st;
    st = sp_weight_bind(g, ia, w->n_in, r, &p->a);
    if (st == SPROUT_OK) st = sp_weight_bind(g, ib, r, w->n_out, &p->b);
    if (st == SPROUT_OK) st = pack_b(p);
    if (st != SPROUT_OK) return st;
    p->alpha_over_rank = alpha != 0.f ? alpha / (float)r : 1.f;
    return SPROUT_OK;
}

/* An expert half: n_expert slices of [ne0, ne1] of a type sprout computes
 * with; *first = slice 0 as a weight, *stride = the bytes between slices. */
static sprout_status bind_expert_half(const sprout_gguf *g, int64_t i, int64_t ne0, int64_t ne1, int64_t n_expert, sp_weight *first,
                                      size_t *stride) {
    const char *name = sprout_gguf_tensor_name(g, i);
    const sprout_type type = sprout_gguf_tensor_type(g, i);
    if (!sprout_type_can_dequantize(type))
        return sp_fail(SPROUT_ERR_UNSUPPORTED, "tensor '%s' has type %s, which sprout cannot compute with yet", name, sprout_type_name(type));
    const int64_t d0 = sprout_gguf_tensor_dim(g, i, 0), d1 = sprout_gguf_tensor_dim(g, i, 1), d2 = sprout_gguf_tensor_dim(g, i, 2);
    if (d0 != ne0 || d1 != ne1 || d2 != n_expert || sprout_gguf_tensor_elements(g, i) != ne0 * ne1 * n_expert)
        return sp_fail(SPROUT_ERR_FORMAT, "tensor '%s' has shape [%lld, %lld, %lld], expected [%lld, %lld, %lld] (one slice per expert)", name,
                       (long long)d0, (long long)d1, (long long)d2, (long long)ne0, (long long)ne1, (long long)n_expert);
    *stride = (size_t)(sprout_gguf_tensor_bytes(g, i) / (uint64_t)n_expert);
    *first = (sp_weight){.data = sprout_gguf_tensor_data(g, i), .type = type, .n_in = ne0, .n_out = ne1, .row_bytes = *stride / (size_t)ne1};
    return SPROUT_OK;
}

void sp_lora_expert_name(int32_t il, sp_lora_experts kind, char *buf, size_t cap) {
    static const char *const expert_tensors[SP_LORA_EXPERT_KINDS] = {"ffn_gate_exps", "ffn_up_exps", "ffn_down_exps"};
    snprintf(buf, cap, "blk.%d.%s.weight", il, expert_tensors[kind]);
}

/* The pairs of every expert of layer il's `kind` tensor, if the file has
 * either half: slice x of lora_a and lora_b is expert x's pair, every
 * expert of one rank. */
static sprout_status bind_expert_pairs(const sprout_gguf *g, const sprout_model *m, int32_t il, sp_lora_experts kind, bool *used,
                                       sp_lora_pair *pairs, float alpha) {
    char base[96];
    sp_lora_expert_name(il, kind, base, sizeof base);
    int64_t ia, ib, r;
    bool found;
    sprout_status st = find_halves(g, base, used, &ia, &ib, &found);
    if (st != SPROUT_OK || !found) return st;
    const sp_layer *ly = &m->layers[il];
    const sp_experts *x = kind == SP_LORA_GATE_EXPS ? &ly->gate_exps : kind == SP_LORA_UP_EXPS ? &ly->up_exps : &ly->down_exps;
    if (!x->first.data)
        return sp_fail(SPROUT_ERR_FORMAT, "tensor '%s' adapts '%s', which the model does not have", sprout_gguf_tensor_name(g, ia), base);
    const int64_t n_in = x->first.n_in, n_out = x->first.n_out, n_expert = m->hp.n_expert;
    if ((st = check_rank(g, ia, base, n_in, &r)) != SPROUT_OK) return st;
    sp_weight a, b;
    size_t a_stride, b_stride;
    if ((st = bind_expert_half(g, ia, n_in, r, n_expert, &a, &a_stride)) != SPROUT_OK ||
        (st = bind_expert_half(g, ib, r, n_out, n_expert, &b, &b_stride)) != SPROUT_OK)
        return st;
    for (int32_t e = 0; e < n_expert; e++) {
        sp_lora_pair *p = &pairs[sp_lora_expert_index(m, il, kind, e)];
        p->a = a, p->b = b;
        p->a.data += (size_t)e * a_stride;
        p->b.data += (size_t)e * b_stride;
        if ((st = pack_b(p)) != SPROUT_OK) return st;
        p->alpha_over_rank = alpha != 0.f ? alpha / (float)r : 1.f;
    }
    return SPROUT_OK;
}

static void free_pairs(sprout_lora *l) {
    if (!l || !l->pairs) return;
    for (int64_t k = 0; k < l->n_pairs; k++) free(l->pairs[k].b_tiles), free(l->pairs[k].b_tiles_f16);
    free(l->pairs);
}

sprout_status sp_lora_build(sprout_gguf *g, const sprout_model *m, sprout_lora **out) {
    *out = NULL;
    sprout_status st;
    if ((st = expect_str(g, "general.type", "adapter")) != SPROUT_OK || (st = expect_str(g, "adapter.type", "lora")) != SPROUT_OK ||
        (st = expect_str(g, "general.architecture", m->hp.arch_name)) != SPROUT_OK)
        return st;
    double alpha = 0;
    const sprout_gguf_value *v = sprout_gguf_find(g, "adapter.lora.alpha");
    if (v && (sprout_gguf_value_f64(v, &alpha) != SPROUT_OK || !isfinite((float)alpha)))
        return sp_fail(SPROUT_ERR_FORMAT, "adapter.lora.alpha must be a finite number");
    const int64_t n_tensors = sprout_gguf_tensor_count(g), n_weights = sp_model_weight_count(m);
    /* room for every expert's pair where the model has experts */
    const int64_t n_pairs = sp_lora_expert_index(m, m->hp.n_expert > 0 ? m->hp.n_layer : 0, 0, 0);
    sprout_lora *l = calloc(1, sizeof *l);
    bool *used = calloc((size_t)(n_tensors > 0 ? n_tensors : 1), sizeof *used);
    if (l) l->pairs = calloc((size_t)n_pairs, sizeof *l->pairs);
    if (l && l->pairs) l->n_pairs = n_pairs;
    if (!l || !used || !l->pairs) {
        st = sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
        goto fail;
    }
    for (int64_t k = 0; k < n_weights; k++)
        if ((st = bind_pair(g, m, k, used, &l->pairs[k], (float)alpha)) != SPROUT_OK) goto fail;
    for (int32_t il = 0; il < m->hp.n_layer; il++) /* a dense model's too: an expert tensor there is refused by name */
        for (int kind = 0; kind < SP_LORA_EXPERT_KINDS; kind++)
            if ((st = bind_expert_pairs(g, m, il, (sp_lora_experts)kind, used, l->pairs, (float)alpha)) != SPROUT_OK) goto fail;
    int64_t n_bound = 0;
    for (int64_t k = 0; k < n_pairs; k++) n_bound += l->pairs[k].a.data != NULL;
    /* every tensor must be half of a pair for a weight sprout adapts:
     * one left over (an embedding's, a norm's, a misspelt name) is refused,
     * not silently ignored */
    for (int64_t i = 0; i < n_tensors; i++)
        if (!used[i]) {
            st = sp_fail(SPROUT_ERR_UNSUPPORTED, "tensor '%s' adapts no weight of the model sprout can adapt", sprout_gguf_tensor_name(g, i));
            goto fail;
        }
    if (n_bound == 0) {
        st = sp_fail(SPROUT_ERR_FORMAT, "the adapter has no lora_a/lora_b tensors");
        goto fail;
    }
    free(used);
    static atomic_uint_fast64_t next_id = 1;
    l->id = atomic_fetch_add(&next_id, 1);
    l->gguf = g;
    l->model = m;
    *out = l;
    return SPROUT_OK;
fail:
    free(used);
    free_pairs(l);
    free(l);
    return st;
}

/* --- adapter sets ------------------------------------------------------------------------ */

sprout_status sp_lora_set_copy(const sprout_model *m, const sprout_lora_use *uses, size_t n, sp_lora_set *out) {
    *out = (sp_lora_set){0, NULL, NULL};
    if (n && !uses) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "%zu adapters given without their list", n);
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        if (!uses[i].adapter) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "adapter %zu is NULL", i);
        if (uses[i].adapter->model != m) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "adapter %zu was loaded against another model", i);
        if (!isfinite(uses[i].scale)) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "adapter %zu: scale is not finite", i);
        kept += uses[i].scale != 0.f;
    }
    if (!kept) return SPROUT_OK;
    /* one allocation: the uses, then their adapters' ids */
    sprout_lora_use *copy = malloc(kept * (sizeof *copy + sizeof(uint64_t)));
    if (!copy) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
    uint64_t *ids = (uint64_t *)(copy + kept);
    for (size_t i = 0, k = 0; i < n; i++)
        if (uses[i].scale != 0.f) ids[k] = uses[i].adapter->id, copy[k++] = uses[i];
    *out = (sp_lora_set){kept, copy, ids};
    return SPROUT_OK;
}

bool sp_lora_set_equal(const sp_lora_set *a, const sp_lora_set *b) {
    const size_t na = a ? a->n : 0, nb = b ? b->n : 0;
    if (na != nb) return false;
    for (size_t i = 0; i < na; i++)
        if (a->ids[i] != b->ids[i] || a->uses[i].scale != b->uses[i].scale) return false;
    return true;
}

void sp_lora_set_free(sp_lora_set *s) {
    free((void *)s->uses);
    *s = (sp_lora_set){0, NULL, NULL};
}

/* --- the public API ----------------------------------------------------------------------- */

sprout_status sprout_lora_load(const sprout_model *model, const char *path, sprout_lora **out) {
    if (!out) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "NULL output pointer");
    *out = NULL;
    if (!model || !path) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "NULL model or path");
    sprout_gguf *g = NULL;
    sprout_status st = sprout_gguf_open(path, &g);
    if (st != SPROUT_OK) return st;
    if ((st = sp_lora_build(g, model, out)) != SPROUT_OK) {
        sp_error_prefix("%s", path);
        sprout_gguf_close(g);
    }
    return st;
}

void sprout_lora_free(sprout_lora *l) {
    if (!l) return;
    sprout_gguf_close(l->gguf);
    free_pairs(l);
    free(l);
}
