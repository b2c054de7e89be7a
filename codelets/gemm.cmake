# GEMM tiles (DESIGN §4.4, seed 001's workload): reference/, cpu/ (OpenBLAS), cuda/ (cuBLAS)
# and the StarPU tasks, in one static library `gemm_starpu`. Included from
# codelets/CMakeLists.txt.
if(STARPU_FOUND)
  # Debian's libopenblas-dev: pkg-config `openblas` names the library and cblas.h's folder.
  pkg_check_modules(OPENBLAS IMPORTED_TARGET openblas)
  if(OPENBLAS_FOUND)
    set(_gemm_blas PkgConfig::OPENBLAS)
  else()
    find_library(_gemm_openblas_lib openblas REQUIRED)
    set(_gemm_blas ${_gemm_openblas_lib})
  endif()

  add_library(gemm_starpu STATIC
    ${CMAKE_CURRENT_LIST_DIR}/gemm_tasks.cpp
    ${CMAKE_CURRENT_LIST_DIR}/reference/gemm.cpp
    ${CMAKE_CURRENT_LIST_DIR}/cpu/gemm.cpp)
  target_include_directories(gemm_starpu PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(gemm_starpu PUBLIC PkgConfig::STARPU ${_gemm_blas} subtask_weights codelets_simulated PRIVATE fnndtps_warnings)
  # The reference runs under --check on big matrices: vectorise its inner loop.
  set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/reference/gemm.cpp PROPERTIES COMPILE_OPTIONS -O3)
  if(FNNDTPS_BUILD_CUDA)
    target_sources(gemm_starpu PRIVATE ${CMAKE_CURRENT_LIST_DIR}/cuda/gemm_cuda.cpp)
    target_compile_definitions(gemm_starpu PRIVATE FNNDTPS_HAVE_CUDA)
    target_link_libraries(gemm_starpu PUBLIC CUDA::cublas CUDA::cudart)
  endif()
endif()
