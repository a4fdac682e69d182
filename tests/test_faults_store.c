/* I/O faults while the model store writes (issue 39): `sprout create`
 * (copying the GGUF into a blob, quantizing it into one, or linking it),
 * a blob upload (/api/blobs), and a create that replaces a model, meet a
 * disk that fills up at any byte, a failing fsync or rename (each call in
 * turn), injected through tests/fault_inject.c, and a real full file system
 * (a small tmpfs, where this process may mount one). Each time the call
 * fails naming a path in the store, no temporary file is left, every blob
 * is whole (its bytes hash to its name), and the model's manifest is absent
 * or, when it was there before, still the old one: never torn. The same
 * call then succeeds and gives a model that opens. */
#include <errno.h>
#include <ftw.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "core/sha256.h"
#include "fault_inject.h"
#include "test_util.h"

static char dir[256], model_copy[512], root[512];
static const char *current_case;

static const char modelfile_old[] = "FROM model.gguf\nSYSTEM \"the old one\"\n";
static const char modelfile_new[] = "FROM model.gguf\nSYSTEM \"the new one\"\n";

/* --- the store's state ------------------------------------------------------------------------------------- */

static int temps_left, torn_blobs;

/* A blob is whole when its bytes hash to its name (sha256-<hex>); a
 * referenced file's symbolic link is the file's, checked by the store. */
static bool blob_whole(const char *path, const char *base) {
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    sp_sha256 h;
    sp_sha256_init(&h);
    char buf[65536];
    for (size_t n; (n = fread(buf, 1, sizeof buf, f)) > 0;) sp_sha256_update(&h, buf, n);
    fclose(f);
    uint8_t raw[32];
    char hex[65];
    sp_sha256_final(&h, raw);
    sp_sha256_hex(raw, hex);
    return !strncmp(base, "sha256-", 7) && !strcmp(base + 7, hex);
}

static int visit(const char *path, const struct stat *sb, int type, struct FTW *ftw) {
    const char *base = path + ftw->base;
    if (strstr(base, ".tmp")) {
        temps_left++;
        fprintf(stderr, "%s: a temporary is left: %s\n", current_case, path);
    }
    if (type == FTW_F && S_ISREG(sb->st_mode) && strstr(path, "/blobs/") && !strstr(base, ".tmp") && !blob_whole(path, base)) {
        torn_blobs++;
        fprintf(stderr, "%s: a torn blob: %s\n", current_case, path);
    }
    return 0;
}

/* The model's SYSTEM as the store has it: "" when the name is not there. */
static void system_of(const char *name, char *out, size_t cap) {
    sprout_store_params sp = {.struct_size = sizeof sp, .root = root, .ollama_root = ""};
    sprout_store *s = NULL;
    sprout_store_model *m = NULL;
    out[0] = 0;
    if (sprout_store_open(&sp, &s) == SPROUT_OK && sprout_store_resolve(s, name, &m) == SPROUT_OK)
        snprintf(out, cap, "%s", sprout_store_model_system(m) ? sprout_store_model_system(m) : "");
    sprout_store_model_free(m);
    sprout_store_free(s);
}

/* After a failure: the error names a path in the store, nothing temporary
 * is left, every blob is whole, the manifest is the one before (`before`:
 * its SYSTEM, "" for none). */
static void check_consistent(const char *what, sprout_status st, const char *before) {
    current_case = what;
    CHECK_MSG(st != SPROUT_OK, "%s: succeeded", what);
    CHECK_MSG(st == SPROUT_OK || strstr(sprout_last_error(), root), "%s: the error names no path in the store: %s", what,
              sprout_last_error());
    temps_left = torn_blobs = 0;
    nftw(root, visit, 16, FTW_PHYS);
    CHECK_MSG(temps_left == 0 && torn_blobs == 0, "%s: %d temporaries, %d torn blobs", what, temps_left, torn_blobs);
    char now[256];
    system_of("story", now, sizeof now);
    CHECK_MSG(!strcmp(now, before), "%s: the model's SYSTEM is \"%s\", not \"%s\" as before", what, now, before);
}

/* --- the writes under test ---------------------------------------------------------------------------------- */

typedef struct store_op {
    const char *name;
    bool copy;
    const char *quantize;
    bool upload;  /* a blob upload, not a create */
    bool replace; /* over a model created before */
} store_op;

