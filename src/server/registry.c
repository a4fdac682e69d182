/* The models a server holds: the -m model (loaded before the server says
 * ready, kept until it stops) or the store's, each loaded by the first
 * request that names it (the requests that come meanwhile wait for that one
 * load) and unloaded when its keep_alive has passed, or earlier, least
 * recently used first, to make room for another within --max-loaded and
 * --max-memory. A request that finds no room waits for a model to become
 * idle, then gets 503 after --load-timeout. Loading and unloading happen
 * outside the registry's lock, so a slow load blocks only its waiters. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "json/json_util.h"
#include "server/server_internal.h"

enum { DEFAULT_MAX_LOADED = 3 };
#define DEFAULT_KEEP_ALIVE_MS (5 * 60 * 1000LL)
#define DEFAULT_LOAD_TIMEOUT_MS (5 * 60 * 1000LL)

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t wall_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* --- durations and sizes ------------------------------------------------------------------------------- */

bool sp_parse_duration(const char *text, int64_t *ms) {
    if (!text || !*text) return false;
    char *end;
    errno = 0;
    const double seconds = strtod(text, &end);
    if (end != text && !*end && !errno && isfinite(seconds)) { /* a bare number: seconds */
        *ms = seconds < 0 ? -1 : (int64_t)(seconds * 1000);
        return true;
    }
    /* Go's time.ParseDuration: a sign, then number-unit pairs */
    const char *p = text;
    const bool negative = *p == '-';
    if (*p == '-' || *p == '+') p++;
    double total = 0;
    if (!*p) return false;
    while (*p) {
        errno = 0;
        const double v = strtod(p, &end);
        if (end == p || errno || !isfinite(v) || v < 0) return false;
        p = end;
        static const struct { const char *unit; double ms; } units[] = {
            {"ms", 1}, {"us", 1e-3}, {"µs", 1e-3}, {"ns", 1e-6}, {"h", 3600e3}, {"m", 60e3}, {"s", 1e3},
        };
        size_t u = 0;
        while (u < sizeof units / sizeof units[0] && strncmp(p, units[u].unit, strlen(units[u].unit))) u++;
        if (u == sizeof units / sizeof units[0]) return false;
        total += v * units[u].ms;
        p += strlen(units[u].unit);
    }
    if (total > 9e15) total = 9e15;
    *ms = negative && total > 0 ? -1 : (int64_t)total;
    return true;
}

bool sp_parse_size(const char *text, uint64_t *bytes) {
    if (!text || !*text) return false;
    char *end;
    errno = 0;
    const double v = strtod(text, &end);
    if (end == text || errno || !isfinite(v) || v < 0) return false;
    double scale = 1;
    switch (*end) {
    case 'k': case 'K': scale = 1024.; break;
    case 'm': case 'M': scale = 1024. * 1024; break;
    case 'g': case 'G': scale = 1024. * 1024 * 1024; break;
    case 't': case 'T': scale = 1024. * 1024 * 1024 * 1024; break;
    case 0: break;
    default: return false;
    }
    if (*end) end++;
    if (*end == 'i') end++;
    if (*end == 'B' || *end == 'b') end++;
    if (*end || v * scale > 1.8e19) return false;
    *bytes = (uint64_t)(v * scale);
    return true;
}

bool sp_keep_alive_parse(const char *body, size_t len, int64_t *ms, char *error, size_t error_size) {
    *ms = SP_KEEP_DEFAULT;
    json_t *root = json_loadb(body, len, 0, NULL);
    const json_t *v = json_object_get(root, "keep_alive");
    bool ok = true;
    if (json_is_string(v)) ok = sp_parse_duration(json_string_value(v), ms);
    else if (json_is_number(v)) {
        const double seconds = json_number_value(v);
        *ms = seconds < 0 ? -1 : seconds > 9e12 ? SP_KEEP_FOREVER : (int64_t)(seconds * 1000);
    } else if (v && !json_is_null(v)) ok = false;
    if (!ok) snprintf(error, error_size, "keep_alive: expected a duration (\"5m\", \"30s\", \"1h\") or a number of seconds");
    json_decref(root);
    return ok;
}

/* --- names --------------------------------------------------------------------------------------------- */

/* A name as Ollama shows it, with its tag ("stories" -> "stories:latest");
 * false for a name Ollama refuses. */
static bool canonical_name(const char *name, char *out, size_t cap) {
    char *shortest = NULL;
    if (sprout_store_name_short(name, &shortest) != SPROUT_OK) return false;
    const char *slash = strrchr(shortest, '/');
    const bool tagged = strchr(slash ? slash : shortest, ':') != NULL;
    const int n = snprintf(out, cap, "%s%s", shortest, tagged ? "" : ":latest");
    sprout_free(shortest);
    return n > 0 && (size_t)n < cap;
}

