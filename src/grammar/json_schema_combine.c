/* JSON Schema to GBNF: schemas built of others: $ref (local pointers,
 * recursion without left recursion), allOf merged, anyOf/oneOf unions
 * (oneOf only where no value can match two branches), enum and const. */
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/grow.h"
#include "grammar/json_schema_internal.h"

static json_t *resolve_pointer(cv *c, const char *ref, const char *path) {
    if (ref[0] != '#') {
        fail_keyword(c, path, "$ref", "only local references (#...) are supported, not \"%s\"", ref);
        return NULL;
    }
    if (strchr(ref, '%')) {
        fail_keyword(c, path, "$ref", "percent-encoded references are not supported: \"%s\"", ref);
        return NULL;
    }
    json_t *t = c->root;
    const char *p = ref + 1;
    if (*p && *p != '/') {
        fail_keyword(c, path, "$ref", "anchors are not supported: \"%s\"", ref);
        return NULL;
    }
    while (*p == '/' && t) {
        p++;
        sb seg = {0};
        while (*p && *p != '/') {
            if (p[0] == '~' && p[1] == '0') sb_putc(&seg, '~'), p += 2;
            else if (p[0] == '~' && p[1] == '1') sb_putc(&seg, '/'), p += 2;
            else sb_putc(&seg, *p++);
        }
        char *key = take(c, &seg);
        if (!key) return NULL;
        if (json_is_object(t)) {
            t = json_object_get(t, key);
        } else if (json_is_array(t)) {
            char *endp;
            const unsigned long i = strtoul(key, &endp, 10);
            t = *key && !*endp ? json_array_get(t, i) : NULL;
        } else {
            t = NULL;
        }
        free(key);
    }
    if (!t) fail_format(c, path, "$ref \"%s\" points nowhere", ref);
    return t;
}

const char *visit_ref(cv *c, const char *ref, const char *path) {
    for (size_t i = 0; i < c->n_refs; i++)
        if (!strcmp(c->refs[i].ref, ref)) return c->refs[i].name;
    json_t *target = resolve_pointer(c, ref, path);
    if (!target) return NULL;
    /* reserve the rule's name first: a recursive reference uses it */
    sb nb = {0};
    sb_puts(&nb, "ref");
    put_rule_name(&nb, ref + 1);
    char *want = take(c, &nb);
    if (!want) return NULL;
    char *name = want;
    if (find_rule(c, want)) {
        name = first_free_name(c, want);
        free(want);
    }
    if (!name) return NULL;
    rule *r = push_rule(c, name, NULL);
    if (!r) return NULL;
    const char *kept = r->name; /* the table may move; the name does not */
    char *ref_copy = strdup(ref);
    if (!ref_copy || !sp_grow((void **)&c->refs, &c->cap_refs, c->n_refs + 1, sizeof *c->refs)) {
        free(ref_copy);
        fail_oom(c);
        return NULL;
    }
    c->refs[c->n_refs++] = (ref_entry){ref_copy, kept};
    const char *got = visit(c, target, kept, ref + 1);
    if (!got) return NULL;
    r = find_rule(c, kept);
    if (!r->body) {
        if (left_recursive(c, got)) {
            fail_keyword(c, path, "$ref", "\"%s\" refers back to itself before any character (left recursion)", ref);
            return NULL;
        }
        if (!set_rule_body(c, r, strdup(got))) return NULL;
    }
    return kept;
}

/* Merges one part of an allOf (or an anyOf branch's context) into dst:
 * properties joined, required lists joined, types intersected; any other
 * keyword must not appear twice with different values. */
