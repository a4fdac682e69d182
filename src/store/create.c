/* sprout_store_create: a Modelfile made into layers. The model (a GGUF
 * path, a blob digest, or another model's layers), its adapters and its
 * texts become blobs first; the manifest that names them is written last,
 * under the store's lock, so a kill at any point leaves the old manifest
 * or the new one and at worst blobs nobody names. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "core/error.h"
#include "core/versioned.h"
#include "store/params.h"
#include "store/store_find.h"
#include "store/parts.h"

/* A local file (FROM or ADAPTER) hashed before the lock is taken. */
typedef struct local_file {
    char *path;
    char digest[SP_DIGEST_SIZE];
    uint64_t size;
} local_file;

typedef enum from_kind { FROM_FILE, FROM_BLOB, FROM_NAME } from_kind;

/* What the Modelfile's files are is found, hashed and quantized before the
 * store's lock is taken: that is where the time goes, and other writers
 * need not wait for it. Only placing blobs and the manifest holds it. */
typedef struct create_job {
    sprout_store *store;
    sprout_store_create_params params;
    sp_modelfile *mf;
    from_kind from;
    local_file model;      /* the GGUF FROM names: a file, a blob of from_root, a model's layer */
    const char *from_root; /* FROM_BLOB, FROM_NAME: the root whose blob it is */
    sp_manifest base;      /* FROM_NAME: the model's layers */
    local_file *adapters;  /* mf's, in order */
    char *quantized;       /* a temporary file of the quantized model, until it is a blob */
    char quantized_digest[SP_DIGEST_SIZE];
    uint64_t quantized_size;
    sp_manifest out;       /* the new manifest's layers */
    char *model_path;      /* the model layer's file, once placed */
} create_job;

