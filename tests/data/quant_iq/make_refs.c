// Makes the .quant references of tests/data/quant_iq (README.md there): not built with sprout.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ggml.h"
#include "ggml-cpu.h"
#include "gguf.h"

#define N 4096
static struct ggml_tensor *load(const char *path, const char *name, struct ggml_context **ctx) {
    struct gguf_init_params p = {.no_alloc = false, .ctx = ctx};
    struct gguf_context *g = gguf_init_from_file(path, p);
    if (!g) { fprintf(stderr, "cannot open %s\n", path); exit(1); }
    struct ggml_tensor *t = ggml_get_tensor(*ctx, name);
    if (!t) { fprintf(stderr, "no %s\n", name); exit(1); }
    return t;
}
int main(int argc, char **argv) {
    const char *model = argv[1], *imat = argv[2], *tensor = argv[3], *out = argv[4];
    struct ggml_context *mctx = NULL, *ictx = NULL;
    struct ggml_tensor *w = load(model, tensor, &mctx);
    char name[256];
    snprintf(name, sizeof name, "%s.in_sum2", tensor);
    struct ggml_tensor *s2 = load(imat, name, &ictx);
    snprintf(name, sizeof name, "%s.counts", tensor);
    struct ggml_tensor *cnt = ggml_get_tensor(ictx, name);
    const int64_t ne0 = w->ne[0];
    float imp_col[4096], imp[256];
    const float c = (float)lroundf(((float *)cnt->data)[0]);
    for (int64_t i = 0; i < ne0; i++) imp_col[i] = ((float *)s2->data)[i] / c;
    for (int i = 0; i < 256; i++) imp[i] = imp_col[i % ne0];
    const float *x = w->data;
    const enum ggml_type types[] = {GGML_TYPE_IQ2_XXS, GGML_TYPE_IQ2_XS, GGML_TYPE_IQ2_S, GGML_TYPE_IQ3_XXS,
                                    GGML_TYPE_IQ3_S, GGML_TYPE_IQ1_S, GGML_TYPE_IQ1_M};
    static char q[N * 4];
    static float y[N];
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        for (int with = 0; with < 2; with++) {
            if (!with && ggml_quantize_requires_imatrix(types[t])) continue;
            size_t bytes = ggml_quantize_chunk(types[t], x, q, 0, N / 256, 256, with ? imp : NULL);
            ggml_get_type_traits(types[t])->to_float(q, y, N);
            double e = 0, ref = 0;
            for (int i = 0; i < N; i++) e += (double)(y[i] - x[i]) * (y[i] - x[i]), ref += (double)x[i] * x[i];
            char path[512];
            snprintf(path, sizeof path, "%s/%s%s.quant", out, ggml_type_name(types[t]), with ? "-imatrix" : "");
            FILE *f = fopen(path, "wb");
            fwrite(q, 1, bytes, f);
            fclose(f);
            printf("%-8s %-8s rmse %.6g relative %.6g\n", ggml_type_name(types[t]), with ? "imatrix" : "plain", sqrt(e / N), sqrt(e / ref));
        }
    }
    return 0;
}
