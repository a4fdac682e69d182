/* Allocation failure injection (issue 39): every allocation the library
 * makes while loading stories260K, tokenizing with real vocabularies,
 * rendering real chat templates, generating a few tokens (a pipeline, a chat
 * session, a scheduler, a LoRA adapter, a JSON Schema), quantizing and merging an adapter
 * is made to fail in turn. Each failure must end in an error status with a message; the
 * same call right after must succeed (and give the same answer); leaks are
 * LeakSanitizer's to find in the sanitizer build. The suite's run sweeps
 * every allocation up to a bound and a stride after it; SPROUT_FAULTS_FULL=1
 * (`make test-faults`) sweeps them all. */
#include <dirent.h>
#include <jansson.h>
#include <stdint.h>
#include <unistd.h>

#include "core/error.h"
#include "fault_inject.h"
#include "imatrix_json.h"
#include "test_util.h"

/* One operation under test: does everything (setup included when it is part
 * of what is swept), frees what it made, and returns the first failure. */
typedef sprout_status (*fault_op)(void *ctx);

static bool full_sweep(void) {
    const char *v = getenv("SPROUT_FAULTS_FULL");
    return v && *v && strcmp(v, "0");
}

static uint64_t points_swept, points_absorbed;
/* The bounded run's: all of the first this many points, then as many in a
 * stride (UINT64_MAX: every point). */
static uint64_t dense_points = 300;
static bool jansson_failed; /* the failed allocation was jansson's (json_alloc) */

/* The allocations to fail: all of the first `dense`, then every stride-th,
 * so that about `dense` more points cover the rest. */
static uint64_t next_point(uint64_t n, uint64_t total) {
    const uint64_t dense = dense_points;
    if (full_sweep() || n < dense) return n + 1;
    uint64_t stride = (total - dense) / dense + 1;
    return n + stride;
}

/* To study one failure: SPROUT_FAULTS_ONLY=part-of-a-name, SPROUT_FAULTS_AT=n
 * (with SPROUT_FAULTS_TRACE=1 in the sanitizer build: the stack of the
 * allocation that fails). */
static void sweep(const char *name, fault_op op, void *ctx) {
    const char *only = getenv("SPROUT_FAULTS_ONLY"), *at = getenv("SPROUT_FAULTS_AT");
    if (only && !strstr(name, only)) return;
    fault_alloc_arm(0);
    sprout_status st = op(ctx);
    uint64_t total = fault_alloc_disarm();
    CHECK_MSG(st == SPROUT_OK, "%s: fails without a fault: %s", name, sprout_last_error());
    if (st != SPROUT_OK) return;
    uint64_t swept = 0;
    for (uint64_t n = at ? strtoull(at, NULL, 10) : 1; n <= total; n = at ? total + 1 : next_point(n, total)) {
        sp_fail(SPROUT_OK, "%s", "");
        jansson_failed = false;
        fault_alloc_arm(n);
        st = op(ctx);
        bool fired = fault_alloc_fired();
        fault_alloc_disarm();
        if (!fired) continue; /* fewer allocations this time (a thread's timing) */
        swept++;
        if (st == SPROUT_OK && jansson_failed) {
            points_absorbed++;
            continue;
        }
        CHECK_MSG(st != SPROUT_OK, "%s: allocation %llu of %llu failed, yet the call succeeded", name, (unsigned long long)n,
                  (unsigned long long)total);
        CHECK_MSG(st == SPROUT_OK || sprout_last_error()[0], "%s: allocation %llu: status %s without a message", name,
                  (unsigned long long)n, sprout_status_str(st));
        st = op(ctx);
        CHECK_MSG(st == SPROUT_OK, "%s: the retry after allocation %llu fails: %s", name, (unsigned long long)n,
                  sprout_last_error());
    }
    points_swept += swept;
    printf("%-28s %6llu allocations, %6llu failed in turn\n", name, (unsigned long long)total, (unsigned long long)swept);
}

static char model_path[1024];

/* --- loading ------------------------------------------------------------------------------ */

static sprout_status op_load(void *ctx) {
    (void)ctx;
    sprout_model_params mp = {.struct_size = sizeof mp, .n_threads = 1, .n_ctx = 128};
    sprout_model *m = NULL;
    sprout_status st = sprout_model_load(model_path, &mp, &m);
    sprout_model_free(m);
    return st;
}

/* --- tokenizing ---------------------------------------------------------------------------- */

typedef struct tokenize_case {
    const char *vocab;
    const char *text;
    size_t n_expected; /* from the run without faults */
    sprout_token expected[256];
} tokenize_case;

