/* I/O faults while writing GGUF files (issue 39): `quantize`, the GGUF
 * writer's split sets and `export-lora` meet a disk that fills up at any
 * point, a failing flush, sync, close or rename (injected through
 * tests/fault_inject.c), a real size limit (RLIMIT_FSIZE: the kernel
 * refuses the write), a real full file system (a small tmpfs, where this
 * process may mount one) and the CLI under `ulimit -f`. Each time the call
 * fails naming the output, no temporary file is left, and the output is
 * absent or, when one was there before, the old file untouched; the same
 * call then succeeds and gives a file that opens. And a model file cut
 * short while mapped fails its load or its next request cleanly. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "fault_inject.h"
#include "gguf/gguf_resident.h"
#include "gguf/gguf_writer.h"
#include "test_util.h"

static char model_path[1024], dir[256], adapter[512];

static char *read_all(const char *path, size_t *len) { return test_read_file(path, len); }

/* Files in `folder` whose name contains `part` ("" for any). */
static int files_with(const char *folder, const char *part) {
    DIR *d = opendir(folder);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));) n += e->d_name[0] != '.' && strstr(e->d_name, part) != NULL;
    if (d) closedir(d);
    return n;
}

typedef sprout_status (*write_op)(const char *out);

static sprout_status quantize_to(const char *out) {
    sprout_quantize_params qp;
    sprout_quantize_params_default(&qp);
    qp.file_type = SPROUT_FTYPE_Q8_0;
    qp.n_threads = 1;
    return sprout_quantize_model(model_path, out, &qp, NULL);
}

/* Parts of at most 200 kB: stories260K in Q8_0 makes two or more. */
static sprout_status quantize_split_to(const char *out) {
    sprout_quantize_params qp;
    sprout_quantize_params_default(&qp);
    qp.file_type = SPROUT_FTYPE_Q8_0;
    qp.n_threads = 1;
    qp.split_max_bytes = 200000;
    return sprout_quantize_model(model_path, out, &qp, NULL);
}

static sprout_status export_to(const char *out) {
    const char *paths[1] = {adapter};
    sprout_lora_export_params p;
    sprout_lora_export_params_default(&p);
    p.base_path = model_path;
    p.adapter_paths = paths;
    p.n_adapters = 1;
    p.output_path = out;
    p.n_threads = 1;
    return sprout_lora_export(&p);
}

/* After a failed write to `out` in `folder`: the error names it, no
 * temporary is left, and the output is what was there before (old, or
 * nothing). */
static void check_failed_cleanly(const char *what, sprout_status st, const char *folder, const char *out, const char *old,
                                 size_t old_len) {
    CHECK_MSG(st != SPROUT_OK, "%s: succeeded", what);
    CHECK_MSG(st == SPROUT_OK || strstr(sprout_last_error(), out) != NULL, "%s: the error does not name %s: %s", what, out,
              sprout_last_error());
    CHECK_MSG(files_with(folder, ".tmp.") == 0, "%s: a temporary file is left in %s", what, folder);
    size_t len = 0;
    char *now = read_all(out, &len);
    if (old) CHECK_MSG(now && len == old_len && !memcmp(now, old, len), "%s: the old %s was changed", what, out);
    else CHECK_MSG(now == NULL, "%s: a (torn) %s was left", what, out);
    free(now);
}

static void check_written(const char *what, write_op op, const char *out) {
    sp_fail(SPROUT_OK, "%s", "");
    sprout_status st = op(out);
    CHECK_MSG(st == SPROUT_OK, "%s: the retry fails: %s", what, sprout_last_error());
    sprout_gguf *g = NULL;
    CHECK_MSG(st != SPROUT_OK || sprout_gguf_open(out, &g) == SPROUT_OK, "%s: the output does not open: %s", what,
              sprout_last_error());
    sprout_gguf_close(g);
}

