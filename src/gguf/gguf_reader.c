/* Parses one GGUF file. The file is hostile until proven otherwise: every
 * count, length and offset is checked against the bytes that remain before
 * it is used, sizes are computed with overflow checks, and allocation is
 * bounded by the file size (a count is only believed if the file could hold
 * that many elements). A bad file yields SPROUT_ERR_FORMAT (or _UNSUPPORTED)
 * and a message naming the file, the problem and its offset.
 *
 * Layout (little-endian): "GGUF", u32 version, u64 tensor count, u64 kv
 * count; the kvs (string key, u32 type, value); the tensor infos (string
 * name, u32 n_dims, u64 ne[n_dims], u32 type, u64 offset); padding to the
 * alignment; the tensor data, each tensor at its aligned offset. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/checked.h"
#include "core/error.h"
#include "core/sigbus_guard.h"
#include "core/strmap.h"
#include "gguf/gguf_reader.h"
#include "quant/quant.h"

typedef struct reader {
    const uint8_t *base;
    uint64_t size;
    uint64_t pos;
    const char *name; /* for messages */
    sp_arena *arena;
    sp_strmap seen; /* names met so far (keys, then tensors): here so that a jump out of the parse can free it */
} reader;

/* Smallest encoding of one element of each type, used to bound counts. */
static uint64_t min_encoded_size(sprout_gguf_type type) {
    if (type == SPROUT_GGUF_STRING) return 8;              /* u64 length */
    if (type == SPROUT_GGUF_ARRAY) return 4 + 8;           /* type + count */
    return sp_gguf_type_size(type);
}

const char *sprout_gguf_type_name(sprout_gguf_type type) {
    switch (type) {
    case SPROUT_GGUF_UINT8: return "u8";
    case SPROUT_GGUF_INT8: return "i8";
    case SPROUT_GGUF_UINT16: return "u16";
    case SPROUT_GGUF_INT16: return "i16";
    case SPROUT_GGUF_UINT32: return "u32";
    case SPROUT_GGUF_INT32: return "i32";
    case SPROUT_GGUF_FLOAT32: return "f32";
    case SPROUT_GGUF_BOOL: return "bool";
    case SPROUT_GGUF_STRING: return "string";
    case SPROUT_GGUF_ARRAY: return "array";
    case SPROUT_GGUF_UINT64: return "u64";
    case SPROUT_GGUF_INT64: return "i64";
    case SPROUT_GGUF_FLOAT64: return "f64";
    }
    return "?";
}

uint64_t sp_gguf_type_size(sprout_gguf_type type) {
    switch (type) {
    case SPROUT_GGUF_UINT8:
    case SPROUT_GGUF_INT8:
    case SPROUT_GGUF_BOOL: return 1;
    case SPROUT_GGUF_UINT16:
    case SPROUT_GGUF_INT16: return 2;
    case SPROUT_GGUF_UINT32:
    case SPROUT_GGUF_INT32:
    case SPROUT_GGUF_FLOAT32: return 4;
    case SPROUT_GGUF_UINT64:
    case SPROUT_GGUF_INT64:
    case SPROUT_GGUF_FLOAT64: return 8;
    case SPROUT_GGUF_STRING:
    case SPROUT_GGUF_ARRAY: return 0;
    }
    return 0;
}

static bool type_is_valid(uint32_t t) { return t <= SPROUT_GGUF_FLOAT64; }

