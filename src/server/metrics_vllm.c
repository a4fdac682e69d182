/* The metrics of the Kubernetes inference gateway's model-server protocol,
 * under vLLM's names so that its endpoint picker, llm-d and the dashboards
 * built for vLLM read a sprout replica unchanged: queue and running gauges
 * and KV-cache use per loaded model (from the scheduler), the adapters a
 * replica serves, and per model the token counters and the latency
 * histograms (vLLM's bucket bounds) of the generations that ended. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/response_parts.h"
#include "server/server_internal.h"

/* vLLM's bounds (seconds), so that quantiles read off a sprout replica and a
 * vLLM one compare bucket for bucket. */
static const double ttft_bounds[] = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.25, 0.5,   0.75,
                                     1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
static const double tpot_bounds[] = {0.01, 0.025, 0.05, 0.075, 0.1,  0.15, 0.2,  0.3,  0.4, 0.5,
                                     0.75, 1.0,   2.5,  5.0,   7.5,  10.0, 20.0, 40.0, 80.0};
static const double e2e_bounds[] = {0.3,  0.5,  0.8,  1.0,  1.5,   2.0,   2.5,   5.0,   10.0,  15.0,  20.0,
                                    30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};
enum { MAX_BOUNDS = 22 };

typedef struct histogram {
    uint64_t in_bucket[MAX_BOUNDS + 1]; /* per bucket, not cumulative; the last is +Inf */
    uint64_t count;
    double sum;
} histogram;

typedef struct adapter_count {
    char name[128];
    uint64_t requests;
} adapter_count;

typedef struct model_stats {
    char name[256];
    uint64_t finished_stop, finished_length;
    uint64_t prompt_tokens, cached_tokens, generation_tokens;
    histogram ttft, tpot, e2e;
    adapter_count *adapters;
    size_t n_adapters;
} model_stats;

struct sp_request_stats {
    pthread_mutex_t mu;
    model_stats *models;
    size_t n, cap;
};

bool sp_request_stats_init(sp_server *srv) {
    sp_request_stats *s = calloc(1, sizeof *s);
    if (!s) return false;
    pthread_mutex_init(&s->mu, NULL);
    srv->request_stats = s;
    return true;
}

void sp_request_stats_free(sp_server *srv) {
    sp_request_stats *s = srv->request_stats;
    if (!s) return;
    for (size_t i = 0; i < s->n; i++) free(s->models[i].adapters);
    free(s->models);
    pthread_mutex_destroy(&s->mu);
    free(s);
    srv->request_stats = NULL;
}

/* The model's row (mu held), made on its first request; NULL: out of memory. */
static model_stats *model_row(sp_request_stats *s, const char *name) {
    for (size_t i = 0; i < s->n; i++)
        if (!strcmp(s->models[i].name, name)) return &s->models[i];
    if (s->n == s->cap) {
        const size_t cap = s->cap ? s->cap * 2 : 4;
        model_stats *more = realloc(s->models, cap * sizeof *more);
        if (!more) return NULL;
        s->models = more;
        s->cap = cap;
    }
    model_stats *m = &s->models[s->n++];
    memset(m, 0, sizeof *m);
    snprintf(m->name, sizeof m->name, "%s", name);
    return m;
}

static void count_adapter(model_stats *m, const char *name) {
    for (size_t i = 0; i < m->n_adapters; i++)
        if (!strcmp(m->adapters[i].name, name)) {
            m->adapters[i].requests++;
            return;
        }
    adapter_count *more = realloc(m->adapters, (m->n_adapters + 1) * sizeof *more);
    if (!more) return;
    m->adapters = more;
    adapter_count *a = &m->adapters[m->n_adapters++];
    snprintf(a->name, sizeof a->name, "%s", name);
    a->requests = 1;
}

/* `times` observations of `value` seconds. */
static void observe(histogram *h, const double *bounds, size_t n_bounds, double value, uint64_t times) {
    size_t b = 0;
    while (b < n_bounds && value > bounds[b]) b++;
    h->in_bucket[b] += times;
    h->count += times;
    h->sum += value * (double)times;
}

