/* sprout/store.h: models by name, in Ollama's layout.
 * Part of <sprout.h>, whose conventions hold here. */
#ifndef SPROUT_API_STORE_H
#define SPROUT_API_STORE_H

#include "generate.h"

SPROUT_BEGIN_DECLS

/* ---------------------------------------------------------------------------
 * Model store
 *
 * Models by name, in Ollama's layout so the same tools read it: manifests
 * at <root>/manifests/<host>/<namespace>/<name>/<tag> (Docker v2 manifest
 * JSON), blobs at <root>/blobs/sha256-<hex>, layers typed
 * application/vnd.ollama.image.{model,adapter,template,system,params,
 * messages,license}. Names as Ollama parses them:
 * [host/][namespace/]name[:tag], defaults registry.ollama.ai, library,
 * latest. An existing Ollama store is read too (read only, zero-copy from
 * its blobs); a name found in both is sprout's.
 *
 *   sprout_store *s;
 *   sprout_store_open(NULL, &s);
 *   sprout_store_model *m;
 *   if (sprout_store_resolve(s, "qwen2.5:0.5b", &m) == SPROUT_OK) {
 *       sprout_model_load(sprout_store_model_path(m), NULL, &model); ...
 *       sprout_store_model_free(m);
 *   }
 *   sprout_store_free(s);
 *
 * Writes are atomic (a temporary file renamed into place, the manifest
 * last) and serialized between processes by a lock file in the root.
 * ------------------------------------------------------------------------- */
typedef struct sprout_store sprout_store;

typedef struct sprout_store_params {
    size_t struct_size;      /* sizeof(sprout_store_params) */
    const char *root;        /* NULL: $SPROUT_MODELS, else ~/.local/share/sprout/models (created on first write) */
    const char *ollama_root; /* NULL: $OLLAMA_MODELS, else ~/.ollama/models (absent is fine); "": no Ollama store */
} sprout_store_params;

/* NULL params: defaults. Opening creates nothing. */
sprout_status sprout_store_open(const sprout_store_params *params, sprout_store **out);
void sprout_store_free(sprout_store *store);
/* The store's own root, and the Ollama store's (NULL when none). */
const char *sprout_store_root(const sprout_store *store);
const char *sprout_store_ollama_root(const sprout_store *store);

/* A name in full ("registry.ollama.ai/library/qwen2.5:0.5b") and as Ollama
 * shows it ("qwen2.5:0.5b": the default host and namespace left out).
 * SPROUT_ERR_INVALID_ARGUMENT for a name Ollama refuses (empty parts, bad
 * characters, "..", too long). Free with sprout_free. */
sprout_status sprout_store_name_full(const char *name, char **out);
sprout_status sprout_store_name_short(const char *name, char **out);

typedef struct sprout_store_entry {
    char *name;     /* the short form */
    char *digest;   /* "sha256:<hex>" of the manifest's bytes */
    uint64_t size;  /* bytes of its layers */
    int64_t modified; /* the manifest's time, seconds since the epoch */
    bool ollama;    /* from the Ollama store (read only) */
} sprout_store_entry;

/* Every model, sorted by name. */
sprout_status sprout_store_list(sprout_store *store, sprout_store_entry **entries, size_t *n);
void sprout_store_entries_free(sprout_store_entry *entries, size_t n);

/* What a name stands for: its files and its Modelfile's settings. */
typedef struct sprout_store_model sprout_store_model;

/* SPROUT_ERR_NOT_FOUND when no model has the name. A model referenced by
 * path (not linked or copied) has its size checked, and its hash when its
 * modification time differs from the recorded one: SPROUT_ERR_IO naming
 * the path when it has gone or changed. */
sprout_status sprout_store_resolve(sprout_store *store, const char *name, sprout_store_model **out);
void sprout_store_model_free(sprout_store_model *m);
const char *sprout_store_model_name(const sprout_store_model *m);   /* short form */
const char *sprout_store_model_digest(const sprout_store_model *m); /* the manifest's */
uint64_t sprout_store_model_size(const sprout_store_model *m);     /* bytes of its layers */
int64_t sprout_store_model_modified(const sprout_store_model *m);
bool sprout_store_model_ollama(const sprout_store_model *m);
/* The GGUF to load (a blob, or the recorded path of a referenced file). */
const char *sprout_store_model_path(const sprout_store_model *m);
/* LoRA adapters (GGUF paths), in the Modelfile's order. */
size_t sprout_store_model_n_adapters(const sprout_store_model *m);
const char *sprout_store_model_adapter(const sprout_store_model *m, size_t i);
/* TEMPLATE (Go text/template source; sprout_template_parse takes it) or
 * NULL: the GGUF's own template. SYSTEM or NULL. The LICENSE texts joined
 * by blank lines, or NULL. */
