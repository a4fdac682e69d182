#include "grammar/grammar.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/error.h"
#include "core/grow.h"
#include "grammar/gbnf.h"

enum { K_CLASS, K_REF, K_END };

/* One range of code points of a class, inclusive. */
typedef struct crange {
    uint32_t lo, hi;
} crange;

struct sp_grammar {
    uint32_t n_pos;
    uint8_t *kind;     /* K_CLASS, K_REF, K_END per position */
    uint32_t *arg;     /* the class or the rule */
    uint32_t *rule_of; /* the rule the position is in */
    uint32_t n_rules, root;
    uint32_t *alt_off; /* rule r's alternatives start at alts[alt_off[r] .. alt_off[r+1]) */
    uint32_t *alts;
    bool *named; /* per rule */
    char **names;
    uint32_t n_classes;
    uint32_t *class_off; /* class c's ranges: ranges[class_off[c] .. class_off[c+1]), sorted, apart */
    crange *ranges;
    uint64_t (*ascii)[2]; /* per class: the code points below 128 it holds */
};

static const uint32_t utf8_min[5] = {0, 0, 0x80, 0x800, 0x10000};

/* --- classes ---------------------------------------------------------------- */

static bool class_has(const sp_grammar *g, uint32_t c, uint32_t cp) {
    if (cp < 128) return (g->ascii[c][cp >> 6] >> (cp & 63)) & 1;
    uint32_t a = g->class_off[c], b = g->class_off[c + 1];
    while (a < b) { /* the first range with hi >= cp */
        uint32_t m = a + (b - a) / 2;
        if (g->ranges[m].hi < cp) a = m + 1;
        else b = m;
    }
    return a < g->class_off[c + 1] && g->ranges[a].lo <= cp;
}

/* Whether the class holds some code point of [lo, hi]. */
static bool class_meets(const sp_grammar *g, uint32_t c, uint32_t lo, uint32_t hi) {
    uint32_t a = g->class_off[c], b = g->class_off[c + 1];
    while (a < b) {
        uint32_t m = a + (b - a) / 2;
        if (g->ranges[m].hi < lo) a = m + 1;
        else b = m;
    }
    return a < g->class_off[c + 1] && g->ranges[a].lo <= hi;
}

static int cmp_range(const void *x, const void *y) {
    const crange *a = x, *b = y;
    return a->lo < b->lo ? -1 : a->lo > b->lo;
}

/* Sorts and merges r[0..n), complements it when negated; returns the new count (at most n + 1). */
static size_t normalize(crange *r, size_t n, bool negated) {
    qsort(r, n, sizeof *r, cmp_range);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (k && r[i].lo <= r[k - 1].hi + 1) {
            if (r[i].hi > r[k - 1].hi) r[k - 1].hi = r[i].hi;
        } else r[k++] = r[i];
    }
    if (!negated) return k;
    /* the gaps between the ranges, within [0, 0x10FFFF], written over them:
     * gap m ends before range m starts, so it never overwrites a range unread */
    uint32_t next = 0;
    size_t m = 0;
    for (size_t i = 0; i < k; i++) {
        const crange cur = r[i];
        if (cur.lo > next) r[m++] = (crange){next, cur.lo - 1};
        next = cur.hi + 1;
    }
    if (next <= 0x10FFFF) r[m++] = (crange){next, 0x10FFFF};
    return m;
}

/* --- compiling ----------------------------------------------------------------- */

typedef struct builder {
    sp_grammar *g;
    size_t cap_pos, cap_ranges, cap_classes;
    uint64_t *alt_hash; /* each alternative's (same_alternative's quick test) */
    size_t cap_alt_hash;
} builder;

static bool add_pos(builder *b, uint8_t kind, uint32_t arg, uint32_t rule) {
    sp_grammar *g = b->g;
    size_t cap = b->cap_pos;
    if (g->n_pos + 1 > cap) {
        size_t c1 = cap, c2 = cap, c3 = cap;
        if (!sp_grow((void **)&g->kind, &c1, g->n_pos + 1, 1) || !sp_grow((void **)&g->arg, &c2, g->n_pos + 1, 4) ||
            !sp_grow((void **)&g->rule_of, &c3, g->n_pos + 1, 4))
            return false;
        b->cap_pos = c1 < c2 ? (c1 < c3 ? c1 : c3) : (c2 < c3 ? c2 : c3);
    }
    g->kind[g->n_pos] = kind, g->arg[g->n_pos] = arg, g->rule_of[g->n_pos] = rule;
    g->n_pos++;
    return true;
}