static uint64_t rd_le(const uint8_t *p, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

static uint64_t remaining(const reader *r) { return r->size - r->pos; }

static sprout_status fail_truncated(const reader *r, const char *what, const char *ctx, uint64_t need) {
    return sp_fail(SPROUT_ERR_FORMAT,
                   "%s: truncated: %s%s%s at offset %" PRIu64 " needs %" PRIu64 " bytes, only %" PRIu64
                   " remain (file size %" PRIu64 ")",
                   r->name, ctx, *ctx ? ": " : "", what, r->pos, need, remaining(r), r->size);
}

/* Outputs are set even on failure: sp_fail returns its argument, so the
 * compiler cannot tell that callers never read them then. */
static sprout_status take(reader *r, uint64_t n, const char *what, const char *ctx, const uint8_t **out) {
    *out = r->base;
    if (n > remaining(r)) return fail_truncated(r, what, ctx, n);
    *out = r->base + r->pos;
    r->pos += n;
    return SPROUT_OK;
}

static sprout_status read_u32(reader *r, const char *what, const char *ctx, uint32_t *out) {
    *out = 0;
    const uint8_t *p;
    sprout_status st = take(r, 4, what, ctx, &p);
    if (st == SPROUT_OK) *out = (uint32_t)rd_le(p, 4);
    return st;
}

static sprout_status read_u64(reader *r, const char *what, const char *ctx, uint64_t *out) {
    *out = 0;
    const uint8_t *p;
    sprout_status st = take(r, 8, what, ctx, &p);
    if (st == SPROUT_OK) *out = rd_le(p, 8);
    return st;
}

static sprout_status read_string(reader *r, const char *what, const char *ctx, sp_gguf_str *out) {
    out->ptr = NULL;
    out->len = 0;
    uint64_t len;
    uint64_t at = r->pos;
    sprout_status st = read_u64(r, what, ctx, &len);
    if (st != SPROUT_OK) return st;
    if (len > remaining(r))
        return sp_fail(SPROUT_ERR_FORMAT,
                       "%s: %s%s%s length %" PRIu64 " at offset %" PRIu64 " runs past end of file (%" PRIu64
                       " bytes remain)",
                       r->name, ctx, *ctx ? ": " : "", what, len, at, remaining(r));
    out->ptr = (const char *)r->base + r->pos;
    out->len = len;
    r->pos += len;
    return SPROUT_OK;
}

/* A name (key or tensor name) must be non-empty, bounded and NUL-free: it is
 * handed out as a C string. */
static sprout_status read_name(reader *r, const char *what, uint64_t max_len, int64_t index, char **out) {
    char ctx[64];
    snprintf(ctx, sizeof ctx, "%s #%" PRId64, what, index);
    uint64_t at = r->pos;
    sp_gguf_str s;
    sprout_status st = read_string(r, "name", ctx, &s);
    if (st != SPROUT_OK) return st;
    if (s.len == 0) return sp_fail(SPROUT_ERR_FORMAT, "%s: %s at offset %" PRIu64 " has an empty name", r->name, ctx, at);
    if (s.len > max_len)
        return sp_fail(SPROUT_ERR_FORMAT, "%s: %s at offset %" PRIu64 " has a name of %" PRIu64 " bytes (at most %" PRIu64 ")",
                       r->name, ctx, at, s.len, max_len);
    if (memchr(s.ptr, 0, s.len))
        return sp_fail(SPROUT_ERR_FORMAT, "%s: %s at offset %" PRIu64 " has a NUL byte in its name", r->name, ctx, at);
    *out = sp_arena_strndup(r->arena, s.ptr, s.len);
    if (!*out) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "%s: out of memory reading %s", r->name, ctx);
    return SPROUT_OK;
}

void sp_gguf_decode_scalar(sprout_gguf_type type, const uint8_t *p, sprout_gguf_value *v) {
    v->type = type;
    switch (type) {
    case SPROUT_GGUF_UINT8: v->as.u64 = p[0]; break;
    case SPROUT_GGUF_INT8: v->as.i64 = (int8_t)p[0]; break;
    case SPROUT_GGUF_UINT16: v->as.u64 = rd_le(p, 2); break;
    case SPROUT_GGUF_INT16: v->as.i64 = (int16_t)(uint16_t)rd_le(p, 2); break;
    case SPROUT_GGUF_UINT32: v->as.u64 = rd_le(p, 4); break;
    case SPROUT_GGUF_INT32: v->as.i64 = (int32_t)(uint32_t)rd_le(p, 4); break;
    case SPROUT_GGUF_UINT64: v->as.u64 = rd_le(p, 8); break;
    case SPROUT_GGUF_INT64: v->as.i64 = (int64_t)rd_le(p, 8); break;
    case SPROUT_GGUF_FLOAT32: {
        uint32_t bits = (uint32_t)rd_le(p, 4);
        float f;
        memcpy(&f, &bits, sizeof f);
        v->as.f64 = f;
        break;
    }
    case SPROUT_GGUF_FLOAT64: {
        uint64_t bits = rd_le(p, 8);
        memcpy(&v->as.f64, &bits, sizeof v->as.f64);
        break;
    }
    case SPROUT_GGUF_BOOL: v->as.b = p[0] != 0; break;
    case SPROUT_GGUF_STRING:
    case SPROUT_GGUF_ARRAY: break;
    }
}

