/* The generation requests of the OpenAI and Ollama APIs, parsed and
 * validated into one shape: which prompt (messages or text), which
 * sampling, which output options. Needs no model, so it can be fuzzed
 * alone; what depends on the model (tokenizing, the context) comes after. */
#ifndef SPROUT_SERVER_API_REQUEST_H
#define SPROUT_SERVER_API_REQUEST_H

#include <stdbool.h>
#include <stddef.h>

#include "sprout.h"

typedef enum sp_api_kind {
    SP_API_OPENAI_CHAT,       /* POST /v1/chat/completions */
    SP_API_OPENAI_COMPLETION, /* POST /v1/completions */
    SP_API_OLLAMA_CHAT,       /* POST /api/chat */
    SP_API_OLLAMA_GENERATE    /* POST /api/generate */
} sp_api_kind;

/* Stop strings are checked against the text at every token on the engine
 * thread that all requests share: their number and length are bounded. */
enum { SP_API_MAX_STOPS = 16, SP_API_MAX_STOP_BYTES = 4096 };

/* LoRA adapters by id with their scales, as llama.cpp's server takes them:
 * [{"id": 0, "scale": 0.5}, ...]. The parser knows no adapters: whether an
 * id names one is checked against the server's (sp_lora_uses). An id
 * listed twice keeps its last scale, as llama.cpp's server does. */
enum { SP_API_MAX_LORA = 64 };
typedef struct sp_api_lora {
    bool given; /* the body had a list (an empty one too): it replaces the server's defaults */
    size_t n;
    int32_t id[SP_API_MAX_LORA];
    float scale[SP_API_MAX_LORA];
} sp_api_lora;

/* llama-server's per-request speculative decoding fields, on every
 * generation endpoint (Ollama's also inside "options"): the most tokens
 * proposed per pass ("speculative.n_max"; 0: this request decodes
 * plainly), the fewest worth a check ("speculative.n_min") and the draft's
 * confidence floor ("speculative.p_min"). Negative: not given, the
 * server's setting holds. */
typedef struct sp_api_speculative {
    int32_t n_max, n_min;
    float p_min;
} sp_api_speculative;

typedef struct sp_api_request {
    sp_api_kind kind;
    char *model;          /* NULL when absent */
    char *messages_json;  /* chat: the messages, content flattened to text */
    char *vars_json;      /* chat: the template's other variables as a JSON object (tools ...), or NULL */
    bool tools;           /* tools are offered: replies may call them */
    bool tool_required;   /* tool_choice "required" or a named function: the reply must call one */
    char *tool_name;      /* tool_choice's named function, or NULL */
    int8_t think;         /* Ollama's think: -1 not given, 0 or 1 */
    size_t n_messages;
    char *prompt;         /* completion / generate */
    char *suffix;         /* completion / generate: the text after the hole (fill in the middle); NULL: none */
    char *system;         /* generate: a system prompt */
    bool raw;             /* generate: the prompt goes to the model as is */
    int32_t *context;     /* generate: the ids an earlier reply returned, continued here */
    size_t n_context;
    bool stream;
    bool include_usage;   /* OpenAI stream_options.include_usage */
    bool echo;            /* completions */
    bool max_tokens_set;  /* else: until the context is full */
    int32_t logprobs;     /* -1: none; else how many alternatives per token */
    int32_t num_ctx;      /* Ollama options.num_ctx (0: not given) */
    bool seed_set;
    sprout_generation_config cfg;
    char *stops[SP_API_MAX_STOPS];
    sprout_logit_bias *biases; /* OpenAI's logit_bias (cfg points here) */
    sp_api_lora lora;     /* "lora": the adapters of this request, replacing the server's defaults */
    sp_api_speculative speculative; /* llama-server's "speculative.*": overrides of the server's assisted generation */
    /* Structured output (cfg.grammar and cfg.json_schema point here): GBNF
     * text ("grammar"), a schema as compact JSON text (response_format,
     * "json_schema", Ollama's format); structured_param names the field
     * that gave it (errors at submit time name it), NULL for none */
    char *grammar;
    char *json_schema;
    const char *structured_param;
} sp_api_request;

/* Memory that ran out while a request was read or answered, per thread:
 * jansson reports some of its allocation failures as syntax errors, and
 * its packers and setters fail quietly, so a parse error or an answer
 * built in full is told from one that lost memory by asking here.
 * sp_oom_watch_json routes jansson's allocations through the watch (once,
 * before serving); sp_oom_note marks a failure of the server's own;
 * sp_oom_take says whether any happened on this thread since it was last
 * asked, and forgets them. */
void sp_oom_watch_json(void);
void sp_oom_note(void);
bool sp_oom_take(void);

/* Parses a request body. On failure returns false with `error` saying
 * what is wrong and naming the field ("messages[1].content: expected a
 * string or an array of text parts"). The request is freed either way
 * with sp_api_request_free. */
bool sp_api_request_parse(sp_api_kind kind, const char *body, size_t len, sp_api_request *req, char *error, size_t error_size);
void sp_api_request_free(sp_api_request *req);
/* As sp_api_request_parse, over a model's Modelfile PARAMETERs (NULL: none):
 * they replace the API's defaults, and the request's fields replace them. */
bool sp_api_request_parse_over(sp_api_kind kind, const char *body, size_t len, const sprout_store_model *modelfile, sp_api_request *req,
                               char *error, size_t error_size);

/* The body of POST /lora-adapters: a JSON array of {"id", "scale"}. */
bool sp_api_lora_parse(const char *body, size_t len, sp_api_lora *out, char *error, size_t error_size);

/* Embedding requests: OpenAI's POST /v1/embeddings, Ollama's POST /api/embed
 * and its older POST /api/embeddings (one prompt, a vector not scaled). */
typedef enum sp_embed_kind { SP_EMBED_OPENAI, SP_EMBED_OLLAMA, SP_EMBED_OLLAMA_LEGACY } sp_embed_kind;

/* OpenAI's limit on the inputs of one request. */
enum { SP_EMBED_MAX_INPUTS = 2048 };

/* One text, or (OpenAI) the token ids to embed as they are. */
typedef struct sp_embed_input {
    char *text;
    int32_t *ids;
    size_t n_ids;
} sp_embed_input;

typedef struct sp_embed_request {
    sp_embed_kind kind;
    char *model;            /* NULL when absent */
    sp_embed_input *inputs; /* in order; Ollama's empty strings left out */
    size_t n_inputs;
    bool base64;            /* OpenAI encoding_format "base64": little-endian float32s */
    int32_t dimensions;     /* keep the first N numbers (then unit length again); 0: all */
    bool truncate;          /* Ollama: cut a text longer than the context (default) instead of failing */
    int32_t num_ctx;        /* Ollama options.num_ctx (0: not given) */
} sp_embed_request;

/* As sp_api_request_parse, for embedding requests. */
bool sp_embed_request_parse(sp_embed_kind kind, const char *body, size_t len, sp_embed_request *req, char *error, size_t error_size);
void sp_embed_request_free(sp_embed_request *req);

#endif
