# What the policy reads of a task's buffers (scheduler/task_info.hpp): the accumulators, without
# StarPU running (fake handles).
add_executable(test_task_info ${CMAKE_CURRENT_LIST_DIR}/test_task_info.cpp)
target_link_libraries(test_task_info PRIVATE PkgConfig::STARPU GTest::gtest_main fnndtps_warnings)
target_include_directories(test_task_info PRIVATE ${PROJECT_SOURCE_DIR})
gtest_discover_tests(test_task_info)

# The unit table (scheduler/units.hpp): places, joins, crossings, batches, settling; without
# StarPU running (its pthread wrappers and relax calls work outside a worker).
add_executable(test_units ${CMAKE_CURRENT_LIST_DIR}/test_units.cpp)
target_link_libraries(test_units PRIVATE PkgConfig::STARPU GTest::gtest_main fnndtps_warnings)
target_include_directories(test_units PRIVATE ${PROJECT_SOURCE_DIR})
gtest_discover_tests(test_units)
