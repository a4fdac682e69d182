/* The CLI end to end: the binary run on real files, its output parsed and
 * compared with what the data's READMEs and vectors state. */
#include <jansson.h>
#include <math.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_util.h"

/* Runs the CLI with `args`; returns its exit status and stdout (+stderr if
 * merge) in *out. */
static int run_cli(const char *args, bool merge_stderr, char **out) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s' %s%s", SPROUT_CLI_PATH, args, merge_stderr ? " 2>&1" : "");
    return test_run_command(cmd, out);
}

static json_t *run_json(const char *args) {
    char *out;
    int rc = run_cli(args, false, &out);
    CHECK_MSG(rc == 0, "sprout %s exited %d", args, rc);
    json_error_t err;
    json_t *j = json_loads(out, 0, &err);
    CHECK_MSG(j != NULL, "sprout %s: bad JSON: %s", args, err.text);
    free(out);
    return j;
}

static json_int_t int_at(const json_t *obj, const char *key) { return json_integer_value(json_object_get(obj, key)); }

static void test_stories_json(void) {
    char args[1024];
    snprintf(args, sizeof args, "info '%s/models/stories260K.gguf' --json", test_shared_dir());
    json_t *j = run_json(args);
    if (!j) return;
    CHECK(!strcmp(json_string_value(json_object_get(j, "architecture")), "llama"));
    CHECK(int_at(j, "block_count") == 5);
    CHECK(int_at(j, "embedding_length") == 64);
    CHECK(int_at(j, "feed_forward_length") == 172);
    CHECK(int_at(j, "head_count") == 8);
    CHECK(int_at(j, "head_count_kv") == 4);
    CHECK(int_at(j, "context_length") == 2048);
    CHECK(int_at(j, "vocab_size") == 512);
    CHECK(int_at(j, "file_size") == 1185376);
    CHECK(int_at(j, "tensor_count") == 48);
    CHECK(int_at(json_object_get(j, "tensor_types"), "F32") == 48);
    CHECK(json_real_value(json_object_get(j, "layer_norm_rms_epsilon")) == 1e-5);
    const json_t *tok = json_object_get(j, "tokenizer");
    CHECK(!strcmp(json_string_value(json_object_get(tok, "model")), "llama"));
    CHECK(int_at(tok, "vocab_size") == 512);
    const json_t *special = json_object_get(tok, "special_tokens");
    CHECK(int_at(special, "bos") == 1 && int_at(special, "eos") == 2 && int_at(special, "unk") == 0);
    CHECK(json_object_get(special, "pad") == NULL); /* 4294967295 means none */
    CHECK(json_is_false(json_object_get(j, "chat_template")));
    CHECK(int_at(json_object_get(j, "rope"), "dimension_count") == 8);
    /* the parameter count is the sum of the tensors' elements */
    CHECK(int_at(j, "parameters") == 2 * 64 * 512 + 64 + 5 * (64 * 64 * 2 + 64 * 32 * 2 + 3 * 64 * 172 + 2 * 64));
    json_decref(j);

    snprintf(args, sizeof args, "info '%s/models/stories260K.gguf' --json --tensors --metadata", test_shared_dir());
    j = run_json(args);
    if (!j) return;
    const json_t *tensors = json_object_get(j, "tensors");
    CHECK(json_array_size(tensors) == 48);
    bool found = false;
    for (size_t i = 0; i < json_array_size(tensors); i++) {
        const json_t *t = json_array_get(tensors, i);
        if (strcmp(json_string_value(json_object_get(t, "name")), "token_embd.weight")) continue;
        found = true;
        const json_t *shape = json_object_get(t, "shape");
        CHECK(!strcmp(json_string_value(json_object_get(t, "type")), "F32"));
        CHECK(json_array_size(shape) == 2 && json_integer_value(json_array_get(shape, 0)) == 64 &&
              json_integer_value(json_array_get(shape, 1)) == 512);
        CHECK(int_at(t, "bytes") == 64 * 512 * 4);
    }
    CHECK(found);
    const json_t *meta = json_object_get(j, "metadata");
    CHECK(json_object_size(meta) == 19);
    const json_t *toks = json_object_get(meta, "tokenizer.ggml.tokens");
    CHECK(int_at(toks, "count") == 512 && json_array_size(json_object_get(toks, "values")) == 16);
    CHECK(!strcmp(json_string_value(json_array_get(json_object_get(toks, "values"), 1)), "<s>"));
    json_decref(j);
}

static void test_quantized_json(void) {
    char args[1024];
    snprintf(args, sizeof args, "info '%s/arch/qwen2-Q4_K_M.gguf' --json", test_shared_dir());
    json_t *j = run_json(args);
    if (!j) return;
    CHECK(!strcmp(json_string_value(json_object_get(j, "architecture")), "qwen2"));
    CHECK(!strcmp(json_string_value(json_object_get(j, "file_type")), "Q4_K_M"));
    const json_t *types = json_object_get(j, "tensor_types");
    CHECK(int_at(types, "Q4_K") > 0 && int_at(types, "Q6_K") > 0);
    json_decref(j);
}

static void test_text_and_errors(void) {
    char args[1024], *out;
    snprintf(args, sizeof args, "info '%s/models/stories260K.gguf'", test_shared_dir());
    CHECK(run_cli(args, false, &out) == 0);
    CHECK(strstr(out, "llama") && strstr(out, "embedding length") && strstr(out, "512"));
    free(out);

    char bad[512];
    snprintf(bad, sizeof bad, "%s/not-a-model.gguf", test_temp_dir());
    FILE *f = fopen(bad, "wb");
    fputs("GGUF\x03\0\0\0 this is not a model", f);
    fclose(f);
    snprintf(args, sizeof args, "info '%s'", bad);
    CHECK(run_cli(args, true, &out) == 1);
    CHECK_MSG(strstr(out, "sprout info: format error:") && strstr(out, bad), "%s", out);
    free(out);
    unlink(bad);
    rmdir(test_temp_dir());

    CHECK(run_cli("info /nonexistent.gguf", true, &out) == 1 && strstr(out, "cannot open"));
    free(out);
    CHECK(run_cli("info", true, &out) == 2 && strstr(out, "usage"));
    free(out);
    CHECK(run_cli("info --bogus x", true, &out) == 2);
    free(out);
    CHECK(run_cli("frobnicate", true, &out) == 2 && strstr(out, "unknown command"));
    free(out);
}