static sprout_status progress(create_job *job, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static sprout_status progress(create_job *job, const char *fmt, ...) {
    if (!job->params.progress) return SPROUT_OK;
    char line[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (!job->params.progress(line, job->params.progress_user))
        return sp_fail(SPROUT_ERR_CANCELLED, "create: cancelled");
    return SPROUT_OK;
}

/* A Modelfile path: ~/ from $HOME, relative ones from base_dir. */
static char *local_path(const create_job *job, const char *path) {
    const char *home = getenv("HOME");
    if (!strncmp(path, "~/", 2) && home) return sp_path_join(home, path + 2, (const char *)NULL);
    if (path[0] == '/' || !job->params.base_dir) return strdup(path);
    return sp_path_join(job->params.base_dir, path, (const char *)NULL);
}

static bool is_file(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* A FROM or ADAPTER file: found (relative to base_dir) and hashed. */
static sprout_status hash_local(create_job *job, const char *what, const char *name, int line, local_file *out) {
    if (!(out->path = local_path(job, name))) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "store: out of memory");
    if (!is_file(out->path))
        return sp_fail(SPROUT_ERR_NOT_FOUND, "Modelfile:%d: %s %.200s: no such file", line, what, name);
    sprout_status st = sp_hash_file(out->path, out->digest, &out->size);
    if (st != SPROUT_OK) sp_error_prefix("Modelfile:%d", line);
    return st;
}

static sprout_status add_text(create_job *job, const char *media, const char *text) {
    char digest[SP_DIGEST_SIZE];
    size_t len = strlen(text);
    sp_hash_bytes(text, len, digest);
    char *path = sp_blob_path(job->store->root, digest);
    if (!path) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "store: out of memory");
    const bool existed = access(path, F_OK) == 0;
    free(path);
    sprout_status st = sp_blob_put(job->store->root, digest, text, len);
    if (st == SPROUT_OK) st = progress(job, "%s layer %s", existed ? "using existing" : "creating new", digest);
    return st == SPROUT_OK ? sp_manifest_add(&job->out, media, digest, len) : st;
}

/* FROM, before the lock: a blob digest, a GGUF path, or a model's name, in that order. */
static sprout_status find_from(create_job *job) {
    const char *from = job->mf->from;
    int line = job->mf->from_line;
    sprout_status st;
    if (!strncmp(from, "sha256:", 7) || !strncmp(from, "sha256-", 7)) {
        snprintf(job->model.digest, sizeof job->model.digest, "sha256:%.64s", from + 7);
        if (!sp_digest_valid(job->model.digest) || strlen(from) != SP_DIGEST_LEN)
            return sp_fail(SPROUT_ERR_FORMAT, "Modelfile:%d: FROM %.80s is not sha256:<64 hex digits>", line, from);
        const char *roots[2] = {job->store->root, job->store->ollama_root};
        for (int i = 0; i < 2; i++) {
            char *blob = roots[i] ? sp_blob_path(roots[i], job->model.digest) : NULL;
            struct stat sb;
            if (blob && stat(blob, &sb) == 0) {
                job->from = FROM_BLOB;
                job->from_root = roots[i];
                job->model.size = (uint64_t)sb.st_size;
                free(blob);
                return sp_blob_open_path(roots[i], job->model.digest, job->model.size, &job->model.path);
            }
            free(blob);
        }
        return sp_fail(SPROUT_ERR_NOT_FOUND, "Modelfile:%d: FROM %s: no such blob in the store", line, job->model.digest);
    }
    char *path = local_path(job, from);
    bool file = path && is_file(path);
    free(path);
    if (file) {
        job->from = FROM_FILE;
        return hash_local(job, "FROM", from, line, &job->model);
    }
    sp_found f;
    st = sp_store_find(job->store, from, &f);
    if (st != SPROUT_OK)
        return sp_fail(st == SPROUT_ERR_NOT_FOUND || st == SPROUT_ERR_INVALID_ARGUMENT ? SPROUT_ERR_NOT_FOUND : st,
                       "Modelfile:%d: FROM %.200s: no such file, blob or model", line, from);
    job->from = FROM_NAME;
    job->base = f.manifest;
    job->from_root = f.root;
    memset(&f.manifest, 0, sizeof f.manifest);
    sp_found_clear(&f);
    for (size_t i = 0; i < job->base.n_layers; i++) {
        const sp_layer *l = &job->base.layers[i];
        if (strcmp(l->media_type, SP_MEDIA_MODEL)) continue;
        strcpy(job->model.digest, l->digest);
        job->model.size = l->size;
        return sp_blob_open_path(job->from_root, l->digest, l->size, &job->model.path);
    }
    return sp_fail(SPROUT_ERR_FORMAT, "Modelfile:%d: FROM %.200s: that model has no model layer", line, from);
}

static bool quantize_progress(void *user, const sprout_quantize_progress *p) {
    (void)p;
    create_job *job = user;
    return !job->params.progress || job->params.progress("quantizing", job->params.progress_user);
}

/* The model quantized into a temporary file of the store's blobs folder
 * (before the lock: a stray one is cleaned once this process has gone). */
static sprout_status quantize_model(create_job *job) {
    sprout_file_type type;
    if (!sprout_file_type_from_name(job->params.quantize, &type))
        return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "create: unknown quantization type '%.40s'", job->params.quantize);
    sprout_status st = progress(job, "quantizing model to %s", job->params.quantize);
    char *dir = sp_path_join(job->store->root, "blobs", (const char *)NULL);
    if (st == SPROUT_OK) st = dir ? sp_mkdirs(dir) : sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "store: out of memory");
    if (st == SPROUT_OK && !(job->quantized = sp_temp_path(dir))) st = sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "store: out of memory");
    free(dir);
    sprout_quantize_params qp;
    sprout_quantize_params_default(&qp);
    qp.file_type = type;
    qp.progress = quantize_progress;
    qp.user = job;
    if (st == SPROUT_OK) st = sprout_quantize_model(job->model.path, job->quantized, &qp, NULL);
    if (st == SPROUT_OK) st = sp_hash_file(job->quantized, job->quantized_digest, &job->quantized_size);
    return st;
}

/* The model layer, under the lock: the quantized file moved in, the local
 * file linked, referenced or copied, another root's blob brought over. */
static sprout_status place_model(create_job *job) {
    const char *digest = job->model.digest;
    uint64_t size = job->model.size;
    bool existed = true;
    sprout_status st;
    if (job->quantized) {
        digest = job->quantized_digest;
        size = job->quantized_size;
        st = sp_blob_add_file(job->store->root, job->quantized, digest, SP_BLOB_MOVE, &existed);
        if (st == SPROUT_OK) {
            free(job->quantized); /* moved, or deleted as a duplicate */
            job->quantized = NULL;
        }
    } else if (job->from == FROM_FILE) {
        st = sp_blob_add_file(job->store->root, job->model.path, digest,
                              job->params.copy ? SP_BLOB_COPY : SP_BLOB_LINK_OR_REFERENCE, &existed);
    } else {
        sp_layer l = {.size = size};
        strcpy(l.digest, digest);
        st = sp_store_import_layer(job->store, job->from_root, &l, job->params.copy);
    }
    if (st == SPROUT_OK) st = progress(job, "%s layer %s", existed ? "using existing" : "creating new", digest);
    if (st == SPROUT_OK) st = sp_manifest_add(&job->out, SP_MEDIA_MODEL, digest, size);
    if (st == SPROUT_OK) st = sp_blob_open_path(job->store->root, digest, size, &job->model_path);
    return st;
}

