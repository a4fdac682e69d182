/* sprout info MODEL [--json] [--tensors] [--metadata]
 *
 * Everything is gathered once into a JSON object; --json prints it, the
 * default prints the same facts for a person. */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "files.h"
#include "json/json_util.h"
#include "options.h"
#include "sprout.h"
#include "weight_reads.h"

enum { ARRAY_PREVIEW = 16 }; /* elements shown of a long metadata array */

/* name shown, and the metadata key (llama.cpp's spelling, "seperator" included) */
static const char *const special_tokens[][2] = {
    {"bos", "bos_token_id"},       {"eos", "eos_token_id"},     {"eot", "eot_token_id"},
    {"eom", "eom_token_id"},       {"unk", "unknown_token_id"}, {"sep", "seperator_token_id"},
    {"pad", "padding_token_id"},   {"cls", "cls_token_id"},     {"mask", "mask_token_id"},
};

/* The value of "ARCH.suffix" as JSON (null when absent). Per-layer arrays
 * (some models vary heads or FFN width by layer) come out whole. */
static json_t *arch_key(const sprout_gguf *g, const char *arch, const char *suffix) {
    char key[256];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    const sprout_gguf_value *v = sprout_gguf_find(g, key);
    return v ? json_gguf_value(v, UINT64_MAX, true) : json_null();
}

static json_t *key_json(const sprout_gguf *g, const char *key) {
    const sprout_gguf_value *v = sprout_gguf_find(g, key);
    return v ? json_gguf_value(v, UINT64_MAX, true) : json_null();
}

/* --- gathering ------------------------------------------------------------------------ */

static json_t *tokenizer_json(const sprout_gguf *g, const char *arch) {
    json_t *tok = json_object();
    json_object_set_new(tok, "model", key_json(g, "tokenizer.ggml.model"));
    json_object_set_new(tok, "pre", key_json(g, "tokenizer.ggml.pre"));
    uint64_t n_vocab = 0;
    if (sprout_gguf_get_array(g, "tokenizer.ggml.tokens", NULL, NULL, &n_vocab) == SPROUT_OK) {
        json_object_set_new(tok, "vocab_size", json_integer((json_int_t)n_vocab));
    } else {
        /* no vocabulary in the file: fall back to the declared size */
        json_object_set_new(tok, "vocab_size", arch_key(g, arch, "vocab_size"));
    }
    uint64_t n_merges = 0;
    if (sprout_gguf_get_array(g, "tokenizer.ggml.merges", NULL, NULL, &n_merges) == SPROUT_OK)
        json_object_set_new(tok, "merges", json_integer((json_int_t)n_merges));
    json_object_set_new(tok, "add_bos_token", key_json(g, "tokenizer.ggml.add_bos_token"));
    json_object_set_new(tok, "add_eos_token", key_json(g, "tokenizer.ggml.add_eos_token"));

    json_t *special = json_object();
    for (size_t i = 0; i < sizeof special_tokens / sizeof special_tokens[0]; i++) {
        char key[64];
        snprintf(key, sizeof key, "tokenizer.ggml.%s", special_tokens[i][1]);
        int64_t id;
        const sprout_gguf_value *v = sprout_gguf_find(g, key);
        /* converters write -1 (as u32: 4294967295) for "none" */
        if (v && sprout_gguf_value_i64(v, &id) == SPROUT_OK && id >= 0 && id < UINT32_MAX &&
            (n_vocab == 0 || (uint64_t)id < n_vocab))
            json_object_set_new(special, special_tokens[i][0], json_integer((json_int_t)id));
    }
    json_object_set_new(tok, "special_tokens", special);
    return tok;
}

