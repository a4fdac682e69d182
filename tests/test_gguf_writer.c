/* The GGUF writer: every value type round-trips through the reader, a real
 * model rewritten reads back identical, a model split into 3 parts loads as
 * one (from any part's name), and a failed write leaves no file behind. */
#include <sys/stat.h>
#include <unistd.h>

#include "gguf/gguf_writer.h"
#include "test_util.h"

static bool file_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

static void test_every_value_type(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/values.gguf", test_temp_dir());
    sp_gguf_writer *w = sp_gguf_writer_new();
    uint8_t u8 = 200;
    int8_t i8 = -100;
    uint16_t u16 = 60000;
    int16_t i16 = -30000;
    uint32_t u32 = 4000000000u;
    int32_t i32 = -2000000000;
    uint64_t u64 = 18000000000000000000ull;
    int64_t i64 = -9000000000000000000ll;
    float f32 = 1e-5f;
    double f64 = 3.141592653589793;
    bool b = true;
    CHECK(sp_gguf_writer_set_scalar(w, "t.u8", SPROUT_GGUF_UINT8, &u8) == SPROUT_OK);
    CHECK(sp_gguf_writer_set_scalar(w, "t.i8", SPROUT_GGUF_INT8, &i8) == SPROUT_OK);
    CHECK(sp_gguf_writer_set_scalar(w, "t.u16", SPROUT_GGUF_UINT16, &u16) == SPROUT_OK);
    CHECK(sp_gguf_writer_set_scalar(w, "t.i16", SPROUT_GGUF_INT16, &i16) == SPROUT_OK);
    CHECK(sp_gguf_writer_set_scalar(w, "t.u32", SPROUT_GGUF_UINT32, &u32) == SPROUT_OK);
    CHECK(sp_gguf_writer_set_scalar(w, "t.i32", SPROUT_GGUF_INT32, &i32) == SPROUT_OK);
    CHECK(sp_gguf_writer_set_scalar(w, "t.u64", SPROUT_GGUF_UINT64, &u64) == SPROUT_OK);
    CHECK(sp_gguf_writer_set_scalar(w, "t.i64", SPROUT_GGUF_INT64, &i64) == SPROUT_OK);
    CHECK(sp_gguf_writer_set_scalar(w, "t.f32", SPROUT_GGUF_FLOAT32, &f32) == SPROUT_OK);
    CHECK(sp_gguf_writer_set_scalar(w, "t.f64", SPROUT_GGUF_FLOAT64, &f64) == SPROUT_OK);
    CHECK(sp_gguf_writer_set_scalar(w, "t.bool", SPROUT_GGUF_BOOL, &b) == SPROUT_OK);
    CHECK(sp_gguf_writer_set_str(w, "t.str", "h\0llo", 5) == SPROUT_OK);
    const int32_t ints[] = {-1, 2, -3};
    CHECK(sp_gguf_writer_set_array(w, "t.ints", SPROUT_GGUF_INT32, ints, 3) == SPROUT_OK);
    const bool bools[] = {true, false, true, true};
    CHECK(sp_gguf_writer_set_array(w, "t.bools", SPROUT_GGUF_BOOL, bools, 4) == SPROUT_OK);
    const char *strs[] = {"a", "", "ccc"};
    CHECK(sp_gguf_writer_set_str_array(w, "t.strs", strs, NULL, 3) == SPROUT_OK);
    CHECK(sp_gguf_writer_set_array(w, "t.empty", SPROUT_GGUF_FLOAT32, NULL, 0) == SPROUT_OK);
    CHECK(sp_gguf_writer_set_str(w, "t.empty_str", "", 0) == SPROUT_OK);
    CHECK(sp_gguf_writer_set_str_array(w, "t.no_strs", NULL, NULL, 0) == SPROUT_OK);
    const char unicode_key[] = "t.\xc3\xa9t\xc3\xa9.\xe6\xbc\xa2\xe5\xad\x97.\xf0\x9f\x8c\xb1";
    CHECK(sp_gguf_writer_set_str(w, unicode_key, "\xf0\x9f\x8c\xb1 sprout", 11) == SPROUT_OK);
    uint32_t replaced = 7;
    CHECK(sp_gguf_writer_set_scalar(w, "t.u8", SPROUT_GGUF_UINT32, &replaced) == SPROUT_OK);
    CHECK(sp_gguf_writer_write(w, path, NULL, NULL) == SPROUT_OK);

    sprout_gguf *g = NULL;
    CHECK_MSG(sprout_gguf_open(path, &g) == SPROUT_OK, "%s", sprout_last_error());
    if (!g) return;
    uint64_t u;
    int64_t i;
    double d;
    uint32_t x;
    CHECK(sprout_gguf_kv_count(g) == 19);
    CHECK(!strcmp(sprout_gguf_kv_key(g, 0), "t.u8")); /* replaced in place */
    CHECK(sprout_gguf_get_u32(g, "t.u8", &x) == SPROUT_OK && x == 7);
    CHECK(sprout_gguf_value_i64(sprout_gguf_find(g, "t.i8"), &i) == SPROUT_OK && i == -100);
    CHECK(sprout_gguf_value_u64(sprout_gguf_find(g, "t.u16"), &u) == SPROUT_OK && u == 60000);
    CHECK(sprout_gguf_value_i64(sprout_gguf_find(g, "t.i16"), &i) == SPROUT_OK && i == -30000);
    CHECK(sprout_gguf_get_u32(g, "t.u32", &x) == SPROUT_OK && x == 4000000000u);
    CHECK(sprout_gguf_value_i64(sprout_gguf_find(g, "t.i32"), &i) == SPROUT_OK && i == -2000000000);
    CHECK(sprout_gguf_get_u64(g, "t.u64", &u) == SPROUT_OK && u == u64);
    CHECK(sprout_gguf_value_i64(sprout_gguf_find(g, "t.i64"), &i) == SPROUT_OK && i == i64);
    CHECK(sprout_gguf_get_u64(g, "t.i64", &u) == SPROUT_ERR_OUT_OF_RANGE);
    CHECK(sprout_gguf_get_u32(g, "t.u64", &x) == SPROUT_ERR_OUT_OF_RANGE);
    float f;
    CHECK(sprout_gguf_get_f32(g, "t.f32", &f) == SPROUT_OK && f == 1e-5f);
    CHECK(sprout_gguf_value_f64(sprout_gguf_find(g, "t.f64"), &d) == SPROUT_OK && d == f64);
    bool bb;
    CHECK(sprout_gguf_get_bool(g, "t.bool", &bb) == SPROUT_OK && bb);
    CHECK(sprout_gguf_get_bool(g, "t.u32", &bb) == SPROUT_ERR_TYPE_MISMATCH);
    const char *s;
    size_t n;
    CHECK(sprout_gguf_get_str(g, "t.str", &s, &n) == SPROUT_OK && n == 5 && !memcmp(s, "h\0llo", 5));
    const sprout_gguf_value *a = sprout_gguf_find(g, "t.ints");
    CHECK(sprout_gguf_array_type(a) == SPROUT_GGUF_INT32 && sprout_gguf_array_len(a) == 3);
    CHECK(sprout_gguf_array_i64(a, 2, &i) == SPROUT_OK && i == -3);
    CHECK(sprout_gguf_array_u64(a, 0, &u) == SPROUT_ERR_OUT_OF_RANGE);
    CHECK(sprout_gguf_array_i64(a, 3, &i) == SPROUT_ERR_OUT_OF_RANGE);
    a = sprout_gguf_find(g, "t.bools");
    CHECK(sprout_gguf_array_bool(a, 1, &bb) == SPROUT_OK && !bb && sprout_gguf_array_bool(a, 3, &bb) == SPROUT_OK && bb);
    a = sprout_gguf_find(g, "t.strs");
    CHECK(sprout_gguf_array_str(a, 1, &s, &n) == SPROUT_OK && n == 0);
    CHECK(sprout_gguf_array_str(a, 2, &s, &n) == SPROUT_OK && n == 3 && !memcmp(s, "ccc", 3));
    CHECK(sprout_gguf_array_len(sprout_gguf_find(g, "t.empty")) == 0);
    CHECK(sprout_gguf_get_str(g, "t.empty_str", &s, &n) == SPROUT_OK && n == 0);
    a = sprout_gguf_find(g, "t.no_strs");
    CHECK(sprout_gguf_array_type(a) == SPROUT_GGUF_STRING && sprout_gguf_array_len(a) == 0);
    CHECK(sprout_gguf_get_str(g, unicode_key, &s, &n) == SPROUT_OK && n == 11 && !memcmp(s, "\xf0\x9f\x8c\xb1 sprout", 11));

    /* a copy of every key, written again, is the same file byte for byte */
    char copy[512];
    snprintf(copy, sizeof copy, "%s/values-copy.gguf", test_temp_dir());
    sp_gguf_writer *w2 = sp_gguf_writer_new();
    CHECK(sp_gguf_writer_copy_metadata(w2, g) == SPROUT_OK);
    CHECK(sp_gguf_writer_write(w2, copy, NULL, NULL) == SPROUT_OK);
    size_t len_a = 0, len_b = 0;
    char *fa = test_read_file(path, &len_a), *fb = test_read_file(copy, &len_b);
    CHECK(fa && fb && len_a == len_b && memcmp(fa, fb, len_a) == 0);
    free(fa);
    free(fb);
    sprout_gguf_close(g);
    sp_gguf_writer_free(w);
    sp_gguf_writer_free(w2);
    unlink(path);
    unlink(copy);
}