void merge_part(cv *c, json_t *dst, json_t *part, const char *path) {
    if (failed(c)) return;
    if (++c->depth > MAX_DEPTH) {
        fail_keyword(c, path, "allOf", "nests or recurses more than %d deep", MAX_DEPTH);
        c->depth--;
        return;
    }
    if (json_is_true(part)) goto done;
    if (json_is_false(part)) {
        fail_keyword(c, path, "allOf", "a false schema (nothing matches) cannot be a grammar");
        goto done;
    }
    if (!json_is_object(part)) {
        fail_format(c, path, "an allOf part is not a schema");
        goto done;
    }
    json_t *ref = json_object_get(part, "$ref");
    if (ref) {
        if (!json_is_string(ref)) {
            fail_format(c, path, "$ref is not a string");
            goto done;
        }
        const char *k;
        json_t *v;
        json_object_foreach(part, k, v) {
            if (strcmp(k, "$ref") && !is_annotation(k)) {
                fail_keyword(c, path, k, "keywords beside $ref are not supported");
                goto done;
            }
        }
        json_t *t = resolve_pointer(c, json_string_value(ref), path);
        if (t) merge_part(c, dst, t, path);
        goto done;
    }
    json_t *all = json_object_get(part, "allOf");
    if (all) {
        if (!json_is_array(all) || json_array_size(all) == 0) {
            fail_format(c, path, "allOf is not a non-empty list");
            goto done;
        }
        for (size_t i = 0; i < json_array_size(all) && !failed(c); i++) {
            char *sub = child_path_index(c, path, "allOf", i);
            if (sub) merge_part(c, dst, json_array_get(all, i), sub);
            free(sub);
        }
    }
    const bool dst_shape = json_object_get(dst, "properties") || json_object_get(dst, "additionalProperties");
    const bool part_shape = json_object_get(part, "properties") || json_object_get(part, "additionalProperties");
    json_t *dap = json_object_get(dst, "additionalProperties"), *pap = json_object_get(part, "additionalProperties");
    if (dst_shape && part_shape && ((dap && !json_is_true(dap)) || (pap && !json_is_true(pap)))) {
        fail_keyword(c, path, "additionalProperties", "combined with properties of another part of allOf/anyOf");
        goto done;
    }
    if ((json_object_get(dst, "items") && json_object_get(part, "prefixItems")) ||
        (json_object_get(dst, "prefixItems") && json_object_get(part, "items"))) {
        fail_keyword(c, path, "items", "items and prefixItems from different parts of allOf/anyOf");
        goto done;
    }
    const char *k;
    json_t *v;
    json_object_foreach(part, k, v) {
        if (failed(c)) break;
        if (!strcmp(k, "allOf") || is_annotation(k)) continue;
        json_t *have = json_object_get(dst, k);
        if (!have) {
            json_object_set(dst, k, v);
            continue;
        }
        if (!strcmp(k, "properties") && json_is_object(have) && json_is_object(v)) {
            json_t *merged = json_copy(have);
            const char *pk;
            json_t *pv;
            json_object_foreach(v, pk, pv) {
                json_t *old = json_object_get(merged, pk);
                if (old && !json_equal(old, pv)) {
                    fail_keyword(c, path, "allOf", "property \"%s\" is defined twice, differently", pk);
                    break;
                }
                json_object_set(merged, pk, pv);
            }
            json_object_set_new(dst, k, merged);
        } else if (!strcmp(k, "required") && json_is_array(have) && json_is_array(v)) {
            json_t *merged = json_copy(have);
            for (size_t i = 0; i < json_array_size(v); i++) json_array_append(merged, json_array_get(v, i));
            json_object_set_new(dst, k, merged);
        } else if (!strcmp(k, "type")) {
            const int a = parse_type(c, have, path), b = parse_type(c, v, path);
            if (failed(c)) break;
            int m = a & b;
            if (((a & T_NUMBER) && (b & T_INTEGER)) || ((a & T_INTEGER) && (b & T_NUMBER))) m |= T_INTEGER;
            if (m & T_INTEGER) m &= ~T_NUMBER | (a & b & T_NUMBER);
            if (!m) {
                fail_keyword(c, path, "type", "the parts of allOf/anyOf share no type");
                break;
            }
            json_t *list = json_array();
            for (int i = 0; i < 7; i++)
                if (m & (1 << i)) json_array_append_new(list, json_string(TYPE_NAMES[i]));
            json_object_set_new(dst, k, list);
        } else if (!json_equal(have, v)) {
            fail_keyword(c, path, k, "given twice with different values across allOf/anyOf");
        }
    }
done:
    c->depth--;
}

/* Whether s has a keyword other than annotations and those in skip. */
const char *first_constraint(json_t *s, const char *const *skip, size_t n_skip) {
    const char *k;
    json_t *v;
    json_object_foreach(s, k, v) {
        if (!is_annotation(k) && !in_list(k, skip, n_skip)) return k;
    }
    return NULL;
}

/* s with its $ref chain followed (NULL with a failure). */
static json_t *deref(cv *c, json_t *s, const char *path) {
    for (int hops = 0; s && json_is_object(s) && json_is_string(json_object_get(s, "$ref")); hops++) {
        if (hops == MAX_DEPTH) {
            fail_format(c, path, "$ref chain longer than %d", MAX_DEPTH);
            return NULL;
        }
        s = resolve_pointer(c, json_string_value(json_object_get(s, "$ref")), path);
    }
    return s;
}

