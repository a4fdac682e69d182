/* The converter's rule table: names, bodies, and the numbered names a
 * second body under a taken name gets (llama.cpp's `name0`, `name1`, ...:
 * the first number whose rule is free or holds the same body).
 *
 * Finding that number by trying each in turn made a schema of n properties
 * whose names sanitize alike quadratic (bench/RESULTS.md), and a 16 MB
 * request would have held its thread for hours. Two indices give the same
 * answer without the scan: for each name, the first number whose rule is
 * free (rules are never removed, so it only grows); and for each (name,
 * body), the lowest number whose rule holds that body. A rule is noted
 * under every way its name splits into a name and a number, so that `a7`
 * counts as number 7 of `a` whichever way it was made. */
#include <stdlib.h>
#include <string.h>

#include "core/grow.h"
#include "grammar/json_schema_internal.h"

rule *find_rule(cv *c, const char *name) {
    const int64_t i = sp_strmap_find(&c->rule_index, name, strlen(name));
    return i < 0 ? NULL : &c->rules[i];
}

/* Whether naming `name` first in an alternative (a union's branch, an
 * alias) would be left recursion, which a GBNF engine cannot run: it is a
 * $ref still being visited, and no object or array (which start with a
 * character) lies between it and here. */
bool left_recursive(cv *c, const char *name) {
    const rule *r = find_rule(c, name);
    return r && !r->body && r->nesting == c->nesting;
}

/* The note under `key` (taken), made with `number` if new; NULL when out of
 * memory (key freed). */
static name_note *note_at(cv *c, sp_strmap *map, char *key, size_t len, uint32_t number) {
    const int64_t at = sp_strmap_find(map, key, len);
    if (at >= 0) {
        free(key);
        return &c->notes[at];
    }
    if (!sp_grow((void **)&c->notes, &c->cap_notes, c->n_notes + 1, sizeof *c->notes) ||
        sp_strmap_insert(map, key, len, (int64_t)c->n_notes, NULL) < 0) {
        free(key);
        return NULL;
    }
    c->notes[c->n_notes] = (name_note){key, number};
    return &c->notes[c->n_notes++];
}

/* "base\0id": the key of a (name, body) pair, with the body by its number. */
static char *pair_key(const char *base, size_t base_len, int64_t body_id, size_t *len) {
    char *key = malloc(base_len + 24);
    if (!key) return NULL;
    memcpy(key, base, base_len);
    *len = base_len + 1 + (size_t)snprintf(key + base_len + 1, 23, "%lld", (long long)body_id);
    key[base_len] = '\0';
    return key;
}

/* r's body joins the (name, body) index under every split of its name
 * into a name and a number as "%u" writes one. */
static bool note_body(cv *c, const rule *r) {
    const size_t body_len = strlen(r->body);
    int64_t id = (int64_t)c->body_ids.count;
    if (sp_strmap_insert(&c->body_ids, r->body, body_len, id, &id) < 0) return false;
    const size_t len = strlen(r->name);
    uint64_t number = 0, scale = 1;
    for (size_t digits = 1; digits <= len && digits <= 10; digits++) {
        const char ch = r->name[len - digits];
        if (ch < '0' || ch > '9') break;
        number += (uint64_t)(ch - '0') * scale, scale *= 10;
        if (number > UINT32_MAX) break;
        if (digits > 1 && ch == '0') continue; /* "%u" writes no leading zero */
        size_t key_len;
        char *key = pair_key(r->name, len - digits, id, &key_len);
        if (!key) return false;
        name_note *n = note_at(c, &c->lowest_with_body, key, key_len, (uint32_t)number);
        if (!n) return false;
        if (number < n->number) n->number = (uint32_t)number;
    }
    return true;
}

bool set_rule_body(cv *c, rule *r, char *body) {
    if (!body) {
        fail_oom(c);
        return false;
    }
    r->body = body;
    if (!note_body(c, r)) {
        fail_oom(c);
        return false;
    }
    return true;
}

