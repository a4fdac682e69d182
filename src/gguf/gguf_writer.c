#include "gguf/gguf_writer.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/checked.h"
#include "core/error.h"
#include "gguf/gguf_reader.h"
#include "quant/quant.h"

/* --- a growable byte buffer holding little-endian encodings -------------------- */

typedef struct buf {
    uint8_t *data;
    size_t len, cap;
    bool oom;
} buf;

static void buf_put(buf *b, const void *p, size_t n) {
    if (b->oom) return;
    if (b->cap - b->len < n) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap - b->len < n) {
            if (cap > SIZE_MAX / 2) {
                b->oom = true;
                return;
            }
            cap *= 2;
        }
        uint8_t *d = realloc(b->data, cap);
        if (!d) {
            b->oom = true;
            return;
        }
        b->data = d;
        b->cap = cap;
    }
    if (n) memcpy(b->data + b->len, p, n);
    b->len += n;
}

static void buf_put_le(buf *b, uint64_t v, int bytes) {
    uint8_t tmp[8];
    for (int i = 0; i < bytes; i++) tmp[i] = (uint8_t)(v >> (8 * i));
    buf_put(b, tmp, (size_t)bytes);
}

static void buf_put_str(buf *b, const char *s, uint64_t len) {
    buf_put_le(b, len, 8);
    buf_put(b, s, (size_t)len);
}

/* --- the writer ---------------------------------------------------------------- */

typedef struct wkv {
    char *key;
    buf value; /* u32 type, then the encoded value */
} wkv;

typedef struct wtensor {
    char *name;
    sprout_type type;
    int n_dims;
    int64_t ne[SP_GGUF_MAX_DIMS];
    uint64_t bytes;
    const void *data;
} wtensor;

struct sp_gguf_writer {
    wkv *kvs;
    int64_t n_kv, cap_kv;
    wtensor *tensors;
    int64_t n_tensors, cap_tensors;
    uint32_t alignment;
};

sp_gguf_writer *sp_gguf_writer_new(void) {
    sp_gguf_writer *w = calloc(1, sizeof *w);
    if (w) w->alignment = SP_GGUF_DEFAULT_ALIGNMENT;
    return w;
}

void sp_gguf_writer_free(sp_gguf_writer *w) {
    if (!w) return;
    for (int64_t i = 0; i < w->n_kv; i++) {
        free(w->kvs[i].key);
        free(w->kvs[i].value.data);
    }
    for (int64_t i = 0; i < w->n_tensors; i++) free(w->tensors[i].name);
    free(w->kvs);
    free(w->tensors);
    free(w);
}

static int64_t find_kv(const sp_gguf_writer *w, const char *key) {
    for (int64_t i = 0; i < w->n_kv; i++)
        if (strcmp(w->kvs[i].key, key) == 0) return i;
    return -1;
}

/* Stores an encoded value under key, replacing an earlier one. Takes
 * ownership of `value`'s memory. */
static sprout_status put_kv(sp_gguf_writer *w, const char *key, buf value) {
    if (value.oom) {
        free(value.data);
        return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory encoding key '%s'", key);
    }
    size_t key_len = strlen(key);
    if (key_len == 0 || key_len > SP_GGUF_MAX_KEY_LEN) {
        free(value.data);
        return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "metadata key of %zu bytes (1 to %u allowed)", key_len, SP_GGUF_MAX_KEY_LEN);
    }
    int64_t i = find_kv(w, key);
    if (i >= 0) {
        free(w->kvs[i].value.data);
        w->kvs[i].value = value;
        return SPROUT_OK;
    }
    if (w->n_kv == w->cap_kv) {
        int64_t cap = w->cap_kv ? 2 * w->cap_kv : 32;
        wkv *kvs = realloc(w->kvs, (size_t)cap * sizeof *kvs);
        if (!kvs) {
            free(value.data);
            return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
        }
        w->kvs = kvs;
        w->cap_kv = cap;
    }
    char *k = strdup(key);
    if (!k) {
        free(value.data);
        return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    w->kvs[w->n_kv++] = (wkv){k, value};
    return SPROUT_OK;
}