static sprout_status op_tokenize(void *ctx) {
    tokenize_case *c = ctx;
    char path[1024];
    snprintf(path, sizeof path, "%s/tokenizer/%s", test_shared_dir(), c->vocab);
    sprout_gguf *g = NULL;
    sprout_tokenizer *tok = NULL;
    sprout_token ids[256];
    size_t n = 0;
    sprout_status st = sprout_gguf_open(path, &g);
    if (st == SPROUT_OK) st = sprout_tokenizer_create(g, &tok);
    if (st == SPROUT_OK)
        st = sprout_tokenize(tok, c->text, strlen(c->text), SPROUT_TOKENIZE_ADD_SPECIAL | SPROUT_TOKENIZE_PARSE_SPECIAL, ids,
                             256, &n);
    if (st == SPROUT_OK && c->n_expected == 0) {
        c->n_expected = n;
        memcpy(c->expected, ids, n * sizeof *ids);
    } else if (st == SPROUT_OK && (n != c->n_expected || memcmp(ids, c->expected, n * sizeof *ids))) {
        st = sp_fail(SPROUT_ERR_INTERNAL, "%s: other ids than without faults", c->vocab);
    }
    sprout_tokenizer_free(tok);
    sprout_gguf_close(g);
    return st;
}

/* --- chat templates ------------------------------------------------------------------------ */

typedef struct template_case {
    const char *name;
    char *source, *messages, *extra, *expected;
    const char *bos, *eos;
    bool add_generation_prompt;
} template_case;

static bool template_case_read(template_case *c) {
    char path[1024];
    snprintf(path, sizeof path, "%s/chat_templates/%s.json", test_shared_dir(), c->name);
    json_t *spec = json_load_file(path, 0, NULL);
    snprintf(path, sizeof path, "%s/chat_templates/%s.jinja", test_shared_dir(), c->name);
    FILE *f = fopen(path, "rb");
    CHECK_MSG(spec && f, "cannot read %s", path);
    if (!spec || !f) {
        json_decref(spec);
        if (f) fclose(f);
        return false;
    }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    rewind(f);
    c->source = calloc(1, (size_t)size + 1);
    CHECK(fread(c->source, 1, (size_t)size, f) == (size_t)size);
    fclose(f);
    /* the multi-turn case, with the file's variables (tools), or else the
     * first case that renders (some templates refuse a multi-turn chat) */
    const json_t *cases = json_object_get(spec, "cases"), *pick = NULL;
    for (size_t i = 0; i < json_array_size(cases); i++) {
        const json_t *cs = json_array_get(cases, i);
        if (!json_is_string(json_object_get(cs, "expected"))) continue;
        if (!pick || !strcmp(json_string_value(json_object_get(cs, "id")), "c_multi_turn_gen")) pick = cs;
    }
    CHECK_MSG(pick != NULL, "%s: no case that renders", c->name);
    if (pick) {
        c->messages = json_dumps(json_object_get(pick, "messages"), JSON_COMPACT);
        c->expected = strdup(json_string_value(json_object_get(pick, "expected")));
        c->add_generation_prompt = json_is_true(json_object_get(pick, "add_generation_prompt"));
    }
    json_t *vars = json_object_get(spec, "other_variables");
    c->extra = vars ? json_dumps(vars, JSON_COMPACT) : NULL;
    c->bos = json_string_value(json_object_get(spec, "bos_token"));
    c->bos = c->bos ? strdup(c->bos) : NULL;
    c->eos = json_string_value(json_object_get(spec, "eos_token"));
    c->eos = c->eos ? strdup(c->eos) : NULL;
    json_decref(spec);
    return pick != NULL;
}

static void template_case_free(template_case *c) {
    free(c->source);
    free(c->messages);
    free(c->extra);
    free(c->expected);
    free((char *)c->bos);
    free((char *)c->eos);
}

static sprout_status op_template(void *ctx) {
    const template_case *c = ctx;
    sprout_template *t = NULL;
    char *out = NULL;
    size_t len = 0;
    sprout_template_options opt = {.struct_size = sizeof opt,
                                   .add_generation_prompt = c->add_generation_prompt,
                                   .bos_token = c->bos,
                                   .eos_token = c->eos,
                                   .extra_json = c->extra,
                                   .now = "2024-07-26T12:00:00"};
    sprout_status st = sprout_template_parse(c->source, strlen(c->source), &t);
    if (st == SPROUT_OK) st = sprout_template_render_json(t, c->messages, &opt, &out, &len);
    if (st == SPROUT_OK && (len != strlen(c->expected) || memcmp(out, c->expected, len)))
        st = sp_fail(SPROUT_ERR_INTERNAL, "%s: renders other text than transformers", c->name);
    sprout_free(out);
    sprout_template_free(t);
    return st;
}

