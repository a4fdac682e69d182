/* sprout bench -m MODEL [-p 512] [-n 128] [-d 0,4096] [-t THREADS] [-r REPS] [-np N] [--lora FILE ...] [--json]
 *
 * llama-bench's two measurements: prefill of a -p token prompt (pp) and
 * decode of -n tokens (tg), each repeated -r times (mean and standard
 * deviation), plus model load time, time to first token and peak RSS.
 * Prompts are random token ids, different each repetition, so no cached
 * prefix makes a run look faster than it is. At a depth -d N (llama-bench's
 * -d) the cache first holds N random tokens, put there untimed once, and
 * pp and tg run after them (the pipeline keeps that prefix from one call to
 * the next). Each decode also reports attention's share of its steps (the
 * forward pass's own clock, sprout_perf_metrics) and its memory roofline:
 * the weight bytes a token reads times tokens/s over the read bandwidth
 * that the same threads get from a buffer well above the cache (with
 * --roofline: reading a GiB or more takes a while, under valgrind or an
 * emulator very long). -np N adds
 * the scheduler's aggregate decode rate of N streams at once (and of one
 * stream, its baseline), stream i with the i-th adapter when adapters are
 * given (all of them apply to pp and tg). */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "commands.h"
#include "options.h"
#include "page_sizes.h"
#include "read_bandwidth.h"
#include "sprout.h"
#include "weight_reads.h"

enum { MAX_DEPTHS = 16, MAX_DEPTH = 1000000 };

typedef struct bench_depths {
    int32_t value[MAX_DEPTHS];
    int n;
} bench_depths;

typedef struct bench_options {
    int32_t n_prompt, n_gen, reps, n_streams, roofline_mib;
    bench_depths depths;
    bool json, roofline;
} bench_options;

/* "0,4096": each a whole number of cached tokens, as llama-bench's -d takes them. */
static bool parse_depths(const char *value, void *dst, char *why, size_t why_size) {
    bench_depths *d = dst;
    d->n = 0;
    for (const char *c = value;; c++) {
        char *end;
        errno = 0;
        const long v = strtol(c, &end, 10);
        if (errno || end == c || *c == '-' || *c == '+' || v > MAX_DEPTH || (*end && *end != ',')) {
            snprintf(why, why_size, "must be whole numbers from 0 to %d, comma-separated", MAX_DEPTH);
            return false;
        }
        if (d->n == MAX_DEPTHS) {
            snprintf(why, why_size, "at most %d depths", MAX_DEPTHS);
            return false;
        }
        d->value[d->n++] = (int32_t)v;
        if (!*end) return true;
        c = end;
    }
}

#define OWN(field) offsetof(bench_options, field)
static const cli_option bench_table[] = {
    CLI_OPT_INT("-p, --n-prompt", "N", OWN(n_prompt), 0, 1000000, "prompt tokens for the prefill test (default 512; 0 skips it)"),
    CLI_OPT_INT("-n, --n-gen", "N", OWN(n_gen), 0, 1000000, "tokens for the decode test (default 128; 0 skips it)"),
    CLI_OPT_CUSTOM("-d, --depth, --n-depth", "N[,N...]", OWN(depths), parse_depths,
                   "run pp and tg after N tokens already in the KV cache, for each N (default 0)"),
    CLI_OPT_INT("-r, --reps", "N", OWN(reps), 1, 1000, "repetitions of each test (default 3)"),
    CLI_OPT_FLAG("--roofline", OWN(roofline),
                 "also measure the memory read bandwidth (a buffer of 4x the last-level cache, at least 1 GiB) and decode's share of it"),
    CLI_OPT_INT("--roofline-mib", "N", OWN(roofline_mib), 1, 1 << 20, "--roofline with a buffer of N MiB"),
    CLI_OPT_INT("-np, --parallel", "N", OWN(n_streams), 1, 256,
                "also decode -n tokens in N streams at once through the scheduler, and in 1 (stream i takes adapter i)"),
    CLI_OPT_FLAG("--json", OWN(json), "print one JSON object"),
};

