#include "server/tool_calls.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/text_stream.h"
#include "sprout.h"

typedef enum marker_kind { M_TOOL_CALL, M_MISTRAL, M_FUNCTION, M_DEEPSEEK_CALLS, M_DEEPSEEK_CALL, M_PYTHON_TAG, M_COUNT } marker_kind;

/* What opens a call, per format (the DeepSeek ones in its full-width bars). */
static const char *const markers[M_COUNT] = {
    "<tool_call>",
    "[TOOL_CALLS]",
    "<function=",
    "<\xEF\xBD\x9Ctool\xE2\x96\x81" "calls\xE2\x96\x81" "begin\xEF\xBD\x9C>",
    "<\xEF\xBD\x9Ctool\xE2\x96\x81" "call\xE2\x96\x81" "begin\xEF\xBD\x9C>",
    "<|python_tag|>",
};
#define DEEPSEEK_SEP "<\xEF\xBD\x9Ctool\xE2\x96\x81sep\xEF\xBD\x9C>"
#define DEEPSEEK_CALL_END "<\xEF\xBD\x9Ctool\xE2\x96\x81" "call\xE2\x96\x81" "end\xEF\xBD\x9C>"
#define DEEPSEEK_CALLS_END "<\xEF\xBD\x9Ctool\xE2\x96\x81" "calls\xE2\x96\x81" "end\xEF\xBD\x9C>"

static size_t skip_space(const char *s, size_t i, size_t n) {
    while (i < n && sp_json_space(s[i])) i++;
    return i;
}

static const char *find(const char *s, size_t n, const char *what) { return memmem(s, n, what, strlen(what)); }

/* The earliest marker in s[0..n): its offset (n if none) and kind. */
static size_t first_marker(const char *s, size_t n, marker_kind *kind) {
    size_t best = n;
    for (int k = 0; k < M_COUNT; k++) {
        const char *hit = find(s, n, markers[k]);
        if (hit && (size_t)(hit - s) < best) {
            best = (size_t)(hit - s);
            *kind = (marker_kind)k;
        }
    }
    return best;
}

/* One JSON value at the start of s[0..n); *used gets the bytes it took. */
static json_t *load_value(const char *s, size_t n, size_t *used) {
    json_error_t err;
    json_t *v = json_loadb(s, n, JSON_DISABLE_EOF_CHECK | JSON_DECODE_ANY, &err);
    *used = v ? (size_t)err.position : 0;
    return v;
}

/* {"name": ..., "arguments": ...} with arguments an object (a string of
 * JSON is decoded; other strings stay strings; none is {}). */
static json_t *make_call(const char *name, size_t name_len, json_t *arguments) {
    if (!arguments) arguments = json_object();
    else if (json_is_string(arguments)) {
        json_t *decoded = json_loadb(json_string_value(arguments), json_string_length(arguments), 0, NULL);
        if (json_is_object(decoded)) {
            json_decref(arguments);
            arguments = decoded;
        } else json_decref(decoded);
    }
    json_t *call = json_object(), *name_value = name_len ? json_stringn(name, name_len) : NULL; /* NULL: not UTF-8 */
    if (!call || !name_value || !arguments) {
        json_decref(call);
        json_decref(name_value);
        json_decref(arguments);
        return NULL;
    }
    json_object_set_new(call, "name", name_value);
    json_object_set_new(call, "arguments", arguments);
    return call;
}

/* Appends a call (NULL: a name that is no name); false if it is not one. */
static bool append_call(json_t *calls, json_t *call) { return call && json_array_append_new(calls, call) == 0; }

/* A call written as one JSON object: {"name": ..., "arguments"|"parameters": ...};
 * NULL for anything else. */
static json_t *call_of_object(const json_t *v) {
    const json_t *name = json_object_get(v, "name");
    if (!json_is_object(v) || !json_is_string(name) || json_string_length(name) == 0) return NULL;
    const json_t *args = json_object_get(v, "arguments");
    if (!args) args = json_object_get(v, "parameters");
    if (args && !json_is_object(args) && !json_is_string(args)) return NULL;
    return make_call(json_string_value(name), json_string_length(name), args ? json_deep_copy(args) : NULL);
}

/* Appends the calls a value holds (an object, or a list of objects) to
 * calls; false if it holds anything else. */
