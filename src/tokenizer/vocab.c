#include "tokenizer/vocab.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/utf8.h"
#include "tokenizer/pretokenize.h"

/* tokenizer.ggml.token_type values */
enum { TT_UNDEFINED = 0, TT_NORMAL = 1, TT_UNKNOWN = 2, TT_CONTROL = 3, TT_USER_DEFINED = 4, TT_UNUSED = 5, TT_BYTE = 6 };

static uint32_t attr_of_type(int64_t type) {
    switch (type) {
    case TT_NORMAL: return SPROUT_TOKEN_ATTR_NORMAL;
    case TT_UNKNOWN: return SPROUT_TOKEN_ATTR_UNKNOWN;
    case TT_CONTROL: return SPROUT_TOKEN_ATTR_CONTROL;
    case TT_USER_DEFINED: return SPROUT_TOKEN_ATTR_USER_DEFINED;
    case TT_UNUSED: return SPROUT_TOKEN_ATTR_UNUSED;
    case TT_BYTE: return SPROUT_TOKEN_ATTR_BYTE;
    default: return SPROUT_TOKEN_ATTR_UNDEFINED;
    }
}

/* --- the GPT-2 byte <-> unicode map ------------------------------------------------
 * Printable bytes stand for themselves ('!'..'~', '¡'..'¬', '®'..'ÿ'); the
 * other 68 take the code points 256, 257, ... in byte order. */
static bool byte_is_printable(int b) { return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF); }

static uint32_t byte_code_point(uint8_t byte) {
    if (byte_is_printable(byte)) return byte;
    uint32_t n = 0;
    for (int b = 0; b < byte; b++) n += !byte_is_printable(b);
    return 256 + n;
}

