# StarPU-MPI (DESIGN §11), built against StarPU's MPI build: gemm-mpi over 1 to 4 ranks on this
# machine (tests/mpi_gemm.sh). Its programs load that build's libstarpu, not the native one
# that scripts/env.sh puts on LD_LIBRARY_PATH.
if(TARGET gemm-mpi)
  add_test(NAME mpi_gemm COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/mpi_gemm.sh $<TARGET_FILE:gemm-mpi> ${MPIEXEC_EXECUTABLE})
  set_tests_properties(mpi_gemm PROPERTIES TIMEOUT 600 ENVIRONMENT "LD_LIBRARY_PATH=${STARPU_LIBRARY_DIRS}")
endif()