/* An array of arrays, written byte by byte through set_value of a parsed
 * nested value: build one with the reader from a hand-made image first. */
static void test_nested_arrays(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/nested.gguf", test_temp_dir());
    FILE *f = fopen(path, "wb");
    /* header: 0 tensors, 1 kv: "n" = [[1,2],[3],["x"]] as array<array> */
    uint8_t img[512];
    size_t o = 0;
#define PUT(v, nb)                                                                                    \
    do {                                                                                              \
        uint64_t _v = (v);                                                                            \
        for (int _i = 0; _i < (nb); _i++) img[o++] = (uint8_t)(_v >> (8 * _i));                       \
    } while (0)
    memcpy(img, "GGUF", 4);
    o = 4;
    PUT(3, 4);
    PUT(0, 8);
    PUT(1, 8);
    PUT(1, 8);
    img[o++] = 'n';
    PUT(9, 4);  /* array */
    PUT(9, 4);  /* of arrays */
    PUT(3, 8);  /* three of them */
    PUT(4, 4);  /* [1, 2] as u32 */
    PUT(2, 8);
    PUT(1, 4);
    PUT(2, 4);
    PUT(4, 4); /* [3] */
    PUT(1, 8);
    PUT(3, 4);
    PUT(8, 4); /* ["x"] */
    PUT(1, 8);
    PUT(1, 8);
    img[o++] = 'x';
#undef PUT
    fwrite(img, 1, o, f);
    fclose(f);
    sprout_gguf *g = NULL;
    CHECK_MSG(sprout_gguf_open(path, &g) == SPROUT_OK, "%s", sprout_last_error());
    if (!g) return;
    const sprout_gguf_value *v = sprout_gguf_find(g, "n");
    CHECK(sprout_gguf_array_type(v) == SPROUT_GGUF_ARRAY && sprout_gguf_array_len(v) == 3);
    const sprout_gguf_value *e0 = sprout_gguf_array_elem(v, 0), *e2 = sprout_gguf_array_elem(v, 2);
    uint64_t u;
    const char *s;
    size_t n;
    CHECK(sprout_gguf_array_len(e0) == 2 && sprout_gguf_array_u64(e0, 1, &u) == SPROUT_OK && u == 2);
    CHECK(sprout_gguf_array_str(e2, 0, &s, &n) == SPROUT_OK && n == 1 && s[0] == 'x');
    CHECK(sprout_gguf_array_elem(v, 3) == NULL && sprout_gguf_array_elem(e0, 0) == NULL);

    /* the writer re-encodes nested arrays byte for byte */
    char copy[512];
    snprintf(copy, sizeof copy, "%s/nested-copy.gguf", test_temp_dir());
    sp_gguf_writer *w = sp_gguf_writer_new();
    CHECK(sp_gguf_writer_copy_metadata(w, g) == SPROUT_OK);
    CHECK(sp_gguf_writer_write(w, copy, NULL, NULL) == SPROUT_OK);
    sp_gguf_writer_free(w);
    size_t len_a, len_b;
    char *a = test_read_file(path, &len_a), *b = test_read_file(copy, &len_b);
    CHECK(a && b && len_b >= len_a && memcmp(a, b, len_a) == 0);
    free(a);
    free(b);
    sprout_gguf_close(g);
    unlink(path);
    unlink(copy);
}

