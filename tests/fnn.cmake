# The FNN library and fnn-tool's handling of bad input.
add_executable(test_fnn ${CMAKE_CURRENT_LIST_DIR}/test_fnn.cpp)
target_link_libraries(test_fnn PRIVATE fnn GTest::gmock GTest::gtest_main fnndtps_warnings)
target_compile_definitions(test_fnn PRIVATE FNN_TOOL_PATH="$<TARGET_FILE:fnn-tool>")
add_dependencies(test_fnn fnn-tool)
# Prefixed so that `ctest -R fnn` selects them.
gtest_discover_tests(test_fnn TEST_PREFIX "fnn.")
