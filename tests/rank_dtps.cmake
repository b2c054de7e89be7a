# Seed 001's DTPS over R MPI ranks by recursive bisection (apps/rank_dtps.hpp, DESIGN §11). Pure
# logic, header only over sched_dtps: built natively, MPI or not, where the scheduler is.
if(TARGET sched_dtps)
  add_executable(test_rank_dtps ${CMAKE_CURRENT_LIST_DIR}/test_rank_dtps.cpp)
  target_include_directories(test_rank_dtps PRIVATE ${PROJECT_SOURCE_DIR})
  target_link_libraries(test_rank_dtps PRIVATE sched_dtps GTest::gtest_main fnndtps_warnings)
  gtest_discover_tests(test_rank_dtps TEST_PREFIX "rank_dtps.")
endif()