/* Rewrites `src` (metadata and tensors) to path, split per opts. */
static sprout_status rewrite(const sprout_gguf *src, const char *path, const sp_gguf_write_options *opts, uint32_t *parts) {
    sp_gguf_writer *w = sp_gguf_writer_new();
    sprout_status st = sp_gguf_writer_copy_metadata(w, src);
    for (int64_t i = 0; st == SPROUT_OK && i < sprout_gguf_tensor_count(src); i++) {
        int64_t ne[4];
        for (int d = 0; d < 4; d++) ne[d] = sprout_gguf_tensor_dim(src, i, d);
        st = sp_gguf_writer_add_tensor(w, sprout_gguf_tensor_name(src, i), sprout_gguf_tensor_type(src, i),
                                       sprout_gguf_tensor_n_dims(src, i), ne, sprout_gguf_tensor_data(src, i));
    }
    if (st == SPROUT_OK) st = sp_gguf_writer_write(w, path, opts, parts);
    sp_gguf_writer_free(w);
    return st;
}

static void expect_same_model(const sprout_gguf *a, const sprout_gguf *b) {
    int64_t skipped = 0;
    for (int64_t i = 0; i < sprout_gguf_kv_count(b); i++)
        if (!strncmp(sprout_gguf_kv_key(b, i), "split.", 6)) skipped++;
    CHECK(sprout_gguf_kv_count(a) + skipped == sprout_gguf_kv_count(b));
    for (int64_t i = 0; i < sprout_gguf_kv_count(a); i++)
        CHECK_MSG(!strcmp(sprout_gguf_kv_key(a, i), sprout_gguf_kv_key(b, i)), "key %lld", (long long)i);
    CHECK(sprout_gguf_tensor_count(a) == sprout_gguf_tensor_count(b));
    int same = 0;
    for (int64_t i = 0; i < sprout_gguf_tensor_count(a); i++) {
        int64_t j = sprout_gguf_find_tensor(b, sprout_gguf_tensor_name(a, i));
        same += j >= 0 && sprout_gguf_tensor_bytes(a, i) == sprout_gguf_tensor_bytes(b, j) &&
                memcmp(sprout_gguf_tensor_data(a, i), sprout_gguf_tensor_data(b, j), sprout_gguf_tensor_bytes(a, i)) == 0;
    }
    CHECK_MSG(same == sprout_gguf_tensor_count(a), "%d tensors identical", same);
}