/* A class from the elements e[0..n) (a CHAR, CHAR_NOT or ANY and what follows it). */
static bool add_class(builder *b, const sp_gbnf_elem *e, size_t n) {
    sp_grammar *g = b->g;
    const size_t base = g->class_off[g->n_classes];
    size_t cap_off = b->cap_classes;
    if (!sp_grow((void **)&g->ranges, &b->cap_ranges, base + n + 1, sizeof *g->ranges)) return false;
    size_t k = 0;
    bool negated = e[0].type == SP_GBNF_CHAR_NOT;
    if (e[0].type == SP_GBNF_ANY) g->ranges[base + k++] = (crange){0, 0x10FFFF};
    else
        for (size_t i = 0; i < n; i++) {
            if (e[i].type == SP_GBNF_RANGE_UPPER) g->ranges[base + k - 1].hi = e[i].value;
            else g->ranges[base + k++] = (crange){e[i].value, e[i].value};
        }
    k = normalize(g->ranges + base, k, negated);
    if (!sp_grow((void **)&g->class_off, &cap_off, g->n_classes + 2, sizeof *g->class_off)) return false;
    size_t cap_ascii = b->cap_classes;
    if (!sp_grow((void **)&g->ascii, &cap_ascii, g->n_classes + 2, sizeof *g->ascii)) return false;
    b->cap_classes = cap_off < cap_ascii ? cap_off : cap_ascii;
    const uint32_t c = g->n_classes++;
    g->class_off[c + 1] = (uint32_t)(base + k);
    /* the sorted ranges' ASCII parts straight into the bits (a search per
     * code point was most of a generated grammar's compile) */
    g->ascii[c][0] = g->ascii[c][1] = 0;
    for (size_t i = base; i < base + k && g->ranges[i].lo < 128; i++)
        for (uint32_t cp = g->ranges[i].lo; cp <= g->ranges[i].hi && cp < 128; cp++) g->ascii[c][cp >> 6] |= 1ull << (cp & 63);
    return true;
}

/* Whether class c and d hold the same code points. */
static bool same_class(const sp_grammar *g, uint32_t c, uint32_t d) {
    const uint32_t n = g->class_off[c + 1] - g->class_off[c];
    return n == g->class_off[d + 1] - g->class_off[d] && !memcmp(g->ranges + g->class_off[c], g->ranges + g->class_off[d], n * sizeof *g->ranges);
}

/* Whether the alternatives at positions p and q match the same texts the
 * same way (element by element). */
static bool same_alternative(const sp_grammar *g, uint32_t p, uint32_t q) {
    for (;; p++, q++) {
        if (g->kind[p] != g->kind[q]) return false;
        if (g->kind[p] == K_END) return true;
        if (g->kind[p] == K_REF ? g->arg[p] != g->arg[q] : !same_class(g, g->arg[p], g->arg[q])) return false;
    }
}

static uint64_t alternative_hash(const sp_grammar *g, uint32_t p) {
    uint64_t h = 1469598103934665603ull;
    for (; g->kind[p] != K_END; p++) {
        h = (h ^ g->kind[p]) * 1099511628211ull;
        if (g->kind[p] == K_REF) h = (h ^ g->arg[p]) * 1099511628211ull;
        else
            for (uint32_t i = g->class_off[g->arg[p]]; i < g->class_off[g->arg[p] + 1]; i++)
                h = (h ^ g->ranges[i].lo ^ (uint64_t)g->ranges[i].hi << 32) * 1099511628211ull;
    }
    return h;
}

/* Drops the rule's last alternative (from position `start`, alternative
 * n_alts - 1) where an earlier one of the rule is the same: a grammar such
 * as "a | | | b" then expands its empty continuation once, not once per
 * copy at every level of a recursion (a fuzzed grammar's timeout). The
 * language is the same. Returns false when out of memory. */
static bool drop_repeated_alternative(builder *b, uint32_t first_alt, size_t *n_alts) {
    sp_grammar *g = b->g;
    const size_t last = *n_alts - 1;
    const uint32_t start = g->alts[last];
    if (!sp_grow((void **)&b->alt_hash, &b->cap_alt_hash, *n_alts, sizeof *b->alt_hash)) return false;
    b->alt_hash[last] = alternative_hash(g, start);
    for (size_t a = first_alt; a < last; a++)
        if (b->alt_hash[a] == b->alt_hash[last] && same_alternative(g, g->alts[a], start)) {
            g->n_pos = start; /* its classes stay, unused */
            *n_alts = last;
            return true;
        }
    return true;
}