/* Every injected fault, with and without an old output in place. */
static void injected_faults(const char *name, write_op op) {
    char out[600];
    snprintf(out, sizeof out, "%s/%s.gguf", dir, name);
    /* the size of a whole output, for faults at its start, middle and end */
    CHECK(op(out) == SPROUT_OK);
    struct stat sb;
    const uint64_t size = stat(out, &sb) == 0 ? (uint64_t)sb.st_size : 0;
    unlink(out);
    const struct {
        fault_io_call call;
        uint64_t arg;
        const char *label;
    } faults[] = {
        {FAULT_IO_FWRITE, 0, "disk full at byte 0"},
        {FAULT_IO_FWRITE, 1000, "disk full in the header"},
        {FAULT_IO_FWRITE, size / 2, "disk full halfway"},
        {FAULT_IO_FWRITE, size > 0 ? size - 1 : 0, "disk full at the last byte"},
        {FAULT_IO_FFLUSH, 0, "flush fails"},
        {FAULT_IO_FSYNC, 0, "fsync fails"},
        {FAULT_IO_FCLOSE, 0, "close fails"},
        {FAULT_IO_RENAME, 0, "rename fails"},
    };
    static const char old[] = "the previous output, to be kept whole";
    for (int with_old = 0; with_old < 2; with_old++)
        for (size_t i = 0; i < sizeof faults / sizeof *faults; i++) {
            char what[200];
            snprintf(what, sizeof what, "%s, %s%s", name, faults[i].label, with_old ? ", over an old file" : "");
            if (with_old) {
                FILE *f = fopen(out, "wb");
                CHECK(f && fwrite(old, 1, sizeof old, f) == sizeof old);
                if (f) fclose(f);
            }
            fault_io_arm(faults[i].call, faults[i].arg);
            sprout_status st = op(out);
            bool fired = fault_io_fired();
            fault_io_disarm();
            CHECK_MSG(fired, "%s: the fault was not reached", what);
            check_failed_cleanly(what, st, dir, out, with_old ? old : NULL, sizeof old);
            check_written(what, op, out);
            unlink(out);
        }
}

/* A split set whose second rename fails: the part already renamed is taken
 * back, so no set is left half written. */
static void split_rename_fault(void) {
    char out[600];
    snprintf(out, sizeof out, "%s/split.gguf", dir);
    CHECK_MSG(quantize_split_to(out) == SPROUT_OK, "%s", sprout_last_error());
    const int parts = files_with(dir, "split-0");
    CHECK_MSG(parts >= 2, "the split quantization made %d parts", parts);
    for (int p = 0; p < parts; p++) {
        char *part = sp_gguf_split_path(out, (uint32_t)p, (uint32_t)parts);
        if (part) unlink(part);
        free(part);
    }
    for (uint64_t after = 0; after < (uint64_t)parts; after++) {
        fault_io_arm(FAULT_IO_RENAME, after);
        sprout_status st = quantize_split_to(out);
        fault_io_disarm();
        CHECK_MSG(st == SPROUT_OK ? false : strstr(sprout_last_error(), "split-0") != NULL, "rename %llu: %s",
                  (unsigned long long)after, sprout_last_error());
        CHECK_MSG(files_with(dir, "split") == 0, "rename %llu of a split set: %d files left", (unsigned long long)after,
                  files_with(dir, "split"));
    }
}

/* A real refusal from the kernel: the file size limit makes write() fail
 * with EFBIG (SIGXFSZ ignored, as a shell's `ulimit -f` user would). */
static void size_limit(const char *name, write_op op) {
    char out[600], what[200];
    snprintf(out, sizeof out, "%s/%s-limited.gguf", dir, name);
    snprintf(what, sizeof what, "%s under a 100 kB file size limit", name);
    struct rlimit old, lim;
    CHECK(getrlimit(RLIMIT_FSIZE, &old) == 0);
    void (*old_handler)(int) = signal(SIGXFSZ, SIG_IGN);
    lim = (struct rlimit){100000, old.rlim_max};
    CHECK(setrlimit(RLIMIT_FSIZE, &lim) == 0);
    sp_fail(SPROUT_OK, "%s", "");
    sprout_status st = op(out);
    CHECK(setrlimit(RLIMIT_FSIZE, &old) == 0);
    signal(SIGXFSZ, old_handler);
    check_failed_cleanly(what, st, dir, out, NULL, 0);
    CHECK_MSG(strstr(sprout_last_error(), strerror(EFBIG)) != NULL, "%s: %s", what, sprout_last_error());
    check_written(what, op, out);
    unlink(out);
}

/* A file system that is really full: a 128 kB tmpfs, where this process may
 * mount one (root in a container usually may; elsewhere the case is skipped
 * and says so). */
static void full_filesystem(const char *name, write_op op) {
    char mnt[600], out[700], what[200];
    snprintf(mnt, sizeof mnt, "%s/full-%s", dir, name);
    snprintf(out, sizeof out, "%s/%s.gguf", mnt, name);
    snprintf(what, sizeof what, "%s on a full tmpfs", name);
    CHECK(mkdir(mnt, 0700) == 0);
    if (mount("tmpfs", mnt, "tmpfs", MS_NOSUID | MS_NODEV, "size=128k") != 0) {
        printf("%s: skipped (cannot mount a tmpfs here: %s)\n", what, strerror(errno));
        rmdir(mnt);
        return;
    }
    sp_fail(SPROUT_OK, "%s", "");
    sprout_status st = op(out);
    check_failed_cleanly(what, st, mnt, out, NULL, 0);
    CHECK_MSG(strstr(sprout_last_error(), strerror(ENOSPC)) != NULL, "%s: %s", what, sprout_last_error());
    CHECK_MSG(files_with(mnt, "") == 0, "%s: files left on the full disk", what);
    CHECK(umount(mnt) == 0);
    rmdir(mnt);
}

