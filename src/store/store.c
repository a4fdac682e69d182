/* The store's handle and its operations on names: open, list, find, copy
 * and remove. Writers hold the root's lock; readers need none, because
 * every file they read was renamed into place whole. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "core/versioned.h"
#include "store/store_find.h"
#include "store/parts.h"

static char *default_dir(const char *env, const char *home_rel) {
    const char *v = getenv(env);
    if (v && *v) return strdup(v);
    const char *home = getenv("HOME");
    if (!home || !*home) return NULL;
    return sp_path_join(home, home_rel, (const char *)NULL);
}

sprout_status sprout_store_open(const sprout_store_params *params, sprout_store **out) {
    if (!out) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "store: no output pointer");
    *out = NULL;
    sprout_store_params p = {sizeof p, NULL, NULL};
    if (params) memcpy(&p, params, sp_versioned_bytes(params->struct_size, sizeof p));
    sprout_store *s = calloc(1, sizeof *s);
    if (!s) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "store: out of memory");
    s->root = p.root && *p.root ? strdup(p.root) : default_dir("SPROUT_MODELS", ".local/share/sprout/models");
    if (!s->root) {
        free(s);
        return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "store: no root given and neither $SPROUT_MODELS nor $HOME is set");
    }
    if (p.ollama_root && !*p.ollama_root) s->ollama_root = NULL;
    else s->ollama_root = p.ollama_root ? strdup(p.ollama_root) : default_dir("OLLAMA_MODELS", ".ollama/models");
    /* the same folder twice would list every model twice and let writes reach Ollama's store */
    if (s->ollama_root && !strcmp(s->ollama_root, s->root)) {
        free(s->ollama_root);
        s->ollama_root = NULL;
    }
    *out = s;
    return SPROUT_OK;
}

void sprout_store_free(sprout_store *store) {
    if (!store) return;
    free(store->root);
    free(store->ollama_root);
    free(store);
}

const char *sprout_store_root(const sprout_store *store) { return store ? store->root : NULL; }
const char *sprout_store_ollama_root(const sprout_store *store) { return store ? store->ollama_root : NULL; }

/* Ollama's names match whatever their case: the manifest whose path parts
 * equal n's ignoring case, n then spelled as it is on disk. NULL: none. */
static char *find_folded(const char *root, sp_name *n) {
    char *parts[4] = {n->host, n->ns, n->model, n->tag};
    size_t caps[4] = {sizeof n->host, sizeof n->ns, sizeof n->model, sizeof n->tag};
    char *dir = sp_path_join(root, "manifests", (const char *)NULL);
    for (int k = 0; dir && k < 4; k++) {
        DIR *d = opendir(dir);
        struct dirent *e = NULL;
        while (d && (e = readdir(d)) && strcasecmp(e->d_name, parts[k])) {}
        char *next = e && strlen(e->d_name) < caps[k] ? sp_path_join(dir, e->d_name, (const char *)NULL) : NULL;
        if (next) strcpy(parts[k], e->d_name);
        if (d) closedir(d);
        free(dir);
        dir = next;
    }
    return dir;
}

sprout_status sp_store_find(const sprout_store *s, const char *name, sp_found *out) {
    memset(out, 0, sizeof *out);
    sp_name n;
    sprout_status st = sp_name_parse(name, &n);
    if (st != SPROUT_OK) return st;
    const char *roots[2] = {s->root, s->ollama_root};
    for (int i = 0; i < 2; i++) {
        if (!roots[i]) continue;
        char *path = sp_name_manifest_path(roots[i], &n);
        if (!path) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "store: out of memory");
        struct stat sb;
        if (stat(path, &sb) != 0) {
            free(path);
            if (!(path = find_folded(roots[i], &n))) continue;
        }
        st = sp_manifest_load(path, &out->manifest, out->digest, &out->modified);
        if (st != SPROUT_OK) {
            free(path);
            return st;
        }
        out->path = path;
        out->root = roots[i];
        out->ollama = i == 1;
        out->short_name = sp_name_short(&n);
        if (!out->short_name) {
            sp_found_clear(out);
            return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "store: out of memory");
        }
        return SPROUT_OK;
    }
    char *shown = sp_name_short(&n);
    st = sp_fail(SPROUT_ERR_NOT_FOUND, "model '%s' not found", shown ? shown : name);
    free(shown);
    return st;
}