int sp_byte_to_unicode(uint8_t byte, char out[2]) {
    uint32_t cp = byte_code_point(byte);
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    out[0] = (char)(0xC0 | (cp >> 6));
    out[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
}

int sp_unicode_to_byte(uint32_t cpt) {
    if (cpt < 256) return byte_is_printable((int)cpt) ? (int)cpt : -1;
    uint32_t n = cpt - 256;
    for (int b = 0; b < 256; b++)
        if (!byte_is_printable(b) && n-- == 0) return b;
    return -1;
}

int32_t sp_vocab_byte_token(const sp_vocab *v, uint8_t byte) {
    char buf[8];
    if (v->kind == SP_VOCAB_SPM) {
        static const char hex[] = "0123456789ABCDEF";
        char name[6] = {'<', '0', 'x', hex[byte >> 4], hex[byte & 15], '>'};
        int32_t id = sp_vocab_find(v, name, 6);
        if (id >= 0) return id;
        buf[0] = (char)byte;
        return sp_vocab_find(v, buf, 1);
    }
    int n = sp_byte_to_unicode(byte, buf);
    return sp_vocab_find(v, buf, (size_t)n);
}

/* --- decoded pieces ---------------------------------------------------------------- */

static uint32_t decode_cp(const unsigned char *s, size_t len) {
    if (len == 1) return s[0];
    if (len == 2) return (uint32_t)(s[0] & 0x1F) << 6 | (s[1] & 0x3F);
    if (len == 3) return (uint32_t)(s[0] & 0x0F) << 12 | (uint32_t)(s[1] & 0x3F) << 6 | (s[2] & 0x3F);
    return (uint32_t)(s[0] & 0x07) << 18 | (uint32_t)(s[1] & 0x3F) << 12 | (uint32_t)(s[2] & 0x3F) << 6 | (s[3] & 0x3F);
}

static int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

/* The bytes token `id` stands for, rendered with special text shown (the
 * tokenizer hides control text at query time). */
static sprout_status make_piece(sp_vocab *v, int32_t id) {
    const sp_token_text t = v->text[id];
    const uint32_t attr = v->attr[id];
    sp_token_text *out = &v->piece[id];
    if (attr & (SPROUT_TOKEN_ATTR_CONTROL | SPROUT_TOKEN_ATTR_UNKNOWN | SPROUT_TOKEN_ATTR_USER_DEFINED)) {
        *out = t;
        return SPROUT_OK;
    }
    if (v->kind != SP_VOCAB_BPE && (attr & SPROUT_TOKEN_ATTR_BYTE)) {
        int hi = t.len == 6 ? hex_value(t.ptr[3]) : -1, lo = t.len == 6 ? hex_value(t.ptr[4]) : -1;
        char *b = sp_arena_alloc(&v->arena, 1);
        if (!b) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
        if (hi < 0 || lo < 0 || memcmp(t.ptr, "<0x", 3) != 0) { /* not <0xNN>: the text itself */
            *out = t;
            return SPROUT_OK;
        }
        b[0] = (char)(hi << 4 | lo);
        *out = (sp_token_text){b, 1};
        return SPROUT_OK;
    }
    if (!(attr & SPROUT_TOKEN_ATTR_NORMAL)) {
        *out = (sp_token_text){"", 0}; /* unused and undefined tokens print nothing */
        return SPROUT_OK;
    }
    char *buf = sp_arena_alloc(&v->arena, t.len + 1);
    if (!buf) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
    size_t n = 0;
    const unsigned char *s = (const unsigned char *)t.ptr;
    for (size_t i = 0; i < t.len;) {
        size_t cl = sp_utf8_valid_prefix_len(s + i, t.len - i);
        if (cl == 0) { /* not UTF-8: copy the byte as it is */
            buf[n++] = (char)s[i++];
            continue;
        }
        if (v->kind == SP_VOCAB_BPE) {
            int b = sp_unicode_to_byte(decode_cp(s + i, cl));
            if (b >= 0) buf[n++] = (char)b;
            else {
                memcpy(buf + n, s + i, cl);
                n += cl;
            }
        } else if (cl == 3 && s[i] == 0xE2 && s[i + 1] == 0x96 && s[i + 2] == 0x81) { /* ▁ */
            buf[n++] = ' ';
        } else {
            memcpy(buf + n, s + i, cl);
            n += cl;
        }
        i += cl;
    }
    *out = (sp_token_text){buf, (uint32_t)n};
    return SPROUT_OK;
}

/* --- loading ------------------------------------------------------------------------ */

static bool str_eq(const char *s, size_t n, const char *lit) { return n == strlen(lit) && memcmp(s, lit, n) == 0; }

/* Reads an optional special-token id key; ids past the vocabulary keep the
 * default (as llama.cpp does, with a warning). */
static void read_special(const sprout_gguf *g, const char *key, int32_t n_tokens, int32_t *id) {
    const sprout_gguf_value *v = sprout_gguf_find(g, key);
    uint64_t u;
    if (v && sprout_gguf_value_u64(v, &u) == SPROUT_OK && u < (uint64_t)n_tokens) *id = (int32_t)u;
}

static void read_bool(const sprout_gguf *g, const char *key, bool *out) {
    const sprout_gguf_value *v = sprout_gguf_find(g, key);
    bool b;
    if (v && sprout_gguf_value_bool(v, &b) == SPROUT_OK) *out = b;
}

static bool push_eog(sp_vocab *v, int32_t id) {
    if (id < 0) return true;
    for (int32_t i = 0; i < v->n_eog; i++)
        if (v->eog[i] == id) return true;
    int32_t *p = realloc(v->eog, (size_t)(v->n_eog + 1) * sizeof *p);
    if (!p) return false;
    v->eog = p;
    v->eog[v->n_eog++] = id;
    return true;
}

/* Texts that mark the end of a turn in common chat formats; tokens with
 * them become control tokens and end generation (llama.cpp does the same,
 * as converters do not always label them). */
static const char *const eot_texts[] = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<EOT>",
                                        "<｜end▁of▁sentence｜>"};
static const char *const eog_texts[] = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|eom_id|>",
                                        "<EOT>", "<|return|>", "<|call|>"};

