/* Ollama's side of a TEMPLATE: the values it gives templates and the order
 * in which it renders them, after ollama/ollama template/template.go
 * (Parse, Execute, collate, convertMessagesForTemplate,
 * convertToolsForTemplate) and server/prompt.go (renderPrompt), read at
 * commit fb30760 (August 2026).
 *
 * Why each rule:
 * - Messages are collated first: consecutive messages of one role (except
 *   "tool") become one, contents joined by "\n\n"; every system message's
 *   content, joined by "\n\n", is .System. Roles are lower-cased, as
 *   api.Message's UnmarshalJSON does.
 * - A non-empty suffix with a prompt renders once with only .Prompt,
 *   .Suffix, .Response "" and the think values (fill-in-the-middle).
 * - A template that names a field "Messages" anywhere renders once with
 *   .System, .Messages (the collated list, system messages included),
 *   .Tools, .Response "" and .Think, .ThinkLevel, .IsThinkSet; .Prompt is
 *   then a missing key, which prints "<no value>" (missingkey=zero on a
 *   map[string]any).
 * - Otherwise it is a legacy template, rendered once per turn with .System,
 *   .Prompt and .Response: a system message after a prompt or response,
 *   or a user message after a response, flushes the turn so far. The last
 *   turn renders a copy of the tree cut after the first .Response field,
 *   so the prompt ends where the model's answer begins. Templates naming
 *   neither Messages nor Response got {{ .Response }} appended at parse.
 *   Ollama builds that copy as a new template without its FuncMap or
 *   missingkey option, so json & co. are undefined there and a missing key
 *   is no value.
 *
 * One deliberate difference: Ollama since v0.14 (#13525) gives templates a
 * templateToolFunction without a String() method, so `{{ .Function }}` (as
 * qwen2.5's template writes) prints Go struct syntax, a regression reported
 * as ollama#14601. Here .Function and .Function.Parameters print as their
 * JSON, which is what Ollama printed before and what the templates expect. */
#include <ctype.h>
#include <string.h>

#include "template/go_template.h"

static const gt_field message_fields[] = {
    {"Role", "Role", false},         {"Content", "Content", false},   {"Thinking", "Thinking", false},
    {"Images", "Images", false},     {"ToolCalls", "ToolCalls", false}, {"ToolName", "ToolName", false},
    {"ToolCallID", "ToolCallID", false},
};
static const gt_field tool_call_fields[] = {{"ID", "ID", false}, {"Function", "Function", false}};
static const gt_field tool_call_function_fields[] = {
    {"Index", "Index", false}, {"Name", "Name", false}, {"Arguments", "Arguments", false}};
static const gt_field tool_fields[] = {{"Type", "type", false}, {"Items", "items", true}, {"Function", "function", false}};
static const gt_field tool_function_fields[] = {
    {"Name", "name", false}, {"Description", "description", false}, {"Parameters", "parameters", false}};
static const gt_field tool_parameters_fields[] = {
    {"Type", "type", false},         {"Defs", "$defs", true}, {"Items", "items", true},
    {"Required", "required", true}, {"Properties", "properties", false}};
static const gt_field tool_property_fields[] = {
    {"AnyOf", "anyOf", true}, {"Type", "type", true},   {"Items", "items", true},      {"Description", "description", true},
    {"Enum", "enum", true},   {"Properties", "properties", true}, {"Required", "required", true}};

enum { MAX_JSON_DEPTH = 64 };

typedef struct builder {
    gt_heap *heap;
    bool failed;
} builder;

static gt_value string_of(builder *b, const json_t *j) {
    if (!json_is_string(j)) return gt_str_ref("", 0);
    gt_value v = gt_str(b->heap, json_string_value(j), json_string_length(j));
    if (v.kind != GT_STRING) b->failed = true;
    return v;
}

/* Map keys live in the heap: the JSON they come from may go first (a tool
 * call's arguments given as a string are parsed and freed). */
