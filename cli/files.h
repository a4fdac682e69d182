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

/* Structured output from the command line (llama.cpp's --grammar,
 * --grammar-file, --json-schema, --json-schema-file): the files' texts
 * replace *grammar and *schema (kept in *owned[0..1], freed with free
 * once the texts are no longer used). Returns -1 to go on, or the exit
 * status after saying why on stderr: 1 for a file that cannot be read or
 * a schema the engine refuses (its message), 2 for a grammar and a schema
 * together. A grammar is checked by the engine when it generates. */
int cli_structured_output(const char *cmd, const char **grammar, const char *grammar_file, const char **schema, const char *schema_file,
                          char *owned[2]);

/* Prints v to stdout, indented, with a final newline; returns 0, or 1 on failure. */
int cli_print_json(json_t *v);

#endif
