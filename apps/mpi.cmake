# The MPI apps (DESIGN §11), in StarPU's MPI build: gemm-mpi (the tiled product across ranks)
# and lwt2d-mpi (the transform's units across ranks), on the StarPU-MPI session helper.
if(FNNDTPS_MPI AND TARGET apps_starpu)
  add_library(apps_mpi STATIC ${CMAKE_CURRENT_LIST_DIR}/mpi_session.cpp)
  target_include_directories(apps_mpi PUBLIC ${PROJECT_SOURCE_DIR})
  # mpi.h's C API only: OpenMPI's deprecated C++ bindings would need libmpi_cxx.
  target_compile_definitions(apps_mpi PUBLIC OMPI_SKIP_MPICXX MPICH_SKIP_MPICXX)
  target_link_libraries(apps_mpi PUBLIC apps_starpu sched_dtps PkgConfig::STARPUMPI MPI::MPI_C PRIVATE fnndtps_warnings)

  add_executable(gemm-mpi ${CMAKE_CURRENT_LIST_DIR}/gemm_mpi.cpp)
  target_link_libraries(gemm-mpi PRIVATE gemm_starpu apps_mpi fnndtps_warnings)
  if(FNNDTPS_BUILD_CUDA)  # a rank's GPU runs the blocks through cuBLAS
    target_compile_definitions(gemm-mpi PRIVATE FNNDTPS_HAVE_CUDA)
    target_link_libraries(gemm-mpi PRIVATE CUDA::cublas CUDA::cudart)
  endif()
  add_executable(lwt2d-mpi ${CMAKE_CURRENT_LIST_DIR}/lwt2d_mpi.cpp)
  target_link_libraries(lwt2d-mpi PRIVATE lwt_starpu lwt_io apps_mpi apps_unit_files fnndtps_warnings)
endif()