/* Encodes a C scalar of `type` at p. */
static void encode_native_scalar(buf *b, sprout_gguf_type type, const void *p) {
    switch (type) {
    case SPROUT_GGUF_UINT8: buf_put_le(b, *(const uint8_t *)p, 1); break;
    case SPROUT_GGUF_INT8: buf_put_le(b, (uint8_t) * (const int8_t *)p, 1); break;
    case SPROUT_GGUF_UINT16: buf_put_le(b, *(const uint16_t *)p, 2); break;
    case SPROUT_GGUF_INT16: buf_put_le(b, (uint16_t) * (const int16_t *)p, 2); break;
    case SPROUT_GGUF_UINT32: buf_put_le(b, *(const uint32_t *)p, 4); break;
    case SPROUT_GGUF_INT32: buf_put_le(b, (uint32_t) * (const int32_t *)p, 4); break;
    case SPROUT_GGUF_UINT64: buf_put_le(b, *(const uint64_t *)p, 8); break;
    case SPROUT_GGUF_INT64: buf_put_le(b, (uint64_t) * (const int64_t *)p, 8); break;
    case SPROUT_GGUF_FLOAT32: {
        uint32_t bits;
        memcpy(&bits, p, 4);
        buf_put_le(b, bits, 4);
        break;
    }
    case SPROUT_GGUF_FLOAT64: {
        uint64_t bits;
        memcpy(&bits, p, 8);
        buf_put_le(b, bits, 8);
        break;
    }
    case SPROUT_GGUF_BOOL: buf_put_le(b, *(const bool *)p ? 1 : 0, 1); break;
    case SPROUT_GGUF_STRING:
    case SPROUT_GGUF_ARRAY: break;
    }
}

static bool is_fixed(sprout_gguf_type t) { return t <= SPROUT_GGUF_FLOAT64 && sp_gguf_type_size(t) > 0; }

sprout_status sp_gguf_writer_set_scalar(sp_gguf_writer *w, const char *key, sprout_gguf_type type, const void *value) {
    if (!w || !key || !value || !is_fixed(type)) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "bad scalar for key '%s'", key ? key : "");
    buf b = {0};
    buf_put_le(&b, type, 4);
    encode_native_scalar(&b, type, value);
    return put_kv(w, key, b);
}

sprout_status sp_gguf_writer_set_str(sp_gguf_writer *w, const char *key, const char *str, size_t len) {
    if (!w || !key || (!str && len)) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "bad string for key '%s'", key ? key : "");
    buf b = {0};
    buf_put_le(&b, SPROUT_GGUF_STRING, 4);
    buf_put_str(&b, str, len);
    return put_kv(w, key, b);
}

sprout_status sp_gguf_writer_set_array(sp_gguf_writer *w, const char *key, sprout_gguf_type elem_type, const void *data,
                                       uint64_t count) {
    if (!w || !key || !is_fixed(elem_type) || (!data && count))
        return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "bad array for key '%s'", key ? key : "");
    buf b = {0};
    buf_put_le(&b, SPROUT_GGUF_ARRAY, 4);
    buf_put_le(&b, elem_type, 4);
    buf_put_le(&b, count, 8);
    const uint64_t size = sp_gguf_type_size(elem_type);
    /* C bool need not be one byte: encode element by element */
    for (uint64_t i = 0; i < count; i++) encode_native_scalar(&b, elem_type, (const uint8_t *)data + i * (elem_type == SPROUT_GGUF_BOOL ? sizeof(bool) : size));
    return put_kv(w, key, b);
}

sprout_status sp_gguf_writer_set_str_array(sp_gguf_writer *w, const char *key, const char *const *strs, const size_t *lens,
                                           uint64_t count) {
    if (!w || !key || (!strs && count)) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "bad string array for key '%s'", key ? key : "");
    buf b = {0};
    buf_put_le(&b, SPROUT_GGUF_ARRAY, 4);
    buf_put_le(&b, SPROUT_GGUF_STRING, 4);
    buf_put_le(&b, count, 8);
    for (uint64_t i = 0; i < count; i++) buf_put_str(&b, strs[i], lens ? lens[i] : strlen(strs[i]));
    return put_kv(w, key, b);
}

/* Encodes a parsed value (without its type tag when `tagged` is false:
 * elements of arrays carry no tag of their own). */