/* --- generation ---------------------------------------------------------------------------- */

typedef struct generation_case {
    sprout_model *model;
    sprout_pipeline *pipeline; /* NULL: each call makes its own */
    size_t n_expected;
    sprout_token expected[64];
} generation_case;

/* Tokens of a generation against the clean run's (the first call records them). */
static sprout_status same_tokens(generation_case *c, const sprout_result *r) {
    size_t n;
    const sprout_token *ids = sprout_result_tokens(r, &n);
    if (c->n_expected == 0 && n <= 64) {
        c->n_expected = n;
        memcpy(c->expected, ids, n * sizeof *ids);
        return SPROUT_OK;
    }
    if (n != c->n_expected || memcmp(ids, c->expected, n * sizeof *ids)) return sp_fail(SPROUT_ERR_INTERNAL, "other tokens than without faults");
    return SPROUT_OK;
}

static sprout_status op_generate(void *ctx) {
    generation_case *c = ctx;
    sprout_pipeline *p = c->pipeline;
    sprout_status st = p ? SPROUT_OK : sprout_pipeline_create(c->model, NULL, &p);
    sprout_generation_config cfg;
    sprout_generation_config_init(&cfg);
    cfg.temperature = 0;
    cfg.max_new_tokens = 4;
    sprout_result *r = NULL;
    if (st == SPROUT_OK) st = sprout_generate(p, "Once upon a time", &cfg, NULL, NULL, &r);
    if (st == SPROUT_OK) st = same_tokens(c, r);
    sprout_result_free(r);
    if (p != c->pipeline) sprout_pipeline_free(p);
    return st;
}

static sprout_status op_chat_prompt(void *ctx) {
    const generation_case *c = ctx;
    char *text = NULL;
    sprout_token *ids = NULL;
    size_t len = 0, n = 0;
    sprout_status st = sprout_model_chat_prompt(
        c->model, "chatml", "[{\"role\":\"system\",\"content\":\"Be brief.\"},{\"role\":\"user\",\"content\":\"Tell a story.\"}]",
        true, &text, &len, &ids, &n);
    sprout_free(text);
    sprout_free(ids);
    return st;
}

static sprout_status op_chat(void *ctx) {
    const generation_case *c = ctx;
    sprout_pipeline *p = NULL;
    sprout_result *r = NULL;
    sprout_generation_config cfg;
    sprout_generation_config_init(&cfg);
    cfg.temperature = 0;
    cfg.max_new_tokens = 3;
    sprout_pipeline_params pp = {.struct_size = sizeof pp, .n_ctx = 256};
    sprout_status st = sprout_pipeline_create(c->model, &pp, &p);
    if (st == SPROUT_OK) st = sprout_chat_start(p, "You tell stories.");
    if (st == SPROUT_OK) st = sprout_chat_generate(p, "Once upon a time", &cfg, NULL, NULL, &r);
    sprout_result_free(r);
    r = NULL;
    if (st == SPROUT_OK) st = sprout_chat_generate(p, "And then?", &cfg, NULL, NULL, &r);
    sprout_result_free(r);
    sprout_chat_finish(p);
    sprout_pipeline_free(p);
    return st;
}

/* One request through a scheduler: its engine thread allocates too. */
static sprout_status op_scheduler(void *ctx) {
    const generation_case *c = ctx;
    sprout_scheduler_params sp = {.struct_size = sizeof sp, .n_slots = 2, .n_ctx = 64, .n_threads = 1};
    sprout_scheduler *s = NULL;
    sprout_request *req = NULL;
    sprout_result *r = NULL;
    sprout_generation_config cfg;
    sprout_generation_config_init(&cfg);
    cfg.temperature = 0;
    cfg.max_new_tokens = 3;
    const sprout_token prompt[] = {1, 403, 407, 261, 378};
    sprout_request_params rp = {.struct_size = sizeof rp, .prompt = prompt, .n_prompt = 5, .config = &cfg};
    sprout_status st = sprout_scheduler_create(c->model, &sp, &s);
    if (st == SPROUT_OK) st = sprout_scheduler_submit(s, &rp, &req);
    if (st == SPROUT_OK) st = sprout_request_wait(req, &r);
    sprout_result_free(r);
    sprout_request_free(req);
    sprout_scheduler_free(s);
    return st;
}

