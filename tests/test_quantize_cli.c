/* `sprout quantize` from the outside: bad arguments, a model quantized and
 * run, split output that loads as one model, and interruptions (SIGINT, a
 * file-size limit) that must leave no file behind and exit non-zero. */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gguf/gguf_writer.h"
#include "test_util.h"

static char dir[] = "/tmp/sprout_test_quantize_cli_XXXXXX";
static char stories[1024];

/* Runs a shell command line with the CLI as $S; returns its exit status and
 * its stdout+stderr in *out (caller frees). */
static int sh(const char *cmdline, char **out) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "S='%s'; cd '%s' && { %s ; } 2>&1", SPROUT_CLI_PATH, dir, cmdline);
    return test_run_command(cmd, out);
}

static int count_files(void) {
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.') n++;
    if (d) closedir(d);
    return n;
}

static bool has_temp_file(void) {
    DIR *d = opendir(dir);
    bool found = false;
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strstr(e->d_name, ".tmp.")) found = true;
    if (d) closedir(d);
    return found;
}

#define EXPECT(cmdline, want_status, want_text)                                                        \
    do {                                                                                               \
        char *out_ = NULL;                                                                             \
        int st_ = sh(cmdline, &out_);                                                                  \
        CHECK_MSG(st_ == (want_status) && strstr(out_, want_text), "%s -> %d: %s", cmdline, st_, out_); \
        free(out_);                                                                                    \
    } while (0)

static void test_bad_arguments(void) {
    char cmd[4096];
    EXPECT("$S quantize", 2, "usage");
    snprintf(cmd, sizeof cmd, "$S quantize '%s' out.gguf Q9_9", stories);
    EXPECT(cmd, 2, "unknown type 'Q9_9'");
    snprintf(cmd, sizeof cmd, "$S quantize '%s' out.gguf 21", stories); /* Q2_K_S: a file type sprout cannot make */
    EXPECT(cmd, 2, "unknown type '21'");
    snprintf(cmd, sizeof cmd, "$S quantize '%s/arch/llama-F32.gguf' out.gguf IQ2_XXS", test_shared_dir());
    EXPECT(cmd, 1, "needs an importance matrix: pass --imatrix FILE");
    snprintf(cmd, sizeof cmd, "$S quantize '%s' '%s' Q8_0", stories, stories);
    EXPECT(cmd, 1, "same file");
    EXPECT("$S quantize missing.gguf out.gguf Q8_0", 1, "missing.gguf");
    snprintf(cmd, sizeof cmd, "$S quantize '%s' out.gguf Q4_K_M --imatrix x.dat", stories);
    EXPECT(cmd, 1, "x.dat");
    snprintf(cmd, sizeof cmd, "$S quantize '%s' out.gguf Q4_K_M --output-type Q7", stories);
    EXPECT(cmd, 2, "--output-type Q7: must be a tensor type");
    snprintf(cmd, sizeof cmd, "$S quantize '%s' out.gguf Q4_K_M --split-max-size lots", stories);
    EXPECT(cmd, 2, "--split-max-size lots: must be a size such as 2G or 500M");
    snprintf(cmd, sizeof cmd, "$S quantize '%s' out.gguf Q4_K_M --threads 0", stories);
    EXPECT(cmd, 2, "--threads 0: must be 1 to 256");
    CHECK_MSG(count_files() == 0, "bad arguments left files in %s", dir);
}

static void test_quantize_and_run(void) {
    char cmd[4096], *base = NULL, *out = NULL;
    snprintf(cmd, sizeof cmd, "$S run -m '%s' -p 'Once upon a time' -n 24 --temp 0", stories);
    CHECK(sh(cmd, &base) == 0);
    /* F32 to F32: every tensor copied, the same text */
    snprintf(cmd, sizeof cmd, "$S quantize '%s' f32.gguf F32 > /dev/null && $S run -m f32.gguf -p 'Once upon a time' -n 24 --temp 0", stories);
    CHECK(sh(cmd, &out) == 0 && !strcmp(out, base));
    free(out);
    snprintf(cmd, sizeof cmd, "$S quantize f32.gguf f16.gguf F16 > /dev/null && $S run -m f16.gguf -p 'Once upon a time' -n 24 --temp 0");
    CHECK(sh(cmd, &out) == 0 && strlen(out) > 40);
    free(out);
    /* stories260K's FFN-down rows (172) fit no 32-element block: reported, F16 */
    snprintf(cmd, sizeof cmd, "$S quantize f32.gguf q4km.gguf Q4_K_M");
    CHECK(sh(cmd, &out) == 0 && strstr(out, "ffn_down.weight: rows do not fit Q4_K blocks, using F16") &&
          strstr(out, "Q4_K_M") && strstr(out, "with a fallback type"));
    free(out);
    /* the fallback is a warning: --log-disable silences it; -v adds every tensor's type */
    snprintf(cmd, sizeof cmd, "$S quantize f32.gguf q4km-quiet.gguf Q4_K_M --log-disable && rm q4km-quiet.gguf");
    CHECK(sh(cmd, &out) == 0 && !strstr(out, "rows do not fit") && strstr(out, "with a fallback type"));
    free(out);
    snprintf(cmd, sizeof cmd, "$S quantize f32.gguf q4km-verbose.gguf Q4_K_M -v && rm q4km-verbose.gguf");
    CHECK_MSG(sh(cmd, &out) == 0 && strstr(out, "warning: ") && strstr(out, "ffn_down.weight: rows do not fit") && strstr(out, " -> "),
              "%s", out);
    free(out);
    snprintf(cmd, sizeof cmd, "$S quantize f32.gguf by-number.gguf 7 && $S info by-number.gguf --json");
    CHECK(sh(cmd, &out) == 0 && strstr(out, "\"file_type\": \"Q8_0\""));
    free(out);
    snprintf(cmd, sizeof cmd, "$S info q4km.gguf --json");
    CHECK(sh(cmd, &out) == 0 && strstr(out, "Q4_K_M"));
    free(out);
    snprintf(cmd, sizeof cmd, "$S run -m q4km.gguf -p 'Once upon a time' -n 24 --temp 0");
    CHECK(sh(cmd, &out) == 0 && strlen(out) > 40);
    free(out);
    free(base);
    unlink("f32.gguf");
}

