/* sprout/log.h: where the library's messages go.
 * Part of <sprout.h>, whose conventions hold here. */
#ifndef SPROUT_API_LOG_H
#define SPROUT_API_LOG_H

#include "base.h"

SPROUT_BEGIN_DECLS

/* ---------------------------------------------------------------------------
 * Logging. The library never writes to stdout or stderr: what it has to say
 * (a kernel level that cannot be had, a fallback taken) goes to the callback
 * set here, and nowhere when none is set (the default). The callback may be
 * called from any of the library's threads, several at once (it must be
 * thread-safe), and may itself call the library; the message has no
 * trailing newline.
 * ------------------------------------------------------------------------- */
typedef enum sprout_log_level {
    SPROUT_LOG_ERROR = 0,
    SPROUT_LOG_WARN = 1,
    SPROUT_LOG_INFO = 2,
    SPROUT_LOG_DEBUG = 3
} sprout_log_level;

typedef void (*sprout_log_fn)(sprout_log_level level, const char *message, void *user);

/* Installs fn (NULL: silence) for every later message of the process. */
void sprout_log_set(sprout_log_fn fn, void *user);
/* "error", "warn", "info", "debug"; "?" for other values. */
const char *sprout_log_level_name(sprout_log_level level);

SPROUT_END_DECLS

#endif /* SPROUT_API_LOG_H */