static json_t *tensors_json(const sprout_gguf *g, bool list, json_t **by_type_out) {
    json_t *by_type = json_object(), *list_json = list ? json_array() : NULL;
    for (int64_t i = 0; i < sprout_gguf_tensor_count(g); i++) {
        const char *type = sprout_type_name(sprout_gguf_tensor_type(g, i));
        json_t *count = json_object_get(by_type, type);
        json_object_set_new(by_type, type, json_integer(count ? json_integer_value(count) + 1 : 1));
        if (!list) continue;
        json_t *shape = json_array();
        for (int d = 0; d < sprout_gguf_tensor_n_dims(g, i); d++)
            json_array_append_new(shape, json_integer((json_int_t)sprout_gguf_tensor_dim(g, i, d)));
        json_array_append_new(list_json, json_pack("{s:s, s:s, s:o, s:I, s:I}", "name", sprout_gguf_tensor_name(g, i), "type",
                                                   type, "shape", shape, "bytes",
                                                   (json_int_t)sprout_gguf_tensor_bytes(g, i), "offset",
                                                   (json_int_t)sprout_gguf_tensor_file_offset(g, i)));
    }
    *by_type_out = by_type;
    return list_json;
}

static json_t *gather(const char *path, const sprout_gguf *g, bool with_tensors, bool with_metadata) {
    const char *arch_str = "";
    size_t arch_len = 0;
    sprout_gguf_get_str(g, "general.architecture", &arch_str, &arch_len);
    char arch[128];
    snprintf(arch, sizeof arch, "%.*s", (int)(arch_len < sizeof arch ? arch_len : sizeof arch - 1), arch_str);

    json_t *info = json_object();
    json_object_set_new(info, "file", json_string_lossy(path, strlen(path)));
    json_object_set_new(info, "file_size", json_integer((json_int_t)sprout_gguf_file_size(g)));
    json_object_set_new(info, "gguf_version", json_integer(sprout_gguf_version(g)));
    json_object_set_new(info, "split_count", json_integer(sprout_gguf_split_count(g)));
    json_object_set_new(info, "alignment", json_integer(sprout_gguf_alignment(g)));
    json_object_set_new(info, "architecture", arch_len ? json_string_lossy(arch_str, arch_len) : json_null());
    json_object_set_new(info, "name", key_json(g, "general.name"));
    uint32_t ftype;
    const char *ftype_name = NULL;
    if (sprout_gguf_get_u32(g, "general.file_type", &ftype) == SPROUT_OK) ftype_name = sprout_file_type_name(ftype);
    json_object_set_new(info, "file_type", ftype_name ? json_string(ftype_name) : key_json(g, "general.file_type"));

    json_t *by_type;
    json_t *tensor_list = tensors_json(g, with_tensors, &by_type);
    cli_weight_reads reads;
    cli_weight_reads_of(g, &reads);
    json_object_set_new(info, "parameters", json_integer((json_int_t)reads.params));
    json_object_set_new(info, "tensor_count", json_integer((json_int_t)sprout_gguf_tensor_count(g)));
    json_object_set_new(info, "tensor_types", by_type);

    static const char *const hparams[][2] = {
        {"context_length", "context_length"},       {"embedding_length", "embedding_length"},
        {"feed_forward_length", "feed_forward_length"}, {"head_count", "attention.head_count"},
        {"head_count_kv", "attention.head_count_kv"}, {"block_count", "block_count"},
        {"key_length", "attention.key_length"},      {"value_length", "attention.value_length"},
        {"layer_norm_rms_epsilon", "attention.layer_norm_rms_epsilon"},
        {"layer_norm_epsilon", "attention.layer_norm_epsilon"},
        {"sliding_window", "attention.sliding_window"}, {"expert_count", "expert_count"},
        {"expert_used_count", "expert_used_count"},    {"expert_feed_forward_length", "expert_feed_forward_length"},
        {"expert_shared_feed_forward_length", "expert_shared_feed_forward_length"},
    };
    for (size_t i = 0; i < sizeof hparams / sizeof hparams[0]; i++)
        json_object_set_new(info, hparams[i][0], arch_key(g, arch, hparams[i][1]));
    /* what one token reads: the experts' share by used / count */
    json_object_set_new(info, "active_parameters", json_integer((json_int_t)reads.active_params));
    json_object_set_new(info, "active_bytes_per_token", json_integer((json_int_t)reads.active_bytes));
    json_object_set_new(info, "shared_expert", json_boolean(reads.shared_expert));

    json_t *rope = json_object();
    json_object_set_new(rope, "dimension_count", arch_key(g, arch, "rope.dimension_count"));
    json_t *base = arch_key(g, arch, "rope.freq_base");
    json_object_set_new(rope, "freq_base", base);
    json_object_set_new(rope, "scaling_type", arch_key(g, arch, "rope.scaling.type"));
    json_object_set_new(rope, "scaling_factor", arch_key(g, arch, "rope.scaling.factor"));
    json_object_set_new(rope, "original_context_length", arch_key(g, arch, "rope.scaling.original_context_length"));
    json_object_set_new(info, "rope", rope);

    json_t *tok = tokenizer_json(g, arch);
    json_object_set(info, "vocab_size", json_object_get(tok, "vocab_size"));
    json_object_set_new(info, "tokenizer", tok);
    json_object_set_new(info, "chat_template", json_boolean(sprout_gguf_find(g, "tokenizer.chat_template") != NULL));

    if (with_metadata) {
        json_t *meta = json_object();
        for (int64_t i = 0; i < sprout_gguf_kv_count(g); i++)
            json_object_set_new(meta, sprout_gguf_kv_key(g, i), json_gguf_value(sprout_gguf_kv_value(g, i), ARRAY_PREVIEW, true));
        json_object_set_new(info, "metadata", meta);
    }
    if (tensor_list) json_object_set_new(info, "tensors", tensor_list);
    return info;
}