static const cli_command bench_command = {
    .name = "bench",
    .needs_model = true,
    .usage = "bench -m MODEL.gguf [-p N] [-n N] [-d N,...] [-t THREADS] [-r REPS] [-np N] [--lora FILE] [--json]",
    .shared = CLI_SHARED_MODEL | CLI_SHARED_THREADS | CLI_SHARED_BATCH | CLI_SHARED_KV | CLI_SHARED_LORA | CLI_SHARED_ASSIST,
    CLI_TABLE(bench_table),
};

typedef struct stats {
    double mean, std;
} stats;

static stats summarize(const double *v, int n) {
    stats s = {0, 0};
    for (int i = 0; i < n; i++) s.mean += v[i] / n;
    for (int i = 0; i < n; i++) s.std += (v[i] - s.mean) * (v[i] - s.mean);
    s.std = n > 1 ? sqrt(s.std / (n - 1)) : 0;
    return s;
}

static uint64_t rng_next(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* n random ids (malloc'd), a different draw for each seed. */
static sprout_token *random_prompt(int32_t n_vocab, int32_t n, uint64_t seed) {
    sprout_token *ids = malloc((size_t)(n > 0 ? n : 1) * sizeof *ids);
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    for (int32_t i = 0; ids && i < n; i++) ids[i] = (sprout_token)(rng_next(&s) % (uint64_t)n_vocab);
    return ids;
}

/* Greedy, exactly n_gen tokens whatever is sampled. */
static sprout_generation_config exact_length(int32_t n_gen) {
    sprout_generation_config cfg;
    sprout_generation_config_init(&cfg);
    cfg.max_new_tokens = n_gen;
    cfg.min_new_tokens = n_gen;
    cfg.ignore_eos = true;
    cfg.temperature = 0;
    return cfg;
}

/* One generation of n_gen tokens from a prompt of `depth` ids of
 * `context` (the cache holds them after the first call) and n_new random
 * ids after them, assisted as `assist` says (NULL: plain); metrics out. */
static sprout_status run_once(sprout_pipeline *p, const sprout_token *context, int32_t depth, int32_t n_vocab, int32_t n_new,
                              int32_t n_gen, uint64_t seed, const sprout_generation_config *assist, sprout_perf_metrics *m) {
    sprout_token *ids = random_prompt(n_vocab, depth + n_new, seed);
    if (!ids) return SPROUT_ERR_OUT_OF_MEMORY;
    if (depth > 0) memcpy(ids, context, (size_t)depth * sizeof *ids);
    sprout_generation_config cfg = exact_length(n_gen);
    if (assist) {
        cfg.num_assistant_tokens = assist->num_assistant_tokens;
        cfg.min_assistant_tokens = assist->min_assistant_tokens;
        cfg.assistant_confidence_threshold = assist->assistant_confidence_threshold;
        cfg.prompt_lookup = assist->prompt_lookup;
        cfg.max_ngram_size = assist->max_ngram_size;
    }
    sprout_result *r = NULL;
    sprout_status st = sprout_generate_tokens(p, ids, (size_t)(depth + n_new), &cfg, NULL, NULL, &r);
    if (st == SPROUT_OK) st = sprout_result_metrics(r, m);
    sprout_result_free(r);
    free(ids);
    return st;
}

/* Tokens per second of n_streams generations of n_gen tokens at once, from
 * one random token each, counted from submission to the last one's end. */
static sprout_status run_streams(sprout_scheduler *s, const cli_loras *loras, int32_t n_vocab, int32_t n_streams, int32_t n_gen,
                                 uint64_t seed, double *rate) {
    sprout_request *req[256] = {0};
    sprout_lora_use use[256];
    sprout_status st = SPROUT_OK;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int32_t i = 0; st == SPROUT_OK && i < n_streams; i++) {
        sprout_generation_config cfg = exact_length(n_gen);
        if (loras->n) {
            use[i] = (sprout_lora_use){loras->loaded[(size_t)i % loras->n], loras->scale[(size_t)i % loras->n]};
            cfg.lora = &use[i];
            cfg.n_lora = 1;
        }
        sprout_token *ids = random_prompt(n_vocab, 1, seed + (uint64_t)i);
        if (!ids) return SPROUT_ERR_OUT_OF_MEMORY;
        sprout_request_params rp = {.struct_size = sizeof rp, .prompt = ids, .n_prompt = 1, .config = &cfg};
        st = sprout_scheduler_submit(s, &rp, &req[i]);
        free(ids);
    }
    for (int32_t i = 0; i < n_streams; i++) {
        sprout_result *r = NULL;
        if (req[i] && st == SPROUT_OK) st = sprout_request_wait(req[i], &r);
        sprout_result_free(r);
        sprout_request_free(req[i]);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    const double seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    *rate = seconds > 0 ? (double)n_streams * n_gen / seconds : 0;
    return st;
}

/* The aggregate decode rate of 1 and of n_streams streams, -r times each. */
static sprout_status bench_streams(const cli_common *o, const sprout_model *model, int32_t n_streams, int32_t n_gen, int32_t reps,
                                   stats *one, stats *many) {
    sprout_scheduler_params sp = {.struct_size = sizeof sp, .n_slots = n_streams, .n_ctx = n_gen + 8, .n_batch = o->n_batch,
                                  .n_threads = o->n_threads, .kv_type = o->kv_type, .kv_type_set = o->kv_type_set, CLI_KV_SIDES(o)};
    sprout_scheduler *s = NULL;
    sprout_status st = sprout_scheduler_create(model, &sp, &s);
    double *r1 = calloc((size_t)reps, sizeof *r1), *rn = calloc((size_t)reps, sizeof *rn), warm;
    if (st == SPROUT_OK && (!r1 || !rn)) st = SPROUT_ERR_OUT_OF_MEMORY;
    const int32_t n_vocab = sprout_model_n_vocab(model);
    if (st == SPROUT_OK) st = run_streams(s, &o->loras, n_vocab, n_streams, 4, 7, &warm);
    for (int32_t r = 0; st == SPROUT_OK && r < reps; r++) {
        st = run_streams(s, &o->loras, n_vocab, 1, n_gen, 100 + (uint64_t)r * 512, &r1[r]);
        if (st == SPROUT_OK) st = run_streams(s, &o->loras, n_vocab, n_streams, n_gen, 200 + (uint64_t)r * 512, &rn[r]);
    }
    if (st == SPROUT_OK) {
        *one = summarize(r1, (int)reps);
        *many = summarize(rn, (int)reps);
    }
    free(r1);
    free(rn);
    sprout_scheduler_free(s);
    return st;
}

/* One depth's figures, over the repetitions. */
typedef struct depth_result {
    int32_t depth;
    stats pp, tg, ttft, assisted;
    stats attention; /* attention's share of a decode step, 0..1 */
    long long proposed, accepted, passes, generated;
} depth_result;

/* Attention's share of the decode steps of one generation: the forward
 * pass's attention clock over the time between tokens. */
static double attention_share(const sprout_perf_metrics *m) {
    const double steps_ms = m->tpot_mean_ms * (m->n_generated_tokens - 1);
    return steps_ms > 0 ? m->decode_attention_ms / steps_ms : 0;
}

/* pp and tg (and assisted tg) after `depth` random tokens, which go into
 * the cache once, untimed; each repetition then reuses them. */
static sprout_status measure_depth(sprout_pipeline *p, const cli_common *o, const bench_options *b, int32_t n_vocab, int32_t depth,
                                   depth_result *out) {
    const int32_t reps = b->reps;
    const bool assisted = o->cfg.num_assistant_tokens > 0 && b->n_gen > 0;
    double *v = calloc((size_t)reps * 5, sizeof *v);
    sprout_token *context = random_prompt(n_vocab, depth, 31 + (uint64_t)depth);
    sprout_status st = v && context ? SPROUT_OK : SPROUT_ERR_OUT_OF_MEMORY;
    double *pp = v, *tg = v + reps, *ttft = v + 2 * reps, *as = v + 3 * reps, *attention = v + 4 * reps;
    sprout_perf_metrics m = {.struct_size = sizeof m};
    *out = (depth_result){.depth = depth};
    if (st == SPROUT_OK && depth > 0) st = run_once(p, context, depth, n_vocab, 0, 1, 0, NULL, &m);
    for (int32_t r = 0; st == SPROUT_OK && r < reps; r++) {
        if (b->n_prompt > 0 && (st = run_once(p, context, depth, n_vocab, b->n_prompt, 1, (uint64_t)r + 1, NULL, &m)) == SPROUT_OK)
            pp[r] = m.prefill_tokens_per_s;
        /* decode after the context and one more token */
        if (st == SPROUT_OK && b->n_gen > 0 &&
            (st = run_once(p, context, depth, n_vocab, 1, b->n_gen, (uint64_t)r + 1000, NULL, &m)) == SPROUT_OK) {
            tg[r] = m.decode_tokens_per_s;
            ttft[r] = m.ttft_ms;
            attention[r] = attention_share(&m);
        }
        /* the same decode assisted: the same tokens, in fewer passes */
        if (st == SPROUT_OK && assisted &&
            (st = run_once(p, context, depth, n_vocab, 1, b->n_gen, (uint64_t)r + 1000, &o->cfg, &m)) == SPROUT_OK) {
            as[r] = m.decode_tokens_per_s;
            out->proposed += m.n_draft_tokens;
            out->accepted += m.n_accepted_tokens;
            out->passes += m.n_decode_passes;
            out->generated += m.n_generated_tokens - 1;
        }
    }
    if (st == SPROUT_OK) {
        out->pp = summarize(pp, (int)reps);
        out->tg = summarize(tg, (int)reps);
        out->ttft = summarize(ttft, (int)reps);
        out->assisted = summarize(as, (int)reps);
        out->attention = summarize(attention, (int)reps);
    }
    free(v);
    free(context);
    return st;
}

/* What decode's figures are held against: the weight bytes a token reads
 * and the read bandwidth (gb_per_s 0 when not measured). */
typedef struct roofline {
    uint64_t weight_bytes;
    size_t kv_bytes_per_token;
    cli_read_bandwidth read;
} roofline;

/* The fraction of the read bandwidth that decode at `rate` tokens/s uses
 * for the weights, and with the cache's rows too: a step at depth d reads
 * about d + n_gen / 2 cached tokens' keys and values. */
static double roofline_fraction(const roofline *rl, double rate, double kv_tokens) {
    if (rl->read.gb_per_s <= 0) return 0;
    return ((double)rl->weight_bytes + (double)rl->kv_bytes_per_token * kv_tokens) * rate / (rl->read.gb_per_s * 1e9);
}

static void print_json_string(const char *s) {
    putchar('"');
    for (const char *c = s; *c; c++) {
        if (*c == '"' || *c == '\\') putchar('\\');
        if ((unsigned char)*c < 0x20) printf("\\u%04x", *c);
        else putchar(*c);
    }
    putchar('"');
}

/* decode's fields after tokens_per_s and stddev, shared by "decode" and "by_depth" */
static void print_json_decode_extra(const depth_result *d, const bench_options *b, const roofline *rl) {
    const double kv_tokens = d->depth + b->n_gen / 2.0;
    printf(",\"attention_share\":%.4f", d->attention.mean);
    if (rl->read.gb_per_s > 0)
        printf(",\"roofline\":%.6f,\"roofline_with_kv\":%.6f", roofline_fraction(rl, d->tg.mean, 0),
               roofline_fraction(rl, d->tg.mean, kv_tokens));
}

static void print_json(const cli_common *o, const bench_options *b, const sprout_model *model, int32_t threads, const char *kv_name,
                       const depth_result *res, const roofline *rl, const stats *one, const stats *many, unsigned long long peak_rss,
                       double huge_share) {
    const depth_result *d0 = &res[0];
    const bool assisted = o->cfg.num_assistant_tokens > 0 && b->n_gen > 0;
    printf("{\"model\":");
    print_json_string(o->model);
    printf(",\"threads\":%d,\"kv_type\":\"%s\",\"cache_type_k\":\"%s\",\"cache_type_v\":\"%s\",\"kv_bytes_per_token\":%zu,\"reps\":%d",
           threads, kv_name, cli_kv_type_name(o->cache_type_k), cli_kv_type_name(o->cache_type_v), rl->kv_bytes_per_token, b->reps);
    printf(",\"weight_bytes_per_token\":%llu", (unsigned long long)rl->weight_bytes);
    if (rl->read.gb_per_s > 0)
        printf(",\"read_bandwidth\":{\"gb_per_s\":%.3f,\"bytes\":%zu,\"threads\":%d,\"loop\":\"%s\"}", rl->read.gb_per_s, rl->read.bytes,
               rl->read.n_threads, rl->read.loop);
    if (b->n_prompt > 0)
        printf(",\"prefill\":{\"n_tokens\":%d,\"depth\":%d,\"tokens_per_s\":%.3f,\"stddev\":%.3f}", b->n_prompt, d0->depth, d0->pp.mean,
               d0->pp.std);
    if (b->n_gen > 0) {
        printf(",\"decode\":{\"n_tokens\":%d,\"depth\":%d,\"tokens_per_s\":%.3f,\"stddev\":%.3f", b->n_gen, d0->depth, d0->tg.mean, d0->tg.std);
        print_json_decode_extra(d0, b, rl);
        putchar('}');
    }
    /* every depth, flat objects: prefill (pp_) and decode (tg_) side by side */
    printf(",\"by_depth\":[");
    for (int i = 0; i < b->depths.n; i++) {
        const depth_result *d = &res[i];
        printf("%s{\"depth\":%d", i ? "," : "", d->depth);
        if (b->n_prompt > 0) printf(",\"pp_tokens_per_s\":%.3f,\"pp_stddev\":%.3f", d->pp.mean, d->pp.std);
        if (b->n_gen > 0) {
            printf(",\"tg_tokens_per_s\":%.3f,\"tg_stddev\":%.3f", d->tg.mean, d->tg.std);
            print_json_decode_extra(d, b, rl);
        }
        putchar('}');
    }
    putchar(']');
    if (assisted) {
        const double acceptance = d0->proposed ? (double)d0->accepted / (double)d0->proposed : 0,
                     per_pass = d0->passes ? (double)d0->generated / (double)d0->passes : 0;
        printf(",\"assisted\":{\"method\":\"%s\",\"tokens_per_s\":%.3f,\"stddev\":%.3f,\"speedup\":%.3f,\"proposed\":%lld,"
               "\"accepted\":%lld,\"acceptance\":%.4f,\"tokens_per_pass\":%.3f}",
               o->cfg.prompt_lookup ? "lookup" : "draft", d0->assisted.mean, d0->assisted.std,
               d0->tg.mean > 0 ? d0->assisted.mean / d0->tg.mean : 0, d0->proposed, d0->accepted, acceptance, per_pass);
    }
    if (b->n_streams > 0 && b->n_gen > 0)
        printf(",\"parallel\":{\"streams\":%d,\"n_tokens\":%d,\"adapters\":%zu,\"tokens_per_s\":%.3f,\"stddev\":%.3f,"
               "\"one_stream_tokens_per_s\":%.3f,\"one_stream_stddev\":%.3f}",
               b->n_streams, b->n_gen, o->loras.n, many->mean, many->std, one->mean, one->std);
    printf(",\"load_ms\":%.3f,\"ttft_ms\":%.3f,\"peak_rss_bytes\":%llu,\"huge_page_share\":%.3f,\"kernels\":\"%s\"}\n",
           sprout_model_load_ms(model), d0->ttft.mean, peak_rss, huge_share, sprout_kernels_name());
}

static void print_text(const cli_common *o, const bench_options *b, const sprout_model *model, int32_t threads, const char *kv_name,
                       const depth_result *res, const roofline *rl, const stats *one, const stats *many, unsigned long long peak_rss,
                       double huge_share) {
    const bool assisted = o->cfg.num_assistant_tokens > 0 && b->n_gen > 0;
    printf("model    %s\nthreads  %d, kernels %s, KV cache %s, %d repetitions\n", o->model, threads, sprout_kernels_name(), kv_name, b->reps);
    printf("KV cache %zu bytes per token (keys and values, every layer)\n", rl->kv_bytes_per_token);
    printf("weights  %.2f MiB read per decoded token\n", (double)rl->weight_bytes / 1048576.0);
    if (rl->read.gb_per_s > 0)
        printf("memory   %.2f GB/s read (%.0f MiB, %d threads, %s loads, best pass)\n", rl->read.gb_per_s,
               (double)rl->read.bytes / 1048576.0, rl->read.n_threads, rl->read.loop);
    printf("%-16s %12s %10s %10s", "test", "tokens/s", "stddev", "attention");
    if (rl->read.gb_per_s > 0) printf(" %10s %10s", "roofline", "+KV");
    putchar('\n');
    for (int i = 0; i < b->depths.n; i++) {
        const depth_result *d = &res[i];
        char at[24] = "", name[48];
        if (d->depth > 0) snprintf(at, sizeof at, " @ d%d", d->depth);
        if (b->n_prompt > 0) {
            snprintf(name, sizeof name, "pp%d%s", b->n_prompt, at);
            printf("%-16s %12.2f %10.2f\n", name, d->pp.mean, d->pp.std);
        }
        if (b->n_gen > 0) {
            snprintf(name, sizeof name, "tg%d%s", b->n_gen, at);
            printf("%-16s %12.2f %10.2f %9.1f%%", name, d->tg.mean, d->tg.std, 100 * d->attention.mean);
            if (rl->read.gb_per_s > 0)
                printf(" %9.1f%% %9.1f%%", 100 * roofline_fraction(rl, d->tg.mean, 0),
                       100 * roofline_fraction(rl, d->tg.mean, d->depth + b->n_gen / 2.0));
            putchar('\n');
        }
        if (assisted) {
            const double acceptance = d->proposed ? (double)d->accepted / (double)d->proposed : 0,
                         per_pass = d->passes ? (double)d->generated / (double)d->passes : 0;
            printf("%-16s %12.2f %10.2f   %s: %.2fx plain, %.1f%% of %lld proposals accepted, %.2f tokens a pass\n", name, d->assisted.mean,
                   d->assisted.std, o->cfg.prompt_lookup ? "prompt lookup" : "draft model",
                   d->tg.mean > 0 ? d->assisted.mean / d->tg.mean : 0, 100 * acceptance, d->proposed, per_pass);
        }
    }
    if (b->n_streams > 0 && b->n_gen > 0) {
        char name[32];
        snprintf(name, sizeof name, "tg%dx1", b->n_gen);
        printf("%-16s %12.2f %10.2f   scheduler, one stream\n", name, one->mean, one->std);
        snprintf(name, sizeof name, "tg%dx%d", b->n_gen, b->n_streams);
        printf("%-16s %12.2f %10.2f   all streams together (%.2fx one)%s\n", name, many->mean, many->std,
               one->mean > 0 ? many->mean / one->mean : 0, o->loras.n ? ", stream i with adapter i" : "");
    }
    printf("load %.1f ms, time to first token %.1f ms, peak RSS %.1f MiB", sprout_model_load_ms(model), res[0].ttft.mean,
           (double)peak_rss / 1048576.0);
    if (huge_share >= 0) printf(", mapped file pages in 2 MiB pages %.0f%%", 100 * huge_share);
    printf("\n");
}

int cmd_bench(int argc, char **argv) {
    cli_common o;
    bench_options b = {.n_prompt = 512, .n_gen = 128, .reps = 3, .depths = {.value = {0}, .n = 1}};
    const int status = cli_parse(&bench_command, &o, &b, argc, argv);
    if (status != CLI_CONTINUE) return status;
    if (b.n_prompt == 0 && b.n_gen == 0) return cli_usage_error(&bench_command, "-p 0 and -n 0 leave nothing to measure");
    int32_t max_depth = 0;
    for (int i = 0; i < b.depths.n; i++)
        if (b.depths.value[i] > max_depth) max_depth = b.depths.value[i];
    o.n_ctx = max_depth + b.n_prompt + b.n_gen + 8;
    sprout_model *model = NULL;
    sprout_pipeline *p = NULL;
    if (cli_open_pipeline(&o, &model, &p) != SPROUT_OK) {
        fprintf(stderr, "sprout bench: %s\n", sprout_last_error());
        return 1;
    }
    const int32_t n_vocab = sprout_model_n_vocab(model);
    const int32_t used_threads = sprout_pipeline_n_threads(p);
    depth_result res[MAX_DEPTHS];
    roofline rl = {.kv_bytes_per_token = sprout_pipeline_kv_bytes_per_token(p)};
    cli_weight_reads reads;
    cli_weight_reads_of(sprout_model_gguf(model), &reads);
    rl.weight_bytes = reads.active_bytes;
    /* one untimed warm-up of the full prompt, as llama-bench does: page
     * faults and the first touch of the batch's buffers belong to load, not speed */
    sprout_perf_metrics m = {.struct_size = sizeof m};
    sprout_status st = run_once(p, NULL, 0, n_vocab, b.n_prompt > 0 ? b.n_prompt : 1, 1, 999, NULL, &m);
    for (int i = 0; st == SPROUT_OK && i < b.depths.n; i++) st = measure_depth(p, &o, &b, n_vocab, b.depths.value[i], &res[i]);
    stats one = {0, 0}, many = {0, 0};
    if (st == SPROUT_OK && b.n_streams > 0 && b.n_gen > 0) st = bench_streams(&o, model, b.n_streams, b.n_gen, b.reps, &one, &many);
    /* peak RSS before the read test, whose buffer is none of the model's */
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    const unsigned long long peak_rss = (unsigned long long)ru.ru_maxrss * 1024ull;
    const double huge_share = cli_file_huge_page_share();
    const size_t read_bytes = b.roofline_mib > 0 ? (size_t)b.roofline_mib << 20 : cli_read_bandwidth_default_bytes();
    if (st == SPROUT_OK && b.n_gen > 0 && (b.roofline || b.roofline_mib > 0) &&
        !cli_measure_read_bandwidth(read_bytes, used_threads, 5, &rl.read))
        fprintf(stderr, "sprout bench: no read-bandwidth test (%s)\n", strerror(errno));
    if (st != SPROUT_OK) {
        fprintf(stderr, "sprout bench: %s\n", sprout_last_error());
    } else {
        /* one name when keys and values share a type (as before), else both */
        char kv_name[16];
        snprintf(kv_name, sizeof kv_name, "%s%s%s", cli_kv_type_name(o.cache_type_k), o.cache_type_k == o.cache_type_v ? "" : "/",
                 o.cache_type_k == o.cache_type_v ? "" : cli_kv_type_name(o.cache_type_v));
        if (b.json) print_json(&o, &b, model, used_threads, kv_name, res, &rl, &one, &many, peak_rss, huge_share);
        else print_text(&o, &b, model, used_threads, kv_name, res, &rl, &one, &many, peak_rss, huge_share);
    }
    cli_close_pipeline(&o, model, p);
    return st == SPROUT_OK ? 0 : 1;
}
