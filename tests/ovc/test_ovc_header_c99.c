/* The GenAI C API's headers compile together as strict C99, and link. */
#include <stdio.h>
#include <string.h>

#include "openvino/genai/c/chat_history.h"
#include "openvino/genai/c/json_container.h"
#include "openvino/genai/c/llm_pipeline.h"

int main(void) {
    const int ok = strcmp(ov_get_error_info(OK), "success") == 0 && OV_GENAI_STREAMING_STATUS_CANCEL == 2 && UNKNOW_EXCEPTION == -17;
    printf("%d passed, %d failed\n", ok, !ok);
    return !ok;
}