static const char *key_of(builder *b, const char *key) {
    gt_value v = gt_str(b->heap, key, strlen(key));
    if (v.kind != GT_STRING) {
        b->failed = true;
        return "";
    }
    return v.u.str.s;
}

static gt_value new_struct(builder *b, const char *type_name, const gt_field *fields, size_t n, unsigned flags) {
    gt_agg *a = gt_agg_new(b->heap, n, false);
    if (!a) {
        b->failed = true;
        return gt_nil();
    }
    a->type_name = type_name;
    a->fields = fields;
    return (gt_value){.kind = GT_STRUCT, .flags = flags, .u.agg = a};
}

static gt_value nil_agg(builder *b, gt_kind kind, const char *type_name, unsigned flags) {
    gt_agg *a = gt_agg_new(b->heap, 0, kind == GT_MAP);
    if (!a) {
        b->failed = true;
        return gt_nil();
    }
    a->type_name = type_name;
    return (gt_value){.kind = kind, .flags = flags | GT_NIL_AGG, .u.agg = a};
}

/* Any JSON as Go decodes it into `any`: numbers float64, objects maps. */
static gt_value any_of_json(builder *b, const json_t *j, int depth) {
    if (depth > MAX_JSON_DEPTH) {
        b->failed = true;
        return gt_nil();
    }
    switch (json_typeof(j)) {
    case JSON_TRUE: return gt_bool(true);
    case JSON_FALSE: return gt_bool(false);
    case JSON_INTEGER: return gt_float((double)json_integer_value(j));
    case JSON_REAL: return gt_float(json_real_value(j));
    case JSON_STRING: return string_of(b, j);
    case JSON_ARRAY: {
        gt_agg *a = gt_agg_new(b->heap, json_array_size(j), false);
        if (!a) return b->failed = true, gt_nil();
        for (size_t i = 0; i < a->n; i++) a->items[i] = any_of_json(b, json_array_get(j, i), depth + 1);
        return (gt_value){.kind = GT_LIST, .u.agg = a};
    }
    case JSON_OBJECT: {
        gt_agg *a = gt_agg_new(b->heap, json_object_size(j), true);
        if (!a) return b->failed = true, gt_nil();
        size_t i = 0;
        const char *key;
        json_t *value;
        json_object_foreach((json_t *)j, key, value) {
            a->keys[i] = key_of(b, key);
            a->items[i++] = any_of_json(b, value, depth + 1);
        }
        gt_map_sort(a);
        return (gt_value){.kind = GT_MAP, .u.agg = a};
    }
    default: return gt_nil();
    }
}

/* A []string, or a nil slice when absent. */
static gt_value strings_of(builder *b, const json_t *j, unsigned flags) {
    if (json_is_string(j) && (flags & GT_PROP_TYPE)) { /* PropertyType takes one string too */
        gt_agg *a = gt_agg_new(b->heap, 1, false);
        if (!a) return b->failed = true, gt_nil();
        a->type_name = "api.PropertyType";
        a->items[0] = string_of(b, j);
        return (gt_value){.kind = GT_LIST, .flags = flags, .u.agg = a};
    }
    const char *type_name = flags & GT_PROP_TYPE ? "api.PropertyType" : "[]string";
    if (!json_is_array(j)) return nil_agg(b, GT_LIST, type_name, flags);
    gt_agg *a = gt_agg_new(b->heap, json_array_size(j), false);
    if (!a) return b->failed = true, gt_nil();
    a->type_name = type_name;
    for (size_t i = 0; i < a->n; i++) a->items[i] = string_of(b, json_array_get(j, i));
    return (gt_value){.kind = GT_LIST, .flags = flags, .u.agg = a};
}

static gt_value property_of(builder *b, const json_t *j, int depth);

/* Properties by name: sorted for templateProperties (a Go map), in their
 * order for a nested api.ToolPropertiesMap (an ordered map). */
