/* sprout template [-m MODEL | --template FILE.jinja | --builtin NAME] [--messages FILE.json] [--vars FILE.json]
 *                 [--no-generation-prompt] [--bos TEXT] [--eos TEXT] [--now YYYY-MM-DDTHH:MM:SS]
 *
 * Prints the rendered prompt exactly (no newline added), for debugging a
 * model's prompt format. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "files.h"
#include "options.h"
#include "sprout.h"

typedef struct template_options {
    const char *template_file, *builtin, *messages_file, *vars_file, *bos, *eos, *now;
    bool no_generation_prompt;
} template_options;

static bool parse_builtin(const char *value, void *dst, char *why, size_t why_size) {
    if (sprout_template_builtin(value)) {
        *(const char **)dst = value;
        return true;
    }
    snprintf(why, why_size, "no such built-in template (sprout template --help lists them)");
    return false;
}

#define OWN(field) offsetof(template_options, field)
static const cli_option template_table[] = {
    CLI_OPT_STRING("--template", "FILE", OWN(template_file), "a Jinja template file (overrides the model's)"),
    CLI_OPT_CUSTOM("--builtin", "NAME", OWN(builtin), parse_builtin, "a built-in template: chatml llama2 llama3 zephyr phi3 gemma mistral"),
    CLI_OPT_STRING("--messages", "FILE", OWN(messages_file),
     "a JSON array of {\"role\", \"content\"} (default: one user message \"Hello\")"),
    CLI_OPT_STRING("--vars", "FILE", OWN(vars_file), "a JSON object of extra variables (tools, enable_thinking, ...)"),
    CLI_OPT_FLAG("--no-generation-prompt", OWN(no_generation_prompt), "render without the assistant's opening"),
    CLI_OPT_STRING("--bos", "TEXT", OWN(bos), "the bos_token variable (default: the model's)"),
    CLI_OPT_STRING("--eos", "TEXT", OWN(eos), "the eos_token variable (default: the model's)"),
    CLI_OPT_STRING("--now", "YYYY-MM-DDTHH:MM:SS", OWN(now), "what strftime_now() sees (default: the current local time)"),
};

static const cli_command template_command = {
    .name = "template",
    .usage = "template [-m MODEL.gguf | --template FILE.jinja | --builtin NAME] [options]",
    .about = "With -m, the model's chat template and BOS/EOS tokens.\n",
    .shared = CLI_SHARED_MODEL,
    CLI_TABLE(template_table),
};

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
    cli_common o;
    template_options to = {0};
    const int status = cli_parse(&template_command, &o, &to, argc, argv);
    if (status != CLI_CONTINUE) return status;
    if (!o.model && !to.template_file && !to.builtin) return cli_usage_error(&template_command, "give -m, --template or --builtin");
    if (to.template_file && to.builtin) return cli_usage_error(&template_command, "give --template or --builtin, not both");

    int rc = 1;
    sprout_gguf *g = NULL;
    sprout_tokenizer *tok = NULL;
    sprout_template *t = NULL;
    char *source_owned = NULL, *messages = NULL, *vars = NULL, *model_bos = NULL, *model_eos = NULL, *out = NULL;
    const char *source = NULL;
    size_t source_len = 0;
    sprout_status st = SPROUT_OK;

    if (o.model) {
        if ((st = sprout_gguf_open(o.model, &g)) != SPROUT_OK) goto fail;
        if (sprout_tokenizer_create(g, &tok) == SPROUT_OK) { /* a file without a vocabulary leaves them undefined */
            model_bos = token_text(tok, SPROUT_SPECIAL_BOS);
            model_eos = token_text(tok, SPROUT_SPECIAL_EOS);
        }
    }
    if (to.template_file) {
        if (!(source_owned = cli_read_file(to.template_file, &source_len))) {
            perror(to.template_file);
            goto done;
        }
        source = source_owned;
    } else if ((st = sprout_template_for_model(g, to.builtin, &source, &source_len)) != SPROUT_OK) {
        goto fail;
    }
    if (to.messages_file && !(messages = cli_read_file(to.messages_file, NULL))) {
        perror(to.messages_file);
        goto done;
    }
    if (to.vars_file && !(vars = cli_read_file(to.vars_file, NULL))) {
        perror(to.vars_file);
        goto done;
    }
    if ((st = sprout_template_parse(source, source_len, &t)) != SPROUT_OK) goto fail;
    sprout_template_options opt = {
        .struct_size = sizeof opt,
        .add_generation_prompt = !to.no_generation_prompt,
        .bos_token = to.bos ? to.bos : model_bos,
        .eos_token = to.eos ? to.eos : model_eos,
        .extra_json = vars,
        .now = to.now,
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