/* A model loaded from path (a KV cache of type kv where kv_set), a pipeline,
 * a generation with cfg checked against the clean run's tokens, all freed:
 * a model of its own each time, where the model's caches (its grammars and
 * their masks) would keep from the first run what the sweep is to reach. */
static sprout_status generate_on_fresh_model(const char *path, bool kv_set, sprout_kv_type kv, const sprout_generation_config *cfg,
                                             generation_case *c) {
    sprout_model_params mp = {.struct_size = sizeof mp, .n_threads = 1, .n_ctx = 64, .kv_type = kv, .kv_type_set = kv_set};
    sprout_model *m = NULL;
    sprout_pipeline *p = NULL;
    sprout_result *r = NULL;
    sprout_status st = sprout_model_load(path, &mp, &m);
    if (st == SPROUT_OK) st = sprout_pipeline_create(m, NULL, &p);
    if (st == SPROUT_OK) st = sprout_generate(p, "Once upon a time", cfg, NULL, NULL, &r);
    if (st == SPROUT_OK) st = same_tokens(c, r);
    sprout_result_free(r);
    sprout_pipeline_free(p);
    sprout_model_free(m);
    return st;
}

/* A generation held to a JSON Schema: the converter, the grammar's compile,
 * its masks over the vocabulary and each step's state. */
static sprout_status op_schema_generate(void *ctx) {
    sprout_generation_config cfg;
    sprout_generation_config_init(&cfg);
    cfg.temperature = 0;
    cfg.max_new_tokens = 6;
    cfg.json_schema = "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\",\"maxLength\":8},"
                      "\"mood\":{\"enum\":[\"happy\",\"sad\"]},\"toys\":{\"type\":\"array\",\"items\":{\"type\":\"integer\"}}},"
                      "\"required\":[\"name\",\"mood\"]}";
    return generate_on_fresh_model(model_path, false, SPROUT_KV_F16, &cfg, ctx);
}

/* Assisted generation: a draft pipeline (the model drafting for itself)
 * proposing 4 tokens a pass, or (assisted_lookup) prompt lookup. */
static bool assisted_lookup;
static sprout_status op_assisted(void *ctx) {
    generation_case *c = ctx;
    sprout_pipeline *p = NULL, *draft = NULL;
    sprout_generation_config cfg;
    sprout_generation_config_init(&cfg);
    cfg.temperature = 0;
    cfg.max_new_tokens = 12;
    cfg.num_assistant_tokens = 4;
    cfg.prompt_lookup = assisted_lookup;
    sprout_result *r = NULL;
    sprout_status st = sprout_pipeline_create(c->model, NULL, &p);
    if (st == SPROUT_OK && !assisted_lookup) st = sprout_pipeline_create(c->model, NULL, &draft);
    if (st == SPROUT_OK && draft) st = sprout_pipeline_set_draft(p, draft);
    if (st == SPROUT_OK)
        st = sprout_generate(p, "Lily saw a cat. The cat was big. Lily saw a cat. The cat", &cfg, NULL, NULL, &r);
    if (st == SPROUT_OK) st = same_tokens(c, r);
    sprout_result_free(r);
    sprout_pipeline_free(p);
    sprout_pipeline_free(draft);
    return st;
}

/* A lazy grammar: free text until the trigger, then the grammar's (the
 * trigger's wait, then the grammar as for a schema). */
static sprout_status op_lazy_grammar(void *ctx) {
    sprout_generation_config cfg;
    sprout_generation_config_init(&cfg);
    cfg.temperature = 0;
    cfg.max_new_tokens = 16;
    cfg.grammar = "root ::= \"Lily\" [ .,a-z]+ [A-Z] [a-z]*";
    cfg.grammar_trigger = "Lily";
    return generate_on_fresh_model(model_path, false, SPROUT_KV_F16, &cfg, ctx);
}

/* --- architectures and caches -------------------------------------------------------------- */

/* A model file loaded and 4 tokens generated (its own KV cache type where
 * kv_set): the loaders and forward passes beyond llama's. */
typedef struct arch_case {
    char path[512];
    bool kv_set;
    sprout_kv_type kv;
    generation_case gen;
} arch_case;

static sprout_status op_arch_generate(void *ctx) {
    arch_case *a = ctx;
    sprout_generation_config cfg;
    sprout_generation_config_init(&cfg);
    cfg.temperature = 0;
    cfg.max_new_tokens = 4;
    return generate_on_fresh_model(a->path, a->kv_set, a->kv, &cfg, &a->gen);
}

