/* What the store's files share: the handle, paths, atomic writes, the
 * writers' lock, names, manifests and blobs. */
#ifndef SPROUT_STORE_PARTS_H
#define SPROUT_STORE_PARTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sprout.h"

struct sprout_store {
    char *root;        /* sprout's own store */
    char *ollama_root; /* NULL: none */
};

/* Media types of Ollama's manifests. */
#define SP_MEDIA_MANIFEST "application/vnd.docker.distribution.manifest.v2+json"
#define SP_MEDIA_CONFIG "application/vnd.docker.container.image.v1+json"
#define SP_MEDIA_MODEL "application/vnd.ollama.image.model"
#define SP_MEDIA_ADAPTER "application/vnd.ollama.image.adapter"
#define SP_MEDIA_TEMPLATE "application/vnd.ollama.image.template"
#define SP_MEDIA_SYSTEM "application/vnd.ollama.image.system"
#define SP_MEDIA_PARAMS "application/vnd.ollama.image.params"
#define SP_MEDIA_MESSAGES "application/vnd.ollama.image.messages"
#define SP_MEDIA_LICENSE "application/vnd.ollama.image.license"

/* "sha256:" and 64 hex digits, and the NUL. */
#define SP_DIGEST_LEN 71
#define SP_DIGEST_SIZE 72

/* ---- files.c: paths and writes that survive a kill --------------------- */

/* "a/b/c" from its parts (NULL-terminated list); NULL when out of memory. */
char *sp_path_join(const char *first, ...);
/* Creates dir and its parents. */
sprout_status sp_mkdirs(const char *dir);
/* Writes a whole file so that a kill leaves the old one or the new one:
 * a temporary file beside it, fsync, rename, fsync of the folder. */
sprout_status sp_write_atomic(const char *path, const void *data, size_t len);
/* A fresh temporary name in dir (".tmp-sprout-<pid>-<n>"): freed by the caller. */
char *sp_temp_path(const char *dir);
/* Deletes temporary files in dir whose writing process has gone. */
void sp_clean_temps(const char *dir);
bool sp_is_temp_name(const char *base);
/* fsync of a folder, after a rename or link into it. */
void sp_sync_dir(const char *dir);
/* A whole file of at most max bytes, NUL-terminated. */
sprout_status sp_read_file(const char *path, size_t max, char **data, size_t *len);
/* The file's SHA-256 as "sha256:<hex>" and its size. */
sprout_status sp_hash_file(const char *path, char digest[SP_DIGEST_SIZE], uint64_t *size);
/* The SHA-256 of bytes, as "sha256:<hex>". */
void sp_hash_bytes(const void *data, size_t len, char digest[SP_DIGEST_SIZE]);
bool sp_digest_valid(const char *digest);
/* Takes the store's writers' lock (<root>/.lock, flock), creating the root. */
sprout_status sp_store_lock(const sprout_store *s, int *fd);
void sp_store_unlock(int fd);

/* ---- name.c: Ollama's model names -------------------------------------- */

typedef struct sp_name {
    char host[351], ns[81], model[81], tag[81];
} sp_name;

/* [scheme://][host/][namespace/]model[:tag], defaults filled in. */
sprout_status sp_name_parse(const char *text, sp_name *out);
/* Malloc'd "host/ns/model:tag", and the short form Ollama shows. */
char *sp_name_full(const sp_name *n);
char *sp_name_short(const sp_name *n);
/* <root>/manifests/<host>/<ns>/<model>/<tag>. */
char *sp_name_manifest_path(const char *root, const sp_name *n);

/* ---- manifest.c: Docker v2 manifests ----------------------------------- */

typedef struct sp_layer {
    char media_type[64];
    char digest[SP_DIGEST_SIZE];
    uint64_t size;
} sp_layer;

typedef struct sp_manifest {
    sp_layer config;
    sp_layer *layers;
    size_t n_layers;
} sp_manifest;

/* Checks the shape (schemaVersion 2, digests, sizes, media types) of
 * hostile JSON. On error *m is empty. */
sprout_status sp_manifest_parse(const char *json, size_t len, sp_manifest *m);
/* The JSON text, malloc'd; NULL when out of memory. */
char *sp_manifest_format(const sp_manifest *m);
sprout_status sp_manifest_add(sp_manifest *m, const char *media_type, const char *digest, uint64_t size);
void sp_manifest_clear(sp_manifest *m);
/* Reads and parses the manifest file at path; its bytes' digest and mtime. */
sprout_status sp_manifest_load(const char *path, sp_manifest *m, char digest[SP_DIGEST_SIZE], int64_t *mtime);

/* ---- blobs.c: content by digest ---------------------------------------- */

/* <root>/blobs/sha256-<hex>. */
char *sp_blob_path(const char *root, const char *digest);
/* <root>/refs/sha256-<hex>.json: a referenced file's path, size, mtime. */
char *sp_ref_path(const char *root, const char *digest);
/* Stores bytes as a blob (nothing done when it is there already). */
sprout_status sp_blob_put(const char *root, const char *digest, const void *data, size_t len);
typedef enum sp_blob_mode { SP_BLOB_LINK_OR_REFERENCE, SP_BLOB_COPY, SP_BLOB_MOVE } sp_blob_mode;
/* Puts a local file in the store under its digest: a hard link, else a
 * reference (a symbolic link in blobs, its path, size and mtime recorded in
 * refs), or a copy; SP_BLOB_MOVE renames a temporary file of the root.
 * *existed: the blob was there already. */
sprout_status sp_blob_add_file(const char *root, const char *path, const char *digest, sp_blob_mode mode,
                               bool *existed);
/* The file a model blob stands for, checked: a referenced file's recorded
 * path after its size (and, when its mtime moved, its hash) is checked;
 * else the blob, whose size must be `size`. Malloc'd into *path. */
sprout_status sp_blob_open_path(const char *root, const char *digest, uint64_t size, char **path);

#endif
