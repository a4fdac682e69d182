#include "core/sigbus_guard.h"

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>

/* The handler is the process's, the jump target the faulting thread's: a
 * SIGBUS from a memory access goes to the thread that made it. */
static _Thread_local sigjmp_buf *guard_jump;

static pthread_mutex_t guard_lock = PTHREAD_MUTEX_INITIALIZER;
static int guard_users;
static struct sigaction previous;

static void on_sigbus(int sig, siginfo_t *info, void *uctx) {
    sigjmp_buf *jump = guard_jump;
    if (jump) siglongjmp(*jump, 1);
    /* not ours: what would have happened without the guard */
    if (previous.sa_flags & SA_SIGINFO) {
        if (previous.sa_sigaction) previous.sa_sigaction(sig, info, uctx);
        return;
    }
    if (previous.sa_handler == SIG_IGN) return;
    if (previous.sa_handler != SIG_DFL) {
        previous.sa_handler(sig);
        return;
    }
    /* the default action: returning retries the access, which faults again
     * and now kills the process as it always did */
    signal(SIGBUS, SIG_DFL);
}

/* The first guard in the process installs the handler, the last one out
 * puts the previous one back. */
static bool guard_enter(void) {
    pthread_mutex_lock(&guard_lock);
    bool ok = true;
    if (guard_users == 0) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_sigbus;
        sa.sa_flags = SA_SIGINFO | SA_NODEFER;
        sigemptyset(&sa.sa_mask);
        ok = sigaction(SIGBUS, &sa, &previous) == 0;
    }
    if (ok) guard_users++;
    pthread_mutex_unlock(&guard_lock);
    return ok;
}

static void guard_leave(void) {
    pthread_mutex_lock(&guard_lock);
    if (--guard_users == 0) sigaction(SIGBUS, &previous, NULL);
    pthread_mutex_unlock(&guard_lock);
}

bool sp_sigbus_guarded(void (*fn)(void *ctx), void *ctx) {
    if (!guard_enter()) { /* no handler: run unguarded, as before */
        fn(ctx);
        return true;
    }
    sigjmp_buf jump;
    sigjmp_buf *outer = guard_jump;
    volatile bool completed = false;
    if (sigsetjmp(jump, 1) == 0) {
        guard_jump = &jump;
        fn(ctx);
        completed = true;
    }
    guard_jump = outer;
    guard_leave();
    return completed;
}
