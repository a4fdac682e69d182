/* The model store: SHA-256 against FIPS 180-4's vectors, Ollama's name
 * rules, create/list/show/resolve/apply/copy/remove round trips on
 * stories260K with every Modelfile instruction, hard link vs reference vs
 * copy, uploaded blobs, an Ollama-layout store written here by hand (listed,
 * resolved and run), two processes creating at once, and processes killed
 * at random points of a create. */
#include "test_util.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/sha256.h"

static char tmp_root[256];
static char model_src[512]; /* stories260K, copied beside the stores (same file system) */

static char *path_of(const char *a, const char *b) {
    static char buf[8][1024];
    static int k;
    char joined[1024];
    snprintf(joined, sizeof joined, "%s/%s", a, b);
    char *out = buf[k++ % 8];
    memcpy(out, joined, sizeof joined);
    return out;
}

static bool copy_file(const char *from, const char *to) {
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    bool ok = in && out;
    char buf[65536];
    for (size_t n; ok && (n = fread(buf, 1, sizeof buf, in)) > 0;) ok = fwrite(buf, 1, n, out) == n;
    if (in) fclose(in);
    if (out && fclose(out) != 0) ok = false;
    return ok;
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f) return;
    fputs(text, f);
    fclose(f);
}

static void hex_of(const void *data, size_t len, char hex[65]) {
    sp_sha256 h;
    sp_sha256_init(&h);
    sp_sha256_update(&h, data, len);
    uint8_t d[32];
    sp_sha256_final(&h, d);
    sp_sha256_hex(d, hex);
}