/* Whether the new Modelfile replaces the base's layers of this type. */
static bool replaced(const sp_modelfile *mf, const char *media) {
    if (!strcmp(media, SP_MEDIA_MODEL)) return true;
    if (!strcmp(media, SP_MEDIA_ADAPTER)) return mf->n_adapters > 0;
    if (!strcmp(media, SP_MEDIA_TEMPLATE)) return mf->template_text != NULL;
    if (!strcmp(media, SP_MEDIA_SYSTEM)) return mf->system != NULL;
    if (!strcmp(media, SP_MEDIA_PARAMS)) return mf->n_params > 0;
    if (!strcmp(media, SP_MEDIA_MESSAGES)) return mf->n_messages > 0;
    if (!strcmp(media, SP_MEDIA_LICENSE)) return mf->n_licenses > 0;
    return false;
}

static sprout_status add_layers(create_job *job, const char *params_json, const char *messages_json) {
    sprout_status st = SPROUT_OK;
    const sp_modelfile *mf = job->mf;
    for (size_t i = 0; st == SPROUT_OK && i < job->base.n_layers; i++) {
        const sp_layer *l = &job->base.layers[i];
        if (replaced(mf, l->media_type)) continue;
        st = sp_store_import_layer(job->store, job->from_root, l, job->params.copy);
        if (st == SPROUT_OK) st = progress(job, "using existing layer %s", l->digest);
        if (st == SPROUT_OK) st = sp_manifest_add(&job->out, l->media_type, l->digest, l->size);
    }
    for (size_t i = 0; st == SPROUT_OK && i < mf->n_adapters; i++) {
        const local_file *a = &job->adapters[i];
        bool existed;
        st = sp_blob_add_file(job->store->root, a->path, a->digest,
                              job->params.copy ? SP_BLOB_COPY : SP_BLOB_LINK_OR_REFERENCE, &existed);
        if (st == SPROUT_OK) st = progress(job, "%s layer %s", existed ? "using existing" : "creating new", a->digest);
        if (st == SPROUT_OK) st = sp_manifest_add(&job->out, SP_MEDIA_ADAPTER, a->digest, a->size);
    }
    if (st == SPROUT_OK && mf->template_text) st = add_text(job, SP_MEDIA_TEMPLATE, mf->template_text);
    if (st == SPROUT_OK && mf->system) st = add_text(job, SP_MEDIA_SYSTEM, mf->system);
    if (st == SPROUT_OK && mf->n_params) st = add_text(job, SP_MEDIA_PARAMS, params_json);
    if (st == SPROUT_OK && mf->n_messages) st = add_text(job, SP_MEDIA_MESSAGES, messages_json);
    for (size_t i = 0; st == SPROUT_OK && i < mf->n_licenses; i++) st = add_text(job, SP_MEDIA_LICENSE, mf->licenses[i]);
    return st;
}

/* Ollama's format.HumanNumber. */
static void human_number(uint64_t n, char *out, size_t cap) {
    double b = 1e9, m = 1e6, v = (double)n;
    if (v >= b) snprintf(out, cap, v / b == floor(v / b) ? "%.0fB" : "%.1fB", v / b);
    else if (v >= m) snprintf(out, cap, v / m == floor(v / m) ? "%.0fM" : "%.2fM", v / m);
    else if (v >= 1e3) snprintf(out, cap, "%.0fK", v / 1e3);
    else snprintf(out, cap, "%llu", (unsigned long long)n);
}

/* Ollama's image config: what `ollama list/show` read without opening the
 * GGUF (format, family, size class, file type) and the layers' digests. */
