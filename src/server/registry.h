/* The server's models: the one `-m` names (loaded at start, never
 * unloaded) or every model of the store, each loaded on the first request
 * that names it and unloaded after its keep_alive, within --max-loaded and
 * --max-memory. Requests hold a reference while they run; an entry with
 * references is never unloaded. */
#ifndef SPROUT_SERVER_REGISTRY_H
#define SPROUT_SERVER_REGISTRY_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/server.h"
#include "sprout.h"

typedef enum sp_entry_state { SP_ENTRY_LOADING, SP_ENTRY_LOADED } sp_entry_state;

typedef struct sp_model_entry {
    char name[256];                  /* as the APIs show it: "name:tag", or the -m file's name (or --alias) */
    char digest[80];                 /* hex, no "sha256:" */
    int64_t modified;                /* seconds since the epoch */
    uint64_t file_bytes;
    char *path;                      /* the GGUF */
    sprout_store_model *store_model; /* its Modelfile's settings; NULL for a -m file */
    bool pinned;                     /* the -m model: loaded at start, never unloaded */
    /* set by the loader before the state is LOADED, then read only */
    sprout_model *model, *draft;
    sprout_scheduler *sched;
    pthread_rwlock_t sched_lock;     /* readers use sched; shutdown frees it */
    int32_t n_ctx;                   /* each slot's */
    const char *chat_template;       /* the Modelfile's TEMPLATE, else --chat-template, else NULL (the GGUF's) */
    sprout_lora **loras;             /* ids 0..n_lora-1 */
    char **lora_paths;
    size_t n_lora;
    float *lora_scales;              /* the defaults of requests without "lora" (POST /lora-adapters sets them) */
    pthread_mutex_t lora_lock;       /* guards lora_scales */
    uint64_t mem_bytes;              /* the mapped file plus the KV cache's estimate */
    /* below: under the registry's lock */
    sp_entry_state state;
    int refs;                        /* requests using it */
    int64_t last_used_ms;            /* monotonic */
    int64_t expires_ms;              /* monotonic; SP_KEEP_FOREVER: never */
    int64_t expires_wall_ms;         /* the same moment on the wall clock, for /api/ps */
    bool failed;                     /* the load failed: waiters read `error` */
    char error[512];
} sp_model_entry;

#endif
