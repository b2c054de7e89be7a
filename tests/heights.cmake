# The height sums (codelets/heights.hpp): every backend's kernels against the plain two-pass
# reference (apps/filter/surface_params.hpp), then as StarPU tasks (Cuda cases skip without a
# device).
if(TARGET heights_starpu AND TARGET lwt_filter)
  add_executable(test_heights ${CMAKE_CURRENT_LIST_DIR}/test_heights.cpp)
  target_include_directories(test_heights PRIVATE ${PROJECT_SOURCE_DIR})
  target_link_libraries(test_heights PRIVATE heights_starpu lwt_filter GTest::gtest_main fnndtps_warnings)
  if(FNNDTPS_BUILD_CUDA)
    target_sources(test_heights PRIVATE ${CMAKE_CURRENT_LIST_DIR}/test_heights_cuda.cu
                   ${CMAKE_CURRENT_LIST_DIR}/cuda_device_present.cpp)
    target_compile_definitions(test_heights PRIVATE FNNDTPS_TEST_CUDA)
    target_link_libraries(test_heights PRIVATE heights_cuda)
  endif()
  gtest_discover_tests(test_heights DISCOVERY_TIMEOUT 60 PROPERTIES ENVIRONMENT "STARPU_SILENT=1")
endif()