static sprout_status read_value(reader *r, sprout_gguf_type type, const char *ctx, int depth, sprout_gguf_value *v);

/* The body of an array (element type, count, elements); `depth` counts the
 * enclosing arrays so that hostile nesting cannot exhaust the stack. */
static sprout_status read_array(reader *r, const char *ctx, int depth, sprout_gguf_value *v) {
    v->type = SPROUT_GGUF_ARRAY;
    uint32_t elem_type;
    uint64_t at = r->pos;
    sprout_status st = read_u32(r, "array element type", ctx, &elem_type);
    if (st != SPROUT_OK) return st;
    if (!type_is_valid(elem_type))
        return sp_fail(SPROUT_ERR_FORMAT, "%s: %s: unknown array element type %" PRIu32 " at offset %" PRIu64, r->name,
                       ctx, elem_type, at);
    if (elem_type == SPROUT_GGUF_ARRAY && depth + 1 >= SP_GGUF_MAX_ARRAY_DEPTH)
        return sp_fail(SPROUT_ERR_FORMAT, "%s: %s: arrays nested deeper than %d levels at offset %" PRIu64, r->name, ctx,
                       SP_GGUF_MAX_ARRAY_DEPTH, at);
    uint64_t n;
    at = r->pos;
    if ((st = read_u64(r, "array length", ctx, &n)) != SPROUT_OK) return st;
    const uint64_t elem_min = min_encoded_size((sprout_gguf_type)elem_type);
    if (n > remaining(r) / elem_min)
        return sp_fail(SPROUT_ERR_FORMAT,
                       "%s: %s: array of %" PRIu64 " %s elements at offset %" PRIu64
                       " cannot fit in the %" PRIu64 " bytes that remain",
                       r->name, ctx, n, sprout_gguf_type_name((sprout_gguf_type)elem_type), at, remaining(r));
    v->as.arr.elem_type = (sprout_gguf_type)elem_type;
    v->as.arr.len = n;
    if (elem_type == SPROUT_GGUF_STRING) {
        v->as.arr.strs = n ? sp_arena_alloc(r->arena, (size_t)n * sizeof(sp_gguf_str)) : NULL;
        if (n && !v->as.arr.strs) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "%s: %s: out of memory", r->name, ctx);
        for (uint64_t i = 0; i < n; i++)
            if ((st = read_string(r, "string element", ctx, &v->as.arr.strs[i])) != SPROUT_OK) return st;
    } else if (elem_type == SPROUT_GGUF_ARRAY) {
        v->as.arr.items = n ? sp_arena_alloc(r->arena, (size_t)n * sizeof(sprout_gguf_value)) : NULL;
        if (n && !v->as.arr.items) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "%s: %s: out of memory", r->name, ctx);
        for (uint64_t i = 0; i < n; i++)
            if ((st = read_array(r, ctx, depth + 1, &v->as.arr.items[i])) != SPROUT_OK) return st;
    } else {
        v->as.arr.raw = r->base + r->pos; /* fits: checked against remaining above */
        r->pos += n * elem_min;
    }
    return SPROUT_OK;
}