/* OpenAI's harmony (gpt-oss's o200k_harmony vocabulary, known by its
 * <|return|> and <|call|>), as llama.cpp reads it: <|end|> closes a
 * message, not the reply, so it neither ends generation nor hides; the
 * headers' markers show too, so that the reply's channels can be told
 * apart (server/reasoning.c). */
static void harmony_tokens(sp_vocab *v) {
    if (sp_vocab_find(v, "<|return|>", 10) < 0 || sp_vocab_find(v, "<|call|>", 8) < 0) return;
    static const char *const shown[] = {"<|end|>", "<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"};
    for (size_t i = 0; i < sizeof shown / sizeof shown[0]; i++) {
        const int32_t id = sp_vocab_find(v, shown[i], strlen(shown[i]));
        if (id >= 0) v->attr[id] = (v->attr[id] & ~(uint32_t)SPROUT_TOKEN_ATTR_CONTROL) | SPROUT_TOKEN_ATTR_USER_DEFINED;
    }
    const int32_t end = sp_vocab_find(v, "<|end|>", 7);
    int32_t kept = 0;
    for (int32_t i = 0; i < v->n_eog; i++)
        if (v->eog[i] != end) v->eog[kept++] = v->eog[i];
    v->n_eog = kept;
}

/* Fill-in-the-middle tokens: the keys, the older prefix/suffix/middle
 * keys, else the texts code models use (Qwen, StarCoder, DeepSeek-Coder,
 * CodeLlama, CodeGemma ...), as llama.cpp finds them. */
