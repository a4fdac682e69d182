/* sprout quantize IN.gguf OUT.gguf TYPE [options]
 *
 * Converts a model to a tensor type or one of llama.cpp's named mixes. On a
 * terminal a progress line shows tensor i/N, throughput and the time left;
 * Ctrl-C stops cleanly and leaves no output file behind. */
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "options.h"
#include "sprout.h"

static volatile sig_atomic_t interrupted;

static void on_signal(int sig) {
    (void)sig;
    interrupted = 1;
}

/* "2G", "500M", "1024": bytes, powers of 1024 as llama.cpp's gguf-split reads them. */
static bool parse_size(const char *s, void *dst, char *why, size_t why_size) {
    uint64_t *out = dst;
    snprintf(why, why_size, "must be a size such as 2G or 500M");
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || v <= 0) return false;
    double scale = 1;
    switch (*end) {
    case 'k': case 'K': scale = 1024.0; end++; break;
    case 'm': case 'M': scale = 1024.0 * 1024; end++; break;
    case 'g': case 'G': scale = 1024.0 * 1024 * 1024; end++; break;
    case 't': case 'T': scale = 1024.0 * 1024 * 1024 * 1024; end++; break;
    }
    if (*end == 'B' || *end == 'b') end++;
    if (*end || v * scale > 1.8e19) return false;
    *out = (uint64_t)(v * scale);
    return *out > 0;
}

#define PARAM(field) offsetof(sprout_quantize_params, field)
static const cli_option quantize_table[] = {
    CLI_OPT_FLAG("--pure", PARAM(pure), "use TYPE for every matrix: no mix"),
    CLI_OPT_CUSTOM("--output-type", "T", PARAM(output_type), cli_parse_tensor_type, "tensor type for output.weight (e.g. Q8_0, F16)"),
    CLI_OPT_CUSTOM("--token-embedding-type", "T", PARAM(token_embedding_type), cli_parse_tensor_type, "tensor type for token_embd.weight"),
    CLI_OPT_FLAG("--leave-output-tensor", PARAM(leave_output_tensor), "copy output.weight unchanged"),
    CLI_OPT_CUSTOM("--split-max-size", "SIZE", PARAM(split_max_bytes), parse_size, "write parts of at most SIZE bytes (K, M, G suffixes)"),
    CLI_OPT_STRING("--imatrix", "FILE", PARAM(imatrix_path),
                   "importance matrix (llama-imatrix's GGUF or .dat) for the IQ1/IQ2/IQ3 types"),
};

static const cli_command quantize_command = {
    .name = "quantize",
    .usage = "quantize IN.gguf OUT.gguf TYPE [options]",
    .about = "  TYPE: F32 F16 BF16 Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q2_K Q3_K_S Q3_K_M Q3_K_L\n"
             "        Q4_K_S Q4_K_M Q5_K_S Q5_K_M Q6_K IQ4_NL IQ4_XS TQ1_0 TQ2_0 MXFP4_MOE\n"
             "        IQ3_S IQ3_M IQ3_XS, and with --imatrix FILE also IQ3_XXS IQ2_M IQ2_S\n"
             "        IQ2_XS IQ2_XXS IQ1_M IQ1_S\n"
             "        (the _S/_M/_L mixes give the output, attention V and some FFN-down\n"
             "        layers more bits, as llama-quantize does), or its general.file_type\n"
             "        number (15 = Q4_K_M). -v also lists every tensor's type.\n",
    .shared = CLI_SHARED_THREADS,
    CLI_TABLE(quantize_table),
    .max_args = 3,
};

/* A name ("Q4_K_M", any case) or, as llama-quantize also takes, the
 * general.file_type number ("15"). */
static bool parse_file_type(const char *s, sprout_file_type *out) {
    if (sprout_file_type_from_name(s, out)) return true;
    char *end;
    errno = 0;
    const long v = strtol(s, &end, 10);
    const char *name = *s && !*end && !errno && v >= 0 && v < 4096 ? sprout_file_type_name((uint32_t)v) : NULL;
    return name && sprout_file_type_from_name(name, out);
}

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct cli_state {
    bool tty;
    double t0, last_draw;
} cli_state;

