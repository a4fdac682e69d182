/* The public chat-template API: parse once, render with messages and
 * variables; the built-in fallback templates; picking a model's template. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/error.h"
#include "template/go_template.h"
#include "template/template_internal.h"

/* One of two dialects: Jinja2 (prog) or Ollama's Go text/template (go). */
struct sprout_template {
    tpl_program prog;
    gt_program go;
    bool is_go;
};

static const tpl_limits default_limits = {
    .max_steps = 10 * 1000 * 1000,
    .max_output = 64u << 20,
    .max_heap = 256u << 20,
};

/* Where the last template error on this thread was. */
static _Thread_local int last_line, last_column;
static _Thread_local bool last_raised;

int sprout_template_error_line(void) { return last_line; }
int sprout_template_error_column(void) { return last_column; }
bool sprout_template_error_raised(void) { return last_raised; }

void sprout_free(void *p) { free(p); }

static sprout_status report(const tpl_error *err) {
    last_line = err->line;
    last_column = err->column;
    last_raised = err->raised;
    sprout_status st = err->status == SPROUT_OK ? SPROUT_ERR_FORMAT : err->status;
    if (err->raised || err->line <= 0) return sp_fail(st, "%s", err->message);
    return sp_fail(st, "line %d, column %d: %s", err->line, err->column, err->message);
}

static sprout_status report_go(const gt_error *go) {
    tpl_error err = {.status = go->status, .line = go->line, .column = go->column};
    snprintf(err.message, sizeof err.message, "%s", go->message);
    return report(&err);
}

sprout_status sprout_template_parse(const char *source, size_t len, sprout_template **out) {
    if (!out) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "NULL output pointer");
    *out = NULL;
    if (!source && len) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "NULL template source");
    sprout_template *t = calloc(1, sizeof *t);
    if (!t) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
    tpl_error err;
    gt_error go_err;
    bool is_go = t->is_go = gt_is_go_source(source ? source : "", len);
    bool parsed = is_go ? gt_parse(source, len, &t->go, &go_err) : tpl_parse(source ? source : "", len, &t->prog, &err);
    if (!parsed) {
        sprout_template_free(t);
        return is_go ? report_go(&go_err) : report(&err);
    }
    *out = t;
    return SPROUT_OK;
}

void sprout_template_free(sprout_template *t) {
    if (!t) return;
    if (t->is_go) gt_program_free(&t->go);
    else tpl_program_free(&t->prog);
    free(t);
}

/* --- JSON to template values ------------------------------------------------------------- */

static bool from_json(jv_heap *h, const json_t *j, int depth, jv *out) {
    if (depth > 64) return false;
    switch (json_typeof(j)) {
    case JSON_NULL: *out = jv_none(); return true;
    case JSON_TRUE: *out = jv_bool(true); return true;
    case JSON_FALSE: *out = jv_bool(false); return true;
    case JSON_INTEGER: *out = jv_int((int64_t)json_integer_value(j)); return true;
    case JSON_REAL: *out = jv_float(json_real_value(j)); return true;
    case JSON_STRING: *out = jv_str(h, json_string_value(j), json_string_length(j)); return out->type == JV_STR;
    case JSON_ARRAY: {
        jv list = jv_list(h, NULL, json_array_size(j), false);
        if (list.type != JV_LIST) return false;
        for (size_t i = 0; i < json_array_size(j); i++)
            if (!from_json(h, json_array_get(j, i), depth + 1, &((jlist *)list.u.l)->items[i])) return false;
        *out = list;
        return true;
    }
    case JSON_OBJECT: {
        jv d = jv_dict(h, json_object_size(j) + 1);
        if (d.type != JV_DICT) return false;
        const char *key;
        const json_t *value;
        json_object_foreach((json_t *)j, key, value) {
            jv k = jv_cstr(h, key), v;
            if (k.type != JV_STR || !from_json(h, value, depth + 1, &v) || !jv_dict_set(h, d.u.d, k, v)) return false;
        }
        *out = d;
        return true;
    }
    }
    return false;
}

static bool set_var(jv_heap *h, jv ctx, const char *name, jv v) {
    jv k = jv_cstr(h, name);
    return k.type == JV_STR && jv_dict_set(h, ctx.u.d, k, v);
}

/* A JSON argument of the caller's: an object (extra variables) or an
 * array (messages). jansson says a failed allocation as a parse error, so
 * its error code tells out of memory apart from a bad text. */
static sprout_status load_json_arg(const char *text, bool want_array, const char *what, json_t **out) {
    json_error_t jerr;
    json_t *j = json_loads(text, 0, &jerr);
    if (j && (want_array ? json_is_array(j) : json_is_object(j))) {
        *out = j;
        return SPROUT_OK;
    }
    json_decref(j);
    *out = NULL;
    if (!j && json_error_code(&jerr) == json_error_out_of_memory) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
    return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "%s must be a JSON %s%s%s", what, want_array ? "array" : "object", j ? "" : ": ",
                   j ? "" : jerr.text);
}