void sp_found_clear(sp_found *f) {
    sp_manifest_clear(&f->manifest);
    free(f->short_name);
    free(f->path);
    memset(f, 0, sizeof *f);
}

/* ---- list ---------------------------------------------------------------- */

typedef struct entry_list {
    sprout_store_entry *items;
    size_t n, cap;
} entry_list;

static bool listed(const entry_list *l, const char *name) {
    for (size_t i = 0; i < l->n; i++)
        if (!strcmp(l->items[i].name, name)) return true;
    return false;
}

static sprout_status add_entry(entry_list *l, const char *root, const char *parts[4], bool ollama) {
    char text[600];
    snprintf(text, sizeof text, "%s/%s/%s:%s", parts[0], parts[1], parts[2], parts[3]);
    sp_name n;
    if (sp_name_parse(text, &n) != SPROUT_OK) return SPROUT_OK; /* not a model's file: skipped */
    char *path = sp_name_manifest_path(root, &n), *name = sp_name_short(&n);
    sp_manifest m = {0};
    char digest[SP_DIGEST_SIZE];
    int64_t modified = 0;
    sprout_status st = path && name ? SPROUT_OK : sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "store: out of memory");
    /* a manifest that does not parse is left out of the list, not fatal to it */
    if (st == SPROUT_OK && (listed(l, name) || sp_manifest_load(path, &m, digest, &modified) != SPROUT_OK)) {
        free(path);
        free(name);
        return SPROUT_OK;
    }
    if (st == SPROUT_OK && l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        sprout_store_entry *items = realloc(l->items, cap * sizeof *items);
        if (!items) st = sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "store: out of memory");
        else {
            l->items = items;
            l->cap = cap;
        }
    }
    if (st == SPROUT_OK) {
        sprout_store_entry *e = &l->items[l->n];
        memset(e, 0, sizeof *e);
        e->name = name;
        e->digest = strdup(digest);
        for (size_t i = 0; i < m.n_layers; i++) e->size += m.layers[i].size;
        e->modified = modified;
        e->ollama = ollama;
        name = NULL;
        if (!e->digest) {
            free(e->name);
            st = sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "store: out of memory");
        } else {
            l->n++;
        }
    }
    sp_manifest_clear(&m);
    free(path);
    free(name);
    return st;
}

/* manifests/<host>/<namespace>/<model>/<tag>: four levels of folders. */
static sprout_status walk(entry_list *l, const char *root, const char *dir, const char *parts[4], int depth,
                          bool ollama) {
    DIR *d = opendir(dir);
    if (!d) return SPROUT_OK;
    sprout_status st = SPROUT_OK;
    for (struct dirent *e; st == SPROUT_OK && (e = readdir(d));) {
        if (e->d_name[0] == '.') continue; /* ., .., and temporary files */
        parts[depth] = e->d_name;
        char *path = sp_path_join(dir, e->d_name, (const char *)NULL);
        if (!path) st = sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "store: out of memory");
        else if (depth < 3) st = walk(l, root, path, parts, depth + 1, ollama);
        else st = add_entry(l, root, parts, ollama);
        free(path);
    }
    closedir(d);
    return st;
}

static int by_name(const void *a, const void *b) {
    return strcmp(((const sprout_store_entry *)a)->name, ((const sprout_store_entry *)b)->name);
}

