/* The store's file operations. Every write goes to a temporary file that
 * is synced and renamed into place, so a process killed at any instant
 * leaves the old file or the new one; temporary files carry their writer's
 * pid so that the next writer can tell a stray one from a live one. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "core/sha256.h"
#include "store/parts.h"

#define TEMP_PREFIX ".tmp-sprout-"

char *sp_path_join(const char *first, ...) {
    va_list ap;
    size_t len = strlen(first) + 1;
    va_start(ap, first);
    for (const char *p; (p = va_arg(ap, const char *));) len += strlen(p) + 1;
    va_end(ap);
    char *out = malloc(len);
    if (!out) return NULL;
    strcpy(out, first);
    va_start(ap, first);
    for (const char *p; (p = va_arg(ap, const char *));) {
        strcat(out, "/");
        strcat(out, p);
    }
    va_end(ap);
    return out;
}

sprout_status sp_mkdirs(const char *dir) {
    char *p = strdup(dir);
    if (!p) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "store: out of memory");
    for (char *s = p + 1;; s++) {
        char c = *s;
        if (c != '/' && c != '\0') continue;
        *s = '\0';
        if (mkdir(p, 0755) != 0 && errno != EEXIST) {
            sprout_status st = sp_fail(SPROUT_ERR_IO, "%s: cannot create the folder: %s", p, strerror(errno));
            free(p);
            return st;
        }
        *s = c;
        if (c == '\0') break;
    }
    free(p);
    return SPROUT_OK;
}

char *sp_temp_path(const char *dir) {
    static atomic_uint counter;
    char base[64];
    snprintf(base, sizeof base, TEMP_PREFIX "%ld-%u", (long)getpid(), atomic_fetch_add(&counter, 1));
    return sp_path_join(dir, base, (const char *)NULL);
}

bool sp_is_temp_name(const char *base) { return !strncmp(base, TEMP_PREFIX, strlen(TEMP_PREFIX)); }

void sp_clean_temps(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    for (struct dirent *e; (e = readdir(d));) {
        if (!sp_is_temp_name(e->d_name)) continue;
        long pid = strtol(e->d_name + strlen(TEMP_PREFIX), NULL, 10);
        /* a live writer's file stays (kill answers ESRCH only for none) */
        if (pid > 0 && pid != (long)getpid() && kill((pid_t)pid, 0) != 0 && errno == ESRCH) {
            char *p = sp_path_join(dir, e->d_name, (const char *)NULL);
            if (p) unlink(p);
            free(p);
        }
    }
    closedir(d);
}

void sp_sync_dir(const char *dir) {
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return;
    fsync(fd);
    close(fd);
}

static char *dir_of(const char *path) {
    char *d = strdup(path);
    if (!d) return NULL;
    char *slash = strrchr(d, '/');
    if (slash && slash != d) *slash = '\0';
    else strcpy(d, slash ? "/" : ".");
    return d;
}

static sprout_status write_all(int fd, const char *path, const void *data, size_t len) {
    const char *p = data;
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return sp_fail(SPROUT_ERR_IO, "%s: write failed: %s", path, strerror(errno));
        p += n;
        len -= (size_t)n;
    }
    return SPROUT_OK;
}

sprout_status sp_write_atomic(const char *path, const void *data, size_t len) {
    char *dir = dir_of(path);
    char *tmp = dir ? sp_temp_path(dir) : NULL;
    if (!tmp) {
        free(dir);
        return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "store: out of memory");
    }
    sprout_status st = SPROUT_OK;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) st = sp_fail(SPROUT_ERR_IO, "%s: cannot create: %s", tmp, strerror(errno));
    if (st == SPROUT_OK) st = write_all(fd, tmp, data, len);
    if (st == SPROUT_OK && fsync(fd) != 0) st = sp_fail(SPROUT_ERR_IO, "%s: fsync failed: %s", tmp, strerror(errno));
    if (fd >= 0) close(fd);
    if (st == SPROUT_OK && rename(tmp, path) != 0)
        st = sp_fail(SPROUT_ERR_IO, "%s: cannot rename into place: %s", path, strerror(errno));
    if (st != SPROUT_OK) unlink(tmp);
    else sp_sync_dir(dir);
    free(tmp);
    free(dir);
    return st;
}