static sprout_status build(sp_grammar *g, const sp_gbnf *src) {
    builder b = {.g = g};
    size_t cap_alts = 0, n_alts = 0;
    g->n_rules = (uint32_t)src->n_rules;
    g->alt_off = malloc((src->n_rules + 1) * sizeof *g->alt_off);
    g->named = malloc(src->n_rules * sizeof *g->named + 1);
    g->class_off = calloc(2, sizeof *g->class_off);
    b.cap_classes = 1;
    if (!g->alt_off || !g->named || !g->class_off) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "grammar: out of memory");
    for (uint32_t r = 0; r < g->n_rules; r++) {
        g->named[r] = !src->generated[r];
        g->alt_off[r] = (uint32_t)n_alts;
        size_t i = src->first[r];
        bool alt_start = true;
        for (;;) {
            const sp_gbnf_elem *e = &src->elems[i];
            if (alt_start) {
                if (!sp_grow((void **)&g->alts, &cap_alts, n_alts + 1, sizeof *g->alts)) goto oom;
                g->alts[n_alts++] = g->n_pos;
                alt_start = false;
            }
            if (e->type == SP_GBNF_END || e->type == SP_GBNF_ALT) {
                if (!add_pos(&b, K_END, 0, r) || !drop_repeated_alternative(&b, g->alt_off[r], &n_alts)) goto oom;
                if (e->type == SP_GBNF_END) break;
                alt_start = true;
                i++;
            } else if (e->type == SP_GBNF_REF) {
                if (!add_pos(&b, K_REF, e->value, r)) goto oom;
                i++;
            } else {
                size_t n = 1;
                while (src->elems[i + n].type == SP_GBNF_RANGE_UPPER || src->elems[i + n].type == SP_GBNF_CHAR_ALT) n++;
                if (!add_class(&b, e, n) || !add_pos(&b, K_CLASS, g->n_classes - 1, r)) goto oom;
                i += n;
            }
        }
    }
    g->alt_off[g->n_rules] = (uint32_t)n_alts;
    free(b.alt_hash);
    return SPROUT_OK;
oom:
    free(b.alt_hash);
    return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "grammar: out of memory");
}

/* Refuses a rule that reaches itself at the left of an alternative, through
 * rules that may match nothing: the automaton would expand it forever. */
static sprout_status check_left_recursion(const sp_grammar *g) {
    const uint32_t nr = g->n_rules;
    bool *nullable = calloc(nr + 1, 1);
    uint32_t *state = calloc(nr + 1, sizeof *state);
    uint32_t *path = malloc((nr + 1) * sizeof *path);
    uint32_t *next_alt = malloc((nr + 1) * sizeof *next_alt);
    uint32_t *next_pos = malloc((nr + 1) * sizeof *next_pos);
    sprout_status st = SPROUT_OK;
    if (!nullable || !state || !path || !next_alt || !next_pos) {
        st = sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "grammar: out of memory");
        goto done;
    }
    for (bool changed = true; changed;) { /* nullable rules, to a fixed point */
        changed = false;
        for (uint32_t r = 0; r < nr; r++) {
            if (nullable[r]) continue;
            for (uint32_t a = g->alt_off[r]; a < g->alt_off[r + 1] && !nullable[r]; a++) {
                uint32_t p = g->alts[a];
                while (g->kind[p] == K_REF && nullable[g->arg[p]]) p++;
                if (g->kind[p] == K_END) nullable[r] = changed = true;
            }
        }
    }
    /* depth-first search over the "r may start with s" edges; state 1: on the path, 2: done */
    for (uint32_t start = 0; start < nr && st == SPROUT_OK; start++) {
        if (state[start]) continue;
        uint32_t depth = 0;
        path[depth] = start, next_alt[depth] = g->alt_off[start], next_pos[depth] = UINT32_MAX;
        state[start] = 1;
        while (depth != UINT32_MAX && st == SPROUT_OK) {
            const uint32_t r = path[depth];
            /* the next edge of r: walk its alternatives' leading references */
            uint32_t target = UINT32_MAX;
            while (target == UINT32_MAX && next_alt[depth] < g->alt_off[r + 1]) {
                uint32_t p = next_pos[depth] == UINT32_MAX ? g->alts[next_alt[depth]] : next_pos[depth];
                if (g->kind[p] == K_REF) {
                    target = g->arg[p];
                    next_pos[depth] = nullable[target] ? p + 1 : UINT32_MAX;
                    if (next_pos[depth] == UINT32_MAX) next_alt[depth]++;
                } else {
                    next_pos[depth] = UINT32_MAX;
                    next_alt[depth]++;
                }
            }
            if (target == UINT32_MAX) {
                state[r] = 2;
                depth--;
                continue;
            }
            if (state[target] == 1) {
                sp_buf msg = {0};
                uint32_t from = depth;
                while (path[from] != target) from--;
                for (uint32_t k = from; k <= depth; k++) {
                    sp_buf_put(&msg, g->names[path[k]], strlen(g->names[path[k]]));
                    sp_buf_put(&msg, " -> ", 4);
                }
                sp_buf_put(&msg, g->names[target], strlen(g->names[target]));
                st = sp_fail(SPROUT_ERR_FORMAT, "grammar: left recursion: %s", msg.data ? msg.data : "?");
                free(msg.data);
            } else if (state[target] == 0) {
                state[target] = 1;
                depth++;
                path[depth] = target, next_alt[depth] = g->alt_off[target], next_pos[depth] = UINT32_MAX;
            }
        }
    }
