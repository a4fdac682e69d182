/* The public GGUF handle: one file or a split model presented as one, and
 * the typed accessors over its metadata and tensors.
 *
 * A split model is a set "PREFIX-00001-of-0000N.gguf" ... "-0000N-of-0000N"
 * whose parts carry split.no (0-based), split.count and, in the first part,
 * split.tensors.count. The first part holds the model's metadata; each part
 * holds some of the tensors, its data in its own file. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "core/sigbus_guard.h"
#include "core/strmap.h"
#include "gguf/gguf_reader.h"
#include "gguf/gguf_resident.h"

/* The whole model: the first part's metadata, every part's tensors. */
struct sprout_gguf {
    uint32_t n_parts;
    sp_gguf_part *parts;
    int64_t n_tensors;
    sp_gguf_tensor *tensors; /* copies of the parts' entries, in order */
    sp_strmap tensor_index;
    sp_strmap key_index; /* keys of parts[0] */
};

/* --- value accessors ---------------------------------------------------------- */

static bool is_unsigned(sprout_gguf_type t) {
    return t == SPROUT_GGUF_UINT8 || t == SPROUT_GGUF_UINT16 || t == SPROUT_GGUF_UINT32 || t == SPROUT_GGUF_UINT64;
}
static bool is_signed(sprout_gguf_type t) {
    return t == SPROUT_GGUF_INT8 || t == SPROUT_GGUF_INT16 || t == SPROUT_GGUF_INT32 || t == SPROUT_GGUF_INT64;
}
static bool is_float(sprout_gguf_type t) { return t == SPROUT_GGUF_FLOAT32 || t == SPROUT_GGUF_FLOAT64; }

static sprout_status mismatch(const sprout_gguf_value *v, const char *wanted) {
    if (!v) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "NULL value");
    return sp_fail(SPROUT_ERR_TYPE_MISMATCH, "value is %s, expected %s", sprout_gguf_type_name(v->type), wanted);
}

sprout_gguf_type sprout_gguf_value_type(const sprout_gguf_value *v) { return v ? v->type : SPROUT_GGUF_UINT8; }

sprout_status sprout_gguf_value_u64(const sprout_gguf_value *v, uint64_t *out) {
    if (v && is_unsigned(v->type)) {
        *out = v->as.u64;
        return SPROUT_OK;
    }
    if (v && is_signed(v->type)) {
        if (v->as.i64 < 0) return sp_fail(SPROUT_ERR_OUT_OF_RANGE, "value %" PRId64 " is negative", v->as.i64);
        *out = (uint64_t)v->as.i64;
        return SPROUT_OK;
    }
    return mismatch(v, "an integer");
}

sprout_status sprout_gguf_value_i64(const sprout_gguf_value *v, int64_t *out) {
    if (v && is_signed(v->type)) {
        *out = v->as.i64;
        return SPROUT_OK;
    }
    if (v && is_unsigned(v->type)) {
        if (v->as.u64 > (uint64_t)INT64_MAX) return sp_fail(SPROUT_ERR_OUT_OF_RANGE, "value %" PRIu64 " exceeds i64", v->as.u64);
        *out = (int64_t)v->as.u64;
        return SPROUT_OK;
    }
    return mismatch(v, "an integer");
}

sprout_status sprout_gguf_value_f64(const sprout_gguf_value *v, double *out) {
    if (v && is_float(v->type)) *out = v->as.f64;
    else if (v && is_unsigned(v->type)) *out = (double)v->as.u64;
    else if (v && is_signed(v->type)) *out = (double)v->as.i64;
    else return mismatch(v, "a number");
    return SPROUT_OK;
}

sprout_status sprout_gguf_value_bool(const sprout_gguf_value *v, bool *out) {
    if (!v || v->type != SPROUT_GGUF_BOOL) return mismatch(v, "bool");
    *out = v->as.b;
    return SPROUT_OK;
}

sprout_status sprout_gguf_value_str(const sprout_gguf_value *v, const char **str, size_t *len) {
    if (!v || v->type != SPROUT_GGUF_STRING) return mismatch(v, "string");
    *str = v->as.str.ptr;
    *len = (size_t)v->as.str.len;
    return SPROUT_OK;
}

