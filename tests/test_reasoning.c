/* Reasoning apart from the answer: <think> blocks written by the model or
 * opened by the prompt, replies without one, replies cut inside one;
 * gpt-oss's harmony messages (as its special tokens render); and streamed
 * in any pieces, the same split as whole. */
#include "server/reasoning.h"
#include "test_util.h"

typedef struct split_case {
    const char *reply;
    bool opened;
    const char *reasoning, *content;
} split_case;

static const split_case cases[] = {
    {"<think>\nLet me add.\n</think>\n\n4", false, "Let me add.\n", "4"},
    {"  <think>a</think>b", false, "a", "b"},
    {"Let me add.\n</think>\n\nThe answer is 4.", true, "Let me add.\n", "The answer is 4."},
    {"\n\nstill thinking", true, "still thinking", ""},
    {"Hello <think> world", false, "", "Hello <think> world"},
    {"<thin", false, "", "<thin"},
    {"<think>cut short", false, "cut short", ""},
    {"no tags at all", false, "", "no tags at all"},
    {"<think></think>", false, "", ""},
    {"a </thinking> b </think> c", true, "a </thinking> b ", "c"},
    /* harmony: analysis, then the final answer after <|start|>assistant */
    {"<|channel|>analysis<|message|>User asks 2+2. Answer 4.<|end|><|start|>assistant<|channel|>final<|message|>2 + 2 = 4.", false,
     "User asks 2+2. Answer 4.", "2 + 2 = 4."},
    {"<|channel|>final<|message|>Just the answer.", false, "", "Just the answer."},
    {"<|channel|>analysis<|message|>cut <|en", false, "cut <|en", ""},
    {"<|channel|>analysis<|message|>a<|end|><|start|>assistant<|channel|>analysis<|message|>b<|end|><|start|>assistant<|channel|>final<|message|>c",
     false, "ab", "c"},
    {"<|channel|>analysisx<|message|>not analysis", false, "", "not analysis"},
    {"<|channel|>analysis", false, "", ""},
    {"<|chan", false, "", "<|chan"},
    {"Hi <|channel|>analysis<|message|>x", false, "", "Hi <|channel|>analysis<|message|>x"},
};

static void run(const split_case *c, size_t piece, sp_buf *reasoning, sp_buf *content) {
    sp_reasoning r;
    sp_reasoning_init(&r, c->opened);
    const size_t n = strlen(c->reply);
    for (size_t i = 0; i < n; i += piece) sp_reasoning_feed(&r, c->reply + i, i + piece < n ? piece : n - i, false, reasoning, content);
    sp_reasoning_feed(&r, NULL, 0, true, reasoning, content);
    sp_reasoning_free(&r);
}

int main(void) {
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (size_t piece = 1; piece <= 64; piece = piece * 2 + 1) { /* 64+: all at once */
            sp_buf reasoning = {0}, content = {0};
            run(&cases[i], piece, &reasoning, &content);
            const char *rs = reasoning.data ? reasoning.data : "", *cs = content.data ? content.data : "";
            CHECK_MSG(!strcmp(rs, cases[i].reasoning) && !strcmp(cs, cases[i].content), "case %zu in pieces of %zu: [%s] [%s]", i, piece,
                      rs, cs);
            free(reasoning.data);
            free(content.data);
        }
    CHECK(sp_reasoning_opened_by("<|Assistant|><think>\n", 21));
    CHECK(!sp_reasoning_opened_by("<think>\n\n</think>\n\n", 19));
    CHECK(!sp_reasoning_opened_by("", 0));
    static const char harmony[] = "<|start|>user<|message|>Hello<|end|><|start|>assistant";
    CHECK(sp_reasoning_harmony_prompt(harmony, strlen(harmony)));
    CHECK(!sp_reasoning_harmony_prompt(harmony, strlen(harmony) - 1));
    CHECK(!sp_reasoning_harmony_prompt("assistant", 9));
    TEST_MAIN_END();
}
