/* JSON Schema to GBNF: objects (required properties first, then optional
 * ones, additionalProperties) and arrays (items, prefixItems, counts). */
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/json_schema_internal.h"

typedef struct trie {
    uint32_t cp;
    bool end;
    struct trie *kids;
    size_t n_kids;
} trie;

static void trie_free(trie *t) {
    for (size_t i = 0; i < t->n_kids; i++) trie_free(&t->kids[i]);
    free(t->kids);
}

static bool trie_insert(trie *t, const char *s) {
    while (*s) {
        const uint32_t cp = next_cp(&s);
        size_t i = 0;
        while (i < t->n_kids && t->kids[i].cp < cp) i++;
        if (i == t->n_kids || t->kids[i].cp != cp) {
            trie *k = realloc(t->kids, (t->n_kids + 1) * sizeof *k);
            if (!k) return false;
            t->kids = k;
            memmove(&k[i + 1], &k[i], (t->n_kids - i) * sizeof *k);
            k[i] = (trie){cp, false, NULL, 0};
            t->n_kids++;
        }
        t = &t->kids[i];
    }
    t->end = true;
    return true;
}

/* Alternatives for a non-empty rest of a key, after the path to t (depth
 * groups in, a group a character), such that the whole key is none of the
 * names; paths past MAX_GROUP_NESTING go on in rules named after
 * `rest_rule`. */
static void put_trie(cv *c, sb *b, const trie *t, const char *rest_rule, int depth) {
    size_t n = 0;
    for (size_t i = 0; i < t->n_kids; i++) {
        const trie *k = &t->kids[i];
        if (json_escaped(k->cp)) continue; /* such a name is never a bare key */
        if (n++) sb_puts(b, " | ");
        sb_putc(b, '[');
        put_class_char(b, k->cp);
        sb_putc(b, ']');
        if (k->n_kids && depth + 1 < MAX_GROUP_NESTING) {
            sb_puts(b, " (");
            put_trie(c, b, k, rest_rule, depth + 1);
            sb_puts(b, k->end ? ")" : ")?");
        } else if (k->n_kids) {
            sb rest = {0};
            put_trie(c, &rest, k, rest_rule, 0);
            const char *name = add_rule(c, rest_rule, take(c, &rest));
            sb_printf(b, " %s%s", name ? name : "kchar", k->end ? "" : "?"); /* kchar: failed already (c says why) */
        } else {
            sb_puts(b, " kchar+");
        }
    }
    if (n) sb_puts(b, " | ");
    sb_puts(b, "[^\"\\\\\\x7F\\x00-\\x1F");
    for (size_t i = 0; i < t->n_kids; i++)
        if (!json_escaped(t->kids[i].cp)) put_class_char(b, t->kids[i].cp);
    sb_puts(b, "] kchar*");
}

