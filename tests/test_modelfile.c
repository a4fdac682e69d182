/* The Modelfile parser: Ollama's documented example, every quoting form,
 * case-insensitive instructions, comments, the parameters mapped onto a
 * generation config, and every error with the line it names. */
#include "test_util.h"

#include "pipeline/modelfile.h"

static sp_modelfile *parse(const char *text) {
    sp_modelfile *mf = NULL;
    sprout_status st = sp_modelfile_parse(text, strlen(text), &mf);
    CHECK_MSG(st == SPROUT_OK, "%s", sprout_last_error());
    return mf;
}

/* Parsing (or applying, when `apply`) fails with exactly `msg`. */
static void expect_error(const char *text, bool apply, const char *msg) {
    sp_modelfile *mf = NULL;
    sprout_status st = sp_modelfile_parse(text, strlen(text), &mf);
    if (apply && st == SPROUT_OK) {
        sprout_generation_config cfg;
        sprout_generation_config_init(&cfg);
        sprout_generation_config before = cfg;
        sp_modelfile_runner runner = {1, 2, 3, 4};
        st = sp_modelfile_apply_parameters(mf, &cfg, &runner);
        CHECK(cfg.temperature == before.temperature && cfg.n_stop_strings == before.n_stop_strings);
        CHECK(runner.num_ctx == 1 && runner.num_keep == 4);
        sp_modelfile_free(mf);
    } else {
        CHECK(mf == NULL);
    }
    CHECK_MSG(st == SPROUT_ERR_FORMAT, "status %d for %s", (int)st, msg);
    CHECK_MSG(!strcmp(sprout_last_error(), msg), "got '%s', want '%s'", sprout_last_error(), msg);
}

static void test_documented_example(void) {
    const char *text = "FROM llama3.2\n"
                       "# sets the temperature to 1 [higher is more creative, lower is more coherent]\n"
                       "PARAMETER temperature 1\n"
                       "# sets the context window size to 4096\n"
                       "PARAMETER num_ctx 4096\n"
                       "\n"
                       "# sets a custom system message to specify the behavior of the chat assistant\n"
                       "SYSTEM \"\"\"You are Mario from super mario bros, acting as an assistant.\"\"\"\n"
                       "MESSAGE user Is Toronto in Canada?\n"
                       "MESSAGE assistant yes\n"
                       "MESSAGE user Is Sacramento in Canada?\n"
                       "MESSAGE assistant no\n"
                       "TEMPLATE \"\"\"{{ if .System }}<|start_header_id|>system<|end_header_id|>\n"
                       "\n"
                       "{{ .System }}<|eot_id|>{{ end }}{{ if .Prompt }}<|start_header_id|>user<|end_header_id|>\n"
                       "\n"
                       "{{ .Prompt }}<|eot_id|>{{ end }}<|start_header_id|>assistant<|end_header_id|>\n"
                       "\n"
                       "{{ .Response }}<|eot_id|>\"\"\"\n";
    sp_modelfile *mf = parse(text);
    if (!mf) return;
    CHECK(!strcmp(mf->from, "llama3.2"));
    CHECK(!strcmp(mf->system, "You are Mario from super mario bros, acting as an assistant."));
    CHECK(mf->n_messages == 4);
    CHECK(!strcmp(mf->messages[0].role, "user") && !strcmp(mf->messages[0].content, "Is Toronto in Canada?"));
    CHECK(!strcmp(mf->messages[3].role, "assistant") && !strcmp(mf->messages[3].content, "no"));
    CHECK(!strncmp(mf->template_text, "{{ if .System }}<|start_header_id|>system<|end_header_id|>\n\n{{ .System }}",
                   70));
    CHECK(strstr(mf->template_text, "{{ .Response }}<|eot_id|>") != NULL);
    CHECK(mf->template_text[strlen(mf->template_text) - 1] == '>');
    CHECK(mf->n_params == 2 && mf->params[0].line == 3 && mf->params[1].line == 5);
    CHECK(!strcmp(mf->params[1].name, "num_ctx") && !strcmp(mf->params[1].value, "4096"));

    sprout_generation_config cfg;
    sprout_generation_config_init(&cfg);
    sp_modelfile_runner runner = {0, 0, 0, -1};
    CHECK(sp_modelfile_apply_parameters(mf, &cfg, &runner) == SPROUT_OK);
    CHECK(cfg.temperature == 1.0f);
    CHECK(runner.num_ctx == 4096 && runner.num_thread == 0 && runner.num_keep == -1);
    CHECK(cfg.n_stop_strings == 0);
    sp_modelfile_free(mf);
}

