#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/pretokenize.h"

#include <pcre2.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

/* The split regexes, as the models' tokenizer.json files state them (where
 * llama.cpp had to rewrite one for std::regex, the original is used: PCRE2
 * runs it as written). */
#define RE_GPT2 "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"
#define RE_LLAMA3                                                                                     \
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|" \
    "\\s+(?!\\S)|\\s+"
#define RE_QWEN2                                                                                      \
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|" \
    "\\s+(?!\\S)|\\s+"
#define RE_CJK "[\\x{4E00}-\\x{9FA5}\\x{800}-\\x{4E00}\\x{AC00}-\\x{D7FF}]+"
#define RE_BLOOM " ?[^(\\s|.,!?\\x{2026}\\x{3002}\\x{FF0C}\\x{3001}\\x{964}\\x{6D4}\\x{60C})]+"

static const char *const re_default[] = {"[\\p{P}\\$\\+<=>\\^~\\|]+", RE_GPT2, "\\p{N}+", "[0-9][0-9][0-9]", NULL};
static const char *const re_gpt2[] = {RE_GPT2, NULL};
static const char *const re_llama3[] = {RE_LLAMA3, NULL};
static const char *const re_qwen2[] = {RE_QWEN2, NULL};
static const char *const re_deepseek_llm[] = {
    "[\r\n]",
    "\\s?[A-Za-z\\x{B5}\\x{C0}-\\x{D6}\\x{D8}-\\x{F6}\\x{F8}-\\x{1BA}\\x{1BC}-\\x{1BF}\\x{1C4}-"
    "\\x{293}\\x{295}-\\x{2AF}\\x{370}-\\x{373}\\x{376}\\x{377}\\x{37B}-\\x{37D}\\x{37F}\\x{386}"
    "\\x{388}-\\x{38A}\\x{38C}\\x{38E}-\\x{3A1}\\x{3A3}-\\x{3F5}\\x{3F7}-\\x{481}\\x{48A}-\\x{52F}"
    "\\x{531}-\\x{556}\\x{10A0}-\\x{10C5}\\x{13A0}-\\x{13F5}\\x{13F8}-\\x{13FD}\\x{1C90}-\\x{1CBA}"
    "\\x{1CBD}-\\x{1CBF}\\x{1D00}-\\x{1D2B}\\x{1D6B}-\\x{1D77}\\x{1D79}-\\x{1D9A}\\x{1E00}-\\x{1F15}"
    "\\x{1F18}-\\x{1F1D}\\x{1F20}-\\x{1F45}\\x{1F48}-\\x{1F4D}\\x{1F50}-\\x{1F57}\\x{1F59}\\x{1F5B}"
    "\\x{1F5D}\\x{1F5F}-\\x{1F7D}\\x{1F80}-\\x{1FB4}\\x{1FB6}-\\x{1FBC}\\x{1FBE}\\x{1FC2}-\\x{1FC4}"
    "\\x{1FC6}-\\x{1FCC}\\x{1FD0}-\\x{1FD3}\\x{1FD6}-\\x{1FDB}\\x{1FE0}-\\x{1FEC}\\x{1FF2}-\\x{1FF4}"
    "\\x{1FF6}-\\x{1FFC}\\x{2102}\\x{2107}\\x{210A}-\\x{2113}\\x{2115}\\x{2119}-\\x{211D}\\x{2124}"
    "\\x{2126}\\x{2128}\\x{212A}-\\x{212D}\\x{212F}-\\x{2134}\\x{2139}\\x{213C}-\\x{213F}\\x{2145}-"
    "\\x{2149}\\x{214E}\\x{2183}\\x{2184}\\x{2C00}-\\x{2C7B}\\x{2C7E}-\\x{2CE4}\\x{2CEB}-\\x{2CEE}"
    "\\x{2CF2}\\x{2CF3}\\x{A640}-\\x{A66D}\\x{A680}-\\x{A69B}\\x{A722}-\\x{A76F}\\x{A771}-\\x{A787}"
    "\\x{A78B}-\\x{A78E}\\x{AB70}-\\x{ABBF}\\x{FB00}-\\x{FB06}\\x{FB13}-\\x{FB17}\\x{FF21}-\\x{FF3A}"
    "\\x{FF41}-\\x{FF5A}\\x{10400}-\\x{1044F}\\x{104B0}-\\x{104D3}\\x{104D8}-\\x{104FB}\\x{10C80}-"
    "\\x{10CB2}\\x{10CC0}-\\x{10CF2}\\x{118A0}-\\x{118DF}\\x{1E900}-\\x{1E943}]+",
    "\\s?[!-/:-~\\x{FF01}-\\x{FF0F}\\x{FF1A}-\\x{FF5E}\\x{2018}-\\x{201F}\\x{3000}-\\x{3002}]+",
    "\\s+$",
    RE_CJK,
    "\\p{N}+",
    NULL};
