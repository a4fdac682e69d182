/* The library's one way to say something that is not an error status: a
 * message to the callback the application installed (sprout_log_set), or
 * to nobody. Never to stdout or stderr. */
#ifndef SPROUT_CORE_LOG_H
#define SPROUT_CORE_LOG_H

#include "core/error.h"
#include "sprout.h"

void sp_log(sprout_log_level level, const char *fmt, ...) SP_PRINTF(2, 3);

#endif
