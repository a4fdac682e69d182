/* Errors are values: library code records what went wrong in a thread-local
 * message and returns a status; it never prints and never exits. */
#ifndef SPROUT_CORE_ERROR_H
#define SPROUT_CORE_ERROR_H

#include "sprout.h"

#if defined(__GNUC__)
#define SP_PRINTF(fmt_idx, arg_idx) __attribute__((format(printf, fmt_idx, arg_idx)))
#else
#define SP_PRINTF(fmt_idx, arg_idx)
#endif

/* Records the message for this thread and returns `status`, so that error
 * paths read `return sp_fail(SPROUT_ERR_FORMAT, "...", ...);`. */
sprout_status sp_fail(sprout_status status, const char *fmt, ...) SP_PRINTF(2, 3);

/* Puts `prefix: ` in front of the current message, to add the outer context
 * ("model.gguf: ") once an inner call has said what went wrong. */
void sp_error_prefix(const char *fmt, ...) SP_PRINTF(1, 2);

#endif