static void find_fim_tokens(const sprout_gguf *g, sp_vocab *v) {
    static const char *const older[3] = {"tokenizer.ggml.prefix_token_id", "tokenizer.ggml.suffix_token_id", "tokenizer.ggml.middle_token_id"};
    static const char *const texts[3][6] = {
        {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>", "<PRE>", "▁<PRE>"},
        {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>", "<SUF>", "▁<SUF>"},
        {"<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>", "<MID>", "▁<MID>"},
    };
    for (int k = 0; k < 3; k++) {
        int32_t *id = &v->special[SPROUT_SPECIAL_FIM_PRE + k];
        if (*id < 0) read_special(g, older[k], v->n_tokens, id);
        for (size_t i = 0; *id < 0 && i < sizeof texts[k] / sizeof texts[k][0]; i++) *id = sp_vocab_find(v, texts[k][i], strlen(texts[k][i]));
    }
}

static sprout_status find_turn_tokens(sp_vocab *v) {
    for (size_t i = 0; v->special[SPROUT_SPECIAL_EOT] < 0 && i < sizeof eot_texts / sizeof eot_texts[0]; i++)
        v->special[SPROUT_SPECIAL_EOT] = sp_vocab_find(v, eot_texts[i], strlen(eot_texts[i]));
    if (v->special[SPROUT_SPECIAL_EOM] < 0) v->special[SPROUT_SPECIAL_EOM] = sp_vocab_find(v, "<|eom_id|>", 10);
    bool ok = true;
    for (size_t i = 0; i < sizeof eog_texts / sizeof eog_texts[0]; i++) {
        int32_t id = sp_vocab_find(v, eog_texts[i], strlen(eog_texts[i]));
        if (id >= 0) v->attr[id] = (v->attr[id] & ~SPROUT_TOKEN_ATTR_NORMAL) | SPROUT_TOKEN_ATTR_CONTROL;
        ok = ok && push_eog(v, id);
    }
    for (int which = SPROUT_SPECIAL_EOT; which <= SPROUT_SPECIAL_EOM; which++) {
        int32_t id = v->special[which];
        if (id >= 0) v->attr[id] = (v->attr[id] & ~SPROUT_TOKEN_ATTR_NORMAL) | SPROUT_TOKEN_ATTR_CONTROL;
    }
    ok = ok && push_eog(v, v->special[SPROUT_SPECIAL_EOS]) && push_eog(v, v->special[SPROUT_SPECIAL_EOT]) &&
         push_eog(v, v->special[SPROUT_SPECIAL_EOM]);
    harmony_tokens(v);
    return ok ? SPROUT_OK : sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
}

/* The tokens matched in raw text before tokenizing, longest first (ties in
 * id order), so that a long special token wins over its prefixes. A counting
 * sort by length keeps this linear in the vocabulary. */
static sprout_status collect_special_tokens(sp_vocab *v) {
    const uint32_t mask = SPROUT_TOKEN_ATTR_CONTROL | SPROUT_TOKEN_ATTR_USER_DEFINED | SPROUT_TOKEN_ATTR_UNKNOWN;
    int32_t n = 0;
    for (int32_t id = 0; id < v->n_tokens; id++) n += (v->attr[id] & mask) != 0;
    v->special_tokens = sp_arena_alloc(&v->arena, (size_t)n * sizeof(int32_t) + 1);
    size_t *slot = calloc((size_t)v->max_token_len + 2, sizeof *slot);
    if (!v->special_tokens || !slot) {
        free(slot);
        return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    /* slot[k]: where tokens of length max_len - k start */
    const uint32_t max_len = v->max_token_len;
    for (int32_t id = 0; id < v->n_tokens; id++)
        if (v->attr[id] & mask) slot[max_len - v->text[id].len + 1]++;
    for (uint32_t k = 1; k <= max_len + 1; k++) slot[k] += slot[k - 1];
    for (int32_t id = 0; id < v->n_tokens; id++)
        if (v->attr[id] & mask) v->special_tokens[slot[max_len - v->text[id].len]++] = id;
    v->n_special_tokens = n;
    free(slot);
    return SPROUT_OK;
}

static bool contains_ci(const char *s, size_t n, const char *needle) {
    size_t m = strlen(needle);
    for (size_t i = 0; i + m <= n; i++) {
        size_t k = 0;
        while (k < m && (s[i + k] | 0x20) == (needle[k] | 0x20)) k++;
        if (k == m) return true;
    }
    return false;
}

/* Per-model token attributes the files do not carry (llama.cpp's list). */
static void model_specific_attrs(const sprout_gguf *g, sp_vocab *v) {
    const char *name = "";
    size_t name_len = 0;
    sprout_gguf_get_str(g, "general.name", &name, &name_len);
    if (strstr(v->pre_name, "jina-v2-de") || strstr(v->pre_name, "jina-v2-es") || strstr(v->pre_name, "jina-v2-code")) {
        int32_t id = sp_vocab_find(v, "<mask>", 6);
        if (id >= 0) v->attr[id] |= SPROUT_TOKEN_ATTR_LSTRIP;
    } else if (contains_ci(name, name_len, "phi-3") || contains_ci(name, name_len, "phi3")) {
        for (int32_t i = 0; i < v->n_special_tokens; i++) v->attr[v->special_tokens[i]] |= SPROUT_TOKEN_ATTR_RSTRIP;
        int32_t id = sp_vocab_find(v, "</s>", 4);
        if (id >= 0) v->attr[id] |= SPROUT_TOKEN_ATTR_RSTRIP;
        static const char *const keep[] = {"<unk>", "<s>", "<|endoftext|>"};
        for (size_t i = 0; i < 3; i++) {
            id = sp_vocab_find(v, keep[i], strlen(keep[i]));
            if (id >= 0) v->attr[id] &= ~(uint32_t)SPROUT_TOKEN_ATTR_RSTRIP;
        }
    }
}

static sprout_status load_tokens(const sprout_gguf *g, sp_vocab *v) {
    const sprout_gguf_value *tokens;
    uint64_t n;
    sprout_gguf_type str_type = SPROUT_GGUF_STRING;
    sprout_status st = sprout_gguf_get_array(g, "tokenizer.ggml.tokens", &tokens, &str_type, &n);
    if (st != SPROUT_OK) return st;
    if (n == 0 || n > INT32_MAX) return sp_fail(SPROUT_ERR_FORMAT, "tokenizer.ggml.tokens has %" PRIu64 " entries", n);
    v->n_tokens = (int32_t)n;
    v->text = sp_arena_alloc(&v->arena, n * sizeof *v->text);
    v->piece = sp_arena_alloc(&v->arena, n * sizeof *v->piece);
    v->score = sp_arena_alloc(&v->arena, n * sizeof *v->score);
    v->attr = sp_arena_alloc(&v->arena, n * sizeof *v->attr);
    if (!v->text || !v->piece || !v->score || !v->attr || !sp_strmap_init(&v->token_index, n))
        return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory for %" PRIu64 " tokens", n);

    const sprout_gguf_value *scores = sprout_gguf_find(g, "tokenizer.ggml.scores");
    const sprout_gguf_value *types = sprout_gguf_find(g, "tokenizer.ggml.token_type");
    if (scores && (sprout_gguf_value_type(scores) != SPROUT_GGUF_ARRAY || sprout_gguf_array_len(scores) != n))
        return sp_fail(SPROUT_ERR_FORMAT, "tokenizer.ggml.scores must be an array of %" PRIu64 " numbers", n);
    if (types && (sprout_gguf_value_type(types) != SPROUT_GGUF_ARRAY || sprout_gguf_array_len(types) != n))
        return sp_fail(SPROUT_ERR_FORMAT, "tokenizer.ggml.token_type must be an array of %" PRIu64 " integers", n);

    for (uint64_t i = 0; i < n; i++) {
        const char *s;
        size_t len;
        sprout_gguf_array_str(tokens, i, &s, &len);
        if (len > UINT32_MAX / 2) return sp_fail(SPROUT_ERR_FORMAT, "token %" PRIu64 " is %zu bytes long", i, len);
        if (len == 0) { /* as llama.cpp: an empty text would match everywhere */
            char tmp[32];
            int m = snprintf(tmp, sizeof tmp, "[EMPTY_%" PRIu64 "]", i);
            s = sp_arena_strndup(&v->arena, tmp, (size_t)m);
            if (!s) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
            len = (size_t)m;
        }
        v->text[i] = (sp_token_text){s, (uint32_t)len};
        if (len > v->max_token_len) v->max_token_len = (uint32_t)len;
        double score = 0;
        if (scores && sprout_gguf_array_f64(scores, i, &score) != SPROUT_OK)
            return sp_fail(SPROUT_ERR_FORMAT, "tokenizer.ggml.scores[%" PRIu64 "] is not a number", i);
        v->score[i] = (float)score;
        int64_t type = TT_NORMAL;
        if (types && sprout_gguf_array_i64(types, i, &type) != SPROUT_OK)
            return sp_fail(SPROUT_ERR_FORMAT, "tokenizer.ggml.token_type[%" PRIu64 "] is not an integer", i);
        v->attr[i] = attr_of_type(type);
    }
    /* the last of duplicate texts wins, as in llama.cpp's map */
    for (int64_t i = (int64_t)n - 1; i >= 0; i--)
        if (sp_strmap_insert(&v->token_index, v->text[i].ptr, v->text[i].len, i, NULL) < 0)
            return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
    return SPROUT_OK;
}

static sprout_status load_merges(const sprout_gguf *g, sp_vocab *v) {
    const sprout_gguf_value *merges;
    uint64_t n;
    sprout_gguf_type str_type = SPROUT_GGUF_STRING;
    sprout_status st = sprout_gguf_get_array(g, "tokenizer.ggml.merges", &merges, &str_type, &n);
    if (st != SPROUT_OK) return st;
    if (!sp_strmap_init(&v->merge_rank, n)) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory for merges");
    for (uint64_t i = 0; i < n && i < INT32_MAX; i++) {
        const char *s;
        size_t len;
        sprout_gguf_array_str(merges, i, &s, &len);
        /* "left right", split at the first space after the first byte; the
         * first occurrence of a pair keeps its rank */
        if (len < 3 || !memchr(s + 1, ' ', len - 1)) continue;
        if (sp_strmap_insert(&v->merge_rank, s, len, (int64_t)i, NULL) < 0)
            return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    return SPROUT_OK;
}

sprout_status sp_vocab_load(const sprout_gguf *g, sp_vocab *v, char *warning, size_t warning_cap) {
    memset(v, 0, sizeof *v);
    if (warning && warning_cap) warning[0] = 0;
    for (int i = 0; i < SPROUT_SPECIAL_COUNT; i++) v->special[i] = -1;

    const char *model;
    size_t model_len;
    sprout_status st = sprout_gguf_get_str(g, "tokenizer.ggml.model", &model, &model_len);
    if (st == SPROUT_ERR_NOT_FOUND) return sp_fail(SPROUT_ERR_NOT_FOUND, "the model has no tokenizer (tokenizer.ggml.model is missing)");
    if (st != SPROUT_OK) return st;

    int32_t *sp = v->special;
    if (str_eq(model, model_len, "llama")) {
        v->kind = SP_VOCAB_SPM;
        sp[SPROUT_SPECIAL_BOS] = 1, sp[SPROUT_SPECIAL_EOS] = 2, sp[SPROUT_SPECIAL_UNK] = 0;
        v->add_space_prefix = true, v->add_bos = true;
    } else if (str_eq(model, model_len, "bert")) {
        v->kind = SP_VOCAB_WPM;
        sp[SPROUT_SPECIAL_BOS] = 101, sp[SPROUT_SPECIAL_UNK] = 100, sp[SPROUT_SPECIAL_SEP] = 102;
        sp[SPROUT_SPECIAL_PAD] = 0, sp[SPROUT_SPECIAL_MASK] = 103;
        v->add_bos = true, v->clean_spaces = true;
    } else if (str_eq(model, model_len, "gpt2")) {
        v->kind = SP_VOCAB_BPE;
        sp[SPROUT_SPECIAL_BOS] = 11, sp[SPROUT_SPECIAL_EOS] = 11;
        v->clean_spaces = true;
    } else {
        return sp_fail(SPROUT_ERR_UNSUPPORTED, "tokenizer model '%.*s' is not supported (sprout reads llama, gpt2 and bert)",
                       (int)(model_len > 64 ? 64 : model_len), model);
    }

    if ((st = load_tokens(g, v)) != SPROUT_OK) goto fail;
    for (int i = 0; i < SPROUT_SPECIAL_COUNT; i++)
        if (sp[i] >= v->n_tokens) sp[i] = -1; /* defaults that do not fit a small vocabulary */

    if (v->kind == SP_VOCAB_BPE) {
        const char *pre = "";
        size_t pre_len = 0;
        sprout_gguf_get_str(g, "tokenizer.ggml.pre", &pre, &pre_len);
        snprintf(v->pre_name, sizeof v->pre_name, "%.*s", (int)(pre_len < sizeof v->pre_name ? pre_len : sizeof v->pre_name - 1), pre);
        sp_pretokenizer_traits traits;
        bool known;
        if ((st = sp_pretokenizer_create(v->pre_name, &v->pre, &traits, &known)) != SPROUT_OK) goto fail;
        if (!known && warning)
            snprintf(warning, warning_cap, "unknown pre-tokenizer '%s': using the default one (tokenization may differ from the model's)",
                     v->pre_name);
        snprintf(v->pre_name, sizeof v->pre_name, "%s", traits.canonical);
        v->ignore_merges = traits.ignore_merges;
        v->clean_spaces = traits.clean_spaces;
        if (traits.add_bos >= 0) v->add_bos = traits.add_bos;
        if (traits.no_bos) sp[SPROUT_SPECIAL_BOS] = -1;
        if ((st = load_merges(g, v)) != SPROUT_OK) goto fail;
    }
    read_bool(g, "tokenizer.ggml.add_space_prefix", &v->add_space_prefix);
    read_bool(g, "tokenizer.ggml.remove_extra_whitespaces", &v->remove_extra_whitespaces);
    /* as llama.cpp: both on unless the file says otherwise, and accents
     * follow lowercasing unless said apart (Hugging Face's BertNormalizer) */
    v->lowercase = true;
    read_bool(g, "tokenizer.ggml.normalizer.lowercase", &v->lowercase);
    v->strip_accents = v->lowercase;
    read_bool(g, "tokenizer.ggml.normalizer.strip_accents", &v->strip_accents);

    static const char *const keys[SPROUT_SPECIAL_COUNT] = {
        [SPROUT_SPECIAL_BOS] = "tokenizer.ggml.bos_token_id",     [SPROUT_SPECIAL_EOS] = "tokenizer.ggml.eos_token_id",
        [SPROUT_SPECIAL_EOT] = "tokenizer.ggml.eot_token_id",     [SPROUT_SPECIAL_EOM] = "tokenizer.ggml.eom_token_id",
        [SPROUT_SPECIAL_UNK] = "tokenizer.ggml.unknown_token_id", [SPROUT_SPECIAL_SEP] = "tokenizer.ggml.seperator_token_id",
        [SPROUT_SPECIAL_PAD] = "tokenizer.ggml.padding_token_id", [SPROUT_SPECIAL_CLS] = "tokenizer.ggml.cls_token_id",
        [SPROUT_SPECIAL_MASK] = "tokenizer.ggml.mask_token_id",
        [SPROUT_SPECIAL_FIM_PRE] = "tokenizer.ggml.fim_pre_token_id", [SPROUT_SPECIAL_FIM_SUF] = "tokenizer.ggml.fim_suf_token_id",
        [SPROUT_SPECIAL_FIM_MID] = "tokenizer.ggml.fim_mid_token_id",
    };
    for (int i = 0; i < SPROUT_SPECIAL_COUNT; i++)
        if (keys[i]) read_special(g, keys[i], v->n_tokens, &sp[i]);
    if (sp[SPROUT_SPECIAL_CLS] < 0 && v->kind == SP_VOCAB_WPM) sp[SPROUT_SPECIAL_CLS] = sp[SPROUT_SPECIAL_BOS];
    read_bool(g, "tokenizer.ggml.add_bos_token", &v->add_bos);
    read_bool(g, "tokenizer.ggml.add_eos_token", &v->add_eos);
    if (sp[SPROUT_SPECIAL_BOS] < 0) v->add_bos = false;
    if (sp[SPROUT_SPECIAL_EOS] < 0) v->add_eos = false;

    find_fim_tokens(g, v);
    if ((st = find_turn_tokens(v)) != SPROUT_OK) goto fail;
    if ((st = collect_special_tokens(v)) != SPROUT_OK) goto fail;
    model_specific_attrs(g, v);
    for (int32_t id = 0; id < v->n_tokens; id++)
        if ((st = make_piece(v, id)) != SPROUT_OK) goto fail;
    if (v->kind == SP_VOCAB_SPM) sp[SPROUT_SPECIAL_NEWLINE] = sp_vocab_byte_token(v, '\n');
    else if (v->kind == SP_VOCAB_WPM) sp[SPROUT_SPECIAL_NEWLINE] = sp[SPROUT_SPECIAL_PAD];
    else sp[SPROUT_SPECIAL_NEWLINE] = sp_vocab_byte_token(v, '\n'); /* "Ċ" */
    return SPROUT_OK;
fail:
    sp_vocab_free(v);
    return st;
}

void sp_vocab_free(sp_vocab *v) {
    if (!v) return;
    sp_pretokenizer_free(v->pre);
    sp_strmap_free(&v->token_index);
    sp_strmap_free(&v->merge_rank);
    free(v->eog);
    sp_arena_free(&v->arena);
    memset(v, 0, sizeof *v);
}