sprout_gguf_type sprout_gguf_array_type(const sprout_gguf_value *a) {
    return a && a->type == SPROUT_GGUF_ARRAY ? a->as.arr.elem_type : SPROUT_GGUF_UINT8;
}

uint64_t sprout_gguf_array_len(const sprout_gguf_value *a) { return a && a->type == SPROUT_GGUF_ARRAY ? a->as.arr.len : 0; }

/* Element i of a numeric or bool array, decoded into a scalar value. */
static sprout_status array_scalar(const sprout_gguf_value *a, uint64_t i, sprout_gguf_value *out) {
    if (!a || a->type != SPROUT_GGUF_ARRAY) return mismatch(a, "array");
    if (i >= a->as.arr.len)
        return sp_fail(SPROUT_ERR_OUT_OF_RANGE, "index %" PRIu64 " past the end of an array of %" PRIu64, i, a->as.arr.len);
    sprout_gguf_type t = a->as.arr.elem_type;
    uint64_t size = sp_gguf_type_size(t);
    if (!size) return sp_fail(SPROUT_ERR_TYPE_MISMATCH, "array of %s, expected numbers", sprout_gguf_type_name(t));
    sp_gguf_decode_scalar(t, a->as.arr.raw + i * size, out);
    return SPROUT_OK;
}

sprout_status sprout_gguf_array_u64(const sprout_gguf_value *a, uint64_t i, uint64_t *out) {
    sprout_gguf_value v;
    sprout_status st = array_scalar(a, i, &v);
    return st == SPROUT_OK ? sprout_gguf_value_u64(&v, out) : st;
}

sprout_status sprout_gguf_array_i64(const sprout_gguf_value *a, uint64_t i, int64_t *out) {
    sprout_gguf_value v;
    sprout_status st = array_scalar(a, i, &v);
    return st == SPROUT_OK ? sprout_gguf_value_i64(&v, out) : st;
}

sprout_status sprout_gguf_array_f64(const sprout_gguf_value *a, uint64_t i, double *out) {
    sprout_gguf_value v;
    sprout_status st = array_scalar(a, i, &v);
    return st == SPROUT_OK ? sprout_gguf_value_f64(&v, out) : st;
}

sprout_status sprout_gguf_array_bool(const sprout_gguf_value *a, uint64_t i, bool *out) {
    sprout_gguf_value v;
    sprout_status st = array_scalar(a, i, &v);
    return st == SPROUT_OK ? sprout_gguf_value_bool(&v, out) : st;
}

sprout_status sprout_gguf_array_str(const sprout_gguf_value *a, uint64_t i, const char **str, size_t *len) {
    if (!a || a->type != SPROUT_GGUF_ARRAY) return mismatch(a, "array");
    if (a->as.arr.elem_type != SPROUT_GGUF_STRING)
        return sp_fail(SPROUT_ERR_TYPE_MISMATCH, "array of %s, expected strings", sprout_gguf_type_name(a->as.arr.elem_type));
    if (i >= a->as.arr.len)
        return sp_fail(SPROUT_ERR_OUT_OF_RANGE, "index %" PRIu64 " past the end of an array of %" PRIu64, i, a->as.arr.len);
    *str = a->as.arr.strs[i].ptr;
    *len = (size_t)a->as.arr.strs[i].len;
    return SPROUT_OK;
}

const sprout_gguf_value *sprout_gguf_array_elem(const sprout_gguf_value *a, uint64_t i) {
    if (!a || a->type != SPROUT_GGUF_ARRAY || a->as.arr.elem_type != SPROUT_GGUF_ARRAY || i >= a->as.arr.len) return NULL;
    return &a->as.arr.items[i];
}

/* --- the handle ------------------------------------------------------------------ */

uint32_t sprout_gguf_version(const sprout_gguf *g) { return g ? g->parts[0].version : 0; }
uint32_t sprout_gguf_split_count(const sprout_gguf *g) { return g ? g->n_parts : 0; }
uint32_t sprout_gguf_alignment(const sprout_gguf *g) { return g ? g->parts[0].alignment : 0; }

