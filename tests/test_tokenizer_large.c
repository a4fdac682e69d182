/* One giant pre-token of 1 MiB ('a' repeated, and random CJK) through an SPM
 * and a BPE vocabulary: it must tokenize (a quadratic merge would take
 * hours, so CTest's timeout catches one) and detokenize to the same bytes.
 * bench/bench_tokenize measures the speed; no time is asserted here. */
#include <stdint.h>

#include "test_util.h"

enum { MIB = 1 << 20 };

static void check_big(const char *rel, const char *text, size_t n) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", test_shared_dir(), rel);
    sprout_gguf *g = NULL;
    sprout_tokenizer *t = NULL;
    if (sprout_gguf_open(path, &g) != SPROUT_OK || sprout_tokenizer_create(g, &t) != SPROUT_OK) {
        CHECK_MSG(0, "%s: %s", rel, sprout_last_error());
        sprout_gguf_close(g);
        return;
    }
    sprout_token *ids = malloc((n + 16) * sizeof *ids);
    size_t count = 0;
    CHECK_MSG(sprout_tokenize(t, text, n, 0, ids, n + 16, &count) == SPROUT_OK, "%s", sprout_last_error());
    char *back = malloc(n + 16);
    size_t len = 0;
    CHECK(sprout_detokenize(t, ids, count, 0, back, n + 16, &len) == SPROUT_OK);
    CHECK_MSG(len == n && memcmp(back, text, n) == 0, "%s: 1 MiB does not round-trip", rel);
    printf("%s: %zu bytes -> %zu tokens\n", rel, n, count);
    free(back);
    free(ids);
    sprout_tokenizer_free(t);
    sprout_gguf_close(g);
}

int main(void) {
    char *a = malloc(MIB), *cjk = malloc(MIB);
    memset(a, 'a', MIB);
    uint64_t s = 7;
    size_t n = 0;
    while (n + 3 <= MIB) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        uint32_t c = 0x4E00 + (uint32_t)(s >> 33) % (0x9FFF - 0x4E00);
        cjk[n++] = (char)(0xE0 | (c >> 12));
        cjk[n++] = (char)(0x80 | ((c >> 6) & 0x3F));
        cjk[n++] = (char)(0x80 | (c & 0x3F));
    }
    static const char *const vocabs[] = {"models/stories260K.gguf", "tokenizer/ggml-vocab-llama-spm.gguf",
                                         "tokenizer/ggml-vocab-llama-bpe.gguf", "tokenizer/ggml-vocab-qwen2.gguf"};
    for (size_t v = 0; v < 4; v++) {
        check_big(vocabs[v], a, MIB);
        check_big(vocabs[v], cjk, n);
    }
    free(a);
    free(cjk);
    TEST_MAIN_END();
}
