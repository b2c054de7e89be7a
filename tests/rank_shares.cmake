# How many items each MPI rank takes (apps/rank_shares.hpp, DESIGN §11). Pure logic, header
# only: built everywhere, MPI or not.
add_executable(test_rank_shares ${CMAKE_CURRENT_LIST_DIR}/test_rank_shares.cpp)
target_include_directories(test_rank_shares PRIVATE ${PROJECT_SOURCE_DIR})
target_link_libraries(test_rank_shares PRIVATE GTest::gtest_main fnndtps_warnings)
gtest_discover_tests(test_rank_shares TEST_PREFIX "rank_shares.")
