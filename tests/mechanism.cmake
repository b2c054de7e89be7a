# The mechanism's StarPU-free parts: the queues and the cost model.
if(TARGET fnndtps_sched)
  add_executable(test_mechanism ${CMAKE_CURRENT_LIST_DIR}/test_mechanism.cpp ${PROJECT_SOURCE_DIR}/scheduler/cost.cpp
               ${PROJECT_SOURCE_DIR}/scheduler/task_costs.cpp)
  target_include_directories(test_mechanism PRIVATE ${PROJECT_SOURCE_DIR})
  target_link_libraries(test_mechanism PRIVATE GTest::gtest_main fnndtps_warnings)
  gtest_discover_tests(test_mechanism DISCOVERY_TIMEOUT 60)
endif()
