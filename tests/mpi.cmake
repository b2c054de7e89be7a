# StarPU-MPI (DESIGN §11), built against StarPU's MPI build: gemm-mpi and lwt2d-mpi over 1 to 4 ranks on this
# machine (tests/mpi_gemm.sh, tests/mpi_lwt.sh). Their programs load that build's libstarpu, not the native one
# that scripts/env.sh puts on LD_LIBRARY_PATH.
if(TARGET gemm-mpi)
  add_test(NAME mpi_gemm COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/mpi_gemm.sh $<TARGET_FILE:gemm-mpi> ${MPIEXEC_EXECUTABLE})
  set_tests_properties(mpi_gemm PROPERTIES TIMEOUT 600 ENVIRONMENT "LD_LIBRARY_PATH=${STARPU_LIBRARY_DIRS}")
endif()
if(TARGET lwt2d-mpi AND TARGET lwt2d)
  add_test(NAME mpi_lwt COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/mpi_lwt.sh $<TARGET_FILE:lwt2d-mpi> $<TARGET_FILE:lwt2d>
                                ${MPIEXEC_EXECUTABLE})
  set_tests_properties(mpi_lwt PROPERTIES TIMEOUT 600 ENVIRONMENT "LD_LIBRARY_PATH=${STARPU_LIBRARY_DIRS}")
endif()
include(${CMAKE_CURRENT_LIST_DIR}/cli_common.cmake)
