# DTPS dispatch of a batch as the scheduler sees it (scheduler/dtps_dispatch.hpp, header only):
# seed 001 eqs. (5)-(6) and §1.3 case (1), and agreement with codelets/subtask_weights. Pure
# logic, built everywhere.
add_executable(test_dtps_dispatch ${CMAKE_CURRENT_LIST_DIR}/test_dtps_dispatch.cpp)
target_link_libraries(test_dtps_dispatch PRIVATE subtask_weights GTest::gtest_main fnndtps_warnings)
# Prefixed so that `ctest -R dtps_dispatch` selects them.
gtest_discover_tests(test_dtps_dispatch TEST_PREFIX "dtps_dispatch.")