uint64_t sprout_gguf_file_size(const sprout_gguf *g) {
    uint64_t total = 0;
    for (uint32_t i = 0; g && i < g->n_parts; i++) total += g->parts[i].map.size;
    return total;
}

int64_t sprout_gguf_kv_count(const sprout_gguf *g) { return g ? g->parts[0].n_kv : 0; }

const char *sprout_gguf_kv_key(const sprout_gguf *g, int64_t i) {
    return g && i >= 0 && i < g->parts[0].n_kv ? g->parts[0].kvs[i].key : NULL;
}

const sprout_gguf_value *sprout_gguf_kv_value(const sprout_gguf *g, int64_t i) {
    return g && i >= 0 && i < g->parts[0].n_kv ? &g->parts[0].kvs[i].value : NULL;
}

const sprout_gguf_value *sprout_gguf_find(const sprout_gguf *g, const char *key) {
    if (!g || !key) return NULL;
    int64_t i = sp_strmap_find(&g->key_index, key, strlen(key));
    return i >= 0 ? &g->parts[0].kvs[i].value : NULL;
}

/* Finds `key` for a typed getter, with the key named in any error. */
static sprout_status find_for_get(const sprout_gguf *g, const char *key, const sprout_gguf_value **out) {
    if (!g || !key) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "NULL model or key");
    *out = sprout_gguf_find(g, key);
    if (!*out) return sp_fail(SPROUT_ERR_NOT_FOUND, "key '%s' not found", key);
    return SPROUT_OK;
}

static sprout_status keyed(sprout_status st, const char *key) {
    if (st != SPROUT_OK) sp_error_prefix("key '%s'", key);
    return st;
}

sprout_status sprout_gguf_get_u64(const sprout_gguf *g, const char *key, uint64_t *out) {
    const sprout_gguf_value *v = NULL;
    sprout_status st = find_for_get(g, key, &v);
    return st != SPROUT_OK ? st : keyed(sprout_gguf_value_u64(v, out), key);
}

sprout_status sprout_gguf_get_u32(const sprout_gguf *g, const char *key, uint32_t *out) {
    uint64_t v;
    sprout_status st = sprout_gguf_get_u64(g, key, &v);
    if (st != SPROUT_OK) return st;
    if (v > UINT32_MAX) return sp_fail(SPROUT_ERR_OUT_OF_RANGE, "key '%s': value %" PRIu64 " does not fit in u32", key, v);
    *out = (uint32_t)v;
    return SPROUT_OK;
}

sprout_status sprout_gguf_get_i32(const sprout_gguf *g, const char *key, int32_t *out) {
    const sprout_gguf_value *v = NULL;
    sprout_status st = find_for_get(g, key, &v);
    int64_t x;
    if (st != SPROUT_OK || (st = keyed(sprout_gguf_value_i64(v, &x), key)) != SPROUT_OK) return st;
    if (x < INT32_MIN || x > INT32_MAX)
        return sp_fail(SPROUT_ERR_OUT_OF_RANGE, "key '%s': value %" PRId64 " does not fit in i32", key, x);
    *out = (int32_t)x;
    return SPROUT_OK;
}

sprout_status sprout_gguf_get_f32(const sprout_gguf *g, const char *key, float *out) {
    const sprout_gguf_value *v = NULL;
    double x;
    sprout_status st = find_for_get(g, key, &v);
    if (st != SPROUT_OK || (st = keyed(sprout_gguf_value_f64(v, &x), key)) != SPROUT_OK) return st;
    *out = (float)x;
    return SPROUT_OK;
}

sprout_status sprout_gguf_get_bool(const sprout_gguf *g, const char *key, bool *out) {
    const sprout_gguf_value *v = NULL;
    sprout_status st = find_for_get(g, key, &v);
    return st != SPROUT_OK ? st : keyed(sprout_gguf_value_bool(v, out), key);
}

sprout_status sprout_gguf_get_str(const sprout_gguf *g, const char *key, const char **str, size_t *len) {
    const sprout_gguf_value *v = NULL;
    sprout_status st = find_for_get(g, key, &v);
    return st != SPROUT_OK ? st : keyed(sprout_gguf_value_str(v, str, len), key);
}

