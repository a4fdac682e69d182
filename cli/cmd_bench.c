/* sprout bench -m MODEL [-p 512] [-n 128] [-t THREADS] [-r REPS] [-np N] [--lora FILE ...] [--json]
 *
 * llama-bench's two measurements: prefill of a -p token prompt (pp) and
 * decode of -n tokens from an empty context (tg), each repeated -r times
 * (mean and standard deviation), plus model load time, time to first token
 * and peak RSS. Prompts are random token ids, different each repetition, so
 * no cached prefix makes a run look faster than it is. -np N adds the
 * scheduler's aggregate decode rate of N streams at once (and of one
 * stream, its baseline), stream i with the i-th adapter when adapters are
 * given (all of them apply to pp and tg). */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "commands.h"
#include "options.h"
#include "sprout.h"

typedef struct bench_options {
    int32_t n_prompt, n_gen, reps, n_streams;
    bool json;
} bench_options;

#define OWN(field) offsetof(bench_options, field)
static const cli_option bench_table[] = {
    CLI_OPT_INT("-p, --n-prompt", "N", OWN(n_prompt), 0, 1000000, "prompt tokens for the prefill test (default 512; 0 skips it)"),
    CLI_OPT_INT("-n, --n-gen", "N", OWN(n_gen), 0, 1000000, "tokens for the decode test (default 128; 0 skips it)"),
    CLI_OPT_INT("-r, --reps", "N", OWN(reps), 1, 1000, "repetitions of each test (default 3)"),
    CLI_OPT_INT("-np, --parallel", "N", OWN(n_streams), 1, 256,
                "also decode -n tokens in N streams at once through the scheduler, and in 1 (stream i takes adapter i)"),
    CLI_OPT_FLAG("--json", OWN(json), "print one JSON object"),
};

