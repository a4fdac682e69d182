/* PARAMETER lines to Ollama's params JSON and back. Applying stored
 * parameters goes back through Modelfile text and the Modelfile parser, so
 * that one piece of code (sp_modelfile_apply_parameters) maps names onto a
 * generation config, whether the values come from a file or a store. */
#include "store/params.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/error.h"

/* Ollama's options that configure its own runner or samplers sprout does
 * not offer: accepted in a Modelfile and kept in the store, never applied. */
static bool param_ignored(const char *name) {
    static const char *const names[] = {
        "num_gpu", "main_gpu", "use_mmap", "use_mlock", "numa", "low_vram", "f16_kv", "vocab_only", "logits_all",
        "embedding_only", "num_gqa", "rope_frequency_base", "rope_frequency_scale", "penalize_newline",
        "mirostat", "mirostat_tau", "mirostat_eta", "tfs_z",
    };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (!strcmp(name, names[i])) return true;
    return false;
}

static bool repeatable(const char *name) { return !strcmp(name, "stop") || !strcmp(name, "stop_id"); }

/* A value as its JSON type: an integer, a number, a boolean, else text
 * (stop is always text: "PARAMETER stop 3" stops at "3"). */
static json_t *typed_value(const char *name, const char *v) {
    if (!strcmp(name, "stop")) return json_string(v);
    char *end;
    errno = 0;
    long long i = strtoll(v, &end, 10);
    if (end != v && !*end && errno != ERANGE) return json_integer(i);
    double d = strtod(v, &end);
    if (end != v && !*end && isfinite(d)) return json_real(d);
    if (!strcmp(v, "true") || !strcmp(v, "false")) return json_boolean(!strcmp(v, "true"));
    return json_string(v);
}

sprout_status sp_params_to_json(const sp_modelfile *mf, char **json) {
    *json = NULL;
    /* check every applicable line against the parser's table, on a config nobody uses */
    sp_modelfile checked = *mf;
    checked.params = calloc(mf->n_params ? mf->n_params : 1, sizeof *checked.params);
    if (!checked.params) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "store: out of memory");
    checked.n_params = 0;
    for (size_t i = 0; i < mf->n_params; i++)
        if (!param_ignored(mf->params[i].name)) checked.params[checked.n_params++] = mf->params[i];
    sprout_generation_config cfg;
    sprout_generation_config_init(&cfg);
    sp_modelfile_runner runner = {0};
    sprout_status st = sp_modelfile_apply_parameters(&checked, &cfg, &runner);
    free(checked.params);
    if (st != SPROUT_OK) return st;

    json_t *obj = json_object();
    bool ok = obj != NULL;
    for (size_t i = 0; ok && i < mf->n_params; i++) {
        const sp_modelfile_param *p = &mf->params[i];
        json_t *v = typed_value(p->name, p->value);
        if (!v) ok = false;
        else if (repeatable(p->name)) {
            json_t *list = json_object_get(obj, p->name);
            if (!list) ok = json_object_set_new(obj, p->name, list = json_array()) == 0 && list;
            if (ok) ok = json_array_append_new(list, v) == 0; /* which takes v even when it fails */
            else json_decref(v);
        } else {
            ok = json_object_set_new(obj, p->name, v) == 0;
        }
    }
    *json = ok ? json_dumps(obj, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(obj);
    return *json ? SPROUT_OK : sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "store: out of memory");
}

sprout_status sp_messages_to_json(const sp_modelfile *mf, char **json) {
    json_t *list = json_array();
    bool ok = list != NULL;
    for (size_t i = 0; ok && i < mf->n_messages; i++)
        ok = json_array_append_new(list, json_pack("{s:s, s:s}", "role", mf->messages[i].role, "content",
                                                   mf->messages[i].content)) == 0;
    *json = ok ? json_dumps(list, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(list);
    return *json ? SPROUT_OK : sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "store: out of memory");
}

/* One value as a Modelfile writes it: numbers plainly, text quoted with
 * \" and \\ escaped (the parser's quoted form takes any text). */