static gt_value properties_of(builder *b, const json_t *j, int depth, bool sorted) {
    gt_agg *a = gt_agg_new(b->heap, json_object_size(j), true);
    if (!a) return b->failed = true, gt_nil();
    a->type_name = sorted ? "template.templateProperties" : "*api.ToolPropertiesMap";
    size_t i = 0;
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)j, key, value) {
        a->keys[i] = key_of(b, key);
        a->items[i++] = property_of(b, value, depth + 1);
    }
    if (sorted) gt_map_sort(a);
    return (gt_value){.kind = GT_MAP, .flags = sorted ? GT_STRINGER : 0, .u.agg = a};
}

static gt_value property_of(builder *b, const json_t *j, int depth) {
    if (depth > MAX_JSON_DEPTH) return b->failed = true, gt_nil();
    gt_value v = new_struct(b, "api.ToolProperty", tool_property_fields, 7, GT_TOOL_PROP);
    if (v.kind != GT_STRUCT) return v;
    gt_value *f = v.u.agg->items;
    const json_t *any_of = json_object_get(j, "anyOf"), *props = json_object_get(j, "properties");
    if (json_is_array(any_of)) {
        gt_agg *a = gt_agg_new(b->heap, json_array_size(any_of), false);
        if (!a) return b->failed = true, v;
        a->type_name = "[]api.ToolProperty";
        for (size_t i = 0; i < a->n; i++) a->items[i] = property_of(b, json_array_get(any_of, i), depth + 1);
        f[0] = (gt_value){.kind = GT_LIST, .u.agg = a};
    } else f[0] = nil_agg(b, GT_LIST, "[]api.ToolProperty", 0);
    f[1] = strings_of(b, json_object_get(j, "type"), GT_PROP_TYPE);
    f[2] = json_object_get(j, "items") ? any_of_json(b, json_object_get(j, "items"), depth + 1) : gt_nil();
    f[3] = string_of(b, json_object_get(j, "description"));
    f[4] = json_is_array(json_object_get(j, "enum")) ? any_of_json(b, json_object_get(j, "enum"), depth + 1)
                                                     : nil_agg(b, GT_LIST, "[]interface {}", 0);
    f[5] = json_is_object(props) ? properties_of(b, props, depth + 1, false) : gt_nil();
    f[6] = strings_of(b, json_object_get(j, "required"), 0);
    return v;
}

/* convertToolsForTemplate: a nil list when there are no tools. */
static gt_value tools_of(builder *b, const json_t *tools) {
    if (!json_is_array(tools)) return nil_agg(b, GT_LIST, "template.templateTools", GT_STRINGER);
    gt_agg *a = gt_agg_new(b->heap, json_array_size(tools), false);
    if (!a) return b->failed = true, gt_nil();
    a->type_name = "template.templateTools";
    for (size_t i = 0; i < a->n && !b->failed; i++) {
        const json_t *t = json_array_get(tools, i), *fn = json_object_get(t, "function"),
                     *params = json_object_get(fn, "parameters");
        gt_value tool = new_struct(b, "template.templateTool", tool_fields, 3, GT_STRINGER),
                 func = new_struct(b, "template.templateToolFunction", tool_function_fields, 3, GT_STRINGER),
                 par = new_struct(b, "template.templateToolFunctionParameters", tool_parameters_fields, 5, GT_STRINGER);
        if (b->failed) break;
        tool.u.agg->items[0] = string_of(b, json_object_get(t, "type"));
        tool.u.agg->items[1] = json_object_get(t, "items") ? any_of_json(b, json_object_get(t, "items"), 1) : gt_nil();
        tool.u.agg->items[2] = func;
        func.u.agg->items[0] = string_of(b, json_object_get(fn, "name"));
        func.u.agg->items[1] = string_of(b, json_object_get(fn, "description"));
        func.u.agg->items[2] = par;
        gt_value *p = par.u.agg->items;
        p[0] = string_of(b, json_object_get(params, "type"));
        p[1] = json_object_get(params, "$defs") ? any_of_json(b, json_object_get(params, "$defs"), 1) : gt_nil();
        p[2] = json_object_get(params, "items") ? any_of_json(b, json_object_get(params, "items"), 1) : gt_nil();
        p[3] = strings_of(b, json_object_get(params, "required"), 0);
        const json_t *props = json_object_get(params, "properties");
        p[4] = json_is_object(props) ? properties_of(b, props, 1, true)
                                     : nil_agg(b, GT_MAP, "template.templateProperties", GT_STRINGER);
        a->items[i] = tool;
    }
    return (gt_value){.kind = GT_LIST, .flags = GT_STRINGER, .u.agg = a};
}

