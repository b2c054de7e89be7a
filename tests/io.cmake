# lwt_io: .npy / raw files and the synthetic surface.
add_executable(test_io ${CMAKE_CURRENT_LIST_DIR}/test_io.cpp)
target_link_libraries(test_io PRIVATE lwt_io GTest::gtest_main fnndtps_warnings)
gtest_discover_tests(test_io)
