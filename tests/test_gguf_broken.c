/* Hand-made broken GGUF files: each must be rejected with its own clear
 * message (naming the problem and where), never a crash or a read past the
 * mapping. Run under ASan/UBSan in the sanitizer build. */
#include <stdint.h>
#include <unistd.h>

#include "gguf/gguf_reader.h"
#include "gguf_bytes.h"
#include "test_util.h"

/* The knobs of one image; a test changes one and expects one error. */
typedef struct spec {
    uint32_t version;
    uint64_t n_tensors_override, n_kv_override; /* 0: the real counts */
    const char *arch_key;
    bool dup_key;
    bool bad_value_type;
    bool alignment_kv;
    uint32_t alignment;
    bool alignment_as_string;
    const char *name_a, *name_b;
    uint32_t n_dims_a;
    uint64_t ne_a[5];
    uint32_t type_b;
    uint64_t ne_b0;
    uint64_t offset_a, offset_b;
    bool huge_array, deep_array, bad_elem_type;
    size_t data_bytes; /* bytes of tensor data actually written */
} spec;

static spec base_spec(void) {
    return (spec){
        .version = 3,
        .arch_key = "general.architecture",
        .alignment = 32,
        .name_a = "a",
        .name_b = "b",
        .n_dims_a = 2,
        .ne_a = {8, 2},
        .type_b = SPROUT_TYPE_Q8_0,
        .ne_b0 = 32,
        .offset_a = 0,
        .offset_b = 64,
        .data_bytes = 64 + 34,
    };
}

static void build(gbytes *b, const spec *s) {
    uint64_t n_kv = 2 + s->dup_key + s->bad_value_type + s->alignment_kv + s->huge_array + s->deep_array + s->bad_elem_type;
    gb_header(b, s->version, s->n_tensors_override ? s->n_tensors_override : 2, s->n_kv_override ? s->n_kv_override : n_kv);
    gb_kv_str(b, s->arch_key, "llama");
    gb_kv_u32(b, "llama.block_count", 5);
    if (s->dup_key) gb_kv_u32(b, "llama.block_count", 6);
    if (s->bad_value_type) {
        gb_str(b, "weird");
        gb_u32(b, 13);
        gb_u32(b, 0);
    }
    if (s->alignment_kv) {
        if (s->alignment_as_string) gb_kv_str(b, "general.alignment", "32");
        else gb_kv_u32(b, "general.alignment", s->alignment);
    }
    if (s->huge_array) {
        gb_str(b, "tokenizer.ggml.scores");
        gb_u32(b, 9);
        gb_u32(b, 4);
        gb_u64(b, (uint64_t)1 << 62);
        gb_u32(b, 0);
    }
    if (s->deep_array) { /* 20 levels of arrays of arrays */
        gb_str(b, "deep");
        gb_u32(b, 9);
        for (int i = 0; i < 20; i++) {
            gb_u32(b, 9);
            gb_u64(b, 1);
        }
        gb_u32(b, 4);
        gb_u64(b, 0);
    }
    if (s->bad_elem_type) {
        gb_str(b, "odd");
        gb_u32(b, 9);
        gb_u32(b, 77);
        gb_u64(b, 1);
    }
    gb_tensor(b, s->name_a, s->n_dims_a, s->ne_a, SPROUT_TYPE_F32, s->offset_a);
    uint64_t ne_b[1] = {s->ne_b0};
    gb_tensor(b, s->name_b, 1, ne_b, s->type_b, s->offset_b);
    gb_pad(b, s->alignment_kv && s->alignment && !(s->alignment & (s->alignment - 1)) ? s->alignment : 32);
    for (size_t i = 0; i < s->data_bytes; i++) gb_le(b, i & 0xFF, 1);
}

static sprout_status parse(const gbytes *b, size_t len, char *msg, size_t cap) {
    sp_gguf_part part = {0};
    sprout_status st = sp_gguf_part_parse(b->data, len, "test.gguf", &part);
    snprintf(msg, cap, "%s", st == SPROUT_OK ? "" : sprout_last_error());
    sp_gguf_part_free(&part);
    return st;
}