done:
    free(nullable), free(state), free(path), free(next_alt), free(next_pos);
    return st;
}

void sp_grammar_free(sp_grammar *g) {
    if (!g) return;
    free(g->kind), free(g->arg), free(g->rule_of), free(g->alt_off), free(g->alts), free(g->named);
    if (g->names)
        for (uint32_t r = 0; r < g->n_rules; r++) free(g->names[r]);
    free(g->names), free(g->class_off), free(g->ranges), free(g->ascii);
    free(g);
}

sprout_status sp_grammar_compile(const char *text, size_t len, const char *root, sp_grammar **out) {
    *out = NULL;
    if (!root) root = "root";
    sp_gbnf *src = NULL;
    sprout_status st = sp_gbnf_parse(text, len, &src);
    if (st != SPROUT_OK) return st;
    const int64_t r = sp_gbnf_find(src, root);
    if (r < 0) {
        sp_gbnf_free(src);
        return sp_fail(SPROUT_ERR_FORMAT, "grammar: no rule '%.80s'", root);
    }
    sp_grammar *g = calloc(1, sizeof *g);
    if (!g) {
        sp_gbnf_free(src);
        return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "grammar: out of memory");
    }
    g->root = (uint32_t)r;
    st = build(g, src);
    g->names = src->names; /* taken over */
    src->names = NULL;
    const size_t n_rules = src->n_rules;
    src->n_rules = 0;
    sp_gbnf_free(src);
    g->n_rules = (uint32_t)n_rules;
    if (st == SPROUT_OK) st = check_left_recursion(g);
    if (st != SPROUT_OK) {
        sp_grammar_free(g);
        return st;
    }
    *out = g;
    return SPROUT_OK;
}

bool sp_grammar_pos_named(const sp_grammar *g, uint32_t pos) { return g->named[g->rule_of[pos]]; }

/* --- stacks --------------------------------------------------------------------- */

typedef struct expander {
    const sp_grammar *g;
    uint32_t *work; /* the stack being expanded, changed in place and put back */
    sp_gset *out;
    uint32_t budget; /* expansions left */
    bool ok;
    bool out_of_memory; /* why ok went false, where it was memory and not a bound */
} expander;

enum { EXPAND_BUDGET = 1 << 16, EXPAND_RECURSION = 1024 };

static _Thread_local uint32_t work_stack[SP_GRAMMAR_MAX_DEPTH + 1];

/* Adds the stacks work[0..n) leads to once the references at its top are
 * expanded; work[0..n) is as it was on return. */