static void test_tokenize(void) {
    char args[2048], *out;
    const char *shared = test_shared_dir();
    snprintf(args, sizeof args, "tokenize -m '%s/models/stories260K.gguf' -p 'Once upon a time' --ids", shared);
    CHECK(run_cli(args, false, &out) == 0);
    CHECK_MSG(!strcmp(out, "1 403 407 261 378\n"), "got '%s'", out);
    free(out);
    snprintf(args, sizeof args, "tokenize -m '%s/models/stories260K.gguf' -p 'Once upon a time' --no-bos --ids", shared);
    CHECK(run_cli(args, false, &out) == 0 && !strcmp(out, "403 407 261 378\n"));
    free(out);
    /* default: id<TAB>piece per line, newlines escaped */
    snprintf(args, sizeof args, "tokenize -m '%s/models/stories260K.gguf' -p 'Once\n'", shared);
    CHECK(run_cli(args, false, &out) == 0);
    CHECK_MSG(!strncmp(out, "1\t<s>\n403\t Once\n13\t\\n\n", 22), "got '%s'", out);
    free(out);
    /* standard input and --json */
    snprintf(args, sizeof args, "tokenize -m '%s/tokenizer/ggml-vocab-qwen2.gguf' --json --special < /dev/null", shared);
    json_t *j = run_json(args);
    CHECK(j && json_array_size(json_object_get(j, "tokens")) == 0);
    json_decref(j);
    char input[512];
    snprintf(input, sizeof input, "%s/input.txt", test_temp_dir());
    FILE *f = fopen(input, "wb");
    fputs("<|im_start|>user", f);
    fclose(f);
    snprintf(args, sizeof args, "tokenize -m '%s/tokenizer/ggml-vocab-qwen2.gguf' --json --special -f '%s'", shared, input);
    j = run_json(args);
    if (j) {
        const json_t *tokens = json_object_get(j, "tokens"), *pieces = json_object_get(j, "pieces");
        CHECK(json_array_size(tokens) == 2 && json_integer_value(json_array_get(tokens, 0)) == 151644);
        CHECK(!strcmp(json_string_value(json_array_get(pieces, 0)), "<|im_start|>"));
        CHECK(!strcmp(json_string_value(json_array_get(pieces, 1)), "user"));
    }
    json_decref(j);
    /* without --special the same text is ordinary characters */
    snprintf(args, sizeof args, "tokenize -m '%s/tokenizer/ggml-vocab-qwen2.gguf' --ids < '%s'", shared, input);
    CHECK(run_cli(args, false, &out) == 0 && strncmp(out, "151644", 6) != 0);
    free(out);
    unlink(input);
    CHECK(run_cli("tokenize -p hi", true, &out) == 2 && strstr(out, "usage"));
    free(out);
    snprintf(args, sizeof args, "tokenize -m '%s/arch/llama-Q4_0.gguf' -p 'x' -f y", shared);
    CHECK(run_cli(args, true, &out) == 2);
    free(out);
    CHECK(run_cli("tokenize -m /nonexistent.gguf -p hi", true, &out) == 1 && strstr(out, "cannot open"));
    free(out);
}

static void test_template_cli(void) {
    char args[2048], *out;
    const char *shared = test_shared_dir();
    /* the model's own template and tokens, the default conversation */
    snprintf(args, sizeof args, "template -m '%s/tokenizer/ggml-vocab-llama-bpe.gguf'", shared);
    CHECK(run_cli(args, false, &out) == 0);
    CHECK_MSG(!strcmp(out, "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|>"
                           "<|start_header_id|>assistant<|end_header_id|>\n\n"),
              "got [%s]", out);
    free(out);
    /* a template file, messages, no generation prompt, explicit tokens; no newline added */
    char msgs[512];
    snprintf(msgs, sizeof msgs, "%s/messages.json", test_temp_dir());
    FILE *f = fopen(msgs, "wb");
    fputs("[{\"role\": \"user\", \"content\": \"Hi\"}, {\"role\": \"assistant\", \"content\": \"Yo\"}]", f);
    fclose(f);
    snprintf(args, sizeof args, "template --template '%s/chat_templates/llama-2-chat.jinja' --messages '%s' --no-generation-prompt --bos '<s>' --eos '</s>'",
             shared, msgs);
    CHECK(run_cli(args, false, &out) == 0);
    CHECK_MSG(!strcmp(out, "<s>[INST] Hi [/INST] Yo </s>"), "got [%s]", out);
    free(out);
    /* --vars and --now reach the template */
    char vars[512], tmpl[512];
    snprintf(vars, sizeof vars, "%s/vars.json", test_temp_dir());
    snprintf(tmpl, sizeof tmpl, "%s/t.jinja", test_temp_dir());
    f = fopen(vars, "wb");
    fputs("{\"who\": \"you\"}", f);
    fclose(f);
    f = fopen(tmpl, "wb");
    fputs("{{ who }} {{ strftime_now('%d %B %Y') }} {{ bos_token is defined }}\n", f);
    fclose(f);
    snprintf(args, sizeof args, "template --template '%s' --vars '%s' --now 2024-07-26T12:00:00", tmpl, vars);
    CHECK(run_cli(args, false, &out) == 0);
    CHECK_MSG(!strcmp(out, "you 26 July 2024 False"), "got [%s]", out);
    free(out);
    /* raise_exception: exit 1, the message verbatim on stderr */
    f = fopen(msgs, "wb");
    fputs("[{\"role\": \"system\", \"content\": \"S\"}, {\"role\": \"user\", \"content\": \"U\"}]", f);
    fclose(f);
    snprintf(args, sizeof args, "template --template '%s/chat_templates/gemma-2-it.jinja' --messages '%s' 2>&1 >/dev/null", shared, msgs);
    CHECK(run_cli(args, false, &out) == 1);
    CHECK_MSG(!strcmp(out, "System role not supported\n"), "got [%s]", out);
    free(out);
    /* a syntax error names its line and column */
    f = fopen(tmpl, "wb");
    fputs("ok\n{% if %}", f);
    fclose(f);
    snprintf(args, sizeof args, "template --template '%s'", tmpl);
    CHECK(run_cli(args, true, &out) == 1 && strstr(out, "line 2, column"));
    free(out);
    CHECK(run_cli("template --builtin chatml", false, &out) == 0 && !strcmp(out, "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n"));
    free(out);
    CHECK(run_cli("template --builtin nope", true, &out) == 2 && strstr(out, "--builtin nope: no such built-in template"));
    free(out);
    CHECK(run_cli("template", true, &out) == 2);
    free(out);
    unlink(msgs);
    unlink(vars);
    unlink(tmpl);
}