/* The CLI under `ulimit -f` (512-byte blocks): it fails, says which file,
 * and leaves nothing. */
static void cli_size_limit(const char *name, const char *args) {
    char cmd[4096], *text = NULL, out[600];
    snprintf(cmd, sizeof cmd, "cd '%s' && (ulimit -f 200; trap '' XFSZ; exec '%s' %s) 2>&1", dir, SPROUT_CLI_PATH, args);
    int rc = test_run_command(cmd, &text);
    snprintf(out, sizeof out, "%s/%s", dir, name);
    CHECK_MSG(rc != 0 && rc != -1, "sprout %s under ulimit -f: exit status %d", args, rc);
    CHECK_MSG(strstr(text, name) != NULL, "sprout %s under ulimit -f does not name %s: %s", args, name, text);
    CHECK_MSG(access(out, F_OK) != 0 && files_with(dir, ".tmp.") == 0, "sprout %s under ulimit -f left files", args);
    free(text);
}

/* --- a model file truncated while in use ------------------------------------------------- */

static void copy_model(const char *to) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s' && chmod u+w '%s'", model_path, to, to);
    CHECK_MSG(system(cmd) == 0, "%s", cmd);
}

static void check_truncation_error(const char *what, sprout_status st, const char *path) {
    CHECK_MSG(st == SPROUT_ERR_IO, "%s: status %s: %s", what, sprout_status_str(st), sprout_last_error());
    CHECK_MSG(strstr(sprout_last_error(), path) != NULL, "%s: the error does not name %s: %s", what, path, sprout_last_error());
}

/* Cut short between its mapping and its reading (the header, the tensor
 * data, the last byte), and between loading and generating: each is a
 * clean SPROUT_ERR_IO naming the file, never SIGBUS. */
static void truncated_model(void) {
    char copy[600];
    snprintf(copy, sizeof copy, "%s/truncated.gguf", dir);
    struct stat sb;
    CHECK(stat(model_path, &sb) == 0);
    const int64_t size = (int64_t)sb.st_size;
    const struct {
        int64_t cut;
        const char *label;
    } cuts[] = {{100, "in the header"}, {6000, "in the vocabulary"}, {size / 2, "in the tensor data"}, {size - 1, "at the last byte"}};
    sprout_model_params mp = {.struct_size = sizeof mp, .n_threads = 1, .n_ctx = 64};
    for (size_t i = 0; i < sizeof cuts / sizeof *cuts; i++) {
        char what[200];
        snprintf(what, sizeof what, "cut %s while loading", cuts[i].label);
        copy_model(copy);
        fault_map_truncate(copy, cuts[i].cut);
        sprout_model *m = NULL;
        sp_fail(SPROUT_OK, "%s", "");
        sprout_status st = sprout_model_load(copy, &mp, &m);
        check_truncation_error(what, st, copy);
        sprout_model_free(m);
    }

    /* cut after the header's checks, before the load-time read of every
     * page: the SIGBUS guard's case */
    copy_model(copy);
    sprout_gguf *g = NULL;
    CHECK_MSG(sprout_gguf_open(copy, &g) == SPROUT_OK, "%s", sprout_last_error());
    CHECK(truncate(copy, size / 2) == 0);
    if (g) {
        sprout_status st = sp_gguf_fault_in(g);
        check_truncation_error("cut before the pages are read", st, copy);
        CHECK_MSG(strstr(sprout_last_error(), "could not be read") != NULL, "not the guard's error: %s", sprout_last_error());
    }
    sprout_gguf_close(g);

    copy_model(copy);
    sprout_model *m = NULL;
    CHECK_MSG(sprout_model_load(copy, &mp, &m) == SPROUT_OK, "%s", sprout_last_error());
    sprout_pipeline *p = NULL;
    sprout_scheduler *s = NULL;
    sprout_scheduler_params sp = {.struct_size = sizeof sp, .n_slots = 1, .n_ctx = 64, .n_threads = 1};
    if (m) CHECK(sprout_pipeline_create(m, NULL, &p) == SPROUT_OK);
    if (m) CHECK(sprout_scheduler_create(m, &sp, &s) == SPROUT_OK);
    if (p && s) {
        CHECK(truncate(copy, size / 2) == 0);
        sprout_generation_config cfg;
        sprout_generation_config_init(&cfg);
        cfg.max_new_tokens = 2;
        sprout_result *r = NULL;
        check_truncation_error("cut after loading, then generate", sprout_generate(p, "Once upon a time", &cfg, NULL, NULL, &r), copy);
        sprout_result_free(r);
        const sprout_token prompt[] = {1, 403};
        sprout_request_params rp = {.struct_size = sizeof rp, .prompt = prompt, .n_prompt = 2, .config = &cfg};
        sprout_request *req = NULL;
        check_truncation_error("cut after loading, then a scheduler request", sprout_scheduler_submit(s, &rp, &req), copy);
        sprout_request_free(req);
    }
    sprout_scheduler_free(s);
    sprout_pipeline_free(p);
    sprout_model_free(m);
    unlink(copy);
}

