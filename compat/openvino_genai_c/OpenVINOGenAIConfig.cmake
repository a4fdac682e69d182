# find_package(OpenVINOGenAI): sprout's OpenVINO GenAI C API library, as
# the imported target openvino::genai::c (libopenvino_genai_c.so, which
# finds libsprout beside itself).
include("${CMAKE_CURRENT_LIST_DIR}/OpenVINOGenAITargets.cmake")
set(OpenVINOGenAI_FOUND TRUE)