static sprout_status parse_now(const char *now, struct tm *tm) {
    memset(tm, 0, sizeof *tm);
    if (!now) {
        time_t t = time(NULL);
        localtime_r(&t, tm);
        return SPROUT_OK;
    }
    int y, mo, d, hh = 0, mm = 0, ss = 0;
    int n = sscanf(now, "%d-%d-%dT%d:%d:%d", &y, &mo, &d, &hh, &mm, &ss);
    if ((n != 3 && n != 6) || mo < 1 || mo > 12 || d < 1 || d > 31 || hh < 0 || hh > 23 || mm < 0 || mm > 59 || ss < 0 || ss > 60)
        return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "time '%s' is not YYYY-MM-DDTHH:MM:SS", now);
    tm->tm_year = y - 1900;
    tm->tm_mon = mo - 1;
    tm->tm_mday = d;
    tm->tm_hour = hh;
    tm->tm_min = mm;
    tm->tm_sec = ss;
    time_t t = timegm(tm); /* fills in the weekday and day of the year */
    gmtime_r(&t, tm);
    return SPROUT_OK;
}

/* Renders with `messages` already converted; owns nothing else. */
static sprout_status render(const sprout_template *t, jv_heap *heap, jv messages, const sprout_template_options *opt,
                            char **out, size_t *out_len) {
    struct tm now;
    sprout_status st = parse_now(opt ? opt->now : NULL, &now);
    if (st != SPROUT_OK) return st;
    jv ctx = jv_dict(heap, 16);
    if (ctx.type != JV_DICT) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
    /* what transformers' apply_chat_template passes */
    bool ok = set_var(heap, ctx, "messages", messages) &&
              set_var(heap, ctx, "add_generation_prompt", jv_bool(opt && opt->add_generation_prompt)) &&
              set_var(heap, ctx, "tools", jv_none()) && set_var(heap, ctx, "documents", jv_none());
    if (ok && opt && opt->bos_token) ok = set_var(heap, ctx, "bos_token", jv_cstr(heap, opt->bos_token));
    if (ok && opt && opt->eos_token) ok = set_var(heap, ctx, "eos_token", jv_cstr(heap, opt->eos_token));
    if (ok && opt && opt->extra_json) {
        json_t *extra;
        if ((st = load_json_arg(opt->extra_json, false, "extra variables", &extra)) != SPROUT_OK) return st;
        const char *key;
        json_t *value;
        json_object_foreach(extra, key, value) {
            jv v;
            if (!(ok = from_json(heap, value, 0, &v) && set_var(heap, ctx, key, v))) break;
        }
        json_decref(extra);
    }
    if (!ok) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");

    jbuf result = {0};
    tpl_error err;
    if (!tpl_render(&t->prog, ctx, heap, &now, &default_limits, &result, &err)) {
        jbuf_free(&result);
        return report(&err);
    }
    if (result.oom) {
        jbuf_free(&result);
        return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    if (!result.data) { /* empty output: still a string */
        result.data = calloc(1, 1);
        if (!result.data) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    *out = result.data;
    if (out_len) *out_len = result.len;
    return SPROUT_OK;
}

/* Ollama's template: the messages and extra variables go to its data model. */
static sprout_status render_go(const sprout_template *t, const json_t *messages, const sprout_template_options *opt,
                               char **out, size_t *out_len) {
    struct tm now;
    sprout_status st = parse_now(opt ? opt->now : NULL, &now);
    if (st != SPROUT_OK) return st;
    json_t *extra = NULL;
    if (opt && opt->extra_json) {
        if ((st = load_json_arg(opt->extra_json, false, "extra variables", &extra)) != SPROUT_OK) return st;
    }
    jbuf result = {0};
    gt_error err;
    const gt_limits limits = {default_limits.max_steps, default_limits.max_output, default_limits.max_heap};
    bool ok = gt_ollama_render(&t->go, messages, extra, &now, &limits, &result, &err);
    json_decref(extra);
    if (!ok || result.oom) {
        jbuf_free(&result);
        return ok ? sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory") : report_go(&err);
    }
    *out = result.data ? result.data : calloc(1, 1);
    if (!*out) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
    if (out_len) *out_len = result.len;
    return SPROUT_OK;
}

static sprout_status check_call(const sprout_template *t, const sprout_template_options *opt, char **out) {
    if (!t || !out) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "NULL template or output");
    *out = NULL;
    if (opt && opt->struct_size && opt->struct_size < sizeof(size_t) + sizeof(bool))
        return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "sprout_template_options.struct_size is too small");
    last_line = last_column = 0;
    last_raised = false;
    return SPROUT_OK;
}