static sprout_status add_config(create_job *job) {
    sprout_gguf *g = NULL;
    sprout_status st = sprout_gguf_open(job->model_path, &g);
    if (st != SPROUT_OK) {
        sp_error_prefix("create: the model");
        return st;
    }
    const char *arch = "unknown";
    size_t arch_len = 7;
    sprout_gguf_get_str(g, "general.architecture", &arch, &arch_len);
    uint32_t ftype;
    const char *ftype_name = sprout_gguf_get_u32(g, "general.file_type", &ftype) == SPROUT_OK
                                 ? sprout_file_type_name(ftype)
                                 : NULL;
    uint64_t n_params = 0;
    for (int64_t i = 0; i < sprout_gguf_tensor_count(g); i++) n_params += (uint64_t)sprout_gguf_tensor_elements(g, i);
    char size_class[32];
    human_number(n_params, size_class, sizeof size_class);
    struct utsname u;
    const char *machine = uname(&u) == 0 ? u.machine : "unknown";
    const char *goarch = !strcmp(machine, "x86_64") ? "amd64" : !strcmp(machine, "aarch64") ? "arm64" : machine;
    json_t *family = json_stringn(arch, arch_len);
    json_t *diff_ids = json_array();
    for (size_t i = 0; diff_ids && i < job->out.n_layers; i++)
        json_array_append_new(diff_ids, json_string(job->out.layers[i].digest));
    json_t *cfg = json_pack("{s:s, s:O, s:[O], s:s, s:s, s:s, s:s, s:{s:s, s:O}}", "model_format", "gguf",
                            "model_family", family, "model_families", family, "model_type", size_class, "file_type",
                            ftype_name ? ftype_name : "unknown", "architecture", goarch, "os", "linux", "rootfs",
                            "type", "layers", "diff_ids", diff_ids);
    char *text = cfg ? json_dumps(cfg, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(cfg);
    json_decref(family);
    json_decref(diff_ids);
    sprout_gguf_close(g);
    if (!text) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "store: out of memory");
    size_t len = strlen(text);
    sp_hash_bytes(text, len, job->out.config.digest);
    strcpy(job->out.config.media_type, SP_MEDIA_CONFIG);
    job->out.config.size = len;
    st = sp_blob_put(job->store->root, job->out.config.digest, text, len);
    free(text);
    return st;
}

sprout_status sprout_store_create(sprout_store *store, const char *name, const char *modelfile, size_t len,
                                  const sprout_store_create_params *params) {
    if (!store || !name || (!modelfile && len))
        return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "create: no store, name or Modelfile");
    create_job job = {.store = store};
    job.params.struct_size = sizeof job.params;
    if (params) memcpy(&job.params, params, sp_versioned_bytes(params->struct_size, sizeof job.params));
    sp_name n;
    sprout_status st = sp_name_parse(name, &n);
    if (st != SPROUT_OK) return st;
    if ((st = progress(&job, "parsing modelfile")) != SPROUT_OK) return st;
    if ((st = sp_modelfile_parse(modelfile ? modelfile : "", len, &job.mf)) != SPROUT_OK) return st;
    char *params_json = NULL, *messages_json = NULL;
    st = sp_params_to_json(job.mf, &params_json);
    if (st == SPROUT_OK) st = sp_messages_to_json(job.mf, &messages_json);
    /* the slow part, unlocked: finding, hashing, quantizing */
    if (st == SPROUT_OK) st = find_from(&job);
    if (st == SPROUT_OK && job.mf->n_adapters && !(job.adapters = calloc(job.mf->n_adapters, sizeof *job.adapters)))
        st = sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "store: out of memory");
    for (size_t i = 0; st == SPROUT_OK && i < job.mf->n_adapters; i++)
        st = hash_local(&job, "ADAPTER", job.mf->adapters[i], job.mf->adapter_lines[i], &job.adapters[i]);
    if (st == SPROUT_OK && job.params.quantize && *job.params.quantize) st = quantize_model(&job);
    /* then blobs and the manifest, locked */
    int lock = -1;
    if (st == SPROUT_OK) st = sp_store_lock(store, &lock);
    for (int i = 0; st == SPROUT_OK && i < 2; i++) { /* what killed writers left */
        char *dir = sp_path_join(store->root, i ? "refs" : "blobs", (const char *)NULL);
        if (dir) sp_clean_temps(dir);
        else st = sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "store: out of memory");
        free(dir);
    }
    if (st == SPROUT_OK) st = place_model(&job);
    if (st == SPROUT_OK) st = add_layers(&job, params_json, messages_json);
    if (st == SPROUT_OK) st = add_config(&job);
    if (st == SPROUT_OK) st = progress(&job, "writing manifest");
    if (st == SPROUT_OK) st = sp_store_write_manifest(store, name, &job.out);
    if (st == SPROUT_OK) (void)progress(&job, "success"); /* written: too late to cancel */
    sp_store_unlock(lock);
    if (job.quantized) unlink(job.quantized);
    free(job.quantized);
    for (size_t i = 0; job.adapters && i < job.mf->n_adapters; i++) free(job.adapters[i].path);
    free(job.adapters);
    free(params_json);
    free(messages_json);
    free(job.model.path);
    free(job.model_path);
    sp_manifest_clear(&job.out);
    sp_manifest_clear(&job.base);
    sp_modelfile_free(job.mf);
    return st;
}
