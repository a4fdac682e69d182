/*
 * sprout.h — the public C API of libsprout, an on-device LLM runtime.
 *
 * Conventions (they hold for every function below):
 *  - Calls that can fail return a sprout_status. On failure the calling
 *    thread's message (sprout_last_error()) says what failed and where, for
 *    example "tensor 'blk.3.ffn_up.weight': data ends past end of file
 *    (offset 123, size 456, file 400)". The message stays until the next
 *    failing call on the same thread.
 *  - Handles are opaque. Destructors accept NULL.
 *  - Pointers returned by accessors of a handle stay valid until the handle
 *    is freed; the library never frees them behind the caller's back.
 *  - Strings read from a model file are not NUL-terminated: they come as a
 *    pointer plus a length, because a GGUF string may contain any byte.
 *    Names (metadata keys, tensor names) are the exception: they are checked
 *    and returned NUL-terminated.
 */
#ifndef SPROUT_H
#define SPROUT_H

#include "sprout/base.h"
#include "sprout/log.h"
#include "sprout/types.h"
#include "sprout/quantize.h"
#include "sprout/gguf.h"
#include "sprout/tokenizer.h"
#include "sprout/chat_template.h"
#include "sprout/model.h"
#include "sprout/result.h"
#include "sprout/lora.h"
#include "sprout/generate.h"
#include "sprout/chat.h"
#include "sprout/lora_export.h"
#include "sprout/prompt.h"
#include "sprout/scheduler.h"
#include "sprout/store.h"

#endif /* SPROUT_H */