sprout_status sprout_store_list(sprout_store *store, sprout_store_entry **entries, size_t *n) {
    if (!store || !entries || !n) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "store: no store or outputs");
    *entries = NULL;
    *n = 0;
    entry_list l = {0};
    const char *roots[2] = {store->root, store->ollama_root};
    sprout_status st = SPROUT_OK;
    for (int i = 0; st == SPROUT_OK && i < 2; i++) {
        if (!roots[i]) continue;
        char *dir = sp_path_join(roots[i], "manifests", (const char *)NULL);
        const char *parts[4];
        st = dir ? walk(&l, roots[i], dir, parts, 0, i == 1) : sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "store: out of memory");
        free(dir);
    }
    if (st != SPROUT_OK) {
        sprout_store_entries_free(l.items, l.n);
        return st;
    }
    if (l.n) qsort(l.items, l.n, sizeof *l.items, by_name);
    *entries = l.items;
    *n = l.n;
    return SPROUT_OK;
}

void sprout_store_entries_free(sprout_store_entry *entries, size_t n) {
    for (size_t i = 0; entries && i < n; i++) {
        free(entries[i].name);
        free(entries[i].digest);
    }
    free(entries);
}

/* ---- copy and remove ------------------------------------------------------ */

sprout_status sp_store_write_manifest(sprout_store *s, const char *name, const sp_manifest *m) {
    sp_name n;
    sprout_status st = sp_name_parse(name, &n);
    if (st != SPROUT_OK) return st;
    char *path = sp_name_manifest_path(s->root, &n);
    char *text = sp_manifest_format(m);
    char *dir = path ? strdup(path) : NULL;
    if (!path || !text || !dir) st = sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "store: out of memory");
    if (st == SPROUT_OK) {
        *strrchr(dir, '/') = '\0';
        st = sp_mkdirs(dir);
    }
    if (st == SPROUT_OK) sp_clean_temps(dir);
    if (st == SPROUT_OK) st = sp_write_atomic(path, text, strlen(text));
    free(dir);
    free(text);
    free(path);
    return st;
}

sprout_status sp_store_import_layer(sprout_store *s, const char *from_root, const sp_layer *layer, bool copy) {
    if (!strcmp(from_root, s->root)) return SPROUT_OK;
    char *src = sp_blob_path(from_root, layer->digest);
    if (!src) return sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "store: out of memory");
    bool existed;
    sprout_status st = sp_blob_add_file(s->root, src, layer->digest, copy ? SP_BLOB_COPY : SP_BLOB_LINK_OR_REFERENCE,
                                        &existed);
    free(src);
    return st;
}

sprout_status sprout_store_copy(sprout_store *store, const char *src, const char *dst) {
    if (!store || !src || !dst) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "store: no store or names");
    sp_name check;
    sprout_status st = sp_name_parse(dst, &check);
    if (st != SPROUT_OK) return st;
    int lock;
    if ((st = sp_store_lock(store, &lock)) != SPROUT_OK) return st;
    sp_found f;
    st = sp_store_find(store, src, &f);
    st = st == SPROUT_OK ? sp_store_import_layer(store, f.root, &f.manifest.config, false) : st;
    for (size_t i = 0; st == SPROUT_OK && i < f.manifest.n_layers; i++)
        st = sp_store_import_layer(store, f.root, &f.manifest.layers[i], false);
    if (st == SPROUT_OK) st = sp_store_write_manifest(store, dst, &f.manifest);
    sp_found_clear(&f);
    sp_store_unlock(lock);
    return st;
}

/* Whether a manifest under dir (other than skip) names digest: *used.
 * Out of memory is an error (the caller has changed nothing yet); a
 * manifest that cannot be read counts as naming it (when unsure, the blob
 * stays). */
