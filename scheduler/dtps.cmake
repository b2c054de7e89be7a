# DTPS controller (seed 001 §1.3-1.4): CPU/GPU class ratio, per-kind store. The sub-task
# weights of §1.1-1.2 are codelets/subtask_weights.cmake.
# Pure logic, no StarPU: the policies link it.
add_library(sched_dtps STATIC ${CMAKE_CURRENT_LIST_DIR}/dtps.cpp)
# Users write #include "scheduler/dtps.hpp".
target_include_directories(sched_dtps PUBLIC ${PROJECT_SOURCE_DIR})
target_compile_features(sched_dtps PUBLIC cxx_std_17)
target_link_libraries(sched_dtps PUBLIC fnndtps_base PRIVATE fnndtps_warnings)  # fnn/text.hpp's replace_file