/* Expects `s` to fail with `status` and a message containing `needle`. */
static void expect(const char *what, const spec *s, sprout_status status, const char *needle) {
    gbytes b = {0};
    build(&b, s);
    char msg[1024];
    sprout_status st = parse(&b, b.len, msg, sizeof msg);
    CHECK_MSG(st == status, "%s: status %d (%s), expected %d", what, st, msg, status);
    CHECK_MSG(strstr(msg, needle) != NULL, "%s: message '%s' lacks '%s'", what, msg, needle);
    gb_free(&b);
}

static void test_valid_base(void) {
    spec s = base_spec();
    gbytes b = {0};
    build(&b, &s);
    sp_gguf_part part = {0};
    sprout_status st = sp_gguf_part_parse(b.data, b.len, "test.gguf", &part);
    CHECK_MSG(st == SPROUT_OK, "%s", sprout_last_error());
    CHECK(part.n_tensors == 2 && part.n_kv == 2);
    if (st == SPROUT_OK) {
        CHECK(part.tensors[0].bytes == 64 && part.tensors[1].bytes == 34);
        CHECK(part.tensors[1].data == b.data + part.data_offset + 64);
        CHECK(part.data_offset % 32 == 0);
    }
    sp_gguf_part_free(&part);
    gb_free(&b);
}

static void test_header_errors(void) {
    spec s = base_spec();
    gbytes b = {0};
    build(&b, &s);
    char msg[1024];
    memcpy(b.data, "GGUX", 4);
    CHECK(parse(&b, b.len, msg, sizeof msg) == SPROUT_ERR_FORMAT && strstr(msg, "bad magic"));
    CHECK(parse(&b, 0, msg, sizeof msg) == SPROUT_ERR_FORMAT && strstr(msg, "not a GGUF file"));
    gb_free(&b);

    s.version = 1;
    expect("version 1", &s, SPROUT_ERR_UNSUPPORTED, "unsupported GGUF version 1");
    s.version = 4;
    expect("version 4", &s, SPROUT_ERR_UNSUPPORTED, "unsupported GGUF version 4");
    s.version = 0x03000000;
    expect("big-endian", &s, SPROUT_ERR_UNSUPPORTED, "big-endian");
    s = base_spec();
    s.version = 2;
    gbytes v2 = {0};
    build(&v2, &s);
    CHECK_MSG(parse(&v2, v2.len, msg, sizeof msg) == SPROUT_OK, "version 2: %s", msg);
    gb_free(&v2);
}

static void test_counts(void) {
    spec s = base_spec();
    s.n_tensors_override = UINT64_MAX;
    expect("tensor count SIZE_MAX", &s, SPROUT_ERR_FORMAT, "tensor count 18446744073709551615");
    s = base_spec();
    s.n_tensors_override = UINT64_MAX / 24;
    expect("tensor count large", &s, SPROUT_ERR_FORMAT, "cannot fit");
    s = base_spec();
    s.n_kv_override = UINT64_MAX - 1;
    expect("kv count SIZE_MAX", &s, SPROUT_ERR_FORMAT, "metadata count 18446744073709551614");
    s = base_spec();
    s.huge_array = true;
    expect("array of 2^62", &s, SPROUT_ERR_FORMAT, "array of 4611686018427387904 u32 elements");
}

/* Cutting the file anywhere must fail cleanly; at each section boundary the
 * message must say the file is truncated (or its data ends early). */
static void test_truncation(void) {
    spec s = base_spec();
    gbytes b = {0};
    build(&b, &s);
    char msg[1024];
    int clean = 0;
    for (size_t len = 0; len < b.len; len++) {
        sprout_status st = parse(&b, len, msg, sizeof msg);
        bool ok = st == SPROUT_ERR_FORMAT &&
                  (strstr(msg, "truncated") || strstr(msg, "past end of file") || strstr(msg, "not a GGUF") ||
                   strstr(msg, "cannot fit"));
        if (ok) clean++;
        else fprintf(stderr, "truncated at %zu: status %d: %s\n", len, st, msg);
    }
    CHECK_MSG(clean == (int)b.len, "%d of %zu truncations rejected cleanly", clean, b.len);
    /* the section boundaries: magic, version, counts, first key length */
    static const size_t boundaries[] = {4, 8, 16, 24, 32};
    for (size_t i = 0; i < sizeof boundaries / sizeof boundaries[0]; i++) {
        parse(&b, boundaries[i], msg, sizeof msg);
        CHECK_MSG(strstr(msg, "truncated") || strstr(msg, "cannot fit"), "cut at %zu: %s", boundaries[i], msg);
    }
    /* cut inside the tensor data: the data of 'b' ends past the end */
    parse(&b, b.len - 1, msg, sizeof msg);
    CHECK_MSG(strstr(msg, "tensor 'b': data ends past end of file") != NULL, "%s", msg);
    gb_free(&b);
}

