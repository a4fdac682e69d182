/* The OpenVINO GenAI C API's handles without a model: NULL arguments,
 * every generation-config setter and what it becomes in sprout's config,
 * validation, generation_config.json, JSON containers, chat histories,
 * and pooled perf metrics. */
#include <math.h>
#include <stdint.h>
#include <unistd.h>

#include "openvino/genai/c/json_container.h"
#include "openvino/genai/c/llm_pipeline.h"
#include "ovc_internal.h"
#include "test_util.h"

/* A status that is an error and left a message. */
#define CHECK_FAILS(expr, status)                                                                        \
    do {                                                                                                 \
        ov_status_e st_ = (expr);                                                                        \
        CHECK_MSG(st_ == (status), "%s gave %d, wanted %d", #expr, (int)st_, (int)(status));             \
        CHECK(*ov_get_last_err_msg() != '\0');                                                           \
    } while (0)

static void test_null_arguments(void) {
    ov_genai_generation_config *cfg = NULL;
    CHECK_FAILS(ov_genai_generation_config_create(NULL), INVALID_C_PARAM);
    CHECK_FAILS(ov_genai_generation_config_create_from_json(NULL, &cfg), INVALID_C_PARAM);
    CHECK_FAILS(ov_genai_generation_config_create_from_json("x.json", NULL), INVALID_C_PARAM);
    CHECK_FAILS(ov_genai_generation_config_set_max_new_tokens(NULL, 1), INVALID_C_PARAM);
    CHECK_FAILS(ov_genai_generation_config_set_num_beams(NULL, 1), INVALID_C_PARAM);
    CHECK_FAILS(ov_genai_generation_config_set_num_beam_groups(NULL, 1), INVALID_C_PARAM);
    CHECK_FAILS(ov_genai_generation_config_set_num_return_sequences(NULL, 1), INVALID_C_PARAM);
    CHECK_FAILS(ov_genai_generation_config_set_stop_strings(NULL, NULL, 0), INVALID_C_PARAM);
    CHECK_FAILS(ov_genai_generation_config_set_stop_token_ids(NULL, NULL, 0), INVALID_C_PARAM);
    CHECK_FAILS(ov_genai_generation_config_set_stop_criteria(NULL, EARLY), INVALID_C_PARAM);
    CHECK_FAILS(ov_genai_generation_config_set_temperature(NULL, 1), INVALID_C_PARAM);
    CHECK_FAILS(ov_genai_generation_config_set_eos_token_id(NULL, 1), INVALID_C_PARAM);
    CHECK_FAILS(ov_genai_generation_config_get_max_new_tokens(NULL, NULL), INVALID_C_PARAM);
    CHECK_FAILS(ov_genai_generation_config_validate(NULL), INVALID_C_PARAM);
    CHECK(ov_genai_generation_config_create(&cfg) == OK);
    CHECK_FAILS(ov_genai_generation_config_get_max_new_tokens(cfg, NULL), INVALID_C_PARAM);
    CHECK_FAILS(ov_genai_generation_config_set_stop_strings(cfg, NULL, 2), INVALID_C_PARAM);
    const char *with_null[] = {"a", NULL};
    CHECK_FAILS(ov_genai_generation_config_set_stop_strings(cfg, with_null, 2), INVALID_C_PARAM);
    CHECK_FAILS(ov_genai_generation_config_set_stop_token_ids(cfg, NULL, 2), INVALID_C_PARAM);
    ov_genai_generation_config_free(cfg);
    ov_genai_generation_config_free(NULL);

    ov_genai_llm_pipeline *pipe = (ov_genai_llm_pipeline *)1; /* must be reset to NULL */
    CHECK_FAILS(ov_genai_llm_pipeline_create(NULL, "CPU", 0, &pipe), INVALID_C_PARAM);
    CHECK(pipe == NULL);
    CHECK_FAILS(ov_genai_llm_pipeline_create("m.gguf", NULL, 0, &pipe), INVALID_C_PARAM);
    CHECK_FAILS(ov_genai_llm_pipeline_create("m.gguf", "CPU", 0, NULL), INVALID_C_PARAM);
    CHECK_FAILS(ov_genai_llm_pipeline_generate(NULL, "x", NULL, NULL, NULL), INVALID_C_PARAM);
    CHECK_FAILS(ov_genai_llm_pipeline_generate_with_history(NULL, NULL, NULL, NULL, NULL), INVALID_C_PARAM);
    CHECK_FAILS(ov_genai_llm_pipeline_start_chat(NULL), INVALID_C_PARAM);
    CHECK_FAILS(ov_genai_llm_pipeline_finish_chat(NULL), INVALID_C_PARAM);
    CHECK_FAILS(ov_genai_llm_pipeline_get_generation_config(NULL, &cfg), INVALID_C_PARAM);
    CHECK_FAILS(ov_genai_llm_pipeline_set_generation_config(NULL, NULL), INVALID_C_PARAM);
    ov_genai_llm_pipeline_free(NULL);

    ov_genai_decoded_results *res = NULL;
    ov_genai_perf_metrics *m = NULL;
    size_t size = 0;
    float a, b;
    CHECK_FAILS(ov_genai_decoded_results_create(NULL), INVALID_C_PARAM);
    CHECK_FAILS(ov_genai_decoded_results_get_string(NULL, NULL, &size), INVALID_C_PARAM);
    CHECK_FAILS(ov_genai_decoded_results_get_perf_metrics(NULL, &m), INVALID_C_PARAM);
    CHECK(ov_genai_decoded_results_create(&res) == OK);
    CHECK_FAILS(ov_genai_decoded_results_get_string(res, NULL, NULL), INVALID_C_PARAM);
    CHECK(ov_genai_decoded_results_get_string(res, NULL, &size) == OK && size == 1);
    CHECK_FAILS(ov_genai_decoded_results_get_perf_metrics(res, NULL), INVALID_C_PARAM);
    CHECK(ov_genai_decoded_results_get_perf_metrics(res, &m) == OK);
    CHECK_FAILS(ov_genai_perf_metrics_get_ttft(m, NULL, &b), INVALID_C_PARAM);
    CHECK_FAILS(ov_genai_perf_metrics_get_throughput(m, &a, NULL), INVALID_C_PARAM);
    CHECK_FAILS(ov_genai_perf_metrics_get_load_time(m, NULL), INVALID_C_PARAM);
    CHECK_FAILS(ov_genai_perf_metrics_get_num_input_tokens(m, NULL), INVALID_C_PARAM);
    CHECK_FAILS(ov_genai_perf_metrics_get_num_generation_tokens(m, NULL), INVALID_C_PARAM);
    CHECK_FAILS(ov_genai_perf_metrics_get_tpot(NULL, &a, &b), INVALID_C_PARAM);
    CHECK_FAILS(ov_genai_perf_metrics_add_in_place(m, NULL), INVALID_C_PARAM);
    CHECK_FAILS(ov_genai_perf_metrics_add_in_place(NULL, m), INVALID_C_PARAM);
    CHECK(ov_genai_perf_metrics_get_ipot(m, &a, &b) == OK && a == 0 && b == 0);
    ov_genai_decoded_results_free(res); /* the metrics outlive their result */
    CHECK(ov_genai_perf_metrics_get_generate_duration(m, &a, &b) == OK);
    ov_genai_decoded_results_perf_metrics_free(m);
    ov_genai_decoded_results_perf_metrics_free(NULL);
    ov_genai_decoded_results_free(NULL);

    CHECK(ov_genai_json_container_create(NULL) == OV_GENAI_JSON_CONTAINER_INVALID_PARAM);
    CHECK(ov_genai_json_container_create_array(NULL) == OV_GENAI_JSON_CONTAINER_INVALID_PARAM);
    CHECK(ov_genai_json_container_create_object(NULL) == OV_GENAI_JSON_CONTAINER_INVALID_PARAM);
    CHECK(ov_genai_json_container_create_from_json_string(NULL, "{}") == OV_GENAI_JSON_CONTAINER_INVALID_PARAM);
    CHECK(ov_genai_json_container_to_json_string(NULL, NULL, &size) == OV_GENAI_JSON_CONTAINER_INVALID_PARAM);
    CHECK(ov_genai_json_container_copy(NULL, NULL) == OV_GENAI_JSON_CONTAINER_INVALID_PARAM);
    ov_genai_json_container_free(NULL);
    CHECK(ov_genai_chat_history_create(NULL) == OV_GENAI_CHAT_HISTORY_INVALID_PARAM);
    CHECK(ov_genai_chat_history_push_back(NULL, NULL) == OV_GENAI_CHAT_HISTORY_INVALID_PARAM);
    CHECK(ov_genai_chat_history_pop_back(NULL) == OV_GENAI_CHAT_HISTORY_INVALID_PARAM);
    CHECK(ov_genai_chat_history_size(NULL, &size) == OV_GENAI_CHAT_HISTORY_INVALID_PARAM);
    CHECK(ov_genai_chat_history_empty(NULL, NULL) == OV_GENAI_CHAT_HISTORY_INVALID_PARAM);
    CHECK(ov_genai_chat_history_get_messages(NULL, NULL) == OV_GENAI_CHAT_HISTORY_INVALID_PARAM);
    CHECK(ov_genai_chat_history_set_tools(NULL, NULL) == OV_GENAI_CHAT_HISTORY_INVALID_PARAM);
    CHECK(ov_genai_chat_history_create_from_json_container(NULL, NULL) == OV_GENAI_CHAT_HISTORY_INVALID_PARAM);
    ov_genai_chat_history_free(NULL);
    CHECK(strcmp(ov_get_error_info(OUT_OF_BOUNDS), "out of bounds") == 0);
    CHECK(strcmp(ov_get_error_info((ov_status_e)-99), "unknown status") == 0);
}

/* Maps cfg for a 10-token prompt in a 256-token context with EOS id 2. */
static sprout_generation_config mapped(const ov_genai_generation_config *cfg, ovc_sprout_config *sc) {
    CHECK(ovc_config_to_sprout(cfg, NULL, 10, 256, sc) == OK);
    return sc->cfg;
}

static void test_config_setters(void) {
    ov_genai_generation_config *c;
    CHECK(ov_genai_generation_config_create(&c) == OK);
    size_t v = 0;
    CHECK(ov_genai_generation_config_get_max_new_tokens(c, &v) == OK && v == SIZE_MAX);
    ovc_sprout_config sc;
    sprout_generation_config s = mapped(c, &sc); /* defaults: greedy, unbounded (the context) */
    CHECK(s.temperature == 0 && s.max_new_tokens == 256 && s.top_k == 0 && s.repeat_last_n == -1 && s.num_assistant_tokens == 0);
    CHECK(s.min_p == 0 && s.top_p == 1 && s.repetition_penalty == 1 && !s.echo && !s.ignore_eos);
    ovc_sprout_config_free(&sc);

    CHECK(ov_genai_generation_config_set_max_new_tokens(c, 42) == OK);
    CHECK(ov_genai_generation_config_get_max_new_tokens(c, &v) == OK && v == 42);
    CHECK(ov_genai_generation_config_set_max_length(c, 30) == OK && c->max_length == 30);
    CHECK(ov_genai_generation_config_set_ignore_eos(c, true) == OK && c->ignore_eos);
    CHECK(ov_genai_generation_config_set_min_new_tokens(c, 3) == OK && c->min_new_tokens == 3);
    CHECK(ov_genai_generation_config_set_echo(c, true) == OK && c->echo);
    CHECK(ov_genai_generation_config_set_logprobs(c, 2) == OK && c->logprobs == 2);
    const char *stops[] = {"END", "\n\n", "END"};
    CHECK(ov_genai_generation_config_set_stop_strings(c, stops, 3) == OK && c->n_stop_strings == 2); /* a set */
    CHECK(ov_genai_generation_config_set_include_stop_str_in_output(c, true) == OK && c->include_stop_str_in_output);
    const int64_t ids[] = {7, 2, 7, 9};
    CHECK(ov_genai_generation_config_set_stop_token_ids(c, ids, 4) == OK && c->n_stop_token_ids == 3);
    CHECK(ov_genai_generation_config_set_diversity_penalty(c, 0.5f) == OK && c->diversity_penalty == 0.5f);
    CHECK(ov_genai_generation_config_set_length_penalty(c, 2.0f) == OK && c->length_penalty == 2.0f);
    CHECK(ov_genai_generation_config_set_no_repeat_ngram_size(c, 4) == OK && c->no_repeat_ngram_size == 4);
    CHECK(ov_genai_generation_config_set_stop_criteria(c, NEVER) == OK && c->stop_criteria == NEVER);
    CHECK_FAILS(ov_genai_generation_config_set_stop_criteria(c, (StopCriteria)7), INVALID_C_PARAM);
    CHECK(ov_genai_generation_config_set_temperature(c, 0.7f) == OK && c->temperature == 0.7f);
    CHECK(ov_genai_generation_config_set_top_p(c, 0.9f) == OK && c->top_p == 0.9f);
    CHECK(ov_genai_generation_config_set_top_k(c, 50) == OK && c->top_k == 50);
    CHECK(ov_genai_generation_config_set_min_p(c, 0.1f) == OK && c->min_p == 0.1f);
    CHECK(ov_genai_generation_config_set_repetition_penalty(c, 1.3f) == OK && c->repetition_penalty == 1.3f);
    CHECK(ov_genai_generation_config_set_presence_penalty(c, 0.4f) == OK && c->presence_penalty == 0.4f);
    CHECK(ov_genai_generation_config_set_frequency_penalty(c, -0.2f) == OK && c->frequency_penalty == -0.2f);
    CHECK(ov_genai_generation_config_set_rng_seed(c, 1234) == OK && c->rng_seed == 1234);
    CHECK(ov_genai_generation_config_set_eos_token_id(c, 2) == OK && c->eos_token_id == 2);
    CHECK(ov_genai_generation_config_set_num_assistant_tokens(c, 4) == OK && c->num_assistant_tokens == 4);
    CHECK(ov_genai_generation_config_set_max_ngram_size(c, 3) == OK && c->max_ngram_size == 3);

    /* greedy still: the sampling values wait for do_sample */
    s = mapped(c, &sc);
    CHECK(s.temperature == 0);
    CHECK(s.max_new_tokens == 42 && s.min_new_tokens == 3 && s.ignore_eos && s.echo && s.logprobs == 2);
    CHECK(s.n_stop_strings == 2 && strcmp(s.stop_strings[0], "END") == 0 && s.include_stop_string);
    CHECK(s.n_stop_token_ids == 3 && s.stop_token_ids[0] == 7 && s.stop_token_ids[1] == 2 && s.stop_token_ids[2] == 9);
    CHECK(s.repetition_penalty == 1.3f && s.presence_penalty == 0.4f && s.frequency_penalty == -0.2f && s.seed == 1234);
    CHECK(s.num_assistant_tokens == 4 && s.prompt_lookup && s.max_ngram_size == 3);
    ovc_sprout_config_free(&sc);
    CHECK(ov_genai_generation_config_set_do_sample(c, true) == OK && c->do_sample);
    s = mapped(c, &sc);
    CHECK(s.temperature == 0.7f && s.top_p == 0.9f && s.top_k == 50 && s.min_p == 0.1f);
    ovc_sprout_config_free(&sc);

    /* a draft model's confidence threshold: openvino_genai's 5 proposals */
    CHECK(ov_genai_generation_config_set_num_assistant_tokens(c, 0) == OK);
    CHECK(ov_genai_generation_config_set_max_ngram_size(c, 0) == OK);
    CHECK(ov_genai_generation_config_set_assistant_confidence_threshold(c, 0.4f) == OK);
    s = mapped(c, &sc);
    CHECK(s.num_assistant_tokens == 5 && s.assistant_confidence_threshold == 0.4f && !s.prompt_lookup);
    ovc_sprout_config_free(&sc);

    /* max_length counts the prompt; max_new_tokens has priority */
    CHECK(ov_genai_generation_config_set_max_new_tokens(c, SIZE_MAX) == OK);
    s = mapped(c, &sc);
    CHECK(s.max_new_tokens == 20);
    ovc_sprout_config_free(&sc);
    CHECK(ov_genai_generation_config_set_max_length(c, 10) == OK);
    CHECK_FAILS(ovc_config_to_sprout(c, NULL, 10, 256, &sc), OUT_OF_BOUNDS);
    ovc_sprout_config_free(&sc);

    /* beam search and several sequences: refused, the value kept */
    CHECK_FAILS(ov_genai_generation_config_set_num_beams(c, 4), NOT_IMPLEMENTED);
    CHECK(c->num_beams == 1);
    CHECK(strstr(ov_get_last_err_msg(), "beam search") != NULL);
    CHECK(ov_genai_generation_config_set_num_beams(c, 1) == OK);
    CHECK_FAILS(ov_genai_generation_config_set_num_beam_groups(c, 2), NOT_IMPLEMENTED);
    CHECK_FAILS(ov_genai_generation_config_set_num_return_sequences(c, 3), NOT_IMPLEMENTED);
    CHECK(c->num_beam_groups == 1 && c->num_return_sequences == 1);
    ov_genai_generation_config_free(c);
}

static void test_config_validate(void) {
    ov_genai_generation_config *c;
    CHECK(ov_genai_generation_config_create(&c) == OK);
    CHECK_FAILS(ov_genai_generation_config_validate(c), PARAMETER_MISMATCH); /* no stop condition */
    CHECK(ov_genai_generation_config_set_max_new_tokens(c, 8) == OK);
    CHECK(ov_genai_generation_config_validate(c) == OK);
    CHECK(ov_genai_generation_config_set_min_new_tokens(c, 9) == OK);
    CHECK_FAILS(ov_genai_generation_config_validate(c), PARAMETER_MISMATCH);
    CHECK(ov_genai_generation_config_set_min_new_tokens(c, 0) == OK);
    CHECK(ov_genai_generation_config_set_eos_token_id(c, 5) == OK); /* not among the stop ids */
    CHECK_FAILS(ov_genai_generation_config_validate(c), PARAMETER_MISMATCH);
    const int64_t ids[] = {5};
    CHECK(ov_genai_generation_config_set_stop_token_ids(c, ids, 1) == OK);
    CHECK(ov_genai_generation_config_validate(c) == OK);
    CHECK(ov_genai_generation_config_set_do_sample(c, true) == OK);
    CHECK(ov_genai_generation_config_set_temperature(c, 0) == OK);
    CHECK_FAILS(ov_genai_generation_config_validate(c), PARAMETER_MISMATCH);
    CHECK(ov_genai_generation_config_set_temperature(c, 0.5f) == OK);
    CHECK(ov_genai_generation_config_set_presence_penalty(c, 3) == OK);
    CHECK_FAILS(ov_genai_generation_config_validate(c), PARAMETER_MISMATCH);
    CHECK(ov_genai_generation_config_set_presence_penalty(c, 0) == OK);
    CHECK(ov_genai_generation_config_set_max_ngram_size(c, 3) == OK); /* without num_assistant_tokens */
    CHECK_FAILS(ov_genai_generation_config_validate(c), PARAMETER_MISMATCH);
    CHECK(ov_genai_generation_config_set_num_assistant_tokens(c, 3) == OK);
    CHECK(ov_genai_generation_config_validate(c) == OK);
    CHECK(ov_genai_generation_config_set_assistant_confidence_threshold(c, 0.3f) == OK);
    CHECK_FAILS(ov_genai_generation_config_validate(c), PARAMETER_MISMATCH);
    CHECK(ov_genai_generation_config_set_assistant_confidence_threshold(c, 0) == OK);
    CHECK(ov_genai_generation_config_set_max_new_tokens(c, 0) == OK);
    CHECK_FAILS(ov_genai_generation_config_validate(c), PARAMETER_MISMATCH);
    CHECK(ov_genai_generation_config_set_echo(c, true) == OK);
    CHECK(ov_genai_generation_config_validate(c) == OK);
    ov_genai_generation_config_free(c);
}

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f) return;
    fputs(text, f);
    fclose(f);
}

