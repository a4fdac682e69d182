/* sprout template [-m MODEL | --template FILE.jinja | --builtin NAME] [--messages FILE.json] [--vars FILE.json]
 *                 [--no-generation-prompt] [--bos TEXT] [--eos TEXT] [--now YYYY-MM-DDTHH:MM:SS]
 *
 * Prints the rendered prompt exactly (no newline added), for debugging a
 * model's prompt format. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "files.h"
#include "sprout.h"

static void usage(FILE *out) {
    fprintf(out,
            "usage: sprout template [-m MODEL.gguf | --template FILE.jinja | --builtin NAME] [options]\n"
            "  -m, --model FILE          use the model's chat template and BOS/EOS tokens\n"
            "  --template FILE           a Jinja template file (overrides the model's)\n"
            "  --builtin NAME            a built-in template: chatml llama2 llama3 zephyr phi3 gemma mistral\n"
            "  --messages FILE           a JSON array of {\"role\", \"content\"} (default: one user message \"Hello\")\n"
            "  --vars FILE               a JSON object of extra variables (tools, enable_thinking, ...)\n"
            "  --no-generation-prompt    render without the assistant's opening\n"
            "  --bos TEXT, --eos TEXT    the bos_token / eos_token variables (default: the model's)\n"
            "  --now YYYY-MM-DDTHH:MM:SS what strftime_now() sees (default: the current local time)\n");
}

/* The text of one of the model's special tokens, malloc'd, or NULL. */
static char *token_text(const sprout_tokenizer *tok, sprout_special which) {
    sprout_token id = sprout_tokenizer_special(tok, which);
    const char *text;
    size_t len;
    if (id < 0 || sprout_token_text(tok, id, &text, &len) != SPROUT_OK) return NULL;
    char *s = malloc(len + 1);
    if (s) {
        memcpy(s, text, len);
        s[len] = 0;
    }
    return s;
}

int cmd_template(int argc, char **argv) {
    const char *model = NULL, *template_file = NULL, *builtin = NULL, *messages_file = NULL, *vars_file = NULL;
    const char *bos = NULL, *eos = NULL, *now = NULL;
    bool generation_prompt = true;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool v = i + 1 < argc;
        if ((!strcmp(a, "-m") || !strcmp(a, "--model")) && v) model = argv[++i];
        else if (!strcmp(a, "--template") && v) template_file = argv[++i];
        else if (!strcmp(a, "--builtin") && v) builtin = argv[++i];
        else if (!strcmp(a, "--messages") && v) messages_file = argv[++i];
        else if (!strcmp(a, "--vars") && v) vars_file = argv[++i];
        else if (!strcmp(a, "--bos") && v) bos = argv[++i];
        else if (!strcmp(a, "--eos") && v) eos = argv[++i];
        else if (!strcmp(a, "--now") && v) now = argv[++i];
        else if (!strcmp(a, "--no-generation-prompt")) generation_prompt = false;
        else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "sprout template: unexpected argument '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if ((!model && !template_file && !builtin) || (template_file && builtin)) {
        usage(stderr);
        return 2;
    }
    if (builtin && !sprout_template_builtin(builtin)) {
        fprintf(stderr, "sprout template: no built-in template '%s'\n", builtin);
        return 2;
    }

    int rc = 1;
    sprout_gguf *g = NULL;
    sprout_tokenizer *tok = NULL;
    sprout_template *t = NULL;
    char *source_owned = NULL, *messages = NULL, *vars = NULL, *model_bos = NULL, *model_eos = NULL, *out = NULL;
    const char *source = NULL;
    size_t source_len = 0;
    sprout_status st = SPROUT_OK;

    if (model) {
        if ((st = sprout_gguf_open(model, &g)) != SPROUT_OK) goto fail;
        if (sprout_tokenizer_create(g, &tok) == SPROUT_OK) { /* a file without a vocabulary leaves them undefined */
            model_bos = token_text(tok, SPROUT_SPECIAL_BOS);
            model_eos = token_text(tok, SPROUT_SPECIAL_EOS);
        }
    }
    if (template_file) {
        if (!(source_owned = cli_read_file(template_file, &source_len))) {
            perror(template_file);
            goto done;
        }
        source = source_owned;
    } else if ((st = sprout_template_for_model(g, builtin, &source, &source_len)) != SPROUT_OK) {
        goto fail;
    }
    if (messages_file && !(messages = cli_read_file(messages_file, NULL))) {
        perror(messages_file);
        goto done;
    }
    if (vars_file && !(vars = cli_read_file(vars_file, NULL))) {
        perror(vars_file);
        goto done;
    }
    if ((st = sprout_template_parse(source, source_len, &t)) != SPROUT_OK) goto fail;
    sprout_template_options opt = {
        .struct_size = sizeof opt,
        .add_generation_prompt = generation_prompt,
        .bos_token = bos ? bos : model_bos,
        .eos_token = eos ? eos : model_eos,
        .extra_json = vars,
        .now = now,
    };
    size_t len = 0;
    st = sprout_template_render_json(t, messages ? messages : "[{\"role\": \"user\", \"content\": \"Hello\"}]", &opt, &out, &len);
    if (st != SPROUT_OK) goto fail;
    rc = fwrite(out, 1, len, stdout) == len && fflush(stdout) == 0 ? 0 : 1;
    goto done;
fail:
    fprintf(stderr, "%s\n", sprout_last_error());
done:
    sprout_free(out);
    sprout_template_free(t);
    sprout_tokenizer_free(tok);
    sprout_gguf_close(g);
    free(source_owned);
    free(messages);
    free(vars);
    free(model_bos);
    free(model_eos);
    return rc;
}
