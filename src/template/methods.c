/* The Python methods chat templates call on strings, dicts and lists
 * (`.upper()`, `.split()`, `.items()`...): one sorted name -> function
 * table per receiver type. A bound method is a JV_BUILTIN whose id is
 * B_FIRST_METHOD plus its index in its receiver's table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "template/builtins_internal.h"
#include "template/text_internal.h"

typedef bool method_fn(interp *in, const node *at, jv self, const call_args *a, jv *out);

typedef struct method {
    const char *name;
    method_fn *fn;
} method;

/* --- str ------------------------------------------------------------------------------------ */

static bool prefix_match(const jstr *s, jv p, bool suffix, bool *out) {
    if (p.type == JV_STR) {
        const jstr *x = p.u.s;
        *out = x->len <= s->len && memcmp(suffix ? s->data + s->len - x->len : s->data, x->data, x->len) == 0;
        return true;
    }
    if (p.type == JV_TUPLE) {
        *out = false;
        for (size_t i = 0; i < p.u.l->n; i++) {
            bool r;
            if (!prefix_match(s, p.u.l->items[i], suffix, &r)) return false;
            if (r) *out = true;
        }
        return true;
    }
    return false;
}


/* str.format with positional ("{}", "{0}") and named ("{name}") fields;
 * a format spec after ':' is ignored. */
static bool format(interp *in, const node *at, const jstr *fmt, const call_args *args, jv *out) {
    jbuf b = {0};
    size_t auto_index = 0;
    for (size_t i = 0; i < fmt->len; i++) {
        char c = fmt->data[i];
        if ((c == '{' || c == '}') && i + 1 < fmt->len && fmt->data[i + 1] == c) {
            jbuf_putc(&b, c);
            i++;
            continue;
        }
        if (c != '{') {
            jbuf_putc(&b, c);
            continue;
        }
        size_t close = i + 1;
        while (close < fmt->len && fmt->data[close] != '}') close++;
        if (close >= fmt->len) {
            jbuf_free(&b);
            return rt_error(in, at, "Single '{' encountered in format string");
        }
        size_t name_end = i + 1;
        while (name_end < close && fmt->data[name_end] != ':' && fmt->data[name_end] != '!') name_end++;
        const jv *v = NULL;
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)(name_end - i - 1 > 100 ? 100 : name_end - i - 1), fmt->data + i + 1);
        if (!name[0]) v = call_arg(args, auto_index++, NULL);
        else if (name[0] >= '0' && name[0] <= '9') v = call_arg(args, (size_t)atoi(name), NULL);
        else v = call_arg(args, SIZE_MAX, name);
        if (!v) {
            jbuf_free(&b);
            return rt_error(in, at, "format string refers to a missing argument '%s'", name);
        }
        jv_write_str(&b, *v);
        i = close;
    }
    return rt_buf_result(in, at, &b, out);
}

static bool strip_method(interp *in, const node *at, jv self, const call_args *a, bool left, bool right, jv *out) {
    const jv *chars = call_arg(a, 0, NULL);
    const jstr *x = NULL;
    if (chars && chars->type != JV_NONE && !rt_want_str(in, at, chars, "strip argument", &x)) return false;
    return str_strip(in, at, self.u.s, x, left, right, out);
}

static bool m_strip(interp *in, const node *at, jv self, const call_args *a, jv *out) {
    return strip_method(in, at, self, a, true, true, out);
}
static bool m_lstrip(interp *in, const node *at, jv self, const call_args *a, jv *out) {
    return strip_method(in, at, self, a, true, false, out);
}
static bool m_rstrip(interp *in, const node *at, jv self, const call_args *a, jv *out) {
    return strip_method(in, at, self, a, false, true, out);
}

static bool split_method(interp *in, const node *at, jv self, const call_args *a, bool from_right, jv *out) {
    const jv *sep = call_arg(a, 0, "sep"), *max = call_arg(a, 1, "maxsplit");
    const jstr *x = NULL;
    int64_t n;
    if (sep && sep->type != JV_NONE && !rt_want_str(in, at, sep, "separator", &x)) return false;
    return rt_want_int(in, at, max, -1, &n) && (from_right ? str_rsplit : str_split)(in, at, self.u.s, x, n, out);
}

static bool m_split(interp *in, const node *at, jv self, const call_args *a, jv *out) { return split_method(in, at, self, a, false, out); }
static bool m_rsplit(interp *in, const node *at, jv self, const call_args *a, jv *out) { return split_method(in, at, self, a, true, out); }

