/* Reading a mapped file that another process truncated raises SIGBUS at the
 * first access past the new end. A guarded call turns that into a return
 * value for the thread that ran it; a SIGBUS anywhere else is handled as
 * before the guard existed (the previous handler, or death). */
#ifndef SPROUT_CORE_SIGBUS_GUARD_H
#define SPROUT_CORE_SIGBUS_GUARD_H

#include <stdbool.h>

/* Runs fn(ctx); false if a SIGBUS stopped it. fn must leave nothing half
 * done that a jump out of it would break (no locks, no allocations): it is
 * abandoned where the fault hit. Any thread may call it at any time. */
bool sp_sigbus_guarded(void (*fn)(void *ctx), void *ctx);

#endif
