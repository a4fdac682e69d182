/* How much of this process's file-backed memory (in `sprout bench`, the
 * model's mapping almost all of it) the kernel maps in 2 MiB pages: decode
 * reads every weight once a token, and runs faster from huge pages
 * (bench/RESULTS.md), which depend on how the file came into the page
 * cache, not on sprout. */
#ifndef SPROUT_CLI_PAGE_SIZES_H
#define SPROUT_CLI_PAGE_SIZES_H

/* FilePmdMapped over RssFile, from 0 to 1; -1 where /proc does not say. */
double cli_file_huge_page_share(void);

#endif
