/* Every GGUF in ../shared opens, and what the reader reports agrees with what
 * the data's READMEs and JSON descriptions say about it. */
#include <dirent.h>
#include <jansson.h>

#include "test_util.h"

static sprout_gguf *open_shared(const char *rel) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", test_shared_dir(), rel);
    sprout_gguf *g = NULL;
    sprout_status st = sprout_gguf_open(path, &g);
    CHECK_MSG(st == SPROUT_OK, "%s: %s", rel, sprout_last_error());
    return g;
}

static uint32_t get_u32(const sprout_gguf *g, const char *key) {
    uint32_t v = 0;
    CHECK_MSG(sprout_gguf_get_u32(g, key, &v) == SPROUT_OK, "%s: %s", key, sprout_last_error());
    return v;
}

static bool str_is(const sprout_gguf *g, const char *key, const char *want) {
    const char *s;
    size_t n;
    return sprout_gguf_get_str(g, key, &s, &n) == SPROUT_OK && n == strlen(want) && memcmp(s, want, n) == 0;
}

/* The facts models/README.md states about stories260K. */
static void test_stories260k(void) {
    sprout_gguf *g = open_shared("models/stories260K.gguf");
    if (!g) return;
    CHECK(sprout_gguf_version(g) == 3 && sprout_gguf_alignment(g) == 32);
    CHECK(sprout_gguf_file_size(g) == 1185376);
    CHECK(sprout_gguf_kv_count(g) == 19 && sprout_gguf_tensor_count(g) == 48);
    CHECK(str_is(g, "general.architecture", "llama"));
    CHECK(get_u32(g, "llama.context_length") == 2048);
    CHECK(get_u32(g, "llama.embedding_length") == 64);
    CHECK(get_u32(g, "llama.feed_forward_length") == 172);
    CHECK(get_u32(g, "llama.attention.head_count") == 8);
    CHECK(get_u32(g, "llama.attention.head_count_kv") == 4);
    CHECK(get_u32(g, "llama.block_count") == 5);
    CHECK(get_u32(g, "llama.rope.dimension_count") == 8);
    float eps = 0;
    CHECK(sprout_gguf_get_f32(g, "llama.attention.layer_norm_rms_epsilon", &eps) == SPROUT_OK && eps == 1e-5f);
    CHECK(str_is(g, "tokenizer.ggml.model", "llama"));
    CHECK(get_u32(g, "tokenizer.ggml.bos_token_id") == 1 && get_u32(g, "tokenizer.ggml.eos_token_id") == 2);
    CHECK(get_u32(g, "tokenizer.ggml.unknown_token_id") == 0);
    CHECK(get_u32(g, "tokenizer.ggml.padding_token_id") == UINT32_MAX);

    const sprout_gguf_value *tokens;
    uint64_t n_tokens = 0;
    sprout_gguf_type want_elem = SPROUT_GGUF_STRING;
    CHECK(sprout_gguf_get_array(g, "tokenizer.ggml.tokens", &tokens, &want_elem, &n_tokens) == SPROUT_OK && n_tokens == 512);
    const char *s;
    size_t n;
    CHECK(sprout_gguf_array_str(tokens, 13, &s, &n) == SPROUT_OK && n == 6 && !memcmp(s, "<0x0A>", 6));
    CHECK(sprout_gguf_array_str(tokens, 410, &s, &n) == SPROUT_OK && n == 3 && !memcmp(s, "\xE2\x96\x81", 3));
    CHECK(sprout_gguf_array_str(tokens, 512, &s, &n) == SPROUT_ERR_OUT_OF_RANGE);
    double score;
    const sprout_gguf_value *scores = sprout_gguf_find(g, "tokenizer.ggml.scores");
    CHECK(sprout_gguf_array_type(scores) == SPROUT_GGUF_FLOAT32 && sprout_gguf_array_f64(scores, 511, &score) == SPROUT_OK);
    CHECK(sprout_gguf_array_str(scores, 0, &s, &n) == SPROUT_ERR_TYPE_MISMATCH);

    /* typed getters refuse the wrong kind, and say which key */
    uint32_t u;
    CHECK(sprout_gguf_get_u32(g, "general.architecture", &u) == SPROUT_ERR_TYPE_MISMATCH);
    CHECK(strstr(sprout_last_error(), "general.architecture") != NULL);
    CHECK(sprout_gguf_get_u32(g, "no.such.key", &u) == SPROUT_ERR_NOT_FOUND);
    CHECK(sprout_gguf_get_str(g, "llama.block_count", &s, &n) == SPROUT_ERR_TYPE_MISMATCH);
    int32_t i32;
    CHECK(sprout_gguf_get_i32(g, "tokenizer.ggml.padding_token_id", &i32) == SPROUT_ERR_OUT_OF_RANGE);
    CHECK(sprout_gguf_find(g, "no.such.key") == NULL);

    /* data starts at byte 14176; output.weight is a copy of the embedding */
    int64_t emb = sprout_gguf_find_tensor(g, "token_embd.weight"), out = sprout_gguf_find_tensor(g, "output.weight");
    CHECK(emb >= 0 && out >= 0);
    CHECK(sprout_gguf_tensor_dim(g, emb, 0) == 64 && sprout_gguf_tensor_dim(g, emb, 1) == 512);
    CHECK(sprout_gguf_tensor_n_dims(g, emb) == 2 && sprout_gguf_tensor_dim(g, emb, 2) == 1);
    CHECK(sprout_gguf_tensor_bytes(g, emb) == 64 * 512 * 4);
    CHECK(memcmp(sprout_gguf_tensor_data(g, emb), sprout_gguf_tensor_data(g, out), 64 * 512 * 4) == 0);
    uint64_t first = UINT64_MAX;
    for (int64_t i = 0; i < sprout_gguf_tensor_count(g); i++)
        if (sprout_gguf_tensor_file_offset(g, i) < first) first = sprout_gguf_tensor_file_offset(g, i);
    CHECK(first == 14176);
    int64_t ffn_down = sprout_gguf_find_tensor(g, "blk.4.ffn_down.weight");
    CHECK(ffn_down >= 0 && sprout_gguf_tensor_dim(g, ffn_down, 0) == 172 && sprout_gguf_tensor_dim(g, ffn_down, 1) == 64);
    CHECK(sprout_gguf_find_tensor(g, "blk.5.ffn_down.weight") == -1);
    sprout_gguf_close(g);
}

