/* Writes a LoRA adapter in llama.cpp's GGUF layout for a base model, with
 * random low-rank pairs: no real adapter can be downloaded here, and tests
 * and benchmarks need them at several ranks, types and targets. The same
 * arguments always give the same bytes (a fixed generator, no clock).
 *
 * usage: make_lora BASE.gguf OUT.gguf [--rank R] [--type T] [--targets attn|ffn|experts|all|output|router|shexp]
 *                  [--alpha A] [--seed S] [--magnitude M] [--hostile KIND]
 *   --rank 8, --type F32 (any type sprout writes; a half whose rows do not
 *   divide into T's blocks is written F16, said on stderr), --targets all
 *   (attn: q, k, v, qkv, output projection; ffn: gate, up, down, fused
 *   gate+up included; experts: a mixture of experts' gate, up and down
 *   experts, 3-D halves with one slice per expert; all: these and the
 *   output head when the base has its own; output: that head alone;
 *   router, shexp: a mixture of experts' router, its shared expert's
 *   gate, up, down and gate logit (ffn_gate_inp_shexp)),
 *   --alpha 0 (none
 *   written), --seed 1, --magnitude 0.2 (each element M times an
 *   approximately normal draw).
 *   --hostile arch|lone-a|shape|rank0|slices|ranks|flat: a broken adapter
 *   for the tests (another architecture; the first target's lora_b left
 *   out; its lora_a one row too wide; rank 0 everywhere; its lora_b one
 *   slice more than the experts; its lora_b one rank more than its
 *   lora_a; every expert's pair one 2-D pair, as for a dense weight). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf_writer.h"
#include "random.h"
#include "sprout.h"

static const char *const attn_names[] = {"attn_q", "attn_k", "attn_v", "attn_qkv", "attn_output"};
static const char *const ffn_names[] = {"ffn_gate", "ffn_up", "ffn_down"};
static const char *const expert_names[] = {"ffn_gate_exps", "ffn_up_exps", "ffn_down_exps"};
static const char *const router_names[] = {"ffn_gate_inp"};
static const char *const shexp_names[] = {"ffn_gate_shexp", "ffn_up_shexp", "ffn_down_shexp", "ffn_gate_inp_shexp"};

static bool in_list(const char *s, size_t len, const char *const *names, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (strlen(names[i]) == len && !memcmp(s, names[i], len)) return true;
    return false;
}

/* Whether base tensor `name` is a target of `targets`. */
static bool is_target(const char *name, const char *targets, bool *is_output) {
    *is_output = !strcmp(name, "output.weight");
    if (*is_output) return !strcmp(targets, "all") || !strcmp(targets, "output");
    if (!strcmp(targets, "output")) return false;
    int layer, at = 0;
    if (sscanf(name, "blk.%d.%n", &layer, &at) != 1 || at == 0) return false;
    const char *rest = name + at, *dot = strstr(rest, ".weight");
    if (!dot || strcmp(dot, ".weight") != 0) return false;
    const size_t len = (size_t)(dot - rest);
    const bool all = !strcmp(targets, "all");
    return (in_list(rest, len, attn_names, 5) && (all || !strcmp(targets, "attn"))) ||
           (in_list(rest, len, ffn_names, 3) && (all || !strcmp(targets, "ffn"))) ||
           (in_list(rest, len, expert_names, 3) && (all || !strcmp(targets, "experts"))) ||
           (in_list(rest, len, router_names, 1) && !strcmp(targets, "router")) || (in_list(rest, len, shexp_names, 4) && !strcmp(targets, "shexp"));
}

typedef struct half {
    char name[128];
    int n_dims;
    int64_t ne[3];
    sprout_type type;
    void *data;
} half;

/* A random [ne0, ne1] matrix of `type` (F16 where ne0 does not divide
 * into its blocks), or n_slices of them as a 3-D [ne0, ne1, n_slices]
 * (n_slices 0: 2-D). */
static int n_fallback; /* halves written F16 instead */

