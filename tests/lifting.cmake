# CDF 9/7 lifting: one test source over every backend (Cpu; Cuda when FNNDTPS_BUILD_CUDA,
# whose cases skip where no device is present).
add_executable(test_lifting ${CMAKE_CURRENT_LIST_DIR}/test_lifting.cpp)
target_include_directories(test_lifting PRIVATE ${PROJECT_SOURCE_DIR})
target_link_libraries(test_lifting PRIVATE lwt_ref lwt_cpu GTest::gtest_main fnndtps_warnings)
if(FNNDTPS_BUILD_CUDA)
  target_sources(test_lifting PRIVATE ${CMAKE_CURRENT_LIST_DIR}/test_lifting_cuda.cu
                 ${CMAKE_CURRENT_LIST_DIR}/cuda_device_present.cpp)
  target_compile_definitions(test_lifting PRIVATE FNNDTPS_TEST_CUDA)
  target_link_libraries(test_lifting PRIVATE lwt_cuda)
endif()
gtest_discover_tests(test_lifting DISCOVERY_TIMEOUT 60)
