/* Blobs: content named by its SHA-256, at <root>/blobs/sha256-<hex>. A
 * local GGUF enters by a hard link where the file system allows (no bytes
 * copied, and the blob survives the original's deletion), else by
 * reference: a symbolic link in blobs (so Ollama's tools still read it) and
 * a record in <root>/refs/sha256-<hex>.json of the path, size and mtime,
 * checked whenever the model is resolved. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "core/sha256.h"
#include "store/parts.h"

static char *digest_file_name(const char *digest, const char *suffix) {
    char name[SP_DIGEST_SIZE + 16];
    snprintf(name, sizeof name, "sha256-%s%s", digest + 7, suffix);
    return strdup(name);
}

static char *in_folder(const char *root, const char *folder, const char *digest, const char *suffix) {
    if (!sp_digest_valid(digest)) return NULL;
    char *name = digest_file_name(digest, suffix);
    char *path = name ? sp_path_join(root, folder, name, (const char *)NULL) : NULL;
    free(name);
    return path;
}

char *sp_blob_path(const char *root, const char *digest) { return in_folder(root, "blobs", digest, ""); }
char *sp_ref_path(const char *root, const char *digest) { return in_folder(root, "refs", digest, ".json"); }

static sprout_status make_folder(const char *root, const char *folder) {
    char *dir = sp_path_join(root, folder, (const char *)NULL);
    if (!dir) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "store: out of memory");
    sprout_status st = sp_mkdirs(dir);
    free(dir);
    return st;
}

sprout_status sp_blob_put(const char *root, const char *digest, const void *data, size_t len) {
    char *path = sp_blob_path(root, digest);
    if (!path) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "store: out of memory");
    struct stat sb;
    sprout_status st = SPROUT_OK;
    if (stat(path, &sb) != 0 || (uint64_t)sb.st_size != len) {
        st = make_folder(root, "blobs");
        if (st == SPROUT_OK) st = sp_write_atomic(path, data, len);
    }
    free(path);
    return st;
}

static sprout_status copy_into(const char *src, const char *dst) {
    int in = open(src, O_RDONLY | O_CLOEXEC);
    if (in < 0) return sp_fail(SPROUT_ERR_IO, "%s: %s", src, strerror(errno));
    int out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    sprout_status st = out < 0 ? sp_fail(SPROUT_ERR_IO, "%s: cannot create: %s", dst, strerror(errno)) : SPROUT_OK;
    enum { CHUNK = 1 << 20 };
    char *buf = st == SPROUT_OK ? malloc(CHUNK) : NULL;
    if (st == SPROUT_OK && !buf) st = sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "store: out of memory");
    while (st == SPROUT_OK) {
        ssize_t n = read(in, buf, CHUNK);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) st = sp_fail(SPROUT_ERR_IO, "%s: read failed: %s", src, strerror(errno));
        if (n <= 0) break;
        for (ssize_t done = 0; st == SPROUT_OK && done < n;) {
            ssize_t w = write(out, buf + done, (size_t)(n - done));
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) st = sp_fail(SPROUT_ERR_IO, "%s: write failed: %s", dst, strerror(errno));
            else done += w;
        }
    }
    if (st == SPROUT_OK && fsync(out) != 0) st = sp_fail(SPROUT_ERR_IO, "%s: fsync failed: %s", dst, strerror(errno));
    free(buf);
    close(in);
    if (out >= 0) close(out);
    return st;
}

/* The reference record, then the symbolic link: a kill between them leaves
 * a record no blob names, which the next create of that file rewrites. */
static sprout_status add_reference(const char *root, const char *path, const char *digest, const char *blob) {
    char *abs = realpath(path, NULL);
    if (!abs) return sp_fail(SPROUT_ERR_IO, "%s: %s", path, strerror(errno));
    struct stat sb;
    sprout_status st = stat(abs, &sb) == 0 ? SPROUT_OK : sp_fail(SPROUT_ERR_IO, "%s: %s", abs, strerror(errno));
    char *ref = st == SPROUT_OK ? sp_ref_path(root, digest) : NULL;
    char *text = NULL;
    if (st == SPROUT_OK) {
        json_t *j = json_pack("{s:s, s:s, s:I, s:I, s:I}", "digest", digest, "path", abs, "size",
                              (json_int_t)sb.st_size, "mtime", (json_int_t)sb.st_mtim.tv_sec, "mtime_ns",
                              (json_int_t)sb.st_mtim.tv_nsec);
        text = j ? json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
        json_decref(j);
        if (!ref || !text) st = sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "store: out of memory");
    }
    if (st == SPROUT_OK) st = make_folder(root, "refs");
    if (st == SPROUT_OK) st = sp_write_atomic(ref, text, strlen(text));
    char *blobs = st == SPROUT_OK ? sp_path_join(root, "blobs", (const char *)NULL) : NULL;
    char *tmp = blobs ? sp_temp_path(blobs) : NULL;
    if (st == SPROUT_OK && !tmp) st = sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "store: out of memory");
    if (st == SPROUT_OK && symlink(abs, tmp) != 0)
        st = sp_fail(SPROUT_ERR_IO, "%s: cannot make a symbolic link: %s", tmp, strerror(errno));
    if (st == SPROUT_OK && rename(tmp, blob) != 0) {
        st = sp_fail(SPROUT_ERR_IO, "%s: cannot rename into place: %s", blob, strerror(errno));
        unlink(tmp);
    }
    if (st == SPROUT_OK) sp_sync_dir(blobs);
    free(tmp);
    free(blobs);
    free(text);
    free(ref);
    free(abs);
    return st;
}

