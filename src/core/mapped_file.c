#include "core/mapped_file.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"

sprout_status sp_mapped_file_open(const char *path, sp_mapped_file *out) {
    out->data = NULL;
    out->size = 0;
    out->fd = -1;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int err = errno;
        return sp_fail(err == ENOENT ? SPROUT_ERR_NOT_FOUND : SPROUT_ERR_IO, "%s: cannot open: %s", path, strerror(err));
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int err = errno;
        close(fd);
        return sp_fail(SPROUT_ERR_IO, "%s: cannot stat: %s", path, strerror(err));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return sp_fail(SPROUT_ERR_IO, "%s: not a regular file", path);
    }
    if (st.st_size == 0) {
        close(fd);
        return SPROUT_OK;
    }
    void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
        int err = errno;
        close(fd);
        return sp_fail(SPROUT_ERR_IO, "%s: cannot map: %s", path, strerror(err));
    }
    /* Pages the kernel reads ahead for this mapping come in 2 MiB folios
     * where the file system allows, and are mapped whole: decode streams
     * every weight once a token, and with 4 KiB pages it missed the TLB and
     * the prefetchers stopped at every page (bench/RESULTS.md). Advice
     * only: pages already cached keep their size. */
    (void)madvise(p, (size_t)st.st_size, MADV_HUGEPAGE);
    out->data = p;
    out->size = (uint64_t)st.st_size;
    out->fd = fd; /* the mapping alone would keep the file alive; the descriptor lets us ask its size */
    return SPROUT_OK;
}

void sp_mapped_file_close(sp_mapped_file *file) {
    if (!file) return;
    if (file->data) {
        munmap((void *)file->data, (size_t)file->size);
        close(file->fd);
    }
    file->data = NULL;
    file->size = 0;
    file->fd = -1;
}

sprout_status sp_mapped_file_check_size(const sp_mapped_file *file, const char *path) {
    if (!file->data) return SPROUT_OK;
    struct stat st;
    if (fstat(file->fd, &st) != 0) return sp_fail(SPROUT_ERR_IO, "%s: cannot stat: %s", path, strerror(errno));
    if ((uint64_t)st.st_size < file->size)
        return sp_fail(SPROUT_ERR_IO, "%s: truncated while in use (%llu bytes, %llu when opened)", path,
                       (unsigned long long)st.st_size, (unsigned long long)file->size);
    return SPROUT_OK;
}

bool sp_same_file(const char *a, const char *b) {
    struct stat sa, sb;
    return !strcmp(a, b) || (stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino);
}