static bool add_calls_of_value(const json_t *v, json_t *calls) {
    if (json_is_array(v)) {
        if (json_array_size(v) == 0) return false;
        size_t i;
        const json_t *item;
        json_array_foreach(v, i, item) {
            if (!add_calls_of_value(item, calls) || json_is_array(item)) return false;
        }
        return true;
    }
    return append_call(calls, call_of_object(v));
}

/* JSON calls from s[0..n), separated by whitespace or ';', and nothing
 * else: Llama 3.x's form, also after <|python_tag|>. */
static bool bare_calls(const char *s, size_t n, json_t *calls) {
    size_t i = skip_space(s, 0, n), found = 0;
    while (i < n) {
        size_t used;
        json_t *v = load_value(s + i, n - i, &used);
        const bool ok = v && add_calls_of_value(v, calls);
        json_decref(v);
        if (!ok) return false;
        found++;
        i = skip_space(s, i + used, n);
        if (i < n && s[i] == ';') i = skip_space(s, i + 1, n);
    }
    return found > 0;
}

/* <tool_call>{...}</tool_call>: the block from `at` (just past the marker);
 * *end gets where the text resumes. */
static bool tool_call_block(const char *s, size_t at, size_t n, json_t *calls, size_t *end) {
    const char *close = find(s + at, n - at, "</tool_call>");
    const size_t body_end = close ? (size_t)(close - s) : n;
    *end = close ? body_end + strlen("</tool_call>") : n;
    return bare_calls(s + at, body_end - at, calls);
}

/* The call named s[name_at..name_end) whose arguments are the JSON object
 * at json_at; *after gets where the object ends. */
static bool named_call(const char *s, size_t n, size_t name_at, size_t name_end, size_t json_at, json_t *calls, size_t *after) {
    size_t used;
    json_t *v = load_value(s + json_at, n - json_at, &used);
    if (!json_is_object(v)) {
        json_decref(v);
        return false;
    }
    *after = json_at + used;
    return append_call(calls, make_call(s + name_at, name_end - name_at, v));
}

/* Past `literal` if s[i..n) starts with it, else i. */
static size_t skip_literal(const char *s, size_t i, size_t n, const char *literal) {
    const size_t len = strlen(literal);
    return n - i >= len && !memcmp(s + i, literal, len) ? i + len : i;
}

/* [TOOL_CALLS] then a JSON list of calls, or name[ARGS]{...}. */
static bool mistral_block(const char *s, size_t at, size_t n, json_t *calls, size_t *end) {
    size_t i = skip_space(s, at, n), used;
    if (i < n && s[i] == '[') {
        json_t *v = load_value(s + i, n - i, &used);
        const bool ok = v && json_is_array(v) && add_calls_of_value(v, calls);
        json_decref(v);
        *end = i + used;
        return ok;
    }
    const char *args = find(s + i, n - i, "[ARGS]");
    if (!args) return false;
    const size_t name_end = (size_t)(args - s);
    return named_call(s, n, i, name_end, name_end + strlen("[ARGS]"), calls, end);
}

/* <function=name>{...}</function> */
static bool function_block(const char *s, size_t at, size_t n, json_t *calls, size_t *end) {
    const char *gt = memchr(s + at, '>', n - at);
    if (!gt || gt == s + at) return false;
    const size_t name_end = (size_t)(gt - s);
    size_t after;
    if (!named_call(s, n, at, name_end, skip_space(s, name_end + 1, n), calls, &after)) return false;
    *end = skip_literal(s, skip_space(s, after, n), n, "</function>");
    return true;
}

/* <｜tool▁call▁begin｜>function<｜tool▁sep｜>name\n```json\n{...}\n```<｜tool▁call▁end｜> */
static bool deepseek_block(const char *s, size_t at, size_t n, json_t *calls, size_t *end) {
    const char *sep = find(s + at, n - at, DEEPSEEK_SEP);
    if (!sep) return false;
    const size_t name_at = (size_t)(sep - s) + strlen(DEEPSEEK_SEP);
    const char *nl = memchr(s + name_at, '\n', n - name_at);
    if (!nl || nl == s + name_at) return false;
    size_t name_end = (size_t)(nl - s), i = name_end;
    while (name_end > name_at && sp_json_space(s[name_end - 1])) name_end--;
    i = skip_space(s, i, n);
    if (skip_literal(s, i, n, "```") > i) { /* ```json */
        while (i < n && s[i] != '\n') i++;
        i = skip_space(s, i, n);
    }
    if (!named_call(s, n, name_at, name_end, i, calls, &i)) return false;
    *end = skip_literal(s, skip_space(s, skip_literal(s, skip_space(s, i, n), n, "```"), n), n, DEEPSEEK_CALL_END);
    return true;
}

