/* Reading importance matrices (imatrix.h). What the quantizers get is what
 * llama-quantize computes from the same file: GGUF sums divided by their
 * count rounded to an integer, legacy values divided by the call count.
 * Where llama.cpp quietly substitutes (a count of 0 becomes all-ones
 * importance, a legacy call count of 0 raw values), sprout stops when a
 * whole entry saw no data, since quantizing with it would be guessing; an
 * unused expert's zero count among others is filled with ones as there. */
#include "quantize/imatrix.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/mapped_file.h"
#include "gguf/gguf_reader.h"

#define MAX_ENTRIES (1 << 20)
#define MAX_LEGACY_NAME 4096

typedef struct imatrix_entry {
    char *name;
    float *values;
    int64_t n;
} imatrix_entry;

struct sp_imatrix {
    imatrix_entry *entries;
    int64_t n, cap;
};

void sp_imatrix_free(sp_imatrix *m) {
    if (!m) return;
    for (int64_t i = 0; i < m->n; i++) free(m->entries[i].name), free(m->entries[i].values);
    free(m->entries);
    free(m);
}

int64_t sp_imatrix_count(const sp_imatrix *m) { return m ? m->n : 0; }
const char *sp_imatrix_name(const sp_imatrix *m, int64_t i) { return m && i >= 0 && i < m->n ? m->entries[i].name : NULL; }

const float *sp_imatrix_find(const sp_imatrix *m, const char *name, int64_t *n) {
    for (int64_t i = 0; m && i < m->n; i++)
        if (!strcmp(m->entries[i].name, name)) {
            *n = m->entries[i].n;
            return m->entries[i].values;
        }
    *n = 0;
    return NULL;
}

/* Adds an entry named by the len bytes at name with room for n values. */
static sprout_status add_entry(sp_imatrix *m, const char *file, const char *name, size_t len, int64_t n, float **values) {
    int64_t dummy;
    char *copy = malloc(len + 1);
    if (!copy) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "%s: out of memory", file);
    memcpy(copy, name, len);
    copy[len] = 0;
    if (strlen(copy) != len || !len) {
        free(copy);
        return sp_fail(SPROUT_ERR_FORMAT, "%s: an entry's tensor name is empty or holds a NUL byte", file);
    }
    if (sp_imatrix_find(m, copy, &dummy)) {
        sprout_status st = sp_fail(SPROUT_ERR_FORMAT, "%s: tensor '%s' appears twice", file, copy);
        free(copy);
        return st;
    }
    if (m->n == m->cap) {
        const int64_t cap = m->cap ? 2 * m->cap : 64;
        imatrix_entry *grown = cap <= MAX_ENTRIES ? realloc(m->entries, (size_t)cap * sizeof *grown) : NULL;
        if (!grown) {
            free(copy);
            return sp_fail(SPROUT_ERR_FORMAT, "%s: too many entries", file);
        }
        m->entries = grown;
        m->cap = cap;
    }
    float *v = malloc((size_t)n * sizeof *v);
    if (!v) {
        free(copy);
        return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "%s: out of memory for '%s'", file, name);
    }
    m->entries[m->n++] = (imatrix_entry){copy, v, n};
    *values = v;
    return SPROUT_OK;
}

static sprout_status check_values(const char *file, const char *name, const float *v, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(v[i]) || v[i] < 0)
            return sp_fail(SPROUT_ERR_FORMAT, "%s: '%s' holds %g at %lld: sums of squares are finite and not negative",
                           file, name, (double)v[i], (long long)i);
    return SPROUT_OK;
}

static bool has_suffix(const char *s, const char *suffix, size_t *stem) {
    const size_t n = strlen(s), m = strlen(suffix);
    *stem = n >= m ? n - m : 0;
    return n > m && !memcmp(s + n - m, suffix, m);
}

static const sp_gguf_tensor *find_tensor(const sp_gguf_part *part, const char *stem, size_t len, const char *suffix) {
    for (int64_t i = 0; i < part->n_tensors; i++) {
        const char *name = part->tensors[i].name;
        if (!strncmp(name, stem, len) && !strcmp(name + len, suffix)) return &part->tensors[i];
    }
    return NULL;
}

static float f32_at(const uint8_t *p) {
    float f;
    memcpy(&f, p, sizeof f);
    return f;
}

