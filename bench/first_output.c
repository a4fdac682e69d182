/* Seconds from starting a command to the first byte it writes to its
 * standard output, and to its exit: for `sprout run` and llama.cpp's
 * llama-simple with a short prompt the first byte is the first generated
 * token (sprout writes nothing before it; llama-simple's echo of the prompt
 * waits in stdio's buffer, the output being a pipe, until the flush after
 * the first token). That is the "time to ready"; the time to exit
 * adds the teardown (unmapping the model) that a user does not wait for.
 * The command's output is read and dropped, its standard error discarded.
 * Not a test.
 *
 * usage: build/first_output COMMAND [ARGS...]
 * prints "FIRST_S EXIT_S"; exit status 1 if the command could not run, wrote
 * nothing, or failed. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s COMMAND [ARGS...]\n", argv[0]);
        return 2;
    }
    int out[2];
    if (pipe(out) != 0) {
        perror("pipe");
        return 1;
    }
    const double start = now_s();
    const pid_t child = fork();
    if (child < 0) {
        perror("fork");
        return 1;
    }
    if (child == 0) {
        const int null_fd = open("/dev/null", O_WRONLY);
        dup2(out[1], STDOUT_FILENO);
        if (null_fd >= 0) dup2(null_fd, STDERR_FILENO);
        close(out[0]);
        close(out[1]);
        execvp(argv[1], argv + 1);
        _exit(127);
    }
    close(out[1]);
    double first = -1.0;
    char buf[4096];
    ssize_t n;
    while ((n = read(out[0], buf, sizeof buf)) != 0) {
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) break;
        if (first < 0) first = now_s() - start;
    }
    close(out[0]);
    int status = 0;
    while (waitpid(child, &status, 0) < 0)
        if (errno != EINTR) {
            perror("waitpid");
            return 1;
        }
    const double exited = now_s() - start;
    if (first < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "%s: %s\n", argv[1], first < 0 ? "wrote nothing to its standard output" : "failed");
        return 1;
    }
    printf("%.3f %.3f\n", first, exited);
    return 0;
}