/* --- text rendering ---------------------------------------------------------------------- */

static void human_bytes(uint64_t n, char *out, size_t cap) {
    const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)n;
    int u = 0;
    while (v >= 1024 && u < 4) {
        v /= 1024;
        u++;
    }
    snprintf(out, cap, u ? "%.2f %s" : "%.0f %s", v, units[u]);
}

static void human_count(int64_t n, char *out, size_t cap) {
    if (n >= 1000000000) snprintf(out, cap, "%.2f B", (double)n / 1e9);
    else if (n >= 1000000) snprintf(out, cap, "%.2f M", (double)n / 1e6);
    else if (n >= 1000) snprintf(out, cap, "%.2f K", (double)n / 1e3);
    else snprintf(out, cap, "%" PRId64, n);
}

/* Prints a JSON value on one line, escaping nothing but control bytes, so
 * that long strings (chat templates) stay on one line. */
static void print_compact(const json_t *v) {
    char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(16));
    fputs(s ? s : "?", stdout);
    free(s);
}

static void print_field(const char *label, const json_t *v) {
    if (!v || json_is_null(v)) return;
    printf("  %-24s ", label);
    if (json_is_string(v)) fputs(json_string_value(v), stdout);
    else print_compact(v);
    putchar('\n');
}

/* A metadata value for a person: strings bare (with control characters
 * escaped, so a template stays on one line), long ones cut. */
static void print_meta_value(const json_t *v) {
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        size_t n = json_string_length(v), shown = n > 120 ? 120 : n;
        while (shown < n && (s[shown] & 0xC0) == 0x80) shown++; /* don't cut a character */
        for (size_t i = 0; i < shown; i++) {
            unsigned char c = (unsigned char)s[i];
            if (c == '\n') fputs("\\n", stdout);
            else if (c == '\t') fputs("\\t", stdout);
            else if (c < 0x20) printf("\\x%02x", c);
            else putchar(c);
        }
        if (shown < n) printf("... (%zu bytes)", n);
    } else if (json_is_object(v) && json_object_get(v, "element_type")) {
        const json_t *values = json_object_get(v, "values");
        printf("[");
        for (size_t i = 0; i < json_array_size(values); i++) {
            if (i) printf(", ");
            print_compact(json_array_get(values, i));
        }
        json_int_t count = json_integer_value(json_object_get(v, "count"));
        if ((json_int_t)json_array_size(values) < count) printf(", ...");
        printf("] (%" JSON_INTEGER_FORMAT " %s)", count, json_string_value(json_object_get(v, "element_type")));
    } else {
        print_compact(v);
    }
}

