// The public header must compile as C++ and link from a C++ program.
#include "sprout.h"

#include <cstdio>
#include <cstring>

int main() {
    sprout_generation_config cfg;
    sprout_generation_config_init(&cfg);
    int failed = 0;
    failed += cfg.struct_size != sizeof cfg;
    failed += std::strcmp(sprout_status_str(SPROUT_ERR_FORMAT), "format error") != 0;
    failed += sprout_type_block_size(SPROUT_TYPE_Q4_K) != 256;
    sprout_model *m = nullptr;
    failed += sprout_model_load("/nonexistent.gguf", nullptr, &m) != SPROUT_ERR_NOT_FOUND;
    std::printf("%d passed, %d failed\n", 4 - failed, failed);
    return failed ? 1 : 0;
}