static void encode_value(buf *b, const sprout_gguf_value *v, bool tagged) {
    if (tagged) buf_put_le(b, v->type, 4);
    switch (v->type) {
    case SPROUT_GGUF_STRING: buf_put_str(b, v->as.str.ptr, v->as.str.len); break;
    case SPROUT_GGUF_ARRAY: {
        const sprout_gguf_type et = v->as.arr.elem_type;
        buf_put_le(b, et, 4);
        buf_put_le(b, v->as.arr.len, 8);
        if (et == SPROUT_GGUF_STRING)
            for (uint64_t i = 0; i < v->as.arr.len; i++) buf_put_str(b, v->as.arr.strs[i].ptr, v->as.arr.strs[i].len);
        else if (et == SPROUT_GGUF_ARRAY)
            for (uint64_t i = 0; i < v->as.arr.len; i++) encode_value(b, &v->as.arr.items[i], false);
        else
            buf_put(b, v->as.arr.raw, (size_t)(v->as.arr.len * sp_gguf_type_size(et))); /* already little-endian */
        break;
    }
    case SPROUT_GGUF_FLOAT32: {
        float f = (float)v->as.f64;
        encode_native_scalar(b, v->type, &f);
        break;
    }
    case SPROUT_GGUF_FLOAT64: encode_native_scalar(b, v->type, &v->as.f64); break;
    case SPROUT_GGUF_BOOL: buf_put_le(b, v->as.b ? 1 : 0, 1); break;
    default:
        /* integers: the low bytes of the two's complement are the encoding */
        buf_put_le(b, v->as.u64, (int)sp_gguf_type_size(v->type));
        break;
    }
}

sprout_status sp_gguf_writer_set_value(sp_gguf_writer *w, const char *key, const sprout_gguf_value *value) {
    if (!w || !key || !value) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "bad value for key '%s'", key ? key : "");
    buf b = {0};
    encode_value(&b, value, true);
    return put_kv(w, key, b);
}

sprout_status sp_gguf_writer_copy_metadata(sp_gguf_writer *w, const sprout_gguf *src) {
    for (int64_t i = 0; i < sprout_gguf_kv_count(src); i++) {
        const char *key = sprout_gguf_kv_key(src, i);
        if (strncmp(key, "split.", 6) == 0) continue;
        sprout_status st = strcmp(key, "general.alignment") == 0
                               ? sp_gguf_writer_set_alignment(w, sprout_gguf_alignment(src))
                               : sp_gguf_writer_set_value(w, key, sprout_gguf_kv_value(src, i));
        if (st != SPROUT_OK) return st;
    }
    return SPROUT_OK;
}

sprout_status sp_gguf_writer_remove(sp_gguf_writer *w, const char *key) {
    int64_t i = find_kv(w, key);
    if (i < 0) return SPROUT_OK;
    free(w->kvs[i].key);
    free(w->kvs[i].value.data);
    memmove(&w->kvs[i], &w->kvs[i + 1], (size_t)(w->n_kv - i - 1) * sizeof *w->kvs);
    w->n_kv--;
    return SPROUT_OK;
}

sprout_status sp_gguf_writer_set_alignment(sp_gguf_writer *w, uint32_t alignment) {
    if (!sp_is_pow2(alignment)) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "alignment %" PRIu32 " is not a power of two", alignment);
    w->alignment = alignment;
    return sp_gguf_writer_set_scalar(w, "general.alignment", SPROUT_GGUF_UINT32, &alignment);
}

sprout_status sp_gguf_writer_add_tensor(sp_gguf_writer *w, const char *name, sprout_type type, int n_dims,
                                        const int64_t *ne, const void *data) {
    if (!w || !name || !ne || n_dims < 1 || n_dims > SP_GGUF_MAX_DIMS)
        return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "bad tensor '%s'", name ? name : "");
    size_t name_len = strlen(name);
    if (name_len == 0 || name_len > SP_GGUF_MAX_NAME_LEN)
        return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "tensor name '%s' has %zu bytes (1 to %u allowed)", name, name_len,
                       SP_GGUF_MAX_NAME_LEN);
    for (int64_t i = 0; i < w->n_tensors; i++)
        if (strcmp(w->tensors[i].name, name) == 0) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "duplicate tensor '%s'", name);
    wtensor t = {.type = type, .n_dims = n_dims, .data = data};
    uint64_t rows = 1;
    for (int d = 0; d < SP_GGUF_MAX_DIMS; d++) {
        t.ne[d] = d < n_dims ? ne[d] : 1;
        if (t.ne[d] < 0 || (d > 0 && !sp_mul_u64(rows, (uint64_t)t.ne[d], &rows)))
            return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "tensor '%s': bad dimension %d", name, d);
    }
    uint64_t row_bytes;
    if (!sp_type_row_bytes(type, t.ne[0], &row_bytes) || !sp_mul_u64(row_bytes, rows, &t.bytes))
        return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "tensor '%s': row length %" PRId64 " does not fit type %s", name, t.ne[0],
                       sprout_type_name(type));
    if (w->n_tensors == w->cap_tensors) {
        int64_t cap = w->cap_tensors ? 2 * w->cap_tensors : 64;
        wtensor *ts = realloc(w->tensors, (size_t)cap * sizeof *ts);
        if (!ts) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
        w->tensors = ts;
        w->cap_tensors = cap;
    }
    if (!(t.name = strdup(name))) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
    w->tensors[w->n_tensors++] = t;
    return SPROUT_OK;
}

