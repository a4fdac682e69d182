# find_package(OpenVINOGenAI): sprout's OpenVINO GenAI C API library as
# openvino::genai::c (libopenvino_genai_c.so, which finds libsprout.so
# beside itself) and openvino::genai::c_static (libopenvino_genai_c.a, over
# sprout::sprout_static from the sprout package installed with it).
include(CMakeFindDependencyMacro)
find_dependency(sprout HINTS "${CMAKE_CURRENT_LIST_DIR}/..")
include("${CMAKE_CURRENT_LIST_DIR}/OpenVINOGenAITargets.cmake")
