/* The OpenVINO GenAI C API's pipeline on stories260K: model paths and
 * devices, greedy output against sprout's own, results and metrics,
 * streamers that stop and cancel, chats (text and ChatHistory), the
 * pipeline's config, and handles freed in any order. */
#include <stdint.h>
#include <jansson.h>
#include <unistd.h>

#include "openvino/genai/c/json_container.h"
#include "gguf/gguf_writer.h"
#include "openvino/genai/c/llm_pipeline.h"
#include "test_util.h"

#define CHECK_FAILS(expr, status)                                                                        \
    do {                                                                                                 \
        ov_status_e st_ = (expr);                                                                        \
        CHECK_MSG(st_ == (status), "%s gave %d, wanted %d (%s)", #expr, (int)st_, (int)(status), ov_get_last_err_msg()); \
        CHECK(*ov_get_last_err_msg() != '\0');                                                           \
    } while (0)

static char model_path[1024];

/* The result's text, malloc'd (NULL on failure). */
static char *result_text(const ov_genai_decoded_results *r) {
    size_t size = 0;
    if (ov_genai_decoded_results_get_string(r, NULL, &size) != OK) return NULL;
    char *text = malloc(size);
    if (text && ov_genai_decoded_results_get_string(r, text, &size) != OK) {
        free(text);
        return NULL;
    }
    return text;
}

/* Generates and returns the text (malloc'd), or NULL. */
static char *generate(ov_genai_llm_pipeline *p, const char *prompt, const ov_genai_generation_config *cfg,
                      const streamer_callback *streamer) {
    ov_genai_decoded_results *r = NULL;
    ov_status_e st = ov_genai_llm_pipeline_generate(p, prompt, cfg, streamer, &r);
    CHECK_MSG(st == OK, "generate: %d %s", (int)st, ov_get_last_err_msg());
    char *text = st == OK ? result_text(r) : NULL;
    ov_genai_decoded_results_free(r);
    return text;
}

/* sprout's own greedy completion, for comparison. */
static char *sprout_greedy(const char *prompt, int32_t n) {
    sprout_model *m = NULL;
    sprout_pipeline *p = NULL;
    sprout_result *r = NULL;
    char *text = NULL;
    sprout_generation_config cfg;
    sprout_generation_config_init(&cfg);
    cfg.temperature = 0;
    cfg.max_new_tokens = n;
    if (sprout_model_load(model_path, NULL, &m) == SPROUT_OK && sprout_pipeline_create(m, NULL, &p) == SPROUT_OK &&
        sprout_generate(p, prompt, &cfg, NULL, NULL, &r) == SPROUT_OK)
        text = strdup(sprout_result_text(r, NULL));
    sprout_result_free(r);
    sprout_pipeline_free(p);
    sprout_model_free(m);
    return text;
}

static ov_genai_generation_config *config_with_max(size_t n) {
    ov_genai_generation_config *c = NULL;
    CHECK(ov_genai_generation_config_create(&c) == OK);
    CHECK(ov_genai_generation_config_set_max_new_tokens(c, n) == OK);
    return c;
}

static void test_paths_and_devices(void) {
    ov_genai_llm_pipeline *p = NULL;
    CHECK_FAILS(ov_genai_llm_pipeline_create(model_path, "GPU", 0, &p), NOT_FOUND);
    CHECK(strstr(ov_get_last_err_msg(), "GPU") != NULL);
    CHECK_FAILS(ov_genai_llm_pipeline_create(model_path, "NPU", 0, &p), NOT_FOUND);
    CHECK_FAILS(ov_genai_llm_pipeline_create("/nonexistent/model.gguf", "CPU", 0, &p), NOT_FOUND);
    CHECK_FAILS(ov_genai_llm_pipeline_create(model_path, "CPU", 1, &p, "INFERENCE_NUM_THREADS"), INVALID_C_PARAM);
    CHECK_FAILS(ov_genai_llm_pipeline_create(model_path, "CPU", 2, &p, "INFERENCE_NUM_THREADS", "many"), PARAMETER_MISMATCH);
    CHECK(p == NULL);
    char dir[] = "/tmp/ovc_model_XXXXXX", link[1100], other[1100], text[1100];
    CHECK(mkdtemp(dir) != NULL);
    CHECK_FAILS(ov_genai_llm_pipeline_create(dir, "CPU", 0, &p), NOT_FOUND); /* no gguf */
    CHECK(strstr(ov_get_last_err_msg(), dir) != NULL);
    snprintf(link, sizeof link, "%s/stories.gguf", dir);
    CHECK(symlink(model_path, link) == 0);
    CHECK(ov_genai_llm_pipeline_create(dir, "cpu", 2, &p, "INFERENCE_NUM_THREADS", "1", "CACHE_DIR", "ignored") == OK);
    ov_genai_llm_pipeline_free(p);
    p = NULL;
    snprintf(other, sizeof other, "%s/other.gguf", dir);
    CHECK(symlink(model_path, other) == 0);
    CHECK_FAILS(ov_genai_llm_pipeline_create(dir, "CPU", 0, &p), PARAMETER_MISMATCH); /* which one? */
    unlink(other);
    snprintf(text, sizeof text, "%s/notes.gguf.txt", dir); /* not a model: ignored in the directory... */
    FILE *f = fopen(text, "w");
    if (f) fputs("not a model", f), fclose(f);
    CHECK(ov_genai_llm_pipeline_create(dir, "CPU", 0, &p) == OK);
    ov_genai_llm_pipeline_free(p);
    p = NULL;
    CHECK(ov_genai_llm_pipeline_create(text, "CPU", 0, &p) != OK); /* ...and an error when named */
    CHECK(p == NULL && *ov_get_last_err_msg());
    unlink(text);
    unlink(link);
    rmdir(dir);
}

/* Greedy output is sprout's; the buffer protocol and the metrics hold. */
static void test_greedy(ov_genai_llm_pipeline *p) {
    const char *prompt = "Once upon a time";
    ov_genai_generation_config *c = config_with_max(24);
    ov_genai_decoded_results *r = NULL;
    CHECK(ov_genai_llm_pipeline_generate(p, prompt, c, NULL, &r) == OK);
    char *want = sprout_greedy(prompt, 24), *got = r ? result_text(r) : NULL;
    CHECK_MSG(want && got && strcmp(want, got) == 0, "got '%s', want '%s'", got ? got : "(null)", want ? want : "(null)");
    size_t size = 0, short_size = 4;
    char small[4];
    CHECK(ov_genai_decoded_results_get_string(r, NULL, &size) == OK && got && size == strlen(got) + 1);
    CHECK_FAILS(ov_genai_decoded_results_get_string(r, small, &short_size), OUT_OF_BOUNDS);
    CHECK(short_size == size);
    ov_genai_perf_metrics *m = NULL;
    CHECK(ov_genai_decoded_results_get_perf_metrics(r, &m) == OK);
    size_t n_in = 0, n_gen = 0;
    float load, ttft, ttft_std, tpot, tpot_std, gen, gen_std, tput, tput_std;
    CHECK(ov_genai_perf_metrics_get_num_input_tokens(m, &n_in) == OK && n_in > 1);
    CHECK(ov_genai_perf_metrics_get_num_generation_tokens(m, &n_gen) == OK && n_gen > 1 && n_gen <= 24);
    CHECK(ov_genai_perf_metrics_get_load_time(m, &load) == OK && load > 0);
    CHECK(ov_genai_perf_metrics_get_ttft(m, &ttft, &ttft_std) == OK && ttft > 0 && ttft_std == 0);
    CHECK(ov_genai_perf_metrics_get_tpot(m, &tpot, &tpot_std) == OK && tpot > 0);
    CHECK(ov_genai_perf_metrics_get_generate_duration(m, &gen, &gen_std) == OK && gen >= ttft);
    CHECK(ov_genai_perf_metrics_get_throughput(m, &tput, &tput_std) == OK && tput > 0);
    ov_genai_decoded_results_perf_metrics_free(m);
    ov_genai_decoded_results_free(r);
    r = NULL;
    /* echo: the prompt first */
    CHECK(ov_genai_generation_config_set_echo(c, true) == OK);
    char *echoed = generate(p, prompt, c, NULL);
    CHECK_MSG(echoed && strncmp(echoed, prompt, strlen(prompt)) == 0, "echoed '%s'", echoed ? echoed : "(null)");
    free(echoed);
    CHECK(ov_genai_generation_config_set_echo(c, false) == OK);
    /* a stop string cut out of the greedy text ends it there */
    if (got && strlen(got) > 12) {
        char stop[5];
        memcpy(stop, got + 8, 4);
        stop[4] = '\0';
        const char *stops[] = {stop};
        CHECK(ov_genai_generation_config_set_stop_strings(c, stops, 1) == OK);
        char *cut = generate(p, prompt, c, NULL);
        CHECK(cut && strlen(cut) <= 8 && strncmp(cut, got, strlen(cut)) == 0);
        free(cut);
        CHECK(ov_genai_generation_config_set_stop_strings(c, NULL, 0) == OK);
    }
    /* prompt lookup proposes, the model decides: the same text */
    CHECK(ov_genai_generation_config_set_num_assistant_tokens(c, 4) == OK);
    CHECK(ov_genai_generation_config_set_max_ngram_size(c, 2) == OK);
    char *assisted = generate(p, prompt, c, NULL);
    CHECK(assisted && got && strcmp(assisted, got) == 0);
    free(assisted);
    /* hostile text: an error, not a crash */
    CHECK_FAILS(ov_genai_llm_pipeline_generate(p, "bad \xff\xfe bytes", c, NULL, &r), PARAMETER_MISMATCH);
    CHECK(r == NULL);
    CHECK(ov_genai_llm_pipeline_start_chat(p) == OK);
    CHECK(ov_genai_llm_pipeline_generate(p, "bad \xff", c, NULL, &r) != OK && r == NULL);
    CHECK(ov_genai_llm_pipeline_finish_chat(p) == OK);
        /* beam search cannot sneak in through a config that fails validation */
    CHECK(ov_genai_generation_config_set_min_new_tokens(c, 100) == OK);
    CHECK_FAILS(ov_genai_llm_pipeline_generate(p, prompt, c, NULL, &r), PARAMETER_MISMATCH);
    CHECK(r == NULL);
    free(want);
    free(got);
    ov_genai_generation_config_free(c);
}

typedef struct chunks {
    size_t n, stop_at;
    ov_genai_streaming_status_e verdict;
    char text[4096];
} chunks;

static ov_genai_streaming_status_e collect(const char *str, void *args) {
    chunks *c = args;
    strncat(c->text, str, sizeof c->text - strlen(c->text) - 1);
    return ++c->n >= c->stop_at ? c->verdict : OV_GENAI_STREAMING_STATUS_RUNNING;
}

static void test_streamer(ov_genai_llm_pipeline *p) {
    ov_genai_generation_config *c = config_with_max(24);
    chunks ch = {.stop_at = 3, .verdict = OV_GENAI_STREAMING_STATUS_STOP};
    streamer_callback s = {collect, &ch};
    char *text = generate(p, "Once upon a time", c, &s);
    CHECK(ch.n == 3 && text && strcmp(text, ch.text) == 0); /* STOP keeps what was streamed */
    free(text);
    /* a streamer alone, no results */
    chunks all = {.stop_at = SIZE_MAX};
    streamer_callback s_all = {collect, &all};
    CHECK(ov_genai_llm_pipeline_generate(p, "Once upon a time", c, &s_all, NULL) == OK && all.n > 3);
    streamer_callback no_fn = {NULL, NULL};
    ov_genai_decoded_results *r = NULL;
    CHECK_FAILS(ov_genai_llm_pipeline_generate(p, "x", c, &no_fn, &r), INVALID_C_PARAM);
    CHECK_FAILS(ov_genai_llm_pipeline_generate(p, "x", c, NULL, NULL), INVALID_C_PARAM);
    ov_genai_generation_config_free(c);
}

/* A chat turn cancelled from the streamer mid-word leaves no trace: the
 * next turn gets what it would have got first. */
static void test_chat_cancel(ov_genai_llm_pipeline *p) {
    ov_genai_generation_config *c = config_with_max(16);
    CHECK(ov_genai_llm_pipeline_start_chat(p) == OK);
    char *fresh = generate(p, "Hello", c, NULL);
    CHECK(ov_genai_llm_pipeline_finish_chat(p) == OK);

    CHECK(ov_genai_llm_pipeline_start_chat(p) == OK);
    chunks ch = {.stop_at = 1, .verdict = OV_GENAI_STREAMING_STATUS_CANCEL};
    streamer_callback s = {collect, &ch};
    char *cancelled = generate(p, "Once upon a time", c, &s);
    CHECK(ch.n == 1 && cancelled != NULL);
    char *after = generate(p, "Hello", c, NULL);
    CHECK_MSG(fresh && after && strcmp(fresh, after) == 0, "after a cancelled turn '%s', fresh '%s'", after ? after : "",
              fresh ? fresh : "");
    /* max_length in a chat counts the whole rendered conversation */
    ov_genai_generation_config *len = NULL;
    ov_genai_decoded_results *r = NULL;
    CHECK(ov_genai_generation_config_create(&len) == OK && ov_genai_generation_config_set_max_length(len, 4) == OK);
    CHECK_FAILS(ov_genai_llm_pipeline_generate(p, "Hello", len, NULL, &r), OUT_OF_BOUNDS);
    ov_genai_generation_config_free(len);
    CHECK(ov_genai_llm_pipeline_finish_chat(p) == OK);
    free(fresh);
    free(cancelled);
    free(after);
    ov_genai_generation_config_free(c);
}

static ov_genai_json_container *message(const char *role, const char *content) {
    json_t *j = json_pack("{s:s, s:s}", "role", role, "content", content);
    char *text = j ? json_dumps(j, 0) : NULL;
    ov_genai_json_container *m = NULL;
    CHECK(text && ov_genai_json_container_create_from_json_string(&m, text) == OV_GENAI_JSON_CONTAINER_OK);
    free(text);
    json_decref(j);
    return m;
}

static void push(ov_genai_chat_history *h, const char *role, const char *content) {
    ov_genai_json_container *m = message(role, content);
    CHECK(ov_genai_chat_history_push_back(h, m) == OV_GENAI_CHAT_HISTORY_OK);
    ov_genai_json_container_free(m);
}

/* A ChatHistory replayed turn by turn says what a text chat says. */
static void test_chat_history(ov_genai_llm_pipeline *p) {
    ov_genai_generation_config *c = config_with_max(12);
    CHECK(ov_genai_llm_pipeline_start_chat(p) == OK);
    char *t1 = generate(p, "Hello", c, NULL), *t2 = generate(p, "Tell me a story", c, NULL);
    ov_genai_chat_history *h = NULL;
    CHECK_FAILS(ov_genai_llm_pipeline_generate_with_history(p, h, c, NULL, NULL), INVALID_C_PARAM);
    CHECK(ov_genai_chat_history_create(&h) == OV_GENAI_CHAT_HISTORY_OK);
    push(h, "user", "Hello");
    ov_genai_decoded_results *r = NULL;
    CHECK_FAILS(ov_genai_llm_pipeline_generate_with_history(p, h, c, NULL, &r), PARAMETER_MISMATCH); /* a text chat */
    CHECK(ov_genai_llm_pipeline_finish_chat(p) == OK);
    CHECK(ov_genai_llm_pipeline_generate_with_history(p, h, c, NULL, &r) == OK);
    char *h1 = r ? result_text(r) : NULL;
    ov_genai_decoded_results_free(r);
    CHECK_MSG(t1 && h1 && strcmp(t1, h1) == 0, "history '%s', chat '%s'", h1 ? h1 : "", t1 ? t1 : "");
    push(h, "assistant", h1 ? h1 : "");
    push(h, "user", "Tell me a story");
    CHECK(ov_genai_llm_pipeline_generate_with_history(p, h, c, NULL, &r) == OK);
    char *h2 = r ? result_text(r) : NULL;
    CHECK_MSG(t2 && h2 && strcmp(t2, h2) == 0, "history '%s', chat '%s'", h2 ? h2 : "", t2 ? t2 : "");
    ov_genai_perf_metrics *m = NULL;
    float tmpl, tmpl_std;
    CHECK(ov_genai_decoded_results_get_perf_metrics(r, &m) == OK);
    CHECK(ov_genai_perf_metrics_get_chat_template_duration(m, &tmpl, &tmpl_std) == OK && tmpl > 0);
    ov_genai_decoded_results_perf_metrics_free(m);
    ov_genai_decoded_results_free(r);
    ov_genai_chat_history_clear(h);
    CHECK_FAILS(ov_genai_llm_pipeline_generate_with_history(p, h, c, NULL, &r), PARAMETER_MISMATCH); /* empty */
    ov_genai_chat_history_free(h);
    free(t1);
    free(t2);
    free(h1);
    free(h2);
    ov_genai_generation_config_free(c);
}

static void test_pipeline_config(ov_genai_llm_pipeline *p) {
    ov_genai_generation_config *c = NULL, *bad = config_with_max(4), *five = config_with_max(5);
    CHECK(ov_genai_llm_pipeline_get_generation_config(p, &c) == OK);
    size_t v = 0;
    CHECK(c && ov_genai_generation_config_get_max_new_tokens(c, &v) == OK && v == SIZE_MAX);
    CHECK(ov_genai_generation_config_validate(c) == OK); /* the model's EOS is its stop condition */
    CHECK(ov_genai_generation_config_set_min_new_tokens(bad, 9) == OK);
    CHECK_FAILS(ov_genai_llm_pipeline_set_generation_config(p, bad), PARAMETER_MISMATCH);
    CHECK(ov_genai_llm_pipeline_set_generation_config(p, five) == OK);
    ov_genai_generation_config_free(five); /* the pipeline keeps its own copy */
    ov_genai_decoded_results *r = NULL;
    CHECK(ov_genai_llm_pipeline_generate(p, "Once upon a time", NULL, NULL, &r) == OK);
    ov_genai_perf_metrics *m = NULL;
    size_t n_gen = 0;
    CHECK(ov_genai_decoded_results_get_perf_metrics(r, &m) == OK);
    CHECK(ov_genai_perf_metrics_get_num_generation_tokens(m, &n_gen) == OK && n_gen == 5);
    ov_genai_decoded_results_perf_metrics_free(m);
    ov_genai_decoded_results_free(r);
    /* max_length counts the prompt */
    ov_genai_generation_config *len = NULL;
    CHECK(ov_genai_generation_config_create(&len) == OK);
    CHECK(ov_genai_generation_config_set_max_length(len, 2) == OK);
    CHECK_FAILS(ov_genai_llm_pipeline_generate(p, "Once upon a time", len, NULL, &r), OUT_OF_BOUNDS);
    ov_genai_generation_config_free(len);
    ov_genai_generation_config_free(bad);
    CHECK(ov_genai_llm_pipeline_set_generation_config(p, c) == OK);
    ov_genai_generation_config_free(c);
}

/* A draft model (the same one: the same vocabulary) proposes, the model
 * decides: greedy output unchanged. */
static void test_draft(void) {
    ov_genai_llm_pipeline *p = NULL;
    CHECK(ov_genai_llm_pipeline_create(model_path, "CPU", 2, &p, "draft_model", model_path) == OK);
    ov_genai_generation_config *c = config_with_max(20);
    char *plain = p ? generate(p, "Once upon a time", c, NULL) : NULL;
    CHECK(ov_genai_generation_config_set_num_assistant_tokens(c, 3) == OK);
    char *assisted = p ? generate(p, "Once upon a time", c, NULL) : NULL;
    CHECK(plain && assisted && strcmp(plain, assisted) == 0);
    ov_genai_llm_pipeline *no_draft = NULL;
    CHECK_FAILS(ov_genai_llm_pipeline_create(model_path, "CPU", 2, &no_draft, "draft_model", "/nonexistent.gguf"), NOT_FOUND);
    CHECK(no_draft == NULL);
    free(plain);
    free(assisted);
    ov_genai_generation_config_free(c);
    ov_genai_llm_pipeline_free(p);
}

/* stories260K with a chat template of its own that shows every variable
 * it is given, written to path; false if that failed. */
static bool write_templated_model(const char *path) {
    static const char tmpl[] = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% endfor %}"
                               "{% if tools %}[tools {{ tools | length }}]{% endif %}{% if mood %}[mood {{ mood }}]{% endif %}"
                               "{% if add_generation_prompt %}<|assistant|>{% endif %}";
    sprout_gguf *src = NULL;
    sp_gguf_writer *w = sp_gguf_writer_new();
    sprout_status st = w ? sprout_gguf_open(model_path, &src) : SPROUT_ERR_OUT_OF_MEMORY;
    if (st == SPROUT_OK) st = sp_gguf_writer_copy_metadata(w, src);
    if (st == SPROUT_OK) st = sp_gguf_writer_set_str(w, "tokenizer.chat_template", tmpl, strlen(tmpl));
    for (int64_t i = 0; st == SPROUT_OK && i < sprout_gguf_tensor_count(src); i++)
        st = sp_gguf_writer_add_tensor_like(w, src, i, sprout_gguf_tensor_type(src, i), sprout_gguf_tensor_data(src, i));
    if (st == SPROUT_OK) st = sp_gguf_writer_write(w, path, NULL, NULL);
    sp_gguf_writer_free(w);
    sprout_gguf_close(src);
    return st == SPROUT_OK;
}