sprout_status sprout_gguf_get_array(const sprout_gguf *g, const char *key, const sprout_gguf_value **array,
                                    sprout_gguf_type *elem_type, uint64_t *count) {
    const sprout_gguf_value *v = NULL;
    sprout_status st = find_for_get(g, key, &v);
    if (st != SPROUT_OK) return st;
    if (v->type != SPROUT_GGUF_ARRAY)
        return sp_fail(SPROUT_ERR_TYPE_MISMATCH, "key '%s': value is %s, expected array", key, sprout_gguf_type_name(v->type));
    if (elem_type && *elem_type != v->as.arr.elem_type)
        return sp_fail(SPROUT_ERR_TYPE_MISMATCH, "key '%s': array of %s, expected array of %s", key,
                       sprout_gguf_type_name(v->as.arr.elem_type), sprout_gguf_type_name(*elem_type));
    if (array) *array = v;
    if (count) *count = v->as.arr.len;
    return SPROUT_OK;
}

/* --- tensors ------------------------------------------------------------------------ */

static const sp_gguf_tensor *tensor_at(const sprout_gguf *g, int64_t i) {
    return g && i >= 0 && i < g->n_tensors ? &g->tensors[i] : NULL;
}

int64_t sprout_gguf_tensor_count(const sprout_gguf *g) { return g ? g->n_tensors : 0; }

int64_t sprout_gguf_find_tensor(const sprout_gguf *g, const char *name) {
    return g && name ? sp_strmap_find(&g->tensor_index, name, strlen(name)) : -1;
}

const char *sprout_gguf_tensor_name(const sprout_gguf *g, int64_t i) {
    const sp_gguf_tensor *t = tensor_at(g, i);
    return t ? t->name : NULL;
}

sprout_type sprout_gguf_tensor_type(const sprout_gguf *g, int64_t i) {
    const sp_gguf_tensor *t = tensor_at(g, i);
    return t ? t->type : SPROUT_TYPE_F32;
}

int sprout_gguf_tensor_n_dims(const sprout_gguf *g, int64_t i) {
    const sp_gguf_tensor *t = tensor_at(g, i);
    return t ? t->n_dims : 0;
}

int64_t sprout_gguf_tensor_dim(const sprout_gguf *g, int64_t i, int d) {
    const sp_gguf_tensor *t = tensor_at(g, i);
    return t && d >= 0 && d < SP_GGUF_MAX_DIMS ? t->ne[d] : (t ? 1 : 0);
}

int64_t sprout_gguf_tensor_elements(const sprout_gguf *g, int64_t i) {
    const sp_gguf_tensor *t = tensor_at(g, i);
    return t ? t->n_elements : 0;
}

uint64_t sprout_gguf_tensor_bytes(const sprout_gguf *g, int64_t i) {
    const sp_gguf_tensor *t = tensor_at(g, i);
    return t ? t->bytes : 0;
}

uint64_t sprout_gguf_tensor_file_offset(const sprout_gguf *g, int64_t i) {
    const sp_gguf_tensor *t = tensor_at(g, i);
    return t ? t->file_offset : 0;
}

uint32_t sprout_gguf_tensor_part(const sprout_gguf *g, int64_t i) {
    const sp_gguf_tensor *t = tensor_at(g, i);
    return t ? t->part : 0;
}

const void *sprout_gguf_tensor_data(const sprout_gguf *g, int64_t i) {
    const sp_gguf_tensor *t = tensor_at(g, i);
    return t ? t->data : NULL;
}

/* --- opening, with split models ---------------------------------------------------- */

/* Recognises "PREFIX-NNNNN-of-MMMMM.gguf"; prefix_len gets the length of
 * PREFIX, index and count the two numbers. */
static bool parse_split_path(const char *path, size_t *prefix_len, unsigned *index, unsigned *count) {
    static const char tail[] = "-00000-of-00000.gguf";
    size_t n = strlen(path), t = sizeof tail - 1;
    if (n <= t) return false;
    const char *s = path + n - t;
    for (size_t i = 0; i < t; i++) {
        bool digit = tail[i] == '0';
        if (digit ? (s[i] < '0' || s[i] > '9') : s[i] != tail[i]) return false;
    }
    *index = (unsigned)strtoul(s + 1, NULL, 10);
    *count = (unsigned)strtoul(s + 10, NULL, 10);
    *prefix_len = n - t;
    return true;
}

