/* Bringing a model's mapped tensor data in at load time, where a file that
 * was cut short can still fail cleanly instead of raising SIGBUS in the
 * middle of a generation. */
#ifndef SPROUT_GGUF_RESIDENT_H
#define SPROUT_GGUF_RESIDENT_H

#include "sprout.h"

/* Reads one byte of every page of every part's tensor data under a SIGBUS
 * guard, then checks that no part has shrunk since it was mapped.
 * SPROUT_ERR_IO naming the part otherwise. */
sprout_status sp_gguf_fault_in(const sprout_gguf *gguf);

/* Only the size check (one fstat per part): cheap enough for every
 * request, so that a file truncated between requests fails the next one
 * cleanly rather than raising SIGBUS inside it. */
sprout_status sp_gguf_check_size(const sprout_gguf *gguf);

#endif