static bool m_splitlines(interp *in, const node *at, jv self, const call_args *a, jv *out) {
    const jv *keepends = call_arg(a, 0, NULL);
    return str_split_lines(in, at, self.u.s, keepends && jv_truthy(*keepends), out);
}

static bool affix_method(interp *in, const node *at, jv self, const call_args *a, bool suffix, jv *out) {
    const jv *affix = call_arg(a, 0, NULL);
    bool r;
    if (!affix || !prefix_match(self.u.s, *affix, suffix, &r))
        return rt_error(in, at, "%s first arg must be str or a tuple of str", suffix ? "endswith" : "startswith");
    *out = jv_bool(r);
    return true;
}

static bool m_startswith(interp *in, const node *at, jv self, const call_args *a, jv *out) {
    return affix_method(in, at, self, a, false, out);
}
static bool m_endswith(interp *in, const node *at, jv self, const call_args *a, jv *out) {
    return affix_method(in, at, self, a, true, out);
}

static bool remove_affix(interp *in, const node *at, jv self, const call_args *a, bool suffix, jv *out) {
    const jv *affix = call_arg(a, 0, NULL);
    const jstr *s = self.u.s, *x;
    if (!rt_want_str(in, at, affix, "the affix", &x)) return false;
    bool has;
    prefix_match(s, *affix, suffix, &has);
    const size_t cut = has ? x->len : 0;
    return rt_make_str(in, at, s->data + (suffix ? 0 : cut), s->len - cut, out);
}

static bool m_removeprefix(interp *in, const node *at, jv self, const call_args *a, jv *out) {
    return remove_affix(in, at, self, a, false, out);
}
static bool m_removesuffix(interp *in, const node *at, jv self, const call_args *a, jv *out) {
    return remove_affix(in, at, self, a, true, out);
}

static bool m_replace(interp *in, const node *at, jv self, const call_args *a, jv *out) {
    const jstr *x, *y;
    int64_t n;
    return rt_want_str(in, at, call_arg(a, 0, NULL), "replace argument 1", &x) &&
           rt_want_str(in, at, call_arg(a, 1, NULL), "replace argument 2", &y) && rt_want_int(in, at, call_arg(a, 2, "count"), -1, &n) &&
           str_replace(in, at, self.u.s, x, y, n, out);
}

static bool m_upper(interp *in, const node *at, jv self, const call_args *a, jv *out) {
    (void)a;
    return str_change_case(in, at, self.u.s, CASE_UPPER, out);
}

static bool m_lower(interp *in, const node *at, jv self, const call_args *a, jv *out) {
    (void)a;
    return str_change_case(in, at, self.u.s, CASE_LOWER, out);
}

static bool m_title(interp *in, const node *at, jv self, const call_args *a, jv *out) {
    (void)a;
    return str_change_case(in, at, self.u.s, CASE_TITLE, out);
}

static bool m_capitalize(interp *in, const node *at, jv self, const call_args *a, jv *out) {
    (void)a;
    return str_change_case(in, at, self.u.s, CASE_CAPITALIZE, out);
}

static bool m_swapcase(interp *in, const node *at, jv self, const call_args *a, jv *out) {
    (void)a;
    return str_change_case(in, at, self.u.s, CASE_SWAP, out);
}

/* Unicode's full case folding ("Stra\u00dfe" -> "strasse"); text that is not UTF-8 lower-cased */
static bool m_casefold(interp *in, const node *at, jv self, const call_args *a, jv *out) {
    (void)a;
    const jstr *s = self.u.s;
    utf8proc_uint8_t *folded = NULL;
    const utf8proc_ssize_t folded_len =
        utf8proc_map((const utf8proc_uint8_t *)s->data, (utf8proc_ssize_t)s->len, &folded, UTF8PROC_CASEFOLD);
    if (folded_len < 0) return str_change_case(in, at, s, CASE_LOWER, out);
    const bool ok = rt_make_str(in, at, (const char *)folded, (size_t)folded_len, out);
    free(folded);
    return ok;
}

static bool m_format(interp *in, const node *at, jv self, const call_args *a, jv *out) { return format(in, at, self.u.s, a, out); }

static bool m_join(interp *in, const node *at, jv self, const call_args *a, jv *out) {
    const jv *items = call_arg(a, 0, NULL);
    return items ? str_join(in, at, *items, self.u.s, out) : rt_error(in, at, "join() takes exactly one argument");
}