static void print_text(const json_t *info) {
    char size[32], params[32];
    human_bytes((uint64_t)json_integer_value(json_object_get(info, "file_size")), size, sizeof size);
    human_count((int64_t)json_integer_value(json_object_get(info, "parameters")), params, sizeof params);
    printf("%s\n", json_string_value(json_object_get(info, "file")));
    printf("  %-24s %s, GGUF v%" JSON_INTEGER_FORMAT ", %" JSON_INTEGER_FORMAT " part(s), alignment %" JSON_INTEGER_FORMAT "\n",
           "file", size, json_integer_value(json_object_get(info, "gguf_version")),
           json_integer_value(json_object_get(info, "split_count")), json_integer_value(json_object_get(info, "alignment")));
    print_field("architecture", json_object_get(info, "architecture"));
    print_field("name", json_object_get(info, "name"));
    print_field("file type", json_object_get(info, "file_type"));
    printf("  %-24s %s (%" JSON_INTEGER_FORMAT ")\n", "parameters", params, json_integer_value(json_object_get(info, "parameters")));
    const json_int_t active = json_integer_value(json_object_get(info, "active_parameters"));
    if (active != json_integer_value(json_object_get(info, "parameters"))) {
        human_count((int64_t)active, params, sizeof params);
        printf("  %-24s %s (%" JSON_INTEGER_FORMAT ")\n", "active per token", params, active);
        char read[32];
        human_bytes((uint64_t)json_integer_value(json_object_get(info, "active_bytes_per_token")), read, sizeof read);
        printf("  %-24s %s of weights\n", "read per token", read);
    }
    printf("  %-24s %" JSON_INTEGER_FORMAT " (", "tensors", json_integer_value(json_object_get(info, "tensor_count")));
    const char *type;
    json_t *count;
    bool first = true;
    json_object_foreach((json_t *)json_object_get(info, "tensor_types"), type, count) {
        printf("%s%s: %" JSON_INTEGER_FORMAT, first ? "" : ", ", type, json_integer_value(count));
        first = false;
    }
    printf(")\n");

    printf("hyperparameters\n");
    static const char *const fields[][2] = {
        {"context length", "context_length"},   {"embedding length", "embedding_length"},
        {"feed-forward length", "feed_forward_length"}, {"layers", "block_count"},
        {"attention heads", "head_count"},       {"KV heads", "head_count_kv"},
        {"key length", "key_length"},            {"value length", "value_length"},
        {"RMS norm epsilon", "layer_norm_rms_epsilon"}, {"norm epsilon", "layer_norm_epsilon"},
        {"sliding window", "sliding_window"},    {"experts", "expert_count"},
        {"experts used", "expert_used_count"},   {"expert FFN length", "expert_feed_forward_length"},
        {"shared expert FFN", "expert_shared_feed_forward_length"},
    };
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) print_field(fields[i][0], json_object_get(info, fields[i][1]));
    if (json_is_true(json_object_get(info, "shared_expert"))) printf("  %-24s yes\n", "shared expert");
    const json_t *rope = json_object_get(info, "rope");
    print_field("rope dimensions", json_object_get(rope, "dimension_count"));
    const json_t *base = json_object_get(rope, "freq_base");
    if (json_is_null(base)) printf("  %-24s (not stored; 10000 by convention)\n", "rope freq base");
    else print_field("rope freq base", base);
    print_field("rope scaling", json_object_get(rope, "scaling_type"));
    print_field("rope scaling factor", json_object_get(rope, "scaling_factor"));
    print_field("rope original context", json_object_get(rope, "original_context_length"));

    const json_t *tok = json_object_get(info, "tokenizer");
    printf("tokenizer\n");
    print_field("model", json_object_get(tok, "model"));
    print_field("pre-tokenizer", json_object_get(tok, "pre"));
    print_field("vocabulary size", json_object_get(tok, "vocab_size"));
    print_field("merges", json_object_get(tok, "merges"));
    print_field("add BOS", json_object_get(tok, "add_bos_token"));
    print_field("add EOS", json_object_get(tok, "add_eos_token"));
    const char *name;
    json_t *id;
    json_object_foreach((json_t *)json_object_get(tok, "special_tokens"), name, id) {
        char label[32];
        snprintf(label, sizeof label, "%s token", name);
        print_field(label, id);
    }
    printf("  %-24s %s\n", "chat template", json_is_true(json_object_get(info, "chat_template")) ? "yes" : "no");

    const json_t *meta = json_object_get(info, "metadata");
    if (meta) {
        printf("metadata\n");
        const char *key;
        json_t *v;
        json_object_foreach((json_t *)meta, key, v) {
            printf("  %-40s ", key);
            print_meta_value(v);
            putchar('\n');
        }
    }
    const json_t *tensors = json_object_get(info, "tensors");
    if (tensors) {
        printf("tensors\n  %-40s %-8s %-24s %12s\n", "name", "type", "shape", "bytes");
        for (size_t i = 0; i < json_array_size(tensors); i++) {
            const json_t *t = json_array_get(tensors, i);
            char shape[96] = "";
            const json_t *dims = json_object_get(t, "shape");
            for (size_t d = 0; d < json_array_size(dims); d++) {
                size_t len = strlen(shape);
                snprintf(shape + len, sizeof shape - len, "%s%" JSON_INTEGER_FORMAT, d ? " x " : "",
                         json_integer_value(json_array_get(dims, d)));
            }
            printf("  %-40s %-8s %-24s %12" JSON_INTEGER_FORMAT "\n", json_string_value(json_object_get(t, "name")),
                   json_string_value(json_object_get(t, "type")), shape, json_integer_value(json_object_get(t, "bytes")));
        }
    }
}