/* tokenizer/README.md: the tokenizer model of each vocabulary file. */
static void test_tokenizer_vocabs(void) {
    static const char *const expected[][2] = {
        {"ggml-vocab-llama-spm.gguf", "llama"},  {"ggml-vocab-phi-3.gguf", "llama"},
        {"ggml-vocab-bert-bge.gguf", "bert"},    {"ggml-vocab-gpt-2.gguf", "gpt2"},
        {"ggml-vocab-falcon.gguf", "gpt2"},      {"ggml-vocab-llama-bpe.gguf", "gpt2"},
        {"ggml-vocab-qwen2.gguf", "gpt2"},       {"ggml-vocab-baichuan.gguf", "llama"},
    };
    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++) {
        char rel[256];
        snprintf(rel, sizeof rel, "tokenizer/%s", expected[i][0]);
        sprout_gguf *g = open_shared(rel);
        if (!g) continue;
        CHECK_MSG(str_is(g, "tokenizer.ggml.model", expected[i][1]), "%s", rel);
        uint64_t n_tokens = 0;
        CHECK(sprout_gguf_get_array(g, "tokenizer.ggml.tokens", NULL, NULL, &n_tokens) == SPROUT_OK && n_tokens > 1000);
        CHECK(sprout_gguf_tensor_count(g) == 0);
        sprout_gguf_close(g);
    }
    sprout_gguf *g = open_shared("tokenizer/ggml-vocab-llama-bpe.gguf");
    if (g) {
        uint64_t n_tokens = 0, n_merges = 0;
        sprout_gguf_get_array(g, "tokenizer.ggml.tokens", NULL, NULL, &n_tokens);
        sprout_gguf_get_array(g, "tokenizer.ggml.merges", NULL, NULL, &n_merges);
        CHECK(n_tokens == 128256 && n_merges == 280147);
        CHECK(str_is(g, "tokenizer.ggml.pre", "llama-bpe"));
        CHECK(sprout_gguf_find(g, "tokenizer.chat_template") != NULL);
        sprout_gguf_close(g);
    }
}

