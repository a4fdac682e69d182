/* JSON Schema to GBNF: the grammar, in llama.cpp's dialect, of JSON text
 * that the schema accepts, so that the grammar engine can hold sampling to
 * it. The grammar is a subset of the schema's language (it never accepts an
 * instance the schema rejects; it may leave some valid ones out, as
 * llama.cpp's converter does: properties in schema order, no extra
 * properties unless additionalProperties says so, bounded whitespace). A
 * keyword it cannot honour fails the call; it is never dropped. */
#ifndef SPROUT_GRAMMAR_JSON_SCHEMA_H
#define SPROUT_GRAMMAR_JSON_SCHEMA_H

#include <stddef.h>

#include "sprout.h"

/* Converts schema_json[0..len) (a JSON Schema: an object or a boolean) into
 * GBNF text whose start rule is `root`, one rule a line, sorted by name; the
 * same schema always gives the same text. *gbnf_out is malloc'd (free it)
 * and NULL on failure.
 *
 * Errors: SPROUT_ERR_FORMAT for text that is not JSON or a schema that is
 * malformed (a keyword with a value of the wrong kind, a $ref that points
 * nowhere); SPROUT_ERR_UNSUPPORTED for a keyword or combination the
 * converter cannot express, the message "unsupported keyword K at /json/
 * pointer/K: why"; SPROUT_ERR_OUT_OF_MEMORY. */
sprout_status sp_json_schema_to_gbnf(const char *schema_json, size_t len, char **gbnf_out);

#endif
