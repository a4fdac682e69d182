/* Request bodies of the OpenAI and Ollama APIs to one sp_api_request. Every
 * field is type-checked and range-checked; an error names the field. Fields
 * the APIs define but sprout does not use are ignored, as OpenAI-compatible
 * servers do. */
#include "server/api_request.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct parser {
    char *error;
    size_t error_size;
    bool failed;
} parser;

static _Thread_local bool oom_seen;

void sp_oom_note(void) { oom_seen = true; }

bool sp_oom_take(void) {
    const bool seen = oom_seen;
    oom_seen = false;
    return seen;
}

static void *watched_alloc(size_t size) {
    void *p = malloc(size);
    if (!p) oom_seen = true;
    return p;
}

void sp_oom_watch_json(void) { json_set_alloc_funcs(watched_alloc, free); }

static bool fail(parser *p, const char *fmt, ...) {
    if (!strcmp(fmt, "out of memory")) oom_seen = true;
    if (p->failed) return false;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->error, p->error_size, fmt, ap);
    va_end(ap);
    p->failed = true;
    return false;
}

static const char *type_name(const json_t *v) {
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER:
    case JSON_REAL: return "a number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    case JSON_NULL: return "null";
    }
    return "a value";
}

/* The field, or NULL when absent or null (both mean "default"). */
static const json_t *field(const json_t *obj, const char *key) {
    const json_t *v = json_object_get(obj, key);
    return v && !json_is_null(v) ? v : NULL;
}

static bool get_bool(parser *p, const json_t *obj, const char *key, const char *where, bool *out) {
    const json_t *v = field(obj, key);
    if (!v) return true;
    if (!json_is_boolean(v)) return fail(p, "%s%s: expected a boolean, got %s", where, key, type_name(v));
    *out = json_is_true(v);
    return true;
}

static bool get_number(parser *p, const json_t *obj, const char *key, const char *where, double lo, double hi, float *out) {
    const json_t *v = field(obj, key);
    if (!v) return true;
    if (!json_is_number(v)) return fail(p, "%s%s: expected a number, got %s", where, key, type_name(v));
    double d = json_number_value(v);
    if (!(d >= lo && d <= hi)) return fail(p, "%s%s: %g is outside %g..%g", where, key, d, lo, hi);
    *out = (float)d;
    return true;
}

static bool get_int(parser *p, const json_t *obj, const char *key, const char *where, long long lo, long long hi, long long *out,
                    bool *present) {
    const json_t *v = field(obj, key);
    if (!v) return true;
    long long x;
    if (json_is_integer(v)) x = json_integer_value(v);
    else if (json_is_real(v) && json_real_value(v) == floor(json_real_value(v)) && fabs(json_real_value(v)) < 9e15)
        x = (long long)json_real_value(v);
    else return fail(p, "%s%s: expected an integer, got %s", where, key, json_is_number(v) ? "a fraction" : type_name(v));
    if (x < lo || x > hi) return fail(p, "%s%s: %lld is outside %lld..%lld", where, key, x, lo, hi);
    *out = x;
    if (present) *present = true;
    return true;
}

static bool get_string(parser *p, const json_t *obj, const char *key, const char *where, char **out) {
    const json_t *v = field(obj, key);
    if (!v) return true;
    if (!json_is_string(v)) return fail(p, "%s%s: expected a string, got %s", where, key, type_name(v));
    free(*out);
    *out = strndup(json_string_value(v), json_string_length(v));
    if (!*out) return fail(p, "out of memory");
    if (strlen(*out) != json_string_length(v)) return fail(p, "%s%s: the string contains a NUL character", where, key);
    return true;
}

/* A request body: a JSON object without duplicate keys, or NULL after
 * saying what is wrong (the error starts empty). */
static json_t *load_body(parser *p, const char *body, size_t len) {
    if (p->error_size) p->error[0] = 0;
    json_error_t jerr;
    json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        fail(p, "invalid JSON: %s (line %d, column %d)", jerr.text, jerr.line, jerr.column);
        return NULL;
    }
    if (!json_is_object(root)) {
        fail(p, "the body must be a JSON object, got %s", type_name(root));
        json_decref(root);
        return NULL;
    }
    return root;
}

/* An array of token ids (non-negative int32); *ids stays NULL when empty. */
static bool get_ids(parser *p, const json_t *arr, const char *where, int32_t **ids, size_t *n) {
    *n = 0;
    if (!json_array_size(arr)) return true;
    if (!(*ids = malloc(json_array_size(arr) * sizeof **ids))) return fail(p, "out of memory");
    for (size_t i = 0; i < json_array_size(arr); i++) {
        const json_t *id = json_array_get(arr, i);
        if (!json_is_integer(id) || json_integer_value(id) < 0 || json_integer_value(id) > INT32_MAX)
            return fail(p, "%s[%zu]: expected a token id", where, i);
        (*ids)[(*n)++] = (int32_t)json_integer_value(id);
    }
    return true;
}