static sprout_status digest_used(const char *dir, int depth, const char *skip, const char *digest, bool *used) {
    DIR *d = opendir(dir);
    if (!d) return SPROUT_OK;
    sprout_status st = SPROUT_OK;
    for (struct dirent *e; st == SPROUT_OK && !*used && (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        char *path = sp_path_join(dir, e->d_name, (const char *)NULL);
        if (!path) st = sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "store: out of memory");
        else if (depth < 3) st = digest_used(path, depth + 1, skip, digest, used);
        else if (strcmp(path, skip)) {
            sp_manifest m;
            const sprout_status loaded = sp_manifest_load(path, &m, NULL, NULL);
            if (loaded == SPROUT_ERR_OUT_OF_MEMORY) st = loaded;
            else if (loaded != SPROUT_OK) *used = true;
            else {
                *used = !strcmp(m.config.digest, digest);
                for (size_t i = 0; !*used && i < m.n_layers; i++) *used = !strcmp(m.layers[i].digest, digest);
                sp_manifest_clear(&m);
            }
        }
        free(path);
    }
    closedir(d);
    return st;
}

/* The manifest goes, then the blobs and refs only it used. Everything that
 * allocates (the scan of the other manifests, the paths) is done first,
 * under the lock: out of memory leaves the model whole, and once the
 * manifest is gone nothing can fail but an unlink. A kill between leaves
 * unused blobs, never a manifest without its blobs. */
sprout_status sprout_store_remove(sprout_store *store, const char *name) {
    if (!store || !name) return sp_fail(SPROUT_ERR_INVALID_ARGUMENT, "store: no store or name");
    sp_name n;
    sprout_status st = sp_name_parse(name, &n);
    if (st != SPROUT_OK) return st;
    int lock;
    if ((st = sp_store_lock(store, &lock)) != SPROUT_OK) return st;
    sp_found f;
    st = sp_store_find(store, name, &f);
    if (st == SPROUT_OK && f.ollama)
        st = sp_fail(SPROUT_ERR_UNSUPPORTED, "model '%s' is in Ollama's store (%s), which sprout only reads",
                     f.short_name, store->ollama_root);
    char *path = st == SPROUT_OK ? strdup(f.path) : NULL;
    char *manifests = path ? sp_path_join(store->root, "manifests", (const char *)NULL) : NULL;
    if (st == SPROUT_OK && !manifests) st = sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "store: out of memory");
    /* per layer (the config first): its blob's and ref's paths where no other manifest uses it */
    const size_t n_layers = st == SPROUT_OK ? f.manifest.n_layers + 1 : 0;
    char **doomed = n_layers ? calloc(2 * n_layers, sizeof *doomed) : NULL;
    if (st == SPROUT_OK && !doomed) st = sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "store: out of memory");
    for (size_t i = 0; st == SPROUT_OK && i < n_layers; i++) {
        const sp_layer *l = i == 0 ? &f.manifest.config : &f.manifest.layers[i - 1];
        bool used = false;
        st = digest_used(manifests, 0, path, l->digest, &used);
        if (st != SPROUT_OK || used) continue;
        doomed[2 * i] = sp_blob_path(store->root, l->digest);
        doomed[2 * i + 1] = sp_ref_path(store->root, l->digest);
        if (!doomed[2 * i] || !doomed[2 * i + 1]) st = sp_fail(SPROUT_ERR_OUT_OF_MEMORY, "store: out of memory");
    }
    if (st == SPROUT_OK && unlink(path) != 0) st = sp_fail(SPROUT_ERR_IO, "%s: cannot delete: %s", path, strerror(errno));
    if (st == SPROUT_OK) {
        sp_sync_dir(manifests);
        for (size_t i = 0; i < 2 * n_layers; i++)
            if (doomed[i]) unlink(doomed[i]); /* a blob's symbolic link goes, never the file it names */
        /* empty folders of the name go too, as Ollama's do */
        for (int k = 0; k < 3; k++) {
            char *slash = strrchr(path, '/');
            if (!slash) break;
            *slash = '\0';
            if (rmdir(path) != 0) break;
        }
    }
    for (size_t i = 0; doomed && i < 2 * n_layers; i++) free(doomed[i]);
    free(doomed);
    free(manifests);
    free(path);
    sp_found_clear(&f);
    sp_store_unlock(lock);
    return st;
}
