/* WordPiece against llama.cpp's `bert` tokenizer on the cases where BERT's
 * normalisation is easy to get wrong (tests/data/wordpiece/README.md says
 * how the ids were made): Hangul syllables, spacing and nonspacing marks,
 * accents; with the vocabulary as it is, and with the normalizer keys a
 * newer converter writes (lowercase off; accents kept), on copies this test
 * writes. */
#include <jansson.h>
#include <unistd.h>

#include "gguf/gguf_writer.h"
#include "test_util.h"

/* A copy of `src` with the normalizer keys (strip_accents < 0: left out). */
static bool write_keyed_copy(const char *src, const char *dst, bool lowercase, int strip_accents) {
    sprout_gguf *g = NULL;
    if (sprout_gguf_open(src, &g) != SPROUT_OK) return false;
    sp_gguf_writer *w = sp_gguf_writer_new();
    const bool strip = strip_accents > 0;
    bool ok = w && sp_gguf_writer_copy_metadata(w, g) == SPROUT_OK &&
              sp_gguf_writer_set_scalar(w, "tokenizer.ggml.normalizer.lowercase", SPROUT_GGUF_BOOL, &lowercase) == SPROUT_OK &&
              (strip_accents < 0 ||
               sp_gguf_writer_set_scalar(w, "tokenizer.ggml.normalizer.strip_accents", SPROUT_GGUF_BOOL, &strip) == SPROUT_OK) &&
              sp_gguf_writer_write(w, dst, NULL, NULL) == SPROUT_OK;
    sp_gguf_writer_free(w);
    sprout_gguf_close(g);
    return ok;
}

/* Every case's `field` ids from the vocabulary at `path`. */
static void check_cases(const char *path, const json_t *cases, const char *field) {
    sprout_gguf *g = NULL;
    sprout_tokenizer *tok = NULL;
    CHECK_MSG(sprout_gguf_open(path, &g) == SPROUT_OK && sprout_tokenizer_create(g, &tok) == SPROUT_OK, "%s: %s", path,
              sprout_last_error());
    size_t matched = 0;
    for (size_t i = 0; tok && i < json_array_size(cases); i++) {
        const json_t *c = json_array_get(cases, i), *want = json_object_get(c, field);
        const char *text = json_string_value(json_object_get(c, "text"));
        sprout_token ids[256];
        size_t n = 0;
        CHECK(sprout_tokenize(tok, text, strlen(text), 0, ids, 256, &n) == SPROUT_OK);
        bool same = n == json_array_size(want);
        for (size_t k = 0; same && k < n; k++) same = ids[k] == json_integer_value(json_array_get(want, k));
        CHECK_MSG(same, "%s, %s: \"%s\" gives %zu ids (first %d), llama.cpp %zu", path, field, text, n, n ? ids[0] : -1,
                  json_array_size(want));
        matched += same;
    }
    printf("%s (%s): %zu/%zu as llama.cpp\n", path, field, matched, json_array_size(cases));
    sprout_tokenizer_free(tok);
    sprout_gguf_close(g);
}

int main(void) {
    json_error_t err;
    json_t *data = json_load_file(SPROUT_WORDPIECE_DATA_DIR "/bert-bge.json", 0, &err);
    CHECK_MSG(data != NULL, "%s: %s", SPROUT_WORDPIECE_DATA_DIR "/bert-bge.json", err.text);
    if (!data) TEST_MAIN_END();
    const json_t *cases = json_object_get(data, "cases");
    CHECK(json_array_size(cases) >= 10);
    char vocab[1024], cased[256], keep[256];
    snprintf(vocab, sizeof vocab, "%s/%s", test_shared_dir(), json_string_value(json_object_get(data, "vocab")));
    snprintf(cased, sizeof cased, "%s/bert-cased.gguf", test_temp_dir());
    snprintf(keep, sizeof keep, "%s/bert-keep-accents.gguf", test_temp_dir());
    check_cases(vocab, cases, "ids");
    CHECK_MSG(write_keyed_copy(vocab, cased, false, -1), "%s", sprout_last_error());
    check_cases(cased, cases, "ids_cased");
    CHECK_MSG(write_keyed_copy(vocab, keep, true, 0), "%s", sprout_last_error());
    check_cases(keep, cases, "ids_keep_accents");
    unlink(cased);
    unlink(keep);
    rmdir(test_temp_dir());
    json_decref(data);
    TEST_MAIN_END();
}
