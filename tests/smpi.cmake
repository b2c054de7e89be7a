# StarPU-MPI in simulation (SimGrid's SMPI, DESIGN §8 and §11), built against StarPU's SMPI
# build: lwt2d-mpi's ranks on simulated nodes of different platforms (tests/smpi_lwt.sh).
if(TARGET lwt2d-mpi)
  find_package(Python3 REQUIRED COMPONENTS Interpreter)
  add_test(NAME smpi_lwt
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/smpi_lwt.sh $<TARGET_FILE:lwt2d-mpi> ${STARPU_PREFIX}/bin/starpu_smpirun
                   ${PROJECT_SOURCE_DIR} ${Python3_EXECUTABLE})
  set_tests_properties(smpi_lwt PROPERTIES TIMEOUT 600)
  # bench/smpi.sh scaling's table on 1 and 2 simulated nodes (tests/smpi_scaling.sh).
  add_test(NAME smpi_scaling
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/smpi_scaling.sh ${PROJECT_SOURCE_DIR} ${CMAKE_BINARY_DIR} ${Python3_EXECUTABLE})
  set_tests_properties(smpi_scaling PROPERTIES TIMEOUT 300)
endif()