static void test_run(void) {
    char path[1024], args[4096], *out;
    snprintf(path, sizeof path, "%s/reference/stories260K-greedy.json", test_shared_dir());
    json_t *ref = json_load_file(path, 0, NULL);
    CHECK(ref != NULL);
    const json_t *cases = json_object_get(ref, "cases");
    for (size_t c = 0; ref && c < json_array_size(cases); c++) {
        const json_t *cs = json_array_get(cases, c);
        snprintf(args, sizeof args, "run -m '%s/models/stories260K.gguf' -p '%s' -n 64 --temp 0 --kv-type f32 --json -t 1", test_shared_dir(),
                 json_string_value(json_object_get(cs, "prompt")));
        json_t *j = run_json(args);
        if (!j) continue;
        CHECK(json_equal(json_object_get(j, "prompt_tokens"), json_object_get(cs, "prompt_tokens_with_bos")));
        CHECK_MSG(json_equal(json_object_get(j, "tokens"), json_object_get(cs, "generated_tokens")), "case %zu tokens differ", c);
        CHECK(json_equal(json_object_get(j, "text"), json_object_get(cs, "generated_text")));
        CHECK(!strcmp(json_string_value(json_object_get(j, "finish_reason")), "length"));
        CHECK(json_integer_value(json_object_get(json_object_get(j, "metrics"), "n_generated_tokens")) == 64);
        json_decref(j);
    }
    json_decref(ref);
    snprintf(args, sizeof args, "run -m '%s/models/stories260K.gguf' --prompt-ids '1 403 407 261 378' -n 5 --temp 0 --logprobs 3 --json",
             test_shared_dir());
    json_t *j = run_json(args);
    if (j) {
        const json_t *tokens = json_object_get(j, "tokens"), *lps = json_object_get(j, "logprobs");
        CHECK(json_array_size(tokens) == 5 && json_integer_value(json_array_get(tokens, 0)) == 432);
        CHECK(json_array_size(lps) == 5);
        const json_t *first = json_array_get(lps, 0);
        CHECK(json_integer_value(json_object_get(first, "token")) == 432);
        CHECK(fabs(json_real_value(json_object_get(first, "logprob")) + 0.0317) < 2e-3);
        CHECK(json_array_size(json_object_get(first, "top")) == 3);
    }
    json_decref(j);
    /* streaming: the continuation, then a newline */
    snprintf(args, sizeof args, "run -m '%s/models/stories260K.gguf' -p 'Once upon a time' -n 8 --temp 0", test_shared_dir());
    CHECK(run_cli(args, false, &out) == 0);
    CHECK_MSG(!strcmp(out, ", there was a little girl\n"), "got [%s]", out);
    free(out);
    snprintf(args, sizeof args, "run -m '%s/models/stories260K.gguf' -p 'Once upon a time' -n 8 --temp 0 --echo --stop girl", test_shared_dir());
    CHECK(run_cli(args, false, &out) == 0);
    CHECK_MSG(!strcmp(out, "Once upon a time, there was a little \n"), "got [%s]", out);
    free(out);
    snprintf(args, sizeof args, "run -m '%s/models/stories260K.gguf' -p 'Once upon a time' -n 4 --temp 0 --chat --system 'Be brief.'",
             test_shared_dir());
    CHECK(run_cli(args, false, &out) == 0 && strlen(out) > 1);
    free(out);
    /* errors: exit 1 and the reason */
    snprintf(args, sizeof args, "run -m '%s/models/stories260K.gguf' -p 'Once upon a time there was' -c 4", test_shared_dir());
    CHECK(run_cli(args, true, &out) == 1);
    CHECK_MSG(strstr(out, "context holds 4"), "got [%s]", out);
    free(out);
    snprintf(args, sizeof args, "run -m '%s/tokenizer/ggml-vocab-gpt-2.gguf' -p hi", test_shared_dir());
    CHECK(run_cli(args, true, &out) == 1 && strstr(out, "architecture 'gpt2' is not supported"));
    free(out);
    snprintf(args, sizeof args, "run -m '%s/tokenizer/ggml-vocab-llama-spm.gguf' -p hi", test_shared_dir());
    CHECK(run_cli(args, true, &out) == 1 && strstr(out, "tensor 'token_embd.weight' is missing"));
    free(out);
    CHECK(run_cli("run -p hi", true, &out) == 2 && strstr(out, "usage"));
    free(out);
    /* a penalty of 0 would silently mean off: refused, as 1 is the way to say it */
    snprintf(args, sizeof args, "run -m '%s/models/stories260K.gguf' -p hi --repeat-penalty 0", test_shared_dir());
    CHECK_MSG(run_cli(args, true, &out) == 2 && strstr(out, "--repeat-penalty 0: must be a number from 0.01 to 100"), "got [%s]", out);
    free(out);
    /* a context of 1 is refused while parsing (exit 2), not by the library (exit 1) */
    static const char *const one_cell[] = {"run -p hi", "serve", "embed -p hi"};
    for (size_t i = 0; i < sizeof one_cell / sizeof *one_cell; i++) {
        snprintf(args, sizeof args, "%s -m '%s/models/stories260K.gguf' -c 1", one_cell[i], test_shared_dir());
        CHECK_MSG(run_cli(args, true, &out) == 2 && strstr(out, "--ctx-size 1: must be 2 to"), "%s: got [%s]", args, out);
        free(out);
    }
    snprintf(args, sizeof args, "run -m '%s/models/stories260K.gguf' -p hi --temp abc", test_shared_dir());
    CHECK(run_cli(args, true, &out) == 2);
    free(out);
    /* chat from a pipe: two turns and the commands */
    snprintf(args, sizeof args, "chat -m '%s/models/stories260K.gguf' -n 6 --temp 0 < '%s/chat_in.txt'", test_shared_dir(), test_temp_dir());
    char in[512];
    snprintf(in, sizeof in, "%s/chat_in.txt", test_temp_dir());
    FILE *f = fopen(in, "wb");
    fputs("Hello\n/system Be kind.\nOnce upon a time\n/reset\n/quit\n", f);
    fclose(f);
    CHECK(run_cli(args, false, &out) == 0 && strstr(out, "(conversation reset)"));
    free(out);
    unlink(in);
}

/* SPROUT_CPU: a level that cannot be had is said on stderr, a typo too,
 * and the text is the same whatever the level (the same integers). */
static void test_kernel_level_env(void) {
    static const struct {
        const char *level, *said; /* NULL: nothing said */
    } cases[] = {
        {"generic", NULL},
        {"amx", "SPROUT_CPU=amx: this CPU or build does not have that level; using the "}, /* nothing where AMX is the best level */
        {"avx2x", "SPROUT_CPU=avx2x is not one of"},
#if defined(__x86_64__)
        {"i8mm", "SPROUT_CPU=i8mm: this CPU or build does not have that level"},
#else
        {"avx512", "SPROUT_CPU=avx512: this CPU or build does not have that level"},
#endif
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char cmd[4096], *out;
        snprintf(cmd, sizeof cmd, "SPROUT_CPU=%s '%s' run -m '%s/models/stories260K.gguf' -p 'Once upon a time' -n 8 --temp 0 2>&1", cases[i].level,
                 SPROUT_CLI_PATH, test_shared_dir());
        CHECK(test_run_command(cmd, &out) == 0);
        const char *text = ", there was a little girl\n";
        /* this process's best level (SPROUT_CPU is not set here) says whether the CLI has amx */
        const bool has_level = !strcmp(cases[i].level, "amx") && !strcmp(sprout_kernels_name(), "amx");
        if (has_level) CHECK_MSG(!strcmp(out, text), "%s: got [%s]", cases[i].level, out);
        else if (cases[i].said) CHECK_MSG(strstr(out, cases[i].said) && strstr(out, text), "%s: got [%s]", cases[i].level, out);
        else CHECK_MSG(!strcmp(out, text), "%s: got [%s]", cases[i].level, out);
        free(out);
    }
}