sprout_status sp_gguf_writer_add_tensor_like(sp_gguf_writer *w, const sprout_gguf *src, int64_t index, sprout_type type,
                                             const void *data) {
    int64_t ne[SP_GGUF_MAX_DIMS];
    const int n_dims = sprout_gguf_tensor_n_dims(src, index);
    for (int d = 0; d < n_dims && d < SP_GGUF_MAX_DIMS; d++) ne[d] = sprout_gguf_tensor_dim(src, index, d);
    return sp_gguf_writer_add_tensor(w, sprout_gguf_tensor_name(src, index), type, n_dims, ne, data);
}

/* --- output ----------------------------------------------------------------------- */

char *sp_gguf_split_path(const char *path, uint32_t i, uint32_t n) {
    size_t len = strlen(path);
    if (len >= 5 && strcmp(path + len - 5, ".gguf") == 0) len -= 5;
    size_t cap = len + 32;
    char *out = malloc(cap);
    if (out) snprintf(out, cap, "%.*s-%05" PRIu32 "-of-%05" PRIu32 ".gguf", (int)len, path, i + 1, n);
    return out;
}

static const uint8_t zeros[256];

typedef struct part_plan {
    int64_t first, count; /* tensor range */
} part_plan;

static bool write_all(FILE *f, const void *p, size_t n) { return n == 0 || fwrite(p, 1, n, f) == n; }

static bool write_padding(FILE *f, uint64_t pos, uint32_t alignment, uint64_t *new_pos) {
    uint64_t aligned;
    if (!sp_align_up_u64(pos, alignment, &aligned)) return false;
    for (uint64_t left = aligned - pos; left;) {
        size_t chunk = left > sizeof zeros ? sizeof zeros : (size_t)left;
        if (!write_all(f, zeros, chunk)) return false;
        left -= chunk;
    }
    *new_pos = aligned;
    return true;
}

/* Writes the header, metadata and tensor table of one part into b. */
static sprout_status encode_part_header(const sp_gguf_writer *w, const part_plan *plan, uint32_t part, uint32_t n_parts,
                                        buf *b) {
    buf split_keys = {0};
    int64_t n_kv = part == 0 ? w->n_kv : 0;
    if (part != 0 && w->alignment != SP_GGUF_DEFAULT_ALIGNMENT) n_kv++; /* every part must know its alignment */
    if (n_parts > 1) {
        uint16_t no = (uint16_t)part, count = (uint16_t)n_parts;
        int32_t total = (int32_t)w->n_tensors;
        buf_put_str(&split_keys, "split.no", 8);
        buf_put_le(&split_keys, SPROUT_GGUF_UINT16, 4);
        buf_put_le(&split_keys, no, 2);
        buf_put_str(&split_keys, "split.count", 11);
        buf_put_le(&split_keys, SPROUT_GGUF_UINT16, 4);
        buf_put_le(&split_keys, count, 2);
        buf_put_str(&split_keys, "split.tensors.count", 19);
        buf_put_le(&split_keys, SPROUT_GGUF_INT32, 4);
        buf_put_le(&split_keys, (uint32_t)total, 4);
        n_kv += 3;
    }
    buf_put(b, SP_GGUF_MAGIC, 4);
    buf_put_le(b, 3, 4);
    buf_put_le(b, (uint64_t)plan->count, 8);
    buf_put_le(b, (uint64_t)n_kv, 8);
    if (part == 0) {
        for (int64_t i = 0; i < w->n_kv; i++) {
            buf_put_str(b, w->kvs[i].key, strlen(w->kvs[i].key));
            buf_put(b, w->kvs[i].value.data, w->kvs[i].value.len);
        }
    } else if (w->alignment != SP_GGUF_DEFAULT_ALIGNMENT) {
        buf_put_str(b, "general.alignment", 17);
        buf_put_le(b, SPROUT_GGUF_UINT32, 4);
        buf_put_le(b, w->alignment, 4);
    }
    buf_put(b, split_keys.data, split_keys.len);
    free(split_keys.data);
    uint64_t offset = 0;
    for (int64_t i = plan->first; i < plan->first + plan->count; i++) {
        const wtensor *t = &w->tensors[i];
        buf_put_str(b, t->name, strlen(t->name));
        buf_put_le(b, (uint64_t)t->n_dims, 4);
        for (int d = 0; d < t->n_dims; d++) buf_put_le(b, (uint64_t)t->ne[d], 8);
        buf_put_le(b, (uint64_t)t->type, 4);
        buf_put_le(b, offset, 8);
        if (!sp_add_u64(offset, t->bytes, &offset) || !sp_align_up_u64(offset, w->alignment, &offset))
            return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "tensor data too large");
    }
    return b->oom ? sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory") : SPROUT_OK;
}

