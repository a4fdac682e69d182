/* The GenAI C API's headers compile together as strict C99, and link. */
#include <stdio.h>
#include <string.h>

#include "openvino/genai/c/chat_history.h"
#include "openvino/genai/c/json_container.h"
#include "openvino/genai/c/llm_pipeline.h"

/* written against the first releases' spelling */
static ov_genai_streamming_status_e old_style(const char *str, void *args) {
    (void)str;
    (void)args;
    return OV_GENAI_STREAMMING_STATUS_STOP;
}

int main(void) {
    streamer_callback streamer = {old_style, NULL};
    const int ok = strcmp(ov_get_error_info(OK), "success") == 0 && OV_GENAI_STREAMING_STATUS_CANCEL == 2 && UNKNOW_EXCEPTION == -17 &&
                   streamer.callback_func("", NULL) == OV_GENAI_STREAMING_STATUS_STOP;
    printf("%d passed, %d failed\n", ok, !ok);
    return !ok;
}
