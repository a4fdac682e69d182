/* sprout serve: an OpenAI- and Ollama-compatible HTTP server over the library's
 * continuous-batching scheduler. SIGINT/SIGTERM stop it cleanly (exit 0). */
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "commands.h"
#include "files.h"
#include "options.h"
#include "server/server.h"

typedef struct serve_options {
    const char *host, *api_key, *alias, *chat_template, *chat_template_file, *webui_path;
    int32_t port, n_slots, max_body, n_queue;
    bool lora_init_without_apply, no_webui;
} serve_options;

#define OWN(field) offsetof(serve_options, field)
static const cli_option serve_table[] = {
    CLI_OPT_STRING("--host", "ADDR", OWN(host), "address to listen on (default 127.0.0.1)"),
    CLI_OPT_INT("--port", "N", OWN(port), 0, 65535, "port (default 8080; 0 picks a free one)"),
    CLI_OPT_INT("-np, --parallel", "N", OWN(n_slots), 1, 256, "requests generating at once (default: from the cores and the context)"),
    CLI_OPT_STRING("--api-key", "KEY", OWN(api_key), "require 'Authorization: Bearer KEY' (also $SPROUT_API_KEY)"),
    CLI_OPT_STRING("--alias", "NAME", OWN(alias), "the model's name in the APIs (default: the file name)"),
    CLI_OPT_INT("--max-body", "BYTES", OWN(max_body), 1, INT32_MAX, "largest request body (default 16777216)"),
    CLI_OPT_INT("--queue", "N", OWN(n_queue), 0, 1 << 20, "requests that may wait for a slot before 503 (default 64)"),
    CLI_OPT_STRING("--chat-template", "T", OWN(chat_template),
     "a built-in template (chatml llama2 llama3 zephyr phi3 gemma mistral) or Jinja source (default: the model's)"),
    CLI_OPT_STRING("--chat-template-file", "FILE", OWN(chat_template_file), "the chat template from a file"),
    CLI_OPT_FLAG("--lora-init-without-apply", OWN(lora_init_without_apply),
                 "load the adapters at scale 0 (POST /lora-adapters or a request's \"lora\" applies them)"),
    CLI_OPT_FLAG("--no-webui", OWN(no_webui), "no web chat page at / (the APIs only)"),
    CLI_OPT_STRING("--webui-path", "DIR", OWN(webui_path), "serve the web page's files from DIR instead of the built-in ones"),
};

static const cli_command serve_command = {
    .name = "serve",
    .needs_model = true,
    .usage = "serve -m MODEL.gguf [options]",
    .about = "The OpenAI and Ollama HTTP APIs; -c is the context of each request. The listening and ready lines are\n"
             "said on stderr unless --log-disable. LoRA adapters (--lora) get ids 0, 1, ... in the order given; their\n"
             "scales are the defaults of requests without \"lora\" (GET/POST /lora-adapters). With --model-draft or\n"
             "--lookup every request speculates (output unchanged); a request's \"speculative.n_max\": 0 opts out.\n",
    .shared = CLI_SHARED_MODEL | CLI_SHARED_THREADS | CLI_SHARED_CTX | CLI_SHARED_BATCH | CLI_SHARED_KV | CLI_SHARED_LORA | CLI_SHARED_ASSIST | CLI_SHARED_STRUCTURED,
    CLI_TABLE(serve_table),
};

/* The server's notices (ERROR, WARN, INFO): what a user of `serve` waits for (the port, "ready") is the command's
 * output, so all show at the default level; --log-disable silences all but the errors that end the server. */
static void on_notice(sprout_log_level level, const char *message, void *user) {
    const cli_common *c = user;
    if (level == SPROUT_LOG_ERROR || !c->log_disable)
        fprintf(stderr, "sprout serve: %s%s\n", level == SPROUT_LOG_WARN ? "warning: " : "", message);
}

int cmd_serve(int argc, char **argv) {
    cli_common c;
    serve_options so = {.host = "127.0.0.1", .port = 8080, .api_key = getenv("SPROUT_API_KEY"), .n_queue = -1 /* not given */};
    const int status = cli_parse(&serve_command, &c, &so, argc, argv);
    if (status != CLI_CONTINUE) return status;
    struct stat st;
    if (so.webui_path && (stat(so.webui_path, &st) || !S_ISDIR(st.st_mode))) {
        fprintf(stderr, "sprout serve: --webui-path %s is not a folder\n", so.webui_path);
        return 2;
    }
    char *template_text = NULL;
    if (so.chat_template_file) {
        if (!(template_text = cli_read_file(so.chat_template_file, NULL))) {
            fprintf(stderr, "sprout serve: cannot read %s\n", so.chat_template_file);
            return 2;
        }
        so.chat_template = template_text;
    }
    sp_server_options o = {
        .model_path = c.model, .host = so.host, .port = so.port, .n_slots = so.n_slots, .n_ctx = c.n_ctx, .n_batch = c.n_batch,
        .n_threads = c.n_threads, .kv_type = c.kv_type, .kv_type_set = c.kv_type_set, CLI_KV_SIDES(&c), .n_queue = so.n_queue < 0 ? 0 : so.n_queue ? so.n_queue : -1,
        .api_key = so.api_key, .alias = so.alias, .max_body = (size_t)so.max_body, .chat_template = so.chat_template,
        .lora_paths = c.loras.path, .lora_scales = c.loras.scale, .n_lora = c.loras.n, .lora_init_without_apply = so.lora_init_without_apply,
        .draft_path = c.draft_path, .lookup = c.cfg.prompt_lookup, .assist_max = c.cfg.num_assistant_tokens,
        .assist_min = c.cfg.min_assistant_tokens, .lookup_ngram = c.cfg.max_ngram_size, .draft_p_min = c.cfg.assistant_confidence_threshold,
        .grammar = c.cfg.grammar && *c.cfg.grammar ? c.cfg.grammar : NULL,
        .json_schema = c.cfg.json_schema && *c.cfg.json_schema ? c.cfg.json_schema : NULL,
        .no_webui = so.no_webui, .webui_path = so.webui_path, .notice = on_notice, .notice_user = &c,
    };
    /* the signals go to sigwait in this thread only: block them before any
     * other thread starts, so every thread inherits the mask */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN); /* a client that hangs up is an error return, not a death */
    const int rc = sp_server_run(&o, &stop);
    free(template_text);
    free(c.structured_texts[0]);
    free(c.structured_texts[1]);
    return rc;
}
