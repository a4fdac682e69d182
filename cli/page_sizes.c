#include "page_sizes.h"

#include <stdio.h>
#include <string.h>

/* The kB figure of the line "key:" in a /proc file; -1 without it. */
static long long proc_kb(const char *path, const char *key) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[256];
    long long kb = -1;
    const size_t n = strlen(key);
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, key, n) && line[n] == ':' && sscanf(line + n + 1, "%lld", &kb) == 1) break;
    fclose(f);
    return kb;
}

double cli_file_huge_page_share(void) {
    const long long huge = proc_kb("/proc/self/smaps_rollup", "FilePmdMapped"), file = proc_kb("/proc/self/status", "RssFile");
    if (huge < 0 || file <= 0) return -1;
    return huge > file ? 1 : (double)huge / (double)file;
}