static sprout_status create(const char *modelfile, bool copy, const char *quantize) {
    sprout_store_params sp = {.struct_size = sizeof sp, .root = root, .ollama_root = ""};
    sprout_store *s = NULL;
    sprout_status st = sprout_store_open(&sp, &s);
    sprout_store_create_params cp = {.struct_size = sizeof cp, .base_dir = dir, .copy = copy, .quantize = quantize};
    if (st == SPROUT_OK) st = sprout_store_create(s, "story", modelfile, strlen(modelfile), &cp);
    sprout_store_free(s);
    return st;
}

static char model_digest[80];
static char *model_bytes;
static size_t model_len;

static sprout_status upload(void) {
    sprout_store_params sp = {.struct_size = sizeof sp, .root = root, .ollama_root = ""};
    sprout_store *s = NULL;
    sprout_blob_writer *w = NULL;
    sprout_status st = sprout_store_open(&sp, &s);
    if (st == SPROUT_OK) st = sprout_store_blob_begin(s, model_digest, &w);
    for (size_t at = 0; st == SPROUT_OK && at < model_len; at += 100000)
        st = sprout_blob_writer_write(w, model_bytes + at, model_len - at < 100000 ? model_len - at : 100000);
    if (st == SPROUT_OK) st = sprout_blob_writer_finish(w);
    else sprout_blob_writer_abort(w);
    sprout_store_free(s);
    return st;
}

static int remove_one(const char *path, const struct stat *sb, int type, struct FTW *ftw) {
    (void)sb, (void)type, (void)ftw;
    return remove(path);
}

/* A fresh store, with the old model in it when the case replaces one. */
static void fresh_store(const store_op *op) {
    nftw(root, remove_one, 16, FTW_DEPTH | FTW_PHYS);
    CHECK(mkdir(root, 0700) == 0);
    if (op->replace) CHECK_MSG(create(modelfile_old, op->copy, NULL) == SPROUT_OK, "%s", sprout_last_error());
}

static sprout_status run_op(const store_op *op) {
    sp_fail(SPROUT_OK, "%s", "");
    return op->upload ? upload() : create(op->replace ? modelfile_new : modelfile_old, op->copy, op->quantize);
}

/* The same call without a fault succeeds, and the model opens. */
static void check_retry(const char *what, const store_op *op) {
    sprout_status st = run_op(op);
    CHECK_MSG(st == SPROUT_OK, "%s: the retry fails: %s", what, sprout_last_error());
    if (op->upload) {
        sprout_store_params sp = {.struct_size = sizeof sp, .root = root, .ollama_root = ""};
        sprout_store *s = NULL;
        CHECK(sprout_store_open(&sp, &s) == SPROUT_OK && sprout_store_blob_exists(s, model_digest));
        sprout_store_free(s);
        return;
    }
    sprout_store_params sp = {.struct_size = sizeof sp, .root = root, .ollama_root = ""};
    sprout_store *s = NULL;
    sprout_store_model *m = NULL;
    sprout_gguf *g = NULL;
    CHECK_MSG(sprout_store_open(&sp, &s) == SPROUT_OK && sprout_store_resolve(s, "story", &m) == SPROUT_OK &&
                  sprout_gguf_open(sprout_store_model_path(m), &g) == SPROUT_OK,
              "%s: the retry's model does not open: %s", what, sprout_last_error());
    sprout_gguf_close(g);
    sprout_store_model_free(m);
    sprout_store_free(s);
}

/* One fault: the call fails cleanly, then succeeds. Returns whether the
 * fault was reached. */
static bool one_fault(const store_op *op, fault_io_call call, uint64_t arg, const char *label) {
    char what[200];
    snprintf(what, sizeof what, "%s, %s", op->name, label);
    fresh_store(op);
    fault_io_arm(call, arg);
    sprout_status st = run_op(op);
    const bool fired = fault_io_fired();
    fault_io_disarm();
    if (!fired) return false;
    /* a failed fsync of a folder after a rename is not the file's: the write stands */
    if (st == SPROUT_OK && call == FAULT_IO_FSYNC) return true;
    check_consistent(what, st, op->replace ? "the old one" : "");
    check_retry(what, op);
    return true;
}

/* Every fsync and rename in turn; a full disk at the first byte, in the
 * first kilobyte, halfway, and in each of the last bytes (the small blobs
 * and the manifest come last). */
