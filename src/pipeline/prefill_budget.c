/* The prompt-token budget of a step beside generating requests
 * (prefill_budget.h). */
#include "pipeline/prefill_budget.h"

/* Weight of the newest pass in the running averages: a host shared with
 * other work times some passes long, so one pass moves them only a little. */
#define SP_PREFILL_EMA 0.2

void sp_prefill_budget_init(sp_prefill_budget *b, int32_t fixed, int32_t chunk) {
    *b = (sp_prefill_budget){.fixed = fixed, .chunk = chunk > 0 ? chunk : 1};
}

static double ema(double avg, double sample) { return avg > 0 ? avg + SP_PREFILL_EMA * (sample - avg) : sample; }

int32_t sp_prefill_budget_tokens(const sp_prefill_budget *b, int32_t n_decode) {
    if (n_decode <= 0 || b->fixed < 0) return INT32_MAX;
    int32_t budget = b->fixed;
    if (budget == 0) {
        /* until both costs are known, a few tokens at a time: the passes
         * that carry them teach what a token costs */
        if (b->decode_ms <= 0 || b->token_ms <= 0) return SP_PREFILL_BUDGET_MIN;
        const double tokens = b->decode_ms / b->token_ms;
        budget = tokens >= b->chunk ? b->chunk : (int32_t)tokens;
        if (budget < SP_PREFILL_BUDGET_MIN) budget = SP_PREFILL_BUDGET_MIN;
    }
    return budget < b->chunk ? budget : b->chunk;
}

void sp_prefill_budget_observe(sp_prefill_budget *b, int32_t n_decode, int32_t n_prompt, double ms) {
    if (ms < 0 || (n_decode <= 0 && n_prompt <= 0)) return;
    if (n_prompt <= 0) {
        b->decode_ms = ema(b->decode_ms, ms);
        return;
    }
    /* any pass reads every weight once, which a decode-only pass costs
     * already (a prompt-only one too: until a decode-only pass is seen,
     * its time over its tokens is an upper bound, which passes beside
     * generated tokens bring down) */
    if (n_decode > 0 && b->decode_ms <= 0) return;
    const double extra = ms - b->decode_ms;
    /* noise can make a pass look cheaper than a decode-only one: a token
     * then costs next to nothing, and the budget is the full chunk */
    const double floor_ms = b->decode_ms / b->chunk / 2;
    double per_token = extra / n_prompt;
    if (per_token < floor_ms) per_token = floor_ms;
    if (per_token > 0) b->token_ms = ema(b->token_ms, per_token);
}
