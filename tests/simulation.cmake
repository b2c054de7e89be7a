# Simulation (DESIGN §8), built against StarPU's SimGrid build: the apps under every policy
# on the simulated GPU machine (tests/simulation.sh).
if(TARGET lwt2d AND TARGET gemm AND TARGET fnndtps)
  add_test(NAME simulation_runs
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/simulation.sh $<TARGET_FILE:lwt2d> $<TARGET_FILE:gemm>
                   $<TARGET_FILE:fnndtps> ${PROJECT_SOURCE_DIR} ${STARPU_LIBRARY_DIRS})
  set_tests_properties(simulation_runs PROPERTIES TIMEOUT 900)
endif()

# The performance gate: simulated times of ours against bench/sim_baseline.csv (bench/sim_gate.py).
if(TARGET lwt2d AND TARGET gemm)
  find_package(Python3 REQUIRED COMPONENTS Interpreter)
  add_test(NAME simulation_gate COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/bench/sim_gate.py ${CMAKE_BINARY_DIR})
  set_tests_properties(simulation_gate PROPERTIES TIMEOUT 600 ENVIRONMENT "STARPU_SIMGRID_PREFIX=${STARPU_PREFIX}")
endif()
