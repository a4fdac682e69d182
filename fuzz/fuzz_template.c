/* libFuzzer target over the chat-template engine: the input is a template,
 * parsed and rendered against a small conversation with tight limits. Any
 * input must give output or an error with a position, never a crash, a
 * hang or unbounded memory. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "template/template_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const tpl_limits fuzz_limits = {.max_steps = 20000, .max_output = 1 << 16, .max_heap = 8 << 20};

static bool add(jv_heap *h, jv dict, const char *key, jv value) {
    jv k = jv_cstr(h, key);
    return k.type == JV_STR && jv_dict_set(h, dict.u.d, k, value);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    tpl_program prog;
    tpl_error err;
    if (!tpl_parse((const char *)data, size, &prog, &err)) {
        tpl_program_free(&prog);
        return 0;
    }
    jv_heap heap = {.limit = fuzz_limits.max_heap};
    jv ctx = jv_dict(&heap, 8), msgs = jv_list(&heap, NULL, 2, false);
    static const char *const roles[] = {"system", "user"};
    bool ok = ctx.type == JV_DICT && msgs.type == JV_LIST;
    for (int i = 0; ok && i < 2; i++) {
        jv m = jv_dict(&heap, 2);
        ok = m.type == JV_DICT && add(&heap, m, "role", jv_cstr(&heap, roles[i])) &&
             add(&heap, m, "content", jv_cstr(&heap, "Hi {{ x }} \xF0\x9F\x98\x81"));
        if (ok) ((jlist *)msgs.u.l)->items[i] = m;
    }
    ok = ok && add(&heap, ctx, "messages", msgs) && add(&heap, ctx, "add_generation_prompt", jv_bool(true)) &&
         add(&heap, ctx, "bos_token", jv_cstr(&heap, "<s>")) && add(&heap, ctx, "tools", jv_none());
    if (ok) {
        struct tm now = {.tm_year = 124, .tm_mon = 6, .tm_mday = 26, .tm_hour = 12};
        jbuf out = {0};
        tpl_render(&prog, ctx, &heap, &now, &fuzz_limits, &out, &err);
        jbuf_free(&out);
    }
    sp_arena_free(&heap.arena);
    tpl_program_free(&prog);
    return 0;
}