static void test_quoting_and_case(void) {
    const char *text = "  # an indented comment\r\n"
                       "from ./model.gguf   \r\n"
                       "System \"a \\\"quoted\\\" value \\\\ with # inside\"\n"
                       "adapter ./a.gguf\n"
                       "ADAPTER \"./b c.gguf\"\n"
                       "license \"\"\"MIT\n"
                       "line two\"\"\"   \n"
                       "LICENSE Apache 2.0\n"
                       "message system \"two\n"
                       "lines\"\n"
                       "TEMPLATE plain {{ .Prompt }} # not a comment\n"
                       "tEmPlAtE \"\"\"\"\"\"\n"
                       "PARAMETER stop \"<|eot_id|>\"\n"
                       "PARAMETER stop <|end|>\n"
                       "PARAMETER stop \"\"\"\n\"\"\"\n";
    sp_modelfile *mf = parse(text);
    if (!mf) return;
    CHECK(!strcmp(mf->from, "./model.gguf"));
    CHECK(!strcmp(mf->system, "a \"quoted\" value \\ with # inside"));
    CHECK(mf->n_adapters == 2 && !strcmp(mf->adapters[1], "./b c.gguf"));
    CHECK(mf->n_licenses == 2 && !strcmp(mf->licenses[0], "MIT\nline two") && !strcmp(mf->licenses[1], "Apache 2.0"));
    CHECK(mf->n_messages == 1 && !strcmp(mf->messages[0].role, "system") &&
          !strcmp(mf->messages[0].content, "two\nlines"));
    CHECK(!strcmp(mf->template_text, "")); /* the last TEMPLATE wins, even empty */
    CHECK(mf->n_params == 3 && mf->params[2].line == 15);

    sprout_generation_config cfg;
    sprout_generation_config_init(&cfg);
    CHECK(sp_modelfile_apply_parameters(mf, &cfg, NULL) == SPROUT_OK);
    CHECK(cfg.n_stop_strings == 3);
    if (cfg.n_stop_strings == 3) {
        CHECK(!strcmp(cfg.stop_strings[0], "<|eot_id|>"));
        CHECK(!strcmp(cfg.stop_strings[1], "<|end|>"));
        CHECK(!strcmp(cfg.stop_strings[2], "\n"));
    }
    sp_modelfile_free(mf);
}

static void test_parameters(void) {
    const char *text = "FROM m\n"
                       "PARAMETER num_predict 100\n"
                       "PARAMETER max_new_token 42\n"
                       "PARAMETER temperature 0.25\n"
                       "PARAMETER top_k 7\n"
                       "PARAMETER top_p 0.5\n"
                       "PARAMETER min_p 0.125\n"
                       "PARAMETER typical_p 0.75\n"
                       "PARAMETER repeat_penalty 1.5\n"
                       "PARAMETER repeat_last_n -1\n"
                       "PARAMETER presence_penalty 0.5\n"
                       "PARAMETER frequency_penalty -0.5\n"
                       "PARAMETER seed 1234\n"
                       "PARAMETER stop_id 2\n"
                       "PARAMETER stop_id 128009\n"
                       "PARAMETER num_thread 4\n"
                       "PARAMETER num_batch 512\n"
                       "PARAMETER num_keep 5\n";
    sp_modelfile *mf = parse(text);
    if (!mf) return;
    sprout_generation_config cfg;
    sprout_generation_config_init(&cfg);
    sp_modelfile_runner runner = {-7, 0, 0, 0};
    CHECK(sp_modelfile_apply_parameters(mf, &cfg, &runner) == SPROUT_OK);
    CHECK(cfg.max_new_tokens == 42);
    CHECK(cfg.temperature == 0.25f && cfg.top_k == 7 && cfg.top_p == 0.5f && cfg.min_p == 0.125f);
    CHECK(cfg.typical_p == 0.75f && cfg.repetition_penalty == 1.5f && cfg.repeat_last_n == -1);
    CHECK(cfg.presence_penalty == 0.5f && cfg.frequency_penalty == -0.5f && cfg.seed == 1234);
    CHECK(cfg.n_stop_token_ids == 2 && cfg.stop_token_ids[0] == 2 && cfg.stop_token_ids[1] == 128009);
    CHECK(runner.num_ctx == -7 && runner.num_thread == 4 && runner.num_batch == 512 && runner.num_keep == 5);
    /* Applying twice gives the same lists, not longer ones. */
    CHECK(sp_modelfile_apply_parameters(mf, &cfg, &runner) == SPROUT_OK);
    CHECK(cfg.n_stop_token_ids == 2 && cfg.n_stop_strings == 0);
    sp_modelfile_free(mf);
}