sprout_status sp_blob_add_file(const char *root, const char *path, const char *digest, sp_blob_mode mode,
                               bool *existed) {
    *existed = false;
    char *blob = sp_blob_path(root, digest);
    if (!blob) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "store: out of memory");
    sprout_status st = make_folder(root, "blobs");
    struct stat sb;
    /* a referenced file asked for as a copy becomes one; any other blob that is there stays */
    bool upgrade = mode == SP_BLOB_COPY && lstat(blob, &sb) == 0 && S_ISLNK(sb.st_mode);
    if (st == SPROUT_OK && !upgrade && lstat(blob, &sb) == 0) {
        *existed = true;
        if (mode == SP_BLOB_MOVE) unlink(path);
        free(blob);
        return SPROUT_OK;
    }
    char *dir = st == SPROUT_OK ? sp_path_join(root, "blobs", (const char *)NULL) : NULL;
    if (st == SPROUT_OK && !dir) st = sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "store: out of memory");
    if (st == SPROUT_OK && mode == SP_BLOB_MOVE) {
        if (rename(path, blob) != 0) st = sp_fail(SPROUT_ERR_IO, "%s: cannot rename: %s", blob, strerror(errno));
    } else if (st == SPROUT_OK && mode == SP_BLOB_COPY) {
        char *tmp = sp_temp_path(dir);
        st = tmp ? copy_into(path, tmp) : sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "store: out of memory");
        if (st == SPROUT_OK && rename(tmp, blob) != 0)
            st = sp_fail(SPROUT_ERR_IO, "%s: cannot rename into place: %s", blob, strerror(errno));
        if (tmp && st != SPROUT_OK) unlink(tmp);
        free(tmp);
        if (st == SPROUT_OK && upgrade) {
            char *ref = sp_ref_path(root, digest);
            if (ref) unlink(ref);
            free(ref);
        }
    } else if (st == SPROUT_OK) {
        /* link() is atomic and fails on an existing name: no temporary needed.
         * $SPROUT_STORE_REFERENCE=1 asks for a reference where a link would do. */
        const char *ref_only = getenv("SPROUT_STORE_REFERENCE");
        if (ref_only && !strcmp(ref_only, "1")) st = add_reference(root, path, digest, blob);
        else if (link(path, blob) != 0) {
            if (errno == EEXIST) *existed = true;
            else st = add_reference(root, path, digest, blob);
        }
    }
    if (st == SPROUT_OK) sp_sync_dir(dir);
    free(dir);
    free(blob);
    return st;
}

/* A referenced file checked against its record: its size always, its bytes
 * when its modification time moved. */
static sprout_status check_reference(const char *ref, const char *digest, char **path) {
    char *text;
    size_t len;
    sprout_status st = sp_read_file(ref, 1 << 16, &text, &len);
    if (st != SPROUT_OK) return st;
    json_t *j = json_loadb(text, len, 0, NULL);
    free(text);
    json_t *p = json_object_get(j, "path"), *size = json_object_get(j, "size"), *sec = json_object_get(j, "mtime"),
           *nsec = json_object_get(j, "mtime_ns");
    if (!json_is_string(p) || !json_is_integer(size) || !json_is_integer(sec) || !json_is_integer(nsec)) {
        json_decref(j);
        return sp_fail(SPROUT_ERR_FORMAT, "%s: not a reference record", ref);
    }
    const char *file = json_string_value(p);
    struct stat sb;
    if (stat(file, &sb) != 0)
        st = sp_fail(SPROUT_ERR_IO, "%s: the model's file has gone: %s", file, strerror(errno));
    else if ((json_int_t)sb.st_size != json_integer_value(size))
        st = sp_fail(SPROUT_ERR_IO, "%s: the model's file changed since it was added (size %lld, was %lld)", file,
                     (long long)sb.st_size, (long long)json_integer_value(size));
    else if ((json_int_t)sb.st_mtim.tv_sec != json_integer_value(sec) ||
             (json_int_t)sb.st_mtim.tv_nsec != json_integer_value(nsec)) {
        char now[SP_DIGEST_SIZE];
        st = sp_hash_file(file, now, NULL);
        if (st == SPROUT_OK && strcmp(now, digest))
            st = sp_fail(SPROUT_ERR_IO, "%s: the model's file changed since it was added (its sha256 differs)", file);
    }
    if (st == SPROUT_OK && !(*path = strdup(file))) st = sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "store: out of memory");
    json_decref(j);
    return st;
}

