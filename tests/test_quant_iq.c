/* The IQ1/IQ2/IQ3 quantizers and importance matrices, against llama.cpp
 * (tests/data/quant_iq/README.md): on 4096 trained weights of
 * stories260K, with and without the importance matrix llama-imatrix made
 * for it, sprout must write llama.cpp's bytes; the importance read from the
 * GGUF and the legacy .dat must agree; broken matrices must be refused
 * with a message, never crash. The GGUF is written here from the JSON the
 * repository keeps (imatrix_json.h), and must come out as llama-imatrix's
 * file did, byte for byte. */
#include <math.h>
#include <stdint.h>

#include "gguf/gguf_reader.h"
#include "imatrix_json.h"
#include "quant/quant.h"
#include "quantize/imatrix.h"
#include "test_util.h"

#define N_REF 4096
#define REF_TENSOR "blk.0.ffn_gate.weight"

static const char *const iq_types[] = {"IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S", "IQ1_S", "IQ1_M"};

static char *data_path(const char *file) {
    static char path[1024];
    snprintf(path, sizeof path, "%s/%s", SPROUT_QUANT_IQ_DATA_DIR, file);
    return path;
}

/* llama-imatrix's stories260K.imatrix.gguf (16704 bytes), written from
 * the JSON into the temporary folder; NULL if it could not be. */
static const char *imatrix_gguf_path(void) {
    static char path[1024];
    if (path[0]) return path;
    snprintf(path, sizeof path, "%s/stories260K.imatrix.gguf", test_temp_dir());
    if (!imatrix_json_to_gguf(data_path("stories260K.imatrix.json"), path)) {
        path[0] = 0;
        return NULL;
    }
    size_t size = 0;
    char *bytes = test_read_file(path, &size);
    uint64_t hash = 1469598103934665603ull; /* 64-bit FNV-1a */
    for (size_t i = 0; bytes && i < size; i++) hash = (hash ^ (uint8_t)bytes[i]) * 1099511628211ull;
    CHECK_MSG(size == 16704 && hash == 0x9d00d60e268542d2ull, "%zu bytes, hash %016llx: not llama-imatrix's file", size,
              (unsigned long long)hash);
    free(bytes);
    return path;
}

/* The first N_REF weights of REF_TENSOR (64 columns a row). */
static bool load_weights(float *x) {
    char path[1024];
    snprintf(path, sizeof path, "%s/models/stories260K.gguf", test_shared_dir());
    sprout_gguf *g = NULL;
    if (sprout_gguf_open(path, &g) != SPROUT_OK) return false;
    const int64_t t = sprout_gguf_find_tensor(g, REF_TENSOR);
    const bool ok = t >= 0 && sprout_gguf_tensor_type(g, t) == SPROUT_TYPE_F32 && sprout_gguf_tensor_elements(g, t) >= N_REF;
    if (ok) memcpy(x, sprout_gguf_tensor_data(g, t), N_REF * sizeof *x);
    sprout_gguf_close(g);
    return ok;
}

/* The tensor's 64 importance values repeated over a 256-wide row: element
 * i of the flattened matrix is column i % 64. */
static bool row_importance(const sp_imatrix *m, float *row) {
    int64_t n = 0;
    const float *v = sp_imatrix_find(m, REF_TENSOR, &n);
    if (!v || n != 64) return false;
    for (int i = 0; i < 256; i++) row[i] = v[i % 64];
    return true;
}

static double rms_error(sprout_type type, const void *q, const float *x) {
    static float y[N_REF];
    sprout_dequantize(type, q, y, N_REF);
    double e = 0;
    for (int i = 0; i < N_REF; i++) e += (double)(y[i] - x[i]) * (y[i] - x[i]);
    return sqrt(e / N_REF);
}

