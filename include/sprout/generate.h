/* sprout/generate.h: generating text with a pipeline.
 * Part of <sprout.h>, whose conventions hold here. */
#ifndef SPROUT_API_GENERATE_H
#define SPROUT_API_GENERATE_H

#include "lora.h"
#include "result.h"

SPROUT_BEGIN_DECLS

/* Everything that steers one generation. Initialise with
 * sprout_generation_config_init(); pointers must stay valid during the call. */
/* A change to one token's logit before sampling (OpenAI's logit_bias):
 * +-100 all but forces or forbids it. */
typedef struct sprout_logit_bias {
    int32_t token;
    float bias;
} sprout_logit_bias;

typedef struct sprout_generation_config {
    size_t struct_size;               /* sizeof(sprout_generation_config) */
    int32_t max_new_tokens;           /* default 256; 0 generates nothing */
    int32_t min_new_tokens;           /* end-of-generation tokens are masked until then */
    bool ignore_eos;                  /* never stop at end-of-generation tokens (they are masked) */
    float temperature;                /* <= 0: greedy (ties go to the lowest id); default 0.8 */
    int32_t top_k;                    /* <= 0: off; default 40 */
    float top_p;                      /* >= 1: off; default 0.95 */
    float min_p;                      /* <= 0: off; default 0.05 */
    float repetition_penalty;         /* 1: off (default) */
    int32_t repeat_last_n;            /* tokens the penalties look back at; default 64; -1: the whole context */
    float presence_penalty, frequency_penalty; /* 0: off */
    const char *const *stop_strings;  /* generation ends when the text contains one */
    size_t n_stop_strings;
    bool include_stop_string;         /* keep the matched stop string in the output */
    const int32_t *stop_token_ids;    /* generation ends at one of these (in the output unless ignore) */
    size_t n_stop_token_ids;
    uint64_t seed;                    /* same seed, same output, on every machine */
    bool echo;                        /* the result text starts with the prompt */
    int32_t logprobs;                 /* > 0: record the chosen token's and this many top log-probabilities */
    bool json_object;                 /* JSON mode: the output is one JSON object; generation ends when it closes
                                         (finish EOS) and only tokens that keep it valid are drawn */
    const sprout_logit_bias *logit_bias; /* added to the logits before everything else; ids outside the
                                            vocabulary are ignored */
    size_t n_logit_bias;
    const sprout_lora_use *lora;      /* LoRA adapters (loaded against the same model) applied to this generation, in
                                         this order, each with its scale; a scale of 0 leaves its adapter out. n_lora 0:
                                         a pipeline's own (sprout_pipeline_set_lora), a scheduler's request none. Cached
                                         tokens are reused only by a generation with the same adapters and scales */
    size_t n_lora;
    /* Assisted generation (speculative decoding): proposed tokens are
     * checked by one batched forward pass of the model and kept as far as
     * the model itself would have chosen them, so the output is token for
     * token what plain decoding gives (greedy and seeded sampling alike) */
    int32_t num_assistant_tokens;     /* tokens proposed per pass at most (up to 1024); 0: plain decoding (the default) */
    float assistant_confidence_threshold; /* a draft model stops proposing at a token it gives less probability
                                             than this (llama.cpp's --draft-p-min); 0: never */
    int32_t min_assistant_tokens;     /* fewer proposals than this are not checked (--draft-min); 0 */
    bool prompt_lookup;               /* propose the tokens that followed the latest earlier occurrence of the
                                         text's last n-gram (prompt and output) instead of asking a draft model */
    int32_t max_ngram_size;           /* prompt lookup: the longest n-gram matched (up to 64); 0: 3 */
    /* llama.cpp's other samplers, each off by default. The chain runs in
     * `samplers` order (llama.cpp's default: penalties, dry, top_n_sigma,
     * top_k, typ_p, top_p, min_p, xtc, temperature), then draws; Mirostat
     * replaces it (only logit_bias and temperature come before it). */
    float typical_p;                  /* locally typical sampling: keep the tokens whose surprisal is closest to the
                                         entropy until they hold this mass; <= 0 or >= 1: off (default 1) */
    int32_t mirostat;                 /* 1: Mirostat, 2: Mirostat 2.0 (its state starts anew each generation); 0: off */
    float mirostat_tau;               /* Mirostat's target surprise in bits (default 5) */
    float mirostat_eta;               /* Mirostat's learning rate (default 0.1) */
    float dry_multiplier;             /* DRY: a token extending a repeat of n >= dry_allowed_length tokens loses
                                         multiplier * base^(n - allowed_length) of logit; 0: off (default) */
    float dry_base;                   /* default 1.75; < 1: off */
    int32_t dry_allowed_length;       /* default 2 */
    int32_t dry_penalty_last_n;       /* tokens DRY looks back at; -1: the whole context (default); 0: off */
    const char *const *dry_sequence_breakers; /* repeats never reach back past these texts; NULL: "\n", ":",
                                                 "\"", "*"; else n_dry_sequence_breakers of them (0: none);
                                                 a scheduler's request copies them */
    size_t n_dry_sequence_breakers;
    float xtc_probability;            /* XTC: with this chance, drop every token of probability >= xtc_threshold
                                         but the least likely of them; 0: off (default) */
    float xtc_threshold;              /* default 0.1; > 0.5: off */
    float top_n_sigma;                /* keep the logits >= max - n * their standard deviation; <= 0: off (default -1) */
    const char *samplers;             /* the chain's order, llama.cpp's --samplers ("penalties;dry;top_k;...", also
                                         its other spellings: "top-k", "temp" ...) or --sampling-seq letters
                                         ("edskypmxt"); NULL or "": the default; copied by a scheduler */
    /* Structured output: the output is a text of this GBNF grammar (llama.cpp's dialect, start rule `root`), or a
     * JSON value valid against this JSON Schema (text); only tokens that keep it so are drawn, end-of-generation
     * only once it is complete, and generation ends when nothing may follow. One or the other (a schema rules
     * over json_object); NULL or "": none. A bad grammar or schema fails the call (SPROUT_ERR_FORMAT, or
     * SPROUT_ERR_UNSUPPORTED naming a schema keyword sprout cannot enforce); copied by a scheduler */
    const char *grammar;
    const char *json_schema;
    /* A lazy grammar (llama.cpp's grammar_lazy with a word trigger): the output is free until this text appears in
     * it, and from its first letter on it must follow the grammar or schema (a tool call that the model may or may
     * not make). NULL or "": the grammar holds from the start. Copied by a scheduler */
    const char *grammar_trigger;
    /* Context shift (llama.cpp's --context-shift, off by default): when the context is full, keep the prompt's
     * first n_keep tokens (after its BOS, which is kept too; -1: the whole prompt), drop half of the rest and go
     * on; a chat turn that no longer fits drops the same way. Off: generation ends with SPROUT_FINISH_LENGTH, and
     * a chat turn that does not fit fails with SPROUT_ERR_OUT_OF_RANGE. SPROUT_ERR_UNSUPPORTED for a model whose
     * positions cannot shift (learned positions, sliding-window attention). Ollama's num_keep is n_keep */
    bool context_shift;
    int32_t n_keep;
} sprout_generation_config;

