# GEMM tiles and the gemm app (codelets/gemm.hpp, apps/gemm.cpp): the tile kernels on every
# backend (CUDA cases skip where no device is present), the tiled product under StarPU, and
# the app's command-line contract.
if(TARGET gemm_starpu)
  add_executable(test_gemm ${CMAKE_CURRENT_LIST_DIR}/test_gemm.cpp)
  target_link_libraries(test_gemm PRIVATE gemm_starpu GTest::gtest_main fnndtps_warnings)
  if(FNNDTPS_BUILD_CUDA)
    target_compile_definitions(test_gemm PRIVATE FNNDTPS_TEST_CUDA)
    target_sources(test_gemm PRIVATE ${CMAKE_CURRENT_LIST_DIR}/cuda_device_present.cpp)
    target_link_libraries(test_gemm PRIVATE CUDA::cudart)
  endif()
  gtest_discover_tests(test_gemm TEST_PREFIX "gemm." DISCOVERY_TIMEOUT 60
                       PROPERTIES ENVIRONMENT "STARPU_SILENT=1")
endif()
if(TARGET gemm)
  add_test(NAME gemm_cli COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/cli_gemm.sh $<TARGET_FILE:gemm>)
endif()
# bench/ is added after tests/: bench_blas exists where gemm does and benchmarks are built.
if(TARGET gemm AND FNNDTPS_BUILD_BENCH)
  add_test(NAME seed001_bench COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/seed001_bench.sh $<TARGET_FILE_DIR:gemm>
                                          ${PROJECT_SOURCE_DIR})
endif()
