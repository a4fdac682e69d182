/* Where openvino_genai takes a model directory, sprout takes a GGUF: the
 * file itself, or the directory that holds one. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "ovc_internal.h"

static bool ends_with(const char *s, const char *suffix) {
    const size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcasecmp(s + n - m, suffix) == 0;
}

/* A file that stands for a model: a .gguf that is not a later part of a
 * split set ("-00002-of-00003.gguf") nor a vision projector (mmproj). */
static bool is_model_file(const char *name) {
    if (!ends_with(name, ".gguf") || strncasecmp(name, "mmproj", 6) == 0) return false;
    const char *of = strstr(name, "-of-");
    if (of && of - name >= 6) {
        const char *part = of - 6;
        return part[0] == '-' && strncmp(part + 1, "00001", 5) == 0;
    }
    return true;
}

static ov_status_e find_in_directory(const char *dir, char **out) {
    DIR *d = opendir(dir);
    if (!d) return ovc_fail(NOT_FOUND, "%s: %s", dir, strerror(errno));
    char *found = NULL;
    char first[256] = "";
    size_t n_found = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (!is_model_file(e->d_name)) continue;
        if (n_found++ == 0) snprintf(first, sizeof first, "%s", e->d_name);
        else if (n_found == 2) {
            ovc_fail(PARAMETER_MISMATCH, "%s holds several GGUF models (%s, %s, ...): give the file's path", dir, first, e->d_name);
            closedir(d); /* e points into d */
            return PARAMETER_MISMATCH;
        }
    }
    closedir(d);
    if (!n_found) return ovc_fail(NOT_FOUND, "%s holds no .gguf model", dir);
    const size_t len = strlen(dir) + 1 + strlen(first) + 1;
    if (!(found = malloc(len))) return ovc_fail(NOT_ALLOCATED, "out of memory");
    snprintf(found, len, "%s/%s", dir, first);
    *out = found;
    return OK;
}

ov_status_e ovc_find_model(const char *models_path, char **out) {
    struct stat st;
    if (stat(models_path, &st) != 0) return ovc_fail(NOT_FOUND, "%s: %s", models_path, strerror(errno));
    if (S_ISDIR(st.st_mode)) return find_in_directory(models_path, out);
    if (!(*out = strdup(models_path))) return ovc_fail(NOT_ALLOCATED, "out of memory");
    return OK;
}