static const char *const re_deepseek_coder[] = {"[\r\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", RE_CJK, "\\p{N}", NULL};
static const char *const re_deepseek3[] = {
    "\\p{N}{1,3}", "[\\x{4E00}-\\x{9FA5}\\x{3040}-\\x{309F}\\x{30A0}-\\x{30FF}]+",
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|"
    "\\s*[\r\n]+|\\s+(?!\\S)|\\s+",
    NULL};
static const char *const re_falcon[] = {"[\\p{P}\\$\\+<=>\\^~\\|`]+", RE_GPT2, "[0-9][0-9][0-9]", NULL};
static const char *const re_starcoder[] = {"\\p{N}", RE_GPT2, NULL};
static const char *const re_bloom[] = {RE_BLOOM, NULL};
static const char *const re_viking[] = {RE_BLOOM, "\\p{N}", NULL};
static const char *const re_tekken[] = {
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+|"
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    NULL};
/* o200k (GPT-4o, gpt-oss, Llama 4): tekken's words with English
 * contractions attached in any case, and digits in runs of up to three */
static const char *const re_gpt4o[] = {
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|"
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|"
    "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    NULL};
static const char *const re_chameleon[] = {"<sentinel:[0-9]+>", "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z", "([\\t\\n]|    |  )",
                                           "\\p{N}", "[\\p{P}!-/:-@\\[-`{-~]", RE_GPT2, NULL};

typedef struct pre_entry {
    const char *names[12]; /* NULL-terminated; names[0] is canonical */
    const char *const *regexes;
    bool ignore_merges, keep_spaces, no_bos;
    int add_bos;
} pre_entry;

/* Name aliases and per-name settings as llama.cpp's loader has them. */
static const pre_entry table[] = {
    {{"default", NULL}, re_default, false, false, false, -1},
    {{"llama-bpe", "llama3", "llama-v3", "falcon3", NULL}, re_llama3, true, false, false, 1},
    {{"deepseek-llm", NULL}, re_deepseek_llm, false, true, false, -1},
    {{"deepseek-coder", NULL}, re_deepseek_coder, false, true, false, -1},
    {{"deepseek-v3", NULL}, re_deepseek3, false, true, false, -1},
    {{"falcon", NULL}, re_falcon, false, false, false, -1},
    {{"mpt", NULL}, re_gpt2, false, false, false, -1},
    {{"starcoder", NULL}, re_starcoder, false, false, false, -1},
    {{"gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v1-en", "jina-v2-es", "jina-v2-de", "jina-v2-code",
      "roberta-bpe", NULL},
     re_gpt2, false, false, false, -1},
    {{"refact", NULL}, re_starcoder, false, false, false, -1},
    {{"command-r", NULL}, re_starcoder, false, true, false, -1},
    {{"qwen2", "deepseek-r1-qwen", "megrez", NULL}, re_qwen2, false, true, false, -1},
    {{"stablelm2", NULL}, re_qwen2, false, false, false, -1},
    {{"olmo", NULL}, re_gpt2, false, false, false, -1},
    {{"dbrx", NULL}, re_llama3, false, false, false, -1},
    {{"smaug-bpe", NULL}, re_llama3, false, false, false, -1},
    {{"poro-chat", NULL}, re_bloom, false, true, false, -1},
    {{"chatglm-bpe", NULL}, re_llama3, false, false, true, -1},
    {{"viking", NULL}, re_viking, false, true, false, -1},
    {{"jais", NULL}, re_gpt2, false, false, false, -1},
    {{"tekken", NULL}, re_tekken, true, true, false, 1},
    {{"gpt-4o", "llama4", "kanana2", "talkie", NULL}, re_gpt4o, false, true, false, -1},
    {{"smollm", NULL}, re_starcoder, false, true, false, -1},
    {{"codeshell", NULL}, re_starcoder, false, false, false, -1},
    {{"bloom", NULL}, re_bloom, false, false, false, -1},
    {{"gpt3-finnish", NULL}, re_bloom, false, false, false, -1},
    {{"exaone", NULL}, re_starcoder, false, false, false, -1},
    {{"chameleon", NULL}, re_chameleon, false, true, false, 1},
    {{"minerva-7b", NULL}, re_starcoder, false, false, false, -1},
};

struct sp_pretokenizer {
    int n;
    pcre2_code *code[8];
};

static const pre_entry *find_entry(const char *name, bool *known) {
    *known = true;
    if (!name || !*name) return &table[0];
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        for (int k = 0; table[i].names[k]; k++)
            if (!strcmp(table[i].names[k], name)) return &table[i];
    *known = false;
    return &table[0];
}

sprout_status sp_pretokenizer_create(const char *name, sp_pretokenizer **out, sp_pretokenizer_traits *traits, bool *known) {
    *out = NULL;
    const pre_entry *e = find_entry(name, known);
    sp_pretokenizer *pre = calloc(1, sizeof *pre);
    if (!pre) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
    for (int i = 0; e->regexes[i]; i++) {
        int err;
        PCRE2_SIZE at;
        pcre2_code *code = pcre2_compile((PCRE2_SPTR)e->regexes[i], PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP | PCRE2_DOLLAR_ENDONLY, &err, &at, NULL);
        if (!code) {
            PCRE2_UCHAR msg[256];
            pcre2_get_error_message(err, msg, sizeof msg);
            sp_pretokenizer_free(pre);
            return sp_fail(SPROUT_ERR_INTERNAL, "pre-tokenizer '%s': regex %d does not compile at %zu: %s", e->names[0], i,
                           (size_t)at, (const char *)msg);
        }
        pcre2_jit_compile(code, PCRE2_JIT_COMPLETE); /* without JIT the interpreter still works */
        pre->code[pre->n++] = code;
    }
    traits->canonical = e->names[0];
    traits->ignore_merges = e->ignore_merges;
    traits->clean_spaces = !e->keep_spaces;
    traits->add_bos = e->add_bos;
    traits->no_bos = e->no_bos;
    *out = pre;
    return SPROUT_OK;
}

void sp_pretokenizer_free(sp_pretokenizer *pre) {
    if (!pre) return;
    for (int i = 0; i < pre->n; i++) pcre2_code_free(pre->code[i]);
    free(pre);
}

typedef struct span_list {
    sp_span *items;
    size_t n, cap;
} span_list;

static bool push_span(span_list *l, size_t start, size_t len) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        sp_span *p = realloc(l->items, cap * sizeof *p);
        if (!p) return false;
        l->items = p;
        l->cap = cap;
    }
    l->items[l->n++] = (sp_span){start, len};
    return true;
}