void sp_request_stats_observe(sp_job *j, const sprout_result *r) {
    sp_request_stats *s = j->srv->request_stats;
    sprout_perf_metrics pm = {.struct_size = sizeof pm};
    if (!s || !r || sprout_result_metrics(r, &pm) != SPROUT_OK) return;
    const sp_usage u = sp_usage_of(r);
    const double e2e = (sp_fleet_now_ms() - j->t_arrival_ms) / 1e3;
    const double ttft = (j->t_submit_ms - j->t_arrival_ms + pm.ttft_ms) / 1e3;
    pthread_mutex_lock(&s->mu);
    model_stats *m = model_row(s, j->model->name);
    if (m) {
        if (sprout_result_finish_reason(r) == SPROUT_FINISH_LENGTH) m->finished_length++;
        else m->finished_stop++;
        m->prompt_tokens += (uint64_t)u.prompt;
        m->cached_tokens += (uint64_t)u.cached;
        m->generation_tokens += (uint64_t)u.completion;
        observe(&m->e2e, e2e_bounds, sizeof e2e_bounds / sizeof *e2e_bounds, e2e, 1);
        if (u.completion > 0) observe(&m->ttft, ttft_bounds, sizeof ttft_bounds / sizeof *ttft_bounds, ttft, 1);
        /* one observation per token after the first, as vLLM counts them; the request's mean stands for each */
        if (u.completion > 1)
            observe(&m->tpot, tpot_bounds, sizeof tpot_bounds / sizeof *tpot_bounds, pm.tpot_mean_ms / 1e3, (uint64_t)(u.completion - 1));
        char name[128];
        for (size_t i = 0; i < j->req.cfg.n_lora; i++)
            for (size_t k = 0; k < j->model->n_lora; k++)
                if (j->model->loras[k] == j->req.cfg.lora[i].adapter) {
                    sp_fleet_adapter_name(j->model->lora_paths[k], name, sizeof name);
                    count_adapter(m, name);
                }
    }
    pthread_mutex_unlock(&s->mu);
}

/* --- the text ------------------------------------------------------------------------------------------------ */

static void put(sp_buf *b, const char *text) { sp_buf_put(b, text, strlen(text)); }