/* make_moe's ARCH TYPE into the temporary folder, then its sweep (with a
 * KV cache of type kv where kv_set). */
static void sweep_arch(const char *arch, const char *type, bool kv_set, sprout_kv_type kv) {
    arch_case a = {.kv_set = kv_set, .kv = kv};
    snprintf(a.path, sizeof a.path, "%s/%s-%s.gguf", test_temp_dir(), arch, type);
    char cmd[1024], name[64];
    snprintf(cmd, sizeof cmd, "'%s' %s %s '%s' 7 >/dev/null", SPROUT_MAKE_MOE_PATH, arch, type, a.path);
    CHECK_MSG(system(cmd) == 0, "%s", cmd);
    snprintf(name, sizeof name, "%s %s%s + generate", arch, type, kv_set ? ", q8_0 KV cache" : "");
    sweep(name, op_arch_generate, &a);
    unlink(a.path);
}

/* --- LoRA adapters -------------------------------------------------------------------------- */

static char adapter_path[512];

/* An adapter loaded, applied to one generation, freed. */
static sprout_status op_lora(void *ctx) {
    const generation_case *c = ctx;
    sprout_lora *lora = NULL;
    sprout_pipeline *p = NULL;
    sprout_result *r = NULL;
    sprout_status st = sprout_lora_load(c->model, adapter_path, &lora);
    if (st == SPROUT_OK) st = sprout_pipeline_create(c->model, NULL, &p);
    sprout_lora_use use = {lora, 0.5f};
    sprout_generation_config cfg;
    sprout_generation_config_init(&cfg);
    cfg.temperature = 0;
    cfg.max_new_tokens = 3;
    cfg.lora = &use;
    cfg.n_lora = 1;
    if (st == SPROUT_OK) st = sprout_generate(p, "Once upon a time", &cfg, NULL, NULL, &r);
    sprout_result_free(r);
    sprout_pipeline_free(p);
    sprout_lora_free(lora);
    return st;
}

/* Two requests through a scheduler in the same passes, one with an
 * adapter and one without (the batch's adapter sets, the prefix cache's
 * keys). Each must give its clean-run tokens. */
typedef struct mixed_case {
    sprout_model *model;
    generation_case with, without;
} mixed_case;

static sprout_status op_scheduler_lora(void *ctx) {
    mixed_case *c = ctx;
    sprout_scheduler_params sp = {.struct_size = sizeof sp, .n_slots = 2, .n_ctx = 64, .n_threads = 1};
    sprout_scheduler *s = NULL;
    sprout_lora *lora = NULL;
    sprout_request *req[2] = {NULL, NULL};
    sprout_result *r[2] = {NULL, NULL};
    sprout_generation_config cfg[2];
    const sprout_token prompt[] = {1, 403, 407, 261, 378};
    sprout_status st = sprout_lora_load(c->model, adapter_path, &lora);
    sprout_lora_use use = {lora, 0.5f};
    for (int i = 0; i < 2; i++) {
        sprout_generation_config_init(&cfg[i]);
        cfg[i].temperature = 0;
        cfg[i].max_new_tokens = 4;
    }
    cfg[0].lora = &use, cfg[0].n_lora = 1;
    if (st == SPROUT_OK) st = sprout_scheduler_create(c->model, &sp, &s);
    for (int i = 0; st == SPROUT_OK && i < 2; i++) {
        sprout_request_params rp = {.struct_size = sizeof rp, .prompt = prompt, .n_prompt = 5, .config = &cfg[i]};
        st = sprout_scheduler_submit(s, &rp, &req[i]);
    }
    for (int i = 0; i < 2; i++) {
        const sprout_status w = req[i] ? sprout_request_wait(req[i], &r[i]) : SPROUT_OK;
        if (st == SPROUT_OK) st = w;
    }
    if (st == SPROUT_OK) st = same_tokens(&c->with, r[0]);
    if (st == SPROUT_OK) st = same_tokens(&c->without, r[1]);
    for (int i = 0; i < 2; i++) {
        sprout_result_free(r[i]);
        sprout_request_free(req[i]);
    }
    sprout_scheduler_free(s);
    sprout_lora_free(lora);
    return st;
}

/* A generation past a small context with context shift on: the cache
 * keeps the first tokens, drops half the rest, and goes on. */