static void test_config_json(void) {
    char dir[] = "/tmp/ovc_json_XXXXXX", path[256];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/generation_config.json", dir);
    write_file(path, "{\"max_new_tokens\": 12, \"do_sample\": true, \"temperature\": 0.6, \"top_k\": 20, \"top_p\": 0.8,"
                     " \"eos_token_id\": [2, 32000], \"stop_strings\": [\"###\"], \"early_stopping\": true,"
                     " \"repetition_penalty\": 1.1, \"bos_token_id\": 1}");
    ov_genai_generation_config *c = NULL;
    CHECK(ov_genai_generation_config_create_from_json(path, &c) == OK);
    if (c) {
        CHECK(c->max_new_tokens == 12 && c->do_sample && c->temperature == 0.6f && c->top_k == 20 && c->top_p == 0.8f);
        CHECK(c->eos_token_id == 2 && c->n_stop_token_ids == 2 && c->stop_token_ids[1] == 32000);
        CHECK(c->n_stop_strings == 1 && strcmp(c->stop_strings[0], "###") == 0 && c->stop_criteria == EARLY);
        CHECK(fabsf(c->repetition_penalty - 1.1f) < 1e-6f);
        CHECK(ov_genai_generation_config_validate(c) == OK);
    }
    ov_genai_generation_config_free(c);
    write_file(path, "{\"max_new_tokens\": -3}");
    CHECK_FAILS(ov_genai_generation_config_create_from_json(path, &c), PARAMETER_MISMATCH);
    write_file(path, "{\"num_beams\": 4}");
    CHECK_FAILS(ov_genai_generation_config_create_from_json(path, &c), NOT_IMPLEMENTED);
    write_file(path, "{not json");
    CHECK_FAILS(ov_genai_generation_config_create_from_json(path, &c), PARAMETER_MISMATCH);
    CHECK(c == NULL);
    unlink(path);
    CHECK_FAILS(ov_genai_generation_config_create_from_json(path, &c), NOT_FOUND);
    rmdir(dir);
}