static void test_strings_and_keys(void) {
    /* a key whose length runs past the end */
    gbytes b = {0};
    gb_header(&b, 3, 0, 1);
    gb_u64(&b, 1000000);
    gb_put(&b, "abcdefghijklmnopqrstuvwxyz", 26);
    char msg[1024];
    CHECK(parse(&b, b.len, msg, sizeof msg) == SPROUT_ERR_FORMAT);
    CHECK_MSG(strstr(msg, "length 1000000 at offset 24 runs past end of file"), "%s", msg);
    gb_free(&b);

    /* a string value running past the end */
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "general.name");
    gb_u32(&b, 8);
    gb_u64(&b, UINT64_MAX);
    CHECK(parse(&b, b.len, msg, sizeof msg) == SPROUT_ERR_FORMAT);
    CHECK_MSG(strstr(msg, "key 'general.name': string value length 18446744073709551615"), "%s", msg);
    gb_free(&b);

    /* empty key, NUL in key */
    gb_header(&b, 3, 0, 1);
    gb_u64(&b, 0);
    gb_u32(&b, 4);
    gb_u32(&b, 1);
    CHECK(parse(&b, b.len, msg, sizeof msg) == SPROUT_ERR_FORMAT && strstr(msg, "empty name"));
    gb_free(&b);
    gb_header(&b, 3, 0, 1);
    gb_u64(&b, 3);
    gb_put(&b, "a\0b", 3);
    gb_u32(&b, 4);
    gb_u32(&b, 1);
    CHECK(parse(&b, b.len, msg, sizeof msg) == SPROUT_ERR_FORMAT && strstr(msg, "NUL byte"));
    gb_free(&b);

    spec s = base_spec();
    s.dup_key = true;
    expect("duplicate key", &s, SPROUT_ERR_FORMAT, "duplicate key 'llama.block_count' (entries 1 and 2)");
    s = base_spec();
    s.bad_value_type = true;
    expect("unknown value type", &s, SPROUT_ERR_FORMAT, "key 'weird': unknown value type 13");
    s = base_spec();
    s.deep_array = true;
    expect("deep nesting", &s, SPROUT_ERR_FORMAT, "nested deeper than");
    s = base_spec();
    s.bad_elem_type = true;
    expect("bad element type", &s, SPROUT_ERR_FORMAT, "key 'odd': unknown array element type 77");
}

static void test_alignment(void) {
    spec s = base_spec();
    s.alignment_kv = true;
    s.alignment = 3;
    expect("alignment 3", &s, SPROUT_ERR_FORMAT, "'general.alignment' is 3, not a power of two");
    s.alignment = 0;
    expect("alignment 0", &s, SPROUT_ERR_FORMAT, "not a power of two");
    s = base_spec();
    s.alignment_kv = true;
    s.alignment_as_string = true;
    expect("alignment string", &s, SPROUT_ERR_FORMAT, "'general.alignment' has type string, expected u32");
    s = base_spec();
    s.offset_b = 48;
    expect("misaligned", &s, SPROUT_ERR_FORMAT, "tensor 'b': data offset 48 is not a multiple of the alignment 32");
    /* a larger alignment moves the data section; offsets must follow it */
    s = base_spec();
    s.alignment_kv = true;
    s.alignment = 64;
    s.data_bytes = 64 + 34;
    gbytes b = {0};
    build(&b, &s);
    char msg[1024];
    CHECK_MSG(parse(&b, b.len, msg, sizeof msg) == SPROUT_OK, "alignment 64: %s", msg);
    gb_free(&b);
}