/* find, rfind and index: a character offset, -1 (or an error) when absent */
static bool find_method(interp *in, const node *at, jv self, const call_args *a, bool from_right, bool must_find, jv *out) {
    const jstr *s = self.u.s, *x;
    if (!rt_want_str(in, at, call_arg(a, 0, NULL), "find argument", &x)) return false;
    size_t hit = SIZE_MAX;
    if (from_right) {
        for (size_t i = s->len + 1; i-- > 0 && hit == SIZE_MAX;)
            if (i + x->len <= s->len && !memcmp(s->data + i, x->data, x->len)) hit = i;
    } else {
        const char *p = x->len ? memmem(s->data, s->len, x->data, x->len) : s->data;
        if (p) hit = (size_t)(p - s->data);
    }
    if (hit == SIZE_MAX && must_find) return rt_error(in, at, "substring not found");
    *out = jv_int(hit == SIZE_MAX ? -1 : (int64_t)tpl_char_count(s->data, hit));
    return true;
}

static bool m_find(interp *in, const node *at, jv self, const call_args *a, jv *out) {
    return find_method(in, at, self, a, false, false, out);
}
static bool m_rfind(interp *in, const node *at, jv self, const call_args *a, jv *out) {
    return find_method(in, at, self, a, true, false, out);
}
static bool m_str_index(interp *in, const node *at, jv self, const call_args *a, jv *out) {
    return find_method(in, at, self, a, false, true, out);
}

static bool m_str_count(interp *in, const node *at, jv self, const call_args *a, jv *out) {
    const jstr *s = self.u.s, *x;
    if (!rt_want_str(in, at, call_arg(a, 0, NULL), "count argument", &x)) return false;
    int64_t c = 0;
    if (x->len == 0) { /* Python counts the empty string between characters and at both ends */
        jv_length(in, at, self, &c);
        c++;
    } else {
        for (size_t i = 0; i + x->len <= s->len;) {
            const char *hit = memmem(s->data + i, s->len - i, x->data, x->len);
            if (!hit) break;
            c++;
            i = (size_t)(hit - s->data) + x->len;
        }
    }
    *out = jv_int(c);
    return true;
}

static bool justify_method(interp *in, const node *at, jv self, const call_args *a, char how, jv *out) {
    const jv *fill = call_arg(a, 1, NULL);
    const jstr *y = NULL;
    int64_t n;
    if (!rt_want_int(in, at, call_arg(a, 0, NULL), 0, &n) || (fill && !rt_want_str(in, at, fill, "the fill character", &y))) return false;
    if (y && tpl_char_count(y->data, y->len) != 1) return rt_error(in, at, "The fill character must be exactly one character long");
    return str_justify(in, at, self.u.s, n, y, how, out);
}

static bool m_center(interp *in, const node *at, jv self, const call_args *a, jv *out) { return justify_method(in, at, self, a, 'c', out); }
static bool m_ljust(interp *in, const node *at, jv self, const call_args *a, jv *out) { return justify_method(in, at, self, a, 'l', out); }
static bool m_rjust(interp *in, const node *at, jv self, const call_args *a, jv *out) { return justify_method(in, at, self, a, 'r', out); }

static bool m_zfill(interp *in, const node *at, jv self, const call_args *a, jv *out) {
    const jstr *s = self.u.s;
    int64_t n;
    if (!rt_want_int(in, at, call_arg(a, 0, NULL), 0, &n)) return false;
    const size_t sign = s->len && (s->data[0] == '+' || s->data[0] == '-');
    const size_t chars = tpl_char_count(s->data, s->len);
    if (n > (int64_t)in->limits->max_output) return rt_error(in, at, "width too large");
    jbuf b = {0};
    jbuf_put(&b, s->data, sign);
    for (int64_t k = (int64_t)chars; k < n; k++) jbuf_putc(&b, '0');
    jbuf_put(&b, s->data + sign, s->len - sign);
    return rt_buf_result(in, at, &b, out);
}

static bool partition_method(interp *in, const node *at, jv self, const call_args *a, bool from_right, jv *out) {
    const jv *sep = call_arg(a, 0, NULL);
    const jstr *x;
    if (!rt_want_str(in, at, sep, "the separator", &x)) return false;
    if (!x->len) return rt_error(in, at, "empty separator");
    jv parts[3];
    const jv empty = jv_str(in->heap, "", 0);
    if (empty.type != JV_STR) return rt_oom(in, at);
    jv halves;
    if (!(from_right ? str_rsplit : str_split)(in, at, self.u.s, x, 1, &halves)) return false;
    if (halves.u.l->n == 2) {
        parts[0] = halves.u.l->items[0], parts[1] = *sep, parts[2] = halves.u.l->items[1];
    } else if (!from_right) {
        parts[0] = self, parts[1] = empty, parts[2] = empty;
    } else {
        parts[0] = empty, parts[1] = empty, parts[2] = self;
    }
    *out = jv_list(in->heap, parts, 3, true);
    return out->type == JV_TUPLE || rt_oom(in, at);
}