static void test_split_model(void) {
    char src_path[1024];
    snprintf(src_path, sizeof src_path, "%s/models/stories260K.gguf", test_shared_dir());
    sprout_gguf *src = NULL;
    CHECK_MSG(sprout_gguf_open(src_path, &src) == SPROUT_OK, "%s", sprout_last_error());
    if (!src) return;

    char path[512];
    snprintf(path, sizeof path, "%s/whole.gguf", test_temp_dir());
    uint32_t parts = 0;
    CHECK(rewrite(src, path, NULL, &parts) == SPROUT_OK && parts == 1);
    sprout_gguf *g = NULL;
    CHECK(sprout_gguf_open(path, &g) == SPROUT_OK);
    if (g) {
        expect_same_model(src, g);
        CHECK(sprout_gguf_file_size(g) == sprout_gguf_file_size(src));
    }
    sprout_gguf_close(g);
    unlink(path);

    /* three parts of 16 tensors */
    snprintf(path, sizeof path, "%s/split.gguf", test_temp_dir());
    sp_gguf_write_options opts = {.split_max_tensors = 16};
    CHECK(rewrite(src, path, &opts, &parts) == SPROUT_OK && parts == 3);
    char names[3][600];
    for (int p = 0; p < 3; p++) snprintf(names[p], sizeof names[p], "%s/split-%05d-of-00003.gguf", test_temp_dir(), p + 1);
    CHECK(file_exists(names[0]) && file_exists(names[1]) && file_exists(names[2]) && !file_exists(path));
    for (int p = 0; p < 3; p++) { /* any part's name opens the whole model */
        g = NULL;
        CHECK_MSG(sprout_gguf_open(names[p], &g) == SPROUT_OK, "%s", sprout_last_error());
        if (!g) continue;
        CHECK(sprout_gguf_split_count(g) == 3);
        expect_same_model(src, g);
        CHECK(sprout_gguf_tensor_part(g, 0) == 0 && sprout_gguf_tensor_part(g, 47) == 2);
        uint32_t count = 0;
        CHECK(sprout_gguf_get_u32(g, "split.count", &count) == SPROUT_OK && count == 3);
        sprout_gguf_close(g);
    }

    /* a part renamed away: the error names the missing file */
    char moved[700];
    snprintf(moved, sizeof moved, "%s.moved", names[1]);
    rename(names[1], moved);
    CHECK(sprout_gguf_open(names[0], &g) == SPROUT_ERR_NOT_FOUND);
    CHECK_MSG(strstr(sprout_last_error(), "part 2 of 3 missing") && strstr(sprout_last_error(), "split-00002-of-00003.gguf"),
              "%s", sprout_last_error());
    /* a part in the wrong place: part 3 under the name of part 2 */
    rename(names[2], names[1]);
    CHECK(sprout_gguf_open(names[0], &g) == SPROUT_ERR_FORMAT && strstr(sprout_last_error(), "split.no/split.count say part 3 of 3"));
    /* a part under a name that does not follow the pattern */
    char odd[700];
    snprintf(odd, sizeof odd, "%s/odd.gguf", test_temp_dir());
    rename(names[0], odd);
    CHECK(sprout_gguf_open(odd, &g) == SPROUT_ERR_FORMAT && strstr(sprout_last_error(), "its name does not end in"));
    unlink(odd);
    unlink(names[1]);
    unlink(moved);

    /* split by size: parts of at most 400 KB of tensor data */
    opts = (sp_gguf_write_options){.split_max_bytes = 400000};
    CHECK(rewrite(src, path, &opts, &parts) == SPROUT_OK && parts >= 3);
    char first[600];
    snprintf(first, sizeof first, "%s/split-00001-of-%05u.gguf", test_temp_dir(), parts);
    CHECK(sprout_gguf_open(first, &g) == SPROUT_OK);
    if (g) expect_same_model(src, g);
    sprout_gguf_close(g);
    for (uint32_t p = 0; p < parts; p++) {
        char *name = sp_gguf_split_path(path, p, parts);
        unlink(name);
        free(name);
    }
    sprout_gguf_close(src);
}