const char *visit_object(cv *c, json_t *s, const char *name, const char *rule_name, const char *path) {
    json_t *props = json_object_get(s, "properties"), *req = json_object_get(s, "required");
    json_t *addl = json_object_get(s, "additionalProperties");
    if (props && !json_is_object(props)) {
        fail_format(c, path, "properties is not an object");
        return NULL;
    }
    if (req && !json_is_array(req)) {
        fail_format(c, path, "required is not a list");
        return NULL;
    }
    for (size_t i = 0; req && i < json_array_size(req); i++) {
        if (!json_is_string(json_array_get(req, i))) {
            fail_format(c, path, "required holds something that is no property name");
            return NULL;
        }
    }
    if (addl && !json_is_boolean(addl) && !json_is_object(addl)) {
        fail_format(c, path, "additionalProperties is not a schema");
        return NULL;
    }
    if (!props && !req && (!addl || json_is_true(addl))) return add_builtin(c, "object");
    /* llama.cpp: with properties and no additionalProperties, none extra */
    if (!addl && !props) addl = json_true();

    /* the properties, then required names that no property lists */
    size_t n = (props ? json_object_size(props) : 0) + (req ? json_array_size(req) : 0);
    const char **keys = calloc(n ? n : 1, sizeof *keys);
    json_t **schemas = calloc(n ? n : 1, sizeof *schemas);
    bool *required = calloc(n ? n : 1, sizeof *required);
    const char **kv = calloc(n ? n : 1, sizeof *kv);
    const char *result = NULL;
    if (!keys || !schemas || !required || !kv) {
        fail_oom(c);
        goto out;
    }
    n = 0;
    const char *k;
    json_t *v;
    if (props) {
        json_object_foreach(props, k, v) {
            keys[n] = k;
            schemas[n++] = v;
        }
    }
    for (size_t i = 0; req && i < json_array_size(req); i++) {
        const char *r = json_string_value(json_array_get(req, i));
        size_t j = 0;
        while (j < n && strcmp(keys[j], r)) j++;
        if (j == n) {
            if (json_is_false(addl)) {
                fail_keyword(c, path, "required", "\"%s\" is required but additionalProperties is false", r);
                goto out;
            }
            keys[n] = r;
            schemas[n++] = json_true();
        }
        required[j] = true;
    }
    /* one rule per property: "name" space ":" space value */
    for (size_t i = 0; i < n && !failed(c); i++) {
        char *pname = child_name(c, name, keys[i]);
        char *ppath = props && json_object_get(props, keys[i]) ? child_path(c, path, "properties") : NULL;
        char *pppath = ppath ? child_path(c, ppath, keys[i]) : NULL;
        const char *value = pname ? visit(c, schemas[i], pname, pppath ? pppath : path) : NULL;
        sb body = {0};
        if (value) {
            put_key_literal(&body, keys[i]);
            sb_printf(&body, " space \":\" space %s", value);
            sb kn = {0};
            sb_printf(&kn, "%s-kv", pname);
            char *kvname = take(c, &kn);
            if (kvname) kv[i] = add_rule(c, kvname, take(c, &body));
            else free(body.p);
            free(kvname);
        }
        free(pname);
        free(ppath);
        free(pppath);
    }
    if (failed(c)) goto out;
    /* the order: required first, then optional, each in schema order */
    size_t n_order = 0;
    const char **order_kv = calloc(n + 1, sizeof *order_kv);
    const char **order_key = calloc(n + 1, sizeof *order_key);
    if (!order_kv || !order_key) {
        free(order_kv);
        free(order_key);
        fail_oom(c);
        goto out;
    }
    size_t n_req = 0;
    for (size_t i = 0; i < n; i++)
        if (required[i]) order_kv[n_order] = kv[i], order_key[n_order++] = keys[i], n_req++;
    for (size_t i = 0; i < n; i++)
        if (!required[i]) order_kv[n_order] = kv[i], order_key[n_order++] = keys[i];
    if (addl && !json_is_false(addl)) {
        char *sub = child_name(c, name, "additional");
        char *vname = sub ? child_name(c, sub, "value") : NULL;
        char *apath = child_path(c, path, "additionalProperties");
        const char *value = NULL, *key = NULL;
        if (vname && apath) value = json_is_object(addl) ? visit(c, addl, vname, apath) : add_builtin(c, "value");
        if (value && n == 0) {
            key = add_builtin(c, "string");
        } else if (value) {
            trie t = {0};
            bool ok = true;
            for (size_t i = 0; i < n && ok; i++) ok = trie_insert(&t, keys[i]);
            if (!ok) fail_oom(c);
            sb kb = {0};
            sb_puts(&kb, "[\"] ( ");
            char *rest_name = child_name(c, sub, "k-rest");
            if (t.n_kids && rest_name) put_trie(c, &kb, &t, rest_name, 1);
            else sb_puts(&kb, "kchar+");
            free(rest_name);
            sb_printf(&kb, " )%s [\"]", t.end ? "" : "?");
            trie_free(&t);
            add_builtin(c, "kchar");
            char *kname = child_name(c, sub, "k");
            if (ok && kname) key = add_rule(c, kname, take(c, &kb));
            else free(kb.p);
            free(kname);
        }
        if (key) {
            sb body = {0};
            sb_printf(&body, "%s \":\" space %s", key, value);
            char *kvname = child_name(c, sub, "kv");
            if (kvname) {
                order_kv[n_order] = add_rule(c, kvname, take(c, &body));
                order_key[n_order++] = "*";
            } else {
                free(body.p);
            }
            free(kvname);
        }
        free(sub);
        free(vname);
        free(apath);
    }
    if (!failed(c)) {
        sb body = {0};
        sb_puts(&body, "\"{\" space ");
        for (size_t i = 0; i < n_req; i++) {
            if (i) sb_puts(&body, " \",\" space ");
            sb_puts(&body, order_kv[i]);
        }
        if (n_order > n_req) {
            sb_puts(&body, " (");
            if (n_req) sb_puts(&body, " \",\" space ( ");
            /* rest_after[i]: the rule for the optional properties after i,
             * each optional, in order; built once from the last (llama.cpp
             * builds the chain again for each i: n^2 / 2 rule lookups for
             * an object of n optional properties) */
            const char **rest_after = calloc(n_order, sizeof *rest_after);
            if (!rest_after) fail_oom(c);
            for (size_t j = n_order - 1; rest_after && j > n_req && !failed(c); j--) {
                sb rb = {0};
                const bool jstar = !strcmp(order_key[j], "*");
                sb_printf(&rb, "( \",\" space %s )%s", order_kv[j], jstar ? "*" : "?");
                if (rest_after[j]) sb_printf(&rb, " %s", rest_after[j]);
                char *raw = child_name(c, name, order_key[j - 1]);
                sb nb = {0};
                if (raw) sb_printf(&nb, "%s-rest", raw);
                free(raw);
                char *rn = take(c, &nb);
                rest_after[j - 1] = rn ? add_rule(c, rn, take(c, &rb)) : NULL;
                if (!rn) free(rb.p);
                free(rn);
            }
            /* alternatives: the first optional property present is i */
            for (size_t i = n_req; i < n_order && !failed(c); i++) {
                if (i > n_req) sb_puts(&body, " | ");
                const bool star = !strcmp(order_key[i], "*");
                sb_puts(&body, order_kv[i]);
                if (star) sb_printf(&body, " ( \",\" space %s )*", order_kv[i]);
                if (rest_after[i]) sb_printf(&body, " %s", rest_after[i]);
            }
            free(rest_after);
            if (n_req) sb_puts(&body, " )");
            sb_puts(&body, " )?");
        }
        sb_puts(&body, " space \"}\"");
        if (!failed(c)) result = add_rule(c, rule_name, take(c, &body));
        else free(body.p);
    }
    free(order_kv);
    free(order_key);
out:
    free(keys);
    free(schemas);
    free(required);
    free(kv);
    return result;
}