static sprout_status parse_gguf(const sp_gguf_part *part, const char *file, sp_imatrix *m) {
    const sprout_gguf_value *type = sp_gguf_part_find(part, "general.type");
    const char *s;
    size_t len;
    if (type && (sprout_gguf_value_str(type, &s, &len) != SPROUT_OK || len != 7 || memcmp(s, "imatrix", 7)))
        return sp_fail(SPROUT_ERR_FORMAT, "%s: general.type is not \"imatrix\": a model, not an importance matrix?", file);
    for (int64_t i = 0; i < part->n_tensors; i++) {
        const sp_gguf_tensor *sums = &part->tensors[i];
        size_t stem;
        if (has_suffix(sums->name, ".counts", &stem) && !find_tensor(part, sums->name, stem, ".in_sum2"))
            return sp_fail(SPROUT_ERR_FORMAT, "%s: '%s' has no .in_sum2 beside it", file, sums->name);
        if (!has_suffix(sums->name, ".in_sum2", &stem)) continue;
        const sp_gguf_tensor *counts = find_tensor(part, sums->name, stem, ".counts");
        if (!counts) return sp_fail(SPROUT_ERR_FORMAT, "%s: '%s' has no .counts beside it", file, sums->name);
        if (sums->type != SPROUT_TYPE_F32 || counts->type != SPROUT_TYPE_F32)
            return sp_fail(SPROUT_ERR_FORMAT, "%s: '%s' sums and counts must be F32", file, sums->name);
        const int64_t n_mat = counts->n_elements, n = sums->n_elements;
        if (n_mat < 1 || n < n_mat || n % n_mat || sums->ne[1] != n_mat)
            return sp_fail(SPROUT_ERR_FORMAT, "%s: '%s' has %lld sums for %lld counts (shape [%lld, %lld])", file,
                           sums->name, (long long)n, (long long)n_mat, (long long)sums->ne[0], (long long)sums->ne[1]);
        float *v;
        sprout_status st = add_entry(m, file, sums->name, stem, n, &v);
        if (st != SPROUT_OK) return st;
        const char *name = m->entries[m->n - 1].name;
        const int64_t ne0 = n / n_mat;
        bool any = false;
        for (int64_t j = 0; j < n_mat; j++) {
            const float c = f32_at(counts->data + 4 * j);
            if (!isfinite(c) || c < 0 || c > 1e15f)
                return sp_fail(SPROUT_ERR_FORMAT, "%s: '%s' count %lld is %g", file, name, (long long)j, (double)c);
            const float count = (float)llroundf(c);
            any |= count > 0;
            for (int64_t k = 0; k < ne0; k++) {
                const float sum = f32_at(sums->data + 4 * (j * ne0 + k));
                v[j * ne0 + k] = count > 0 ? sum / count : 1.f;
            }
        }
        if (!any) return sp_fail(SPROUT_ERR_FORMAT, "%s: '%s' saw no activations (its counts are 0)", file, name);
        if ((st = check_values(file, name, v, n)) != SPROUT_OK) return st;
    }
    if (!m->n) return sp_fail(SPROUT_ERR_FORMAT, "%s: no NAME.in_sum2 tensors: not an importance matrix", file);
    return SPROUT_OK;
}

static bool take_i32(const uint8_t **p, const uint8_t *end, int32_t *v) {
    if (end - *p < 4) return false;
    memcpy(v, *p, 4);
    *p += 4;
    return true;
}

/* int32 entries; per entry int32 name length, the name, int32 calls, int32
 * count, count floats; then optionally the chunk count and the data set's
 * name, which sprout does not need. */
static sprout_status parse_legacy(const uint8_t *data, uint64_t size, const char *file, sp_imatrix *m) {
    const uint8_t *p = data, *end = data + size;
    int32_t n_entries;
    if (!take_i32(&p, end, &n_entries) || n_entries < 1 || n_entries > MAX_ENTRIES)
        return sp_fail(SPROUT_ERR_FORMAT, "%s: neither an imatrix GGUF nor a legacy .dat with entries", file);
    for (int32_t e = 0; e < n_entries; e++) {
        int32_t len, calls, n;
        if (!take_i32(&p, end, &len) || len < 1 || len > MAX_LEGACY_NAME || end - p < len)
            return sp_fail(SPROUT_ERR_FORMAT, "%s: entry %d: truncated or bad name", file, (int)e);
        const char *name = (const char *)p;
        p += len;
        if (!take_i32(&p, end, &calls) || !take_i32(&p, end, &n) || n < 1 || (uint64_t)(end - p) / 4 < (uint64_t)n)
            return sp_fail(SPROUT_ERR_FORMAT, "%s: entry %d ('%.*s'): truncated", file, (int)e, (int)len, name);
        if (calls < 1)
            return sp_fail(SPROUT_ERR_FORMAT, "%s: '%.*s' has a call count of %d: it saw no activations", file, (int)len,
                           name, (int)calls);
        float *v;
        sprout_status st = add_entry(m, file, name, (size_t)len, n, &v);
        if (st != SPROUT_OK) return st;
        for (int32_t k = 0; k < n; k++, p += 4) v[k] = f32_at(p) / (float)calls;
        if ((st = check_values(file, m->entries[m->n - 1].name, v, n)) != SPROUT_OK) return st;
    }
    return SPROUT_OK;
}

sprout_status sp_imatrix_parse(const uint8_t *data, uint64_t size, const char *name, sp_imatrix **out) {
    *out = NULL;
    sp_imatrix *m = calloc(1, sizeof *m);
    if (!m) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "%s: out of memory", name);
    sprout_status st;
    if (size >= 4 && !memcmp(data, SP_GGUF_MAGIC, 4)) {
        sp_gguf_part part = {0};
        st = sp_gguf_part_parse(data, size, name, &part);
        if (st == SPROUT_OK) st = parse_gguf(&part, name, m);
        sp_gguf_part_free(&part);
    } else {
        st = parse_legacy(data, size, name, m);
    }
    if (st != SPROUT_OK) sp_imatrix_free(m);
    else *out = m;
    return st;
}

sprout_status sp_imatrix_load(const char *path, sp_imatrix **out) {
    *out = NULL;
    sp_mapped_file map = {0};
    sprout_status st = sp_mapped_file_open(path, &map);
    if (st == SPROUT_OK) st = sp_imatrix_parse(map.data ? map.data : (const uint8_t *)"", map.size, path, out);
    sp_mapped_file_close(&map);
    return st;
}