static bool m_partition(interp *in, const node *at, jv self, const call_args *a, jv *out) {
    return partition_method(in, at, self, a, false, out);
}
static bool m_rpartition(interp *in, const node *at, jv self, const call_args *a, jv *out) {
    return partition_method(in, at, self, a, true, out);
}

typedef enum { IS_DIGIT, IS_ALPHA, IS_ALNUM, IS_NUMERIC, IS_SPACE } char_class;

/* isdigit, isalpha...: true when every character (at least one) is of the class */
static bool all_of_class(jv self, char_class cls, jv *out) {
    const jstr *s = self.u.s;
    bool all = s->len > 0;
    for (size_t i = 0; i < s->len && all;) {
        size_t cl;
        int32_t c = tpl_decode(s->data + i, s->len - i, &cl);
        utf8proc_category_t cat = utf8proc_category(c);
        const bool letter = cat >= UTF8PROC_CATEGORY_LU && cat <= UTF8PROC_CATEGORY_LO;
        const bool number = cat >= UTF8PROC_CATEGORY_ND && cat <= UTF8PROC_CATEGORY_NO;
        switch (cls) {
        case IS_DIGIT: all = cat == UTF8PROC_CATEGORY_ND; break;
        case IS_ALPHA: all = letter; break;
        case IS_ALNUM: all = letter || number; break;
        case IS_NUMERIC: all = number; break;
        case IS_SPACE: all = tpl_isspace(c); break;
        }
        i += cl;
    }
    *out = jv_bool(all);
    return true;
}

static bool m_isdigit(interp *in, const node *at, jv self, const call_args *a, jv *out) {
    (void)in, (void)at, (void)a;
    return all_of_class(self, IS_DIGIT, out);
}

static bool m_isalpha(interp *in, const node *at, jv self, const call_args *a, jv *out) {
    (void)in, (void)at, (void)a;
    return all_of_class(self, IS_ALPHA, out);
}

static bool m_isalnum(interp *in, const node *at, jv self, const call_args *a, jv *out) {
    (void)in, (void)at, (void)a;
    return all_of_class(self, IS_ALNUM, out);
}

static bool m_isnumeric(interp *in, const node *at, jv self, const call_args *a, jv *out) {
    (void)in, (void)at, (void)a;
    return all_of_class(self, IS_NUMERIC, out);
}

static bool m_isspace(interp *in, const node *at, jv self, const call_args *a, jv *out) {
    (void)in, (void)at, (void)a;
    return all_of_class(self, IS_SPACE, out);
}

/* isupper, islower: at least one cased character, and none of the other case */
static bool cased_method(jv self, bool upper_wanted, jv *out) {
    const jstr *s = self.u.s;
    bool cased = false, other = false;
    for (size_t i = 0; i < s->len;) {
        size_t cl;
        utf8proc_category_t cat = utf8proc_category(tpl_decode(s->data + i, s->len - i, &cl));
        const bool upper = cat == UTF8PROC_CATEGORY_LU || cat == UTF8PROC_CATEGORY_LT, lower = cat == UTF8PROC_CATEGORY_LL;
        cased |= upper_wanted ? upper : lower;
        other |= upper_wanted ? lower : upper;
        i += cl;
    }
    *out = jv_bool(cased && !other);
    return true;
}

static bool m_isupper(interp *in, const node *at, jv self, const call_args *a, jv *out) {
    (void)in, (void)at, (void)a;
    return cased_method(self, true, out);
}

static bool m_islower(interp *in, const node *at, jv self, const call_args *a, jv *out) {
    (void)in, (void)at, (void)a;
    return cased_method(self, false, out);
}

