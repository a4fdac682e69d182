/* The web chat page's files as the build embeds them (tools/embed_assets.c
 * writes the table into the build folder), and the content hash that names
 * a file's version in its ETag, which the generator and the server's
 * --webui-path mode compute alike. */
#ifndef SPROUT_WEBUI_ASSETS_H
#define SPROUT_WEBUI_ASSETS_H

#include <stddef.h>
#include <stdint.h>

typedef struct sp_webui_asset {
    const char *name;          /* as under /webui/ ("app.js"); index.html is the page at / */
    const unsigned char *data; /* the file as written */
    size_t len;
    const unsigned char *gz;   /* gzip -9 -n of it, NULL when the build had no gzip */
    size_t gz_len;
    const char *hash;          /* sp_webui_hash of data, 16 hex digits: the ETag's core */
} sp_webui_asset;

extern const sp_webui_asset sp_webui_assets[];
extern const size_t sp_webui_n_assets;

/* FNV-1a, 64 bits: an ETag only has to change when the bytes do. */
static inline uint64_t sp_webui_hash(const unsigned char *data, size_t len) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < len; i++) h = (h ^ data[i]) * 0x100000001b3ull;
    return h;
}

#endif
