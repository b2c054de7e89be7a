# lwt2d filter: bands, ISO 25178-2 parameters and X3P files (test_filter), and the command run
# as a user would, checked against numpy (cli_filter.sh, filter_check.py).
if(TARGET lwt_filter)
  add_executable(test_filter ${CMAKE_CURRENT_LIST_DIR}/test_filter.cpp)
  target_link_libraries(test_filter PRIVATE lwt_filter lwt_io GTest::gtest_main fnndtps_warnings)
  gtest_discover_tests(test_filter)
endif()
if(TARGET lwt2d)
  add_test(NAME lwt2d_filter_cli COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/cli_filter.sh $<TARGET_FILE:lwt2d>
                                         ${CMAKE_CURRENT_LIST_DIR}/filter_check.py)
endif()
