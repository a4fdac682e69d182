/* Writes the fuzzer's seed corpus with sprout's own writer: small valid files
 * that between them use every metadata type, nested arrays, a non-default
 * alignment and a tensor of every type sprout computes with. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf/gguf_writer.h"
#include "sprout.h"

static int write_seed(sp_gguf_writer *w, const char *dir, const char *name) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    sprout_status st = sp_gguf_writer_write(w, path, NULL, NULL);
    sp_gguf_writer_free(w);
    if (st != SPROUT_OK) fprintf(stderr, "make_seeds: %s\n", sprout_last_error());
    return st == SPROUT_OK ? 0 : 1;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: make_seeds GGUF_DIR TOKENIZER_DIR\n");
        return 2;
    }
    const char *dir = argv[1];
    int rc = 0;

    sp_gguf_writer *w = sp_gguf_writer_new();
    uint8_t u8 = 1;
    int16_t i16 = -2;
    uint32_t u32 = 5;
    int64_t i64 = -7;
    float f = 1e-5f;
    double d = 0.5;
    bool b = true;
    sp_gguf_writer_set_str(w, "general.architecture", "llama", 5);
    sp_gguf_writer_set_scalar(w, "a.u8", SPROUT_GGUF_UINT8, &u8);
    sp_gguf_writer_set_scalar(w, "a.i16", SPROUT_GGUF_INT16, &i16);
    sp_gguf_writer_set_scalar(w, "llama.block_count", SPROUT_GGUF_UINT32, &u32);
    sp_gguf_writer_set_scalar(w, "a.i64", SPROUT_GGUF_INT64, &i64);
    sp_gguf_writer_set_scalar(w, "a.f32", SPROUT_GGUF_FLOAT32, &f);
    sp_gguf_writer_set_scalar(w, "a.f64", SPROUT_GGUF_FLOAT64, &d);
    sp_gguf_writer_set_scalar(w, "a.bool", SPROUT_GGUF_BOOL, &b);
    const char *tokens[] = {"<unk>", "<s>", "</s>", "\xE2\x96\x81the"};
    sp_gguf_writer_set_str_array(w, "tokenizer.ggml.tokens", tokens, NULL, 4);
    const float scores[] = {0, 0, 0, -1.5f};
    sp_gguf_writer_set_array(w, "tokenizer.ggml.scores", SPROUT_GGUF_FLOAT32, scores, 4);
    rc |= write_seed(w, dir, "metadata.gguf");

    w = sp_gguf_writer_new();
    sp_gguf_writer_set_alignment(w, 64);
    static const sprout_type types[] = {SPROUT_TYPE_F32,  SPROUT_TYPE_F16,  SPROUT_TYPE_BF16, SPROUT_TYPE_Q4_0,
                                        SPROUT_TYPE_Q4_1, SPROUT_TYPE_Q5_0, SPROUT_TYPE_Q5_1, SPROUT_TYPE_Q8_0,
                                        SPROUT_TYPE_Q2_K, SPROUT_TYPE_Q3_K, SPROUT_TYPE_Q4_K, SPROUT_TYPE_Q5_K,
                                        SPROUT_TYPE_Q6_K, SPROUT_TYPE_Q8_K};
    static uint8_t data[sizeof types / sizeof types[0]][512];
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        int64_t ne[2] = {256, 1};
        char name[32];
        snprintf(name, sizeof name, "t.%s", sprout_type_name(types[i]));
        memset(data[i], (int)(i * 37), sizeof data[i]);
        /* 256 elements of F32 need 1 KiB: use 64 of them for the plain types */
        if (!sprout_type_is_quantized(types[i])) ne[0] = 64;
        sp_gguf_writer_add_tensor(w, name, types[i], 2, ne, data[i]);
    }
    rc |= write_seed(w, dir, "tensors.gguf");

    w = sp_gguf_writer_new();
    rc |= write_seed(w, dir, "empty.gguf");

    /* tokenizer seeds: vocabulary byte, flags byte, text */
    static const char *const texts[] = {
        "Hello world! How are you?",
        "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n",
        "<s>[INST] Once upon a time [/INST]",
        "\xF0\x9F\x98\x81 \xE4\xB8\x96\xE7\x95\x8C caf\xC3\xA9 \xD0\x9F\xD1\x80\xD0\xB8",
        "   \t\n\n  3333 1234567 don't we'll",
        "\xFF\xFE\xC3\x28\xE2\x82\x00\x80 bad bytes",
    };
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/text%zu", argv[2], i);
        FILE *f = fopen(path, "wb");
        if (!f) return 1;
        unsigned char head[2] = {(unsigned char)(i * 3), (unsigned char)(i % 4 | 4)};
        fwrite(head, 1, 2, f);
        fwrite(texts[i], 1, strlen(texts[i]), f);
        fclose(f);
    }
    return rc;
}