static sprout_status failing_fill(void *user, int64_t index, void *dst, uint64_t bytes) {
    (void)user;
    memset(dst, 0, (size_t)bytes);
    return index == 1 ? SPROUT_ERR_IO : SPROUT_OK;
}

/* A write that fails halfway leaves neither the output nor a temporary. */
static void test_atomic_write(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/atomic.gguf", test_temp_dir());
    sp_gguf_writer *w = sp_gguf_writer_new();
    int64_t ne[2] = {64, 4};
    CHECK(sp_gguf_writer_add_tensor(w, "x", SPROUT_TYPE_F32, 2, ne, NULL) == SPROUT_OK);
    CHECK(sp_gguf_writer_add_tensor(w, "y", SPROUT_TYPE_Q8_0, 2, ne, NULL) == SPROUT_OK);
    CHECK(sp_gguf_writer_add_tensor(w, "x", SPROUT_TYPE_F32, 2, ne, NULL) == SPROUT_ERR_INVALID_ARGUMENT);
    int64_t bad[1] = {33};
    CHECK(sp_gguf_writer_add_tensor(w, "z", SPROUT_TYPE_Q4_K, 1, bad, NULL) == SPROUT_ERR_INVALID_ARGUMENT);
    sp_gguf_write_options opts = {.fill = failing_fill};
    CHECK(sp_gguf_writer_write(w, path, &opts, NULL) == SPROUT_ERR_IO);
    CHECK(!file_exists(path));
    int leftovers = 0;
    char cmd[700];
    snprintf(cmd, sizeof cmd, "ls %s | grep -c tmp", test_temp_dir());
    FILE *p = popen(cmd, "r");
    if (p) {
        if (fscanf(p, "%d", &leftovers) != 1) leftovers = -1;
        pclose(p);
    }
    CHECK_MSG(leftovers == 0, "%d temporary files left", leftovers);
    CHECK(sp_gguf_writer_write(w, "/nonexistent-dir/x.gguf", &opts, NULL) == SPROUT_ERR_IO);
    sp_gguf_writer_free(w);
}

int main(void) {
    test_every_value_type();
    test_nested_arrays();
    test_split_model();
    test_atomic_write();
    rmdir(test_temp_dir());
    TEST_MAIN_END();
}