/* One option table: a thread count past the pool's limit (or under 1) is a
 * usage error naming the flag and its range in every command that takes -t;
 * nothing is lowered silently. */
static void test_thread_range(void) {
    const char *shared = test_shared_dir();
    static const char *const commands[] = {"run -p hi", "chat", "serve", "bench -p 4 -n 2 -r 1", "embed -p hi", "quantize"};
    char want[128], args[2048], *out;
    snprintf(want, sizeof want, "must be 1 to %d", SPROUT_MAX_THREADS);
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++) {
        const char *bad[] = {"0", "-3", "x"};
        char over[16];
        snprintf(over, sizeof over, "%d", SPROUT_MAX_THREADS + 1);
        for (int k = 0; k < 4; k++) {
            const char *t = k < 3 ? bad[k] : over;
            const bool quantize = !strcmp(commands[i], "quantize");
            if (quantize) snprintf(args, sizeof args, "quantize '%s/models/stories260K.gguf' /nonexistent/out.gguf Q8_0 -t %s", shared, t);
            else snprintf(args, sizeof args, "%s -m '%s/models/stories260K.gguf' -t %s", commands[i], shared, t);
            char flag[64];
            snprintf(flag, sizeof flag, "--threads %s: ", t);
            CHECK_MSG(run_cli(args, true, &out) == 2 && strstr(out, flag) && strstr(out, want), "%s: got [%s]", args, out);
            free(out);
        }
    }
}

/* --cache-type-k/-v (-ctk/-ctv) for each side, --kv-type for both, taken
 * by every command that makes a KV cache, bad values refused
 * (test_kv_quant_cli: the quantized types). */
static void test_cache_type(void) {
    const char *shared = test_shared_dir();
    char args[2048], *out;
    static const char *const spellings[] = {"--cache-type-k f32 -ctv f32", "--kv-type f32", "-ctk f32 -ctv f32", "--kv-type f32 --cache-type-v f32"};
    for (size_t i = 0; i < sizeof spellings / sizeof *spellings; i++) {
        snprintf(args, sizeof args, "run -m '%s/models/stories260K.gguf' -p 'Once upon a time' -n 8 --temp 0 %s -v", shared, spellings[i]);
        CHECK(run_cli(args, true, &out) == 0);
        CHECK_MSG(strstr(out, "f32 KV cache") && strstr(out, ", there was a little girl\n"), "%s: got [%s]", spellings[i], out);
        free(out);
    }
    /* the default is f16 */
    snprintf(args, sizeof args, "run -m '%s/models/stories260K.gguf' -p 'Once upon a time' -n 8 --temp 0 -v", shared);
    CHECK(run_cli(args, true, &out) == 0 && strstr(out, "f16 KV cache"));
    free(out);
    snprintf(args, sizeof args, "bench -m '%s/models/stories260K.gguf' -p 4 -n 2 -r 1 --json -t 1 --cache-type-k f32 -ctv f32", shared);
    json_t *j = run_json(args);
    CHECK(j && !strcmp(json_string_value(json_object_get(j, "kv_type")), "f32"));
    /* the share of mapped file pages in 2 MiB pages: a fraction, or -1 where /proc does not say */
    const double huge = j ? json_number_value(json_object_get(j, "huge_page_share")) : -2;
    CHECK_MSG(json_is_number(json_object_get(j, "huge_page_share")) && (huge == -1 || (huge >= 0 && huge <= 1)), "huge_page_share %g", huge);
    json_decref(j);
    snprintf(args, sizeof args, "bench -m '%s/models/stories260K.gguf' -p 4 -n 2 -r 1 -t 1", shared);
    CHECK(run_cli(args, false, &out) == 0 && strstr(out, "KV cache f16"));
    free(out);
    snprintf(args, sizeof args, "chat -m '%s/models/stories260K.gguf' -n 4 --temp 0 -ctk f32 -ctv f32 -v < /dev/null", shared);
    CHECK(run_cli(args, true, &out) == 0 && strstr(out, "f32 KV cache"));
    free(out);
    snprintf(args, sizeof args, "embed -m '%s/models/stories260K.gguf' -p hi -ctk f32 -ctv f32 -v", shared);
    CHECK(run_cli(args, true, &out) == 0 && strstr(out, "f32 KV cache"));
    free(out);
    /* serve: started on a free port until it is ready (or gone), then stopped; its scheduler says the type */
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "log=$(mktemp) && { '%s' serve -m '%s/models/stories260K.gguf' --port 0 -v --cache-type-k f32 -ctv f32 2>\"$log\" & pid=$!; "
             "i=0; while [ $i -lt 600 ] && kill -0 $pid 2>/dev/null && ! grep -q 'ready:' \"$log\"; do sleep 0.1; i=$((i + 1)); done; "
             "kill $pid; wait $pid; st=$?; cat \"$log\"; rm -f \"$log\"; exit $st; }",
             SPROUT_CLI_PATH, shared);
    CHECK(test_run_command(cmd, &out) == 0);
    CHECK_MSG(strstr(out, "ready:") && strstr(out, "f32 KV cache"), "serve -ctk f32: got [%s]", out);
    free(out);
    static const char *const bad[][2] = {{"run", "-p hi --cache-type-k q5_0"}, {"chat", "-ctv F16"}, {"bench", "--kv-type q4_1"}, {"serve", "-ctk"},
                                         {"embed", "-p hi -ctv"}};
    /* a flag is named in errors by its long spelling */
    static const char *const said[] = {"--cache-type-k q5_0: must be f32, f16, bf16, q8_0 or q4_0",
                                       "--cache-type-v F16: must be f32, f16, bf16, q8_0 or q4_0",
                                       "--kv-type q4_1: must be f32, f16, bf16, q8_0 or q4_0", "--cache-type-k needs a value",
                                       "--cache-type-v needs a value"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(args, sizeof args, "%s -m '%s/models/stories260K.gguf' %s", bad[i][0], shared, bad[i][1]);
        CHECK_MSG(run_cli(args, true, &out) == 2 && strstr(out, said[i]), "%s: got [%s]", args, out);
        free(out);
    }
}

/* Every command's --help comes from the tables: the shared flags it takes
 * are listed the same way everywhere. */