const char *visit_array(cv *c, json_t *s, const char *name, const char *rule_name, const char *path) {
    json_t *items = json_object_get(s, "items"), *prefix = json_object_get(s, "prefixItems");
    long long min = 0, max = -1;
    get_count(c, s, "minItems", path, &min);
    get_count(c, s, "maxItems", path, &max);
    if (failed(c)) return NULL;
    if (max >= 0 && min > max) {
        fail_keyword(c, path, "minItems", "above maxItems (nothing matches)");
        return NULL;
    }
    json_t *tuple = NULL, *rest = items;
    const char *tuple_key = "prefixItems";
    if (prefix) {
        if (!json_is_array(prefix)) {
            fail_format(c, path, "prefixItems is not a list");
            return NULL;
        }
        if (items && json_is_array(items)) {
            fail_format(c, path, "items is a list beside prefixItems");
            return NULL;
        }
        tuple = prefix;
    } else if (items && json_is_array(items)) { /* draft 7's tuples */
        tuple = items;
        tuple_key = "items";
        rest = NULL;
    }
    if (rest && !json_is_boolean(rest) && !json_is_object(rest)) {
        fail_format(c, path, "items is not a schema");
        return NULL;
    }
    sb body = {0};
    sb_puts(&body, "\"[\" space ");
    const size_t n = tuple ? json_array_size(tuple) : 0;
    if (n > 0) {
        /* every tuple item present (llama.cpp), then the rest if allowed */
        if (max >= 0 && (size_t)max < n) {
            free(body.p);
            fail_keyword(c, path, "maxItems", "below the number of prefixItems is not supported");
            return NULL;
        }
        for (size_t i = 0; i < n && !failed(c); i++) {
            sb nb = {0};
            sb_printf(&nb, "tuple-%zu", i);
            char *suffix = take(c, &nb);
            char *tname = suffix ? child_name(c, name, suffix) : NULL;
            char *tpath = child_path_index(c, path, tuple_key, i);
            const char *got = tname && tpath ? visit(c, json_array_get(tuple, i), tname, tpath) : NULL;
            free(suffix);
            free(tname);
            free(tpath);
            if (!got) break;
            if (i) sb_puts(&body, " \",\" space ");
            sb_puts(&body, got);
        }
        const long long rmin = min > (long long)n ? min - (long long)n : 0;
        const long long rmax = max < 0 ? -1 : max - (long long)n;
        if (!failed(c) && rest && !json_is_false(rest) && rmax != 0) {
            char *iname = child_name(c, name, "item");
            char *ipath = child_path(c, path, "items");
            const char *item = iname && ipath ? (json_is_true(rest) ? add_builtin(c, "value") : visit(c, rest, iname, ipath)) : NULL;
            free(iname);
            free(ipath);
            if (item) {
                sb one = {0};
                sb_printf(&one, "( \",\" space %s )", item);
                sb_putc(&body, ' ');
                if (one.p) put_repetition(&body, one.p, rmin, rmax, NULL);
                free(one.p);
            }
        } else if (!failed(c) && !rest && rmin > 0) { /* items absent: any extra items */
            const char *item = add_builtin(c, "value");
            sb_printf(&body, " ( \",\" space %s ){%lld,", item ? item : "", rmin);
            if (rmax >= 0) sb_printf(&body, "%lld", rmax);
            sb_putc(&body, '}');
        } else if (!failed(c) && rmin > 0) {
            free(body.p);
            fail_keyword(c, path, "minItems", "more items than prefixItems while items is false (nothing matches)");
            return NULL;
        }
    } else {
        const char *item = NULL;
        if (!rest || json_is_true(rest)) {
            if (min == 0 && max < 0) {
                free(body.p);
                return add_builtin(c, "array");
            }
            item = add_builtin(c, "value");
        } else if (json_is_false(rest)) {
            if (min > 0) {
                free(body.p);
                fail_keyword(c, path, "items", "false with minItems above 0 (nothing matches)");
                return NULL;
            }
            max = 0;
        } else {
            char *iname = child_name(c, name, "item");
            char *ipath = child_path(c, path, "items");
            item = iname && ipath ? visit(c, rest, iname, ipath) : NULL;
            free(iname);
            free(ipath);
        }
        if (item || max == 0) put_repetition(&body, item ? item : "", min, max, "\",\" space");
    }
    sb_puts(&body, " space \"]\"");
    if (failed(c)) {
        free(body.p);
        return NULL;
    }
    return add_rule(c, rule_name, take(c, &body));
}