/* A failed write names the output and the temporary it was writing. */
static sprout_status write_failed(const char *final_name, const char *tmp_name, const char *what) {
    return sp_fail(SPROUT_ERR_IO, "%s: %s: %s (nothing replaced; the temporary %s is removed)", final_name, what, strerror(errno),
                   tmp_name);
}

static sprout_status write_part(const sp_gguf_writer *w, const part_plan *plan, uint32_t part, uint32_t n_parts,
                                const sp_gguf_write_options *opts, FILE *f, const char *final_name, const char *tmp_name,
                                void **scratch, uint64_t *scratch_cap) {
    buf header = {0};
    sprout_status st = encode_part_header(w, plan, part, n_parts, &header);
    uint64_t pos = header.len;
    if (st == SPROUT_OK && (!write_all(f, header.data, header.len) || !write_padding(f, pos, w->alignment, &pos)))
        st = write_failed(final_name, tmp_name, "write failed");
    free(header.data);
    for (int64_t i = plan->first; st == SPROUT_OK && i < plan->first + plan->count; i++) {
        const wtensor *t = &w->tensors[i];
        const void *data = t->data;
        if (!data && t->bytes) {
            if (!opts || !opts->fill) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "tensor '%s' has no data", t->name);
            if (*scratch_cap < t->bytes) {
                void *p = realloc(*scratch, (size_t)t->bytes);
                if (!p) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory for tensor '%s'", t->name);
                *scratch = p;
                *scratch_cap = t->bytes;
            }
            if ((st = opts->fill(opts->fill_user, i, *scratch, t->bytes)) != SPROUT_OK) return st;
            data = *scratch;
        }
        if (!write_all(f, data, (size_t)t->bytes) || !write_padding(f, pos + t->bytes, w->alignment, &pos))
            st = write_failed(final_name, tmp_name, "write failed");
    }
    /* the data must be on the disk before the rename makes it the output */
    if (st == SPROUT_OK && fflush(f) != 0) st = write_failed(final_name, tmp_name, "write failed");
    if (st == SPROUT_OK && fsync(fileno(f)) != 0) st = write_failed(final_name, tmp_name, "sync failed");
    return st;
}

/* An upper bound of a part's bytes before its first tensor's entry: the
 * fixed header, the metadata (part 0) or the alignment key, the split keys,
 * and the padding after the table. */
static uint64_t part_overhead(const sp_gguf_writer *w, uint32_t part) {
    uint64_t bytes = 4 + 4 + 8 + 8 + 82 + w->alignment;
    if (part == 0)
        for (int64_t i = 0; i < w->n_kv; i++) bytes += 8 + strlen(w->kvs[i].key) + w->kvs[i].value.len;
    else
        bytes += 33;
    return bytes;
}

/* Splits the tensors into parts: a new part starts when the next tensor
 * would push the current file past either limit (a part holds at least
 * one). The byte limit covers the whole file, header included. */