static sprout_status read_value(reader *r, sprout_gguf_type type, const char *ctx, int depth, sprout_gguf_value *v) {
    if (type == SPROUT_GGUF_ARRAY) return read_array(r, ctx, depth, v);
    if (type == SPROUT_GGUF_STRING) {
        v->type = type;
        return read_string(r, "string value", ctx, &v->as.str);
    }
    const uint8_t *p;
    sprout_status st = take(r, sp_gguf_type_size(type), "value", ctx, &p);
    if (st == SPROUT_OK) sp_gguf_decode_scalar(type, p, v);
    return st;
}

static sprout_status read_header(reader *r, sp_gguf_part *part, uint64_t *n_tensors, uint64_t *n_kv) {
    if (r->size < 4)
        return sp_fail(SPROUT_ERR_FORMAT, "%s: not a GGUF file: only %" PRIu64 " bytes", r->name, r->size);
    if (memcmp(r->base, SP_GGUF_MAGIC, 4) != 0)
        return sp_fail(SPROUT_ERR_FORMAT, "%s: not a GGUF file: bad magic %02x %02x %02x %02x at offset 0 (expected \"GGUF\")",
                       r->name, r->base[0], r->base[1], r->base[2], r->base[3]);
    r->pos = 4;
    uint32_t version;
    sprout_status st = read_u32(r, "version", "header", &version);
    if (st != SPROUT_OK) return st;
    if (version == 0x02000000u || version == 0x03000000u)
        return sp_fail(SPROUT_ERR_UNSUPPORTED, "%s: big-endian GGUF files are not supported", r->name);
    if (version < 2 || version > 3)
        return sp_fail(SPROUT_ERR_UNSUPPORTED, "%s: unsupported GGUF version %" PRIu32 " at offset 4 (sprout reads versions 2 and 3)",
                       r->name, version);
    part->version = version;
    if ((st = read_u64(r, "tensor count", "header", n_tensors)) != SPROUT_OK) return st;
    if ((st = read_u64(r, "metadata count", "header", n_kv)) != SPROUT_OK) return st;
    /* each kv needs a key length, a type and at least one byte of value;
     * each tensor info a name length, n_dims, type and offset */
    if (*n_kv > remaining(r) / (8 + 4 + 1))
        return sp_fail(SPROUT_ERR_FORMAT, "%s: metadata count %" PRIu64 " at offset 16 cannot fit in the %" PRIu64 " bytes that remain",
                       r->name, *n_kv, remaining(r));
    if (*n_tensors > remaining(r) / (8 + 4 + 4 + 8))
        return sp_fail(SPROUT_ERR_FORMAT, "%s: tensor count %" PRIu64 " at offset 8 cannot fit in the %" PRIu64 " bytes that remain",
                       r->name, *n_tensors, remaining(r));
    return SPROUT_OK;
}

static sprout_status read_kvs(reader *r, sp_gguf_part *part, uint64_t n_kv) {
    part->n_kv = (int64_t)n_kv;
    part->kvs = n_kv ? sp_arena_alloc(r->arena, (size_t)n_kv * sizeof(sp_gguf_kv)) : NULL;
    if (n_kv && !part->kvs) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "%s: out of memory for %" PRIu64 " keys", r->name, n_kv);
    if (!sp_strmap_init(&r->seen, (size_t)n_kv)) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "%s: out of memory", r->name);
    sprout_status st = SPROUT_OK;
    for (uint64_t i = 0; i < n_kv && st == SPROUT_OK; i++) {
        sp_gguf_kv *kv = &part->kvs[i];
        char *key;
        if ((st = read_name(r, "key", SP_GGUF_MAX_KEY_LEN, (int64_t)i, &key)) != SPROUT_OK) break;
        kv->key = key;
        char ctx[96];
        snprintf(ctx, sizeof ctx, "key '%.64s'", key);
        int64_t first;
        int ins = sp_strmap_insert(&r->seen, key, strlen(key), (int64_t)i, &first);
        if (ins < 0) {
            st = sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "%s: out of memory", r->name);
            break;
        }
        if (ins == 0) {
            st = sp_fail(SPROUT_ERR_FORMAT, "%s: duplicate key '%.64s' (entries %" PRId64 " and %" PRIu64 ")", r->name, key,
                         first, i);
            break;
        }
        uint32_t type;
        uint64_t at = r->pos;
        if ((st = read_u32(r, "value type", ctx, &type)) != SPROUT_OK) break;
        if (!type_is_valid(type)) {
            st = sp_fail(SPROUT_ERR_FORMAT, "%s: %s: unknown value type %" PRIu32 " at offset %" PRIu64, r->name, ctx, type, at);
            break;
        }
        st = read_value(r, (sprout_gguf_type)type, ctx, 0, &kv->value);
    }
    sp_strmap_free(&r->seen);
    return st;
}