static void head(sp_buf *b, const char *name, const char *type, const char *help) {
    char text[512];
    snprintf(text, sizeof text, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
    put(b, text);
}

/* NAME{model_name="MODEL"[,EXTRA]} VALUE */
static void sample(sp_buf *b, const char *name, const char *model, const char *extra, double value) {
    char text[128];
    put(b, name);
    put(b, "{model_name=\"");
    sp_put_label(b, model);
    put(b, "\"");
    if (extra) put(b, extra);
    snprintf(text, sizeof text, "} %.17g\n", value);
    put(b, text);
}

static void histogram_text(sp_buf *b, const char *name, const char *model, const histogram *h, const double *bounds, size_t n_bounds) {
    char series[160], le[64];
    snprintf(series, sizeof series, "%s_bucket", name);
    uint64_t below = 0;
    for (size_t i = 0; i <= n_bounds; i++) {
        below += h->in_bucket[i];
        if (i < n_bounds) snprintf(le, sizeof le, ",le=\"%.4g\"", bounds[i]);
        else snprintf(le, sizeof le, ",le=\"+Inf\"");
        /* vLLM's client writes 1.0, not 1: the same label value, for queries that match it as text */
        if (i < n_bounds && bounds[i] == (double)(int64_t)bounds[i]) snprintf(le, sizeof le, ",le=\"%.1f\"", bounds[i]);
        sample(b, series, model, le, (double)below);
    }
    snprintf(series, sizeof series, "%s_sum", name);
    sample(b, series, model, NULL, h->sum);
    snprintf(series, sizeof series, "%s_count", name);
    sample(b, series, model, NULL, (double)h->count);
}

typedef struct gauges {
    sp_buf running, waiting, kv, loras;
    size_t n_models;
} gauges;

static void model_gauges(sp_model_entry *e, void *user) {
    gauges *g = user;
    sprout_scheduler_stats st = {.struct_size = sizeof st};
    pthread_rwlock_rdlock(&e->sched_lock);
    const bool ok = e->sched && sprout_scheduler_stats_get(e->sched, &st) == SPROUT_OK;
    pthread_rwlock_unlock(&e->sched_lock);
    if (!ok) return;
    g->n_models++;
    sample(&g->running, "vllm:num_requests_running", e->name, NULL, st.busy_slots);
    sample(&g->waiting, "vllm:num_requests_waiting", e->name, NULL, st.queued);
    sample(&g->kv, "@", e->name, NULL, st.kv_cells > 0 ? (double)st.kv_cells_used / (double)st.kv_cells : 0);
    /* every adapter loaded serves any batch at once: all are "running", none waits to be loaded */
    char name[256];
    for (size_t i = 0; i < e->n_lora; i++) {
        sp_fleet_adapter_name(e->lora_paths[i], name, sizeof name);
        if (g->loras.len) put(&g->loras, ",");
        sp_put_label(&g->loras, name);
    }
}

/* The KV samples were written with a placeholder name, once for both of vLLM's names (gpu_ before v0.10, kv_ since). */
static void kv_family(sp_buf *b, const sp_buf *kv, const char *name, const char *help) {
    head(b, name, "gauge", help);
    for (size_t i = 0; i < kv->len; i++) {
        if (kv->data[i] == '@') put(b, name);
        else sp_buf_put(b, kv->data + i, 1);
    }
}

void sp_metrics_vllm(sp_server *srv, sp_buf *b) {
    gauges g = {0};
    sp_models_each_loaded(srv, model_gauges, &g);
    head(b, "vllm:num_requests_running", "gauge", "Requests generating now (sprout: busy slots).");
    if (g.running.data) sp_buf_put(b, g.running.data, g.running.len);
    head(b, "vllm:num_requests_waiting", "gauge", "Requests waiting for a slot.");
    if (g.waiting.data) sp_buf_put(b, g.waiting.data, g.waiting.len);
    const char *kv_help = "The fraction of KV-cache cells held by running requests (0 to 1).";
    kv_family(b, &g.kv, "vllm:kv_cache_usage_perc", kv_help);
    kv_family(b, &g.kv, "vllm:gpu_cache_usage_perc", kv_help);
    head(b, "vllm:lora_requests_info", "gauge", "The LoRA adapters served (labels); the value is when this was read (seconds since 1970).");
    char text[160];
    size_t n_lora = 0;
    for (size_t i = 0; g.loras.data && i < g.loras.len; i++) n_lora += g.loras.data[i] == ',';
    n_lora += g.loras.len > 0;
    snprintf(text, sizeof text, "vllm:lora_requests_info{max_lora=\"%zu\",running_lora_adapters=\"", n_lora);
    put(b, text);
    if (g.loras.data) sp_buf_put(b, g.loras.data, g.loras.len);
    snprintf(text, sizeof text, "\",waiting_lora_adapters=\"\"} %.17g\n", (double)time(NULL));
    put(b, text);
    free(g.running.data);
    free(g.waiting.data);
    free(g.kv.data);
    free(g.loras.data);

    sp_request_stats *s = srv->request_stats;
    if (!s) return;
    pthread_mutex_lock(&s->mu);
    static const struct counter {
        const char *name, *help;
        size_t offset;
    } counters[] = {
        {"vllm:prompt_tokens_total", "Prompt tokens of the generations that ended.", offsetof(model_stats, prompt_tokens)},
        {"vllm:generation_tokens_total", "Tokens generated.", offsetof(model_stats, generation_tokens)},
        {"vllm:prefix_cache_queries_total", "Prompt tokens looked up in the prefix cache.", offsetof(model_stats, prompt_tokens)},
        {"vllm:prefix_cache_hits_total", "Prompt tokens found in the prefix cache.", offsetof(model_stats, cached_tokens)},
    };
    for (size_t c = 0; c < sizeof counters / sizeof *counters; c++) {
        head(b, counters[c].name, "counter", counters[c].help);
        for (size_t i = 0; i < s->n; i++)
            sample(b, counters[c].name, s->models[i].name, NULL, (double)*(const uint64_t *)((const char *)&s->models[i] + counters[c].offset));
    }
    head(b, "vllm:request_success_total", "counter", "Generations that ended, by why.");
    for (size_t i = 0; i < s->n; i++) {
        sample(b, "vllm:request_success_total", s->models[i].name, ",finished_reason=\"stop\"", (double)s->models[i].finished_stop);
        sample(b, "vllm:request_success_total", s->models[i].name, ",finished_reason=\"length\"", (double)s->models[i].finished_length);
    }
    static const struct family {
        const char *name, *help;
        size_t offset;
        const double *bounds;
        size_t n_bounds;
    } families[] = {
        {"vllm:time_to_first_token_seconds", "From the request's arrival to its first token.", offsetof(model_stats, ttft), ttft_bounds,
         sizeof ttft_bounds / sizeof *ttft_bounds},
        {"vllm:time_per_output_token_seconds", "Between tokens after the first (each token: its request's mean).",
         offsetof(model_stats, tpot), tpot_bounds, sizeof tpot_bounds / sizeof *tpot_bounds},
        {"vllm:e2e_request_latency_seconds", "From the request's arrival to its end.", offsetof(model_stats, e2e), e2e_bounds,
         sizeof e2e_bounds / sizeof *e2e_bounds},
    };
    for (size_t f = 0; f < sizeof families / sizeof *families; f++) {
        head(b, families[f].name, "histogram", families[f].help);
        for (size_t i = 0; i < s->n; i++)
            histogram_text(b, families[f].name, s->models[i].name,
                           (const histogram *)((const char *)&s->models[i] + families[f].offset), families[f].bounds, families[f].n_bounds);
    }
    head(b, "sprout_lora_requests_total", "counter", "Generations that applied each LoRA adapter.");
    for (size_t i = 0; i < s->n; i++)
        for (size_t a = 0; a < s->models[i].n_adapters; a++) {
            sp_buf extra = {0};
            put(&extra, ",adapter=\"");
            sp_put_label(&extra, s->models[i].adapters[a].name);
            put(&extra, "\"");
            if (extra.data) sample(b, "sprout_lora_requests_total", s->models[i].name, extra.data, (double)s->models[i].adapters[a].requests);
            free(extra.data);
        }
    pthread_mutex_unlock(&s->mu);
}