/* A tool call's arguments: an object, or (OpenAI's form) a string of one. */
static gt_value arguments_of(builder *b, const json_t *args) {
    json_t *parsed = NULL;
    if (json_is_string(args)) args = parsed = json_loads(json_string_value(args), JSON_DECODE_ANY, NULL);
    gt_value v = json_is_object(args) ? any_of_json(b, args, 1) : nil_agg(b, GT_MAP, NULL, 0);
    json_decref(parsed);
    if (v.kind == GT_MAP) {
        ((gt_agg *)v.u.agg)->type_name = "template.templateArgs";
        v.flags |= GT_STRINGER;
    }
    return v;
}

static gt_value tool_calls_of(builder *b, const json_t *calls) {
    if (!json_is_array(calls) || json_array_size(calls) == 0) return nil_agg(b, GT_LIST, "[]template.templateToolCall", 0);
    gt_agg *a = gt_agg_new(b->heap, json_array_size(calls), false);
    if (!a) return b->failed = true, gt_nil();
    a->type_name = "[]template.templateToolCall";
    for (size_t i = 0; i < a->n && !b->failed; i++) {
        const json_t *c = json_array_get(calls, i), *fn = json_object_get(c, "function");
        gt_value call = new_struct(b, "template.templateToolCall", tool_call_fields, 2, 0),
                 func = new_struct(b, "template.templateToolCallFunction", tool_call_function_fields, 3, 0);
        if (b->failed) break;
        call.u.agg->items[0] = string_of(b, json_object_get(c, "id"));
        call.u.agg->items[1] = func;
        json_int_t index = json_integer_value(json_object_get(fn, "index"));
        func.u.agg->items[0] = gt_int((int64_t)index);
        func.u.agg->items[1] = string_of(b, json_object_get(fn, "name"));
        func.u.agg->items[2] = arguments_of(b, json_object_get(fn, "arguments"));
        a->items[i] = call;
    }
    return (gt_value){.kind = GT_LIST, .u.agg = a};
}

/* A message's text: a string, or OpenAI's list of parts (the text ones joined). */
static gt_value content_of(builder *b, const json_t *content) {
    if (!json_is_array(content)) return string_of(b, content);
    jbuf text = {0};
    for (size_t i = 0; i < json_array_size(content); i++) {
        const json_t *part = json_array_get(content, i);
        if (json_is_string(json_object_get(part, "text")))
            jbuf_put(&text, json_string_value(json_object_get(part, "text")), json_string_length(json_object_get(part, "text")));
    }
    gt_value v = gt_str(b->heap, text.data ? text.data : "", text.len);
    if (v.kind != GT_STRING || text.oom) b->failed = true;
    jbuf_free(&text);
    return v;
}

static gt_value concat(builder *b, gt_value a, const char *sep, gt_value c) {
    size_t sl = strlen(sep), n = a.u.str.len + sl + c.u.str.len;
    char *p = gt_alloc(b->heap, n + 1);
    if (!p) return b->failed = true, a;
    memcpy(p, a.u.str.s, a.u.str.len);
    memcpy(p + a.u.str.len, sep, sl);
    memcpy(p + a.u.str.len + sl, c.u.str.s, c.u.str.len);
    p[n] = '\0';
    return gt_str_ref(p, n);
}

static bool role_is(gt_value msg, const char *role) {
    gt_value r = msg.u.agg->items[0];
    return r.u.str.len == strlen(role) && !memcmp(r.u.str.s, role, r.u.str.len);
}