static void test_json_container(void) {
    ov_genai_json_container *obj = NULL, *copy = NULL, *bad = NULL;
    CHECK(ov_genai_json_container_create_from_json_string(&obj, "{\"role\": \"user\", \"content\": \"hi\"}") == OV_GENAI_JSON_CONTAINER_OK);
    CHECK(ov_genai_json_container_create_from_json_string(&bad, "{\"role\": ") == OV_GENAI_JSON_CONTAINER_INVALID_JSON);
    CHECK(bad == NULL);
    size_t size = 0;
    CHECK(ov_genai_json_container_to_json_string(obj, NULL, &size) == OV_GENAI_JSON_CONTAINER_OK);
    const char *want = "{\"role\":\"user\",\"content\":\"hi\"}";
    CHECK(size == strlen(want) + 1);
    char small[8], buf[64];
    size_t small_size = sizeof small;
    CHECK(ov_genai_json_container_to_json_string(obj, small, &small_size) == OV_GENAI_JSON_CONTAINER_OUT_OF_BOUNDS);
    CHECK(small_size == size);
    size_t buf_size = sizeof buf;
    CHECK(ov_genai_json_container_to_json_string(obj, buf, &buf_size) == OV_GENAI_JSON_CONTAINER_OK && strcmp(buf, want) == 0);
    CHECK(ov_genai_json_container_copy(obj, &copy) == OV_GENAI_JSON_CONTAINER_OK);
    ov_genai_json_container_free(obj); /* the copy is its own */
    buf_size = sizeof buf;
    CHECK(ov_genai_json_container_to_json_string(copy, buf, &buf_size) == OV_GENAI_JSON_CONTAINER_OK && strcmp(buf, want) == 0);
    ov_genai_json_container_free(copy);
    ov_genai_json_container *arr = NULL, *scalar = NULL;
    CHECK(ov_genai_json_container_create_array(&arr) == OV_GENAI_JSON_CONTAINER_OK);
    buf_size = sizeof buf;
    CHECK(ov_genai_json_container_to_json_string(arr, buf, &buf_size) == OV_GENAI_JSON_CONTAINER_OK && strcmp(buf, "[]") == 0);
    CHECK(ov_genai_json_container_create_from_json_string(&scalar, "42") == OV_GENAI_JSON_CONTAINER_OK);
    ov_genai_json_container_free(arr);
    ov_genai_json_container_free(scalar);
}