static void test_against_llama(const float *x, const float *importance) {
    for (size_t k = 0; k < sizeof iq_types / sizeof iq_types[0]; k++) {
        sprout_type type;
        CHECK(sprout_type_from_name(iq_types[k], &type));
        const sp_type_traits *t = sp_type_traits_of(type);
        const size_t bytes = N_REF / 256 * t->block_bytes;
        for (int with = 0; with < 2; with++) {
            static uint8_t want[N_REF], got[N_REF];
            char name[64];
            snprintf(name, sizeof name, "%s%s.quant", iq_types[k], with ? "-imatrix" : "");
            size_t len = 0;
            char *ref = test_read_file(data_path(name), &len);
            if (!with && !t->quantize_ref) { /* llama.cpp has no quantizer without importance either */
                CHECK_MSG(!ref, "%s exists", name);
                CHECK(sprout_quantize(type, x, got, N_REF) == SPROUT_ERR_UNSUPPORTED);
                CHECK_MSG(strstr(sprout_last_error(), "--imatrix"), "%s: %s", iq_types[k], sprout_last_error());
                free(ref);
                continue;
            }
            CHECK_MSG(ref && len == bytes, "%s: %zu bytes", name, len);
            if (!ref || len != bytes) {
                free(ref);
                continue;
            }
            memcpy(want, ref, bytes);
            free(ref);
            memset(got, 0xA5, sizeof got);
            for (int r = 0; r < N_REF / 256; r++)
                t->quantize_weighted(x + 256 * r, got + r * t->block_bytes, 256, with ? importance : NULL);
            int differ = 0;
            for (size_t i = 0; i < bytes; i++) differ += got[i] != want[i];
            CHECK_MSG(differ == 0, "%s: %d of %zu bytes differ from llama.cpp's (rms error %g, llama.cpp's %g)", name,
                      differ, bytes, rms_error(type, got, x), rms_error(type, want, x));
            if (!with) { /* the public entry point is the same quantizer */
                static uint8_t plain[N_REF];
                CHECK(sprout_quantize(type, x, plain, N_REF) == SPROUT_OK && !memcmp(plain, got, bytes));
            }
        }
    }
}

/* Zeros stay zeros, and inf / nan must neither crash nor trip the sanitizers. */
static void test_odd_values(void) {
    static float zeros[256], odd[256], importance[256], out[256];
    static uint8_t q[256];
    for (int i = 0; i < 256; i++) {
        odd[i] = i % 3 == 0 ? INFINITY : (i % 3 == 1 ? NAN : -1e30f);
        importance[i] = i % 2 ? 0.f : 1.f;
    }
    for (size_t k = 0; k < sizeof iq_types / sizeof iq_types[0]; k++) {
        sprout_type type;
        sprout_type_from_name(iq_types[k], &type);
        const sp_type_traits *t = sp_type_traits_of(type);
        t->quantize_weighted(zeros, q, 256, importance);
        sprout_dequantize(type, q, out, 256);
        int nonzero = 0;
        for (int i = 0; i < 256; i++) nonzero += out[i] != 0.f;
        CHECK_MSG(nonzero == 0, "%s: zeros decode to non-zero", iq_types[k]);
        t->quantize_weighted(odd, q, 256, importance);
        t->quantize_weighted(odd, q, 256, NULL);
        sprout_dequantize(type, q, out, 256);
    }
}

/* llama-imatrix wrote the same run in both formats. */
static void test_formats_agree(const sp_imatrix *gguf) {
    sp_imatrix *dat = NULL;
    CHECK_MSG(sp_imatrix_load(data_path("stories260K.imatrix.dat"), &dat) == SPROUT_OK, "%s", sprout_last_error());
    if (!dat) return;
    CHECK(sp_imatrix_count(dat) == sp_imatrix_count(gguf) && sp_imatrix_count(dat) > 0);
    int worse = 0;
    for (int64_t i = 0; i < sp_imatrix_count(gguf); i++) {
        int64_t n = 0, m = 0;
        const float *a = sp_imatrix_find(gguf, sp_imatrix_name(gguf, i), &n);
        const float *b = sp_imatrix_find(dat, sp_imatrix_name(gguf, i), &m);
        if (!b || n != m) {
            worse++;
            continue;
        }
        for (int64_t j = 0; j < n; j++) worse += fabsf(a[j] - b[j]) > 1e-5f * fabsf(a[j]) + 1e-30f;
    }
    CHECK_MSG(worse == 0, "%d values differ between the GGUF and the .dat", worse);
    sp_imatrix_free(dat);
}

/* Broken variants of a file, each refused with its reason. */
static void expect_refused(const uint8_t *data, size_t size, const char *what, const char *reason) {
    sp_imatrix *m = NULL;
    const sprout_status st = sp_imatrix_parse(data, size, what, &m);
    CHECK_MSG(st != SPROUT_OK && !m, "%s accepted", what);
    if (st != SPROUT_OK) CHECK_MSG(strstr(sprout_last_error(), reason), "%s: '%s' lacks '%s'", what, sprout_last_error(), reason);
    sp_imatrix_free(m);
}

static void put_f32(uint8_t *p, float v) { memcpy(p, &v, 4); }