static uint32_t plan_parts(const sp_gguf_writer *w, const sp_gguf_write_options *opts, part_plan *plans) {
    uint32_t n = 0;
    uint64_t bytes = part_overhead(w, 0);
    plans[0] = (part_plan){0, 0};
    for (int64_t i = 0; i < w->n_tensors; i++) {
        const wtensor *t = &w->tensors[i];
        uint64_t tb = 8 + strlen(t->name) + 4 + 8 * (uint64_t)t->n_dims + 4 + 8;
        if (!sp_add_u64(tb, t->bytes, &tb) || !sp_align_up_u64(tb, w->alignment, &tb)) tb = UINT64_MAX;
        bool over_bytes = opts && opts->split_max_bytes && (bytes + tb < bytes || bytes + tb > opts->split_max_bytes);
        bool over_count = opts && opts->split_max_tensors && plans[n].count >= opts->split_max_tensors;
        if (plans[n].count > 0 && (over_bytes || over_count)) {
            plans[++n] = (part_plan){i, 0};
            bytes = part_overhead(w, n);
        }
        plans[n].count++;
        bytes = bytes + tb < bytes ? UINT64_MAX : bytes + tb;
    }
    return n + 1;
}

/* Makes the renames durable. Best effort: the files are whole and in place
 * whatever it says, and a caller could do nothing better with a failure. */
static void sync_folder(const char *path) {
    char dir[4096] = ".";
    const char *slash = strrchr(path, '/');
    if (slash && (size_t)(slash - path) >= sizeof dir) return;
    if (slash) snprintf(dir, sizeof dir, "%.*s", slash == path ? 1 : (int)(slash - path), path);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
}

sprout_status sp_gguf_writer_write(sp_gguf_writer *w, const char *path, const sp_gguf_write_options *opts,
                                   uint32_t *n_parts_out) {
    if (!w || !path) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "NULL writer or path");
    part_plan *plans = malloc((size_t)(w->n_tensors + 1) * sizeof *plans);
    if (!plans) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
    uint32_t n_parts = plan_parts(w, opts, plans);
    if (n_parts > 99999) {
        free(plans);
        return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "%" PRIu32 " parts: at most 99999 allowed", n_parts);
    }
    char **finals = calloc(n_parts, sizeof *finals), **temps = calloc(n_parts, sizeof *temps);
    void *scratch = NULL;
    uint64_t scratch_cap = 0;
    sprout_status st = finals && temps ? SPROUT_OK : sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
    for (uint32_t p = 0; st == SPROUT_OK && p < n_parts; p++) {
        finals[p] = n_parts > 1 ? sp_gguf_split_path(path, p, n_parts) : strdup(path);
        size_t tl = finals[p] ? strlen(finals[p]) + 16 : 0;
        temps[p] = tl ? malloc(tl) : NULL;
        if (!temps[p]) {
            st = sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
            break;
        }
        snprintf(temps[p], tl, "%s.tmp.XXXXXX", finals[p]);
        int fd = mkstemp(temps[p]);
        if (fd < 0) {
            st = sp_fail(SPROUT_ERR_IO, "%s: cannot create the temporary %s: %s", finals[p], temps[p], strerror(errno));
            temps[p][0] = 0;
            break;
        }
        fchmod(fd, 0644); /* mkstemp's 0600 suits a temporary, not a model file */
        FILE *f = fdopen(fd, "wb");
        if (!f) {
            close(fd);
            st = write_failed(finals[p], temps[p], "cannot open");
            break;
        }
        st = write_part(w, &plans[p], p, n_parts, opts, f, finals[p], temps[p], &scratch, &scratch_cap);
        if (fclose(f) != 0 && st == SPROUT_OK) st = write_failed(finals[p], temps[p], "close failed");
    }
    /* only a complete set of parts replaces anything under the final names;
     * a rename that fails midway takes back the parts already in place, so
     * that no set is left half new */
    uint32_t renamed = 0;
    for (; st == SPROUT_OK && renamed < n_parts; renamed++)
        if (rename(temps[renamed], finals[renamed]) != 0) {
            st = sp_fail(SPROUT_ERR_IO, "%s: cannot rename %s into place: %s", finals[renamed], temps[renamed], strerror(errno));
            break;
        }
    if (st != SPROUT_OK)
        for (uint32_t p = 0; p < renamed; p++) unlink(finals[p]);
    if (st == SPROUT_OK) sync_folder(path);
    for (uint32_t p = 0; temps && p < n_parts; p++) {
        if (st != SPROUT_OK && p >= renamed && temps[p] && temps[p][0]) unlink(temps[p]);
        free(temps[p]);
        if (finals) free(finals[p]);
    }
    free(temps);
    free(finals);
    free(scratch);
    free(plans);
    if (st == SPROUT_OK && n_parts_out) *n_parts_out = n_parts;
    return st;
}