static sprout_status read_alignment(reader *r, sp_gguf_part *part) {
    part->alignment = SP_GGUF_DEFAULT_ALIGNMENT;
    const sprout_gguf_value *v = sp_gguf_part_find(part, "general.alignment");
    if (!v) return SPROUT_OK;
    if (v->type != SPROUT_GGUF_UINT32)
        return sp_fail(SPROUT_ERR_FORMAT, "%s: key 'general.alignment' has type %s, expected u32", r->name,
                       sprout_gguf_type_name(v->type));
    if (!sp_is_pow2(v->as.u64))
        return sp_fail(SPROUT_ERR_FORMAT, "%s: key 'general.alignment' is %" PRIu64 ", not a power of two", r->name, v->as.u64);
    part->alignment = (uint32_t)v->as.u64;
    return SPROUT_OK;
}

static sprout_status read_tensor_info(reader *r, int64_t index, sp_gguf_tensor *t) {
    char *name;
    sprout_status st = read_name(r, "tensor", SP_GGUF_MAX_NAME_LEN, index, &name);
    if (st != SPROUT_OK) return st;
    t->name = name;
    char ctx[96];
    snprintf(ctx, sizeof ctx, "tensor '%s'", name);
    uint32_t n_dims;
    uint64_t at = r->pos;
    if ((st = read_u32(r, "dimension count", ctx, &n_dims)) != SPROUT_OK) return st;
    if (n_dims > SP_GGUF_MAX_DIMS)
        return sp_fail(SPROUT_ERR_FORMAT, "%s: %s has %" PRIu32 " dimensions at offset %" PRIu64 " (at most %d)", r->name, ctx,
                       n_dims, at, SP_GGUF_MAX_DIMS);
    t->n_dims = (int)n_dims;
    uint64_t n_elements = 1;
    for (int d = 0; d < SP_GGUF_MAX_DIMS; d++) {
        uint64_t ne = 1;
        at = r->pos;
        if ((uint32_t)d < n_dims && (st = read_u64(r, "dimension", ctx, &ne)) != SPROUT_OK) return st;
        if (ne > (uint64_t)INT64_MAX)
            return sp_fail(SPROUT_ERR_FORMAT, "%s: %s: dimension %d is %" PRIu64 " at offset %" PRIu64 ", too large", r->name, ctx,
                           d, ne, at);
        if (!sp_mul_u64(n_elements, ne, &n_elements) || n_elements > (uint64_t)INT64_MAX)
            return sp_fail(SPROUT_ERR_FORMAT, "%s: %s: the product of its dimensions overflows (dimension %d is %" PRIu64 ")",
                           r->name, ctx, d, ne);
        t->ne[d] = (int64_t)ne;
    }
    t->n_elements = (int64_t)n_elements;
    uint32_t type;
    at = r->pos;
    if ((st = read_u32(r, "type", ctx, &type)) != SPROUT_OK) return st;
    if (!sprout_type_is_known((int)type))
        return sp_fail(SPROUT_ERR_FORMAT, "%s: %s has unknown type id %" PRIu32 " at offset %" PRIu64, r->name, ctx, type, at);
    t->type = (sprout_type)type;
    return read_u64(r, "data offset", ctx, &t->offset);
}

