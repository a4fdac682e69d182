/* The public header must compile alone as strict C99 (-std=c99 -pedantic,
 * every warning an error: see CMakeLists.txt) and link from a C99 program. */
#include "sprout.h"

#include <stdio.h>
#include <string.h>

int main(void) {
    int failed = 0, total = 0;
    sprout_generation_config cfg;
    sprout_generation_config_init(&cfg);
    total++, failed += cfg.struct_size != sizeof cfg;
    total++, failed += strcmp(sprout_status_str(SPROUT_ERR_FORMAT), "format error") != 0;
    total++, failed += sprout_type_block_size(SPROUT_TYPE_Q4_K) != 256;
    sprout_model_params mp = {.struct_size = sizeof mp, .n_threads = 1};
    sprout_model *m = NULL;
    total++, failed += sprout_model_load("/nonexistent.gguf", &mp, &m) != SPROUT_ERR_NOT_FOUND || m != NULL;
    char version[32];
    snprintf(version, sizeof version, "%d.%d.%d", SPROUT_VERSION_MAJOR, SPROUT_VERSION_MINOR, SPROUT_VERSION_PATCH);
    total++, failed += strcmp(sprout_version(), version) != 0;
    sprout_chat_message msgs[] = {{"system", "Be brief."}, {"user", "Hi"}}; /* its initializer compiles as C99 */
    (void)msgs;
    printf("%d passed, %d failed\n", total - failed, failed);
    return failed ? 1 : 0;
}
