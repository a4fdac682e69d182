/* sprout chat: an interactive conversation with the model's chat template, streamed as it
 * is generated. Line editing and history come from libedit. Commands:
 * /reset, /system TEXT, /quit. Ctrl-C stops the current answer (it stays in
 * the history); a second Ctrl-C, or Ctrl-C at the prompt, exits. */
#include <editline/readline.h>
#include <jansson.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "options.h"
#include "sprout.h"

static volatile sig_atomic_t generating, interrupted;

static void on_sigint(int sig) {
    (void)sig;
    if (generating && !interrupted) {
        interrupted = 1; /* the streamer answers STOP */
        return;
    }
    static const char bye[] = "\n";
    if (write(STDOUT_FILENO, bye, 1) < 0) { /* nothing to do: we are leaving */
    }
    _exit(130);
}

static sprout_stream_status stream(const char *piece, size_t len, void *user) {
    (void)user;
    fwrite(piece, 1, len, stdout);
    fflush(stdout);
    return interrupted ? SPROUT_STREAM_STOP : SPROUT_STREAM_RUNNING;
}

/* One line from the user (malloc'd, no newline), or NULL at the end. */
static char *read_line(bool tty) {
    if (tty) {
        char *line = readline("> ");
        if (line && *line) add_history(line);
        return line;
    }
    size_t cap = 256, n = 0;
    char *buf = malloc(cap);
    int c;
    while (buf && (c = fgetc(stdin)) != EOF && c != '\n') {
        if (n + 1 == cap) {
            char *p = realloc(buf, cap *= 2);
            if (!p) free(buf);
            buf = p;
            if (!buf) return NULL;
        }
        buf[n++] = (char)c;
    }
    if (!buf || (c == EOF && n == 0)) {
        free(buf);
        return NULL;
    }
    buf[n] = 0;
    return buf;
}

typedef struct chat_options {
    const char *system;
} chat_options;

static const cli_option chat_table[] = {
    CLI_OPT_STRING("--system", "TEXT", offsetof(chat_options, system), "the system message (/system TEXT changes it)"),
};

static const cli_command chat_command = {
    .name = "chat",
    .needs_model = true,
    .usage = "chat -m MODEL.gguf [--system TEXT] [options]",
    .about = "Type a message and Enter. Commands: /reset, /system TEXT, /quit; Ctrl-C stops an answer, twice exits.\n",
    .shared = CLI_SHARED_GENERATION,
    CLI_TABLE(chat_table),
};

/* A new conversation: the system message, then a stored model's MESSAGE
 * lines as earlier turns (Ollama replays them before the first prompt). */
static sprout_status start_chat(sprout_pipeline *p, const char *system, const sprout_store_model *stored) {
    sprout_status st = sprout_chat_start(p, system);
    if (st != SPROUT_OK || !stored) return st;
    json_t *messages = json_loads(sprout_store_model_messages_json(stored), 0, NULL);
    size_t i;
    json_t *m;
    json_array_foreach(messages, i, m) {
        const char *role = json_string_value(json_object_get(m, "role"));
        const char *content = json_string_value(json_object_get(m, "content"));
        if (st == SPROUT_OK && role && content) st = sprout_chat_add_message(p, role, content);
    }
    json_decref(messages);
    return st;
}

int cmd_chat(int argc, char **argv) {
    cli_common o;
    chat_options co = {0};
    const int status = cli_parse(&chat_command, &o, &co, argc, argv);
    if (status != CLI_CONTINUE) return status;
    const char *system_arg = co.system ? co.system : o.stored ? sprout_store_model_system(o.stored) : NULL;
    sprout_model *model = NULL;
    sprout_pipeline *p = NULL;
    sprout_status st = cli_open_pipeline(&o, &model, &p);
    char *system = system_arg ? strdup(system_arg) : NULL;
    if (st == SPROUT_OK && o.stored && sprout_store_model_template(o.stored)) /* the Modelfile's TEMPLATE */
        st = sprout_chat_set_template(p, sprout_store_model_template(o.stored));
    if (st == SPROUT_OK) st = start_chat(p, system, o.stored);
    if (st != SPROUT_OK) {
        fprintf(stderr, "sprout chat: %s\n", sprout_last_error());
        cli_close_pipeline(&o, model, p);
        free(system);
        return 1;
    }
    struct sigaction sa = {.sa_handler = on_sigint};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    const bool tty = isatty(STDIN_FILENO);
    int rc = 0;
    for (;;) {
        char *line = read_line(tty);
        if (!line) break;
        if (!strcmp(line, "/quit") || !strcmp(line, "/exit")) {
            free(line);
            break;
        }
        if (!strcmp(line, "/reset") || !strncmp(line, "/system", 7)) {
            if (!strncmp(line, "/system", 7)) {
                free(system);
                const char *text = line + 7;
                while (*text == ' ') text++;
                system = *text ? strdup(text) : NULL;
            }
            st = start_chat(p, system, o.stored);
            if (st != SPROUT_OK) fprintf(stderr, "sprout chat: %s\n", sprout_last_error());
            else printf("(conversation reset)\n");
            free(line);
            continue;
        }
        if (!*line) {
            free(line);
            continue;
        }
        sprout_result *r = NULL;
        interrupted = 0;
        generating = 1;
        st = sprout_chat_generate(p, line, &o.cfg, stream, NULL, &r);
        generating = 0;
        free(line);
        if (st != SPROUT_OK) {
            fprintf(stderr, "\nsprout chat: %s\n", sprout_last_error());
            rc = 1;
            continue;
        }
        printf("\n");
        if (!cli_note_context_filled("sprout chat", p, &o.cfg, r) && sprout_result_finish_reason(r) == SPROUT_FINISH_LENGTH)
            fprintf(stderr, "(answer cut at the length limit)\n");
        sprout_result_free(r);
    }
    free(system);
    cli_close_pipeline(&o, model, p);
    return rc;
}
