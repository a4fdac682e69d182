/* sprout run: one generation (or one chat turn with --chat).
 *
 * Streams the continuation to stdout as it is generated, or prints one JSON
 * object with --json. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "files.h"
#include "json/json_util.h"
#include "model_ref.h"
#include "options.h"
#include "sprout.h"

typedef struct run_options {
    const char *prompt, *file, *ids, *system;
    bool chat, echo, json, metrics;
    int32_t logprobs;
} run_options;

#define OWN(field) offsetof(run_options, field)
static const cli_option run_table[] = {
    CLI_OPT_STRING("-p, --prompt", "TEXT", OWN(prompt), "the prompt (raw completion; BOS added as the model wants)"),
    CLI_OPT_STRING("-f, --file", "FILE", OWN(file), "read the prompt from a file"),
    CLI_OPT_STRING("--prompt-ids", "\"ID ...\"", OWN(ids), "the prompt as token ids (nothing added)"),
    CLI_OPT_FLAG("--chat", OWN(chat), "send the prompt as a user turn, with the model's chat template"),
    CLI_OPT_STRING("--system", "TEXT", OWN(system), "a system message for --chat"),
    CLI_OPT_FLAG("--echo", OWN(echo), "print the prompt before the continuation"),
    CLI_OPT_INT("--logprobs", "K", OWN(logprobs), 0, 64, "record log-probabilities of each token and the K best (with --json)"),
    CLI_OPT_FLAG("--json", OWN(json), "print one JSON object instead of streaming"),
    CLI_OPT_FLAG("--metrics", OWN(metrics), "print performance metrics to stderr"),
};

static const cli_command run_command = {
    .name = "run",
    .needs_model = true,
    .usage = "run -m MODEL.gguf (-p PROMPT | -f FILE | --prompt-ids \"ID ...\") [options]",
    .shared = CLI_SHARED_GENERATION,
    CLI_TABLE(run_table),
};

static sprout_stream_status print_piece(const char *piece, size_t len, void *user) {
    (void)user;
    fwrite(piece, 1, len, stdout);
    fflush(stdout);
    return SPROUT_STREAM_RUNNING;
}

static bool parse_ids(const char *s, sprout_token **ids, size_t *n) {
    size_t cap = 16;
    *ids = malloc(cap * sizeof **ids);
    *n = 0;
    while (*ids && *s) {
        while (*s == ' ' || *s == ',' || *s == '\t' || *s == '\n') s++;
        if (!*s) break;
        char *end;
        errno = 0;
        long v = strtol(s, &end, 10);
        if (end == s || errno || v < 0 || v > INT32_MAX) return false;
        if (*n == cap) {
            sprout_token *p = realloc(*ids, (cap *= 2) * sizeof **ids);
            if (!p) return false;
            *ids = p;
        }
        (*ids)[(*n)++] = (sprout_token)v;
        s = end;
    }
    return *ids != NULL;
}

static json_t *metrics_json(const sprout_perf_metrics *m) {
    return json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:i, s:i, s:i, s:f, s:i, s:i, s:i}", "load_ms", m->load_ms, "tokenize_ms",
                     m->tokenize_ms, "ttft_ms", m->ttft_ms, "tpot_mean_ms", m->tpot_mean_ms, "tpot_std_ms", m->tpot_std_ms,
                     "prefill_tokens_per_s", m->prefill_tokens_per_s, "decode_tokens_per_s", m->decode_tokens_per_s, "n_prompt_tokens",
                     m->n_prompt_tokens, "n_prefill_tokens", m->n_prefill_tokens, "n_generated_tokens", m->n_generated_tokens,
                     "total_ms", m->total_ms, "n_draft_tokens", m->n_draft_tokens, "n_accepted_tokens", m->n_accepted_tokens,
                     "n_decode_passes", m->n_decode_passes);
}

static json_t *result_json(const sprout_result *r, int logprobs) {
    size_t n_prompt, n_tokens, text_len;
    const sprout_token *prompt = sprout_result_prompt_tokens(r, &n_prompt), *tokens = sprout_result_tokens(r, &n_tokens);
    const char *text = sprout_result_text(r, &text_len);
    json_t *pj = json_array(), *tj = json_array();
    for (size_t i = 0; i < n_prompt; i++) json_array_append_new(pj, json_integer(prompt[i]));
    for (size_t i = 0; i < n_tokens; i++) json_array_append_new(tj, json_integer(tokens[i]));
    sprout_finish_reason fr = sprout_result_finish_reason(r);
    json_t *o = json_pack("{s:o, s:o, s:o, s:s}", "prompt_tokens", pj, "tokens", tj, "text", json_string_lossy(text, text_len),
                          "finish_reason", sprout_finish_reason_str(fr));
    if (logprobs > 0) {
        json_t *lps = json_array();
        for (size_t i = 0; i < n_tokens; i++) {
            float lp;
            const sprout_token *top_ids;
            const float *top_lp;
            size_t k;
            if (sprout_result_logprob(r, i, &lp, &top_ids, &top_lp, &k) != SPROUT_OK) break;
            json_t *top = json_array();
            for (size_t j = 0; j < k; j++) json_array_append_new(top, json_pack("{s:i, s:o}", "token", top_ids[j], "logprob", json_float32(top_lp[j])));
            json_array_append_new(lps, json_pack("{s:i, s:o, s:o}", "token", tokens[i], "logprob", json_float32(lp), "top", top));
        }
        json_object_set_new(o, "logprobs", lps);
    }
    sprout_perf_metrics m = {.struct_size = sizeof m};
    sprout_result_metrics(r, &m);
    json_object_set_new(o, "metrics", metrics_json(&m));
    return o;
}

static void print_metrics(const sprout_result *r) {
    sprout_perf_metrics m = {.struct_size = sizeof m};
    sprout_result_metrics(r, &m);
    fprintf(stderr,
            "\nload %.1f ms | tokenize %.2f ms | prompt %d tokens (%d computed) at %.1f t/s | first token %.1f ms | "
            "%d tokens at %.1f t/s (%.2f ± %.2f ms/token) | total %.1f ms\n",
            m.load_ms, m.tokenize_ms, m.n_prompt_tokens, m.n_prefill_tokens, m.prefill_tokens_per_s, m.ttft_ms, m.n_generated_tokens,
            m.decode_tokens_per_s, m.tpot_mean_ms, m.tpot_std_ms, m.total_ms);
    if (m.n_draft_tokens)
        fprintf(stderr, "assisted: %d of %d proposed tokens accepted (%.1f%%), %.2f tokens a pass\n", m.n_accepted_tokens,
                m.n_draft_tokens, 100.0 * m.n_accepted_tokens / m.n_draft_tokens,
                m.n_decode_passes ? (double)(m.n_generated_tokens - 1) / m.n_decode_passes : 0);
}

int cmd_run(int argc, char **argv) {
    cli_common o;
    run_options ro = {0};
    const int status = cli_parse(&run_command, &o, &ro, argc, argv);
    if (status != CLI_CONTINUE) return status;
    if ((!!ro.prompt + !!ro.file + !!ro.ids) != 1) return cli_usage_error(&run_command, "give one of -p, -f and --prompt-ids");
    if (ro.ids && ro.chat) return cli_usage_error(&run_command, "--chat takes text, not --prompt-ids");
    char *file_text = NULL;
    if (ro.file && !(file_text = cli_read_file(ro.file, NULL))) {
        perror(ro.file);
        return 1;
    }
    if (ro.file) ro.prompt = file_text;
    sprout_token *ids = NULL;
    size_t n_ids = 0;
    if (ro.ids && !parse_ids(ro.ids, &ids, &n_ids)) {
        fprintf(stderr, "sprout run: --prompt-ids takes token ids separated by spaces\n");
        free(ids);
        return 2;
    }
    o.cfg.echo = ro.echo;
    o.cfg.logprobs = ro.logprobs;

    sprout_model *model = NULL;
    sprout_pipeline *p = NULL;
    sprout_result *r = NULL;
    sprout_status st = cli_open_pipeline(&o, &model, &p);
    sprout_streamer streamer = ro.json ? NULL : print_piece;
    if (st == SPROUT_OK) {
        if (ro.chat && o.stored) { /* the model's TEMPLATE, SYSTEM and MESSAGEs before the prompt */
            char *messages = cli_model_ref_messages(o.stored, ro.system, ro.prompt), *text = NULL;
            sprout_token *chat_ids = NULL;
            size_t n_chat = 0;
            st = messages ? sprout_model_chat_prompt(model, sprout_store_model_template(o.stored), messages, true, &text, NULL,
                                                     &chat_ids, &n_chat)
                          : SPROUT_ERR_OUT_OF_MEMORY;
            if (st == SPROUT_OK) cli_log(SPROUT_LOG_INFO, "prompt: %s", text);
            if (st == SPROUT_OK) st = sprout_generate_tokens(p, chat_ids, n_chat, &o.cfg, streamer, NULL, &r);
            sprout_free(text);
            sprout_free(chat_ids);
            free(messages);
        } else if (ro.chat) {
            st = sprout_chat_start(p, ro.system);
            if (st == SPROUT_OK) st = sprout_chat_generate(p, ro.prompt, &o.cfg, streamer, NULL, &r);
        } else if (ids) {
            if (ro.echo && !ro.json && sprout_model_tokenizer(model)) { /* the prompt as text first */
                char buf[1 << 16];
                size_t len = 0;
                if (sprout_detokenize(sprout_model_tokenizer(model), ids, n_ids, 0, buf, sizeof buf, &len) == SPROUT_OK)
                    fwrite(buf, 1, len, stdout);
            }
            st = sprout_generate_tokens(p, ids, n_ids, &o.cfg, streamer, NULL, &r);
        } else {
            st = sprout_generate(p, ro.prompt, &o.cfg, streamer, NULL, &r);
        }
    }
    int rc = 0;
    if (st != SPROUT_OK) {
        fprintf(stderr, "sprout run: %s: %s\n", sprout_status_str(st), sprout_last_error());
        rc = 1;
    } else {
        if (ro.json) {
            json_t *j = result_json(r, ro.logprobs);
            rc = cli_print_json(j);
            json_decref(j);
        } else {
            putchar('\n');
        }
        cli_note_context_filled("sprout run", p, &o.cfg, r);
        if (ro.metrics) print_metrics(r);
    }
    if (fflush(stdout) != 0) rc = 1;
    sprout_result_free(r);
    cli_close_pipeline(&o, model, p);
    free(ids);
    free(file_text);
    return rc;
}