/* A GGUF with its own chat template: a plain prompt goes through it as a
 * user message, and a ChatHistory's tools and extra context reach it (echo
 * shows the rendered prompt). */
static void test_own_template(void) {
    char dir[] = "/tmp/ovc_tmpl_XXXXXX", path[256];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/templated.gguf", dir);
    CHECK(write_templated_model(path));
    ov_genai_llm_pipeline *p = NULL;
    CHECK(ov_genai_llm_pipeline_create(path, "CPU", 0, &p) == OK);
    ov_genai_generation_config *c = config_with_max(4);
    CHECK(ov_genai_generation_config_set_echo(c, true) == OK);
    char *text = p ? generate(p, "Once upon a time", c, NULL) : NULL;
    const char *want = "<|user|>Once upon a time<|assistant|>";
    CHECK_MSG(text && strncmp(text, want, strlen(want)) == 0, "'%s'", text ? text : "(null)");
    free(text);
    ov_genai_chat_history *h = NULL;
    ov_genai_json_container *tools = NULL, *extra = NULL;
    CHECK(ov_genai_chat_history_create(&h) == OV_GENAI_CHAT_HISTORY_OK);
    push(h, "user", "Hi");
    CHECK(ov_genai_json_container_create_from_json_string(&tools, "[{\"name\": \"a\"}, {\"name\": \"b\"}]") == OV_GENAI_JSON_CONTAINER_OK);
    CHECK(ov_genai_json_container_create_from_json_string(&extra, "{\"mood\": \"happy\"}") == OV_GENAI_JSON_CONTAINER_OK);
    CHECK(ov_genai_chat_history_set_tools(h, tools) == OV_GENAI_CHAT_HISTORY_OK);
    CHECK(ov_genai_chat_history_set_extra_context(h, extra) == OV_GENAI_CHAT_HISTORY_OK);
    ov_genai_decoded_results *r = NULL;
    CHECK(p && ov_genai_llm_pipeline_generate_with_history(p, h, c, NULL, &r) == OK);
    text = r ? result_text(r) : NULL;
    want = "<|user|>Hi[tools 2][mood happy]<|assistant|>";
    CHECK_MSG(text && strncmp(text, want, strlen(want)) == 0, "'%s'", text ? text : "(null)");
    free(text);
    ov_genai_decoded_results_free(r);
    ov_genai_json_container_free(tools);
    ov_genai_json_container_free(extra);
    ov_genai_chat_history_free(h);
    ov_genai_generation_config_free(c);
    ov_genai_llm_pipeline_free(p);
    unlink(path);
    rmdir(dir);
}