static void sweep(const store_op *op) {
    fresh_store(op);
    fault_io_arm(FAULT_IO_WRITE, UINT64_MAX);
    CHECK_MSG(run_op(op) == SPROUT_OK, "%s: fails without a fault: %s", op->name, sprout_last_error());
    const uint64_t bytes = fault_io_seen();
    fault_io_disarm();
    int reached = 0;
    char label[96];
    const uint64_t offsets[] = {0, bytes / 2, bytes - 1, 1000, bytes - 2000, bytes - 600, bytes - 300, bytes - 100, bytes - 10};
    /* the sanitizers' quick run: the first byte, halfway and the last */
    const size_t n_offsets = test_quick_run() ? 3 : sizeof offsets / sizeof *offsets;
    for (size_t i = 0; i < n_offsets; i++) {
        if (offsets[i] >= bytes) continue;
        snprintf(label, sizeof label, "disk full after %llu of %llu bytes", (unsigned long long)offsets[i], (unsigned long long)bytes);
        reached += one_fault(op, FAULT_IO_WRITE, offsets[i], label);
    }
    if (op->quantize) { /* the GGUF writer's stdio, then the rest */
        reached += one_fault(op, FAULT_IO_FWRITE, 0, "quantizing, disk full at byte 0");
        reached += one_fault(op, FAULT_IO_FWRITE, 100000, "quantizing, disk full at 100 kB");
        reached += one_fault(op, FAULT_IO_FFLUSH, 0, "quantizing, flush fails");
        reached += one_fault(op, FAULT_IO_FCLOSE, 0, "quantizing, close fails");
    }
    for (uint64_t k = 0;; k++) {
        snprintf(label, sizeof label, "fsync %llu fails", (unsigned long long)k + 1);
        if (!one_fault(op, FAULT_IO_FSYNC, k, label)) break;
        reached++;
    }
    for (uint64_t k = 0;; k++) {
        snprintf(label, sizeof label, "rename %llu fails", (unsigned long long)k + 1);
        if (!one_fault(op, FAULT_IO_RENAME, k, label)) break;
        reached++;
    }
    printf("%s: %llu bytes written, %d faults\n", op->name, (unsigned long long)bytes, reached);
    CHECK_MSG(reached >= 4, "%s: only %d faults reached", op->name, reached);
}

/* A file system that is really full: the store on a 512 kB tmpfs, the
 * model (1.1 MB) copied into it. Where this process may not mount one, the
 * case is skipped and says so. */
static void full_filesystem(void) {
    const char *what = "create --copy on a full tmpfs";
    char saved[512];
    snprintf(saved, sizeof saved, "%s", root);
    snprintf(root, sizeof root, "%s/full", dir);
    CHECK(mkdir(root, 0700) == 0);
    if (mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "size=512k") != 0) {
        printf("%s: skipped (cannot mount a tmpfs here: %s)\n", what, strerror(errno));
    } else {
        sp_fail(SPROUT_OK, "%s", "");
        sprout_status st = create(modelfile_old, true, NULL);
        char error[1024];
        snprintf(error, sizeof error, "%s", sprout_last_error());
        check_consistent(what, st, "");
        CHECK_MSG(strstr(error, strerror(ENOSPC)) != NULL, "%s: %s", what, error);
        CHECK(umount(root) == 0);
    }
    rmdir(root);
    snprintf(root, sizeof root, "%s", saved);
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    /* in memory where there is /dev/shm: a hundred stores written and synced take seconds, not half a minute */
    snprintf(dir, sizeof dir, "%s/sprout-store-faults-XXXXXX", access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
    if (!mkdtemp(dir)) return 1;
    snprintf(root, sizeof root, "%s/store", dir);
    snprintf(model_copy, sizeof model_copy, "%s/model.gguf", dir);
    char cmd[4096], src[1024];
    snprintf(src, sizeof src, "%s/models/stories260K.gguf", test_shared_dir());
    snprintf(cmd, sizeof cmd, "cp '%s' '%s' && chmod u+w '%s'", src, model_copy, model_copy);
    CHECK_MSG(system(cmd) == 0, "%s", cmd);
    model_bytes = test_read_file(model_copy, &model_len);
    CHECK(model_bytes != NULL);
    if (model_bytes) {
        sp_sha256 h;
        uint8_t raw[32];
        char hex[65];
        sp_sha256_init(&h);
        sp_sha256_update(&h, model_bytes, model_len);
        sp_sha256_final(&h, raw);
        sp_sha256_hex(raw, hex);
        snprintf(model_digest, sizeof model_digest, "sha256:%s", hex);
    }

    const store_op ops[] = {
        {.name = "create --copy", .copy = true},
        {.name = "create (linked)"},
        {.name = "create --copy over an old model", .copy = true, .replace = true},
        {.name = "create --quantize Q8_0", .quantize = "Q8_0"},
        {.name = "blob upload", .upload = true},
    };
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) sweep(&ops[i]);
    full_filesystem();

    free(model_bytes);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
    TEST_MAIN_END();
}