static int make_half(half *h, const char *base, const char *suffix, int64_t ne0, int64_t ne1, int64_t n_slices, sprout_type type,
                     float magnitude, uint64_t *rng) {
    snprintf(h->name, sizeof h->name, "%s.%s", base, suffix);
    h->n_dims = n_slices ? 3 : 2;
    h->ne[0] = ne0;
    h->ne[1] = ne1;
    h->ne[2] = n_slices;
    if (n_slices) ne1 *= n_slices; /* the rows of every slice, one slice after another */
    h->type = ne0 % sprout_type_block_size(type) ? SPROUT_TYPE_F16 : type;
    n_fallback += h->type != type;
    const size_t row_bytes = (size_t)(ne0 / sprout_type_block_size(h->type)) * sprout_type_block_bytes(h->type);
    float *row = malloc((size_t)(ne0 > 0 ? ne0 : 1) * sizeof *row);
    h->data = calloc(1, row_bytes * (size_t)(ne1 > 0 ? ne1 : 1) + 1);
    if (!row || !h->data) return 1;
    for (int64_t r = 0; r < ne1; r++) {
        for (int64_t i = 0; i < ne0; i++) row[i] = magnitude * rng_normal(rng);
        if (sprout_quantize(h->type, row, (char *)h->data + (size_t)r * row_bytes, ne0) != SPROUT_OK) return 1;
    }
    free(row);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: make_lora BASE.gguf OUT.gguf [--rank R] [--type T]\n"
                        "                 [--targets attn|ffn|experts|all|output|router|shexp] [--alpha A]\n"
                        "                 [--seed S] [--magnitude M] [--hostile arch|lone-a|shape|rank0|slices|ranks|flat]\n");
        return 2;
    }
    int64_t rank = 8;
    sprout_type type = SPROUT_TYPE_F32;
    const char *targets = "all", *hostile = "";
    float alpha = 0.f, magnitude = 0.2f;
    uint64_t seed = 1;
    for (int i = 3; i < argc; i++) {
        const char *opt = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!val) {
            fprintf(stderr, "make_lora: %s needs a value\n", opt);
            return 2;
        }
        i++;
        if (!strcmp(opt, "--rank")) rank = strtoll(val, NULL, 10);
        else if (!strcmp(opt, "--type")) {
            if (!sprout_type_from_name(val, &type) || !sprout_type_can_dequantize(type)) {
                fprintf(stderr, "make_lora: unknown type '%s'\n", val);
                return 2;
            }
        } else if (!strcmp(opt, "--targets")) targets = val;
        else if (!strcmp(opt, "--alpha")) alpha = strtof(val, NULL);
        else if (!strcmp(opt, "--seed")) seed = strtoull(val, NULL, 10);
        else if (!strcmp(opt, "--magnitude")) magnitude = strtof(val, NULL);
        else if (!strcmp(opt, "--hostile")) hostile = val;
        else {
            fprintf(stderr, "make_lora: unknown option '%s'\n", opt);
            return 2;
        }
    }
    if (strcmp(targets, "attn") && strcmp(targets, "ffn") && strcmp(targets, "experts") && strcmp(targets, "all") &&
        strcmp(targets, "output") && strcmp(targets, "router") && strcmp(targets, "shexp")) {
        fprintf(stderr, "make_lora: --targets is attn, ffn, experts, all, output, router or shexp\n");
        return 2;
    }
    if (!strcmp(hostile, "rank0")) rank = 0;
    sprout_gguf *base = NULL;
    if (sprout_gguf_open(argv[1], &base) != SPROUT_OK) {
        fprintf(stderr, "make_lora: %s: %s\n", argv[1], sprout_last_error());
        return 1;
    }
    const char *arch;
    size_t arch_len;
    if (sprout_gguf_get_str(base, "general.architecture", &arch, &arch_len) != SPROUT_OK) {
        fprintf(stderr, "make_lora: %s has no general.architecture\n", argv[1]);
        return 1;
    }
    sp_gguf_writer *w = sp_gguf_writer_new();
    if (!strcmp(hostile, "arch")) arch = "gpt2", arch_len = 4;
    sp_gguf_writer_set_str(w, "general.architecture", arch, arch_len);
    sp_gguf_writer_set_str(w, "general.type", "adapter", 7);
    sp_gguf_writer_set_str(w, "adapter.type", "lora", 4);
    if (alpha != 0.f) sp_gguf_writer_set_scalar(w, "adapter.lora.alpha", SPROUT_GGUF_FLOAT32, &alpha);
    const int64_t n_base = sprout_gguf_tensor_count(base);
    half *halves = calloc((size_t)(2 * n_base + 1), sizeof *halves);
    int64_t n = 0;
    uint64_t rng = seed * 0x9E3779B97F4A7C15ull + 1;
    int err = !halves;
    for (int64_t i = 0; !err && i < n_base; i++) {
        const char *name = sprout_gguf_tensor_name(base, i);
        bool is_output;
        if (!is_target(name, targets, &is_output)) continue;
        const int64_t n_in = sprout_gguf_tensor_dim(base, i, 0), n_out = sprout_gguf_tensor_dim(base, i, 1);
        /* an expert tensor's halves have its slices too: one pair per expert */
        const int64_t slices = sprout_gguf_tensor_dim(base, i, 2) > 1 && strcmp(hostile, "flat") ? sprout_gguf_tensor_dim(base, i, 2) : 0;
        const bool first = n == 0;
        err |= make_half(&halves[n++], name, "lora_a", n_in + (first && !strcmp(hostile, "shape") ? 32 : 0), rank, slices, type, magnitude,
                         &rng);
        if (!(first && !strcmp(hostile, "lone-a")))
            err |= make_half(&halves[n++], name, "lora_b", rank + (first && !strcmp(hostile, "ranks")), n_out,
                             slices + (first && slices && !strcmp(hostile, "slices")), type, magnitude, &rng);
    }
    err |= n == 0; /* e.g. --targets output on a tied head */
    if (n_fallback)
        fprintf(stderr, "make_lora: %d of %lld halves written F16: their rows do not divide into %s blocks\n", n_fallback, (long long)n,
                sprout_type_name(type));
    for (int64_t i = 0; !err && i < n; i++)
        err |= sp_gguf_writer_add_tensor(w, halves[i].name, halves[i].type, halves[i].n_dims, halves[i].ne, halves[i].data) != SPROUT_OK;
    if (!err && sp_gguf_writer_write(w, argv[2], NULL, NULL) != SPROUT_OK) {
        fprintf(stderr, "make_lora: %s: %s\n", argv[2], sprout_last_error());
        err = 1;
    } else if (err) fprintf(stderr, "make_lora: %s\n", n == 0 ? "no target in the base" : sprout_last_error());
    for (int64_t i = 0; i < n; i++) free(halves[i].data);
    free(halves);
    sp_gguf_writer_free(w);
    sprout_gguf_close(base);
    return err ? 1 : 0;
}
