/* sprout bench -m MODEL [-p 512] [-n 128] [-t THREADS] [-r REPS] [--json]
 *
 * llama-bench's two measurements: prefill of a -p token prompt (pp) and
 * decode of -n tokens from an empty context (tg), each repeated -r times
 * (mean and standard deviation), plus model load time, time to first token
 * and peak RSS. Prompts are random token ids, different each repetition, so
 * no cached prefix makes a run look faster than it is. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "commands.h"
#include "sprout.h"

static void usage(FILE *out) {
    fprintf(out,
            "usage: sprout bench -m MODEL.gguf [-p N] [-n N] [-t THREADS] [-r REPS] [--json]\n"
            "  -p, --n-prompt N   prompt tokens for the prefill test (default 512; 0 skips it)\n"
            "  -n, --n-gen N      tokens for the decode test (default 128; 0 skips it)\n"
            "  -t, --threads N    threads (default: one per core)\n"
            "  -r, --reps N       repetitions of each test (default 3)\n"
            "  --json             print one JSON object\n");
}

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
    const char *model_path = NULL;
    long n_prompt = 512, n_gen = 128, threads = 0, reps = 3;
    bool json = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        long *target = NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--json")) {
            json = true;
            continue;
        } else if ((!strcmp(a, "-m") || !strcmp(a, "--model")) && i + 1 < argc) {
            model_path = argv[++i];
            continue;
        } else if (!strcmp(a, "-p") || !strcmp(a, "--n-prompt")) {
            target = &n_prompt;
        } else if (!strcmp(a, "-n") || !strcmp(a, "--n-gen")) {
            target = &n_gen;
        } else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) {
            target = &threads;
        } else if (!strcmp(a, "-r") || !strcmp(a, "--reps")) {
            target = &reps;
        } else {
            fprintf(stderr, "sprout bench: unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        }
        char *end = NULL;
        if (i + 1 >= argc || (*target = strtol(argv[i + 1], &end, 10), *end) || *target < 0 || *target > 1000000) {
            fprintf(stderr, "sprout bench: %s needs a number\n", a);
            return 2;
        }
        i++;
    }
    if (!model_path || reps < 1 || reps > 1000 || (n_prompt == 0 && n_gen == 0)) {
        usage(stderr);
        return 2;
    }
    sprout_model_params mp = {.struct_size = sizeof mp, .n_threads = (int32_t)threads};
    sprout_model *model = NULL;
    if (sprout_model_load(model_path, &mp, &model) != SPROUT_OK) {
        fprintf(stderr, "sprout bench: %s\n", sprout_last_error());
        return 1;
    }
    const int32_t n_vocab = sprout_model_n_vocab(model);
    sprout_pipeline_params pp = {.struct_size = sizeof pp, .n_ctx = (int32_t)(n_prompt + n_gen + 8),
                                 .n_threads = (int32_t)threads};
    sprout_pipeline *p = NULL;
    sprout_status st = sprout_pipeline_create(model, &pp, &p);
    double *pp_rate = calloc((size_t)reps, sizeof *pp_rate), *tg_rate = calloc((size_t)reps, sizeof *tg_rate),
           *ttft = calloc((size_t)reps, sizeof *ttft);
    const int32_t used_threads = sprout_pipeline_n_threads(p);
    /* one untimed warm-up of the full prompt, as llama-bench does: page
     * faults and the first touch of the batch's buffers belong to load, not speed */
    sprout_perf_metrics m;
    if (st == SPROUT_OK) st = run_once(p, n_vocab, n_prompt > 0 ? (int32_t)n_prompt : 1, 1, 999, &m);
    for (long r = 0; st == SPROUT_OK && r < reps; r++) {
        if (n_prompt > 0 && (st = run_once(p, n_vocab, (int32_t)n_prompt, 1, (uint64_t)r + 1, &m)) == SPROUT_OK)
            pp_rate[r] = m.prefill_tokens_per_s;
        /* decode from an (almost) empty context: one prompt token, then n_gen */
        if (st == SPROUT_OK && n_gen > 0 && (st = run_once(p, n_vocab, 1, (int32_t)n_gen, (uint64_t)r + 1000, &m)) == SPROUT_OK) {
            tg_rate[r] = m.decode_tokens_per_s;
            ttft[r] = m.ttft_ms;
        }
    }
    if (st != SPROUT_OK) {
        fprintf(stderr, "sprout bench: %s\n", sprout_last_error());
    } else {
        const stats spp = summarize(pp_rate, (int)reps), stg = summarize(tg_rate, (int)reps), sttft = summarize(ttft, (int)reps);
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        const unsigned long long peak_rss = (unsigned long long)ru.ru_maxrss * 1024ull;
        if (json) {
            printf("{\"model\":\"");
            for (const char *c = model_path; *c; c++) {
                if (*c == '"' || *c == '\\') putchar('\\');
                if ((unsigned char)*c < 0x20) printf("\\u%04x", *c);
                else putchar(*c);
            }
            printf("\",\"threads\":%d,\"reps\":%ld", used_threads, reps);
            if (n_prompt > 0)
                printf(",\"prefill\":{\"n_tokens\":%ld,\"tokens_per_s\":%.3f,\"stddev\":%.3f}", n_prompt, spp.mean, spp.std);
            if (n_gen > 0)
                printf(",\"decode\":{\"n_tokens\":%ld,\"tokens_per_s\":%.3f,\"stddev\":%.3f}", n_gen, stg.mean, stg.std);
            printf(",\"load_ms\":%.3f,\"ttft_ms\":%.3f,\"peak_rss_bytes\":%llu,\"kernels\":\"%s\"}\n",
                   sprout_model_load_ms(model), sttft.mean, peak_rss, sprout_kernels_name());
        } else {
            printf("model    %s\nthreads  %d, kernels %s, %ld repetitions\n", model_path, used_threads,
                   sprout_kernels_name(), reps);
            printf("%-8s %12s %10s\n", "test", "tokens/s", "stddev");
            if (n_prompt > 0) printf("pp%-6ld %12.2f %10.2f\n", n_prompt, spp.mean, spp.std);
            if (n_gen > 0) printf("tg%-6ld %12.2f %10.2f\n", n_gen, stg.mean, stg.std);
            printf("load %.1f ms, time to first token %.1f ms, peak RSS %.1f MiB\n", sprout_model_load_ms(model), sttft.mean,
                   (double)peak_rss / 1048576.0);
        }
    }
    free(pp_rate);
    free(tg_rate);
    free(ttft);
    sprout_pipeline_free(p);
    sprout_model_free(model);
    return st == SPROUT_OK ? 0 : 1;
}
