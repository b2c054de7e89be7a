# The LWT benchmarks: fused CUDA passes on device-resident data (bench_lwt_cuda) and the
# end-to-end comparison across StarPU schedulers (lwt_e2e.sh, which runs lwt2d).
if(FNNDTPS_BUILD_CUDA)
  add_executable(bench_lwt_cuda ${CMAKE_CURRENT_LIST_DIR}/bench_lwt_cuda.cu)
  target_link_libraries(bench_lwt_cuda PRIVATE lwt_cuda lwt_cpu CUDA::cudart)
endif()

# Per-task overhead (StarPU-only program, policies loaded through STARPU_SCHED_LIB).
if(STARPU_FOUND)
  add_executable(bench_overhead ${CMAKE_CURRENT_LIST_DIR}/bench_overhead.c)
  target_link_libraries(bench_overhead PRIVATE PkgConfig::STARPU)
endif()
