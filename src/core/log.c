#include "core/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>

enum { SP_LOG_MAX = 2048 };

/* The pair is read under the lock, so a callback swapped while another
 * thread logs is never seen half changed; the callback itself runs outside
 * it, so that it may log, set another callback or call into the library. */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static sprout_log_fn log_fn;
static void *log_user;

void sprout_log_set(sprout_log_fn fn, void *user) {
    pthread_mutex_lock(&log_lock);
    log_fn = fn;
    log_user = user;
    pthread_mutex_unlock(&log_lock);
}

const char *sprout_log_level_name(sprout_log_level level) {
    switch (level) {
    case SPROUT_LOG_ERROR: return "error";
    case SPROUT_LOG_WARN: return "warn";
    case SPROUT_LOG_INFO: return "info";
    case SPROUT_LOG_DEBUG: return "debug";
    }
    return "?";
}

void sp_log(sprout_log_level level, const char *fmt, ...) {
    pthread_mutex_lock(&log_lock);
    const sprout_log_fn fn = log_fn;
    void *const user = log_user;
    pthread_mutex_unlock(&log_lock);
    if (!fn) return;
    char message[SP_LOG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    fn(level, message, user);
}
