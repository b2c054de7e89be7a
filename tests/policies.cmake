# The policies on emulated heterogeneity (4 CPU workers, time-based work).
if(TARGET fnndtps_sched)
  add_executable(test_policies ${CMAKE_CURRENT_LIST_DIR}/test_policies.cpp)
  target_link_libraries(test_policies PRIVATE fnndtps_sched fnndtps_emulation GTest::gtest fnndtps_warnings)
  # Timing-sensitive: run alone, not beside other tests.
  gtest_discover_tests(test_policies DISCOVERY_TIMEOUT 60 PROPERTIES RUN_SERIAL TRUE)
endif()
