/* JSON mode: output that is one JSON object (RFC 8259, strings valid UTF-8), byte by byte. A
 * state reads the output so far; a token may follow only if its bytes keep
 * the output a prefix of some JSON object, and end-of-generation only once
 * the object is closed. Runs of whitespace are bounded (SP_JSON_MAX_WHITESPACE
 * bytes, one newline, as llama.cpp's JSON grammar has them), so that a model
 * cannot stall in them; nesting is bounded at SP_JSON_MAX_DEPTH. The state
 * is small and plain, copied to try each token. */
#ifndef SPROUT_SAMPLER_JSON_CONSTRAINT_H
#define SPROUT_SAMPLER_JSON_CONSTRAINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum { SP_JSON_MAX_DEPTH = 64, SP_JSON_MAX_WHITESPACE = 16 };

typedef struct sp_json_state {
    uint64_t objects; /* bit d set: the container at depth d + 1 is an object, else an array */
    uint8_t depth;    /* containers open */
    uint8_t mode;     /* what may come next (json_constraint.c) */
    uint8_t sub;      /* within a string, number or literal: how far */
    uint8_t ws;       /* whitespace bytes in a row */
    uint8_t newlines; /* newlines among them */
    uint8_t literal;  /* which of true, false, null is being read */
    uint8_t utf8_left, utf8_lo, utf8_hi; /* in a string: continuation bytes still due, the next one's range */
    bool key;         /* the string being read is an object's key */
    bool failed;
} sp_json_state;

void sp_json_init(sp_json_state *st);
/* Reads n bytes; false (and the state failed) if they cannot continue a JSON object. */
bool sp_json_feed(sp_json_state *st, const char *bytes, size_t n);
/* The object is closed: nothing but the end may follow. */
bool sp_json_done(const sp_json_state *st);

/* Inside a string, between characters: any plain text (sp_json_plain_text)
 * may follow and leaves the state as it is. Most of a JSON reply is read
 * in this state, so testing a token is then one flag. */
bool sp_json_in_string(const sp_json_state *st);
/* Whether two states accept the same continuations: every field, and the
 * kinds of the containers still open. */
bool sp_json_state_equal(const sp_json_state *a, const sp_json_state *b);
/* Text with no quote, backslash or control byte, in whole UTF-8 characters. */
bool sp_json_plain_text(const char *s, size_t n);

#endif
