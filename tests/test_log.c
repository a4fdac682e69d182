/* The log callback: the library's warnings reach the callback installed
 * with sprout_log_set, with their level, and nothing is called once NULL is
 * installed. The warning used is the kernel level's (src/kernels/dispatch.c:
 * an unknown SPROUT_CPU), said once per process when the level is first
 * chosen: each case runs in a fresh child process. */
#include <unistd.h>

#include "test_util.h"

typedef struct heard {
    int calls;
    sprout_log_level level;
    char message[512];
} heard;

static void on_log(sprout_log_level level, const char *message, void *user) {
    heard *h = user;
    h->calls++;
    h->level = level;
    snprintf(h->message, sizeof h->message, "%s", message);
}

/* A callback that calls the library back: it silences the log (a callback
 * run under the library's lock would wait for itself here). */
static void on_log_reentering(sprout_log_level level, const char *message, void *user) {
    on_log(level, message, user);
    sprout_log_set(NULL, NULL);
}

typedef enum mode { LISTEN, SILENCE, REENTER } mode;

/* In a child: installs the callback (then NULL for SILENCE), provokes the
 * warning, and exits 0 if what was heard is what should have been. */
static int provoke(mode how) {
    heard h = {0};
    const bool silence = how == SILENCE;
    alarm(10); /* a deadlock fails the case instead of hanging the suite */
    sprout_log_set(how == REENTER ? on_log_reentering : on_log, &h);
    if (silence) sprout_log_set(NULL, NULL);
    setenv("SPROUT_CPU", "nonsense", 1);
    const char *level = sprout_kernels_name(); /* chooses the level: the first call of the process */
    const char *said = "SPROUT_CPU=nonsense is not one of generic, avx2";
    bool ok = level && *level;
    if (silence) {
        ok = ok && h.calls == 0;
    } else {
        ok = ok && h.calls == 1 && h.level == SPROUT_LOG_WARN && !strncmp(h.message, said, strlen(said)) &&
             strstr(h.message, ": using the best level this CPU has") && !strchr(h.message, '\n');
        if (!ok) fprintf(stderr, "heard %d call(s), level %s: [%s]\n", h.calls, sprout_log_level_name(h.level), h.message);
    }
    return ok ? 0 : 1;
}

static bool in_child(mode how) {
    fflush(NULL);
    const pid_t pid = fork();
    if (pid == 0) _exit(provoke(how));
    int status = 0;
    return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

int main(void) {
    CHECK_MSG(in_child(LISTEN), "the callback did not get the kernel level's warning");
    CHECK_MSG(in_child(SILENCE), "a callback was called after NULL was installed");
    CHECK_MSG(in_child(REENTER), "a callback that calls sprout_log_set did not return");
    CHECK(!strcmp(sprout_log_level_name(SPROUT_LOG_ERROR), "error") && !strcmp(sprout_log_level_name(SPROUT_LOG_WARN), "warn"));
    CHECK(!strcmp(sprout_log_level_name(SPROUT_LOG_INFO), "info") && !strcmp(sprout_log_level_name(SPROUT_LOG_DEBUG), "debug"));
    CHECK(!strcmp(sprout_log_level_name((sprout_log_level)7), "?"));
    TEST_MAIN_END();
}