sprout_status sprout_template_render(const sprout_template *t, const sprout_chat_message *messages, size_t n_messages,
                                     const sprout_template_options *opt, char **out, size_t *out_len) {
    sprout_status st = check_call(t, opt, out);
    if (st != SPROUT_OK) return st;
    if (!messages && n_messages) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "NULL messages");
    if (t->is_go) {
        json_t *list = json_array();
        for (size_t i = 0; list && i < n_messages; i++)
            if (json_array_append_new(list, json_pack("{s:s, s:s}", "role", messages[i].role ? messages[i].role : "", "content",
                                                      messages[i].content ? messages[i].content : "")))
                json_decref(list), list = NULL;
        st = list ? render_go(t, list, opt, out, out_len) : sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "messages must be UTF-8 text");
        json_decref(list);
        return st;
    }
    jv_heap heap = {.limit = default_limits.max_heap};
    jv list = jv_list(&heap, NULL, n_messages, false);
    bool ok = list.type == JV_LIST;
    for (size_t i = 0; ok && i < n_messages; i++) {
        jv m = jv_dict(&heap, 2);
        ok = m.type == JV_DICT && set_var(&heap, m, "role", jv_cstr(&heap, messages[i].role ? messages[i].role : "")) &&
             set_var(&heap, m, "content", jv_cstr(&heap, messages[i].content ? messages[i].content : ""));
        if (ok) ((jlist *)list.u.l)->items[i] = m;
    }
    st = ok ? render(t, &heap, list, opt, out, out_len) : sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
    sp_arena_free(&heap.arena);
    return st;
}

sprout_status sprout_template_render_json(const sprout_template *t, const char *messages_json,
                                          const sprout_template_options *opt, char **out, size_t *out_len) {
    sprout_status st = check_call(t, opt, out);
    if (st != SPROUT_OK) return st;
    json_t *j;
    if ((st = load_json_arg(messages_json ? messages_json : "[]", true, "messages", &j)) != SPROUT_OK) return st;
    if (t->is_go) {
        st = render_go(t, j, opt, out, out_len);
        json_decref(j);
        return st;
    }
    jv_heap heap = {.limit = default_limits.max_heap};
    jv messages;
    bool ok = from_json(&heap, j, 0, &messages);
    json_decref(j);
    st = ok                  ? render(t, &heap, messages, opt, out, out_len)
         : heap.out_of_memory ? sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory")
                              : sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "messages nested too deeply or too large");
    sp_arena_free(&heap.arena);
    return st;
}

/* --- built-in templates -------------------------------------------------------------------- */

static const struct {
    const char *name;
    const char *source;
} builtins[] = {
    {"chatml",
     "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
     "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"},
    {"llama2",
     "{% if messages and messages[0]['role'] == 'system' %}{% set system = messages[0]['content'] %}"
     "{% set rest = messages[1:] %}{% else %}{% set system = none %}{% set rest = messages %}{% endif %}"
     "{% for message in rest %}{% if message['role'] == 'user' %}"
     "{% if loop.index0 == 0 and system %}{% set text = '<<SYS>>\\n' + system + '\\n<</SYS>>\\n\\n' + message['content'] %}"
     "{% else %}{% set text = message['content'] %}{% endif %}"
     "{{ bos_token + '[INST] ' + text | trim + ' [/INST]' }}"
     "{% elif message['role'] == 'assistant' %}{{ ' ' + message['content'] | trim + ' ' + eos_token }}{% endif %}{% endfor %}"},
    {"llama3",
     "{{ bos_token }}{% for message in messages %}"
     "{{ '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' + message['content'] | trim + '<|eot_id|>' }}"
     "{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}"},
    {"zephyr",
     "{% for message in messages %}{{ '<|' + message['role'] + '|>\\n' + message['content'] + eos_token + '\\n' }}{% endfor %}"
     "{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% endif %}"},
    {"phi3",
     "{% for message in messages %}{{ '<|' + message['role'] + '|>\\n' + message['content'] + '<|end|>\\n' }}{% endfor %}"
     "{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% endif %}"},
    {"gemma",
     "{{ bos_token }}{% for message in messages %}{% set role = 'model' if message['role'] == 'assistant' else 'user' %}"
     "{% if loop.first and message['role'] == 'system' %}{% set prefix = message['content'] + '\\n\\n' %}{% else %}"
     "{{ '<start_of_turn>' + role + '\\n' + (prefix if loop.index0 == 1 and prefix is defined else '') + message['content'] | trim "
     "+ '<end_of_turn>\\n' }}{% endif %}{% endfor %}{% if add_generation_prompt %}{{ '<start_of_turn>model\\n' }}{% endif %}"},
    {"mistral",
     "{{ bos_token }}{% for message in messages %}{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}"
     "{% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token }}"
     "{% elif message['role'] == 'system' %}{{ '[INST] ' + message['content'] + '\\n\\n' }}{% endif %}{% endfor %}"},
};

const char *sprout_template_builtin(const char *name) {
    for (size_t i = 0; name && i < sizeof builtins / sizeof builtins[0]; i++)
        if (!strcmp(builtins[i].name, name)) return builtins[i].source;
    return NULL;
}

sprout_status sprout_template_for_model(const sprout_gguf *gguf, const char *override, const char **source, size_t *len) {
    if (!source || !len) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "NULL output");
    if (override && *override) {
        const char *b = sprout_template_builtin(override);
        *source = b ? b : override;
        *len = strlen(*source);
        return SPROUT_OK;
    }
    if (gguf && sprout_gguf_get_str(gguf, "tokenizer.chat_template", source, len) == SPROUT_OK) return SPROUT_OK;
    *source = sprout_template_builtin("chatml");
    *len = strlen(*source);
    return SPROUT_OK;
}