/* The messages as templateMessages, collated; *system joins every system
 * message's content. Returns the list (a nil list when there are none). */
static gt_value collate(builder *b, const json_t *messages, gt_value *system) {
    *system = gt_str_ref("", 0);
    size_t n = json_array_size(messages), kept = 0;
    if (n == 0) return nil_agg(b, GT_LIST, "[]*template.templateMessage", 0);
    gt_agg *list = gt_agg_new(b->heap, n, false);
    if (!list) return b->failed = true, gt_nil();
    list->type_name = "[]*template.templateMessage";
    bool any_system = false;
    for (size_t i = 0; i < n && !b->failed; i++) {
        const json_t *m = json_array_get(messages, i);
        gt_value msg = new_struct(b, "*template.templateMessage", message_fields, 7, 0);
        if (b->failed) break;
        gt_value *f = ((gt_agg *)msg.u.agg)->items;
        f[0] = string_of(b, json_object_get(m, "role"));
        if (f[0].kind == GT_STRING) {
            char *lower = (char *)f[0].u.str.s;
            for (size_t k = 0; k < f[0].u.str.len; k++) lower[k] = (char)tolower((unsigned char)lower[k]);
        }
        f[1] = content_of(b, json_object_get(m, "content"));
        f[2] = string_of(b, json_object_get(m, "thinking"));
        f[3] = nil_agg(b, GT_LIST, "[]api.ImageData", 0);
        f[4] = tool_calls_of(b, json_object_get(m, "tool_calls"));
        const json_t *tool_name = json_object_get(m, "tool_name");
        f[5] = string_of(b, tool_name ? tool_name : role_is(msg, "tool") ? json_object_get(m, "name") : NULL);
        f[6] = string_of(b, json_object_get(m, "tool_call_id"));
        if (b->failed) break;
        if (role_is(msg, "system")) {
            *system = any_system ? concat(b, *system, "\n\n", f[1]) : f[1];
            any_system = true;
        }
        if (kept && !role_is(msg, "tool") && role_is(list->items[kept - 1], f[0].u.str.s)) {
            gt_value *prev = &((gt_agg *)list->items[kept - 1].u.agg)->items[1];
            *prev = concat(b, *prev, "\n\n", f[1]);
        } else list->items[kept++] = msg;
    }
    list->n = kept;
    return (gt_value){.kind = GT_LIST, .u.agg = list};
}

/* --- the data maps ---------------------------------------------------------------------------- */

typedef struct entry {
    const char *key;
    gt_value value;
} entry;

static gt_value data_map(builder *b, const entry *e, size_t n) {
    gt_agg *a = gt_agg_new(b->heap, n, true);
    if (!a) return b->failed = true, gt_nil();
    a->type_name = "map[string]interface {}";
    for (size_t i = 0; i < n; i++) a->keys[i] = e[i].key, a->items[i] = e[i].value;
    gt_map_sort(a);
    return (gt_value){.kind = GT_MAP, .u.agg = a};
}

typedef struct think {
    gt_value on, level, set;
} think;

/* api.ThinkValue: true or a level ("high", "medium", "low", "max") turns it
 * on; true alone means level "medium". */
static think think_of(const json_t *j) {
    think t = {gt_bool(false), gt_str_ref("", 0), gt_bool(j && !json_is_null(j))};
    if (json_is_true(j)) t.on = gt_bool(true), t.level = gt_str_ref("medium", 6);
    if (json_is_string(j)) {
        const char *s = json_string_value(j);
        t.on = gt_bool(!strcmp(s, "high") || !strcmp(s, "medium") || !strcmp(s, "low") || !strcmp(s, "max"));
        t.level = gt_str_ref(s, json_string_length(j));
    }
    return t;
}