/* Size and placement of one tensor's data, once the data section is known. */
static sprout_status place_tensor(const reader *r, const sp_gguf_part *part, sp_gguf_tensor *t) {
    const sp_type_traits *traits = sp_type_traits_of(t->type);
    if (t->ne[0] % traits->block_size != 0)
        return sp_fail(SPROUT_ERR_FORMAT, "%s: tensor '%s': row length %" PRId64 " is not a multiple of the %s block size %" PRId64,
                       r->name, t->name, t->ne[0], traits->name, traits->block_size);
    uint64_t row_bytes, bytes = 0;
    const uint64_t n_rows = t->ne[0] ? (uint64_t)(t->n_elements / t->ne[0]) : 0;
    if (!sp_type_row_bytes(t->type, t->ne[0], &row_bytes) || !sp_mul_u64(row_bytes, n_rows, &bytes)) return sp_fail(SPROUT_ERR_FORMAT, "%s: tensor '%s': byte size overflows", r->name, t->name);
    t->bytes = bytes;
    if (t->offset % part->alignment != 0)
        return sp_fail(SPROUT_ERR_FORMAT, "%s: tensor '%s': data offset %" PRIu64 " is not a multiple of the alignment %" PRIu32,
                       r->name, t->name, t->offset, part->alignment);
    uint64_t start, end;
    if (!sp_add_u64(part->data_offset, t->offset, &start) || !sp_add_u64(start, bytes, &end) || end > r->size)
        return sp_fail(SPROUT_ERR_FORMAT,
                       "%s: tensor '%s': data ends past end of file (offset %" PRIu64 ", size %" PRIu64 ", file %" PRIu64 ")",
                       r->name, t->name, sp_add_u64(part->data_offset, t->offset, &start) ? start : UINT64_MAX, bytes, r->size);
    t->file_offset = start;
    t->data = r->base + start;
    return SPROUT_OK;
}

typedef struct extent {
    uint64_t offset, bytes;
    int64_t index;
} extent;

static int by_offset(const void *a, const void *b) {
    const extent *x = a, *y = b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* Tensors whose data ranges overlap mean the dims or types disagree with the
 * bytes actually written: one tensor's size does not match its room. */
static sprout_status check_overlaps(const reader *r, const sp_gguf_part *part) {
    int64_t n = part->n_tensors;
    if (n < 2) return SPROUT_OK;
    extent *ext = malloc((size_t)n * sizeof *ext);
    if (!ext) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "%s: out of memory", r->name);
    for (int64_t i = 0; i < n; i++) ext[i] = (extent){part->tensors[i].offset, part->tensors[i].bytes, i};
    qsort(ext, (size_t)n, sizeof *ext, by_offset);
    sprout_status st = SPROUT_OK;
    const extent *prev = NULL;
    for (int64_t k = 0; k < n && st == SPROUT_OK; k++) {
        if (ext[k].bytes == 0) continue;
        if (prev && prev->offset + prev->bytes > ext[k].offset) {
            const sp_gguf_tensor *a = &part->tensors[prev->index], *b = &part->tensors[ext[k].index];
            st = sp_fail(SPROUT_ERR_FORMAT,
                         "%s: tensor '%s' (%s, %" PRIu64 " bytes at data offset %" PRIu64
                         ") overlaps tensor '%s' at data offset %" PRIu64 ": its size does not match its type and dims",
                         r->name, a->name, sprout_type_name(a->type), a->bytes, a->offset, b->name, b->offset);
        }
        prev = &ext[k];
    }
    free(ext);
    return st;
}