static void test_help(void) {
    static const struct {
        const char *command, *has, *lacks;
    } cases[] = {
        {"run", "-ctk, --cache-type-k T|-ctv, --cache-type-v T|--kv-type T|-t, --threads N|--top-p P|-n, --n-predict|-b, --batch-size N|--prompt-ids", NULL},
        {"chat", "--kv-type T|-t, --threads N|--temp T|-s, --seed S|--system TEXT", NULL},
        {"bench", "--kv-type T|-t, --threads N|-r, --reps N|-b, --batch-size N", "--temp"},
        {"serve", "--kv-type T|-t, --threads N|-c, --ctx-size|--parallel N", "--temp"},
        {"embed", "-t, --threads N|-c, --ctx-size|--pooling P", "--temp"},
        {"quantize", "-t, --threads N|--split-max-size SIZE", "--model"},
        {"info", "-m, --model FILE|--tensors", "--threads"},
        {"tokenize", "-m, --model FILE|--no-bos", "--threads"},
        {"template", "-m, --model FILE|--builtin NAME", "--threads"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char args[256], *out, has[512];
        snprintf(args, sizeof args, "%s --help", cases[i].command);
        CHECK(run_cli(args, false, &out) == 0);
        snprintf(has, sizeof has, "%s|-v, --verbose|--log-disable|usage: sprout %s", cases[i].has, cases[i].command);
        for (char *want = has, *bar; want; want = bar ? bar + 1 : NULL) {
            if ((bar = strchr(want, '|'))) *bar = 0;
            CHECK_MSG(strstr(out, want), "%s --help lacks '%s'", cases[i].command, want);
        }
        if (cases[i].lacks) CHECK_MSG(!strstr(out, cases[i].lacks), "%s --help has '%s'", cases[i].command, cases[i].lacks);
        free(out);
    }
    char *out;
    CHECK(run_cli("run --frobnicate", true, &out) == 2 && strstr(out, "unknown option '--frobnicate'") && strstr(out, "usage"));
    free(out);
    CHECK(run_cli("info --threads 2 x.gguf", true, &out) == 2 && strstr(out, "unknown option '--threads'"));
    free(out);
}

/* Logging: warnings and errors by default, -v adds the info lines (what
 * was loaded, the pipeline's shape), --log-disable says nothing at all. */
static void test_log_levels(void) {
    char cmd[4096], *out;
    const char *text = ", there was a little girl\n";
    snprintf(cmd, sizeof cmd, "'%s' run -m '%s/models/stories260K.gguf' -p 'Once upon a time' -n 8 --temp 0 -v 2>&1", SPROUT_CLI_PATH,
             test_shared_dir());
    CHECK(test_run_command(cmd, &out) == 0);
    CHECK_MSG(strstr(out, "sprout: loaded ") && strstr(out, "stories260K.gguf (llama") && strstr(out, "sprout: pipeline: 2048 tokens of context") &&
                  strstr(out, text),
              "got [%s]", out);
    free(out);
    snprintf(cmd, sizeof cmd, "'%s' embed -m '%s/models/stories260K.gguf' -p hi --verbose 2>&1 >/dev/null", SPROUT_CLI_PATH, test_shared_dir());
    CHECK(test_run_command(cmd, &out) == 0 && strstr(out, "sprout: scheduler: "));
    free(out);
    snprintf(cmd, sizeof cmd, "SPROUT_CPU=avx2x '%s' run -m '%s/models/stories260K.gguf' -p 'Once upon a time' -n 8 --temp 0 --log-disable 2>&1",
             SPROUT_CLI_PATH, test_shared_dir());
    CHECK(test_run_command(cmd, &out) == 0);
    CHECK_MSG(!strcmp(out, text), "--log-disable: got [%s]", out);
    free(out);
    /* the default hides the info lines but keeps the warning */
    snprintf(cmd, sizeof cmd, "SPROUT_CPU=avx2x '%s' run -m '%s/models/stories260K.gguf' -p 'Once upon a time' -n 8 --temp 0 2>&1",
             SPROUT_CLI_PATH, test_shared_dir());
    CHECK(test_run_command(cmd, &out) == 0);
    CHECK_MSG(strstr(out, "sprout: warning: SPROUT_CPU=avx2x") && !strstr(out, "pipeline:") && strstr(out, text), "got [%s]", out);
    free(out);
}

/* sprout embed: texts from -p and from a file's lines, in order, the JSON
 * and plain forms agreeing, unit length unless asked otherwise. */
static void test_embed(void) {
    char args[2048], *out = NULL;
    const char *shared = test_shared_dir();
    char lines[] = "/tmp/sprout-test-embed-XXXXXX";
    const int fd = mkstemp(lines);
    CHECK(fd >= 0 && write(fd, "Once upon a time\n\nA cat sat\n", 29) == 29);
    if (fd >= 0) close(fd);
    snprintf(args, sizeof args, "embed -m '%s/models/stories260K.gguf' -p 'Once upon a time' -p 'A cat sat' --json", shared);
    json_t *a = run_json(args);
    snprintf(args, sizeof args, "embed -m '%s/models/stories260K.gguf' -f '%s' --json", shared, lines);
    json_t *b = run_json(args);
    const json_t *da = json_object_get(a, "data");
    CHECK(json_array_size(da) == 2 && json_equal(da, json_object_get(b, "data")));
    CHECK(!strcmp(json_string_value(json_object_get(a, "pooling")), "mean") && int_at(a, "n_embd") == 64);
    for (size_t i = 0; i < json_array_size(da); i++) {
        const json_t *v = json_object_get(json_array_get(da, i), "embedding");
        double len2 = 0;
        for (size_t k = 0; k < json_array_size(v); k++) len2 += pow(json_number_value(json_array_get(v, k)), 2);
        CHECK_MSG(json_array_size(v) == 64 && fabs(len2 - 1) < 1e-5, "vector %zu: %zu numbers, length^2 %g", i, json_array_size(v), len2);
        CHECK(int_at(json_array_get(da, i), "index") == (json_int_t)i);
    }
    CHECK(int_at(json_array_get(da, 0), "n_tokens") == 5);
    /* plain: one line per text, the same numbers */
    snprintf(args, sizeof args, "embed -m '%s/models/stories260K.gguf' -p 'A cat sat'", shared);
    CHECK(run_cli(args, false, &out) == 0);
    const json_t *second = json_object_get(json_array_get(da, 1), "embedding");
    char *p = out;
    size_t count = 0;
    double worst = 0;
    for (char *end; p && *p && *p != '\n'; p = end, count++) {
        const double x = strtod(p, &end);
        if (end == p) break;
        worst = fmax(worst, fabs(x - json_number_value(json_array_get(second, count))));
    }
    CHECK_MSG(count == 64 && worst < 1e-7 && p && !strcmp(p, "\n"), "%zu numbers, off by %g", count, worst);
    free(out);
    snprintf(args, sizeof args, "embed -m '%s/models/stories260K.gguf' -p 'A cat sat' --no-normalize --pooling last --json", shared);
    json_t *c = run_json(args);
    const json_t *raw = json_object_get(json_array_get(json_object_get(c, "data"), 0), "embedding");
    double len2 = 0;
    for (size_t k = 0; k < json_array_size(raw); k++) len2 += pow(json_number_value(json_array_get(raw, k)), 2);
    CHECK_MSG(json_array_size(raw) == 64 && fabs(len2 - 1) > 1e-3, "an unnormalised vector has length^2 %g", len2);
    CHECK(!strcmp(json_string_value(json_object_get(c, "pooling")), "last"));
    json_decref(a);
    json_decref(b);
    json_decref(c);
    unlink(lines);
    snprintf(args, sizeof args, "embed -m '%s/models/stories260K.gguf' -p hi --pooling max", shared);
    CHECK(run_cli(args, true, &out) == 2 && strstr(out, "--pooling max: unknown pooling"));
    free(out);
    snprintf(args, sizeof args, "embed -m '%s/models/stories260K.gguf' -c 8 -p 'Once upon a time there was a big dog'", shared);
    CHECK(run_cli(args, true, &out) == 1 && strstr(out, "text 1") && strstr(out, "at most 8"));
    free(out);
    CHECK(run_cli("embed -p hi", true, &out) == 2 && strstr(out, "usage"));
    free(out);
}

/* Assisted generation on run and bench: prompt lookup and a draft model
 * print plain decoding's text; the flags' conflicts are usage errors. */
static void test_assist_flags(void) {
    char model[512], base[1024], args[3072], *plain = NULL, *out = NULL;
    snprintf(model, sizeof model, "%s/models/stories260K.gguf", test_shared_dir());
    snprintf(base, sizeof base, "run -m '%s' -p 'Once upon a time, there was a little girl. Once upon a time, there' -n 40 --temp 0", model);
    CHECK(run_cli(base, false, &plain) == 0);
    const char *const ways[] = {"--lookup 6", "--lookup 3 --lookup-ngram 2", "-md '%s/arch/llama-Q8_0.gguf' --draft-max 4 --draft-p-min 0",
                                "--model-draft '%s/models/stories260K.gguf'"};
    for (size_t i = 0; i < sizeof ways / sizeof *ways; i++) {
        char way[1024];
        snprintf(way, sizeof way, ways[i], test_shared_dir());
        snprintf(args, sizeof args, "%s %s", base, way);
        CHECK_MSG(run_cli(args, false, &out) == 0 && plain && !strcmp(out, plain), "%s: [%s] vs plain [%s]", way, out ? out : "",
                  plain ? plain : "");
        free(out);
    }
    snprintf(args, sizeof args, "%s --lookup 4 --json", base);
    json_t *j = run_json(args), *m = json_object_get(j, "metrics");
    CHECK(json_integer_value(json_object_get(m, "n_draft_tokens")) > 0 && json_integer_value(json_object_get(m, "n_accepted_tokens")) > 0);
    json_decref(j);
    snprintf(args, sizeof args, "%s --lookup 4 -md '%s'", base, model);
    CHECK(run_cli(args, true, &out) == 2 && strstr(out, "one or the other"));
    free(out);
    snprintf(args, sizeof args, "%s --draft-max 4", base);
    CHECK(run_cli(args, true, &out) == 2 && strstr(out, "--draft-max needs"));
    free(out);
    snprintf(args, sizeof args, "%s -md /nonexistent.gguf", base);
    CHECK(run_cli(args, true, &out) == 1);
    free(out);
    snprintf(args, sizeof args, "bench -m '%s' -p 0 -n 16 -r 1 -t 1 --json -md '%s'", model, model);
    j = run_json(args);
    const json_t *a = json_object_get(j, "assisted");
    CHECK_MSG(a && json_real_value(json_object_get(a, "acceptance")) == 1.0 && json_real_value(json_object_get(a, "speedup")) > 0,
              "bench -md: %s", a ? "not all of its own proposals accepted" : "no assisted figures");
    json_decref(j);
    free(plain);
}

/* --lora and --lora-scaled on run: an adapter at scale 0 is the base
 * model, at 1 another text; bad values are usage errors. bench takes them
 * for its streams. */
static void test_lora_flags(void) {
    char model[1024], adapter[512], cmd[4096], base[2048], args[3072], *out = NULL;
    snprintf(model, sizeof model, "%s/models/stories260K.gguf", test_shared_dir());
    snprintf(adapter, sizeof adapter, "%s/lora.gguf", test_temp_dir());
    snprintf(cmd, sizeof cmd, "'%s' '%s' '%s' --rank 4 --targets attn --alpha 8 --magnitude 0.15", SPROUT_MAKE_LORA_PATH, model, adapter);
    CHECK(system(cmd) == 0);
    snprintf(base, sizeof base, "run -m '%s' -p 'Once upon a time' -n 12 --temp 0", model);
    char *plain = NULL;
    CHECK(run_cli(base, false, &plain) == 0);
    snprintf(args, sizeof args, "%s --lora-scaled '%s' 0", base, adapter);
    CHECK(run_cli(args, false, &out) == 0 && plain && !strcmp(out, plain));
    free(out);
    snprintf(args, sizeof args, "%s --lora '%s'", base, adapter);
    CHECK(run_cli(args, false, &out) == 0 && plain && strcmp(out, plain) != 0);
    free(out);
    snprintf(args, sizeof args, "%s --lora-scaled '%s'", base, adapter);
    CHECK(run_cli(args, true, &out) == 2 && strstr(out, "--lora-scaled needs two values"));
    free(out);
    snprintf(args, sizeof args, "%s --lora-scaled '%s' x", base, adapter);
    CHECK(run_cli(args, true, &out) == 2 && strstr(out, "not a number"));
    free(out);
    snprintf(args, sizeof args, "%s --lora /nonexistent.gguf", base);
    CHECK(run_cli(args, true, &out) == 1 && strstr(out, "cannot open"));
    free(out);
    /* bench: streams of their own adapters through the scheduler */
    snprintf(args, sizeof args, "bench -m '%s' -p 4 -n 4 -r 1 -t 1 -np 3 --json --lora '%s' --lora-scaled '%s' 0.5", model, adapter, adapter);
    json_t *j = run_json(args), *par = json_object_get(j, "parallel");
    CHECK_MSG(json_integer_value(json_object_get(par, "streams")) == 3 && json_integer_value(json_object_get(par, "adapters")) == 2 &&
                  json_real_value(json_object_get(par, "tokens_per_s")) > 0 &&
                  json_real_value(json_object_get(par, "one_stream_tokens_per_s")) > 0,
              "bench -np 3 --lora: %s", j ? "no parallel figures" : "no JSON");
    json_decref(j);
    free(plain);
    unlink(adapter); /* the folder stays: test_text_and_errors uses it, then removes it */
}

/* llama.cpp's sampler flags: accepted, seeded runs repeat, DRY moves a
 * repetitive greedy run; a bad order or value is a usage error. */
static void test_sampler_flags(void) {
    char args[2048], *a = NULL, *b = NULL;
    const char *model = "run -m '%s/models/stories260K.gguf' -p 'Once upon a time' -n 24 -s 3 %s";
    snprintf(args, sizeof args, model, test_shared_dir(),
             "--typical 0.9 --xtc-probability 0.3 --xtc-threshold 0.2 --top-nsigma 2 --dry-multiplier 0.8 --dry-base 1.5 "
             "--dry-allowed-length 3 --dry-penalty-last-n 64 --dry-sequence-breaker none --dry-sequence-breaker . "
             "--samplers 'penalties;dry;top_k;typ_p;top_p;min_p;xtc;top_n_sigma;temperature'");
    CHECK(run_cli(args, false, &a) == 0 && run_cli(args, false, &b) == 0);
    CHECK(a && b && !strcmp(a, b));
    free(a), free(b);
    snprintf(args, sizeof args, model, test_shared_dir(), "--mirostat 2 --mirostat-ent 3 --mirostat-lr 0.2");
    CHECK(run_cli(args, false, &a) == 0 && strlen(a) > 1);
    free(a);
    snprintf(args, sizeof args, model, test_shared_dir(), "--sampling-seq kt --mirostat 1");
    CHECK(run_cli(args, false, &a) == 0);
    free(a);
    const char *rep = "run -m '%s/models/stories260K.gguf' -p 'Lily and Tom. Lily and Tom. Lily and Tom.' -n 40 --temp 0 %s";
    snprintf(args, sizeof args, rep, test_shared_dir(), "");
    CHECK(run_cli(args, false, &a) == 0);
    snprintf(args, sizeof args, rep, test_shared_dir(), "--dry-multiplier 0.8");
    CHECK(run_cli(args, false, &b) == 0);
    CHECK_MSG(a && b && strcmp(a, b) != 0, "DRY changed nothing: [%s]", b ? b : "");
    free(a), free(b);
    static const char *const bad[][2] = {{"--samplers 'top_k;bogus'", "'bogus' is no sampler"},
                                         {"--sampling-seq kq", "'q' is no sampler's letter"},
                                         {"--mirostat 3", "--mirostat 3: must be 0 to 2"},
                                         {"--dry-sequence-breaker ''", "must not be empty"},
                                         {"--xtc-probability 2", "must be a number from 0 to 1"}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(args, sizeof args, model, test_shared_dir(), bad[i][0]);
        CHECK_MSG(run_cli(args, true, &a) == 2 && strstr(a, bad[i][1]), "%s: got [%s]", bad[i][0], a ? a : "");
        free(a);
    }
}

/* Structured output flags (llama.cpp's spellings): --grammar and
 * --grammar-file hold the output to a grammar, --json-schema-file to a
 * schema, on seeds at temperature 1; an unreadable file, a bad grammar, an
 * unsupported keyword exit 1 with the reason, a grammar beside a schema 2;
 * serve checks its defaults once the model has loaded. */
static void test_structured_flags(void) {
    char args[2048], path[512], *out = NULL;
    const char *model = "run -m '%s/models/stories260K.gguf' -p 'Once upon a time' -n 200 --temp 1 -s %d %s";
    int lily = 0;
    for (int seed = 1; seed <= 6; seed++) {
        snprintf(args, sizeof args, model, test_shared_dir(), seed, "--grammar 'root ::= (\"Lily\" | \"Tom\") \" was \" [a-z]+ \".\"'");
        CHECK(run_cli(args, false, &out) == 0);
        const size_t name = !strncmp(out, "Lily", 4) ? 4 : !strncmp(out, "Tom", 3) ? 3 : 0;
        const size_t word = name && !strncmp(out + name, " was ", 5) ? strspn(out + name + 5, "abcdefghijklmnopqrstuvwxyz") : 0;
        CHECK_MSG(word > 0 && !strcmp(out + name + 5 + word, ".\n"), "seed %d: got [%s]", seed, out);
        lily += name == 4;
        free(out);
    }
    CHECK_MSG(lily > 0 && lily < 6, "6 seeds gave Lily %d times", lily); /* the seeds take both branches */
    snprintf(path, sizeof path, "%s/digits.gbnf", test_temp_dir());
    FILE *f = fopen(path, "w");
    CHECK(f && fputs("root ::= digit{3} \".\"\ndigit ::= [0-9]\n", f) >= 0 && fclose(f) == 0);
    snprintf(args, sizeof args, "run -m '%s/models/stories260K.gguf' -p 'Once' -n 20 --temp 1 -s 3 --grammar-file '%s'", test_shared_dir(), path);
    CHECK(run_cli(args, false, &out) == 0 && strlen(out) == 5 && strspn(out, "0123456789") == 3 && !strcmp(out + 3, ".\n"));
    free(out);
    snprintf(path, sizeof path, "%s/pet.json", test_temp_dir());
    f = fopen(path, "w");
    CHECK(f && fputs("{\"type\": \"object\", \"properties\": {\"kind\": {\"enum\": [\"cat\", \"dog\"]},"
                     " \"n\": {\"type\": \"integer\", \"minimum\": 1, \"maximum\": 9}}, \"required\": [\"kind\", \"n\"]}",
                     f) >= 0 && fclose(f) == 0);
    for (int seed = 1; seed <= 4; seed++) {
        char flags[600];
        snprintf(flags, sizeof flags, "--json-schema-file '%s' --json", path);
        snprintf(args, sizeof args, model, test_shared_dir(), seed, flags);
        json_t *j = run_json(args), *v = j ? json_loads(json_string_value(json_object_get(j, "text")), 0, NULL) : NULL;
        const char *kind = json_string_value(json_object_get(v, "kind"));
        const json_t *n = json_object_get(v, "n");
        CHECK_MSG(v && json_object_size(v) == 2 && kind && (!strcmp(kind, "cat") || !strcmp(kind, "dog")) && json_is_integer(n) &&
                      json_integer_value(n) >= 1 && json_integer_value(n) <= 9,
                  "seed %d: got [%s]", seed, j ? json_string_value(json_object_get(j, "text")) : "");
        CHECK(j && !strcmp(json_string_value(json_object_get(j, "finish_reason")), "eos"));
        json_decref(v);
        json_decref(j);
    }
    static const char *const bad[][3] = {
        {"--grammar-file /nonexistent.gbnf", "1", "--grammar-file /nonexistent.gbnf: cannot read the file"},
        {"--json-schema-file /nonexistent.json", "1", "--json-schema-file /nonexistent.json: cannot read the file"},
        {"--grammar 'root ::= \"a\" b'", "1", "grammar:1:14: undefined rule 'b'"},
        {"-j '{\"type\": \"integer\", \"multipleOf\": 3}'", "1", "--json-schema: unsupported keyword multipleOf"},
        {"-j '{\"type\": '", "1", "--json-schema:"},
        {"--grammar 'root ::= \"a\"' -j '{}'", "2", "--grammar and --json-schema: one or the other"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(args, sizeof args, model, test_shared_dir(), 1, bad[i][0]);
        CHECK_MSG(run_cli(args, true, &out) == atoi(bad[i][1]) && strstr(out, bad[i][2]), "%s: got [%s]", bad[i][0], out);
        free(out);
    }
    snprintf(args, sizeof args, "serve -m '%s/models/stories260K.gguf' --port 0 --grammar 'root ::= x'", test_shared_dir());
    CHECK_MSG(run_cli(args, true, &out) == 1 && strstr(out, "--grammar: grammar:1:10: undefined rule 'x'"), "got [%s]", out);
    free(out);
    snprintf(args, sizeof args, "serve -m '%s/models/stories260K.gguf' --port 0 -jf /nonexistent.json", test_shared_dir());
    CHECK_MSG(run_cli(args, true, &out) == 1 && strstr(out, "cannot read the file"), "got [%s]", out);
    free(out);
}

/* --context-shift and --keep: llama.cpp's tokens past a full context
 * (tests/data/context_shift); without them the run stops there, finish
 * "length", and says the context filled. */
static void test_context_shift_flags(void) {
    char args[2048], *out;
    json_t *ref = json_load_file(SPROUT_CONTEXT_SHIFT_DATA_DIR "/llama-f16.json", 0, NULL);
    CHECK(ref != NULL);
    if (!ref) return;
    const json_t *want = json_object_get(ref, "tokens");
    snprintf(args, sizeof args, "run -m '%s/models/stories260K.gguf' -c 256 --temp 0 -n %zu --context-shift --keep 4 -p 'Once upon a time' --json",
             test_shared_dir(), json_array_size(want));
    json_t *j = run_json(args);
    CHECK(j && json_equal(json_object_get(j, "tokens"), want));
    CHECK(j && !strcmp(json_string_value(json_object_get(j, "finish_reason")), "length"));
    json_decref(j);
    snprintf(args, sizeof args, "run -m '%s/models/stories260K.gguf' -c 64 --temp 0 -n 100 -p 'Once upon a time' 2>&1 >/dev/null",
             test_shared_dir());
    CHECK(run_cli(args, false, &out) == 0);
    CHECK_MSG(strstr(out, "the context of 64 tokens is full after 60 generated"), "got [%s]", out);
    free(out);
    snprintf(args, sizeof args, "run -m '%s/models/stories260K.gguf' --context-shift --keep -2 -p hi", test_shared_dir());
    CHECK(run_cli(args, true, &out) == 2);
    free(out);
    json_decref(ref);
}

/* bench -d: pp and tg after N cached tokens, one flat entry per depth,
 * with attention's share of a decode step and, with --roofline, decode
 * against the read bandwidth; malformed depths are usage errors. */
static void test_bench_depth(void) {
    const char *shared = test_shared_dir();
    char args[2048], *out;
    snprintf(args, sizeof args, "bench -m '%s/models/stories260K.gguf' -p 4 -n 4 -r 1 -t 1 -d 0,48 --roofline-mib 8 --json", shared);
    json_t *j = run_json(args);
    CHECK_MSG(j != NULL, "bench -d 0,48: no JSON");
    const json_t *by_depth = json_object_get(j, "by_depth"), *read = json_object_get(j, "read_bandwidth");
    CHECK(json_array_size(by_depth) == 2);
    for (size_t i = 0; i < json_array_size(by_depth); i++) {
        const json_t *d = json_array_get(by_depth, i);
        const double share = json_real_value(json_object_get(d, "attention_share"));
        CHECK_MSG(int_at(d, "depth") == (i ? 48 : 0), "entry %zu has depth %lld", i, (long long)int_at(d, "depth"));
        CHECK(json_real_value(json_object_get(d, "pp_tokens_per_s")) > 0 && json_real_value(json_object_get(d, "tg_tokens_per_s")) > 0);
        CHECK_MSG(share > 0 && share < 1, "depth %lld: attention share %g", (long long)int_at(d, "depth"), share);
        CHECK(json_real_value(json_object_get(d, "roofline")) > 0 &&
              json_real_value(json_object_get(d, "roofline_with_kv")) > json_real_value(json_object_get(d, "roofline")));
    }
    CHECK(int_at(json_object_get(j, "decode"), "depth") == 0 && int_at(json_object_get(j, "prefill"), "depth") == 0);
    CHECK(json_real_value(json_object_get(read, "gb_per_s")) > 0 && int_at(read, "bytes") == 8 << 20 && int_at(read, "threads") == 1);
    /* the bytes info says a token reads: stories260K has an output head, so all but the embedding table */
    snprintf(args, sizeof args, "info --json '%s/models/stories260K.gguf'", shared);
    json_t *info = run_json(args);
    CHECK(info && int_at(j, "weight_bytes_per_token") == int_at(info, "active_bytes_per_token") && int_at(info, "active_bytes_per_token") > 0 &&
          int_at(info, "active_bytes_per_token") < int_at(info, "file_size"));
    json_decref(info);
    json_decref(j);
    snprintf(args, sizeof args, "bench -m '%s/models/stories260K.gguf' -p 4 -n 4 -r 1 -t 1 --depth 16", shared);
    CHECK(run_cli(args, false, &out) == 0);
    CHECK_MSG(strstr(out, "pp4 @ d16") && strstr(out, "tg4 @ d16") && !strstr(out, "roofline"), "bench --depth 16: got [%s]", out);
    free(out);
    static const char *const bad[] = {"-d -1", "-d 1,,2", "-d 4x", "--depth 1000001", "-d ''", "-d 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17",
                                      "--roofline-mib 0"};
    static const char *const said[] = {"--depth -1: must be whole numbers", "--depth 1,,2: must be", "--depth 4x: must be",
                                       "--depth 1000001: must be", "--depth : must be", "at most 16 depths", "--roofline-mib 0"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(args, sizeof args, "bench -m '%s/models/stories260K.gguf' %s", shared, bad[i]);
        CHECK_MSG(run_cli(args, true, &out) == 2 && strstr(out, said[i]), "%s: got [%s]", args, out);
        free(out);
    }
}

int main(void) {
    test_context_shift_flags();
    test_lora_flags();
    test_assist_flags();
    test_run();
    test_structured_flags();
    test_sampler_flags();
    test_kernel_level_env();
    test_template_cli();
    test_tokenize();
    test_embed();
    test_stories_json();
    test_quantized_json();
    test_text_and_errors();
    test_thread_range();
    test_cache_type();
    test_bench_depth();
    test_help();
    test_log_levels();
    TEST_MAIN_END();
}