static void expand(expander *x, uint32_t n, uint32_t recursion) {
    if (!x->ok) return;
    if (n == 0 || x->g->kind[x->work[n - 1]] == K_CLASS) {
        if (!sp_gset_add(x->out, x->work, n)) x->ok = false, x->out_of_memory = !sp_gset_full(x->out);
        return;
    }
    if (!x->budget-- || recursion > EXPAND_RECURSION) {
        x->ok = false;
        return;
    }
    const sp_grammar *g = x->g;
    const uint32_t top = x->work[n - 1], rule = g->arg[top];
    uint32_t m = n - 1;
    if (g->kind[top + 1] != K_END) x->work[m++] = top + 1; /* where to go on once the rule is matched */
    for (uint32_t a = g->alt_off[rule]; a < g->alt_off[rule + 1] && x->ok; a++) {
        const uint32_t p = g->alts[a];
        if (g->kind[p] == K_END) expand(x, m, recursion + 1);
        else if (m >= SP_GRAMMAR_MAX_DEPTH) x->ok = false;
        else {
            x->work[m] = p;
            expand(x, m + 1, recursion + 1);
        }
    }
    x->work[n - 1] = top;
}

bool sp_gset_advance(const sp_grammar *g, const uint32_t *stack, uint32_t n, sp_gset *out, bool *out_of_memory) {
    sp_gset_clear(out);
    *out_of_memory = false;
    if (n > SP_GRAMMAR_MAX_DEPTH) return false;
    expander x = {g, work_stack, out, EXPAND_BUDGET, true, false};
    if (n) memcpy(work_stack, stack, n * sizeof *stack);
    expand(&x, n, 0);
    *out_of_memory = x.out_of_memory;
    return x.ok;
}

/* out's set (not cleared) gains what each stack of `in` becomes after
 * code point cp; out->gave_up where a bound was passed or memory ran out. */
static bool step_cp(const sp_grammar *g, const sp_gset *in, uint32_t cp, sp_grammar_state *out) {
    expander x = {g, work_stack, &out->set, EXPAND_BUDGET, true, false};
    for (size_t i = 0; i < in->len && x.ok; i += 1 + in->data[i]) {
        const uint32_t n = in->data[i];
        const uint32_t *s = in->data + i + 1;
        if (n == 0 || !class_has(g, g->arg[s[n - 1]], cp)) continue;
        if (n > 1) memcpy(work_stack, s, (n - 1) * sizeof *s);
        uint32_t m = n - 1;
        if (g->kind[s[n - 1] + 1] != K_END) work_stack[m++] = s[n - 1] + 1;
        expand(&x, m, 0);
    }
    out->gave_up = !x.ok, out->out_of_memory = x.out_of_memory;
    return x.ok && out->set.count > 0;
}

/* out's set (not cleared) gains the stacks of `in` whose class meets
 * [lo, hi]; out->gave_up where memory ran out. */
static bool keep_meeting(const sp_grammar *g, const sp_gset *in, uint32_t lo, uint32_t hi, sp_grammar_state *out) {
    for (size_t i = 0; i < in->len; i += 1 + in->data[i]) {
        const uint32_t n = in->data[i];
        const uint32_t *s = in->data + i + 1;
        if (n && class_meets(g, g->arg[s[n - 1]], lo, hi) && !sp_gset_add(&out->set, s, n)) {
            out->gave_up = true, out->out_of_memory = !sp_gset_full(&out->set);
            return false;
        }
    }
    return out->set.count > 0;
}

bool sp_grammar_step(const sp_grammar_state *in, unsigned char b, sp_grammar_state *out) {
    const sp_grammar *g = in->g;
    out->g = g;
    sp_gset_clear(&out->set);
    out->gave_up = false, out->out_of_memory = false;
    if (in->need == 0) {
        if (b < 0x80) {
            out->need = 0, out->size = 0, out->cp = 0;
            return step_cp(g, &in->set, b, out);
        }
        if (b >= 0xC2 && b <= 0xDF) out->size = 2, out->cp = b & 0x1F;
        else if (b >= 0xE0 && b <= 0xEF) out->size = 3, out->cp = b & 0x0F;
        else if (b >= 0xF0 && b <= 0xF4) out->size = 4, out->cp = b & 0x07;
        else return false;
        out->need = out->size - 1;
    } else {
        if ((b & 0xC0) != 0x80) return false;
        out->cp = in->cp << 6 | (b & 0x3F);
        out->need = in->need - 1, out->size = in->size;
        if (out->need == 0) {
            const uint32_t cp = out->cp;
            out->cp = 0, out->size = 0;
            if (cp < utf8_min[in->size] || cp > 0x10FFFF) return false;
            return step_cp(g, &in->set, cp, out);
        }
    }
    /* a code point begun: the range it may still be */
    const uint32_t shift = 6u * out->need;
    uint32_t lo = out->cp << shift, hi = lo | ((1u << shift) - 1);
    if (lo < utf8_min[out->size]) lo = utf8_min[out->size];
    if (hi > 0x10FFFF) hi = 0x10FFFF;
    if (lo > hi) return false;
    return keep_meeting(g, &in->set, lo, hi, out);
}