/* Split output: every part at most the limit, the first part loads the
 * whole model and generates what the single file generates. */
static void test_split(void) {
    char cmd[4096], *one = NULL, *parts = NULL, *ls = NULL;
    snprintf(cmd, sizeof cmd, "$S quantize '%s' one.gguf Q8_0 > /dev/null 2>&1 && $S run -m one.gguf -p 'Once upon a time' -n 24 --temp 0", stories);
    CHECK(sh(cmd, &one) == 0);
    snprintf(cmd, sizeof cmd, "$S quantize '%s' split.gguf Q8_0 --split-max-size 150K", stories);
    CHECK(sh(cmd, &parts) == 0 && strstr(parts, "parts"));
    free(parts);
    CHECK(sh("ls split-0000*-of-0000*.gguf | wc -l; find . -name 'split-*' -size +150k | wc -l", &ls) == 0);
    int n_parts = 0, too_big = -1;
    sscanf(ls, "%d %d", &n_parts, &too_big);
    CHECK_MSG(n_parts >= 3 && too_big == 0, "split into %d parts, %d too big", n_parts, too_big);
    free(ls);
    CHECK(sh("$S run -m split-00001-of-0000*.gguf -p 'Once upon a time' -n 24 --temp 0", &parts) == 0);
    CHECK_MSG(!strcmp(one, parts), "split model generates differently:\n%s\nvs\n%s", one, parts);
    free(one);
    free(parts);
    CHECK(sh("rm -f one.gguf split-*.gguf", &one) == 0);
    free(one);
}

/* A write that fails (a file-size limit) must leave neither the output nor
 * the temporary file. */
static void test_write_error(void) {
    char cmd[4096], *out = NULL;
    const int before = count_files();
    snprintf(cmd, sizeof cmd, "ulimit -f 256; $S quantize '%s' limited.gguf F32", stories);
    const int st = sh(cmd, &out);
    CHECK_MSG(st == 1 && strstr(out, "write failed"), "file-size limit -> %d: %s", st, out);
    free(out);
    CHECK_MSG(count_files() == before && access("limited.gguf", F_OK) != 0, "a failed write left files behind");
}

/* SIGINT in the middle of a conversion long enough to be caught in the act:
 * one 64M-element F32 matrix to Q2_K on one thread. */
static void test_sigint(void) {
    char big[1200], out[1200];
    snprintf(big, sizeof big, "%s/big.gguf", dir);
    snprintf(out, sizeof out, "%s/out.gguf", dir);
    sp_gguf_writer *w = sp_gguf_writer_new();
    const int64_t ne[2] = {8192, 8192};
    float *zeros = calloc((size_t)(ne[0] * ne[1]), sizeof(float));
    for (int64_t i = 0; i < ne[0] * ne[1]; i += 7) zeros[i] = (float)(i % 13) * 0.01f;
    CHECK(sp_gguf_writer_set_str(w, "general.architecture", "llama", 5) == SPROUT_OK);
    CHECK(sp_gguf_writer_add_tensor(w, "blk.0.ffn_up.weight", SPROUT_TYPE_F32, 2, ne, zeros) == SPROUT_OK);
    CHECK(sp_gguf_writer_write(w, big, NULL, NULL) == SPROUT_OK);
    sp_gguf_writer_free(w);
    free(zeros);
    const int before = count_files();
    pid_t pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", 1);
        dup2(null, 1);
        dup2(null, 2);
        execl(SPROUT_CLI_PATH, "sprout", "quantize", big, out, "Q2_K", "--threads", "1", (char *)NULL);
        _exit(127);
    }
    /* wait until the output's temporary file exists: the conversion is under way */
    bool started = false;
    for (int i = 0; i < 2000 && !(started = has_temp_file()); i++) {
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    CHECK_MSG(started, "the conversion never started");
    kill(pid, SIGINT);
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 130, "SIGINT: status %d", status);
    CHECK_MSG(count_files() == before && access(out, F_OK) != 0, "SIGINT left files behind");
    unlink(big);
}

int main(void) {
    snprintf(stories, sizeof stories, "%s/models/stories260K.gguf", test_shared_dir());
    CHECK(mkdtemp(dir) != NULL);
    test_bad_arguments();
    test_quantize_and_run();
    test_split();
    test_write_error();
    test_sigint();
    char *out = NULL;
    sh("rm -f *.gguf", &out);
    free(out);
    rmdir(dir);
    TEST_MAIN_END();
}