static bool put_value(sp_buf *b, json_t *v) {
    char num[64];
    if (json_is_integer(v)) {
        snprintf(num, sizeof num, "%lld", (long long)json_integer_value(v));
    } else if (json_is_real(v)) {
        snprintf(num, sizeof num, "%.9g", json_real_value(v));
    } else if (json_is_boolean(v)) {
        snprintf(num, sizeof num, "%s", json_is_true(v) ? "true" : "false");
    } else if (json_is_string(v)) {
        const char *s = json_string_value(v);
        bool ok = sp_buf_put(b, "\"", 1);
        for (; ok && *s; s++) ok = (*s == '"' || *s == '\\' ? sp_buf_put(b, "\\", 1) : true) && sp_buf_put(b, s, 1);
        return ok && sp_buf_put(b, "\"", 1);
    } else {
        return false;
    }
    return sp_buf_put(b, num, strlen(num));
}

static bool put_line(sp_buf *b, const char *name, json_t *v) {
    return sp_buf_put(b, "PARAMETER ", 10) && sp_buf_put(b, name, strlen(name)) && sp_buf_put(b, " ", 1) &&
           put_value(b, v) && sp_buf_put(b, "\n", 1);
}

/* The lines; with `applicable`, only the names sprout applies. */
static sprout_status lines_of(const char *json, bool applicable, sp_buf *b) {
    json_t *obj = json_loads(json, 0, NULL);
    if (!json_is_object(obj)) {
        json_decref(obj);
        return sp_fail(SPROUT_ERR_FORMAT, "params layer: not a JSON object");
    }
    const char *key;
    json_t *v;
    sprout_status st = SPROUT_OK;
    json_object_foreach(obj, key, v) {
        if (applicable && param_ignored(key)) continue;
        if (strchr(key, '\n') || strchr(key, ' ') || !*key) {
            st = sp_fail(SPROUT_ERR_FORMAT, "params layer: a bad parameter name");
            break;
        }
        bool ok = true;
        if (json_is_array(v)) {
            size_t i;
            json_t *e;
            json_array_foreach(v, i, e) ok = ok && put_line(b, key, e);
        } else {
            ok = put_line(b, key, v);
        }
        if (!ok) {
            st = sp_fail(SPROUT_ERR_FORMAT, "params layer: '%.40s' is not a number, text or list of them", key);
            break;
        }
    }
    json_decref(obj);
    return st;
}

sprout_status sp_params_from_json(const char *json, sp_modelfile **out) {
    *out = NULL;
    sp_buf b = {0};
    sprout_status st = sp_buf_put(&b, "FROM stored\n", 12) ? lines_of(json, true, &b)
                                                           : sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "store: out of memory");
    if (st == SPROUT_OK) st = sp_modelfile_parse(b.data, b.len, out);
    free(b.data);
    return st;
}

sprout_status sp_params_modelfile_lines(const char *json, char **text) {
    *text = NULL;
    sp_buf b = {0};
    sprout_status st = lines_of(json, false, &b);
    if (st == SPROUT_OK && !b.data && !sp_buf_put(&b, "", 0)) st = sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "store: out of memory");
    if (st != SPROUT_OK) {
        free(b.data);
        return st;
    }
    *text = b.data;
    return SPROUT_OK;
}

sprout_status sp_messages_from_json(const char *json, sp_modelfile **out) {
    *out = NULL;
    json_t *list = json_loads(json, 0, NULL);
    sp_buf b = {0};
    bool ok = sp_buf_put(&b, "FROM stored\n", 12);
    sprout_status st = json_is_array(list) ? SPROUT_OK : sp_fail(SPROUT_ERR_FORMAT, "messages layer: not a JSON array");
    size_t i;
    json_t *e;
    json_array_foreach(list, i, e) {
        if (st != SPROUT_OK) break;
        json_t *role = json_object_get(e, "role"), *content = json_object_get(e, "content");
        const char *r = json_string_value(role);
        if (!r || !json_is_string(content) || strspn(r, "abcdefghijklmnopqrstuvwxyz") != strlen(r) || !*r) {
            st = sp_fail(SPROUT_ERR_FORMAT, "messages layer: message %zu is not {\"role\", \"content\"}", i);
            break;
        }
        ok = ok && sp_buf_put(&b, "MESSAGE ", 8) && sp_buf_put(&b, r, strlen(r)) && sp_buf_put(&b, " ", 1) &&
             put_value(&b, content) && sp_buf_put(&b, "\n", 1);
    }
    json_decref(list);
    if (st == SPROUT_OK && !ok) st = sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "store: out of memory");
    if (st == SPROUT_OK) st = sp_modelfile_parse(b.data, b.len, out);
    free(b.data);
    return st;
}