/* A metadata value from the file equals the JSON description's. */
static bool value_matches(const sprout_gguf_value *v, const json_t *want) {
    if (json_is_string(want)) {
        const char *s;
        size_t n;
        return sprout_gguf_value_str(v, &s, &n) == SPROUT_OK && n == json_string_length(want) &&
               memcmp(s, json_string_value(want), n) == 0;
    }
    if (json_is_integer(want)) {
        int64_t x;
        return sprout_gguf_value_i64(v, &x) == SPROUT_OK && x == json_integer_value(want);
    }
    if (json_is_real(want)) {
        double x;
        return sprout_gguf_value_f64(v, &x) == SPROUT_OK &&
               (sprout_gguf_value_type(v) == SPROUT_GGUF_FLOAT32 ? (float)x == (float)json_real_value(want)
                                                                  : x == json_real_value(want));
    }
    if (json_is_boolean(want)) {
        bool b;
        return sprout_gguf_value_bool(v, &b) == SPROUT_OK && b == json_is_true(want);
    }
    if (json_is_array(want)) {
        if (sprout_gguf_value_type(v) != SPROUT_GGUF_ARRAY || sprout_gguf_array_len(v) != json_array_size(want)) return false;
        for (size_t i = 0; i < json_array_size(want); i++) {
            const json_t *e = json_array_get(want, i);
            double x;
            if (!json_is_number(e) || sprout_gguf_array_f64(v, i, &x) != SPROUT_OK || (float)x != (float)json_number_value(e))
                return false;
        }
        return true;
    }
    return false;
}

/* The arch JSON files list each file's non-tokenizer metadata and its tensor table
 * as llama.cpp's gguf-py wrote them. */
static void test_arch_files(void) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/arch", test_shared_dir());
    DIR *d = opendir(dir);
    CHECK_MSG(d != NULL, "cannot list %s", dir);
    if (!d) return;
    int files = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".json")) continue;
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        json_error_t err;
        json_t *desc = json_load_file(path, 0, &err);
        CHECK_MSG(desc != NULL, "%s: %s", path, err.text);
        if (!desc) continue;
        char rel[1024];
        snprintf(rel, sizeof rel, "arch/%s", json_string_value(json_object_get(desc, "model_file")));
        sprout_gguf *g = open_shared(rel);
        if (g) {
            files++;
            CHECK(sprout_gguf_file_size(g) == (uint64_t)json_integer_value(json_object_get(desc, "file_bytes")));
            const char *key;
            json_t *want;
            json_object_foreach(json_object_get(desc, "gguf_metadata"), key, want) {
                const sprout_gguf_value *v = sprout_gguf_find(g, key);
                CHECK_MSG(v && value_matches(v, want), "%s: key %s", rel, key);
            }
            const json_t *tensors = json_object_get(desc, "tensors");
            CHECK(sprout_gguf_tensor_count(g) == (int64_t)json_array_size(tensors));
            for (size_t i = 0; i < json_array_size(tensors); i++) {
                const json_t *t = json_array_get(tensors, i);
                int64_t idx = sprout_gguf_find_tensor(g, json_string_value(json_object_get(t, "name")));
                CHECK_MSG(idx >= 0, "%s: tensor %s", rel, json_string_value(json_object_get(t, "name")));
                if (idx < 0) continue;
                CHECK(!strcmp(sprout_type_name(sprout_gguf_tensor_type(g, idx)), json_string_value(json_object_get(t, "type"))));
                const json_t *ne = json_object_get(t, "ne");
                CHECK(sprout_gguf_tensor_n_dims(g, idx) == (int)json_array_size(ne));
                for (size_t k = 0; k < json_array_size(ne); k++)
                    CHECK(sprout_gguf_tensor_dim(g, idx, (int)k) == json_integer_value(json_array_get(ne, k)));
            }
            sprout_gguf_close(g);
        }
        json_decref(desc);
    }
    closedir(d);
    CHECK_MSG(files >= 10, "only %d arch files checked", files);
}