static void test_chat_history(void) {
    ov_genai_chat_history *h = NULL;
    ov_genai_json_container *msg = NULL, *out = NULL, *arr = NULL;
    CHECK(ov_genai_chat_history_create(&h) == OV_GENAI_CHAT_HISTORY_OK);
    int empty = 0;
    CHECK(ov_genai_chat_history_empty(h, &empty) == OV_GENAI_CHAT_HISTORY_OK && empty == 1);
    CHECK(ov_genai_chat_history_pop_back(h) == OV_GENAI_CHAT_HISTORY_EMPTY);
    CHECK(ov_genai_chat_history_get_first(h, &out) == OV_GENAI_CHAT_HISTORY_EMPTY);
    CHECK(ov_genai_chat_history_get_last(h, &out) == OV_GENAI_CHAT_HISTORY_EMPTY);
    ov_genai_json_container_create_from_json_string(&msg, "{\"role\": \"user\", \"content\": \"one\"}");
    CHECK(ov_genai_chat_history_push_back(h, msg) == OV_GENAI_CHAT_HISTORY_OK);
    ov_genai_json_container_free(msg); /* pushed as a copy */
    ov_genai_json_container_create_from_json_string(&msg, "{\"role\": \"assistant\", \"content\": \"two\"}");
    CHECK(ov_genai_chat_history_push_back(h, msg) == OV_GENAI_CHAT_HISTORY_OK);
    ov_genai_json_container_free(msg);
    ov_genai_json_container_create_from_json_string(&arr, "[1]");
    CHECK(ov_genai_chat_history_push_back(h, arr) == OV_GENAI_CHAT_HISTORY_INVALID_JSON);
    size_t n = 0;
    CHECK(ov_genai_chat_history_size(h, &n) == OV_GENAI_CHAT_HISTORY_OK && n == 2);
    char buf[128];
    size_t size = sizeof buf;
    CHECK(ov_genai_chat_history_get_last(h, &out) == OV_GENAI_CHAT_HISTORY_OK);
    CHECK(ov_genai_json_container_to_json_string(out, buf, &size) == OV_GENAI_JSON_CONTAINER_OK);
    CHECK(strcmp(buf, "{\"role\":\"assistant\",\"content\":\"two\"}") == 0);
    ov_genai_json_container_free(out);
    CHECK(ov_genai_chat_history_get_message(h, 2, &out) == OV_GENAI_CHAT_HISTORY_OUT_OF_BOUNDS);
    CHECK(ov_genai_chat_history_get_message(h, 0, &out) == OV_GENAI_CHAT_HISTORY_OK);
    ov_genai_json_container_free(out);
    CHECK(ov_genai_chat_history_get_messages(h, &out) == OV_GENAI_CHAT_HISTORY_OK);
    ov_genai_chat_history *h2 = NULL;
    CHECK(ov_genai_chat_history_create_from_json_container(&h2, out) == OV_GENAI_CHAT_HISTORY_OK);
    CHECK(ov_genai_chat_history_size(h2, &n) == OV_GENAI_CHAT_HISTORY_OK && n == 2);
    CHECK(ov_genai_chat_history_create_from_json_container(&h2, arr) == OV_GENAI_CHAT_HISTORY_INVALID_JSON);
    ov_genai_json_container_free(out);
    /* tools: an array; extra context: an object */
    CHECK(ov_genai_chat_history_set_tools(h, arr) == OV_GENAI_CHAT_HISTORY_OK);
    CHECK(ov_genai_chat_history_get_tools(h, &out) == OV_GENAI_CHAT_HISTORY_OK);
    size = sizeof buf;
    CHECK(ov_genai_json_container_to_json_string(out, buf, &size) == OV_GENAI_JSON_CONTAINER_OK && strcmp(buf, "[1]") == 0);
    CHECK(ov_genai_chat_history_set_extra_context(h, out) == OV_GENAI_CHAT_HISTORY_INVALID_JSON);
    ov_genai_json_container_free(out);
    ov_genai_json_container_create_from_json_string(&msg, "{\"enable_thinking\": false}");
    CHECK(ov_genai_chat_history_set_extra_context(h, msg) == OV_GENAI_CHAT_HISTORY_OK);
    CHECK(ov_genai_chat_history_set_tools(h, msg) == OV_GENAI_CHAT_HISTORY_INVALID_JSON);
    ov_genai_json_container_free(msg);
    CHECK(ov_genai_chat_history_get_extra_context(h, &out) == OV_GENAI_CHAT_HISTORY_OK);
    size = sizeof buf;
    CHECK(ov_genai_json_container_to_json_string(out, buf, &size) == OV_GENAI_JSON_CONTAINER_OK &&
          strcmp(buf, "{\"enable_thinking\":false}") == 0);
    ov_genai_json_container_free(out);
    CHECK(ov_genai_chat_history_pop_back(h) == OV_GENAI_CHAT_HISTORY_OK);
    CHECK(ov_genai_chat_history_clear(h) == OV_GENAI_CHAT_HISTORY_OK);
    CHECK(ov_genai_chat_history_size(h, &n) == OV_GENAI_CHAT_HISTORY_OK && n == 0);
    ov_genai_json_container_free(arr);
    ov_genai_chat_history_free(h2);
    ov_genai_chat_history_free(h);
}