sprout_status sp_blob_open_path(const char *root, const char *digest, uint64_t size, char **path) {
    *path = NULL;
    char *ref = sp_ref_path(root, digest), *blob = sp_blob_path(root, digest);
    sprout_status st = ref && blob ? SPROUT_OK : sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "store: out of memory");
    struct stat sb, lsb;
    if (st == SPROUT_OK && lstat(blob, &lsb) == 0 && S_ISLNK(lsb.st_mode) && access(ref, F_OK) == 0) {
        st = check_reference(ref, digest, path);
    } else if (st == SPROUT_OK) {
        if (stat(blob, &sb) != 0)
            st = sp_fail(SPROUT_ERR_IO, "%s: the blob of %s is missing: %s", blob, digest, strerror(errno));
        else if ((uint64_t)sb.st_size != size)
            st = sp_fail(SPROUT_ERR_FORMAT, "%s: %llu bytes, the manifest says %llu", blob,
                         (unsigned long long)sb.st_size, (unsigned long long)size);
        else {
            *path = blob;
            blob = NULL;
        }
    }
    free(ref);
    free(blob);
    return st;
}

/* ---- blobs uploaded by digest (/api/blobs) ------------------------------ */

struct sprout_blob_writer {
    char *root, *tmp, *blob;
    char digest[SP_DIGEST_SIZE];
    int fd;
    sp_sha256 hash;
};

bool sprout_store_blob_exists(sprout_store *store, const char *digest) {
    if (!store || !sp_digest_valid(digest)) return false;
    char *blob = sp_blob_path(store->root, digest);
    struct stat sb;
    bool found = blob && stat(blob, &sb) == 0;
    free(blob);
    if (!found && store->ollama_root) {
        blob = sp_blob_path(store->ollama_root, digest);
        found = blob && stat(blob, &sb) == 0;
        free(blob);
    }
    return found;
}

sprout_status sprout_store_blob_begin(sprout_store *store, const char *digest, sprout_blob_writer **out) {
    if (!out) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "store: no output pointer");
    *out = NULL;
    if (!store) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "store: no store");
    if (!sp_digest_valid(digest))
        return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "blob digest '%.80s' is not sha256:<64 hex digits>",
                       digest ? digest : "");
    sprout_status st = make_folder(store->root, "blobs");
    if (st != SPROUT_OK) return st;
    sprout_blob_writer *w = calloc(1, sizeof *w);
    char *dir = sp_path_join(store->root, "blobs", (const char *)NULL);
    if (w) {
        w->fd = -1;
        w->root = strdup(store->root);
        w->tmp = dir ? sp_temp_path(dir) : NULL;
        w->blob = sp_blob_path(store->root, digest);
    }
    free(dir);
    if (!w || !w->root || !w->tmp || !w->blob) {
        sprout_blob_writer_abort(w);
        return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "store: out of memory");
    }
    strcpy(w->digest, digest);
    sp_sha256_init(&w->hash);
    w->fd = open(w->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (w->fd < 0) {
        st = sp_fail(SPROUT_ERR_IO, "%s: cannot create: %s", w->tmp, strerror(errno));
        sprout_blob_writer_abort(w);
        return st;
    }
    *out = w;
    return SPROUT_OK;
}

sprout_status sprout_blob_writer_write(sprout_blob_writer *w, const void *data, size_t len) {
    if (!w || (!data && len)) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "blob writer: no writer or data");
    const char *p = data;
    sp_sha256_update(&w->hash, p, len);
    while (len) {
        ssize_t n = write(w->fd, p, len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return sp_fail(SPROUT_ERR_IO, "%s: write failed: %s", w->tmp, strerror(errno));
        p += n;
        len -= (size_t)n;
    }
    return SPROUT_OK;
}

sprout_status sprout_blob_writer_finish(sprout_blob_writer *w) {
    if (!w) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "blob writer: none");
    uint8_t raw[32];
    sp_sha256_final(&w->hash, raw);
    char got[SP_DIGEST_SIZE] = "sha256:";
    sp_sha256_hex(raw, got + 7);
    sprout_status st = SPROUT_OK;
    if (strcmp(got, w->digest))
        st = sp_fail(SPROUT_ERR_FORMAT, "blob: the bytes' digest is %s, not %s", got, w->digest);
    else if (fsync(w->fd) != 0)
        st = sp_fail(SPROUT_ERR_IO, "%s: fsync failed: %s", w->tmp, strerror(errno));
    if (st == SPROUT_OK) {
        close(w->fd);
        w->fd = -1;
        bool existed;
        st = sp_blob_add_file(w->root, w->tmp, w->digest, SP_BLOB_MOVE, &existed);
    }
    sprout_blob_writer_abort(w);
    return st;
}

void sprout_blob_writer_abort(sprout_blob_writer *w) {
    if (!w) return;
    if (w->fd >= 0) close(w->fd);
    if (w->tmp) unlink(w->tmp); /* gone already when it was renamed into place */
    free(w->root);
    free(w->tmp);
    free(w->blob);
    free(w);
}