/* stop: a string or an array of strings. */
static bool get_stops(parser *p, sp_api_request *r, const json_t *obj, const char *key, const char *where) {
    const json_t *v = field(obj, key);
    if (!v) return true;
    size_t n = json_is_array(v) ? json_array_size(v) : 1;
    if (!json_is_string(v) && !json_is_array(v))
        return fail(p, "%s%s: expected a string or an array of strings, got %s", where, key, type_name(v));
    if (n > SP_API_MAX_STOPS) return fail(p, "%s%s: %zu stop strings (at most %d)", where, key, n, SP_API_MAX_STOPS);
    for (size_t i = 0; i < n; i++) {
        const json_t *s = json_is_array(v) ? json_array_get(v, i) : v;
        if (!json_is_string(s)) return fail(p, "%s%s[%zu]: expected a string, got %s", where, key, i, type_name(s));
        if (json_string_length(s) > SP_API_MAX_STOP_BYTES)
            return fail(p, "%s%s[%zu]: longer than %d bytes", where, key, json_is_array(v) ? i : 0, SP_API_MAX_STOP_BYTES);
        if (json_string_length(s) == 0 || r->cfg.n_stop_strings >= SP_API_MAX_STOPS) continue;
        char *copy = strndup(json_string_value(s), json_string_length(s));
        if (!copy) return fail(p, "out of memory");
        r->stops[r->cfg.n_stop_strings++] = copy;
    }
    r->cfg.stop_strings = (const char *const *)r->stops;
    return true;
}

/* content: a string, null, or (OpenAI) an array of {"type":"text","text":...}
 * parts, which are joined. */
static bool flatten_content(parser *p, const json_t *content, size_t index, json_t **out) {
    if (!content || json_is_null(content)) {
        *out = json_string("");
        return true;
    }
    if (json_is_string(content)) {
        *out = json_incref((json_t *)content);
        return true;
    }
    if (!json_is_array(content))
        return fail(p, "messages[%zu].content: expected a string or an array of text parts, got %s", index, type_name(content));
    size_t total = 0;
    for (size_t i = 0; i < json_array_size(content); i++) {
        const json_t *part = json_array_get(content, i);
        const json_t *type = json_object_get(part, "type"), *text = json_object_get(part, "text");
        if (!json_is_object(part) || !json_is_string(type))
            return fail(p, "messages[%zu].content[%zu]: expected an object with a \"type\"", index, i);
        if (strcmp(json_string_value(type), "text"))
            return fail(p, "messages[%zu].content[%zu].type: \"%s\" is not supported (only text)", index, i, json_string_value(type));
        if (!json_is_string(text)) return fail(p, "messages[%zu].content[%zu].text: expected a string", index, i);
        total += json_string_length(text);
    }
    char *joined = malloc(total + 1);
    if (!joined) return fail(p, "out of memory");
    size_t at = 0;
    for (size_t i = 0; i < json_array_size(content); i++) {
        const json_t *text = json_object_get(json_array_get(content, i), "text");
        memcpy(joined + at, json_string_value(text), json_string_length(text));
        at += json_string_length(text);
    }
    *out = json_stringn(joined, at);
    free(joined);
    return *out != NULL || fail(p, "out of memory");
}

/* OpenAI sends a past call's arguments as JSON text; chat templates expect
 * the object (they write it with tojson), as transformers' callers pass it. */
static void decode_call_arguments(json_t *tool_calls) {
    size_t i;
    json_t *call;
    json_array_foreach(tool_calls, i, call) {
        json_t *fn = json_object_get(call, "function"), *args = json_object_get(fn, "arguments");
        if (!json_is_string(args)) continue;
        json_t *decoded = json_loadb(json_string_value(args), json_string_length(args), 0, NULL);
        if (json_is_object(decoded)) json_object_set_new(fn, "arguments", decoded);
        else json_decref(decoded);
    }
}

