/* sprout/base.h: the version, status codes, errors and sprout_free: what every other part uses.
 * Part of <sprout.h>, whose conventions hold here. */
#ifndef SPROUT_API_BASE_H
#define SPROUT_API_BASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* libsprout.so is built with -fvisibility=hidden: what these headers declare
 * between SPROUT_BEGIN_DECLS and SPROUT_END_DECLS is its whole exported
 * interface (tests/test_exports.sh checks both ways). */
#if defined(__GNUC__)
#define SPROUT_VISIBILITY_PUSH _Pragma("GCC visibility push(default)")
#define SPROUT_VISIBILITY_POP _Pragma("GCC visibility pop")
#else
#define SPROUT_VISIBILITY_PUSH
#define SPROUT_VISIBILITY_POP
#endif
#ifdef __cplusplus
#define SPROUT_BEGIN_DECLS SPROUT_VISIBILITY_PUSH extern "C" {
#define SPROUT_END_DECLS } SPROUT_VISIBILITY_POP
#else
#define SPROUT_BEGIN_DECLS SPROUT_VISIBILITY_PUSH
#define SPROUT_END_DECLS SPROUT_VISIBILITY_POP
#endif

SPROUT_BEGIN_DECLS

#define SPROUT_VERSION_MAJOR 0
#define SPROUT_VERSION_MINOR 1
#define SPROUT_VERSION_PATCH 0

/* "MAJOR.MINOR.PATCH" of the library actually linked. */
const char *sprout_version(void);

/* ---------------------------------------------------------------------------
 * Status codes
 * ------------------------------------------------------------------------- */
typedef enum sprout_status {
    SPROUT_OK = 0,
    SPROUT_ERR_INVALID_ARGUMENT = 1, /* the caller passed something unusable */
    SPROUT_ERR_IO = 2,               /* open/read/map/write failed */
    SPROUT_ERR_FORMAT = 3,           /* the file is malformed or inconsistent */
    SPROUT_ERR_UNSUPPORTED = 4,      /* well-formed, but sprout cannot use it */
    SPROUT_ERR_OUT_OF_MEMORY = 5,
    SPROUT_ERR_NOT_FOUND = 6,        /* a key, tensor or file that is absent */
    SPROUT_ERR_TYPE_MISMATCH = 7,    /* a value of another type than asked for */
    SPROUT_ERR_OUT_OF_RANGE = 8,     /* a value that does not fit the request */
    SPROUT_ERR_INTERNAL = 9,
    SPROUT_ERR_CANCELLED = 10,       /* a callback asked to stop */
    SPROUT_ERR_BUSY = 11             /* no room now (a full queue); try again later */
} sprout_status;

/* A fixed English name for a status ("format error"); never NULL. */
const char *sprout_status_str(sprout_status status);

/* The message of the last failing call on this thread ("" if none). */
const char *sprout_last_error(void);

/* Frees memory the library handed to the caller. */
void sprout_free(void *p);

SPROUT_END_DECLS

#endif /* SPROUT_API_BASE_H */
