# What the policy reads of a task's buffers (scheduler/task_info.hpp): the accumulators, without
# StarPU running (fake handles).
add_executable(test_task_info ${CMAKE_CURRENT_LIST_DIR}/test_task_info.cpp)
target_link_libraries(test_task_info PRIVATE PkgConfig::STARPU GTest::gtest_main fnndtps_warnings)
target_include_directories(test_task_info PRIVATE ${PROJECT_SOURCE_DIR})
gtest_discover_tests(test_task_info)
