/* Reading the files the commands take (prompts, templates, messages). */
#ifndef SPROUT_CLI_FILES_H
#define SPROUT_CLI_FILES_H

#include <stddef.h>
#include <stdio.h>

/* The whole file, NUL-terminated (malloc'd), its length in *len when len is
 * not NULL; NULL if it cannot be read. */
char *cli_read_file(const char *path, size_t *len);
/* The same from an open stream (standard input), read to its end. */
char *cli_read_stream(FILE *f, size_t *len);

#endif