static void put_trimmed(sp_buf *b, const char *s, size_t n) {
    size_t i = skip_space(s, 0, n);
    while (n > i && sp_json_space(s[n - 1])) n--;
    if (n == i) return;
    if (b->len) sp_buf_put(b, "\n", 1);
    sp_buf_put(b, s + i, n - i);
}

json_t *sp_tool_calls_parse(const char *text, size_t len, char **content, size_t *content_len) {
    json_t *calls = json_array();
    sp_buf rest = {0};
    marker_kind kind = M_COUNT;
    size_t i = 0, at = first_marker(text, len, &kind);
    if (!calls) return NULL;
    if (at == len) { /* no marker: the whole reply may be JSON calls */
        if (!bare_calls(text, len, calls)) json_array_clear(calls);
    } else {
        while (at < len) {
            put_trimmed(&rest, text + i, at - i);
            const size_t body = at + strlen(markers[kind]);
            size_t end = len;
            bool ok;
            switch (kind) {
            case M_TOOL_CALL: ok = tool_call_block(text, body, len, calls, &end); break;
            case M_MISTRAL: ok = mistral_block(text, body, len, calls, &end); break;
            case M_FUNCTION: ok = function_block(text, body, len, calls, &end); break;
            case M_DEEPSEEK_CALLS: ok = true, end = body; break; /* the list's opening: its calls follow */
            case M_DEEPSEEK_CALL: ok = deepseek_block(text, body, len, calls, &end); break;
            default: ok = bare_calls(text + body, len - body, calls); break; /* <|python_tag|>: the rest */
            }
            if (!ok) { /* not a call after all: the marker and what follows stay text */
                put_trimmed(&rest, text + at, len - at);
                i = len;
                break;
            }
            i = end;
            if (kind == M_DEEPSEEK_CALL) { /* the list's closing */
                const size_t j = skip_space(text, i, len), past = skip_literal(text, j, len, DEEPSEEK_CALLS_END);
                if (past > j) i = past;
            }
            at = i + first_marker(text + i, len - i, &kind);
        }
        put_trimmed(&rest, text + i, len - i);
    }
    if (json_array_size(calls) == 0) {
        json_decref(calls);
        free(rest.data);
        return NULL;
    }
    if (content) {
        *content = rest.data ? rest.data : strdup("");
        if (content_len) *content_len = rest.len;
    } else free(rest.data);
    return calls;
}

size_t sp_tool_calls_text_prefix(const char *text, size_t len, size_t sent) {
    if (sent == 0) {
        const size_t first = skip_space(text, 0, len);
        if (first == len || text[first] == '{' || text[first] == '[') return 0;
    }
    /* what went out held no marker, nor the start of one: look after it only */
    marker_kind kind;
    const size_t at = first_marker(text + sent, len - sent, &kind);
    if (at < len - sent) return sent + at;
    size_t hold = 0; /* a marker's beginning at the end: wait for the rest */
    for (int m = 0; m < M_COUNT; m++) {
        const size_t tail = sp_marker_tail(text + sent, len - sent, markers[m], strlen(markers[m]));
        if (tail > hold) hold = tail;
    }
    return len - hold;
}

/* --- a grammar for a forced call ------------------------------------------------------------------------ */

/* Appends grammar g with every rule name prefixed: names are runs of
 * [a-zA-Z0-9_-] outside literals ("..."), classes ([...]), repetition
 * counts ({m,n}) and comments, as the converter writes them. */
static bool put_renamed(sp_buf *b, const char *g, const char *prefix) {
    bool ok = true;
    for (size_t i = 0, n = strlen(g); i < n;) {
        const char c = g[i];
        if (c == '"' || c == '[' || c == '{' || c == '#') {
            const char close = c == '"' ? '"' : c == '[' ? ']' : c == '{' ? '}' : '\n';
            size_t k = i + 1;
            while (k < n && g[k] != close) k += g[k] == '\\' && c != '#' && k + 1 < n ? 2 : 1;
            k = k < n ? k + 1 : n;
            ok &= sp_buf_put(b, g + i, k - i);
            i = k;
        } else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_') {
            size_t k = i;
            while (k < n && ((g[k] >= 'a' && g[k] <= 'z') || (g[k] >= 'A' && g[k] <= 'Z') || (g[k] >= '0' && g[k] <= '9') || g[k] == '-' ||
                             g[k] == '_'))
                k++;
            ok &= sp_buf_put(b, prefix, strlen(prefix)) && sp_buf_put(b, g + i, k - i);
            i = k;
        } else {
            ok &= sp_buf_put(b, g + i, 1);
            i++;
        }
    }
    return ok;
}