const char *sprout_store_model_template(const sprout_store_model *m);
const char *sprout_store_model_system(const sprout_store_model *m);
const char *sprout_store_model_license(const sprout_store_model *m);
/* MESSAGE lines as a JSON array of {"role","content"} ("[]" when none),
 * and the PARAMETERs as Ollama's params layer holds them, a JSON object
 * ({"temperature":0.7,"stop":["a","b"]}, "{}" when none). */
const char *sprout_store_model_messages_json(const sprout_store_model *m);
const char *sprout_store_model_parameters_json(const sprout_store_model *m);
/* A Modelfile that recreates the model (`ollama show --modelfile`). */
const char *sprout_store_model_modelfile(const sprout_store_model *m);

/* The Modelfile settings that belong to whoever loads the model; 0 where
 * the Modelfile says nothing. */
typedef struct sprout_runner_settings {
    size_t struct_size;
    int32_t num_ctx, num_thread, num_batch, num_keep;
} sprout_runner_settings;

/* Sets cfg from the model's PARAMETERs (Ollama's names, and max_new_token,
 * stop_id) and runner from the rest (NULL: ignored). cfg's stop lists point
 * into m: it must outlive their use. Request options set afterwards
 * override these defaults. */
sprout_status sprout_store_model_apply(const sprout_store_model *m, sprout_generation_config *cfg,
                                       sprout_runner_settings *runner);

typedef struct sprout_store_create_params {
    size_t struct_size;      /* sizeof(sprout_store_create_params) */
    const char *base_dir;    /* where relative FROM and ADAPTER paths start; NULL: the working directory */
    /* How a local GGUF enters the store: false (default) references it,
     * by a hard link where the file system allows, else by its recorded
     * path, size and hash; true copies it into a blob. */
    bool copy;
    const char *quantize;    /* a type name ("Q4_K_M"): the model is quantized into a new blob; NULL: as it is */
    /* Ollama's create status lines ("parsing modelfile", "using existing
     * layer sha256:...", "writing manifest", "success"); return false to
     * cancel (SPROUT_ERR_CANCELLED, the store unchanged). */
    bool (*progress)(const char *status, void *user);
    void *progress_user;
} sprout_store_create_params;

/* Creates or replaces `name` from Modelfile text. FROM is a GGUF path, a
 * blob digest ("sha256:<hex>", for /api/create's files), or a model name
 * (sprout's or Ollama's: its layers are reused, the Modelfile's own
 * instructions replace theirs). Errors name the Modelfile's line. */
sprout_status sprout_store_create(sprout_store *store, const char *name, const char *modelfile, size_t len,
                                  const sprout_store_create_params *params);
/* A new name for the same layers (no blob is copied). */
sprout_status sprout_store_copy(sprout_store *store, const char *src, const char *dst);
/* Removes the name; blobs no other manifest uses are deleted (a linked
 * file's link, never a referenced file). An Ollama model is read only:
 * SPROUT_ERR_UNSUPPORTED. */
sprout_status sprout_store_remove(sprout_store *store, const char *name);

/* Blobs by digest ("sha256:<hex>"), as /api/blobs moves them. */
bool sprout_store_blob_exists(sprout_store *store, const char *digest);
typedef struct sprout_blob_writer sprout_blob_writer;
sprout_status sprout_store_blob_begin(sprout_store *store, const char *digest, sprout_blob_writer **out);
sprout_status sprout_blob_writer_write(sprout_blob_writer *w, const void *data, size_t len);
/* Checks the digest and renames the blob into place; frees w either way.
 * SPROUT_ERR_FORMAT when the bytes do not match the digest. */
sprout_status sprout_blob_writer_finish(sprout_blob_writer *w);
/* Drops what was written; frees w. NULL-safe. */
void sprout_blob_writer_abort(sprout_blob_writer *w);

SPROUT_END_DECLS

#endif /* SPROUT_API_STORE_H */
