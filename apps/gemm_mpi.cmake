# gemm-mpi: the tiled product across the ranks of an MPI job (DESIGN §11), in StarPU's MPI build.
if(FNNDTPS_MPI AND TARGET gemm_starpu)
  add_executable(gemm-mpi ${CMAKE_CURRENT_LIST_DIR}/gemm_mpi.cpp)
  target_link_libraries(gemm-mpi PRIVATE gemm_starpu apps_starpu PkgConfig::STARPUMPI MPI::MPI_C fnndtps_warnings)
  # mpi.h's C API only: OpenMPI's deprecated C++ bindings would need libmpi_cxx.
  target_compile_definitions(gemm-mpi PRIVATE OMPI_SKIP_MPICXX MPICH_SKIP_MPICXX)
endif()