void sprout_generation_config_init(sprout_generation_config *config);
/* The pipeline's default config (used when a call passes NULL). */
sprout_status sprout_pipeline_get_config(const sprout_pipeline *p, sprout_generation_config *config);
sprout_status sprout_pipeline_set_config(sprout_pipeline *p, const sprout_generation_config *config);

typedef enum sprout_stream_status {
    SPROUT_STREAM_RUNNING = 0, /* go on */
    SPROUT_STREAM_STOP = 1,    /* end now; keep this turn in history and cache */
    SPROUT_STREAM_CANCEL = 2   /* end now; drop this turn's prompt and output from history and cache */
} sprout_stream_status;

/* Receives each new piece of text (whole UTF-8 characters; never text that
 * may still turn out to be part of a stop string). */
typedef sprout_stream_status (*sprout_streamer)(const char *piece, size_t len, void *user);

/* Completes `prompt` (raw text: BOS added as the model wants, special-token
 * text not parsed). Tokens already in the cache from earlier calls that
 * match the new prompt's start are reused, generated ones included: on a
 * CPU with AMX, an F16 or BF16 model computes the tokens of a prompt of 32
 * or more new tokens in other kernels than generated ones (and shorter
 * prompts), so a conversation continued on its cache can differ by float
 * rounding (and a dropped term under 2^-15 of each product) from the same
 * text prompted afresh.
 * cfg NULL: the pipeline default. */
sprout_status sprout_generate(sprout_pipeline *p, const char *prompt, const sprout_generation_config *cfg, sprout_streamer streamer,
                              void *user, sprout_result **out);
/* The same from token ids (nothing is added). */
sprout_status sprout_generate_tokens(sprout_pipeline *p, const sprout_token *prompt, size_t n_prompt,
                                     const sprout_generation_config *cfg, sprout_streamer streamer, void *user,
                                     sprout_result **out);

/* A JSON Schema (text) as the GBNF grammar that enforces it (llama.cpp's
 * json_schema_to_grammar; freed with sprout_free). SPROUT_ERR_UNSUPPORTED
 * names a keyword that would not be enforced (never a silent downgrade);
 * SPROUT_ERR_FORMAT a malformed schema. */
sprout_status sprout_json_schema_to_grammar(const char *schema, size_t len, char **grammar);

/* A draft pipeline for assisted generation: its model (small, the same
 * vocabulary: type, size within 128, BOS and EOS, each token's text, as
 * llama.cpp checks) proposes greedily what generations of `p` with
 * num_assistant_tokens > 0 and no prompt_lookup verify. It keeps its own
 * KV cache, which follows the accepted text (a chat reuses both caches).
 * One draft serves one pipeline at a time; free it after p. NULL detaches.
 * SPROUT_ERR_UNSUPPORTED naming the difference for another vocabulary. */
sprout_status sprout_pipeline_set_draft(sprout_pipeline *p, sprout_pipeline *draft);

SPROUT_END_DECLS

#endif /* SPROUT_API_GENERATE_H */