static sprout_status op_context_shift(void *ctx) {
    generation_case *c = ctx;
    sprout_pipeline_params pp = {.struct_size = sizeof pp, .n_ctx = 24};
    sprout_pipeline *p = NULL;
    sprout_result *r = NULL;
    sprout_generation_config cfg;
    sprout_generation_config_init(&cfg);
    cfg.temperature = 0;
    cfg.max_new_tokens = 40;
    cfg.context_shift = true;
    cfg.n_keep = 2;
    sprout_status st = sprout_pipeline_create(c->model, &pp, &p);
    if (st == SPROUT_OK) st = sprout_generate(p, "Once upon a time", &cfg, NULL, NULL, &r);
    if (st == SPROUT_OK) {
        size_t n;
        sprout_result_tokens(r, &n);
        if (n != 40) st = sp_fail(SPROUT_ERR_INTERNAL, "%zu tokens, not 40: the context did not shift", n);
    }
    if (st == SPROUT_OK) st = same_tokens(c, r);
    sprout_result_free(r);
    sprout_pipeline_free(p);
    return st;
}

/* --- the model store ------------------------------------------------------------------------ */

static char store_root[256];

/* A Modelfile with every instruction: a model created (replacing the last
 * run's), resolved, its PARAMETERs applied, its Go template rendered with
 * its MESSAGEs, listed, then removed. */
static sprout_status op_store(void *ctx) {
    (void)ctx;
    char modelfile[2048];
    snprintf(modelfile, sizeof modelfile,
             "FROM %s\nADAPTER %s\n"
             "TEMPLATE \"\"\"{{ if .System }}<|system|>{{ .System }}{{ end }}{{ range .Messages }}<|{{ .Role }}|>{{ .Content }}"
             "{{ end }}<|assistant|>\"\"\"\n"
             "SYSTEM You tell short stories.\nPARAMETER temperature 0.5\nPARAMETER stop \"<|user|>\"\nPARAMETER stop END\n"
             "PARAMETER num_ctx 128\nMESSAGE user Tell one.\nMESSAGE assistant Once upon a time.\nLICENSE \"\"\"MIT\"\"\"\n",
             model_path, adapter_path);
    sprout_store_params sp = {.struct_size = sizeof sp, .root = store_root, .ollama_root = ""};
    sprout_store *s = NULL;
    sprout_store_model *m = NULL;
    sprout_template *t = NULL;
    sprout_store_entry *entries = NULL;
    size_t n_entries = 0;
    char *prompt = NULL;
    size_t prompt_len = 0;
    sprout_store_create_params cp = {.struct_size = sizeof cp};
    sprout_status st = sprout_store_open(&sp, &s);
    if (st == SPROUT_OK) st = sprout_store_create(s, "story:test", modelfile, strlen(modelfile), &cp);
    if (st == SPROUT_OK) st = sprout_store_resolve(s, "story:test", &m);
    if (st == SPROUT_OK) {
        sprout_generation_config cfg;
        sprout_generation_config_init(&cfg);
        sprout_runner_settings rs = {.struct_size = sizeof rs};
        st = sprout_store_model_apply(m, &cfg, &rs);
        if (st == SPROUT_OK && (rs.num_ctx != 128 || cfg.n_stop_strings != 2)) st = sp_fail(SPROUT_ERR_INTERNAL, "the parameters did not apply");
    }
    if (st == SPROUT_OK) st = sprout_template_parse(sprout_store_model_template(m), strlen(sprout_store_model_template(m)), &t);
    if (st == SPROUT_OK) {
        sprout_template_options opt = {.struct_size = sizeof opt, .add_generation_prompt = true};
        st = sprout_template_render_json(t, sprout_store_model_messages_json(m), &opt, &prompt, &prompt_len);
        if (st == SPROUT_OK && !strstr(prompt, "<|user|>Tell one.<|assistant|>Once upon a time.")) st = sp_fail(SPROUT_ERR_INTERNAL, "rendered: %s", prompt);
    }
    if (st == SPROUT_OK) st = sprout_store_list(s, &entries, &n_entries);
    if (st == SPROUT_OK && n_entries != 1) st = sp_fail(SPROUT_ERR_INTERNAL, "%zu models listed", n_entries);
    sprout_store_entries_free(entries, n_entries);
    sprout_free(prompt);
    sprout_template_free(t);
    sprout_store_model_free(m);
    if (st == SPROUT_OK) st = sprout_store_remove(s, "story:test");
    sprout_store_free(s);
    return st;
}

/* --- quantizing ---------------------------------------------------------------------------- */

static char work_dir[256];

/* The files of the work folder (a failed write must leave none behind). */
static int work_files(void) {
    DIR *d = opendir(work_dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));) n += e->d_name[0] != '.';
    if (d) closedir(d);
    return n;
}