static void test_errors(void) {
    expect_error("FROM m\n\nBOGUS x\n", false, "Modelfile:3: unknown instruction 'BOGUS'");
    expect_error("# only a comment\n\nSYSTEM hi\n", false, "Modelfile:3: no FROM instruction (one is required)");
    expect_error("", false, "Modelfile:1: no FROM instruction (one is required)");
    expect_error("FROM m\nSYSTEM \"\"\"one\ntwo\n", false, "Modelfile:2: SYSTEM's \"\"\" is never closed");
    expect_error("FROM m\n\nTEMPLATE \"open\n", false, "Modelfile:3: TEMPLATE's \" is never closed");
    expect_error("FROM m\nSYSTEM \"\"\"a\"\"\" b\n", false, "Modelfile:2: text after the closing quote of SYSTEM");
    expect_error("FROM m\nMESSAGE user hi\nMESSAGE tool result\n", false,
                 "Modelfile:3: MESSAGE role 'tool' is not system, user or assistant");
    expect_error("FROM m\nMESSAGE\n", false, "Modelfile:2: MESSAGE without a role");
    expect_error("FROM m\nMESSAGE user\n", false, "Modelfile:2: MESSAGE without a value");
    expect_error("FROM m\n\n\nPARAMETER temperature   \n", false, "Modelfile:4: PARAMETER without a value");
    expect_error("FROM m\nPARAMETER\n", false, "Modelfile:2: PARAMETER without a name");
    expect_error("FROM\n", false, "Modelfile:1: FROM without a value");
    expect_error("FROM a\nFROM b\n", false, "Modelfile:2: a second FROM (the first is at line 1)");
    expect_error("FROM m\nSYSTEM \"\"\"x\n\"\"\"\nPARAMETER mirostat_x 1\n", true,
                 "Modelfile:4: unknown PARAMETER 'mirostat_x'");
    expect_error("FROM m\nPARAMETER temperature hot\n", true,
                 "Modelfile:2: PARAMETER temperature wants a number of at least 0, not 'hot'");
    expect_error("FROM m\nPARAMETER stop x\nPARAMETER top_k 4.5\n", true,
                 "Modelfile:3: PARAMETER top_k wants an integer from 0 to 2147483647, not '4.5'");
    expect_error("FROM m\nPARAMETER num_predict -1\n", true,
                 "Modelfile:2: PARAMETER num_predict wants an integer from 0 to 2147483647, not '-1'");
    expect_error("FROM m\nPARAMETER stop_id x\n", true,
                 "Modelfile:2: PARAMETER stop_id wants an integer from 0 to 2147483647, not 'x'");
    expect_error("FROM m\nPARAMETER top_p nan\n", true,
                 "Modelfile:2: PARAMETER top_p wants a number of at least 0, not 'nan'");
    const char nul[] = "FROM m\nSYSTEM a\0b\n";
    sp_modelfile *mf = NULL;
    CHECK(sp_modelfile_parse(nul, sizeof nul - 1, &mf) == SPROUT_ERR_FORMAT && mf == NULL);
    CHECK(!strcmp(sprout_last_error(), "Modelfile:2: a NUL byte"));
    sp_modelfile_free(NULL);
}

int main(void) {
    test_documented_example();
    test_quoting_and_case();
    test_parameters();
    test_errors();
    TEST_MAIN_END();
}
