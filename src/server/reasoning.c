#include "server/reasoning.h"

#include <stdlib.h>
#include <string.h>

#include "core/text_stream.h"
#include "server/api_request.h"

/* HEADER and BODY: harmony's parts of a message */
enum { BEFORE, INSIDE, AFTER, HEADER, BODY };

static const char OPEN[] = "<think>", CLOSE[] = "</think>";
static const char CHANNEL[] = "<|channel|>", MESSAGE[] = "<|message|>", END[] = "<|end|>";

void sp_reasoning_init(sp_reasoning *r, bool opened_by_prompt) {
    memset(r, 0, sizeof *r);
    r->phase = opened_by_prompt ? INSIDE : BEFORE;
    r->skip_space = opened_by_prompt;
}

void sp_reasoning_free(sp_reasoning *r) {
    free(r->held.data);
    memset(r, 0, sizeof *r);
}

bool sp_reasoning_opened_by(const char *prompt, size_t len) {
    while (len && sp_json_space(prompt[len - 1])) len--;
    return len >= strlen(OPEN) && !memcmp(prompt + len - strlen(OPEN), OPEN, strlen(OPEN));
}

bool sp_reasoning_harmony_prompt(const char *prompt, size_t len) {
    static const char opening[] = "<|start|>assistant";
    while (len && sp_json_space(prompt[len - 1])) len--;
    return len >= strlen(opening) && !memcmp(prompt + len - strlen(opening), opening, strlen(opening));
}

/* Drops the held bytes [0, n). */
static void consume(sp_buf *b, size_t n) {
    memmove(b->data, b->data + n, b->len - n);
    b->len -= n;
    b->data[b->len] = 0;
}

/* Text that cannot be kept is noted (sp_oom_take): the answer is not whole. */
static void put(sp_buf *b, const char *text, size_t len) {
    if (!sp_buf_put(b, text, len)) sp_oom_note();
}

/* Whether the n bytes at s begin marker m, or (not final) may yet. */
static bool begins(const char *s, size_t n, const char *m, bool final) {
    const size_t k = strlen(m);
    return n >= k ? !memcmp(s, m, k) : !final && !memcmp(s, m, n);
}

/* Harmony, from the held bytes: a header up to <|message|> names the
 * message's channel; its body runs to <|end|> (or the reply's end). Returns
 * whether to go on (false: wait for more text). */
static bool feed_harmony(sp_reasoning *r, bool final, sp_buf *reasoning, sp_buf *content) {
    sp_buf *h = &r->held;
    if (r->phase == HEADER) {
        const char *msg = memmem(h->data, h->len, MESSAGE, strlen(MESSAGE));
        if (!msg) {
            if (final) consume(h, h->len); /* a header cut short says nothing */
            return false;
        }
        const size_t at = (size_t)(msg - h->data);
        const char *ch = memmem(h->data, at, CHANNEL, strlen(CHANNEL));
        const char *name = ch ? ch + strlen(CHANNEL) : NULL;
        const size_t name_room = name ? at - (size_t)(name - h->data) : 0;
        r->analysis = name_room >= 8 && !memcmp(name, "analysis", 8) && (name_room == 8 || name[8] == ' ' || name[8] == '<');
        consume(h, at + strlen(MESSAGE));
        r->phase = BODY;
        return true;
    }
    sp_buf *to = r->analysis ? reasoning : content;
    const char *end = memmem(h->data, h->len, END, strlen(END));
    if (end) {
        const size_t at = (size_t)(end - h->data);
        put(to, h->data, at);
        consume(h, at + strlen(END));
        r->phase = HEADER;
        return true;
    }
    const size_t keep = final ? 0 : sp_marker_tail(h->data, h->len, END, strlen(END));
    put(to, h->data, h->len - keep);
    consume(h, h->len - keep);
    return false;
}

void sp_reasoning_feed(sp_reasoning *r, const char *text, size_t len, bool final, sp_buf *reasoning, sp_buf *content) {
    if (len && !sp_buf_put(&r->held, text, len)) { /* out of memory: the text goes on as the answer */
        put(content, text, len);
        return;
    }
    for (;;) {
        sp_buf *h = &r->held;
        if (r->skip_space) {
            size_t k = 0;
            while (k < h->len && sp_json_space(h->data[k])) k++;
            if (k) consume(h, k);
            if (!h->len) return;
            r->skip_space = false;
        }
        if (!h->len) return;
        if (r->phase == HEADER || r->phase == BODY) {
            if (!feed_harmony(r, final, reasoning, content)) return;
            continue;
        }
        if (r->phase == BEFORE && begins(h->data, h->len, CHANNEL, final)) {
            if (h->len < strlen(CHANNEL)) return; /* may be harmony's first header */
            r->phase = HEADER;
            continue;
        }
        if (r->phase == BEFORE) {
            size_t k = 0;
            while (k < h->len && sp_json_space(h->data[k])) k++;
            const size_t rest = h->len - k, m = strlen(OPEN);
            if (rest >= m && !memcmp(h->data + k, OPEN, m)) {
                consume(h, k + m);
                r->phase = INSIDE;
                r->skip_space = true;
                continue;
            }
            if (!final && rest < m && !memcmp(h->data + k, OPEN, rest)) return; /* may still open */
            r->phase = AFTER;
            continue;
        }
        if (r->phase == INSIDE) {
            const char *end = memmem(h->data, h->len, CLOSE, strlen(CLOSE));
            if (end) {
                const size_t at = (size_t)(end - h->data);
                put(reasoning, h->data, at);
                consume(h, at + strlen(CLOSE));
                r->phase = AFTER;
                r->skip_space = true;
                continue;
            }
            const size_t keep = final ? 0 : sp_marker_tail(h->data, h->len, CLOSE, strlen(CLOSE));
            put(reasoning, h->data, h->len - keep);
            consume(h, h->len - keep);
            return;
        }
        put(content, h->data, h->len);
        consume(h, h->len);
        return;
    }
}
