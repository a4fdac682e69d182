/* SentencePiece BPE (tokenizer.ggml.model "llama"): spaces become "▁", the
 * characters are merged by the score of the token each pair would form
 * (highest first), and what is left that is not a token is split back along
 * the merges that built it or, failing that, spelt as byte tokens <0xNN>. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "tokenizer/merge.h"
#include "tokenizer/tokenizers.h"

typedef struct rev_pair {
    int32_t left, right;
} rev_pair;

typedef struct spm_ctx {
    const sp_vocab *v;
    sp_strmap rev;      /* text of a proposed pair -> index into pairs */
    rev_pair *pairs;
    size_t n_pairs, cap_pairs;
    bool oom;
} spm_ctx;

/* A pair may merge if together they spell a token; the token's score is the
 * priority. The pair is remembered by its text (the latest one wins) so
 * that leftovers can be split back. */
static bool spm_pair(void *ctx_, const char *word, const sp_symbol *l, const sp_symbol *r, int32_t left, int32_t right,
                     float *priority) {
    spm_ctx *ctx = ctx_;
    const char *text = word + l->start;
    const size_t len = l->len + r->len;
    int32_t id = sp_vocab_find(ctx->v, text, len);
    if (id < 0) return false;
    *priority = ctx->v->score[id];
    int64_t at = sp_strmap_find(&ctx->rev, text, len);
    if (at < 0) {
        if (ctx->n_pairs == ctx->cap_pairs) {
            size_t cap = ctx->cap_pairs ? 2 * ctx->cap_pairs : 64;
            rev_pair *p = realloc(ctx->pairs, cap * sizeof *p);
            if (!p) {
                ctx->oom = true;
                return false;
            }
            ctx->pairs = p;
            ctx->cap_pairs = cap;
        }
        at = (int64_t)ctx->n_pairs++;
        if (sp_strmap_insert(&ctx->rev, text, len, at, NULL) < 0) {
            ctx->oom = true;
            return false;
        }
    }
    ctx->pairs[at] = (rev_pair){left, right};
    return true;
}

static void byte_fallback(const sp_vocab *v, const char *text, size_t len, sp_token_list *out) {
    for (size_t i = 0; i < len; i++) {
        int32_t id = sp_vocab_byte_token(v, (uint8_t)text[i]);
        if (id < 0) id = v->special[SPROUT_SPECIAL_UNK];
        if (id >= 0) sp_token_list_push(out, id);
    }
}

/* Emits a final symbol: itself if it is a token, else the halves it was
 * merged from, else its bytes. Iterative, with a bounded stack, because the
 * halves are looked up by text and a hostile vocabulary could make the
 * chain long. */
static void resegment(const spm_ctx *ctx, const sp_merger *m, const char *word, int32_t root, sp_token_list *out) {
    enum { MAX_STACK = 256 };
    int32_t stack[MAX_STACK];
    int depth = 0;
    stack[depth++] = root;
    while (depth > 0) {
        const sp_symbol *s = &m->sym[stack[--depth]];
        const char *text = word + s->start;
        int32_t id = sp_vocab_find(ctx->v, text, s->len);
        if (id >= 0) {
            sp_token_list_push(out, id);
            continue;
        }
        int64_t at = sp_strmap_find(&ctx->rev, text, s->len);
        if (at < 0 || depth + 2 > MAX_STACK) {
            byte_fallback(ctx->v, text, s->len, out);
            continue;
        }
        stack[depth++] = ctx->pairs[at].right; /* popped second */
        stack[depth++] = ctx->pairs[at].left;
    }
}

sprout_status sp_tokenize_spm(const sp_vocab *v, const char *text, size_t len, bool prefix_space, sp_token_list *out) {
    static const char space[] = "\xE2\x96\x81"; /* ▁ */
    size_t spaces = 0;
    for (size_t i = 0; i < len; i++) spaces += text[i] == ' ';
    if (len > (SIZE_MAX - 3) / 3) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "text too long");
    size_t n = len + 2 * spaces + (prefix_space ? 3 : 0); /* each space becomes the 3 bytes of ▁ */
    char *word = malloc(n ? n : 1);
    if (!word) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
    size_t o = 0;
    if (prefix_space) {
        memcpy(word, space, 3);
        o = 3;
    }
    for (size_t i = 0; i < len; i++) {
        if (text[i] == ' ') {
            memcpy(word + o, space, 3);
            o += 3;
        } else {
            word[o++] = text[i];
        }
    }
    spm_ctx ctx = {.v = v};
    sp_merger m = {0};
    sprout_status st = sp_strmap_init(&ctx.rev, 64) ? sp_merge_word(&m, word, n, spm_pair, &ctx)
                                                    : sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
    if (st == SPROUT_OK && ctx.oom) st = sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory while tokenizing");
    if (st == SPROUT_OK && n > 0)
        for (int32_t i = 0; i != -1; i = m.sym[i].next) resegment(&ctx, &m, word, i, out);
    sp_merger_free(&m);
    sp_strmap_free(&ctx.rev);
    free(ctx.pairs);
    free(word);
    return st;
}
