# The DTPS controller: seed 001's three cases, convergence on a synthetic two-class model,
# the per-kind store (the sub-task weights are tests/subtask_weights.cmake). The scheduler
# folder (and sched_dtps) is only built where StarPU is found.
if(TARGET sched_dtps)
  add_executable(test_dtps ${CMAKE_CURRENT_LIST_DIR}/test_dtps.cpp)
  target_link_libraries(test_dtps PRIVATE sched_dtps GTest::gtest_main fnndtps_warnings)
  # Prefixed so that `ctest -R dtps` selects them.
  gtest_discover_tests(test_dtps TEST_PREFIX "dtps.")
endif()
