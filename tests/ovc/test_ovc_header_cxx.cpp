// The GenAI C API's headers compile as C++11 and link with C linkage.
#include <cstdio>
#include <cstring>

#include "openvino/genai/c/chat_history.h"
#include "openvino/genai/c/json_container.h"
#include "openvino/genai/c/llm_pipeline.h"

int main() {
    ov_genai_generation_config* config = nullptr;
    const bool ok = ov_genai_generation_config_create(&config) == OK && ov_genai_generation_config_set_num_beams(config, 2) == NOT_IMPLEMENTED &&
                    std::strcmp(ov_get_error_info(NOT_FOUND), "not found") == 0;
    ov_genai_generation_config_free(config);
    std::printf("%d passed, %d failed\n", ok ? 1 : 0, ok ? 0 : 1);
    return ok ? 0 : 1;
}