static void test_sha256(void) {
    char hex[65];
    hex_of("", 0, hex);
    CHECK(!strcmp(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
    hex_of("abc", 3, hex);
    CHECK(!strcmp(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    hex_of(two, strlen(two), hex);
    CHECK(!strcmp(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"));
    const char *four = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrs"
                       "mnopqrstnopqrstu";
    hex_of(four, strlen(four), hex);
    CHECK(!strcmp(hex, "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"));
    /* a million 'a', fed in pieces of awkward sizes */
    char *a = malloc(1000000);
    memset(a, 'a', 1000000);
    sp_sha256 h;
    sp_sha256_init(&h);
    for (size_t done = 0, step = 1; done < 1000000; done += step, step = step * 3 % 1021 + 1)
        sp_sha256_update(&h, a + done, done + step > 1000000 ? 1000000 - done : step);
    uint8_t d[32];
    sp_sha256_final(&h, d);
    sp_sha256_hex(d, hex);
    CHECK(!strcmp(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"));
    free(a);
}

static void expect_name(const char *in, const char *full, const char *shortest) {
    char *f = NULL, *s = NULL;
    CHECK_MSG(sprout_store_name_full(in, &f) == SPROUT_OK, "%s: %s", in, sprout_last_error());
    CHECK_MSG(sprout_store_name_short(in, &s) == SPROUT_OK, "%s: %s", in, sprout_last_error());
    CHECK_MSG(f && !strcmp(f, full), "%s: full %s", in, f ? f : "(null)");
    CHECK_MSG(s && !strcmp(s, shortest), "%s: short %s", in, s ? s : "(null)");
    sprout_free(f);
    sprout_free(s);
}

static void test_names(void) {
    expect_name("mistral", "registry.ollama.ai/library/mistral:latest", "mistral:latest");
    expect_name("qwen2.5:0.5b", "registry.ollama.ai/library/qwen2.5:0.5b", "qwen2.5:0.5b");
    expect_name("user/model:v1.2", "registry.ollama.ai/user/model:v1.2", "user/model:v1.2");
    expect_name("example.com/ns/m:t", "example.com/ns/m:t", "example.com/ns/m:t");
    expect_name("localhost:5000/ns/m", "localhost:5000/ns/m:latest", "localhost:5000/ns/m:latest");
    expect_name("https://example.com/ns/m", "example.com/ns/m:latest", "example.com/ns/m:latest");
    expect_name("_under/x_y-z.w:T_1", "registry.ollama.ai/_under/x_y-z.w:T_1", "_under/x_y-z.w:T_1");
    char model80[81];
    memset(model80, 'm', 80);
    model80[80] = '\0';
    char full80[200];
    snprintf(full80, sizeof full80, "registry.ollama.ai/library/%s:latest", model80);
    char short80[100];
    snprintf(short80, sizeof short80, "%s:latest", model80);
    expect_name(model80, full80, short80);
    char model81[82];
    memset(model81, 'm', 81);
    model81[81] = '\0';
    const char *bad[] = {"",       ":tag",      "model:",     "/model",    "ns/",        "a/b/c/d/e", "-model",
                         ".model", "my model",  "ns.x/model", "model:t:x", "model:ta/g", "ns/model@sha256:ab",
                         "é",      "model:t!",  model81,      "a//b"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char *out = (char *)1;
        CHECK_MSG(sprout_store_name_full(bad[i], &out) == SPROUT_ERR_INVALID_ARGUMENT, "'%s' accepted", bad[i]);
        CHECK(out == NULL);
    }
}

static sprout_store *open_store(const char *root, const char *ollama) {
    sprout_store_params p = {sizeof p, root, ollama ? ollama : ""};
    sprout_store *s = NULL;
    CHECK(sprout_store_open(&p, &s) == SPROUT_OK);
    return s;
}

static int n_progress;
static bool count_progress(const char *status, void *user) {
    (void)user;
    n_progress++;
    return status != NULL;
}

static bool cancel_at_manifest(const char *status, void *user) {
    (void)user;
    return strcmp(status, "writing manifest") != 0;
}

static sprout_status create(sprout_store *s, const char *name, const char *modelfile, bool copy) {
    sprout_store_create_params p = {sizeof p, tmp_root, copy, NULL, count_progress, NULL};
    sprout_status st = sprout_store_create(s, name, modelfile, strlen(modelfile), &p);
    CHECK_MSG(st == SPROUT_OK, "create %s: %s", name, sprout_last_error());
    return st;
}

static size_t count_files(const char *dir, const char *prefix) {
    DIR *d = opendir(dir);
    size_t n = 0;
    if (!d) return 0;
    for (struct dirent *e; (e = readdir(d));)
        if (!strncmp(e->d_name, prefix, strlen(prefix))) n++;
    closedir(d);
    return n;
}

static const char *full_modelfile = "# every instruction\n"
                                    "FROM model.gguf\n"
                                    "TEMPLATE \"\"\"{{ .System }} {{ .Prompt }}\"\"\"\n"
                                    "SYSTEM You are a storyteller.\n"
                                    "PARAMETER num_predict 5\n"
                                    "PARAMETER temperature 0.5\n"
                                    "PARAMETER stop \"<end>\"\n"
                                    "PARAMETER stop 3\n"
                                    "PARAMETER num_ctx 128\n"
                                    "PARAMETER seed 42\n"
                                    "PARAMETER mirostat 1\n"
                                    "MESSAGE user Hello\n"
                                    "MESSAGE assistant \"Once upon a time\"\n"
                                    "ADAPTER adapter.bin\n"
                                    "LICENSE MIT\n"
                                    "LICENSE \"\"\"second\nlicense\"\"\"\n";

static void test_round_trip(void) {
    const char *root = path_of(tmp_root, "store1");
    sprout_store *s = open_store(root, NULL);
    if (!s) return;
    CHECK(!strcmp(sprout_store_root(s), root) && sprout_store_ollama_root(s) == NULL);
    write_text(path_of(tmp_root, "adapter.bin"), "not really an adapter, just bytes to store");
    n_progress = 0;
    if (create(s, "story", full_modelfile, false) != SPROUT_OK) return;
    CHECK(n_progress >= 8);

    sprout_store_entry *e = NULL;
    size_t n = 0;
    CHECK(sprout_store_list(s, &e, &n) == SPROUT_OK && n == 1);
    if (n == 1) {
        CHECK(!strcmp(e[0].name, "story:latest") && !e[0].ollama);
        CHECK(e[0].size > 1185376 && e[0].modified > 0 && !strncmp(e[0].digest, "sha256:", 7));
    }

    sprout_store_model *m = NULL;
    CHECK_MSG(sprout_store_resolve(s, "story", &m) == SPROUT_OK, "%s", sprout_last_error());
    if (!m) return;
    CHECK(!strcmp(sprout_store_model_name(m), "story:latest"));
    sprout_store_model *folded = NULL; /* names match whatever their case, as Ollama's do */
    CHECK(sprout_store_resolve(s, "Library/STORY:Latest", &folded) == SPROUT_OK);
    CHECK(folded && !strcmp(sprout_store_model_name(folded), "story:latest"));
    sprout_store_model_free(folded);
    CHECK(n == 1 && !strcmp(sprout_store_model_digest(m), e[0].digest) && sprout_store_model_size(m) == e[0].size);
    CHECK(n == 1 && sprout_store_model_modified(m) == e[0].modified && !sprout_store_model_ollama(m));
    sprout_store_entries_free(e, n);
    /* same file system: a hard link, the very inode of the source */
    struct stat a, b;
    CHECK(stat(sprout_store_model_path(m), &a) == 0 && stat(model_src, &b) == 0 && a.st_ino == b.st_ino);
    CHECK(strstr(sprout_store_model_path(m), "/blobs/sha256-") != NULL);
    CHECK(!strcmp(sprout_store_model_template(m), "{{ .System }} {{ .Prompt }}"));
    CHECK(!strcmp(sprout_store_model_system(m), "You are a storyteller."));
    CHECK(!strcmp(sprout_store_model_license(m), "MIT\n\nsecond\nlicense"));
    CHECK(sprout_store_model_n_adapters(m) == 1 && sprout_store_model_adapter(m, 1) == NULL);
    CHECK(!strcmp(sprout_store_model_messages_json(m),
                  "[{\"role\":\"user\",\"content\":\"Hello\"},{\"role\":\"assistant\",\"content\":\"Once upon a time\"}]"));
    CHECK_MSG(!strcmp(sprout_store_model_parameters_json(m), "{\"num_predict\":5,\"temperature\":0.5,\"stop\":[\"<end>\","
                                                             "\"3\"],\"num_ctx\":128,\"seed\":42,\"mirostat\":1}"),
              "%s", sprout_store_model_parameters_json(m));
    sprout_generation_config cfg;
    sprout_generation_config_init(&cfg);
    sprout_runner_settings runner = {sizeof runner, 0, 0, 0, 0};
    CHECK(sprout_store_model_apply(m, &cfg, &runner) == SPROUT_OK);
    CHECK(cfg.max_new_tokens == 5 && cfg.temperature == 0.5f && cfg.seed == 42 && cfg.n_stop_strings == 2);
    CHECK(cfg.n_stop_strings == 2 && !strcmp(cfg.stop_strings[0], "<end>") && !strcmp(cfg.stop_strings[1], "3"));
    CHECK(runner.num_ctx == 128 && runner.num_thread == 0 && runner.num_batch == 0);
    const char *mf = sprout_store_model_modelfile(m);
    CHECK(!strncmp(mf, "# Modelfile generated by", 24) && strstr(mf, "\nFROM /") && strstr(mf, "PARAMETER stop \"<end>\"\n"));
    CHECK(strstr(mf, "TEMPLATE \"\"\"{{ .System }} {{ .Prompt }}\"\"\"\n") && strstr(mf, "MESSAGE user \"\"\"Hello\"\"\"\n"));

    /* the Modelfile it shows recreates it: the same layers, the same manifest bytes */
    if (create(s, "again", mf, false) == SPROUT_OK) {
        sprout_store_model *again = NULL;
        CHECK(sprout_store_resolve(s, "again:latest", &again) == SPROUT_OK);
        CHECK(again && !strcmp(sprout_store_model_digest(again), sprout_store_model_digest(m)));
        sprout_store_model_free(again);
    }

    /* FROM a name: its layers, with this Modelfile's kinds replacing theirs */
    if (create(s, "derived", "FROM story\nSYSTEM \"\"\"A new system.\"\"\"\nPARAMETER top_k 7\n", false) == SPROUT_OK) {
        sprout_store_model *d = NULL;
        CHECK(sprout_store_resolve(s, "derived", &d) == SPROUT_OK);
        if (d) {
            CHECK(!strcmp(sprout_store_model_system(d), "A new system."));
            CHECK(!strcmp(sprout_store_model_template(d), sprout_store_model_template(m)));
            CHECK(!strcmp(sprout_store_model_parameters_json(d), "{\"top_k\":7}"));
            CHECK(!strcmp(sprout_store_model_path(d), sprout_store_model_path(m)));
            CHECK(sprout_store_model_n_adapters(d) == 1);
        }
        sprout_store_model_free(d);
    }
    char model_blob[1024];
    snprintf(model_blob, sizeof model_blob, "%s", sprout_store_model_path(m));
    sprout_store_model_free(m);

    /* copy shares every blob; removing the last user of a blob deletes it */
    CHECK(sprout_store_copy(s, "story", "mine/story-copy:v1") == SPROUT_OK);
    sprout_store_model *c = NULL;
    CHECK(sprout_store_resolve(s, "mine/story-copy:v1", &c) == SPROUT_OK);
    CHECK(c && !strcmp(sprout_store_model_name(c), "mine/story-copy:v1"));
    sprout_store_model_free(c);
    size_t blobs_before = count_files(path_of(root, "blobs"), "sha256-");
    CHECK(sprout_store_remove(s, "story") == SPROUT_OK && sprout_store_remove(s, "again") == SPROUT_OK);
    CHECK(count_files(path_of(root, "blobs"), "sha256-") == blobs_before);
    CHECK(sprout_store_resolve(s, "story", &c) == SPROUT_ERR_NOT_FOUND && c == NULL);
    CHECK(sprout_store_remove(s, "story") == SPROUT_ERR_NOT_FOUND);
    CHECK(sprout_store_remove(s, "DERIVED") == SPROUT_OK && sprout_store_remove(s, "mine/story-copy:v1") == SPROUT_OK);
    CHECK(count_files(path_of(root, "blobs"), "sha256-") == 0);
    CHECK(access(model_blob, F_OK) != 0 && access(model_src, F_OK) == 0);
    CHECK(sprout_store_list(s, &e, &n) == SPROUT_OK && n == 0);
    sprout_store_entries_free(e, n);
    sprout_store_free(s);
}

static void expect_create_error(sprout_store *s, const char *modelfile, sprout_status want, const char *msg) {
    sprout_store_create_params p = {sizeof p, tmp_root, false, NULL, NULL, NULL};
    sprout_status st = sprout_store_create(s, "bad", modelfile, strlen(modelfile), &p);
    CHECK_MSG(st == want, "status %d for %s", (int)st, modelfile);
    CHECK_MSG(strstr(sprout_last_error(), msg) != NULL, "'%s' lacks '%s'", sprout_last_error(), msg);
}

static void test_errors(void) {
    sprout_store *s = open_store(path_of(tmp_root, "store_err"), NULL);
    if (!s) return;
    expect_create_error(s, "FROM nowhere.gguf\n", SPROUT_ERR_NOT_FOUND, "Modelfile:1: FROM nowhere.gguf: no such");
    expect_create_error(s, "\nFROM model.gguf\nPARAMETER nope 1\n", SPROUT_ERR_FORMAT, "Modelfile:3: unknown PARAMETER");
    expect_create_error(s, "FROM model.gguf\nPARAMETER temperature hot\n", SPROUT_ERR_FORMAT, "Modelfile:2:");
    expect_create_error(s, "FROM model.gguf\n\nADAPTER gone.gguf\n", SPROUT_ERR_NOT_FOUND, "Modelfile:3: ADAPTER gone.gguf");
    expect_create_error(s, "FROM sha256:1234\n", SPROUT_ERR_FORMAT, "Modelfile:1: FROM sha256:1234");
    expect_create_error(s, "SYSTEM x\n", SPROUT_ERR_FORMAT, "no FROM");
    expect_create_error(s, "FROM model.gguf\nLICENSE \"\"\"open\n", SPROUT_ERR_FORMAT, "Modelfile:2:");
    sprout_store_create_params p = {sizeof p, tmp_root, false, "Q9_X", NULL, NULL};
    CHECK(sprout_store_create(s, "bad", "FROM model.gguf\n", 16, &p) == SPROUT_ERR_INVALID_ARGUMENT);
    CHECK(sprout_store_create(s, "bad name", "FROM model.gguf\n", 16, NULL) == SPROUT_ERR_INVALID_ARGUMENT);
    /* a create cancelled at its last step leaves no model */
    sprout_store_create_params cancel = {sizeof cancel, tmp_root, false, NULL, cancel_at_manifest, NULL};
    CHECK(sprout_store_create(s, "cancelled", "FROM model.gguf\n", 16, &cancel) == SPROUT_ERR_CANCELLED);
    sprout_store_entry *e;
    size_t n;
    CHECK(sprout_store_list(s, &e, &n) == SPROUT_OK && n == 0);
    sprout_store_entries_free(e, n);
    sprout_store_model *m = (sprout_store_model *)1;
    CHECK(sprout_store_resolve(s, "Bad Name", &m) == SPROUT_ERR_INVALID_ARGUMENT && m == NULL);
    sprout_store_free(s);
}

/* Reference (another file system, or asked for) and copy. */
static void test_reference_and_copy(void) {
    const char *root = path_of(tmp_root, "store_ref");
    sprout_store *s = open_store(root, NULL);
    if (!s) return;
    const char *file = path_of(tmp_root, "referenced.gguf");
    CHECK(copy_file(model_src, file));
    setenv("SPROUT_STORE_REFERENCE", "1", 1);
    sprout_status st = create(s, "ref", "FROM referenced.gguf\n", false);
    unsetenv("SPROUT_STORE_REFERENCE");
    if (st != SPROUT_OK) return;
    sprout_store_model *m = NULL;
    CHECK(sprout_store_resolve(s, "ref", &m) == SPROUT_OK);
    char *real = realpath(file, NULL);
    CHECK(m && real && !strcmp(sprout_store_model_path(m), real));
    sprout_store_model_free(m);
    CHECK(count_files(path_of(root, "refs"), "sha256-") == 1);
    /* a new mtime with the same bytes: hashed again, still good */
    struct timespec times[2] = {{0, UTIME_NOW}, {1000000, 0}};
    CHECK(utimensat(AT_FDCWD, file, times, 0) == 0);
    CHECK_MSG(sprout_store_resolve(s, "ref", &m) == SPROUT_OK, "%s", sprout_last_error());
    sprout_store_model_free(m);
    /* one byte changed, the size kept: the hash says so, naming the path */
    FILE *f = fopen(file, "r+b");
    CHECK(f && fseek(f, 100000, SEEK_SET) == 0 && fputc(0x5a, f) != EOF);
    if (f) fclose(f);
    CHECK(sprout_store_resolve(s, "ref", &m) == SPROUT_ERR_IO && m == NULL);
    CHECK(real && strstr(sprout_last_error(), real) && strstr(sprout_last_error(), "changed"));
    CHECK(truncate(file, 1000) == 0);
    CHECK(sprout_store_resolve(s, "ref", &m) == SPROUT_ERR_IO && strstr(sprout_last_error(), "size"));
    unlink(file);
    CHECK(sprout_store_resolve(s, "ref", &m) == SPROUT_ERR_IO && strstr(sprout_last_error(), "gone"));
    /* removing a reference never touches the file it names */
    CHECK(copy_file(model_src, file));
    CHECK(sprout_store_remove(s, "ref") == SPROUT_OK && access(file, F_OK) == 0);
    CHECK(count_files(path_of(root, "refs"), "sha256-") == 0 && count_files(path_of(root, "blobs"), "sha256-") == 0);

    /* copy: a blob of its own, even where a reference to the file was */
    setenv("SPROUT_STORE_REFERENCE", "1", 1);
    create(s, "ref", "FROM referenced.gguf\n", false);
    unsetenv("SPROUT_STORE_REFERENCE");
    if (create(s, "copied", "FROM referenced.gguf\n", true) == SPROUT_OK) {
        CHECK(sprout_store_resolve(s, "copied", &m) == SPROUT_OK);
        struct stat a, b;
        CHECK(m && stat(sprout_store_model_path(m), &a) == 0 && stat(file, &b) == 0);
        CHECK(m && a.st_ino != b.st_ino && a.st_nlink == 1 && a.st_size == b.st_size);
        sprout_store_model_free(m);
        CHECK(count_files(path_of(root, "refs"), "sha256-") == 0);
        CHECK(sprout_store_resolve(s, "ref", &m) == SPROUT_OK && m && strstr(sprout_store_model_path(m), "/blobs/"));
        sprout_store_model_free(m);
    }
    free(real);
    sprout_store_free(s);
}

static void test_blobs(void) {
    sprout_store *s = open_store(path_of(tmp_root, "store_blobs"), NULL);
    if (!s) return;
    const char *hello = "hello blob";
    char hex[65], digest[80];
    hex_of(hello, strlen(hello), hex);
    snprintf(digest, sizeof digest, "sha256:%s", hex);
    CHECK(!sprout_store_blob_exists(s, digest));
    sprout_blob_writer *w = NULL;
    CHECK(sprout_store_blob_begin(s, digest, &w) == SPROUT_OK);
    CHECK(sprout_blob_writer_write(w, hello, 5) == SPROUT_OK && sprout_blob_writer_write(w, hello + 5, 5) == SPROUT_OK);
    CHECK(sprout_blob_writer_finish(w) == SPROUT_OK && sprout_store_blob_exists(s, digest));
    /* bytes that do not match their digest never land */
    char other[80];
    snprintf(other, sizeof other, "sha256:%064d", 0);
    CHECK(sprout_store_blob_begin(s, other, &w) == SPROUT_OK);
    CHECK(sprout_blob_writer_write(w, "x", 1) == SPROUT_OK);
    CHECK(sprout_blob_writer_finish(w) == SPROUT_ERR_FORMAT && !sprout_store_blob_exists(s, other));
    CHECK(sprout_store_blob_begin(s, other, &w) == SPROUT_OK);
    sprout_blob_writer_abort(w);
    sprout_blob_writer_abort(NULL);
    CHECK(sprout_store_blob_begin(s, "sha256:xyz", &w) == SPROUT_ERR_INVALID_ARGUMENT && w == NULL);
    CHECK(count_files(path_of(sprout_store_root(s), "blobs"), ".tmp") == 0);
    /* an uploaded GGUF is a FROM by its digest, as /api/create's files are */
    char model_digest[80];
    FILE *f = fopen(model_src, "rb");
    sp_sha256 h;
    sp_sha256_init(&h);
    char buf[4096];
    CHECK(sprout_store_blob_begin(s, "sha256:0000000000000000000000000000000000000000000000000000000000000000", &w) ==
          SPROUT_OK);
    for (size_t n; f && (n = fread(buf, 1, sizeof buf, f)) > 0;) {
        sp_sha256_update(&h, buf, n);
        sprout_blob_writer_write(w, buf, n);
    }
    if (f) fclose(f);
    uint8_t d[32];
    sp_sha256_final(&h, d);
    sp_sha256_hex(d, hex);
    snprintf(model_digest, sizeof model_digest, "sha256:%s", hex);
    sprout_blob_writer_abort(w);
    CHECK(sprout_store_blob_begin(s, model_digest, &w) == SPROUT_OK);
    f = fopen(model_src, "rb");
    for (size_t n; f && (n = fread(buf, 1, sizeof buf, f)) > 0;) CHECK(sprout_blob_writer_write(w, buf, n) == SPROUT_OK);
    if (f) fclose(f);
    CHECK(sprout_blob_writer_finish(w) == SPROUT_OK);
    char mf[128];
    snprintf(mf, sizeof mf, "FROM %s\n", model_digest);
    if (create(s, "uploaded", mf, false) == SPROUT_OK) {
        sprout_store_model *m = NULL;
        CHECK(sprout_store_resolve(s, "uploaded", &m) == SPROUT_OK);
        CHECK(m && strstr(sprout_store_model_path(m), hex) != NULL);
        sprout_store_model_free(m);
    }
    sprout_store_free(s);
}

/* An Ollama store as `ollama pull` leaves it, written by hand. */
static void write_blob(const char *root, const char *text, char digest[80]) {
    char hex[65];
    hex_of(text, strlen(text), hex);
    snprintf(digest, 80, "sha256:%s", hex);
    char name[80];
    snprintf(name, sizeof name, "blobs/sha256-%s", hex);
    write_text(path_of(root, name), text);
}

static void make_ollama_store(const char *root, char model_blob[1024]) {
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "mkdir -p %s/blobs %s/manifests/registry.ollama.ai/library/tiny", root, root);
    CHECK(system(cmd) == 0);
    uint8_t d[32];
    char hex[65];
    FILE *f = fopen(model_src, "rb");
    sp_sha256 h;
    sp_sha256_init(&h);
    char buf[65536];
    size_t size = 0;
    for (size_t n; f && (n = fread(buf, 1, sizeof buf, f)) > 0; size += n) sp_sha256_update(&h, buf, n);
    if (f) fclose(f);
    sp_sha256_final(&h, d);
    sp_sha256_hex(d, hex);
    snprintf(model_blob, 1024, "%s/blobs/sha256-%s", root, hex);
    CHECK(copy_file(model_src, model_blob));
    char tmpl[80], params[80], config[80];
    write_blob(root, "{{ .Prompt }}", tmpl);
    const char *params_text = "{\"temperature\":0.25,\"num_gpu\":1,\"stop\":[\"<s>\",\"</s>\"],\"num_predict\":4}";
    write_blob(root, params_text, params);
    const char *config_text = "{\"model_format\":\"gguf\",\"model_family\":\"llama\",\"file_type\":\"F32\"}";
    write_blob(root, config_text, config);
    char manifest[2048];
    snprintf(manifest, sizeof manifest,
             "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.docker.distribution.manifest.v2+json\","
             "\"config\":{\"mediaType\":\"application/vnd.docker.container.image.v1+json\",\"digest\":\"%s\",\"size\":%zu},"
             "\"layers\":[{\"mediaType\":\"application/vnd.ollama.image.model\",\"digest\":\"sha256:%s\",\"size\":%zu},"
             "{\"mediaType\":\"application/vnd.ollama.image.template\",\"digest\":\"%s\",\"size\":%zu},"
             "{\"mediaType\":\"application/vnd.ollama.image.params\",\"digest\":\"%s\",\"size\":%zu}]}",
             config, strlen(config_text), hex, size, tmpl, strlen("{{ .Prompt }}"), params, strlen(params_text));
    write_text(path_of(root, "manifests/registry.ollama.ai/library/tiny/latest"), manifest);
    /* a broken manifest beside it is left out of the list, not fatal */
    write_text(path_of(root, "manifests/registry.ollama.ai/library/tiny/broken"), "{\"schemaVersion\":2,");
}

static void test_ollama_store(void) {
    char ollama[1024];
    snprintf(ollama, sizeof ollama, "%s", path_of(tmp_root, "ollama"));
    char model_blob[1024];
    make_ollama_store(ollama, model_blob);
    sprout_store *s = open_store(path_of(tmp_root, "store_o"), ollama);
    if (!s) return;
    CHECK(!strcmp(sprout_store_ollama_root(s), ollama));
    sprout_store_entry *e = NULL;
    size_t n = 0;
    CHECK(sprout_store_list(s, &e, &n) == SPROUT_OK && n == 1);
    CHECK(n == 1 && !strcmp(e[0].name, "tiny:latest") && e[0].ollama && e[0].size > 1185376);
    sprout_store_entries_free(e, n);
    sprout_store_model *m = NULL;
    CHECK_MSG(sprout_store_resolve(s, "tiny", &m) == SPROUT_OK, "%s", sprout_last_error());
    if (!m) return;
    CHECK(sprout_store_model_ollama(m) && !strcmp(sprout_store_model_path(m), model_blob)); /* zero copy */
    CHECK(!strcmp(sprout_store_model_template(m), "{{ .Prompt }}") && sprout_store_model_system(m) == NULL);
    CHECK(sprout_store_model_license(m) == NULL && !strcmp(sprout_store_model_messages_json(m), "[]"));
    sprout_generation_config cfg;
    sprout_generation_config_init(&cfg);
    CHECK(sprout_store_model_apply(m, &cfg, NULL) == SPROUT_OK); /* num_gpu: Ollama's, ignored */
    CHECK(cfg.temperature == 0.25f && cfg.n_stop_strings == 2 && cfg.max_new_tokens == 4);
    CHECK(strstr(sprout_store_model_modelfile(m), "PARAMETER num_gpu 1\n") != NULL);

    /* run it: a few tokens generated from Ollama's blob */
    sprout_model *model = NULL;
    sprout_pipeline *p = NULL;
    sprout_result *r = NULL;
    cfg.temperature = 0;
    CHECK(sprout_model_load(sprout_store_model_path(m), NULL, &model) == SPROUT_OK);
    CHECK(model && sprout_pipeline_create(model, NULL, &p) == SPROUT_OK);
    CHECK(p && sprout_generate(p, "Once upon a time", &cfg, NULL, NULL, &r) == SPROUT_OK);
    size_t n_tokens = 0;
    if (r) sprout_result_tokens(r, &n_tokens);
    CHECK(n_tokens == 4);
    sprout_result_free(r);
    sprout_pipeline_free(p);
    sprout_model_free(model);
    sprout_store_model_free(m);

    CHECK(sprout_store_remove(s, "tiny") == SPROUT_ERR_UNSUPPORTED);
    CHECK(sprout_store_resolve(s, "tiny:broken", &m) == SPROUT_ERR_FORMAT && m == NULL);
    CHECK(strstr(sprout_last_error(), "tiny/broken") != NULL);
    /* a sprout model FROM an Ollama one: its layers linked in, Ollama's store untouched */
    if (create(s, "tiny-custom", "FROM tiny\nSYSTEM Be brief.\n", false) == SPROUT_OK) {
        CHECK(sprout_store_resolve(s, "tiny-custom", &m) == SPROUT_OK);
        CHECK(m && !sprout_store_model_ollama(m) && !strcmp(sprout_store_model_template(m), "{{ .Prompt }}"));
        CHECK(m && strstr(sprout_store_model_path(m), "store_o/blobs/") != NULL);
        sprout_store_model_free(m);
        CHECK(sprout_store_remove(s, "tiny-custom") == SPROUT_OK && access(model_blob, F_OK) == 0);
    }
    /* a name in both stores is sprout's */
    CHECK(sprout_store_copy(s, "tiny", "tiny") == SPROUT_OK);
    CHECK(sprout_store_resolve(s, "tiny", &m) == SPROUT_OK && m && !sprout_store_model_ollama(m));
    sprout_store_model_free(m);
    CHECK(sprout_store_list(s, &e, &n) == SPROUT_OK && n == 1 && !e[0].ollama);
    sprout_store_entries_free(e, n);
    sprout_store_free(s);

    /* the defaults: $SPROUT_MODELS and $OLLAMA_MODELS */
    setenv("SPROUT_MODELS", path_of(tmp_root, "store_env"), 1);
    setenv("OLLAMA_MODELS", ollama, 1);
    CHECK(sprout_store_open(NULL, &s) == SPROUT_OK);
    CHECK(s && !strcmp(sprout_store_root(s), path_of(tmp_root, "store_env")) && !strcmp(sprout_store_ollama_root(s), ollama));
    CHECK(s && sprout_store_resolve(s, "tiny", &m) == SPROUT_OK && sprout_store_model_ollama(m));
    sprout_store_model_free(m);
    sprout_store_free(s);
    unsetenv("SPROUT_MODELS");
    unsetenv("OLLAMA_MODELS");
}

/* Every manifest of the store parses and names blobs that are there. */
static void check_consistent(sprout_store *s, size_t *n_models) {
    sprout_store_entry *e = NULL;
    size_t n = 0;
    CHECK(sprout_store_list(s, &e, &n) == SPROUT_OK);
    for (size_t i = 0; i < n; i++) {
        sprout_store_model *m = NULL;
        CHECK_MSG(sprout_store_resolve(s, e[i].name, &m) == SPROUT_OK, "%s: %s", e[i].name, sprout_last_error());
        sprout_store_model_free(m);
    }
    sprout_store_entries_free(e, n);
    *n_models = n;
}

static void test_two_processes(void) {
    const char *root = path_of(tmp_root, "store_two");
    pid_t kids[2];
    for (int k = 0; k < 2; k++) {
        kids[k] = fork();
        if (kids[k] == 0) {
            sprout_store *s = open_store(root, NULL);
            bool ok = true;
            for (int i = 0; i < 3 && ok; i++) {
                char name[32];
                snprintf(name, sizeof name, "p%d-%d", k, i);
                sprout_store_create_params p = {sizeof p, tmp_root, i == 1, NULL, NULL, NULL};
                ok = sprout_store_create(s, name, full_modelfile, strlen(full_modelfile), &p) == SPROUT_OK &&
                     sprout_store_create(s, "shared", full_modelfile, strlen(full_modelfile), &p) == SPROUT_OK;
            }
            sprout_store_free(s);
            _exit(ok ? 0 : 1);
        }
    }
    for (int k = 0; k < 2; k++) {
        int status = 0;
        CHECK(waitpid(kids[k], &status, 0) == kids[k] && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    sprout_store *s = open_store(root, NULL);
    size_t n = 0;
    check_consistent(s, &n);
    CHECK(n == 7);
    sprout_store_free(s);
}

/* A create killed at random instants: the store stays readable, and the
 * next writer cleans the dead one's temporary files. */
static void test_killed(void) {
    const char *root = path_of(tmp_root, "store_kill");
    srand(12345);
    int rounds = test_quick_run() ? 10 : 20;
    /* how long a whole create takes here (a second one: the first makes the folders), so that the kills
     * land inside one */
    struct timespec t0, t1;
    sprout_store *timed = open_store(path_of(tmp_root, "store_timed"), NULL);
    create(timed, "timed", full_modelfile, true);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    create(timed, "timed2", "FROM model.gguf\nSYSTEM another\n", true);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    sprout_store_free(timed);
    long span_us = (t1.tv_sec - t0.tv_sec) * 1000000L + (t1.tv_nsec - t0.tv_nsec) / 1000 + 1;
    int killed = 0;
    for (int i = 0; i < rounds; i++) {
        pid_t kid = fork();
        if (kid == 0) {
            sprout_store *s = open_store(root, NULL);
            char name[32];
            snprintf(name, sizeof name, "k%d", i % 4);
            sprout_store_create_params p = {sizeof p, tmp_root, i % 2 == 0, NULL, NULL, NULL};
            sprout_status st = sprout_store_create(s, name, full_modelfile, strlen(full_modelfile), &p);
            if (st == SPROUT_OK && i % 3 == 0) st = sprout_store_remove(s, name);
            _exit(st == SPROUT_OK ? 0 : 1);
        }
        /* the fork adds to the child's time: up to half as much again */
        struct timespec ts = {0, (rand() % (span_us + span_us / 2)) * 1000L % 1000000000L};
        nanosleep(&ts, NULL);
        kill(kid, SIGKILL);
        int status;
        waitpid(kid, &status, 0);
        killed += WIFSIGNALED(status);
        sprout_store *s = open_store(root, NULL);
        size_t n;
        check_consistent(s, &n);
        sprout_store_free(s);
    }
    fprintf(stderr, "killed %d of %d (span %ld us)\n", killed, rounds, span_us);
    CHECK_MSG(killed > 0, "no create was killed midway (%d rounds of %ld us)", rounds, span_us);
    sprout_store *s = open_store(root, NULL);
    create(s, "after", full_modelfile, true);
    CHECK(count_files(path_of(root, "blobs"), ".tmp-sprout-") == 0);
    size_t n;
    check_consistent(s, &n);
    CHECK(n >= 1);
    sprout_store_free(s);
}

int main(void) {
    snprintf(tmp_root, sizeof tmp_root, "/tmp/sprout_test_store_XXXXXX");
    if (!mkdtemp(tmp_root)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(model_src, sizeof model_src, "%s/model.gguf", tmp_root);
    char shared[1024];
    snprintf(shared, sizeof shared, "%s/models/stories260K.gguf", test_shared_dir());
    if (!copy_file(shared, model_src)) {
        fprintf(stderr, "cannot copy %s\n", shared);
        return 1;
    }
    test_sha256();
    test_names();
    test_round_trip();
    test_errors();
    test_reference_and_copy();
    test_blobs();
    test_ollama_store();
    test_two_processes();
    test_killed();
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp_root);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmp_root);
    TEST_MAIN_END();
}