/* The adapter merged into a copy of the model (llama-export-lora's job). */
static sprout_status op_export_lora(void *ctx) {
    (void)ctx;
    char out[512];
    snprintf(out, sizeof out, "%s/merged.gguf", work_dir);
    const char *paths[1] = {adapter_path};
    sprout_lora_export_params p;
    sprout_lora_export_params_default(&p);
    p.base_path = model_path;
    p.adapter_paths = paths;
    p.n_adapters = 1;
    p.output_path = out;
    p.n_threads = 1;
    sprout_status st = sprout_lora_export(&p);
    if (st != SPROUT_OK && work_files() != 0) return sp_fail(SPROUT_ERR_INTERNAL, "a failed export left files in %s", work_dir);
    unlink(out);
    return st;
}

static char imatrix_path[512]; /* stories260K's (llama-imatrix's GGUF): Q4_K_M quantizes with it */

static sprout_status op_quantize(void *ctx) {
    const bool iq = ctx != NULL;
    char out[512];
    snprintf(out, sizeof out, "%s/q.gguf", work_dir);
    sprout_quantize_params qp;
    sprout_quantize_params_default(&qp);
    qp.file_type = iq ? SPROUT_FTYPE_Q4_K_M : SPROUT_FTYPE_Q8_0; /* (IQ2_XS's grid search was the slowest path under ASan) */
    qp.imatrix_path = iq ? imatrix_path : NULL;
    qp.n_threads = 1;
    sprout_status st = sprout_quantize_model(model_path, out, &qp, NULL);
    if (st != SPROUT_OK && work_files() != 0) return sp_fail(SPROUT_ERR_INTERNAL, "a failed quantization left files in %s", work_dir);
    unlink(out);
    return st;
}

/* A text with ASCII, accents, CJK, Hangul, a control token's text, spaces
 * and digits: every path of every tokenizer has something to do. */
static const char tokenize_text[] = "Hello, WORLD!  It's 2024 \xe2\x80\x94 caf\xc3\xa9 \xe4\xbd\xa0\xe5\xa5\xbd "
                                    "\xed\x95\x9c\xea\xb5\xad\xec\x96\xb4 <s> [SEP] unaffable\n\n\tcode()";

static bool sweep_vocab(const char *dir, const char *file, void *ctx) {
    (void)dir, (void)ctx;
    tokenize_case c = {.vocab = file, .text = tokenize_text};
    char name[64];
    snprintf(name, sizeof name, "tokenize %.40s", file + (strncmp(file, "ggml-vocab-", 11) ? 0 : 11));
    sweep(name, op_tokenize, &c);
    return true;
}

static bool sweep_template(const char *dir, const char *file, void *ctx) {
    (void)dir, (void)ctx;
    char base[128], name[160];
    snprintf(base, sizeof base, "%.*s", (int)(strlen(file) - 6), file);
    template_case c = {.name = base};
    snprintf(name, sizeof name, "render %s", base);
    if (template_case_read(&c)) sweep(name, op_template, &c);
    template_case_free(&c);
    return true;
}

/* jansson's allocations (the template's JSON input) are counted and failed
 * like the library's own. jansson absorbs a few failures itself (the call
 * then succeeds with the same answer, which the operations check): those
 * are told apart, not counted against the library. */
