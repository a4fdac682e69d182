/* sprout tokenize -m MODEL [-p TEXT | -f FILE | stdin] [--no-bos] [--special] [--ids | --json]
 *
 * Default output: one "id<TAB>piece" line per token, the piece escaped so
 * that each token stays on one line. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "files.h"
#include "json/json_util.h"
#include "sprout.h"

static void usage(FILE *out) {
    fprintf(out,
            "usage: sprout tokenize -m MODEL.gguf [-p TEXT | -f FILE] [--no-bos] [--special] [--ids | --json]\n"
            "  -m, --model FILE   the GGUF whose vocabulary to use\n"
            "  -p, --prompt TEXT  the text (default: read -f FILE, or standard input)\n"
            "  -f, --file FILE    read the text from a file\n"
            "  --no-bos           add no BOS/EOS tokens\n"
            "  --special          match special-token text such as <|im_start|>\n"
            "  --ids              print only the ids, on one line\n"
            "  --json             print {\"tokens\":[...],\"pieces\":[...]}\n");
}

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
    const char *model = NULL, *prompt = NULL, *file = NULL;
    bool no_bos = false, special = false, ids_only = false, as_json = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has_value = i + 1 < argc;
        if ((!strcmp(a, "-m") || !strcmp(a, "--model")) && has_value) model = argv[++i];
        else if ((!strcmp(a, "-p") || !strcmp(a, "--prompt")) && has_value) prompt = argv[++i];
        else if ((!strcmp(a, "-f") || !strcmp(a, "--file")) && has_value) file = argv[++i];
        else if (!strcmp(a, "--no-bos")) no_bos = true;
        else if (!strcmp(a, "--special")) special = true;
        else if (!strcmp(a, "--ids")) ids_only = true;
        else if (!strcmp(a, "--json")) as_json = true;
        else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "sprout tokenize: unexpected argument '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (!model || (prompt && file) || (ids_only && as_json)) {
        usage(stderr);
        return 2;
    }

    size_t len = 0;
    char *owned = NULL;
    const char *text = prompt;
    if (prompt) {
        len = strlen(prompt);
    } else {
        FILE *f = file ? fopen(file, "rb") : stdin;
        if (!f) {
            perror(file);
            return 1;
        }
        owned = cli_read_stream(f, &len);
        if (file) fclose(f);
        if (!owned) {
            fprintf(stderr, "sprout tokenize: cannot read %s\n", file ? file : "standard input");
            return 1;
        }
        text = owned;
    }

    sprout_gguf *g = NULL;
    sprout_tokenizer *tok = NULL;
    sprout_status st = sprout_gguf_open(model, &g);
    if (st == SPROUT_OK) st = sprout_tokenizer_create(g, &tok);
    if (st != SPROUT_OK) {
        fprintf(stderr, "sprout tokenize: %s: %s\n", sprout_status_str(st), sprout_last_error());
        free(owned);
        sprout_gguf_close(g);
        return 1;
    }
    if (*sprout_tokenizer_warning(tok)) fprintf(stderr, "sprout tokenize: warning: %s\n", sprout_tokenizer_warning(tok));

    unsigned flags = (no_bos ? 0 : SPROUT_TOKENIZE_ADD_SPECIAL) | (special ? SPROUT_TOKENIZE_PARSE_SPECIAL : 0);
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
    } else if (ids_only) {
        for (size_t i = 0; i < n; i++) printf(i ? " %d" : "%d", ids[i]);
        putchar('\n');
    } else if (as_json) {
        json_t *tokens = json_array(), *pieces = json_array();
        for (size_t i = 0; i < n; i++) {
            const char *piece;
            size_t plen;
            sprout_token_to_piece(tok, ids[i], true, &piece, &plen);
            json_array_append_new(tokens, json_integer(ids[i]));
            json_array_append_new(pieces, json_string_lossy(piece, plen));
        }
        json_t *out = json_pack("{s:o, s:o}", "tokens", tokens, "pieces", pieces);
        rc = json_print(out);
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