bool gt_ollama_render(const gt_program *prog, const json_t *messages, const json_t *extra, const struct tm *now,
                      const gt_limits *limits, jbuf *out, gt_error *err) {
    memset(err, 0, sizeof *err);
    gt_heap heap = {.limit = limits->max_heap};
    builder b = {.heap = &heap};
    gt_exec ex = {.heap = &heap, .now = now, .limits = limits, .missing_zero = true, .ollama_funcs = true, .out = out, .err = err};
    /* sprout's server passes Ollama's think as the Jinja templates' enable_thinking */
    const json_t *think_value = json_object_get(extra, "think");
    think th = think_of(think_value ? think_value : json_object_get(extra, "enable_thinking"));
    gt_value system, collated = collate(&b, messages, &system);
    bool ok = false;
    const json_t *suffix = json_object_get(extra, "suffix"), *prompt = json_object_get(extra, "prompt");
    if (!prompt) /* the generate API's prompt is the last user message here */
        for (size_t i = json_array_size(messages); i-- > 0;)
            if (json_is_string(json_object_get(json_array_get(messages, i), "role")) &&
                !strcmp(json_string_value(json_object_get(json_array_get(messages, i), "role")), "user")) {
                prompt = json_object_get(json_array_get(messages, i), "content");
                break;
            }
    if (b.failed) goto oom;
    if (json_string_length(suffix) && json_string_length(prompt)) {
        entry e[] = {{"Prompt", string_of(&b, prompt)}, {"Suffix", string_of(&b, suffix)}, {"Response", gt_str_ref("", 0)},
                     {"Think", th.on}, {"ThinkLevel", th.level}, {"IsThinkSet", th.set}};
        gt_value data = data_map(&b, e, 6);
        if (b.failed) goto oom;
        ok = gt_execute(&ex, prog->root, data);
    } else if (prog->uses_messages) {
        entry e[] = {{"System", system}, {"Messages", collated}, {"Tools", tools_of(&b, json_object_get(extra, "tools"))},
                     {"Response", gt_str_ref("", 0)}, {"Think", th.on}, {"ThinkLevel", th.level}, {"IsThinkSet", th.set}};
        gt_value data = data_map(&b, e, 7);
        if (b.failed) goto oom;
        ok = gt_execute(&ex, prog->root, data);
    } else {
        gt_value turn[3] = {gt_str_ref("", 0), gt_str_ref("", 0), gt_str_ref("", 0)}; /* system, prompt, response */
        ok = true;
        for (size_t i = 0; ok && i <= collated.u.agg->n; i++) {
            bool last = i == collated.u.agg->n;
            gt_value m = last ? gt_nil() : collated.u.agg->items[i];
            bool flush = last || (role_is(m, "system") && (turn[1].u.str.len || turn[2].u.str.len)) ||
                         (role_is(m, "user") && turn[2].u.str.len);
            if (flush) {
                entry e[] = {{"System", turn[0]}, {"Prompt", turn[1]}, {"Response", turn[2]},
                             {"Think", th.on},    {"ThinkLevel", th.level}, {"IsThinkSet", th.set}};
                gt_value data = data_map(&b, e, 6);
                if (b.failed) goto oom;
                if (last) {
                    const gt_node *cut = gt_cut_after_response(&heap.arena, prog->root);
                    if (!cut) goto oom;
                    ex.missing_zero = ex.ollama_funcs = false;
                    ok = gt_execute(&ex, cut, data);
                    break;
                }
                ok = gt_execute(&ex, prog->root, data);
                turn[0] = turn[1] = turn[2] = gt_str_ref("", 0);
            }
            if (role_is(m, "system")) turn[0] = m.u.agg->items[1];
            else if (role_is(m, "user")) turn[1] = m.u.agg->items[1];
            else if (role_is(m, "assistant")) turn[2] = m.u.agg->items[1];
        }
    }
    sp_arena_free(&heap.arena);
    return ok;
oom:
    sp_arena_free(&heap.arena);
    tpl_set_error(err, SPROUT_ERR_OUT_OF_MEMORY, 0, 0, "messages or tools too large or nested too deeply for the template");
    return false;
}