/* Whatever else is in the data folders must open too. */
static bool check_opens(const char *dir, const char *name, void *subdir) {
    (void)dir;
    char rel[1024];
    snprintf(rel, sizeof rel, "%s/%s", (const char *)subdir, name);
    sprout_gguf *g = open_shared(rel);
    if (!g) return false;
    for (int64_t i = 0; i < sprout_gguf_kv_count(g); i++) CHECK(sprout_gguf_kv_key(g, i) && sprout_gguf_kv_value(g, i));
    for (int64_t i = 0; i < sprout_gguf_tensor_count(g); i++) {
        CHECK(sprout_gguf_tensor_file_offset(g, i) + sprout_gguf_tensor_bytes(g, i) <= sprout_gguf_file_size(g));
        CHECK(sprout_gguf_tensor_file_offset(g, i) % sprout_gguf_alignment(g) == 0);
    }
    sprout_gguf_close(g);
    return true;
}

static void test_every_file_opens(void) {
    static const char *const dirs[] = {"models", "tokenizer", "arch"};
    int opened = 0;
    for (size_t k = 0; k < sizeof dirs / sizeof dirs[0]; k++) opened += test_for_each_shared_file(dirs[k], ".gguf", check_opens, (void *)dirs[k]);
    printf("%d GGUF files opened\n", opened);
    CHECK(opened >= 40);
}

/* The value types' short names, as the CLI's info prints them. */
static void test_type_names(void) {
    static const struct {
        sprout_gguf_type type;
        const char *name;
    } names[] = {{SPROUT_GGUF_UINT8, "u8"},   {SPROUT_GGUF_INT8, "i8"},       {SPROUT_GGUF_UINT16, "u16"},  {SPROUT_GGUF_INT16, "i16"},
                 {SPROUT_GGUF_UINT32, "u32"}, {SPROUT_GGUF_INT32, "i32"},     {SPROUT_GGUF_FLOAT32, "f32"}, {SPROUT_GGUF_BOOL, "bool"},
                 {SPROUT_GGUF_STRING, "string"}, {SPROUT_GGUF_ARRAY, "array"}, {SPROUT_GGUF_UINT64, "u64"}, {SPROUT_GGUF_INT64, "i64"},
                 {SPROUT_GGUF_FLOAT64, "f64"}};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        CHECK_MSG(!strcmp(sprout_gguf_type_name(names[i].type), names[i].name), "type %d: %s", (int)names[i].type,
                  sprout_gguf_type_name(names[i].type));
    CHECK(!strcmp(sprout_gguf_type_name((sprout_gguf_type)13), "?"));
    /* a real file's values carry those types: stories260K's context length is a u32 */
    char path[1024];
    snprintf(path, sizeof path, "%s/models/stories260K.gguf", test_shared_dir());
    sprout_gguf *g = NULL;
    CHECK(sprout_gguf_open(path, &g) == SPROUT_OK);
    const sprout_gguf_value *v = sprout_gguf_find(g, "llama.context_length");
    CHECK(v && !strcmp(sprout_gguf_type_name(sprout_gguf_value_type(v)), "u32"));
    sprout_gguf_close(g);
}

int main(void) {
    test_stories260k();
    test_tokenizer_vocabs();
    test_arch_files();
    test_every_file_opens();
    test_type_names();
    TEST_MAIN_END();
}