/* A tensor given another type than asked is a warning; the type of each is what -v adds. */
static void on_plan(void *user, const sprout_quantize_tensor_plan *p) {
    (void)user;
    if (p->wanted_type != p->to_type)
        cli_log(SPROUT_LOG_WARN, "%s: rows do not fit %s blocks, using %s", p->tensor_name, sprout_type_name(p->wanted_type),
                sprout_type_name(p->to_type));
    else
        cli_log(SPROUT_LOG_INFO, "%-40s %-5s -> %s", p->tensor_name, sprout_type_name(p->from_type), sprout_type_name(p->to_type));
}

static bool on_progress(void *user, const sprout_quantize_progress *p) {
    cli_state *s = user;
    if (interrupted) return false;
    const double now = now_seconds();
    if (!s->tty || (now - s->last_draw < 0.2 && p->bytes_read < p->bytes_total)) return true;
    s->last_draw = now;
    const double elapsed = now - s->t0, mb = (double)p->bytes_read / 1e6;
    const double rate = elapsed > 0 ? mb / elapsed : 0;
    const double left = rate > 0 ? ((double)(p->bytes_total - p->bytes_read) / 1e6) / rate : 0;
    fprintf(stderr, "\r\033[K[%4lld/%lld] %-32.32s %5s -> %-5s %3.0f%%  %6.1f MB/s  ETA %d:%02d",
            (long long)p->tensor_index + 1, (long long)p->n_tensors, p->tensor_name, sprout_type_name(p->from_type),
            sprout_type_name(p->to_type), p->bytes_total ? 100.0 * (double)p->bytes_read / (double)p->bytes_total : 100.0,
            rate, (int)left / 60, (int)left % 60);
    return true;
}

int cmd_quantize(int argc, char **argv) {
    sprout_quantize_params params;
    sprout_quantize_params_default(&params);
    cli_common o;
    const int status = cli_parse(&quantize_command, &o, &params, argc, argv);
    if (status != CLI_CONTINUE) return status;
    if (o.n_args < 3) return cli_usage_error(&quantize_command, "IN.gguf, OUT.gguf and TYPE are required");
    const char *const *positional = o.args;
    params.n_threads = o.n_threads;
    cli_state state = {.tty = isatty(STDERR_FILENO)};
    if (!parse_file_type(positional[2], &params.file_type)) {
        fprintf(stderr, "sprout quantize: unknown type '%s' (sprout quantize --help lists them)\n", positional[2]);
        return 2;
    }
    params.progress = on_progress;
    params.plan = on_plan;
    params.user = &state;

    struct sigaction sa = {.sa_handler = on_signal}, old_int, old_term;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    /* a file-size limit must fail the write (EFBIG), not kill us before the temporary file is removed */
    signal(SIGXFSZ, SIG_IGN);

    state.t0 = now_seconds();
    sprout_quantize_report report;
    sprout_status st = sprout_quantize_model(positional[0], positional[1], &params, &report);
    if (state.tty) fprintf(stderr, "\r\033[K");
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    if (st == SPROUT_ERR_CANCELLED) {
        fprintf(stderr, "sprout quantize: interrupted; no output written\n");
        return 130;
    }
    if (st != SPROUT_OK) {
        fprintf(stderr, "sprout quantize: %s\n", sprout_last_error());
        return 1;
    }
    printf("%s: %s, %lld tensors (%lld converted", positional[1], sprout_file_type_name(params.file_type),
           (long long)report.n_tensors, (long long)report.n_converted);
    if (report.n_fallback) printf(", %lld with a fallback type", (long long)report.n_fallback);
    if (report.n_requantized) printf(", %lld requantized from a quantized type", (long long)report.n_requantized);
    printf(")\n  size %.2f MiB -> %.2f MiB (%.2fx)", (double)report.bytes_in / 1048576.0,
           (double)report.bytes_out / 1048576.0,
           report.bytes_out ? (double)report.bytes_in / (double)report.bytes_out : 0.0);
    if (report.n_parts > 1) printf(" in %u parts", report.n_parts);
    printf(", %.2f s (%.1f MB/s of input)\n", report.seconds,
           report.seconds > 0 ? (double)report.bytes_in / 1e6 / report.seconds : 0.0);
    return 0;
}
