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

# StarPU's own microbenchmark parallel_independent_heterogeneous_tasks_data under our policies
# (tests/sim_clients.sh), built from StarPU's source tree (its path in ${STARPU_PREFIX}/.source).
# Its "../helper.h" (tests/helper.h) pulls StarPU's internal headers; the program needs only
# STARPU_TEST_SKIPPED from it, so a copy is compiled beside a two-line helper.h (as
# scripts/build_starpu_examples.sh). A missing source fails the test with one line.
if(TARGET fnndtps)
  set(_pihd parallel_independent_heterogeneous_tasks_data)
  set(_pihd_why "")
  if(EXISTS ${STARPU_PREFIX}/.source)
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${STARPU_PREFIX}/.source)
    file(READ ${STARPU_PREFIX}/.source _starpu_src)
    string(STRIP "${_starpu_src}" _starpu_src)
    set(_pihd_src ${_starpu_src}/tests/microbenchs/${_pihd}.c)
    if(NOT EXISTS ${_pihd_src})
      set(_pihd_why "no ${_pihd_src} in StarPU's source tree")
    endif()
  else()
    set(_pihd_why "no ${STARPU_PREFIX}/.source: StarPU's source tree is unknown (scripts/setup.sh installs it)")
  endif()
  if(_pihd_why STREQUAL "")
    set(_shim ${CMAKE_CURRENT_BINARY_DIR}/starpu_microbenchs)
    configure_file(${_pihd_src} ${_shim}/microbenchs/${_pihd}.c COPYONLY)
    file(WRITE ${_shim}/helper.h "#include <errno.h>\n#define STARPU_TEST_SKIPPED 77\n")
    add_executable(starpu_${_pihd} ${_shim}/microbenchs/${_pihd}.c)
    target_link_libraries(starpu_${_pihd} PRIVATE PkgConfig::STARPU)
    set_target_properties(starpu_${_pihd} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${_shim}
                          BUILD_RPATH "${STARPU_LIBRARY_DIRS}")
    # The same program with its model misjudging the workers (tests/skewed_sleep.h).
    add_executable(starpu_${_pihd}_skewed ${_shim}/microbenchs/${_pihd}.c)
    target_compile_options(starpu_${_pihd}_skewed PRIVATE -include ${CMAKE_CURRENT_LIST_DIR}/skewed_sleep.h)
    target_link_libraries(starpu_${_pihd}_skewed PRIVATE PkgConfig::STARPU)
    set_target_properties(starpu_${_pihd}_skewed PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${_shim}
                          BUILD_RPATH "${STARPU_LIBRARY_DIRS}")
    add_test(NAME simulation_clients
             COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/sim_clients.sh $<TARGET_FILE:starpu_${_pihd}>
                     $<TARGET_FILE:fnndtps> ${PROJECT_SOURCE_DIR} ${STARPU_LIBRARY_DIRS}
                     $<TARGET_FILE:starpu_${_pihd}_skewed>)
  else()
    message(WARNING "simulation_clients will fail: ${_pihd_why}")
    add_test(NAME simulation_clients COMMAND sh -c "echo \"$1\"; exit 1" sh "FAIL: ${_pihd_why}")
  endif()
  set_tests_properties(simulation_clients PROPERTIES TIMEOUT 300)
endif()

# A short task whose input only a GPU holds stays on the GPU class (tests/sim_held.c, .sh).
if(TARGET fnndtps)
  add_executable(sim_held ${CMAKE_CURRENT_LIST_DIR}/sim_held.c)
  target_link_libraries(sim_held PRIVATE PkgConfig::STARPU)
  set_target_properties(sim_held PROPERTIES BUILD_RPATH "${STARPU_LIBRARY_DIRS}")
  add_test(NAME simulation_held
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/sim_held.sh $<TARGET_FILE:sim_held> $<TARGET_FILE:fnndtps>
                   ${PROJECT_SOURCE_DIR} ${STARPU_LIBRARY_DIRS})
  set_tests_properties(simulation_held PROPERTIES TIMEOUT 300)
endif()

# StarPU's stencil's task graph: our policies within 1/0.95 of lws's and dmdas's best time
# (tests/sim_stencil.c, .sh).
if(TARGET fnndtps)
  add_executable(sim_stencil ${CMAKE_CURRENT_LIST_DIR}/sim_stencil.c)
  target_link_libraries(sim_stencil PRIVATE PkgConfig::STARPU)
  set_target_properties(sim_stencil PROPERTIES BUILD_RPATH "${STARPU_LIBRARY_DIRS}")
  add_test(NAME simulation_stencil
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/sim_stencil.sh $<TARGET_FILE:sim_stencil> $<TARGET_FILE:fnndtps>
                   ${PROJECT_SOURCE_DIR} ${STARPU_LIBRARY_DIRS})
  set_tests_properties(simulation_stencil PROPERTIES TIMEOUT 300)
endif()