sprout_status sp_read_file(const char *path, size_t max, char **data, size_t *len) {
    *data = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return sp_fail(errno == ENOENT ? SPROUT_ERR_NOT_FOUND : SPROUT_ERR_IO, "%s: %s", path, strerror(errno));
    char *buf = NULL;
    size_t n = 0, cap = 0;
    sprout_status st = SPROUT_OK;
    for (;;) {
        if (n == cap) {
            cap = cap ? cap * 2 : 4096;
            char *b = realloc(buf, cap + 1);
            if (!b) {
                st = sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
                break;
            }
            buf = b;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (n > max) {
            st = sp_fail(SPROUT_ERR_FORMAT, "%s: larger than %zu bytes", path, max);
            break;
        }
        if (got == 0) {
            if (ferror(f)) st = sp_fail(SPROUT_ERR_IO, "%s: read failed", path);
            break;
        }
    }
    fclose(f);
    if (st != SPROUT_OK) {
        free(buf);
        return st;
    }
    buf[n] = '\0';
    *data = buf;
    if (len) *len = n;
    return SPROUT_OK;
}

static void digest_from(const uint8_t raw[32], char digest[SP_DIGEST_SIZE]) {
    memcpy(digest, "sha256:", 7);
    sp_sha256_hex(raw, digest + 7);
}

sprout_status sp_hash_file(const char *path, char digest[SP_DIGEST_SIZE], uint64_t *size) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return sp_fail(errno == ENOENT ? SPROUT_ERR_NOT_FOUND : SPROUT_ERR_IO, "%s: %s", path, strerror(errno));
    enum { CHUNK = 1 << 20 };
    uint8_t *buf = malloc(CHUNK);
    if (!buf) {
        close(fd);
        return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "store: out of memory");
    }
    sp_sha256 h;
    sp_sha256_init(&h);
    uint64_t total = 0;
    sprout_status st = SPROUT_OK;
    for (;;) {
        ssize_t n = read(fd, buf, CHUNK);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            st = sp_fail(SPROUT_ERR_IO, "%s: read failed: %s", path, strerror(errno));
            break;
        }
        if (n == 0) break;
        sp_sha256_update(&h, buf, (size_t)n);
        total += (uint64_t)n;
    }
    free(buf);
    close(fd);
    if (st != SPROUT_OK) return st;
    uint8_t raw[32];
    sp_sha256_final(&h, raw);
    digest_from(raw, digest);
    if (size) *size = total;
    return SPROUT_OK;
}

void sp_hash_bytes(const void *data, size_t len, char digest[SP_DIGEST_SIZE]) {
    sp_sha256 h;
    sp_sha256_init(&h);
    sp_sha256_update(&h, data, len);
    uint8_t raw[32];
    sp_sha256_final(&h, raw);
    digest_from(raw, digest);
}

bool sp_digest_valid(const char *digest) {
    if (!digest || strncmp(digest, "sha256:", 7) || strlen(digest) != SP_DIGEST_LEN) return false;
    for (const char *p = digest + 7; *p; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'))) return false;
    return true;
}

sprout_status sp_store_lock(const sprout_store *s, int *fd) {
    *fd = -1;
    sprout_status st = sp_mkdirs(s->root);
    if (st != SPROUT_OK) return st;
    char *path = sp_path_join(s->root, ".lock", (const char *)NULL);
    if (!path) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "store: out of memory");
    int f = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (f < 0) {
        st = sp_fail(SPROUT_ERR_IO, "%s: cannot open the lock file: %s", path, strerror(errno));
        free(path);
        return st;
    }
    while (flock(f, LOCK_EX) != 0) {
        if (errno == EINTR) continue;
        st = sp_fail(SPROUT_ERR_IO, "%s: cannot lock: %s", path, strerror(errno));
        close(f);
        free(path);
        return st;
    }
    free(path);
    *fd = f;
    return SPROUT_OK;
}

void sp_store_unlock(int fd) {
    if (fd >= 0) close(fd); /* closing drops the flock */
}