static void *json_alloc(size_t size) {
    void *p = malloc(size);
    if (!p && fault_alloc_fired()) jansson_failed = true;
    return p;
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    json_set_alloc_funcs(json_alloc, free);
    snprintf(work_dir, sizeof work_dir, "/tmp/sprout-faults-XXXXXX");
    CHECK(mkdtemp(work_dir) != NULL);
    snprintf(model_path, sizeof model_path, "%s/models/stories260K.gguf", test_shared_dir());
    /* the adapter lives outside the work folder, which a failed write must leave empty */
    snprintf(adapter_path, sizeof adapter_path, "%s/adapter.gguf", test_temp_dir());
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' '%s' '%s' --rank 4 --type F32 --targets all --seed 5 --magnitude 0.1 >/dev/null",
             SPROUT_MAKE_LORA_PATH, model_path, adapter_path);
    CHECK_MSG(system(cmd) == 0, "%s", cmd);
    sweep("load stories260K", op_load, NULL);

    /* the suite's run: one vocabulary per algorithm, two templates; the full
     * sweep: every vocabulary and template of the shared folder */
    if (full_sweep()) {
        test_for_each_shared_file("tokenizer", ".gguf", sweep_vocab, NULL);
        test_for_each_shared_file("chat_templates", ".jinja", sweep_template, NULL);
    } else {
        const char *vocabs[] = {"ggml-vocab-llama-spm.gguf", "ggml-vocab-gpt-2.gguf", "ggml-vocab-bert-bge.gguf"};
        const char *templates[] = {"hermes-2-pro-tool-use.jinja", "llama-3.1-instruct.jinja"};
        for (size_t i = 0; i < sizeof vocabs / sizeof *vocabs; i++) sweep_vocab(NULL, vocabs[i], NULL);
        for (size_t i = 0; i < sizeof templates / sizeof *templates; i++) sweep_template(NULL, templates[i], NULL);
    }

    sprout_model_params mp = {.struct_size = sizeof mp, .n_threads = 1, .n_ctx = 256};
    generation_case gen = {0};
    CHECK_MSG(sprout_model_load(model_path, &mp, &gen.model) == SPROUT_OK, "%s", sprout_last_error());
    if (gen.model) {
        sweep("chat prompt (chatml)", op_chat_prompt, &gen);
        sweep("pipeline + generate", op_generate, &gen);
        sweep("chat session", op_chat, &gen);
        sweep("scheduler request", op_scheduler, &gen);
        sweep("LoRA load + generate", op_lora, &gen);
        /* every point: the grammar's failures past the first few hundred
         * were the ones that crashed or were swallowed */
        generation_case schema = {0};
        dense_points = UINT64_MAX;
        sweep("generate to a JSON schema", op_schema_generate, &schema);
        generation_case lazy = {0};
        dense_points = 100;
        sweep("generate to a lazy grammar", op_lazy_grammar, &lazy);
        dense_points = 300;
        mixed_case mixed = {.model = gen.model};
        sweep("scheduler: an adapter and none", op_scheduler_lora, &mixed);
        generation_case shifted = {.model = gen.model};
        sweep("generate past the context (shift)", op_context_shift, &shifted);
        generation_case drafted = {.model = gen.model}, looked_up = {.model = gen.model};
        sweep("generate with a draft model", op_assisted, &drafted);
        assisted_lookup = true;
        sweep("generate with prompt lookup", op_assisted, &looked_up);
        assisted_lookup = false;
        /* a pipeline that saw a failure must serve the next call */
        CHECK(sprout_pipeline_create(gen.model, NULL, &gen.pipeline) == SPROUT_OK);
        if (gen.pipeline) sweep("generate on one pipeline", op_generate, &gen);
        sprout_pipeline_free(gen.pipeline);
        sprout_model_free(gen.model);
    }
    /* a mixture of experts with a shared expert, latent attention with
     * expert groups, gpt-oss (sinks, sliding windows, MXFP4 experts), and
     * a quantized KV cache */
    sweep_arch("qwen2moe", "Q8_0", false, SPROUT_KV_F16);
    sweep_arch("deepseek3", "Q8_0", false, SPROUT_KV_F16);
    sweep_arch("gpt-oss", "MXFP4_MOE", false, SPROUT_KV_F16);
    sweep_arch("granite", "Q8_0", true, SPROUT_KV_Q8_0); /* heads of 64 (stories260K's are 8) */
    snprintf(store_root, sizeof store_root, "%s/store", test_temp_dir());
    dense_points = 30; /* each point writes a store: the slowest path under ASan */
    sweep("store: create, resolve, apply, remove", op_store, NULL);
    dense_points = 300;
    sweep("quantize to Q8_0", op_quantize, NULL);
    char json[1024];
    snprintf(json, sizeof json, "%s/stories260K.imatrix.json", SPROUT_QUANT_IQ_DATA_DIR);
    snprintf(imatrix_path, sizeof imatrix_path, "%s/stories260K.imatrix.gguf", test_temp_dir());
    CHECK_MSG(imatrix_json_to_gguf(json, imatrix_path), "%s", json);
    sweep("quantize to Q4_K_M, an imatrix", op_quantize, imatrix_path);
    unlink(imatrix_path);
    sweep("export-lora", op_export_lora, NULL);
    rmdir(work_dir);
    unlink(adapter_path);
    rmdir(test_temp_dir());
    printf("%llu allocation points failed in turn (%s sweep), from %zu call sites; %llu of them jansson's that it absorbed\n",
           (unsigned long long)points_swept, full_sweep() ? "full" : "bounded", fault_alloc_sites(),
           (unsigned long long)points_absorbed);
    TEST_MAIN_END();
}