/* The types a schema's values may have (declared), widened so that an
 * integer is also a number and back; with infer, a schema without type
 * counts as the one type its keywords constrain (the type its grammar
 * writes). */
static int value_types(json_t *s, bool infer) {
    const int all = 0x7F;
    if (!json_is_object(s)) return all;
    int mask = all;
    json_t *t = json_object_get(s, "type");
    if (json_is_string(t)) {
        mask = type_bit(json_string_value(t));
    } else if (json_is_array(t)) {
        mask = 0;
        for (size_t i = 0; i < json_array_size(t); i++) {
            json_t *e = json_array_get(t, i);
            mask |= json_is_string(e) ? type_bit(json_string_value(e)) : 0x7F;
        }
    } else if (infer) {
        int families = 0;
        const char *k;
        json_t *v;
        json_object_foreach(s, k, v) families |= keyword_family(k);
        if (families) mask = families;
    }
    json_t *cst = json_object_get(s, "const"), *en = json_object_get(s, "enum");
    if (cst || json_is_array(en)) {
        int of_values = 0;
        for (size_t i = 0; i < (cst ? 1 : json_array_size(en)); i++) {
            json_t *v = cst ? cst : json_array_get(en, i);
            for (int b = 1; b <= T_INTEGER; b <<= 1)
                if (value_has_type(v, b)) of_values |= b;
        }
        mask &= of_values;
    }
    if (mask & (T_NUMBER | T_INTEGER)) mask |= T_NUMBER | T_INTEGER;
    return mask;
}

static bool values_equal(json_t *a, json_t *b) {
    if (json_is_number(a) && json_is_number(b)) return json_number_value(a) == json_number_value(b);
    return json_equal(a, b);
}

/* Whether two schemas' const/enum lists share no value (false when either
 * has none). */
static bool constants_disjoint(json_t *a, json_t *b) {
    json_t *ca = json_object_get(a, "const"), *ea = json_object_get(a, "enum");
    json_t *cb = json_object_get(b, "const"), *eb = json_object_get(b, "enum");
    if (!json_is_object(a) || !json_is_object(b) || (!ca && !json_is_array(ea)) || (!cb && !json_is_array(eb))) return false;
    const size_t na = ca ? 1 : json_array_size(ea), nb = cb ? 1 : json_array_size(eb);
    for (size_t i = 0; i < na; i++)
        for (size_t j = 0; j < nb; j++)
            if (values_equal(ca ? ca : json_array_get(ea, i), cb ? cb : json_array_get(eb, j))) return false;
    return true;
}

static bool requires(json_t *s, const char *prop) {
    json_t *req = json_object_get(s, "required");
    for (size_t i = 0; i < json_array_size(req); i++)
        if (json_is_string(json_array_get(req, i)) && !strcmp(json_string_value(json_array_get(req, i)), prop)) return true;
    return false;
}

/* Whether no value that a's grammar writes matches b, and the other way:
 * types apart, constants apart, or a property both require whose
 * constants differ (a discriminator). */
static bool branches_disjoint(cv *c, json_t *a, json_t *b, const char *path) {
    if (!(value_types(a, true) & value_types(b, false)) && !(value_types(b, true) & value_types(a, false))) return true;
    if (constants_disjoint(a, b)) return true;
    json_t *pa = json_object_get(a, "properties"), *pb = json_object_get(b, "properties");
    if (!json_is_object(pa) || !json_is_object(pb)) return false;
    if ((value_types(a, true) | value_types(b, true)) != T_OBJECT) return false;
    const char *k;
    json_t *v;
    json_object_foreach(pa, k, v) {
        json_t *w = json_object_get(pb, k);
        if (!w || !requires(a, k) || !requires(b, k)) continue;
        json_t *x = deref(c, v, path), *y = deref(c, w, path);
        if (x && y && constants_disjoint(x, y)) return true;
    }
    return false;
}

