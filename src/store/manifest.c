/* Docker v2 image manifests as Ollama writes them: a config blob and a list
 * of layers, each a media type, a sha256 digest and a size. The JSON comes
 * from disk and may be anything: every field is checked before use. */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "store/parts.h"

#define MAX_MANIFEST_BYTES (1u << 20)
#define MAX_LAYERS 4096

static sprout_status parse_layer(json_t *j, const char *where, sp_layer *out) {
    if (!json_is_object(j)) return sp_fail(SPROUT_ERR_FORMAT, "manifest: %s is not an object", where);
    json_t *media = json_object_get(j, "mediaType"), *digest = json_object_get(j, "digest"),
           *size = json_object_get(j, "size");
    if (!json_is_string(media) || json_string_length(media) >= sizeof out->media_type ||
        json_string_length(media) == 0)
        return sp_fail(SPROUT_ERR_FORMAT, "manifest: %s has no usable mediaType", where);
    if (!json_is_string(digest) || !sp_digest_valid(json_string_value(digest)))
        return sp_fail(SPROUT_ERR_FORMAT, "manifest: %s's digest is not sha256:<64 hex digits>", where);
    if (!json_is_integer(size) || json_integer_value(size) < 0)
        return sp_fail(SPROUT_ERR_FORMAT, "manifest: %s's size is not a byte count", where);
    memset(out, 0, sizeof *out);
    memcpy(out->media_type, json_string_value(media), json_string_length(media));
    strcpy(out->digest, json_string_value(digest));
    out->size = (uint64_t)json_integer_value(size);
    return SPROUT_OK;
}

sprout_status sp_manifest_parse(const char *text, size_t len, sp_manifest *m) {
    memset(m, 0, sizeof *m);
    if (len > MAX_MANIFEST_BYTES) return sp_fail(SPROUT_ERR_FORMAT, "manifest: larger than 1 MiB");
    json_error_t err;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &err);
    if (!root) return sp_fail(SPROUT_ERR_FORMAT, "manifest: bad JSON at line %d: %s", err.line, err.text);
    sprout_status st = SPROUT_OK;
    json_t *version = json_object_get(root, "schemaVersion"), *config = json_object_get(root, "config"),
           *layers = json_object_get(root, "layers"), *media = json_object_get(root, "mediaType");
    if (!json_is_object(root) || !json_is_integer(version) || json_integer_value(version) != 2)
        st = sp_fail(SPROUT_ERR_FORMAT, "manifest: not schemaVersion 2");
    else if (media && (!json_is_string(media) || strcmp(json_string_value(media), SP_MEDIA_MANIFEST)))
        st = sp_fail(SPROUT_ERR_FORMAT, "manifest: mediaType is not %s", SP_MEDIA_MANIFEST);
    else if (!json_is_array(layers) || json_array_size(layers) > MAX_LAYERS)
        st = sp_fail(SPROUT_ERR_FORMAT, "manifest: layers is not an array of at most %d", MAX_LAYERS);
    if (st == SPROUT_OK) st = parse_layer(config, "config", &m->config);
    for (size_t i = 0; st == SPROUT_OK && i < json_array_size(layers); i++) {
        sp_layer layer;
        char where[32];
        snprintf(where, sizeof where, "layer %zu", i);
        st = parse_layer(json_array_get(layers, i), where, &layer);
        if (st == SPROUT_OK) st = sp_manifest_add(m, layer.media_type, layer.digest, layer.size);
    }
    json_decref(root);
    if (st != SPROUT_OK) sp_manifest_clear(m);
    return st;
}

static json_t *layer_json(const sp_layer *l) {
    return json_pack("{s:s, s:s, s:I}", "mediaType", l->media_type, "digest", l->digest, "size", (json_int_t)l->size);
}

char *sp_manifest_format(const sp_manifest *m) {
    json_t *layers = json_array();
    json_t *root = json_pack("{s:i, s:s, s:o, s:o}", "schemaVersion", 2, "mediaType", SP_MEDIA_MANIFEST, "config",
                             layer_json(&m->config), "layers", layers ? json_incref(layers) : NULL);
    bool ok = root && layers;
    for (size_t i = 0; ok && i < m->n_layers; i++) ok = json_array_append_new(layers, layer_json(&m->layers[i])) == 0;
    char *text = ok ? json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(layers);
    json_decref(root);
    return text;
}

sprout_status sp_manifest_add(sp_manifest *m, const char *media_type, const char *digest, uint64_t size) {
    if (strlen(media_type) >= sizeof m->layers[0].media_type || !sp_digest_valid(digest))
        return sp_fail(SPROUT_ERR_INTERNAL, "manifest: bad layer %s", media_type);
    sp_layer *l = realloc(m->layers, (m->n_layers + 1) * sizeof *l);
    if (!l) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "manifest: out of memory");
    m->layers = l;
    l = &m->layers[m->n_layers++];
    memset(l, 0, sizeof *l);
    strcpy(l->media_type, media_type);
    strcpy(l->digest, digest);
    l->size = size;
    return SPROUT_OK;
}

void sp_manifest_clear(sp_manifest *m) {
    free(m->layers);
    memset(m, 0, sizeof *m);
}

sprout_status sp_manifest_load(const char *path, sp_manifest *m, char digest[SP_DIGEST_SIZE], int64_t *mtime) {
    memset(m, 0, sizeof *m);
    char *text;
    size_t len;
    sprout_status st = sp_read_file(path, MAX_MANIFEST_BYTES, &text, &len);
    if (st != SPROUT_OK) return st;
    st = sp_manifest_parse(text, len, m);
    if (st != SPROUT_OK) sp_error_prefix("%s", path);
    if (st == SPROUT_OK && digest) sp_hash_bytes(text, len, digest);
    free(text);
    if (st == SPROUT_OK && mtime) {
        struct stat sb;
        *mtime = stat(path, &sb) == 0 ? (int64_t)sb.st_mtime : 0;
    }
    return st;
}