static sprout_status read_tensors(reader *r, sp_gguf_part *part, uint64_t n_tensors) {
    part->n_tensors = (int64_t)n_tensors;
    part->tensors = n_tensors ? sp_arena_alloc(r->arena, (size_t)n_tensors * sizeof(sp_gguf_tensor)) : NULL;
    if (n_tensors && !part->tensors) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "%s: out of memory", r->name);
    if (!sp_strmap_init(&r->seen, (size_t)n_tensors)) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "%s: out of memory", r->name);
    sprout_status st = SPROUT_OK;
    for (uint64_t i = 0; i < n_tensors && st == SPROUT_OK; i++) {
        sp_gguf_tensor *t = &part->tensors[i];
        if ((st = read_tensor_info(r, (int64_t)i, t)) != SPROUT_OK) break;
        int64_t first;
        int ins = sp_strmap_insert(&r->seen, t->name, strlen(t->name), (int64_t)i, &first);
        if (ins < 0) st = sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "%s: out of memory", r->name);
        else if (ins == 0)
            st = sp_fail(SPROUT_ERR_FORMAT, "%s: duplicate tensor name '%s' (tensors %" PRId64 " and %" PRIu64 ")", r->name,
                         t->name, first, i);
    }
    sp_strmap_free(&r->seen);
    if (st != SPROUT_OK) return st;

    if (!sp_align_up_u64(r->pos, part->alignment, &part->data_offset))
        return sp_fail(SPROUT_ERR_FORMAT, "%s: data section offset overflows", r->name);
    for (int64_t i = 0; i < part->n_tensors; i++)
        if ((st = place_tensor(r, part, &part->tensors[i])) != SPROUT_OK) return st;
    return check_overlaps(r, part);
}

static sprout_status parse(reader *r, sp_gguf_part *part) {
    uint64_t n_tensors = 0, n_kv = 0;
    sprout_status st = read_header(r, part, &n_tensors, &n_kv);
    if (st == SPROUT_OK) st = read_kvs(r, part, n_kv);
    if (st == SPROUT_OK) st = read_alignment(r, part);
    if (st == SPROUT_OK) st = read_tensors(r, part, n_tensors);
    return st;
}

sprout_status sp_gguf_part_parse(const uint8_t *data, uint64_t size, const char *name, sp_gguf_part *part) {
    reader r = {.base = data, .size = size, .pos = 0, .name = name, .arena = &part->arena};
    sprout_status st = parse(&r, part);
    sp_strmap_free(&r.seen);
    return st;
}

typedef struct guarded_parse {
    reader r;
    sp_gguf_part *part;
    sprout_status status;
} guarded_parse;

static void parse_mapped(void *ctx) {
    guarded_parse *g = ctx;
    g->status = parse(&g->r, g->part);
}

sprout_status sp_gguf_part_load(const char *path, sp_gguf_part *part) {
    part->path = strdup(path);
    if (!part->path) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "out of memory");
    sprout_status st = sp_mapped_file_open(path, &part->map);
    if (st != SPROUT_OK) return st;
    /* the header is read from the mapping: a file cut short since it was
     * mapped must fail here, not kill the process */
    guarded_parse guarded = {.r = {.base = part->map.data, .size = part->map.size, .name = part->path, .arena = &part->arena},
                             .part = part};
    bool completed = sp_sigbus_guarded(parse_mapped, &guarded);
    sp_strmap_free(&guarded.r.seen); /* what the parse had not freed when the fault stopped it */
    if (!completed) return sp_fail(SPROUT_ERR_IO, "%s: truncated while being read", path);
    /* a header that reads as garbage may be one cut short meanwhile (the
     * rest of its last page reads as zeros): the truer error first */
    char why[1024];
    snprintf(why, sizeof why, "%s", sprout_last_error());
    st = sp_mapped_file_check_size(&part->map, path);
    if (st != SPROUT_OK || guarded.status == SPROUT_OK) return st;
    return sp_fail(guarded.status, "%s", why);
}

void sp_gguf_part_free(sp_gguf_part *part) {
    if (!part) return;
    sp_mapped_file_close(&part->map);
    sp_arena_free(&part->arena);
    free(part->path);
    memset(part, 0, sizeof *part);
}

const sprout_gguf_value *sp_gguf_part_find(const sp_gguf_part *part, const char *key) {
    for (int64_t i = 0; i < part->n_kv; i++)
        if (part->kvs[i].key && strcmp(part->kvs[i].key, key) == 0) return &part->kvs[i].value;
    return NULL;
}