/* Where tensor `name`'s data starts in a GGUF image, or -1. */
static long gguf_data_at(const uint8_t *data, size_t size, const char *name) {
    sp_gguf_part part = {0};
    long at = -1;
    if (sp_gguf_part_parse(data, size, "copy", &part) == SPROUT_OK)
        for (int64_t k = 0; k < part.n_tensors; k++)
            if (!strcmp(part.tensors[k].name, name)) at = (long)part.tensors[k].file_offset;
    sp_gguf_part_free(&part);
    return at;
}

static void test_broken_gguf(void) {
    size_t size = 0;
    uint8_t *good = imatrix_gguf_path() ? (uint8_t *)test_read_file(imatrix_gguf_path(), &size) : NULL;
    CHECK(good && size > 1024);
    if (!good) return;
    uint8_t *bad = malloc(size);
    expect_refused(good, size - 100, "truncated.gguf", "truncated.gguf");
    const long counts = gguf_data_at(good, size, REF_TENSOR ".counts"), sums = gguf_data_at(good, size, REF_TENSOR ".in_sum2");
    CHECK(counts > 0 && sums > 0);
    if (counts > 0 && sums > 0) {
        memcpy(bad, good, size);
        put_f32(bad + counts, 0.f);
        expect_refused(bad, size, "zero-counts.gguf", "no activations");
        memcpy(bad, good, size);
        put_f32(bad + counts, NAN);
        expect_refused(bad, size, "nan-count.gguf", "count 0 is nan");
        memcpy(bad, good, size);
        put_f32(bad + sums + 8, -1.f);
        expect_refused(bad, size, "negative.gguf", "not negative");
        memcpy(bad, good, size);
        memcpy(bad + (counts - good[0] * 0), good + counts, 4); /* unchanged: still fine */
        sp_imatrix *m = NULL;
        CHECK(sp_imatrix_parse(bad, size, "same.gguf", &m) == SPROUT_OK);
        sp_imatrix_free(m);
    }
    /* a model is not an importance matrix */
    char path[1024];
    snprintf(path, sizeof path, "%s/models/stories260K.gguf", test_shared_dir());
    sp_imatrix *m = NULL;
    CHECK(sp_imatrix_load(path, &m) != SPROUT_OK && !m);
    CHECK_MSG(strstr(sprout_last_error(), "not an importance matrix"), "%s", sprout_last_error());
    free(bad);
    free(good);
}

static void test_broken_legacy(void) {
    size_t size = 0;
    uint8_t *good = (uint8_t *)test_read_file(data_path("stories260K.imatrix.dat"), &size);
    CHECK(good && size > 64);
    if (!good) return;
    uint8_t *bad = malloc(size);
    for (size_t cut = 1; cut < size; cut += size / 37 + 1) { /* every cut inside the entries is refused */
        sp_imatrix *m = NULL;
        const sprout_status st = sp_imatrix_parse(good, cut, "cut.dat", &m);
        if (st == SPROUT_OK) CHECK(sp_imatrix_count(m) > 0); /* a cut in the optional trailer */
        sp_imatrix_free(m);
    }
    expect_refused(good, 30, "short.dat", "truncated");
    int32_t name_len;
    memcpy(&name_len, good + 4, 4);
    memcpy(bad, good, size);
    const int32_t zero = 0, huge = 0x7FFFFFFF;
    memcpy(bad + 8 + name_len, &zero, 4); /* the first entry's call count */
    expect_refused(bad, size, "zero-calls.dat", "no activations");
    memcpy(bad, good, size);
    memcpy(bad + 12 + name_len, &huge, 4); /* its value count */
    expect_refused(bad, size, "huge.dat", "truncated");
    memcpy(bad, good, size);
    memcpy(bad, &zero, 4);
    expect_refused(bad, size, "empty.dat", "neither");
    expect_refused((const uint8_t *)"", 0, "nothing.dat", "neither");
    free(bad);
    free(good);
}

int main(void) {
    static float x[N_REF], importance[256];
    sp_imatrix *m = NULL;
    const char *gguf = imatrix_gguf_path();
    CHECK_MSG(gguf && sp_imatrix_load(gguf, &m) == SPROUT_OK, "%s", sprout_last_error());
    CHECK(load_weights(x));
    CHECK(m && row_importance(m, importance));
    if (m) {
        test_against_llama(x, importance);
        test_formats_agree(m);
    }
    sp_imatrix_free(m);
    test_odd_values();
    test_broken_gguf();
    test_broken_legacy();
    if (gguf) remove(gguf);
    TEST_MAIN_END();
}