/* add_in_place pools samples: the result is the statistics of all of them. */
static void test_perf_pooling(void) {
    const sprout_perf_metrics a = {.struct_size = sizeof a, .load_ms = 50, .ttft_ms = 10, .tpot_mean_ms = 2, .tpot_std_ms = 1,
                                   .n_prompt_tokens = 5, .n_generated_tokens = 5, .total_ms = 20},
                              b = {.struct_size = sizeof b, .load_ms = 50, .ttft_ms = 30, .tpot_mean_ms = 6, .tpot_std_ms = 0,
                                   .n_prompt_tokens = 7, .n_generated_tokens = 3, .total_ms = 40};
    struct ov_genai_perf_metrics_opaque ma, mb;
    ovc_metrics_from_sprout(&ma, &a, 1, 0.5, 0.25, 25);
    ovc_metrics_from_sprout(&mb, &b, 1, 0.5, 0.25, 45);
    CHECK(ov_genai_perf_metrics_add_in_place(&ma, &mb) == OK);
    size_t n_in = 0, n_gen = 0;
    float mean, std, load;
    CHECK(ov_genai_perf_metrics_get_num_input_tokens(&ma, &n_in) == OK && n_in == 12);
    CHECK(ov_genai_perf_metrics_get_num_generation_tokens(&ma, &n_gen) == OK && n_gen == 8);
    CHECK(ov_genai_perf_metrics_get_load_time(&ma, &load) == OK && load == 50);
    /* TTFT samples 11 and 31 */
    CHECK(ov_genai_perf_metrics_get_ttft(&ma, &mean, &std) == OK && fabsf(mean - 21) < 1e-4f && fabsf(std - 10) < 1e-4f);
    /* TPOT: four intervals of mean 2 and deviation 1 (1,1,3,3), two of 6 */
    const double samples[] = {1, 1, 3, 3, 6, 6};
    double sum = 0, sq = 0;
    for (int i = 0; i < 6; i++) sum += samples[i], sq += samples[i] * samples[i];
    const double want_mean = sum / 6, want_std = sqrt(sq / 6 - want_mean * want_mean);
    CHECK(ov_genai_perf_metrics_get_tpot(&ma, &mean, &std) == OK);
    CHECK_MSG(fabs(mean - want_mean) < 1e-4 && fabs(std - want_std) < 1e-4, "tpot %g ± %g, want %g ± %g", mean, std, want_mean, want_std);
    float ipot_mean, ipot_std, tput, tput_std;
    CHECK(ov_genai_perf_metrics_get_ipot(&ma, &ipot_mean, &ipot_std) == OK && ipot_mean == mean && ipot_std == std);
    CHECK(ov_genai_perf_metrics_get_throughput(&ma, &tput, &tput_std) == OK && fabsf(tput - 1000.0f / mean) < 1e-3f);
    CHECK(ov_genai_perf_metrics_get_generate_duration(&ma, &mean, &std) == OK && fabsf(mean - 35) < 1e-4f && fabsf(std - 10) < 1e-4f);
    CHECK(ov_genai_perf_metrics_get_inference_duration(&ma, &mean, &std) == OK && fabsf(mean - 30) < 1e-4f);
    CHECK(ov_genai_perf_metrics_get_tokenization_duration(&ma, &mean, &std) == OK && fabsf(mean - 0.25f) < 1e-6f && std == 0);
    CHECK(ov_genai_perf_metrics_get_chat_template_duration(&ma, &mean, &std) == OK && fabsf(mean - 0.5f) < 1e-6f);
    CHECK(ov_genai_perf_metrics_get_detokenization_duration(&ma, &mean, &std) == OK && mean == 0 && std == 0);
}

int main(void) {
    test_null_arguments();
    test_config_setters();
    test_config_validate();
    test_config_json();
    test_json_container();
    test_chat_history();
    test_perf_pooling();
    TEST_MAIN_END();
}