bool sp_model_name_matches(const sp_model_entry *e, const char *name) {
    if (!name || !*name) return e->pinned; /* one model: no name means it */
    if (!e->store_model) {
        const size_t n = strlen(e->name);
        if (strncmp(name, e->name, n)) return false;
        return !name[n] || !strcmp(name + n, ":latest") || !strcmp(name + n, ".gguf");
    }
    char full[256];
    return !strcmp(name, e->name) || (canonical_name(name, full, sizeof full) && !strcmp(full, e->name));
}

/* The file's name as the APIs show it: whole UTF-8 characters only (JSON
 * must be UTF-8), anything else '_'. */
static void name_from_path(const sp_server *srv, char *out, size_t cap) {
    const bool aliased = srv->opt.alias && *srv->opt.alias;
    const char *slash = strrchr(srv->opt.model_path, '/');
    const char *base = aliased ? srv->opt.alias : slash ? slash + 1 : srv->opt.model_path;
    size_t n = strlen(base);
    if (!aliased && n > 5 && !strcmp(base + n - 5, ".gguf")) n -= 5;
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        size_t len = sprout_utf8_char_len(base + i, n - i);
        if (len == 0) len = 1;
        if (o + len >= cap) break;
        if (len == 1 && (unsigned char)base[i] >= 0x80) out[o++] = '_';
        else memcpy(out + o, base + i, len), o += len;
        i += len;
    }
    out[o] = 0;
}