/* Text as a GBNF literal's inside: '"' and '\' escaped. */
static bool put_literal(sp_buf *b, const char *s, size_t n) {
    bool ok = true;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '"' || s[i] == '\\') ok &= sp_buf_put(b, "\\", 1);
        ok &= sp_buf_put(b, s + i, 1);
    }
    return ok;
}

char *sp_tool_call_grammar(const json_t *tools, const char *only, bool tagged, char *error, size_t error_size) {
    sp_buf b = {0}, alts = {0};
    size_t n_alts = 0;
    bool ok = true;
    error[0] = 0;
    for (size_t i = 0; i < json_array_size(tools) && !error[0]; i++) {
        const json_t *fn = json_object_get(json_array_get(tools, i), "function"), *name = json_object_get(fn, "name");
        if (!json_is_string(name) || (only && strcmp(json_string_value(name), only))) continue;
        const json_t *params = json_object_get(fn, "parameters");
        json_t *any = json_pack("{s:s}", "type", "object");
        char *schema = json_dumps(params ? params : any, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY);
        char *g = NULL;
        sprout_status st = schema ? sprout_json_schema_to_grammar(schema, strlen(schema), &g) : SPROUT_ERR_OUT_OF_MEMORY;
        if (st != SPROUT_OK && st != SPROUT_ERR_OUT_OF_MEMORY && !json_is_true(json_object_get(fn, "strict"))) {
            /* not strict: arguments the schema cannot hold to are any object, as OpenAI's non-strict calls are */
            free(schema);
            schema = json_dumps(any, JSON_COMPACT);
            st = schema ? sprout_json_schema_to_grammar(schema, strlen(schema), &g) : SPROUT_ERR_OUT_OF_MEMORY;
        }
        json_decref(any);
        free(schema);
        if (st != SPROUT_OK) {
            snprintf(error, error_size, "tools[%zu].function.parameters: %s", i, st == SPROUT_ERR_OUT_OF_MEMORY ? "out of memory" : sprout_last_error());
            sprout_free(g);
            break;
        }
        char prefix[32];
        snprintf(prefix, sizeof prefix, "t%zu-", i);
        ok &= put_renamed(&b, g, prefix);
        sprout_free(g);
        char *quoted = json_dumps(name, JSON_ENCODE_ANY); /* the name as JSON text */
        if (!quoted) {
            snprintf(error, error_size, "out of memory");
            break;
        }
        if (n_alts++) ok &= sp_buf_put(&alts, " | ", strlen(" | "));
        ok &= sp_buf_put(&alts, "\"{\\\"name\\\": ", strlen("\"{\\\"name\\\": "));
        ok &= put_literal(&alts, quoted, strlen(quoted));
        ok &= sp_buf_put(&alts, ", \\\"arguments\\\": \" ", strlen(", \\\"arguments\\\": \" "));
        ok &= sp_buf_put(&alts, prefix, strlen(prefix));
        ok &= sp_buf_put(&alts, "root \"}\"", strlen("root \"}\""));
        free(quoted);
    }
    if (!error[0] && n_alts == 0) snprintf(error, error_size, "tool_choice: no offered tool is named \"%s\"", only ? only : "");
    char *out = NULL;
    if (!error[0]) {
        sp_buf g = {0};
        const char *head = tagged ? "root ::= \"<tool_call>\\n\" call \"\\n</tool_call>\"\ncall ::= " : "root ::= call\ncall ::= ";
        ok &= sp_buf_put(&g, head, strlen(head)) && sp_buf_put(&g, alts.data, alts.len) && sp_buf_put(&g, "\n", 1) &&
              sp_buf_put(&g, b.data, b.len) && sp_buf_put(&g, "", 1);
        if (ok) out = g.data;
        else {
            free(g.data);
            snprintf(error, error_size, "out of memory");
        }
    }
    free(b.data);
    free(alts.data);
    return out;
}