static bool parse_messages(parser *p, sp_api_request *r, const json_t *body, bool ollama) {
    const json_t *msgs = json_object_get(body, "messages");
    if (!msgs || json_is_null(msgs)) {
        if (ollama) msgs = NULL; /* Ollama: no messages loads the model */
        else return fail(p, "messages: required");
    }
    if (msgs && !json_is_array(msgs)) return fail(p, "messages: expected an array, got %s", type_name(msgs));
    if (!ollama && json_array_size(msgs) == 0) return fail(p, "messages: must not be empty");
    json_t *clean = json_array();
    for (size_t i = 0; clean && i < json_array_size(msgs); i++) {
        const json_t *m = json_array_get(msgs, i);
        if (!json_is_object(m)) {
            json_decref(clean);
            return fail(p, "messages[%zu]: expected an object, got %s", i, type_name(m));
        }
        const json_t *role = json_object_get(m, "role");
        if (!json_is_string(role) || json_string_length(role) == 0) {
            json_decref(clean);
            return fail(p, "messages[%zu].role: expected a non-empty string", i);
        }
        const json_t *images = json_object_get(m, "images");
        if (images && json_is_array(images) && json_array_size(images) > 0) {
            json_decref(clean);
            return fail(p, "messages[%zu].images: images are not supported by this model", i);
        }
        json_t *content = NULL;
        if (!flatten_content(p, json_object_get(m, "content"), i, &content)) {
            json_decref(clean);
            return false;
        }
        json_t *copy = json_deep_copy(m);
        if (!copy) json_decref(content); /* json_object_set_new would have taken it */
        if (!copy || json_object_set_new(copy, "content", content)) {
            json_decref(copy);
            json_decref(clean);
            return fail(p, "out of memory");
        }
        decode_call_arguments(json_object_get(copy, "tool_calls"));
        if (json_array_append_new(clean, copy)) { /* a message left out would make another conversation */
            json_decref(clean);
            return fail(p, "out of memory");
        }
    }
    if (!clean) return fail(p, "out of memory");
    r->n_messages = json_array_size(clean);
    r->messages_json = json_dumps(clean, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(clean);
    return r->messages_json != NULL || fail(p, "out of memory");
}

/* The chat template's variables beyond the messages: tools, a list of tool
 * objects ({"type": "function", "function": {"name", "description",
 * "parameters"}}) unless tool_choice is "none"; OpenAI requests'
 * chat_template_kwargs (as llama.cpp's server takes them: enable_thinking
 * ...); Ollama's think, which becomes enable_thinking and asks for the
 * reasoning apart. */
static bool parse_template_vars(parser *p, sp_api_request *r, const json_t *body, bool ollama) {
    const json_t *tools = json_object_get(body, "tools"), *choice = json_object_get(body, "tool_choice");
    const json_t *kwargs = ollama ? NULL : json_object_get(body, "chat_template_kwargs"), *think = ollama ? json_object_get(body, "think") : NULL;
    if (tools && !json_is_null(tools)) {
        if (!json_is_array(tools)) return fail(p, "tools: expected an array, got %s", type_name(tools));
        for (size_t i = 0; i < json_array_size(tools); i++) {
            const json_t *t = json_array_get(tools, i), *fn = json_object_get(t, "function");
            if (!json_is_object(t)) return fail(p, "tools[%zu]: expected an object, got %s", i, type_name(t));
            if (fn && !json_is_string(json_object_get(fn, "name")))
                return fail(p, "tools[%zu].function.name: expected a string", i);
        }
        if (choice && !json_is_null(choice) && !json_is_string(choice) && !json_is_object(choice))
            return fail(p, "tool_choice: expected a string or an object, got %s", type_name(choice));
        r->tools = json_array_size(tools) > 0 && !(json_is_string(choice) && !strcmp(json_string_value(choice), "none"));
        /* a call is forced by "required" or {"type": "function", "function": {"name": ...}} (OpenAI's tool_choice) */
        r->tool_required = r->tools && json_is_string(choice) && !strcmp(json_string_value(choice), "required");
        if (r->tools && json_is_object(choice)) {
            const json_t *name = json_object_get(json_object_get(choice, "function"), "name");
            if (!json_is_string(name)) return fail(p, "tool_choice.function.name: expected a string");
            if (!(r->tool_name = strndup(json_string_value(name), json_string_length(name)))) return fail(p, "out of memory");
            r->tool_required = true;
        }
    }
    if (kwargs && !json_is_null(kwargs) && !json_is_object(kwargs))
        return fail(p, "chat_template_kwargs: expected an object, got %s", type_name(kwargs));
    if (think && !json_is_null(think)) { /* true/false, or a level ("high") for models that take one */
        if (!json_is_boolean(think) && !json_is_string(think)) return fail(p, "think: expected a boolean, got %s", type_name(think));
        r->think = json_is_false(think) ? 0 : 1;
    }
    json_t *vars = json_object();
    if (json_is_object(kwargs)) {
        json_t *copy = json_deep_copy(kwargs);
        json_object_update(vars, copy);
        json_decref(copy);
    }
    if (r->tools) json_object_set_new(vars, "tools", json_deep_copy(tools));
    if (r->think >= 0) json_object_set_new(vars, "enable_thinking", json_boolean(r->think));
    if (vars && json_object_size(vars)) r->vars_json = json_dumps(vars, JSON_COMPACT | JSON_PRESERVE_ORDER);
    const bool ok = vars && (json_object_size(vars) == 0 || r->vars_json);
    json_decref(vars);
    return ok || fail(p, "out of memory");
}

/* A schema (an object, or true/false) as compact JSON text in *out, its
 * keys in the order given: llama.cpp's converter, like sprout's, writes
 * properties in schema order. */
static bool take_schema(parser *p, sp_api_request *r, const json_t *schema, const char *where) {
    if (!json_is_object(schema) && !json_is_boolean(schema)) return fail(p, "%s: expected a JSON schema (an object), got %s", where, type_name(schema));
    if (r->json_schema) return fail(p, "%s: a schema is given twice (json_schema, response_format or format): give one", where);
    r->json_schema = json_dumps(schema, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY);
    if (!r->json_schema) return fail(p, "out of memory");
    r->cfg.json_schema = r->json_schema;
    r->structured_param = where;
    return true;
}

/* Structured output. OpenAI's response_format: {"type": "json_object"} is
 * JSON mode, with a "schema" (llama-server's extension) that schema;
 * {"type": "json_schema", "json_schema": {"name", "schema", "strict"}} the
 * schema (none: {}, any JSON value, as llama-server takes it; always
 * enforced, strict or not); "text" nothing. llama-server's own fields on
 * the OpenAI endpoints: "grammar" (GBNF text) and "json_schema" (a
 * schema); a grammar beside any schema or JSON mode is refused, as
 * llama-server refuses it. Ollama's format: "json" is JSON mode, an object
 * the schema. A bad grammar or an unsupported keyword is found when the
 * request is submitted (400 naming it). */
static bool parse_structured(parser *p, sp_api_request *r, const json_t *body, bool ollama) {
    const json_t *v = field(body, ollama ? "format" : "response_format");
    if (ollama) {
        if (!v) return true;
        if (json_is_object(v)) return take_schema(p, r, v, "format");
        if (!json_is_string(v)) return fail(p, "format: expected \"json\" or a JSON schema, got %s", type_name(v));
        if (!strcmp(json_string_value(v), "json")) r->cfg.json_object = true;
        else if (json_string_length(v) != 0) return fail(p, "format: \"%s\" is not supported (only \"json\" or a schema)", json_string_value(v));
        return true;
    }
    const json_t *schema = field(body, "json_schema"); /* llama-server's fields */
    if (schema && !take_schema(p, r, schema, "json_schema")) return false;
    if (!get_string(p, body, "grammar", "", &r->grammar)) return false;
    if (r->grammar && !*r->grammar) { /* "" is no grammar, as llama-server takes it */
        free(r->grammar);
        r->grammar = NULL;
    }
    if (v) {
        const json_t *type = json_object_get(v, "type");
        if (!json_is_object(v) || !json_is_string(type)) return fail(p, "response_format: expected an object with a \"type\"");
        const char *t = json_string_value(type);
        if (!strcmp(t, "json_object")) {
            const json_t *s = field(v, "schema");
            if (s) take_schema(p, r, s, "response_format.schema");
            else r->cfg.json_object = true;
        } else if (!strcmp(t, "json_schema")) {
            const json_t *wrapper = field(v, "json_schema"), *s = wrapper ? field(wrapper, "schema") : NULL;
            if (wrapper && !json_is_object(wrapper))
                return fail(p, "response_format.json_schema: expected an object with a \"schema\", got %s", type_name(wrapper));
            if (wrapper && field(wrapper, "strict") && !json_is_boolean(field(wrapper, "strict")))
                return fail(p, "response_format.json_schema.strict: expected a boolean, got %s", type_name(field(wrapper, "strict")));
            json_t *any = s ? NULL : json_object();
            take_schema(p, r, s ? s : any, "response_format.json_schema");
            json_decref(any);
        } else if (strcmp(t, "text")) return fail(p, "response_format.type: \"%s\" is not supported (text, json_object, json_schema)", t);
        if (p->failed) return false;
    }
    if (r->grammar && (r->json_schema || r->cfg.json_object))
        return fail(p, "grammar: give either a grammar or a schema (json_schema, response_format), not both");
    if (r->grammar) {
        r->cfg.grammar = r->grammar;
        r->structured_param = "grammar";
    }
    return true;
}

/* logit_bias: {"token id": bias in [-100, 100], ...}, as OpenAI takes it. */
static bool parse_logit_bias(parser *p, sp_api_request *r, const json_t *body) {
    const json_t *v = json_object_get(body, "logit_bias");
    if (!v || json_is_null(v)) return true;
    if (!json_is_object(v)) return fail(p, "logit_bias: expected an object of token ids to biases, got %s", type_name(v));
    if (json_object_size(v) > 1024) return fail(p, "logit_bias: %zu entries (at most 1024)", json_object_size(v));
    r->biases = malloc((json_object_size(v) + 1) * sizeof *r->biases);
    if (!r->biases) return fail(p, "out of memory");
    const char *key;
    const json_t *bias;
    size_t n = 0;
    json_object_foreach((json_t *)v, key, bias) {
        char *end;
        errno = 0;
        const long long id = strtoll(key, &end, 10);
        if (!*key || *end || errno || id < 0 || id > INT32_MAX) return fail(p, "logit_bias: \"%.40s\" is not a token id", key);
        if (!json_is_number(bias) || json_number_value(bias) < -100 || json_number_value(bias) > 100)
            return fail(p, "logit_bias[\"%s\"]: expected a number from -100 to 100", key);
        r->biases[n++] = (sprout_logit_bias){(int32_t)id, (float)json_number_value(bias)};
    }
    r->cfg.logit_bias = r->biases;
    r->cfg.n_logit_bias = n;
    return true;
}

/* lora: [{"id": N, "scale": S}, ...]; an absent scale is 0, as llama.cpp's
 * server reads it; `where` prefixes the entries' names ("lora[1].id"). */
static bool parse_lora_list(parser *p, const json_t *v, const char *where, sp_api_lora *out) {
    *out = (sp_api_lora){.given = true};
    if (!json_is_array(v))
        return fail(p, "%s: expected an array of {\"id\", \"scale\"} objects, got %s", *where ? where : "the body", type_name(v));
    if (json_array_size(v) > SP_API_MAX_LORA)
        return fail(p, "%s: %zu entries (at most %d)", *where ? where : "the body", json_array_size(v), SP_API_MAX_LORA);
    for (size_t i = 0; i < json_array_size(v); i++) {
        const json_t *e = json_array_get(v, i), *id = json_object_get(e, "id"), *scale = field(e, "scale");
        if (!json_is_object(e)) return fail(p, "%s[%zu]: expected an object with \"id\" and \"scale\", got %s", where, i, type_name(e));
        if (!json_is_integer(id) || json_integer_value(id) < 0 || json_integer_value(id) > INT32_MAX)
            return fail(p, "%s[%zu].id: expected an adapter id (an integer from 0)%s", where, i, id ? "" : ", required");
        if (scale && !json_is_number(scale)) return fail(p, "%s[%zu].scale: expected a number, got %s", where, i, type_name(scale));
        const float s = scale ? (float)json_number_value(scale) : 0.f;
        if (!isfinite(s)) return fail(p, "%s[%zu].scale: %g is outside the float range", where, i, json_number_value(scale));
        size_t k = 0;
        while (k < out->n && out->id[k] != (int32_t)json_integer_value(id)) k++;
        out->id[k] = (int32_t)json_integer_value(id);
        out->scale[k] = s;
        if (k == out->n) out->n++;
    }
    return true;
}

/* llama.cpp's other samplers, as llama-server reads them (and Ollama's
 * typical_p and mirostat options, which share the names): typical_p,
 * mirostat, mirostat_tau, mirostat_eta, dry_*, xtc_*, top_n_sigma and
 * samplers (an array of names, or a string of --sampling-seq letters).
 * The breakers and the order are allocated here, freed with the request;
 * the library checks the names when the request is submitted. */
static const char sampler_letters[] = "edskypmxt";
static const char *const sampler_letter_names[] = {"penalties", "dry", "top_n_sigma", "top_k", "typ_p", "top_p", "min_p", "xtc", "temperature"};

static bool parse_more_samplers(parser *p, sp_api_request *r, const json_t *obj, const char *where) {
    sprout_generation_config *c = &r->cfg;
    long long v = 0;
    bool present = false;
    get_number(p, obj, "typical_p", where, 0, 1, &c->typical_p);
    get_int(p, obj, "mirostat", where, 0, 2, &v, &present);
    if (present) c->mirostat = (int32_t)v;
    get_number(p, obj, "mirostat_tau", where, 0, 100, &c->mirostat_tau);
    get_number(p, obj, "mirostat_eta", where, 0, 10, &c->mirostat_eta);
    get_number(p, obj, "dry_multiplier", where, 0, 1000, &c->dry_multiplier);
    get_number(p, obj, "dry_base", where, 0, 100, &c->dry_base);
    present = false;
    get_int(p, obj, "dry_allowed_length", where, 0, 1 << 24, &v, &present);
    if (present) c->dry_allowed_length = (int32_t)v;
    present = false;
    get_int(p, obj, "dry_penalty_last_n", where, -1, INT32_MAX, &v, &present);
    if (present) c->dry_penalty_last_n = (int32_t)v;
    get_number(p, obj, "xtc_probability", where, 0, 1, &c->xtc_probability);
    get_number(p, obj, "xtc_threshold", where, 0, 1, &c->xtc_threshold);
    get_number(p, obj, "top_n_sigma", where, -1, 1000, &c->top_n_sigma);
    if (p->failed) return false;

    const json_t *br = field(obj, "dry_sequence_breakers");
    if (br) { /* llama-server: a non-empty array of strings */
        const size_t n = json_is_array(br) ? json_array_size(br) : 0;
        if (!n) return fail(p, "%sdry_sequence_breakers: expected a non-empty array of strings, got %s", where, json_is_array(br) ? "[]" : type_name(br));
        if (n > 16) return fail(p, "%sdry_sequence_breakers: %zu breakers (at most 16)", where, n);
        char **list = calloc(n, sizeof *list);
        if (!list) return fail(p, "out of memory");
        c->dry_sequence_breakers = (const char *const *)list;
        c->n_dry_sequence_breakers = n;
        for (size_t i = 0; i < n; i++) {
            const json_t *b = json_array_get(br, i);
            if (!json_is_string(b) || !json_string_length(b) || json_string_length(b) > 64 || strlen(json_string_value(b)) != json_string_length(b))
                return fail(p, "%sdry_sequence_breakers[%zu]: expected a string of 1 to 64 bytes", where, i);
            if (!(list[i] = strdup(json_string_value(b)))) return fail(p, "out of memory");
        }
    }
    const json_t *order = field(obj, "samplers");
    if (order) {
        size_t len = 0;
        const bool letters = json_is_string(order);
        if (letters) {
            if (strlen(json_string_value(order)) != json_string_length(order)) return fail(p, "%ssamplers: the string contains a NUL character", where);
            for (const char *q = json_string_value(order); *q; q++) {
                const char *hit = strchr(sampler_letters, *q);
                if (!hit) return fail(p, "%ssamplers: '%c' is no sampler's letter (%s)", where, *q, sampler_letters);
                len += strlen(sampler_letter_names[hit - sampler_letters]) + 1;
            }
        } else if (json_is_array(order)) {
            for (size_t i = 0; i < json_array_size(order); i++) {
                const json_t *name = json_array_get(order, i);
                if (!json_is_string(name) || !json_string_length(name) || strpbrk(json_string_value(name), ";,"))
                    return fail(p, "%ssamplers[%zu]: expected a sampler's name", where, i);
                len += json_string_length(name) + 1;
            }
        } else {
            return fail(p, "%ssamplers: expected an array of names or a string of letters, got %s", where, type_name(order));
        }
        if (!len || len > 1024) return fail(p, "%ssamplers: expected 1 to 64 samplers", where);
        char *text = malloc(len);
        if (!text) return fail(p, "out of memory");
        text[0] = 0;
        const size_t n = letters ? json_string_length(order) : json_array_size(order);
        for (size_t i = 0; i < n; i++) {
            const char *name = letters ? sampler_letter_names[strchr(sampler_letters, json_string_value(order)[i]) - sampler_letters]
                                       : json_string_value(json_array_get(order, i));
            if (i) strcat(text, ";");
            strcat(text, name);
        }
        c->samplers = text;
    }
    return !p->failed;
}

/* The sampling fields OpenAI defines, plus llama.cpp's common extensions. */
static bool parse_openai_sampling(parser *p, sp_api_request *r, const json_t *body) {
    long long v = 0, n = 1;
    bool present = false;
    sprout_generation_config *c = &r->cfg;
    get_int(p, body, "n", "", 1, 128, &n, NULL);
    if (!p->failed && n != 1) return fail(p, "n: only 1 choice per request is supported (got %lld)", n);
    get_int(p, body, "max_tokens", "", 0, INT32_MAX, &v, &present);
    get_int(p, body, "max_completion_tokens", "", 0, INT32_MAX, &v, &present);
    if (present) {
        c->max_new_tokens = (int32_t)v;
        r->max_tokens_set = true;
    }
    get_number(p, body, "temperature", "", 0, 2, &c->temperature);
    get_number(p, body, "top_p", "", 0, 1, &c->top_p);
    get_number(p, body, "min_p", "", 0, 1, &c->min_p);
    get_number(p, body, "presence_penalty", "", -2, 2, &c->presence_penalty);
    get_number(p, body, "frequency_penalty", "", -2, 2, &c->frequency_penalty);
    get_number(p, body, "repeat_penalty", "", 0, 10, &c->repetition_penalty);
    parse_logit_bias(p, r, body);
    if (get_int(p, body, "top_k", "", 0, INT32_MAX, &v, &(bool){false}) && field(body, "top_k")) c->top_k = (int32_t)v;
    present = false;
    get_int(p, body, "seed", "", INT64_MIN, INT64_MAX, &v, &present);
    if (present) {
        c->seed = (uint64_t)v;
        r->seed_set = true;
    }
    get_stops(p, r, body, "stop", "");
    get_bool(p, body, "ignore_eos", "", &c->ignore_eos); /* llama.cpp's extension, for benchmarks */
    parse_more_samplers(p, r, body, "");
    get_bool(p, body, "stream", "", &r->stream);
    const json_t *so = field(body, "stream_options");
    if (so && !json_is_object(so)) return fail(p, "stream_options: expected an object, got %s", type_name(so));
    if (so) get_bool(p, so, "include_usage", "stream_options.", &r->include_usage);
    return !p->failed;
}

/* "speculative.n_max", "speculative.n_min", "speculative.p_min" in obj
 * (`where` prefixes their names in errors). */
static void parse_speculative(parser *p, const json_t *obj, const char *where, sp_api_speculative *out) {
    long long v = 0;
    bool present = false;
    get_int(p, obj, "speculative.n_max", where, 0, 1024, &v, &present);
    if (present) out->n_max = (int32_t)v;
    present = false;
    get_int(p, obj, "speculative.n_min", where, 0, 1024, &v, &present);
    if (present) out->n_min = (int32_t)v;
    get_number(p, obj, "speculative.p_min", where, 0, 1, &out->p_min);
}

static bool parse_ollama_options(parser *p, sp_api_request *r, const json_t *body) {
    const json_t *o = field(body, "options");
    if (!o) return true;
    if (!json_is_object(o)) return fail(p, "options: expected an object, got %s", type_name(o));
    sprout_generation_config *c = &r->cfg;
    long long v = 0;
    bool present = false;
    get_int(p, o, "num_predict", "options.", -2, INT32_MAX, &v, &present);
    if (present && v >= 0) {
        c->max_new_tokens = (int32_t)v;
        r->max_tokens_set = true;
    }
    present = false;
    get_int(p, o, "num_ctx", "options.", 1, 1 << 24, &v, &present);
    if (present) r->num_ctx = (int32_t)v;
    present = false;
    get_int(p, o, "num_keep", "options.", -1, INT32_MAX, &v, &present);
    if (present) c->n_keep = (int32_t)v;
    get_number(p, o, "temperature", "options.", 0, 100, &c->temperature);
    present = false;
    get_int(p, o, "top_k", "options.", 0, INT32_MAX, &v, &present);
    if (present) c->top_k = (int32_t)v;
    get_number(p, o, "top_p", "options.", 0, 1, &c->top_p);
    get_number(p, o, "min_p", "options.", 0, 1, &c->min_p);
    get_number(p, o, "repeat_penalty", "options.", 0, 10, &c->repetition_penalty);
    present = false;
    get_int(p, o, "repeat_last_n", "options.", -1, INT32_MAX, &v, &present);
    if (present) c->repeat_last_n = (int32_t)v;
    get_number(p, o, "presence_penalty", "options.", -2, 2, &c->presence_penalty);
    get_number(p, o, "frequency_penalty", "options.", -2, 2, &c->frequency_penalty);
    present = false;
    get_int(p, o, "seed", "options.", INT64_MIN, INT64_MAX, &v, &present);
    if (present && v >= 0) { /* Ollama: -1 is "random" */
        c->seed = (uint64_t)v;
        r->seed_set = true;
    }
    get_stops(p, r, o, "stop", "options.");
    parse_speculative(p, o, "options.", &r->speculative);
    parse_more_samplers(p, r, o, "options.");
    return !p->failed;
}

static void defaults(sp_api_request *r, sp_api_kind kind) {
    memset(r, 0, sizeof *r);
    r->kind = kind;
    r->logprobs = -1;
    r->think = -1;
    r->speculative = (sp_api_speculative){-1, -1, -1.f};
    sprout_generation_config_init(&r->cfg);
    if (kind == SP_API_OPENAI_CHAT || kind == SP_API_OPENAI_COMPLETION) {
        /* OpenAI's documented defaults */
        r->cfg.temperature = 1.f;
        r->cfg.top_p = 1.f;
        r->cfg.max_new_tokens = kind == SP_API_OPENAI_COMPLETION ? 16 : 0;
        r->max_tokens_set = kind == SP_API_OPENAI_COMPLETION;
    } else {
        /* Ollama's */
        r->stream = true;
        r->cfg.temperature = 0.8f;
        r->cfg.top_k = 40;
        r->cfg.top_p = 0.9f;
        r->cfg.min_p = 0.f;
        r->cfg.repetition_penalty = 1.1f;
        r->cfg.repeat_last_n = 64;
    }
}

bool sp_api_request_parse(sp_api_kind kind, const char *body, size_t len, sp_api_request *r, char *error, size_t error_size) {
    return sp_api_request_parse_over(kind, body, len, NULL, r, error, error_size);
}

/* The Modelfile's PARAMETERs over the API's defaults; what the request
 * gives then goes over them. A num_predict or seed there counts as given. */
static bool modelfile_defaults(sp_api_request *r, const sprout_store_model *modelfile, char *error, size_t error_size) {
    const int32_t max_new_tokens = r->cfg.max_new_tokens;
    const uint64_t seed = r->cfg.seed;
    if (sprout_store_model_apply(modelfile, &r->cfg, NULL) != SPROUT_OK) {
        snprintf(error, error_size, "the model's Modelfile: %s", sprout_last_error());
        return false;
    }
    if (r->cfg.max_new_tokens != max_new_tokens) r->max_tokens_set = true;
    if (r->cfg.seed != seed) r->seed_set = true;
    return true;
}

bool sp_api_request_parse_over(sp_api_kind kind, const char *body, size_t len, const sprout_store_model *modelfile, sp_api_request *r,
                               char *error, size_t error_size) {
    defaults(r, kind);
    if (modelfile && !modelfile_defaults(r, modelfile, error, error_size)) return false;
    parser p = {error, error_size, false};
    json_t *root = load_body(&p, body, len);
    if (!root) return false;
    get_string(&p, root, "model", "", &r->model);
    long long v = 0;
    bool present = false;
    switch (kind) {
    case SP_API_OPENAI_CHAT:
        parse_messages(&p, r, root, false);
        parse_template_vars(&p, r, root, false);
        parse_structured(&p, r, root, false);
        parse_openai_sampling(&p, r, root);
        get_bool(&p, root, "logprobs", "", &(bool){false});
        if (json_is_true(json_object_get(root, "logprobs"))) r->logprobs = 0;
        get_int(&p, root, "top_logprobs", "", 0, 20, &v, &present);
        if (present) {
            if (r->logprobs < 0 && !p.failed) fail(&p, "top_logprobs: needs \"logprobs\": true");
            r->logprobs = (int32_t)v;
        }
        break;
    case SP_API_OPENAI_COMPLETION: {
        const json_t *pr = json_object_get(root, "prompt");
        if (json_is_array(pr) && json_array_size(pr) == 1) pr = json_array_get(pr, 0);
        if (!pr || !json_is_string(pr)) fail(&p, "prompt: expected a string%s", pr ? " (or an array of one string)" : ", required");
        else if (!(r->prompt = strndup(json_string_value(pr), json_string_length(pr)))) fail(&p, "out of memory");
        else if (strlen(r->prompt) != json_string_length(pr)) fail(&p, "prompt: the string contains a NUL character");
        get_string(&p, root, "suffix", "", &r->suffix);
        parse_openai_sampling(&p, r, root);
        parse_structured(&p, r, root, false);
        get_bool(&p, root, "echo", "", &r->echo);
        get_int(&p, root, "logprobs", "", 0, 5, &v, &present);
        if (present) r->logprobs = (int32_t)v;
        break;
    }
    case SP_API_OLLAMA_CHAT:
        parse_messages(&p, r, root, true);
        parse_template_vars(&p, r, root, true);
        parse_structured(&p, r, root, true);
        get_bool(&p, root, "stream", "", &r->stream);
        parse_ollama_options(&p, r, root);
        break;
    case SP_API_OLLAMA_GENERATE: {
        get_string(&p, root, "prompt", "", &r->prompt);
        get_string(&p, root, "suffix", "", &r->suffix);
        get_string(&p, root, "system", "", &r->system);
        get_bool(&p, root, "raw", "", &r->raw);
        parse_template_vars(&p, r, root, true);
        parse_structured(&p, r, root, true);
        get_bool(&p, root, "stream", "", &r->stream);
        const json_t *context = field(root, "context");
        if (context && !json_is_array(context)) fail(&p, "context: expected an array of token ids, got %s", type_name(context));
        else if (context) get_ids(&p, context, "context", &r->context, &r->n_context);
        const json_t *images = field(root, "images");
        if (images && (!json_is_array(images) || json_array_size(images) > 0))
            fail(&p, "images: images are not supported by this model");
        parse_ollama_options(&p, r, root);
        break;
    }
    }
    const json_t *lora = field(root, "lora"); /* llama.cpp's extension, on every generation endpoint */
    if (lora) parse_lora_list(&p, lora, "lora", &r->lora);
    parse_speculative(&p, root, "", &r->speculative); /* llama-server's fields, on every generation endpoint */
    if (!p.failed && r->model && strlen(r->model) == 0) {
        free(r->model);
        r->model = NULL;
    }
    json_decref(root);
    return !p.failed;
}

bool sp_api_lora_parse(const char *body, size_t len, sp_api_lora *out, char *error, size_t error_size) {
    parser p = {error, error_size, false};
    if (error_size) error[0] = 0;
    *out = (sp_api_lora){0};
    json_error_t jerr;
    json_t *root = json_loadb(body, len, 0, &jerr);
    if (!root) return fail(&p, "invalid JSON: %s (line %d, column %d)", jerr.text, jerr.line, jerr.column);
    parse_lora_list(&p, root, "", out);
    json_decref(root);
    return !p.failed;
}

void sp_api_request_free(sp_api_request *r) {
    if (!r) return;
    free(r->model);
    free(r->messages_json);
    free(r->vars_json);
    free(r->prompt);
    free(r->suffix);
    free(r->system);
    free(r->context);
    free(r->biases);
    free(r->grammar);
    free(r->json_schema);
    free(r->tool_name);
    for (size_t i = 0; i < SP_API_MAX_STOPS; i++) free(r->stops[i]);
    /* parse_more_samplers' allocations (nothing else sets these) */
    for (size_t i = 0; r->cfg.dry_sequence_breakers && i < r->cfg.n_dry_sequence_breakers; i++)
        free((void *)r->cfg.dry_sequence_breakers[i]);
    free((void *)r->cfg.dry_sequence_breakers);
    free((void *)r->cfg.samplers);
    memset(r, 0, sizeof *r);
}

/* --- embeddings ------------------------------------------------------------------------------------- */

static bool add_embed_input(parser *p, sp_embed_request *r, const json_t *v, const char *where) {
    sp_embed_input *in = &r->inputs[r->n_inputs];
    *in = (sp_embed_input){0};
    if (json_is_string(v)) {
        /* OpenAI refuses empty text; Ollama leaves it out (nothing to embed) */
        if (json_string_length(v) == 0) return r->kind != SP_EMBED_OPENAI || fail(p, "%s: the text is empty", where);
        if (!(in->text = strndup(json_string_value(v), json_string_length(v)))) return fail(p, "out of memory");
        r->n_inputs++;
        if (strlen(in->text) != json_string_length(v)) return fail(p, "%s: the string contains a NUL character", where);
        return true;
    }
    if (r->kind == SP_EMBED_OPENAI && json_is_array(v)) {
        if (!json_array_size(v)) return fail(p, "%s: the token array is empty", where);
        r->n_inputs++;
        return get_ids(p, v, where, &in->ids, &in->n_ids);
    }
    return fail(p, "%s: expected a string%s, got %s", where, r->kind == SP_EMBED_OPENAI ? " or an array of token ids" : "", type_name(v));
}

/* input: a string, or an array of them (OpenAI: also token ids, one array
 * of them or an array of such arrays). */
static void parse_embed_inputs(parser *p, sp_embed_request *r, const json_t *v, const char *key) {
    if (!v) {
        if (r->kind == SP_EMBED_OPENAI) fail(p, "%s: required", key);
        return;
    }
    const bool one_id_list = r->kind == SP_EMBED_OPENAI && json_is_array(v) && json_array_size(v) && json_is_integer(json_array_get(v, 0));
    const size_t n = json_is_array(v) && !one_id_list ? json_array_size(v) : 1;
    if (r->kind == SP_EMBED_OLLAMA_LEGACY && !json_is_string(v)) {
        fail(p, "%s: expected a string, got %s", key, type_name(v));
        return;
    }
    if (!json_is_string(v) && !json_is_array(v)) {
        fail(p, "%s: expected a string or an array, got %s", key, type_name(v));
        return;
    }
    if (json_is_array(v) && !json_array_size(v) && r->kind == SP_EMBED_OPENAI) {
        fail(p, "%s: the array is empty", key);
        return;
    }
    if (n > SP_EMBED_MAX_INPUTS) {
        fail(p, "%s: %zu inputs (at most %d)", key, n, SP_EMBED_MAX_INPUTS);
        return;
    }
    if (!(r->inputs = calloc(n ? n : 1, sizeof *r->inputs))) {
        fail(p, "out of memory");
        return;
    }
    if (!json_is_array(v) || one_id_list) {
        add_embed_input(p, r, v, key);
        return;
    }
    char where[64];
    for (size_t i = 0; i < n && !p->failed; i++) {
        snprintf(where, sizeof where, "%s[%zu]", key, i);
        add_embed_input(p, r, json_array_get(v, i), where);
    }
}

bool sp_embed_request_parse(sp_embed_kind kind, const char *body, size_t len, sp_embed_request *r, char *error, size_t error_size) {
    *r = (sp_embed_request){.kind = kind, .truncate = true};
    parser p = {error, error_size, false};
    json_t *root = load_body(&p, body, len);
    if (!root) return false;
    get_string(&p, root, "model", "", &r->model);
    parse_embed_inputs(&p, r, field(root, kind == SP_EMBED_OLLAMA_LEGACY ? "prompt" : "input"), kind == SP_EMBED_OLLAMA_LEGACY ? "prompt" : "input");
    long long v = 0;
    bool present = false;
    if (kind != SP_EMBED_OLLAMA_LEGACY) {
        get_int(&p, root, "dimensions", "", 1, 1 << 20, &v, &present);
        if (present) r->dimensions = (int32_t)v;
    }
    if (kind == SP_EMBED_OPENAI) {
        char *format = NULL;
        get_string(&p, root, "encoding_format", "", &format);
        if (format && strcmp(format, "float") && strcmp(format, "base64"))
            fail(&p, "encoding_format: \"%s\" is not one of \"float\", \"base64\"", format);
        r->base64 = format && !strcmp(format, "base64");
        free(format);
    } else {
        get_bool(&p, root, "truncate", "", &r->truncate);
        const json_t *options = field(root, "options");
        if (options && !json_is_object(options)) fail(&p, "options: expected an object, got %s", type_name(options));
        else if (options) {
            present = false;
            get_int(&p, options, "num_ctx", "options.", 1, 1 << 24, &v, &present);
            if (present) r->num_ctx = (int32_t)v;
        }
    }
    if (!p.failed && r->model && strlen(r->model) == 0) {
        free(r->model);
        r->model = NULL;
    }
    json_decref(root);
    return !p.failed;
}

void sp_embed_request_free(sp_embed_request *r) {
    if (!r) return;
    free(r->model);
    for (size_t i = 0; r->inputs && i < r->n_inputs; i++) {
        free(r->inputs[i].text);
        free(r->inputs[i].ids);
    }
    free(r->inputs);
    memset(r, 0, sizeof *r);
}
