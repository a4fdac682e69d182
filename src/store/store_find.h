/* Finding a name in the store (sprout's root first, then Ollama's) and the
 * writes that create and copy share. */
#ifndef SPROUT_STORE_FIND_H
#define SPROUT_STORE_FIND_H

#include "store/parts.h"

typedef struct sp_found {
    sp_manifest manifest;
    char digest[SP_DIGEST_SIZE]; /* of the manifest's bytes */
    int64_t modified;
    const char *root; /* the store's root or Ollama's, where the blobs are */
    bool ollama;
    char *short_name;
    char *path; /* the manifest's file */
} sp_found;

/* SPROUT_ERR_NOT_FOUND when neither store has the name. */
sprout_status sp_store_find(const sprout_store *s, const char *name, sp_found *out);
void sp_found_clear(sp_found *f);
/* Writes the manifest of `name` into sprout's root (atomically); the
 * caller holds the lock and has put every blob in place. */
sprout_status sp_store_write_manifest(sprout_store *s, const char *name, const sp_manifest *m);
/* Makes a layer of another root's blob one of this root's (a link, else a
 * reference, or a copy); nothing when it is this root's already. */
sprout_status sp_store_import_layer(sprout_store *s, const char *from_root, const sp_layer *layer, bool copy);

#endif