/* Appends a rule, taking name and body; a NULL name is out of memory. */
rule *push_rule(cv *c, char *name, char *body) {
    if (!name) {
        free(body);
        fail_oom(c);
        return NULL;
    }
    /* callers look a name up first: it is new here */
    if (!sp_grow((void **)&c->rules, &c->cap_rules, c->n_rules + 1, sizeof *c->rules) ||
        sp_strmap_insert(&c->rule_index, name, strlen(name), (int64_t)c->n_rules, NULL) < 0) {
        free(name);
        free(body);
        fail_oom(c);
        return NULL;
    }
    rule *r = &c->rules[c->n_rules++];
    *r = (rule){name, NULL, c->nesting};
    if (body && !set_rule_body(c, r, body)) return NULL;
    return r;
}

/* `base` followed by `number`; NULL when out of memory. */
static char *numbered(cv *c, const char *base, uint32_t number) {
    sb b = {0};
    sb_printf(&b, "%s%u", base, number);
    return take(c, &b);
}

/* The first number after `base` that names no rule; false when out of memory. */
static bool first_free_number(cv *c, const char *base, uint32_t *number) {
    char *key = strdup(base);
    name_note *n = key ? note_at(c, &c->first_free, key, strlen(base), 0) : NULL;
    if (!n) {
        fail_oom(c);
        return false;
    }
    for (;; n->number++) {
        char *name = numbered(c, base, n->number);
        if (!name) return false;
        const bool taken = find_rule(c, name) != NULL;
        free(name);
        if (!taken) break;
    }
    *number = n->number;
    return true;
}

char *first_free_name(cv *c, const char *base) {
    uint32_t number;
    return first_free_number(c, base, &number) ? numbered(c, base, number) : NULL;
}

/* The lowest number after `base` whose rule holds `body`; UINT32_MAX where
 * none does (or memory ran out: then c has failed). */
static uint32_t lowest_holding(cv *c, const char *base, const char *body) {
    const int64_t body_id = sp_strmap_find(&c->body_ids, body, strlen(body));
    if (body_id < 0) return UINT32_MAX;
    size_t key_len;
    char *key = pair_key(base, strlen(base), body_id, &key_len);
    if (!key) {
        fail_oom(c);
        return UINT32_MAX;
    }
    const int64_t at = sp_strmap_find(&c->lowest_with_body, key, key_len);
    free(key);
    return at < 0 ? UINT32_MAX : c->notes[at].number;
}

/* Adds `name ::= body` (body is taken) and returns the name it got: the
 * name itself when free, reserved, or already holding the same body, else
 * the name with the first number that is free or holds the same body. */
const char *add_rule(cv *c, const char *raw_name, char *body) {
    if (!body || failed(c)) {
        free(body);
        return NULL;
    }
    sb nb = {0};
    put_rule_name(&nb, raw_name);
    char *base = take(c, &nb);
    if (!base) {
        free(body);
        return NULL;
    }
    rule *r = find_rule(c, base);
    if (!r || !r->body || !strcmp(r->body, body)) {
        if (!r) return (r = push_rule(c, base, body)) ? r->name : NULL;
        free(base);
        if (!r->body) return set_rule_body(c, r, body) ? r->name : NULL;
        free(body);
        return r->name;
    }
    /* the scan would stop at whichever comes first */
    uint32_t number;
    char *name = NULL;
    if (first_free_number(c, base, &number)) {
        const uint32_t same = lowest_holding(c, base, body);
        if (!failed(c)) name = numbered(c, base, same < number ? same : number);
    }
    free(base);
    if (!name) {
        free(body);
        return NULL;
    }
    r = find_rule(c, name);
    if (!r) return (r = push_rule(c, name, body)) ? r->name : NULL;
    free(name);
    free(body);
    return r->name;
}

void free_rule_indices(cv *c) {
    sp_strmap_free(&c->rule_index);
    sp_strmap_free(&c->body_ids);
    sp_strmap_free(&c->lowest_with_body);
    sp_strmap_free(&c->first_free);
    for (size_t i = 0; i < c->n_notes; i++) free(c->notes[i].key);
    free(c->notes);
    c->notes = NULL, c->n_notes = c->cap_notes = 0;
}