static void test_tensor_errors(void) {
    spec s = base_spec();
    s.offset_b = 1u << 20;
    expect("offset past EOF", &s, SPROUT_ERR_FORMAT, "tensor 'b': data ends past end of file (offset ");
    s = base_spec();
    s.offset_b = UINT64_MAX - 31;
    expect("offset overflow", &s, SPROUT_ERR_FORMAT, "tensor 'b': data ends past end of file");
    s = base_spec();
    s.n_dims_a = 4;
    s.ne_a[0] = 1ull << 32;
    s.ne_a[1] = 1ull << 32;
    s.ne_a[2] = 1ull << 32;
    s.ne_a[3] = 2;
    expect("dims overflow", &s, SPROUT_ERR_FORMAT, "tensor 'a': the product of its dimensions overflows");
    s = base_spec();
    s.ne_a[0] = UINT64_MAX;
    expect("dim too large", &s, SPROUT_ERR_FORMAT, "dimension 0 is 18446744073709551615");
    s = base_spec();
    s.n_dims_a = 5;
    expect("5 dims", &s, SPROUT_ERR_FORMAT, "tensor 'a' has 5 dimensions");
    s = base_spec();
    s.type_b = 99;
    expect("unknown type", &s, SPROUT_ERR_FORMAT, "tensor 'b' has unknown type id 99");
    s.type_b = 4; /* a removed ggml type (Q4_2) */
    expect("removed type", &s, SPROUT_ERR_FORMAT, "tensor 'b' has unknown type id 4");
    s = base_spec();
    s.name_b = "a";
    expect("duplicate tensor", &s, SPROUT_ERR_FORMAT, "duplicate tensor name 'a' (tensors 0 and 1)");
    s = base_spec();
    s.ne_a[1] = 4; /* 128 bytes of F32, but 'b' starts at 64 */
    s.data_bytes = 160;
    expect("size mismatch", &s, SPROUT_ERR_FORMAT, "tensor 'a' (F32, 128 bytes at data offset 0) overlaps tensor 'b'");
    s = base_spec();
    s.ne_b0 = 33;
    expect("partial block", &s, SPROUT_ERR_FORMAT, "tensor 'b': row length 33 is not a multiple of the Q8_0 block size 32");
    s = base_spec();
    s.name_b = "a_name_that_is_far_too_long_for_a_tensor_in_any_gguf_file_at_all_x";
    expect("long name", &s, SPROUT_ERR_FORMAT, "has a name of 66 bytes (at most 64)");
}

/* Through the file API: the path is in the message, and odd paths fail. */
static void test_open_files(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/broken.gguf", test_temp_dir());
    spec s = base_spec();
    s.offset_b = 1u << 20;
    gbytes b = {0};
    build(&b, &s);
    FILE *f = fopen(path, "wb");
    fwrite(b.data, 1, b.len, f);
    fclose(f);
    sprout_gguf *g = (sprout_gguf *)1;
    CHECK(sprout_gguf_open(path, &g) == SPROUT_ERR_FORMAT);
    CHECK(g == NULL);
    CHECK_MSG(strstr(sprout_last_error(), path) && strstr(sprout_last_error(), "tensor 'b'"), "%s", sprout_last_error());
    gb_free(&b);

    f = fopen(path, "wb");
    fclose(f); /* empty */
    CHECK(sprout_gguf_open(path, &g) == SPROUT_ERR_FORMAT && strstr(sprout_last_error(), "only 0 bytes"));
    unlink(path);

    CHECK(sprout_gguf_open("/nonexistent/model.gguf", &g) == SPROUT_ERR_NOT_FOUND);
    CHECK(strstr(sprout_last_error(), "/nonexistent/model.gguf: cannot open") != NULL);
    CHECK(sprout_gguf_open(test_temp_dir(), &g) == SPROUT_ERR_IO && strstr(sprout_last_error(), "not a regular file"));
    CHECK(sprout_gguf_open(NULL, &g) == SPROUT_ERR_INVALID_ARGUMENT);
    sprout_gguf_close(NULL);
    rmdir(test_temp_dir());
}

int main(void) {
    test_valid_base();
    test_header_errors();
    test_counts();
    test_truncation();
    test_strings_and_keys();
    test_alignment();
    test_tensor_errors();
    test_open_files();
    TEST_MAIN_END();
}
