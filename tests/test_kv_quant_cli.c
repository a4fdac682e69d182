/* The CLI's cache types: -ctk/-ctv (llama.cpp's flags) with keys and
 * values of different types, --kv-type for both, a clear error for a name
 * that is no type and for a block type on heads it does not divide, and
 * the bytes per token sprout bench and the server's /metrics report. */
#include <string.h>

#include "test_util.h"

static int run(const char *args, char **out) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s' %s 2>&1", SPROUT_CLI_PATH, args);
    return test_run_command(cmd, out);
}

int main(void) {
    char args[3072], *out = NULL;
    const char *dir = test_shared_dir();
    snprintf(args, sizeof args, "run -m '%s/arch/llama-F32.gguf' --cache-type-k q8_0 --cache-type-v q4_0 -p 'Once upon' -n 4 --temp 0 -t 1", dir);
    CHECK_MSG(run(args, &out) == 0, "%s", out);
    free(out);

    snprintf(args, sizeof args, "run -m '%s/arch/llama-F32.gguf' -ctk q5_0 -p x -n 1 -t 1", dir);
    CHECK(run(args, &out) == 2 && strstr(out, "--cache-type-k q5_0: must be f32, f16, bf16, q8_0 or q4_0"));
    free(out);

    snprintf(args, sizeof args, "run -m '%s/models/stories260K.gguf' -ctv q4_0 -p x -n 1 -t 1", dir);
    CHECK_MSG(run(args, &out) != 0 && strstr(out, "multiple of 32"), "%s", out);
    free(out);

    /* llama-F32: 2 layers of 2 KV heads of 64; q8_0 keys (4 blocks of 34 bytes a row), bf16 values (256 bytes) */
    snprintf(args, sizeof args, "bench -m '%s/arch/llama-F32.gguf' -ctk q8_0 -ctv bf16 -p 8 -n 4 -r 1 -t 1 --json", dir);
    CHECK_MSG(run(args, &out) == 0 && strstr(out, "\"kv_type\":\"q8_0/bf16\"") && strstr(out, "\"kv_bytes_per_token\":784"), "%s", out);
    free(out);
    snprintf(args, sizeof args, "bench -m '%s/arch/llama-F32.gguf' --kv-type q4_0 -p 8 -n 4 -r 1 -t 1", dir);
    CHECK_MSG(run(args, &out) == 0 && strstr(out, "KV cache q4_0") && strstr(out, "KV cache 288 bytes per token"), "%s", out);
    free(out);

    /* serve: /metrics' gauge, the server started on a free port until it is ready, then stopped */
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "command -v curl >/dev/null || { echo 'no curl'; exit 0; }; log=$(mktemp) && { '%s' serve -m '%s/arch/llama-F32.gguf' --port 0 -t 1 "
             "-ctk q8_0 -ctv q4_0 2>\"$log\" & pid=$!; i=0; while [ $i -lt 600 ] && kill -0 $pid 2>/dev/null && ! grep -q 'ready:' \"$log\"; "
             "do sleep 0.1; i=$((i + 1)); done; port=$(sed -n 's/.*listening on http:[/][/][^ ]*:\\([0-9]*\\).*/\\1/p' \"$log\"); "
             "curl -s \"http://127.0.0.1:$port/metrics\"; kill $pid; wait $pid; st=$?; rm -f \"$log\"; exit $st; }",
             SPROUT_CLI_PATH, dir);
    CHECK(test_run_command(cmd, &out) == 0);
    /* 2 layers of q8_0 keys (4 blocks of 34 bytes) and q4_0 values (4 of 18) */
    CHECK_MSG(strstr(out, "no curl") || strstr(out, "\nsprout_kv_cache_bytes_per_token 416\n"), "metrics: [%s]", out);
    free(out);
    TEST_MAIN_END();
}
