# Seed 001 §1.1-1.2 sub-task weights (codelets/subtask_weights.hpp): eqs. (3)-(6) and the
# partition on a hand example. Pure logic: built everywhere, StarPU or not.
add_executable(test_subtask_weights ${CMAKE_CURRENT_LIST_DIR}/test_subtask_weights.cpp)
target_link_libraries(test_subtask_weights PRIVATE subtask_weights GTest::gtest_main fnndtps_warnings)
# Prefixed so that `ctest -R subtask_weights` selects them.
gtest_discover_tests(test_subtask_weights TEST_PREFIX "subtask_weights.")