static const cli_command bench_command = {
    .name = "bench",
    .needs_model = true,
    .usage = "bench -m MODEL.gguf [-p N] [-n N] [-t THREADS] [-r REPS] [-np N] [--lora FILE] [--json]",
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

/* One generation from n_prompt random ids, assisted as `assist` says
 * (NULL: plain); metrics out. */
static sprout_status run_once(sprout_pipeline *p, int32_t n_vocab, int32_t n_prompt, int32_t n_gen, uint64_t seed,
                              const sprout_generation_config *assist, sprout_perf_metrics *m) {
    sprout_token *ids = random_prompt(n_vocab, n_prompt, seed);
    if (!ids) return SPROUT_ERR_OUT_OF_MEMORY;
    sprout_generation_config cfg = exact_length(n_gen);
    if (assist) {
        cfg.num_assistant_tokens = assist->num_assistant_tokens;
        cfg.min_assistant_tokens = assist->min_assistant_tokens;
        cfg.assistant_confidence_threshold = assist->assistant_confidence_threshold;
        cfg.prompt_lookup = assist->prompt_lookup;
        cfg.max_ngram_size = assist->max_ngram_size;
    }
    sprout_result *r = NULL;
    sprout_status st = sprout_generate_tokens(p, ids, (size_t)n_prompt, &cfg, NULL, NULL, &r);
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

int cmd_bench(int argc, char **argv) {
    cli_common o;
    bench_options b = {.n_prompt = 512, .n_gen = 128, .reps = 3};
    const int status = cli_parse(&bench_command, &o, &b, argc, argv);
    if (status != CLI_CONTINUE) return status;
    if (b.n_prompt == 0 && b.n_gen == 0) return cli_usage_error(&bench_command, "-p 0 and -n 0 leave nothing to measure");
    o.n_ctx = b.n_prompt + b.n_gen + 8;
    sprout_model *model = NULL;
    sprout_pipeline *p = NULL;
    if (cli_open_pipeline(&o, &model, &p) != SPROUT_OK) {
        fprintf(stderr, "sprout bench: %s\n", sprout_last_error());
        return 1;
    }
    const int32_t n_vocab = sprout_model_n_vocab(model);
    sprout_status st = SPROUT_OK;
    double *pp_rate = calloc((size_t)b.reps, sizeof *pp_rate), *tg_rate = calloc((size_t)b.reps, sizeof *tg_rate),
           *ttft = calloc((size_t)b.reps, sizeof *ttft), *as_rate = calloc((size_t)b.reps, sizeof *as_rate);
    const bool assisted = o.cfg.num_assistant_tokens > 0 && b.n_gen > 0;
    long long proposed = 0, accepted = 0, passes = 0, generated = 0;
    const int32_t used_threads = sprout_pipeline_n_threads(p);
    /* one untimed warm-up of the full prompt, as llama-bench does: page
     * faults and the first touch of the batch's buffers belong to load, not speed */
    sprout_perf_metrics m = {.struct_size = sizeof m};
    if (st == SPROUT_OK) st = run_once(p, n_vocab, b.n_prompt > 0 ? b.n_prompt : 1, 1, 999, NULL, &m);
    for (int32_t r = 0; st == SPROUT_OK && r < b.reps; r++) {
        if (b.n_prompt > 0 && (st = run_once(p, n_vocab, b.n_prompt, 1, (uint64_t)r + 1, NULL, &m)) == SPROUT_OK)
            pp_rate[r] = m.prefill_tokens_per_s;
        /* decode from an (almost) empty context: one prompt token, then n_gen */
        if (st == SPROUT_OK && b.n_gen > 0 && (st = run_once(p, n_vocab, 1, b.n_gen, (uint64_t)r + 1000, NULL, &m)) == SPROUT_OK) {
            tg_rate[r] = m.decode_tokens_per_s;
            ttft[r] = m.ttft_ms;
        }
        /* the same decode assisted: the same tokens, in fewer passes */
        if (st == SPROUT_OK && assisted && (st = run_once(p, n_vocab, 1, b.n_gen, (uint64_t)r + 1000, &o.cfg, &m)) == SPROUT_OK) {
            as_rate[r] = m.decode_tokens_per_s;
            proposed += m.n_draft_tokens;
            accepted += m.n_accepted_tokens;
            passes += m.n_decode_passes;
            generated += m.n_generated_tokens - 1;
        }
    }
    stats one = {0, 0}, many = {0, 0};
    if (st == SPROUT_OK && b.n_streams > 0 && b.n_gen > 0) st = bench_streams(&o, model, b.n_streams, b.n_gen, b.reps, &one, &many);
    if (st != SPROUT_OK) {
        fprintf(stderr, "sprout bench: %s\n", sprout_last_error());
    } else {
        const stats spp = summarize(pp_rate, (int)b.reps), stg = summarize(tg_rate, (int)b.reps), sttft = summarize(ttft, (int)b.reps),
                    sas = summarize(as_rate, (int)b.reps);
        const double acceptance = proposed ? (double)accepted / (double)proposed : 0, per_pass = passes ? (double)generated / (double)passes : 0;
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        const unsigned long long peak_rss = (unsigned long long)ru.ru_maxrss * 1024ull;
        /* one name when keys and values share a type (as before), else both */
        char kv_name[16];
        snprintf(kv_name, sizeof kv_name, "%s%s%s", cli_kv_type_name(o.cache_type_k), o.cache_type_k == o.cache_type_v ? "" : "/",
                 o.cache_type_k == o.cache_type_v ? "" : cli_kv_type_name(o.cache_type_v));
        const size_t kv_bytes = sprout_pipeline_kv_bytes_per_token(p);
        if (b.json) {
            printf("{\"model\":\"");
            for (const char *c = o.model; *c; c++) {
                if (*c == '"' || *c == '\\') putchar('\\');
                if ((unsigned char)*c < 0x20) printf("\\u%04x", *c);
                else putchar(*c);
            }
            printf("\",\"threads\":%d,\"kv_type\":\"%s\",\"cache_type_k\":\"%s\",\"cache_type_v\":\"%s\",\"kv_bytes_per_token\":%zu,\"reps\":%d",
                   used_threads, kv_name, cli_kv_type_name(o.cache_type_k), cli_kv_type_name(o.cache_type_v), kv_bytes, b.reps);
            if (b.n_prompt > 0)
                printf(",\"prefill\":{\"n_tokens\":%d,\"tokens_per_s\":%.3f,\"stddev\":%.3f}", b.n_prompt, spp.mean, spp.std);
            if (b.n_gen > 0)
                printf(",\"decode\":{\"n_tokens\":%d,\"tokens_per_s\":%.3f,\"stddev\":%.3f}", b.n_gen, stg.mean, stg.std);
            if (assisted)
                printf(",\"assisted\":{\"method\":\"%s\",\"tokens_per_s\":%.3f,\"stddev\":%.3f,\"speedup\":%.3f,\"proposed\":%lld,"
                       "\"accepted\":%lld,\"acceptance\":%.4f,\"tokens_per_pass\":%.3f}",
                       o.cfg.prompt_lookup ? "lookup" : "draft", sas.mean, sas.std, stg.mean > 0 ? sas.mean / stg.mean : 0, proposed, accepted,
                       acceptance, per_pass);
            if (b.n_streams > 0 && b.n_gen > 0)
                printf(",\"parallel\":{\"streams\":%d,\"n_tokens\":%d,\"adapters\":%zu,\"tokens_per_s\":%.3f,\"stddev\":%.3f,"
                       "\"one_stream_tokens_per_s\":%.3f,\"one_stream_stddev\":%.3f}",
                       b.n_streams, b.n_gen, o.loras.n, many.mean, many.std, one.mean, one.std);
            printf(",\"load_ms\":%.3f,\"ttft_ms\":%.3f,\"peak_rss_bytes\":%llu,\"kernels\":\"%s\"}\n",
                   sprout_model_load_ms(model), sttft.mean, peak_rss, sprout_kernels_name());
        } else {
            printf("model    %s\nthreads  %d, kernels %s, KV cache %s, %d repetitions\n", o.model, used_threads,
                   sprout_kernels_name(), kv_name, b.reps);
            printf("KV cache %zu bytes per token (keys and values, every layer)\n", kv_bytes);
            printf("%-8s %12s %10s\n", "test", "tokens/s", "stddev");
            if (b.n_prompt > 0) printf("pp%-6d %12.2f %10.2f\n", b.n_prompt, spp.mean, spp.std);
            if (b.n_gen > 0) printf("tg%-6d %12.2f %10.2f\n", b.n_gen, stg.mean, stg.std);
            if (assisted)
                printf("tg%-6d %12.2f %10.2f   %s: %.2fx plain, %.1f%% of %lld proposals accepted, %.2f tokens a pass\n", b.n_gen, sas.mean,
                       sas.std, o.cfg.prompt_lookup ? "prompt lookup" : "draft model", stg.mean > 0 ? sas.mean / stg.mean : 0,
                       100 * acceptance, proposed, per_pass);
            if (b.n_streams > 0 && b.n_gen > 0) {
                char name[32];
                snprintf(name, sizeof name, "tg%dx1", b.n_gen);
                printf("%-8s %12.2f %10.2f   scheduler, one stream\n", name, one.mean, one.std);
                snprintf(name, sizeof name, "tg%dx%d", b.n_gen, b.n_streams);
                printf("%-8s %12.2f %10.2f   all streams together (%.2fx one)%s\n", name, many.mean, many.std,
                       one.mean > 0 ? many.mean / one.mean : 0, o.loras.n ? ", stream i with adapter i" : "");
            }
            printf("load %.1f ms, time to first token %.1f ms, peak RSS %.1f MiB\n", sprout_model_load_ms(model), sttft.mean,
                   (double)peak_rss / 1048576.0);
        }
    }
    free(pp_rate);
    free(tg_rate);
    free(as_rate);
    free(ttft);
    cli_close_pipeline(&o, model, p);
    return st == SPROUT_OK ? 0 : 1;
}