/* --- states ---------------------------------------------------------------------- */

sprout_status sp_grammar_state_start(const sp_grammar *g, sp_grammar_state **out) {
    *out = NULL;
    sp_grammar_state *st = calloc(1, sizeof *st);
    if (!st) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "grammar: out of memory");
    st->g = g;
    /* the root's alternatives, each expanded */
    sp_gset one = {0};
    bool ok = true, out_of_memory = false;
    for (uint32_t a = g->alt_off[g->root]; a < g->alt_off[g->root + 1] && ok; a++) {
        const uint32_t p = g->alts[a];
        if (g->kind[p] != K_END && !sp_gset_advance(g, &p, 1, &one, &out_of_memory)) {
            ok = false; /* a bound, or memory: out_of_memory says which */
            break;
        }
        if (g->kind[p] == K_END) ok = sp_gset_add(&st->set, NULL, 0);
        else
            for (size_t i = 0; ok && i < one.len; i += 1 + one.data[i]) ok = sp_gset_add(&st->set, one.data + i + 1, one.data[i]);
        out_of_memory = !ok && !sp_gset_full(&st->set);
    }
    sp_gset_free(&one);
    if (!ok) {
        sp_grammar_state_free(st);
        if (out_of_memory) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "grammar: out of memory");
        return sp_fail(SPROUT_ERR_UNSUPPORTED, "grammar: its start needs more than %d parse stacks or %d expansions at once (an ambiguous grammar)",
                       SP_GRAMMAR_MAX_STACKS, EXPAND_BUDGET);
    }
    *out = st;
    return SPROUT_OK;
}

sp_grammar_state *sp_grammar_state_new(const sp_grammar *g) {
    sp_grammar_state *st;
    return sp_grammar_state_start(g, &st) == SPROUT_OK ? st : NULL;
}

bool sp_grammar_state_copy(sp_grammar_state *dst, const sp_grammar_state *src) {
    if (!sp_gset_copy(&dst->set, &src->set)) return false;
    dst->g = src->g, dst->cp = src->cp, dst->need = src->need, dst->size = src->size;
    return true;
}

sp_grammar_state *sp_grammar_state_clone(const sp_grammar_state *src) {
    sp_grammar_state *st = calloc(1, sizeof *st);
    if (!st) return NULL;
    if (!sp_grammar_state_copy(st, src)) {
        free(st);
        return NULL;
    }
    return st;
}

void sp_grammar_state_free(sp_grammar_state *st) {
    if (!st) return;
    sp_gset_free(&st->set), sp_gset_free(&st->spare), sp_gset_free(&st->spare2);
    free(st);
}

bool sp_grammar_accept(sp_grammar_state *st, const char *bytes, size_t n) {
    if (n == 0) return st->set.count > 0;
    sp_grammar_state a = {.g = st->g, .set = st->spare}, b = {.g = st->g, .set = st->spare2};
    const sp_grammar_state *in = st;
    sp_grammar_state *out = &a;
    bool ok = true;
    st->gave_up = false, st->out_of_memory = false;
    for (size_t i = 0; i < n && ok; i++) {
        ok = sp_grammar_step(in, (unsigned char)bytes[i], out);
        st->gave_up = out->gave_up, st->out_of_memory = out->out_of_memory;
        in = out;
        out = out == &a ? &b : &a;
    }
    if (ok) { /* `in` is the last state written: it becomes st, st's old stacks a spare */
        sp_grammar_state *last = in == &a ? &a : &b;
        sp_gset old = st->set;
        st->set = last->set;
        st->cp = last->cp, st->need = last->need, st->size = last->size;
        last->set = old;
    }
    st->spare = a.set, st->spare2 = b.set;
    return ok;
}

static bool has_empty(const sp_gset *s) {
    for (size_t i = 0; i < s->len; i += 1 + s->data[i])
        if (s->data[i] == 0) return true;
    return false;
}

bool sp_grammar_can_end(const sp_grammar_state *st) { return st->need == 0 && has_empty(&st->set); }

bool sp_grammar_must_end(const sp_grammar_state *st) { return sp_grammar_can_end(st) && st->set.count == 1; }
