/* sprout bench -m MODEL [-p 512] [-n 128] [-t THREADS] [-r REPS] [--json]
 *
 * llama-bench's two measurements: prefill of a -p token prompt (pp) and
 * decode of -n tokens from an empty context (tg), each repeated -r times
 * (mean and standard deviation), plus model load time, time to first token
 * and peak RSS. Prompts are random token ids, different each repetition, so
 * no cached prefix makes a run look faster than it is. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "commands.h"
#include "options.h"
#include "sprout.h"

typedef struct bench_options {
    int32_t n_prompt, n_gen, reps;
    bool json;
} bench_options;

#define OWN(field) offsetof(bench_options, field)
static const cli_option bench_table[] = {
    CLI_OPT_INT("-p, --n-prompt", "N", OWN(n_prompt), 0, 1000000, "prompt tokens for the prefill test (default 512; 0 skips it)"),
    CLI_OPT_INT("-n, --n-gen", "N", OWN(n_gen), 0, 1000000, "tokens for the decode test (default 128; 0 skips it)"),
    CLI_OPT_INT("-r, --reps", "N", OWN(reps), 1, 1000, "repetitions of each test (default 3)"),
    CLI_OPT_FLAG("--json", OWN(json), "print one JSON object"),
};

static const cli_command bench_command = {
    .name = "bench",
    .needs_model = true,
    .usage = "bench -m MODEL.gguf [-p N] [-n N] [-t THREADS] [-r REPS] [--json]",
    .shared = CLI_SHARED_MODEL | CLI_SHARED_THREADS | CLI_SHARED_BATCH | CLI_SHARED_KV,
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

/* One generation from n_prompt random ids; metrics out. */
static sprout_status run_once(sprout_pipeline *p, int32_t n_vocab, int32_t n_prompt, int32_t n_gen, uint64_t seed,
                              sprout_perf_metrics *m) {
    sprout_token *ids = malloc((size_t)(n_prompt > 0 ? n_prompt : 1) * sizeof *ids);
    if (!ids) return SPROUT_ERR_OUT_OF_MEMORY;
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    for (int32_t i = 0; i < n_prompt; i++) ids[i] = (sprout_token)(rng_next(&s) % (uint64_t)n_vocab);
    sprout_generation_config cfg;
    sprout_generation_config_init(&cfg);
    cfg.max_new_tokens = n_gen;
    cfg.min_new_tokens = n_gen;
    cfg.ignore_eos = true;
    cfg.temperature = 0;
    sprout_result *r = NULL;
    sprout_status st = sprout_generate_tokens(p, ids, (size_t)n_prompt, &cfg, NULL, NULL, &r);
    if (st == SPROUT_OK) st = sprout_result_metrics(r, m);
    sprout_result_free(r);
    free(ids);
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
           *ttft = calloc((size_t)b.reps, sizeof *ttft);
    const int32_t used_threads = sprout_pipeline_n_threads(p);
    /* one untimed warm-up of the full prompt, as llama-bench does: page
     * faults and the first touch of the batch's buffers belong to load, not speed */
    sprout_perf_metrics m;
    if (st == SPROUT_OK) st = run_once(p, n_vocab, b.n_prompt > 0 ? b.n_prompt : 1, 1, 999, &m);
    for (int32_t r = 0; st == SPROUT_OK && r < b.reps; r++) {
        if (b.n_prompt > 0 && (st = run_once(p, n_vocab, b.n_prompt, 1, (uint64_t)r + 1, &m)) == SPROUT_OK)
            pp_rate[r] = m.prefill_tokens_per_s;
        /* decode from an (almost) empty context: one prompt token, then n_gen */
        if (st == SPROUT_OK && b.n_gen > 0 && (st = run_once(p, n_vocab, 1, b.n_gen, (uint64_t)r + 1000, &m)) == SPROUT_OK) {
            tg_rate[r] = m.decode_tokens_per_s;
            ttft[r] = m.ttft_ms;
        }
    }
    if (st != SPROUT_OK) {
        fprintf(stderr, "sprout bench: %s\n", sprout_last_error());
    } else {
        const stats spp = summarize(pp_rate, (int)b.reps), stg = summarize(tg_rate, (int)b.reps), sttft = summarize(ttft, (int)b.reps);
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        const unsigned long long peak_rss = (unsigned long long)ru.ru_maxrss * 1024ull;
        if (b.json) {
            printf("{\"model\":\"");
            for (const char *c = o.model; *c; c++) {
                if (*c == '"' || *c == '\\') putchar('\\');
                if ((unsigned char)*c < 0x20) printf("\\u%04x", *c);
                else putchar(*c);
            }
            printf("\",\"threads\":%d,\"kv_type\":\"%s\",\"reps\":%d", used_threads, cli_kv_type_name(o.kv_type), b.reps);
            if (b.n_prompt > 0)
                printf(",\"prefill\":{\"n_tokens\":%d,\"tokens_per_s\":%.3f,\"stddev\":%.3f}", b.n_prompt, spp.mean, spp.std);
            if (b.n_gen > 0)
                printf(",\"decode\":{\"n_tokens\":%d,\"tokens_per_s\":%.3f,\"stddev\":%.3f}", b.n_gen, stg.mean, stg.std);
            printf(",\"load_ms\":%.3f,\"ttft_ms\":%.3f,\"peak_rss_bytes\":%llu,\"kernels\":\"%s\"}\n",
                   sprout_model_load_ms(model), sttft.mean, peak_rss, sprout_kernels_name());
        } else {
            printf("model    %s\nthreads  %d, kernels %s, KV cache %s, %d repetitions\n", o.model, used_threads,
                   sprout_kernels_name(), cli_kv_type_name(o.kv_type), b.reps);
            printf("%-8s %12s %10s\n", "test", "tokens/s", "stddev");
            if (b.n_prompt > 0) printf("pp%-6d %12.2f %10.2f\n", b.n_prompt, spp.mean, spp.std);
            if (b.n_gen > 0) printf("tg%-6d %12.2f %10.2f\n", b.n_gen, stg.mean, stg.std);
            printf("load %.1f ms, time to first token %.1f ms, peak RSS %.1f MiB\n", sprout_model_load_ms(model), sttft.mean,
                   (double)peak_rss / 1048576.0);
        }
    }
    free(pp_rate);
    free(tg_rate);
    free(ttft);
    cli_close_pipeline(&o, model, p);
    return st == SPROUT_OK ? 0 : 1;
}