/* Guards on many threads at once: each thread's SIGBUS ends its own walk
 * and no other (the handler is shared, the jump target per thread); the
 * threads with whole files finish their walk. */
typedef struct walker {
    char path[600];
    bool cut;
    pthread_barrier_t *opened, *cut_done;
    sprout_status status;
} walker;

static void *walk_pages(void *arg) {
    walker *w = arg;
    sprout_gguf *g = NULL;
    w->status = sprout_gguf_open(w->path, &g);
    pthread_barrier_wait(w->opened);
    pthread_barrier_wait(w->cut_done); /* then all walk at once */
    if (w->status == SPROUT_OK) w->status = sp_gguf_fault_in(g);
    sprout_gguf_close(g);
    return NULL;
}

static void concurrent_guards(void) {
    enum { N = 6 };
    struct stat sb;
    CHECK(stat(model_path, &sb) == 0);
    const int64_t size = (int64_t)sb.st_size;
    walker w[N];
    pthread_t th[N];
    pthread_barrier_t opened, cut_done;
    pthread_barrier_init(&opened, NULL, N + 1);
    pthread_barrier_init(&cut_done, NULL, N + 1);
    for (int i = 0; i < N; i++) {
        snprintf(w[i].path, sizeof w[i].path, "%s/walker%d.gguf", dir, i);
        w[i].cut = i % 2 == 0;
        w[i].opened = &opened;
        w[i].cut_done = &cut_done;
        copy_model(w[i].path);
        CHECK(pthread_create(&th[i], NULL, walk_pages, &w[i]) == 0);
    }
    pthread_barrier_wait(&opened); /* every file is open and mapped: now cut half of them */
    for (int i = 0; i < N; i++)
        if (w[i].cut) CHECK(truncate(w[i].path, size / 3) == 0);
    pthread_barrier_wait(&cut_done);
    for (int i = 0; i < N; i++) {
        pthread_join(th[i], NULL);
        CHECK_MSG(w[i].cut ? w[i].status == SPROUT_ERR_IO : w[i].status == SPROUT_OK, "walker %d (%s): status %s", i,
                  w[i].cut ? "cut" : "whole", sprout_status_str(w[i].status));
        unlink(w[i].path);
    }
    pthread_barrier_destroy(&opened);
    pthread_barrier_destroy(&cut_done);
}

int main(void) {
    snprintf(model_path, sizeof model_path, "%s/models/stories260K.gguf", test_shared_dir());
    snprintf(dir, sizeof dir, "/tmp/sprout-io-faults-XXXXXX");
    if (!mkdtemp(dir)) return 1;
    snprintf(adapter, sizeof adapter, "%s/adapter.lora", dir);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' '%s' '%s' --rank 4 --type F32 --targets attn --seed 3 --magnitude 0.1 >/dev/null",
             SPROUT_MAKE_LORA_PATH, model_path, adapter);
    CHECK_MSG(system(cmd) == 0, "%s", cmd);

    injected_faults("quantize", quantize_to);
    injected_faults("export", export_to);
    split_rename_fault();
    truncated_model();
    concurrent_guards();
    size_limit("quantize", quantize_to);
    size_limit("export", export_to);
    full_filesystem("quantize", quantize_to);
    full_filesystem("export", export_to);
    char args[2048];
    snprintf(args, sizeof args, "quantize '%s' cli-q8.gguf Q8_0", model_path);
    cli_size_limit("cli-q8.gguf", args);
    snprintf(args, sizeof args, "export-lora -m '%s' --lora '%s' -o cli-export.gguf", model_path, adapter);
    cli_size_limit("cli-export.gguf", args);

    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
    TEST_MAIN_END();
}
