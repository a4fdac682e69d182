/* sprout tokenize -m MODEL [-p TEXT | -f FILE | stdin] [--no-bos] [--special] [--ids | --json]
 *
 * Default output: one "id<TAB>piece" line per token, the piece escaped so
 * that each token stays on one line. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "files.h"
#include "json/json_util.h"
#include "options.h"
#include "sprout.h"

typedef struct tokenize_options {
    const char *prompt, *file;
    bool no_bos, special, ids, json;
} tokenize_options;

#define OWN(field) offsetof(tokenize_options, field)
static const cli_option tokenize_table[] = {
    CLI_OPT_STRING("-p, --prompt", "TEXT", OWN(prompt), "the text (default: read -f FILE, or standard input)"),
    CLI_OPT_STRING("-f, --file", "FILE", OWN(file), "read the text from a file"),
    CLI_OPT_FLAG("--no-bos", OWN(no_bos), "add no BOS/EOS tokens"),
    CLI_OPT_FLAG("--special", OWN(special), "match special-token text such as <|im_start|>"),
    CLI_OPT_FLAG("--ids", OWN(ids), "print only the ids, on one line"),
    CLI_OPT_FLAG("--json", OWN(json), "print {\"tokens\":[...],\"pieces\":[...]}"),
};

static const cli_command tokenize_command = {
    .name = "tokenize",
    .needs_model = true,
    .usage = "tokenize -m MODEL.gguf [-p TEXT | -f FILE] [--no-bos] [--special] [--ids | --json]",
    .about = "The model is the GGUF whose vocabulary to use.\n",
    .shared = CLI_SHARED_MODEL,
    CLI_TABLE(tokenize_table),
};

/* Prints a piece with \n, \t, \r, \\ and bytes that are not UTF-8 escaped. */
static void print_piece(const char *p, size_t n) {
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)p[i];
        size_t cl = sprout_utf8_char_len(p + i, n - i);
        if (c == '\n') fputs("\\n", stdout);
        else if (c == '\t') fputs("\\t", stdout);
        else if (c == '\r') fputs("\\r", stdout);
        else if (c == '\\') fputs("\\\\", stdout);
        else if (cl == 0 || c < 0x20 || c == 0x7F) printf("\\x%02x", c);
        else fwrite(p + i, 1, cl, stdout);
        i += cl ? cl : 1;
    }
}

int cmd_tokenize(int argc, char **argv) {
    cli_common o;
    tokenize_options to = {0};
    const int status = cli_parse(&tokenize_command, &o, &to, argc, argv);
    if (status != CLI_CONTINUE) return status;
    if (to.prompt && to.file) return cli_usage_error(&tokenize_command, "give -p or -f, not both");
    if (to.ids && to.json) return cli_usage_error(&tokenize_command, "give --ids or --json, not both");

    size_t len = 0;
    char *owned = NULL;
    const char *text = to.prompt;
    if (to.prompt) {
        len = strlen(to.prompt);
    } else {
        FILE *f = to.file ? fopen(to.file, "rb") : stdin;
        if (!f) {
            perror(to.file);
            return 1;
        }
        owned = cli_read_stream(f, &len);
        if (to.file) fclose(f);
        if (!owned) {
            fprintf(stderr, "sprout tokenize: cannot read %s\n", to.file ? to.file : "standard input");
            return 1;
        }
        text = owned;
    }

    sprout_gguf *g = NULL;
    sprout_tokenizer *tok = NULL;
    sprout_status st = sprout_gguf_open(o.model, &g);
    if (st == SPROUT_OK) st = sprout_tokenizer_create(g, &tok);
    if (st != SPROUT_OK) {
        fprintf(stderr, "sprout tokenize: %s: %s\n", sprout_status_str(st), sprout_last_error());
        free(owned);
        sprout_gguf_close(g);
        return 1;
    }
    if (*sprout_tokenizer_warning(tok)) fprintf(stderr, "sprout tokenize: warning: %s\n", sprout_tokenizer_warning(tok));

    unsigned flags = (to.no_bos ? 0 : SPROUT_TOKENIZE_ADD_SPECIAL) | (to.special ? SPROUT_TOKENIZE_PARSE_SPECIAL : 0);
    size_t n = 0, cap = len + 8;
    sprout_token *ids = malloc(cap * sizeof *ids);
    st = ids ? sprout_tokenize(tok, text, len, flags, ids, cap, &n) : SPROUT_ERR_OUT_OF_MEMORY;
    if (st == SPROUT_ERR_OUT_OF_RANGE) { /* only when BOS/EOS and specials outnumber the bytes */
        sprout_token *p = realloc(ids, n * sizeof *ids);
        st = p ? sprout_tokenize(tok, text, len, flags, ids = p, n, &n) : SPROUT_ERR_OUT_OF_MEMORY;
    }
    int rc = 0;
    if (st != SPROUT_OK) {
        fprintf(stderr, "sprout tokenize: %s: %s\n", sprout_status_str(st), sprout_last_error());
        rc = 1;
    } else if (to.ids) {
        for (size_t i = 0; i < n; i++) printf(i ? " %d" : "%d", ids[i]);
        putchar('\n');
    } else if (to.json) {
        json_t *tokens = json_array(), *pieces = json_array();
        for (size_t i = 0; i < n; i++) {
            const char *piece;
            size_t plen;
            sprout_token_to_piece(tok, ids[i], true, &piece, &plen);
            json_array_append_new(tokens, json_integer(ids[i]));
            json_array_append_new(pieces, json_string_lossy(piece, plen));
        }
        json_t *out = json_pack("{s:o, s:o}", "tokens", tokens, "pieces", pieces);
        rc = cli_print_json(out);
        json_decref(out);
    } else {
        for (size_t i = 0; i < n; i++) {
            const char *piece;
            size_t plen;
            sprout_token_to_piece(tok, ids[i], true, &piece, &plen);
            printf("%d\t", ids[i]);
            print_piece(piece, plen);
            putchar('\n');
        }
    }
    if (fflush(stdout) != 0) rc = 1;
    free(ids);
    free(owned);
    sprout_tokenizer_free(tok);
    sprout_gguf_close(g);
    return rc;
}