/* A stable digest-like id for a file served by path (its name, size and time). */
static void file_digest(const char *path, uint64_t bytes, int64_t mtime, char *out, size_t cap) {
    uint64_t h = 1469598103934665603ull;
    for (const char *p = path; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ull;
    h ^= bytes * 31 + (uint64_t)mtime;
    snprintf(out, cap, "%016llx%016llx%016llx%016llx", (unsigned long long)h, (unsigned long long)(h * 3), (unsigned long long)(h * 5),
             (unsigned long long)(h * 7));
}

/* --- entries ------------------------------------------------------------------------------------------------ */

static sp_model_entry *entry_new(void) {
    sp_model_entry *e = calloc(1, sizeof *e);
    if (!e) return NULL;
    pthread_rwlock_init(&e->sched_lock, NULL);
    pthread_mutex_init(&e->lora_lock, NULL);
    e->expires_ms = SP_KEEP_FOREVER;
    return e;
}

/* What a load made, freed (the scheduler first: it uses the rest). */
static void entry_unload(sp_model_entry *e) {
    pthread_rwlock_wrlock(&e->sched_lock);
    sprout_scheduler_free(e->sched);
    e->sched = NULL;
    pthread_rwlock_unlock(&e->sched_lock);
    for (size_t i = 0; i < e->n_lora; i++) sprout_lora_free(e->loras[i]);
    free(e->loras);
    e->loras = NULL;
    e->n_lora = 0;
    sprout_model_free(e->draft);
    sprout_model_free(e->model);
    e->draft = e->model = NULL;
}

static void entry_free(sp_model_entry *e) {
    if (!e) return;
    entry_unload(e);
    if (e->lora_paths)
        for (size_t i = 0; e->lora_paths[i]; i++) free(e->lora_paths[i]);
    free(e->lora_paths);
    free(e->lora_scales);
    free(e->path);
    sprout_store_model_free(e->store_model);
    pthread_mutex_destroy(&e->lora_lock);
    pthread_rwlock_destroy(&e->sched_lock);
    free(e);
}

/* Bytes a key (or a value) element takes in the cache the options ask for. */
static double kv_element_bytes(const sp_server_options *o, bool key) {
    sprout_kv_type t = o->kv_type_set ? o->kv_type : SPROUT_KV_F16;
    if (key && o->cache_type_k_set) t = o->cache_type_k;
    if (!key && o->cache_type_v_set) t = o->cache_type_v;
    const int64_t block = sprout_type_block_size((int)t);
    return block > 0 ? (double)sprout_type_block_bytes((int)t) / (double)block : 2.0;
}

/* Bytes the model will take: its file (mapped) and its slots' KV cache
 * (keys and values of every layer, F16 unless --kv-type f32), from the
 * GGUF's hyperparameters. n_ctx and n_slots 0 are the scheduler's defaults:
 * the model's context up to 4096, and sprout_scheduler_default_slots. */
static uint64_t estimate_bytes(const sp_server *srv, const char *path, int32_t n_ctx, int32_t n_slots) {
    sprout_gguf *g = NULL;
    if (sprout_gguf_open(path, &g) != SPROUT_OK) return 0;
    uint64_t bytes = sprout_gguf_file_size(g);
    const char *arch = NULL;
    size_t arch_len = 0;
    if (sprout_gguf_get_str(g, "general.architecture", &arch, &arch_len) == SPROUT_OK && arch_len < 64) {
        char key[128];
        uint32_t layers = 0, embd = 0, heads = 1, kv_heads = 0, ctx_train = 0, key_length = 0;
#define HYPER(name, out) (snprintf(key, sizeof key, "%.*s." name, (int)arch_len, arch), sprout_gguf_get_u32(g, key, out))
        HYPER("block_count", &layers);
        HYPER("embedding_length", &embd);
        HYPER("attention.head_count", &heads);
        if (HYPER("attention.head_count_kv", &kv_heads) != SPROUT_OK || !kv_heads) kv_heads = heads;
        HYPER("context_length", &ctx_train);
        if (HYPER("attention.key_length", &key_length) != SPROUT_OK || !key_length) key_length = heads ? embd / heads : 0;
#undef HYPER
        if (n_ctx <= 0) n_ctx = ctx_train && ctx_train < 4096 ? (int32_t)ctx_train : 4096;
        const double cell = (double)layers * kv_heads * key_length * (kv_element_bytes(&srv->opt, true) + kv_element_bytes(&srv->opt, false));
        if (n_slots <= 0) n_slots = sprout_scheduler_default_slots(n_ctx, (size_t)cell);
        bytes += (uint64_t)(cell * n_ctx * n_slots);
    }
    sprout_gguf_close(g);
    return bytes;
}

/* The context a store model's slots will have: its Modelfile's num_ctx, else -c. */
static int32_t model_n_ctx(const sp_server *srv, const sprout_store_model *sm) {
    sprout_runner_settings runner = {.struct_size = sizeof runner};
    sprout_generation_config scratch;
    sprout_generation_config_init(&scratch);
    if (sm && sprout_store_model_apply(sm, &scratch, &runner) == SPROUT_OK && runner.num_ctx > 0) return runner.num_ctx;
    return srv->opt.n_ctx;
}

/* --- loading --------------------------------------------------------------------------------------------------- */

/* The entry's adapters against its model just loaded: the -m model's
 * --lora files at their scales, a store model's ADAPTERs at 1. */
static bool load_adapters(sp_server *srv, sp_model_entry *e) {
    size_t n = 0;
    while (e->lora_paths && e->lora_paths[n]) n++;
    e->loras = calloc(n ? n : 1, sizeof *e->loras);
    if (!e->loras) return snprintf(e->error, sizeof e->error, "out of memory"), false;
    for (size_t i = 0; i < n; i++) {
        const char *path = e->lora_paths[i];
        if (sprout_lora_load(e->model, path, &e->loras[i]) != SPROUT_OK) {
            const char *why = sprout_last_error(); /* the library's messages name the file; say it where one does not */
            if (strstr(why, path)) snprintf(e->error, sizeof e->error, "cannot load the LoRA adapter: %s", why);
            else snprintf(e->error, sizeof e->error, "cannot load the LoRA adapter %s: %s", path, why);
            return false;
        }
        e->n_lora = i + 1;
        sp_notice(srv, SPROUT_LOG_INFO, "%s: LoRA adapter %zu: %s at scale %g", e->name, i, path, (double)e->lora_scales[i]);
    }
    return true;
}

/* Loads the entry's model, draft, scheduler and adapters; false with
 * e->error set. The Modelfile's num_ctx, num_thread and num_batch set the
 * scheduler's, over the server's -c, -t and -b. */
static bool entry_load(sp_server *srv, sp_model_entry *e) {
    sprout_runner_settings runner = {.struct_size = sizeof runner};
    if (e->store_model) {
        sprout_generation_config scratch;
        sprout_generation_config_init(&scratch);
        if (sprout_store_model_apply(e->store_model, &scratch, &runner) != SPROUT_OK) {
            snprintf(e->error, sizeof e->error, "%s: %s", e->name, sprout_last_error());
            return false;
        }
    }
    const int32_t n_ctx = runner.num_ctx > 0 ? runner.num_ctx : srv->opt.n_ctx;
    const int32_t n_threads = runner.num_thread > 0 ? runner.num_thread : srv->opt.n_threads;
    const int32_t n_batch = runner.num_batch > 0 ? runner.num_batch : srv->opt.n_batch;
    const sp_server_options *o = &srv->opt;
    sprout_model_params mp = {.struct_size = sizeof mp, .n_threads = n_threads, .n_ctx = n_ctx, .kv_type = o->kv_type,
                              .kv_type_set = o->kv_type_set, .cache_type_k = o->cache_type_k, .cache_type_k_set = o->cache_type_k_set,
                              .cache_type_v = o->cache_type_v, .cache_type_v_set = o->cache_type_v_set};
    sprout_scheduler_params sp = {.struct_size = sizeof sp, .n_slots = o->n_slots, .n_ctx = n_ctx, .n_batch = n_batch,
                                  .n_queue = o->n_queue, .n_threads = n_threads, .kv_type = o->kv_type, .kv_type_set = o->kv_type_set,
                                  .cache_type_k = o->cache_type_k, .cache_type_k_set = o->cache_type_k_set,
                                  .cache_type_v = o->cache_type_v, .cache_type_v_set = o->cache_type_v_set};
    /* the draft beside the -m model: the scheduler keeps a cache of it per slot */
    const char *draft = e->pinned ? srv->opt.draft_path : NULL;
    if (sprout_model_load(e->path, &mp, &e->model) != SPROUT_OK || (draft && sprout_model_load(draft, &mp, &e->draft) != SPROUT_OK) ||
        (sp.draft_model = e->draft, sprout_scheduler_create(e->model, &sp, &e->sched)) != SPROUT_OK) {
        snprintf(e->error, sizeof e->error, "%s", sprout_last_error());
        entry_unload(e);
        return false;
    }
    if (!load_adapters(srv, e)) {
        entry_unload(e);
        return false;
    }
    e->n_ctx = sprout_scheduler_n_ctx(e->sched);
    const char *tmpl = e->store_model ? sprout_store_model_template(e->store_model) : NULL;
    e->chat_template = tmpl && *tmpl ? tmpl : srv->opt.chat_template;
    const uint64_t estimate = estimate_bytes(srv, e->path, e->n_ctx, sprout_scheduler_n_slots(e->sched));
    if (estimate) e->mem_bytes = estimate;
    return true;
}

/* The adapters' paths and default scales: the -m model's options, or the
 * store model's ADAPTERs (a NULL-ended list either way). */
static bool entry_adapters(sp_server *srv, sp_model_entry *e) {
    const size_t n = e->store_model ? sprout_store_model_n_adapters(e->store_model) : srv->opt.n_lora;
    e->lora_paths = calloc(n + 1, sizeof *e->lora_paths);
    e->lora_scales = calloc(n ? n : 1, sizeof *e->lora_scales);
    if (!e->lora_paths || !e->lora_scales) return false;
    for (size_t i = 0; i < n; i++) {
        const char *path = e->store_model ? sprout_store_model_adapter(e->store_model, i) : srv->opt.lora_paths[i];
        if (!(e->lora_paths[i] = strdup(path))) return false;
        const float scale = !e->store_model && srv->opt.lora_scales ? srv->opt.lora_scales[i] : 1.f;
        e->lora_scales[i] = srv->opt.lora_init_without_apply ? 0.f : scale;
    }
    return true;
}

/* An entry for a resolved store model (taken over), not yet loaded. */
static sp_model_entry *entry_for_store(sp_server *srv, sprout_store_model *sm) {
    sp_model_entry *e = entry_new();
    const char *path = sprout_store_model_path(sm);
    if (!e || !path || !(e->path = strdup(path))) {
        free(e);
        sprout_store_model_free(sm);
        return NULL;
    }
    e->store_model = sm;
    if (!canonical_name(sprout_store_model_name(sm), e->name, sizeof e->name))
        snprintf(e->name, sizeof e->name, "%s", sprout_store_model_name(sm));
    const char *digest = sprout_store_model_digest(sm);
    snprintf(e->digest, sizeof e->digest, "%s", strncmp(digest, "sha256:", 7) ? digest : digest + 7);
    e->modified = sprout_store_model_modified(sm);
    e->file_bytes = sprout_store_model_size(sm);
    if (!entry_adapters(srv, e)) {
        entry_free(e);
        return NULL;
    }
    return e;
}

/* The server's default grammar or schema, tried on the scheduler (which
 * checks them when a request is submitted) with a request of one token
 * that is cancelled at once; false after an ERROR notice with the
 * engine's message. */
static bool check_default_structure(sp_server *srv, sp_model_entry *e) {
    if (!(srv->opt.grammar && *srv->opt.grammar) && !(srv->opt.json_schema && *srv->opt.json_schema)) return true;
    sprout_generation_config cfg;
    sprout_generation_config_init(&cfg);
    cfg.grammar = srv->opt.grammar;
    cfg.json_schema = srv->opt.json_schema;
    cfg.max_new_tokens = 1;
    const sprout_token bos = sprout_tokenizer_special(sprout_model_tokenizer(e->model), SPROUT_SPECIAL_BOS);
    const sprout_token prompt = bos >= 0 ? bos : 0;
    sprout_request_params rp = {.struct_size = sizeof rp, .prompt = &prompt, .n_prompt = 1, .config = &cfg};
    sprout_request *req = NULL;
    const sprout_status st = sprout_scheduler_submit(e->sched, &rp, &req);
    if (st != SPROUT_OK) {
        sp_notice(srv, SPROUT_LOG_ERROR, "%s: %s", srv->opt.grammar ? "--grammar" : "--json-schema", sprout_last_error());
        return false;
    }
    sprout_request_cancel(req);
    sprout_request_free(req);
    return true;
}

static bool add_entry(sp_server *srv, sp_model_entry *e) {
    if (srv->n_entries == srv->cap_entries) {
        const size_t cap = srv->cap_entries ? 2 * srv->cap_entries : 8;
        sp_model_entry **more = realloc(srv->entries, cap * sizeof *more);
        if (!more) return false;
        srv->entries = more;
        srv->cap_entries = cap;
    }
    srv->entries[srv->n_entries++] = e;
    return true;
}

static void remove_entry(sp_server *srv, const sp_model_entry *e) {
    for (size_t i = 0; i < srv->n_entries; i++)
        if (srv->entries[i] == e) {
            srv->entries[i] = srv->entries[--srv->n_entries];
            return;
        }
}

/* The -m model: a file, or else a store name. */
static bool start_pinned(sp_server *srv) {
    sp_model_entry *e = entry_new();
    if (!e) return false;
    struct stat st;
    if (stat(srv->opt.model_path, &st) == 0 || !srv->store) {
        name_from_path(srv, e->name, sizeof e->name);
        e->modified = st.st_mtime;
        e->file_bytes = (uint64_t)st.st_size;
        e->path = strdup(srv->opt.model_path);
        file_digest(srv->opt.model_path, e->file_bytes, e->modified, e->digest, sizeof e->digest);
        if (!e->path || !entry_adapters(srv, e)) {
            entry_free(e);
            return false;
        }
    } else {
        sprout_store_model *sm = NULL;
        if (sprout_store_resolve(srv->store, srv->opt.model_path, &sm) != SPROUT_OK) {
            sp_notice(srv, SPROUT_LOG_ERROR, "%s", sprout_last_error());
            entry_free(e);
            return false;
        }
        entry_free(e);
        if (!(e = entry_for_store(srv, sm))) return false;
        if (srv->opt.alias && *srv->opt.alias) snprintf(e->name, sizeof e->name, "%s", srv->opt.alias);
        if (srv->opt.n_lora) sp_notice(srv, SPROUT_LOG_WARN, "--lora is ignored for a store model: its Modelfile's ADAPTERs are used");
    }
    e->pinned = true;
    e->expires_ms = SP_KEEP_FOREVER;
    e->expires_wall_ms = SP_KEEP_FOREVER;
    if (!entry_load(srv, e)) {
        sp_notice(srv, SPROUT_LOG_ERROR, "%s", e->error);
        entry_free(e);
        return false;
    }
    if (!check_default_structure(srv, e) || !add_entry(srv, e)) {
        entry_free(e);
        return false;
    }
    e->state = SP_ENTRY_LOADED;
    srv->pinned = e;
    atomic_fetch_add(&srv->model_loads, 1);
    sp_notice(srv, SPROUT_LOG_INFO, "ready: model \"%s\", %d slots of %d tokens, kernels %s%s%s", e->name,
              sprout_scheduler_n_slots(e->sched), e->n_ctx, sprout_kernels_name(),
              srv->opt.draft_path ? ", draft " : srv->opt.lookup ? ", prompt lookup" : "", srv->opt.draft_path ? srv->opt.draft_path : "");
    return true;
}

bool sp_models_start(sp_server *srv) {
    pthread_mutex_init(&srv->models_lock, NULL);
    pthread_cond_init(&srv->models_changed, NULL);
    pthread_mutex_init(&srv->store_lock, NULL);
    if (srv->opt.max_loaded <= 0) srv->opt.max_loaded = DEFAULT_MAX_LOADED;
    if (srv->opt.keep_alive_ms == SP_KEEP_DEFAULT) srv->opt.keep_alive_ms = DEFAULT_KEEP_ALIVE_MS;
    if (srv->opt.load_timeout_ms <= 0) srv->opt.load_timeout_ms = DEFAULT_LOAD_TIMEOUT_MS;
    /* a -m file needs no store; a name does */
    struct stat st;
    if (!srv->opt.model_path || stat(srv->opt.model_path, &st) != 0) {
        sprout_store_params sp = {.struct_size = sizeof sp, .root = srv->opt.store_root};
        if (sprout_store_open(&sp, &srv->store) != SPROUT_OK) {
            sp_notice(srv, SPROUT_LOG_ERROR, "cannot open the model store: %s", sprout_last_error());
            return false;
        }
    }
    if (srv->opt.model_path) return start_pinned(srv);
    sp_notice(srv, SPROUT_LOG_INFO, "ready: the models of %s%s%s, loaded on demand (at most %d at once), kernels %s",
              sprout_store_root(srv->store), sprout_store_ollama_root(srv->store) ? " and " : "",
              sprout_store_ollama_root(srv->store) ? sprout_store_ollama_root(srv->store) : "", srv->opt.max_loaded, sprout_kernels_name());
    return true;
}

void sp_models_stop(sp_server *srv) {
    pthread_mutex_lock(&srv->models_lock);
    for (size_t i = 0; i < srv->n_entries; i++) {
        sp_model_entry *e = srv->entries[i];
        if (e->state != SP_ENTRY_LOADED) continue;
        pthread_rwlock_wrlock(&e->sched_lock);
        sprout_scheduler_free(e->sched); /* what still runs ends "cancelled" and its response completes */
        e->sched = NULL;
        pthread_rwlock_unlock(&e->sched_lock);
    }
    pthread_mutex_unlock(&srv->models_lock);
}

void sp_models_free(sp_server *srv) {
    /* a load still running owns its entry until it ends: wait for it */
    pthread_mutex_lock(&srv->models_lock);
    for (;;) {
        bool loading = false;
        for (size_t i = 0; i < srv->n_entries; i++) loading |= srv->entries[i]->state == SP_ENTRY_LOADING;
        if (!loading) break;
        pthread_cond_wait(&srv->models_changed, &srv->models_lock);
    }
    pthread_mutex_unlock(&srv->models_lock);
    for (size_t i = 0; i < srv->n_entries; i++) entry_free(srv->entries[i]);
    free(srv->entries);
    sprout_store_free(srv->store);
    pthread_mutex_destroy(&srv->store_lock);
    pthread_cond_destroy(&srv->models_changed);
    pthread_mutex_destroy(&srv->models_lock);
}

/* --- on demand --------------------------------------------------------------------------------------------------- */

static sp_model_entry *find_entry(sp_server *srv, const char *name) {
    for (size_t i = 0; i < srv->n_entries; i++)
        if (sp_model_name_matches(srv->entries[i], name)) return srv->entries[i];
    return NULL;
}

/* Whether a model of `need` bytes fits beside those loaded (models_lock held).
 * One model alone always fits: the budget bounds how many share memory. */
static bool fits(const sp_server *srv, uint64_t need) {
    if (srv->n_entries == 0) return true;
    if (srv->n_entries >= (size_t)srv->opt.max_loaded) return false;
    if (!srv->opt.max_memory) return true;
    uint64_t used = 0;
    for (size_t i = 0; i < srv->n_entries; i++) used += srv->entries[i]->mem_bytes;
    return used + need <= srv->opt.max_memory;
}

/* The idle model used longest ago (models_lock held), or NULL. */
static sp_model_entry *least_recent_idle(sp_server *srv) {
    sp_model_entry *best = NULL;
    for (size_t i = 0; i < srv->n_entries; i++) {
        sp_model_entry *e = srv->entries[i];
        if (e->pinned || e->refs || e->state != SP_ENTRY_LOADED) continue;
        if (!best || e->last_used_ms < best->last_used_ms) best = e;
    }
    return best;
}

void sp_stats_add(sprout_scheduler_stats *to, const sprout_scheduler_stats *from) {
    to->requests_done += from->requests_done;
    to->requests_rejected += from->requests_rejected;
    to->prompt_tokens += from->prompt_tokens;
    to->cached_prompt_tokens += from->cached_prompt_tokens;
    to->generated_tokens += from->generated_tokens;
    to->steps += from->steps;
    to->busy_ms += from->busy_ms;
}

/* Takes an entry out (models_lock held, dropped and taken again): frees it
 * outside the lock, since freeing a scheduler joins its thread. */
static void unload_entry(sp_server *srv, sp_model_entry *e, const char *why) {
    remove_entry(srv, e);
    sprout_scheduler_stats st = {.struct_size = sizeof st};
    if (e->sched && sprout_scheduler_stats_get(e->sched, &st) == SPROUT_OK) sp_stats_add(&srv->retired, &st);
    pthread_mutex_unlock(&srv->models_lock);
    sp_notice(srv, SPROUT_LOG_INFO, "unloading \"%s\" (%s)", e->name, why);
    entry_free(e);
    atomic_fetch_add(&srv->model_unloads, 1);
    pthread_mutex_lock(&srv->models_lock);
    pthread_cond_broadcast(&srv->models_changed);
}

void sp_models_names(sp_server *srv, char *out, size_t cap) {
    size_t o = 0;
    out[0] = 0;
    if (srv->pinned) {
        snprintf(out, cap, "\"%s\"", srv->pinned->name);
        return;
    }
    sprout_store_entry *list = NULL;
    size_t n = 0;
    pthread_mutex_lock(&srv->store_lock);
    const sprout_status st = sprout_store_list(srv->store, &list, &n);
    pthread_mutex_unlock(&srv->store_lock);
    if (st != SPROUT_OK) return;
    for (size_t i = 0; i < n && o + 8 < cap; i++) {
        const int w = snprintf(out + o, cap - o, "%s\"%s\"", i ? ", " : "", list[i].name);
        if (w < 0 || (size_t)w >= cap - o) {
            snprintf(out + o, cap - o, ", ...");
            break;
        }
        o += (size_t)w;
    }
    if (!n) snprintf(out, cap, "none: `sprout create` or POST /api/create adds one");
    sprout_store_entries_free(list, n);
}

static enum MHD_Result reply_unknown(sp_server *srv, struct MHD_Connection *c, sp_api_style style, const char *name) {
    char names[2048];
    sp_models_names(srv, names, sizeof names);
    return sp_reply_error(srv, c, style, 404, "model", "model \"%s\" not found (this server has %s)", name ? name : "", names);
}

/* Waits (models_lock held) for the registry to change, until the deadline. */
static bool wait_change(sp_server *srv, int64_t deadline_ms, int fd) {
    const int64_t now = now_ms();
    if (now >= deadline_ms || sp_client_gone(fd) || atomic_load(&srv->stopping)) return false;
    sp_wait_a_while(&srv->models_changed, &srv->models_lock);
    return true;
}

sp_model_entry *sp_models_acquire(sp_server *srv, struct MHD_Connection *c, sp_api_style style, const char *name, enum MHD_Result *res) {
    if ((!name || !*name) && !srv->pinned) {
        *res = sp_reply_error(srv, c, style, 400, "model", "model: required (this server holds many models)");
        return NULL;
    }
    const int fd = sp_connection_fd(c);
    const int64_t deadline = now_ms() + srv->opt.load_timeout_ms;
    sprout_store_model *resolved = NULL;
    uint64_t need = 0;
    pthread_mutex_lock(&srv->models_lock);
    for (;;) {
        sp_model_entry *e = find_entry(srv, name);
        if (e && e->state == SP_ENTRY_LOADED) {
            e->refs++;
            e->last_used_ms = now_ms();
            pthread_mutex_unlock(&srv->models_lock);
            sprout_store_model_free(resolved);
            return e;
        }
        if (e || (resolved && !fits(srv, need))) { /* loading, or no room yet: make room, or wait */
            sp_model_entry *victim = e ? NULL : least_recent_idle(srv);
            if (victim) {
                unload_entry(srv, victim, "making room");
                continue;
            }
            if (wait_change(srv, deadline, fd)) continue;
            pthread_mutex_unlock(&srv->models_lock);
            sprout_store_model_free(resolved);
            *res = sp_reply_error(srv, c, style, 503, NULL, "no room to load \"%s\" within %g s (--max-loaded %d%s): every loaded model is busy",
                                  name, (double)srv->opt.load_timeout_ms / 1000, srv->opt.max_loaded,
                                  srv->opt.max_memory ? ", --max-memory" : "");
            return NULL;
        }
        if (!resolved) { /* not loaded: find it in the store, outside the lock */
            pthread_mutex_unlock(&srv->models_lock);
            sprout_status st = SPROUT_ERR_NOT_FOUND;
            if (srv->store) {
                pthread_mutex_lock(&srv->store_lock);
                st = sprout_store_resolve(srv->store, name, &resolved);
                pthread_mutex_unlock(&srv->store_lock);
            }
            if (st == SPROUT_ERR_NOT_FOUND || st == SPROUT_ERR_INVALID_ARGUMENT || (st == SPROUT_OK && srv->pinned)) {
                sprout_store_model_free(resolved);
                *res = reply_unknown(srv, c, style, name);
                return NULL;
            }
            if (st != SPROUT_OK) {
                *res = sp_reply_error(srv, c, style, 500, NULL, "%s", sprout_last_error());
                return NULL;
            }
            need = estimate_bytes(srv, sprout_store_model_path(resolved), model_n_ctx(srv, resolved), srv->opt.n_slots);
            pthread_mutex_lock(&srv->models_lock);
            continue;
        }
        /* room: this request loads it; those that come meanwhile wait */
        e = entry_for_store(srv, resolved);
        resolved = NULL;
        if (!e || !add_entry(srv, e)) {
            pthread_mutex_unlock(&srv->models_lock);
            entry_free(e);
            *res = sp_reply_error(srv, c, style, 500, NULL, "out of memory");
            return NULL;
        }
        e->state = SP_ENTRY_LOADING;
        e->refs = 1;
        e->mem_bytes = need;
        pthread_mutex_unlock(&srv->models_lock);
        sp_notice(srv, SPROUT_LOG_INFO, "loading \"%s\" from %s", e->name, e->path);
        const bool ok = entry_load(srv, e);
        pthread_mutex_lock(&srv->models_lock);
        pthread_cond_broadcast(&srv->models_changed);
        if (!ok) {
            remove_entry(srv, e);
            pthread_mutex_unlock(&srv->models_lock);
            atomic_fetch_add(&srv->model_load_failures, 1);
            *res = sp_reply_error(srv, c, style, 500, NULL, "cannot load \"%s\": %s", e->name, e->error);
            sp_notice(srv, SPROUT_LOG_WARN, "cannot load \"%s\": %s", e->name, e->error);
            entry_free(e);
            return NULL;
        }
        e->state = SP_ENTRY_LOADED;
        e->last_used_ms = now_ms();
        atomic_fetch_add(&srv->model_loads, 1);
        pthread_mutex_unlock(&srv->models_lock);
        sp_notice(srv, SPROUT_LOG_INFO, "loaded \"%s\": %d slots of %d tokens, about %llu MiB", e->name, sprout_scheduler_n_slots(e->sched),
                  e->n_ctx, (unsigned long long)(e->mem_bytes >> 20));
        return e;
    }
}

/* Sets when an idle entry unloads (models_lock held). */
static void set_expiry(const sp_server *srv, sp_model_entry *e, int64_t keep_alive_ms) {
    if (keep_alive_ms == SP_KEEP_DEFAULT) keep_alive_ms = srv->opt.keep_alive_ms;
    if (e->pinned || keep_alive_ms < 0 || keep_alive_ms == SP_KEEP_FOREVER) {
        e->expires_ms = e->expires_wall_ms = SP_KEEP_FOREVER;
        return;
    }
    e->expires_ms = now_ms() + keep_alive_ms;
    e->expires_wall_ms = wall_ms() + keep_alive_ms;
}

void sp_models_release(sp_server *srv, sp_model_entry *e, int64_t keep_alive_ms) {
    if (!e) return;
    pthread_mutex_lock(&srv->models_lock);
    e->refs--;
    e->last_used_ms = now_ms();
    set_expiry(srv, e, keep_alive_ms);
    if (e->refs == 0 && !e->pinned && e->expires_ms != SP_KEEP_FOREVER && e->expires_ms <= now_ms() && !atomic_load(&srv->stopping))
        unload_entry(srv, e, "keep_alive 0");
    pthread_cond_broadcast(&srv->models_changed);
    pthread_mutex_unlock(&srv->models_lock);
}

bool sp_models_unload(sp_server *srv, const char *name) {
    pthread_mutex_lock(&srv->models_lock);
    sp_model_entry *e = find_entry(srv, name);
    bool known = e != NULL;
    if (e && e->state == SP_ENTRY_LOADED) {
        set_expiry(srv, e, 0);
        if (!e->refs && !e->pinned) unload_entry(srv, e, "keep_alive 0");
    }
    pthread_mutex_unlock(&srv->models_lock);
    if (known || srv->pinned || !srv->store) return known;
    sprout_store_model *sm = NULL;
    pthread_mutex_lock(&srv->store_lock);
    known = sprout_store_resolve(srv->store, name, &sm) == SPROUT_OK;
    pthread_mutex_unlock(&srv->store_lock);
    sprout_store_model_free(sm);
    return known;
}

void sp_models_reap(sp_server *srv) {
    pthread_mutex_lock(&srv->models_lock);
    for (bool again = true; again;) {
        again = false;
        const int64_t now = now_ms();
        for (size_t i = 0; i < srv->n_entries; i++) {
            sp_model_entry *e = srv->entries[i];
            if (e->pinned || e->refs || e->state != SP_ENTRY_LOADED || e->expires_ms == SP_KEEP_FOREVER || e->expires_ms > now) continue;
            unload_entry(srv, e, "keep_alive expired");
            again = true; /* the list changed under us */
            break;
        }
    }
    pthread_mutex_unlock(&srv->models_lock);
}

void sp_models_each_loaded(sp_server *srv, void (*fn)(sp_model_entry *e, void *user), void *user) {
    pthread_mutex_lock(&srv->models_lock);
    for (size_t i = 0; i < srv->n_entries; i++)
        if (srv->entries[i]->state == SP_ENTRY_LOADED) fn(srv->entries[i], user);
    pthread_mutex_unlock(&srv->models_lock);
}