/* Length of the UTF-8 character starting with byte c (text is valid). */
static size_t char_len(unsigned char c) { return c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4; }

/* Applies one regex to every span of `in`, keeping matches and the gaps. */
static sprout_status split_spans(const pcre2_code *code, pcre2_match_data *md, const char *text, const span_list *in,
                                 span_list *out) {
    out->n = 0;
    for (size_t s = 0; s < in->n; s++) {
        const PCRE2_SPTR subject = (PCRE2_SPTR)(text + in->items[s].start);
        const size_t len = in->items[s].len, base = in->items[s].start;
        size_t pos = 0, gap = 0; /* gap: start of text not yet emitted */
        while (pos < len) {
            /* the text was validated once; the spans never cut a character */
            int rc = pcre2_match(code, subject, len, pos, PCRE2_NO_UTF_CHECK, md, NULL);
            if (rc == PCRE2_ERROR_NOMATCH) break;
            if (rc < 0) return sp_fail(SPROUT_ERR_INTERNAL, "pre-tokenizer regex failed (PCRE2 error %d)", rc);
            const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
            size_t m0 = ov[0], m1 = ov[1];
            if (m1 == m0) { /* an empty match splits nothing: step over a character */
                pos = m0 + char_len(subject[m0]);
                continue;
            }
            if (m0 > gap && !push_span(out, base + gap, m0 - gap)) goto oom;
            if (!push_span(out, base + m0, m1 - m0)) goto oom;
            gap = pos = m1;
        }
        if (gap < len && !push_span(out, base + gap, len - gap)) goto oom;
    }
    return SPROUT_OK;
oom:
    return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory splitting text");
}

sprout_status sp_pretokenize(const sp_pretokenizer *pre, const char *text, size_t len, sp_span **spans, size_t *n_spans) {
    span_list a = {0}, b = {0};
    sprout_status st = SPROUT_OK;
    pcre2_match_data *md = pcre2_match_data_create(4, NULL);
    if (!md || (len && !push_span(&a, 0, len))) st = sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
    for (int i = 0; st == SPROUT_OK && i < pre->n; i++) {
        st = split_spans(pre->code[i], md, text, &a, &b);
        span_list t = a;
        a = b;
        b = t;
    }
    pcre2_match_data_free(md);
    free(b.items);
    if (st != SPROUT_OK) {
        free(a.items);
        return st;
    }
    *spans = a.items;
    *n_spans = a.n;
    return SPROUT_OK;
}
