/* sprout serve -m MODEL [--host 127.0.0.1] [--port 8080] [--parallel N]
 *              [-c CTX] [-t THREADS] [--api-key KEY] [--alias NAME]
 *              [--max-body BYTES] [--queue N]
 *              [--chat-template NAME|SOURCE | --chat-template-file FILE]
 *
 * An OpenAI- and Ollama-compatible HTTP server over the library's
 * continuous-batching scheduler. SIGINT/SIGTERM stop it cleanly (exit 0). */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "files.h"
#include "gen_options.h"
#include "server/server.h"

static void usage(FILE *out) {
    fprintf(out,
            "usage: sprout serve -m MODEL.gguf [options]\n"
            "  --host ADDR        address to listen on (default 127.0.0.1)\n"
            "  --port N           port (default 8080; 0 picks a free one)\n"
            "  --parallel N       requests generating at once (default: from the cores and the context)\n"
            "  -c, --ctx N        context of each request (default: the model's, at most 4096)\n"
            "  -t, --threads N    threads for the forward passes (default: one per core)\n"
            "  --api-key KEY      require 'Authorization: Bearer KEY' (also $SPROUT_API_KEY)\n"
            "  --alias NAME       the model's name in the APIs (default: the file name)\n"
            "  --max-body BYTES   largest request body (default 16777216)\n"
            "  --queue N          requests that may wait for a slot before 503 (default 64)\n"
            "  --chat-template T  the chat template: a built-in name (chatml llama2 llama3 zephyr phi3 gemma mistral)\n"
            "                     or Jinja source (default: the model's)\n"
            "  --chat-template-file FILE  the chat template from a file\n");
}


/* --chat-template-file's text, alive while serving (static: reachable on every exit path) */
static char *template_text;

int cmd_serve(int argc, char **argv) {
    sp_server_options o = {.host = "127.0.0.1", .port = 8080, .api_key = getenv("SPROUT_API_KEY")};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "sprout serve: %s needs a value (or is unknown)\n", a);
            usage(stderr);
            return 2;
        }
        const char *v = argv[++i];
        int32_t n = 0;
        bool ok = true;
        if (!strcmp(a, "-m") || !strcmp(a, "--model")) o.model_path = v;
        else if (!strcmp(a, "--host")) o.host = v;
        else if (!strcmp(a, "--port")) ok = cli_parse_int(v, 0, 65535, &n) && ((o.port = (int)n), true);
        else if (!strcmp(a, "--parallel") || !strcmp(a, "-np")) ok = cli_parse_int(v, 1, 256, &o.n_slots);
        else if (!strcmp(a, "-c") || !strcmp(a, "--ctx")) ok = cli_parse_int(v, 2, 1 << 24, &o.n_ctx);
        else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) ok = cli_parse_int(v, 1, 1024, &o.n_threads);
        else if (!strcmp(a, "--api-key")) o.api_key = v;
        else if (!strcmp(a, "--alias")) o.alias = v;
        else if (!strcmp(a, "--max-body")) ok = cli_parse_int(v, 1, INT32_MAX, &n) && ((o.max_body = (size_t)n), true);
        else if (!strcmp(a, "--queue")) ok = cli_parse_int(v, 0, 1 << 20, &n) && ((o.n_queue = n ? n : -1), true);
        else if (!strcmp(a, "--chat-template")) o.chat_template = v;
        else if (!strcmp(a, "--chat-template-file")) {
            free(template_text);
            if (!(template_text = cli_read_file(v, NULL))) {
                fprintf(stderr, "sprout serve: cannot read %s\n", v);
                return 2;
            }
            o.chat_template = template_text;
        }
        else {
            fprintf(stderr, "sprout serve: unknown option %s\n", a);
            usage(stderr);
            return 2;
        }
        if (!ok) {
            fprintf(stderr, "sprout serve: bad value for %s: '%s'\n", a, v);
            return 2;
        }
    }
    if (!o.model_path) {
        fprintf(stderr, "sprout serve: -m MODEL is required\n");
        usage(stderr);
        return 2;
    }
    /* the signals go to sigwait in this thread only: block them before any
     * other thread starts, so every thread inherits the mask */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN); /* a client that hangs up is an error return, not a death */
    return sp_server_run(&o, &stop);
}