static const method str_methods[] = {
    {"capitalize", m_capitalize},     {"casefold", m_casefold},     {"center", m_center},         {"count", m_str_count},
    {"endswith", m_endswith},         {"find", m_find},             {"format", m_format},         {"index", m_str_index},
    {"isalnum", m_isalnum},           {"isalpha", m_isalpha},       {"isdecimal", m_isdigit},     {"isdigit", m_isdigit},
    {"islower", m_islower},           {"isnumeric", m_isnumeric},   {"isspace", m_isspace},       {"isupper", m_isupper},
    {"join", m_join},                 {"ljust", m_ljust},           {"lower", m_lower},           {"lstrip", m_lstrip},
    {"partition", m_partition},       {"removeprefix", m_removeprefix}, {"removesuffix", m_removesuffix}, {"replace", m_replace},
    {"rfind", m_rfind},               {"rjust", m_rjust},           {"rpartition", m_rpartition}, {"rsplit", m_rsplit},
    {"rstrip", m_rstrip},             {"split", m_split},           {"splitlines", m_splitlines}, {"startswith", m_startswith},
    {"strip", m_strip},               {"swapcase", m_swapcase},     {"title", m_title},           {"upper", m_upper},
    {"zfill", m_zfill},
};

/* --- dict ------------------------------------------------------------------------------------ */

static bool m_items(interp *in, const node *at, jv self, const call_args *a, jv *out) {
    (void)a;
    return rt_dict_items(in, at, self.u.d, out);
}

static bool m_keys(interp *in, const node *at, jv self, const call_args *a, jv *out) {
    (void)a;
    *out = jv_list(in->heap, self.u.d->keys, self.u.d->n, false);
    return out->type == JV_LIST || rt_oom(in, at);
}

static bool m_values(interp *in, const node *at, jv self, const call_args *a, jv *out) {
    (void)a;
    *out = jv_list(in->heap, self.u.d->values, self.u.d->n, false);
    return out->type == JV_LIST || rt_oom(in, at);
}

static bool m_get(interp *in, const node *at, jv self, const call_args *a, jv *out) {
    const jv *key = call_arg(a, 0, NULL), *fallback = call_arg(a, 1, NULL);
    if (!key) return rt_error(in, at, "get expected at least 1 argument");
    const jv *v = jv_dict_get_value(self.u.d, *key);
    *out = v ? *v : fallback ? *fallback : jv_none();
    return true;
}

static const method dict_methods[] = {{"get", m_get}, {"items", m_items}, {"keys", m_keys}, {"values", m_values}};

/* --- list and tuple ----------------------------------------------------------------------------- */

static bool m_list_count(interp *in, const node *at, jv self, const call_args *a, jv *out) {
    (void)in, (void)at;
    const jv *x = call_arg(a, 0, NULL);
    int64_t c = 0;
    for (size_t i = 0; x && i < self.u.l->n; i++) c += jv_equal(self.u.l->items[i], *x);
    *out = jv_int(c);
    return true;
}

static bool m_list_index(interp *in, const node *at, jv self, const call_args *a, jv *out) {
    const jv *x = call_arg(a, 0, NULL);
    for (size_t i = 0; x && i < self.u.l->n; i++)
        if (jv_equal(self.u.l->items[i], *x)) {
            *out = jv_int((int64_t)i);
            return true;
        }
    return rt_error(in, at, "value is not in list");
}

static const method list_methods[] = {{"count", m_list_count}, {"index", m_list_index}};

/* --- binding and calling ----------------------------------------------------------------------- */

/* The methods of a receiver's type (none for other types). */
static const method *methods_of(jv self, size_t *n) {
    switch (self.type) {
    case JV_STR: *n = sizeof str_methods / sizeof str_methods[0]; return str_methods;
    case JV_DICT: *n = sizeof dict_methods / sizeof dict_methods[0]; return dict_methods;
    case JV_LIST:
    case JV_TUPLE: *n = sizeof list_methods / sizeof list_methods[0]; return list_methods;
    default: *n = 0; return NULL;
    }
}

bool builtin_method(interp *in, jv self, const char *name, jv *out) {
    size_t n;
    const method *table = methods_of(self, &n);
    const method *m = table ? rt_find_name(table, n, sizeof *table, name) : NULL;
    if (!m) return false;
    jv *bound = jv_alloc(in->heap, sizeof *bound);
    if (!bound) return false;
    *bound = self;
    *out = (jv){.type = JV_BUILTIN, .u.fn = {B_FIRST_METHOD + (int)(m - table), bound}};
    return true;
}

bool method_call(interp *in, const node *at, int id, jv self, const call_args *a, jv *out) {
    size_t n;
    const method *table = methods_of(self, &n);
    if (!table || id < B_FIRST_METHOD || (size_t)(id - B_FIRST_METHOD) >= n)
        return rt_error(in, at, "internal error: unknown method %d", id);
    return table[id - B_FIRST_METHOD].fn(in, at, self, a, out);
}
