# The libraries alone, without StarPU (seed 001 §2.2.1-2.2.2): one OpenBLAS gemm on every core,
# one cuBLAS gemm on resident data. bench/seed001.sh runs it beside the gemm app.
if(TARGET gemm_starpu)
  add_executable(bench_blas ${CMAKE_CURRENT_LIST_DIR}/bench_blas.cpp)
  # gemm_starpu brings OpenBLAS (and, with CUDA, cuBLAS and gemm::cuda::tile).
  target_link_libraries(bench_blas PRIVATE gemm_starpu fnndtps_warnings)
  if(FNNDTPS_BUILD_CUDA)
    target_compile_definitions(bench_blas PRIVATE FNNDTPS_HAVE_CUDA)
    target_link_libraries(bench_blas PRIVATE CUDA::cublas CUDA::cudart)
  endif()
endif()