/* Results, metrics and configs outlive the pipeline. */
static void test_free_order(void) {
    ov_genai_llm_pipeline *p = NULL;
    ov_genai_generation_config *c = config_with_max(8), *pc = NULL;
    ov_genai_decoded_results *r = NULL;
    ov_genai_perf_metrics *m = NULL;
    CHECK(ov_genai_llm_pipeline_create(model_path, "CPU", 0, &p) == OK);
    CHECK(ov_genai_llm_pipeline_generate(p, "One day", c, NULL, &r) == OK);
    CHECK(ov_genai_llm_pipeline_get_generation_config(p, &pc) == OK);
    CHECK(ov_genai_decoded_results_get_perf_metrics(r, &m) == OK);
    CHECK(ov_genai_llm_pipeline_start_chat(p) == OK); /* freed in a chat */
    ov_genai_llm_pipeline_free(p);
    char *text = result_text(r);
    CHECK(text && *text);
    free(text);
    ov_genai_decoded_results_free(r);
    size_t n = 0;
    CHECK(ov_genai_perf_metrics_get_num_generation_tokens(m, &n) == OK && n > 0);
    ov_genai_generation_config_free(c);
    ov_genai_decoded_results_perf_metrics_free(m);
    CHECK(ov_genai_generation_config_validate(pc) == OK);
    ov_genai_generation_config_free(pc);
}

int main(void) {
    snprintf(model_path, sizeof model_path, "%s/models/stories260K.gguf", test_shared_dir());
    test_paths_and_devices();
    ov_genai_llm_pipeline *p = NULL;
    CHECK(ov_genai_llm_pipeline_create(model_path, "CPU", 0, &p) == OK);
    if (p) {
        test_greedy(p);
        test_streamer(p);
        test_chat_cancel(p);
        test_chat_history(p);
        test_pipeline_config(p);
    }
    ov_genai_llm_pipeline_free(p);
    test_draft();
    test_own_template();
    test_free_order();
    TEST_MAIN_END();
}