/* The split.* number of a part, or `fallback` if the key is absent. */
static sprout_status split_key(const sp_gguf_part *p, const char *key, uint64_t fallback, uint64_t *out) {
    const sprout_gguf_value *v = sp_gguf_part_find(p, key);
    *out = fallback;
    if (!v) return SPROUT_OK;
    if (sprout_gguf_value_u64(v, out) != SPROUT_OK)
        return sp_fail(SPROUT_ERR_FORMAT, "%s: key '%s' must be a non-negative integer (it is %s)", p->path, key,
                       sprout_gguf_type_name(v->type));
    return SPROUT_OK;
}

static sprout_status index_model(sprout_gguf *g) {
    sp_gguf_part *first = &g->parts[0];
    if (!sp_strmap_init(&g->key_index, (size_t)first->n_kv)) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
    for (int64_t i = 0; i < first->n_kv; i++)
        if (sp_strmap_insert(&g->key_index, first->kvs[i].key, strlen(first->kvs[i].key), i, NULL) < 0)
            return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");

    int64_t total = 0;
    for (uint32_t p = 0; p < g->n_parts; p++) total += g->parts[p].n_tensors;
    g->tensors = total ? calloc((size_t)total, sizeof *g->tensors) : NULL;
    if ((total && !g->tensors) || !sp_strmap_init(&g->tensor_index, (size_t)total))
        return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory for %" PRId64 " tensors", total);
    for (uint32_t p = 0; p < g->n_parts; p++) {
        for (int64_t i = 0; i < g->parts[p].n_tensors; i++) {
            sp_gguf_tensor *t = &g->tensors[g->n_tensors];
            *t = g->parts[p].tensors[i];
            t->part = p;
            int64_t first_index;
            int ins = sp_strmap_insert(&g->tensor_index, t->name, strlen(t->name), g->n_tensors, &first_index);
            if (ins < 0) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
            if (ins == 0)
                return sp_fail(SPROUT_ERR_FORMAT, "%s: tensor '%s' also appears in %s", g->parts[p].path, t->name,
                               g->parts[g->tensors[first_index].part].path);
            g->n_tensors++;
        }
    }
    return SPROUT_OK;
}

/* Loads parts 1..count of a split model, checking that each knows its place. */
static sprout_status load_split_parts(sprout_gguf *g, const char *path, size_t prefix_len, uint64_t count) {
    g->parts = calloc((size_t)count, sizeof *g->parts);
    if (!g->parts) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
    size_t name_cap = prefix_len + 32;
    char *name = malloc(name_cap);
    if (!name) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
    sprout_status st = SPROUT_OK;
    for (uint64_t i = 0; i < count && st == SPROUT_OK; i++) {
        snprintf(name, name_cap, "%.*s-%05u-of-%05u.gguf", (int)prefix_len, path, (unsigned)(i + 1), (unsigned)count);
        g->n_parts = (uint32_t)(i + 1);
        if ((st = sp_gguf_part_load(name, &g->parts[i])) != SPROUT_OK) {
            if (st == SPROUT_ERR_NOT_FOUND) sp_error_prefix("split model part %u of %u missing", (unsigned)(i + 1), (unsigned)count);
            break;
        }
        uint64_t no, n;
        if ((st = split_key(&g->parts[i], "split.no", UINT64_MAX, &no)) != SPROUT_OK) break;
        if ((st = split_key(&g->parts[i], "split.count", UINT64_MAX, &n)) != SPROUT_OK) break;
        if (no != i || n != count)
            st = sp_fail(SPROUT_ERR_FORMAT, "%s: split.no/split.count say part %" PRIu64 " of %" PRIu64 ", its name says %" PRIu64 " of %" PRIu64,
                         name, no == UINT64_MAX ? 0 : no + 1, n == UINT64_MAX ? 0 : n, i + 1, count);
    }
    free(name);
    return st;
}

