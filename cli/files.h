/* Reading the files the commands take (prompts, templates, messages), and
 * printing --json output. */
#ifndef SPROUT_CLI_FILES_H
#define SPROUT_CLI_FILES_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

/* The whole file, NUL-terminated (malloc'd), its length in *len when len is
 * not NULL; NULL if it cannot be read. */
char *cli_read_file(const char *path, size_t *len);
/* The same from an open stream (standard input), read to its end. */
char *cli_read_stream(FILE *f, size_t *len);

/* Prints v to stdout, indented, with a final newline; returns 0, or 1 on failure. */
int cli_print_json(json_t *v);

#endif
