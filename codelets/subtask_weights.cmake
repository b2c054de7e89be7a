# Seed 001 §1.1-1.2 sub-task weights (IA, DA, ordering weight, dispatch, partition): pure logic,
# no StarPU, built everywhere. Included from codelets/CMakeLists.txt; gemm_starpu links it.
add_library(subtask_weights STATIC ${CMAKE_CURRENT_LIST_DIR}/subtask_weights.cpp)
# Users write #include "codelets/subtask_weights.hpp".
target_include_directories(subtask_weights PUBLIC ${PROJECT_SOURCE_DIR})
target_compile_features(subtask_weights PUBLIC cxx_std_17)
target_link_libraries(subtask_weights PRIVATE fnndtps_warnings)