sprout_status sprout_gguf_open(const char *path, sprout_gguf **out) {
    if (!out) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "NULL output pointer");
    *out = NULL;
    if (!path) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "NULL path");
    sprout_gguf *g = calloc(1, sizeof *g);
    if (!g) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");

    sp_gguf_part probe = {0};
    sprout_status st = sp_gguf_part_load(path, &probe);
    uint64_t count = 1;
    if (st == SPROUT_OK) st = split_key(&probe, "split.count", 1, &count);
    if (st == SPROUT_OK && count > 1) {
        size_t prefix_len;
        unsigned index, name_count;
        if (!parse_split_path(path, &prefix_len, &index, &name_count) || name_count != count) {
            st = sp_fail(SPROUT_ERR_FORMAT,
                         "%s: the file is one of %" PRIu64 " parts of a split model, but its name does not end in "
                         "-NNNNN-of-%05" PRIu64 ".gguf",
                         path, count, count);
        } else if (count > 99999) {
            st = sp_fail(SPROUT_ERR_FORMAT, "%s: split.count %" PRIu64 " is too large", path, count);
        } else {
            sp_gguf_part_free(&probe); /* reloaded in order with its siblings */
            st = load_split_parts(g, path, prefix_len, count);
            if (st == SPROUT_OK) {
                uint64_t expected, total = 0;
                for (uint32_t p = 0; p < g->n_parts; p++) total += (uint64_t)g->parts[p].n_tensors;
                st = split_key(&g->parts[0], "split.tensors.count", total, &expected);
                if (st == SPROUT_OK && expected != total)
                    st = sp_fail(SPROUT_ERR_FORMAT, "%s: split.tensors.count is %" PRIu64 " but the %" PRIu64 " parts hold %" PRIu64 " tensors",
                                 g->parts[0].path, expected, count, total);
            }
        }
    } else if (st == SPROUT_OK) {
        g->parts = malloc(sizeof *g->parts);
        if (!g->parts) {
            st = sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
        } else {
            g->parts[0] = probe;
            g->n_parts = 1;
            memset(&probe, 0, sizeof probe);
        }
    }
    sp_gguf_part_free(&probe);
    if (st == SPROUT_OK) st = index_model(g);
    if (st != SPROUT_OK) {
        sprout_gguf_close(g);
        return st;
    }
    *out = g;
    return SPROUT_OK;
}

void sprout_gguf_close(sprout_gguf *g) {
    if (!g) return;
    for (uint32_t i = 0; i < g->n_parts; i++) sp_gguf_part_free(&g->parts[i]);
    free(g->parts);
    free(g->tensors);
    sp_strmap_free(&g->tensor_index);
    sp_strmap_free(&g->key_index);
    free(g);
}

/* --- load-time residency --------------------------------------------------------------- */

typedef struct page_walk {
    const uint8_t *from, *to;
    size_t page;
    uint8_t sum; /* read back, so that no read can be left out */
} page_walk;

static void touch_pages(void *ctx) {
    page_walk *w = ctx;
    uint8_t sum = 0;
    for (const volatile uint8_t *p = w->from; p < w->to; p += w->page) sum ^= *p;
    w->sum = sum;
}

sprout_status sp_gguf_fault_in(const sprout_gguf *g) {
    long page = sysconf(_SC_PAGESIZE);
    for (uint32_t i = 0; g && i < g->n_parts; i++) {
        const sp_gguf_part *part = &g->parts[i];
        if (!part->map.data || part->data_offset >= part->map.size) continue;
        page_walk w = {part->map.data + part->data_offset, part->map.data + part->map.size, page > 0 ? (size_t)page : 4096, 0};
        if (!sp_sigbus_guarded(touch_pages, &w))
            return sp_fail(SPROUT_ERR_IO, "%s: truncated while loading (its data could not be read)", part->path);
    }
    return sp_gguf_check_size(g);
}

sprout_status sp_gguf_check_size(const sprout_gguf *g) {
    for (uint32_t i = 0; g && i < g->n_parts; i++) {
        sprout_status st = sp_mapped_file_check_size(&g->parts[i].map, g->parts[i].path);
        if (st != SPROUT_OK) return st;
    }
    return SPROUT_OK;
}