const char *visit_union(cv *c, json_t *s, const char *key, const char *name, const char *rule_name,
                               const char *path) {
    json_t *alts = json_object_get(s, key);
    if (!json_is_array(alts) || json_array_size(alts) == 0) {
        fail_format(c, path, "%s is not a non-empty list", key);
        return NULL;
    }
    static const char *const skip[] = {"anyOf", "oneOf"};
    const bool siblings = first_constraint(s, skip, 2) != NULL;
    /* each branch as it holds: with the keywords beside anyOf merged in */
    const size_t n_alts = json_array_size(alts);
    json_t **eff = calloc(n_alts, sizeof *eff);
    if (!eff) {
        fail_oom(c);
        return NULL;
    }
    for (size_t i = 0; i < n_alts && !failed(c); i++) {
        json_t *alt = json_array_get(alts, i);
        if (json_is_false(alt)) continue; /* matches nothing: no branch */
        if (!siblings) {
            eff[i] = json_incref(alt);
            continue;
        }
        char *sub_path = child_path_index(c, path, key, i);
        json_t *merged = json_object();
        if (!merged || !sub_path) fail_oom(c);
        const char *k;
        json_t *v;
        json_object_foreach(s, k, v) {
            if (merged && strcmp(k, "anyOf") && strcmp(k, "oneOf") && !is_annotation(k)) json_object_set(merged, k, v);
        }
        if (merged && sub_path) merge_part(c, merged, alt, sub_path);
        eff[i] = merged;
        free(sub_path);
    }
    /* oneOf is anyOf only when no value can match two branches */
    for (size_t i = 0; !strcmp(key, "oneOf") && i < n_alts && !failed(c); i++) {
        for (size_t j = i + 1; eff[i] && j < n_alts && !failed(c); j++) {
            json_t *a = eff[j] ? deref(c, eff[i], path) : NULL, *b = a ? deref(c, eff[j], path) : NULL;
            if (a && b && !branches_disjoint(c, a, b, path))
                fail_keyword(c, path, key, "branches %zu and %zu may both match a value (use anyOf if that is meant)", i, j);
        }
    }
    sb body = {0};
    size_t n = 0;
    for (size_t i = 0; i < n_alts && !failed(c); i++) {
        if (!eff[i]) continue;
        char *sub_path = child_path_index(c, path, key, i);
        sb nb = {0};
        sb_printf(&nb, "%s%s%zu", name, *name ? "-" : "alternative-", i);
        char *sub_name = take(c, &nb);
        const char *got = sub_path && sub_name ? visit(c, eff[i], sub_name, sub_path) : NULL;
        if (got && left_recursive(c, got))
            fail_keyword(c, path, key, "branch %zu refers back to the schema it is in before any character (left recursion)", i);
        free(sub_path);
        free(sub_name);
        if (!got || failed(c)) break;
        if (n++) sb_puts(&body, " | ");
        sb_puts(&body, got);
    }
    for (size_t i = 0; i < n_alts; i++) json_decref(eff[i]);
    free(eff);
    if (failed(c)) {
        free(body.p);
        return NULL;
    }
    if (n == 0) {
        free(body.p);
        fail_keyword(c, path, key, "every branch is false (nothing matches)");
        return NULL;
    }
    return add_rule(c, rule_name, take(c, &body));
}

const char *visit_constants(cv *c, json_t *s, const char *rule_name, const char *path) {
    static const char *const skip[] = {"const", "enum", "type"};
    const char *other = first_constraint(s, skip, 3);
    if (other) {
        fail_keyword(c, path, other, "beside enum/const only type is supported");
        return NULL;
    }
    int mask = 0x7F;
    json_t *type = json_object_get(s, "type");
    if (type && !(mask = parse_type(c, type, path))) return NULL;
    json_t *cst = json_object_get(s, "const"), *en = json_object_get(s, "enum");
    if (en && (!json_is_array(en) || json_array_size(en) == 0)) {
        fail_format(c, path, "enum is not a non-empty list");
        return NULL;
    }
    sb body = {0};
    size_t n = 0;
    const size_t count = cst ? 1 : json_array_size(en);
    for (size_t i = 0; i < count; i++) {
        json_t *v = cst ? cst : json_array_get(en, i);
        if (!value_has_type(v, mask)) continue;
        if (cst && en) {
            bool found = false;
            for (size_t j = 0; j < json_array_size(en); j++) found |= json_equal(json_array_get(en, j), v);
            if (!found) continue;
        }
        sb_puts(&body, n++ ? " | " : "");
        put_constant(&body, v);
    }
    if (n == 0) {
        free(body.p);
        fail_keyword(c, path, cst ? "const" : "enum", "no value is left for the given type (nothing matches)");
        return NULL;
    }
    if (cst) return add_rule(c, rule_name, take(c, &body));
    sb wrapped = {0};
    sb_printf(&wrapped, "(%s)", body.p ? body.p : "");
    if (body.oom) wrapped.oom = true;
    free(body.p);
    return add_rule(c, rule_name, take(c, &wrapped));
}

/* A key that is none of names: llama.cpp's _not_strings, over a trie of
 * the names' code points, with keys written without escapes. */