typedef struct info_options {
    bool json, tensors, metadata;
} info_options;

static const cli_option info_table[] = {
    CLI_OPT_FLAG("--json", offsetof(info_options, json), "print one JSON object"),
    CLI_OPT_FLAG("--tensors", offsetof(info_options, tensors), "list every tensor (name, type, shape, bytes)"),
    CLI_OPT_FLAG("--metadata", offsetof(info_options, metadata), "dump every metadata key (long arrays abbreviated)"),
};

static const cli_command info_command = {
    .name = "info",
    .usage = "info MODEL.gguf [--json] [--tensors] [--metadata]",
    .about = "The model is the argument or -m MODEL.gguf.\n",
    .shared = CLI_SHARED_MODEL,
    CLI_TABLE(info_table),
    .max_args = 1,
};

int cmd_info(int argc, char **argv) {
    cli_common o;
    info_options io = {0};
    const int status = cli_parse(&info_command, &o, &io, argc, argv);
    if (status != CLI_CONTINUE) return status;
    if (!!o.model + o.n_args != 1) return cli_usage_error(&info_command, "name one model, as the argument or with -m");
    const char *path = o.model ? o.model : o.args[0];
    const bool as_json = io.json, with_tensors = io.tensors, with_metadata = io.metadata;
    sprout_gguf *g = NULL;
    sprout_status st = sprout_gguf_open(path, &g);
    if (st != SPROUT_OK) {
        fprintf(stderr, "sprout info: %s: %s\n", sprout_status_str(st), sprout_last_error());
        return 1;
    }
    json_t *info = gather(path, g, with_tensors, with_metadata);
    int rc = 0;
    if (as_json) rc = cli_print_json(info);
    else print_text(info);
    json_decref(info);
    sprout_gguf_close(g);
    if (fflush(stdout) != 0) rc = 1;
    return rc;
}
