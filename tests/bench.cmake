# The bench's one command (bench/compare.py --quick on a tiny LWT, stable and emulated), the cold
# bench (bench/cold.py --quick), StarPU's programs as clients (bench/clients.py), the mechanism
# suite (bench/mechanism.py) and the perturbation injector's contract. bench/ is added after tests/, so test for the option, not
# the target; generator expressions resolve it later.
if(TARGET lwt2d)
  add_test(NAME bench_compare_quick
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_bench.sh compare ${PROJECT_SOURCE_DIR}/bench/compare.py
                   ${CMAKE_BINARY_DIR})
  # It compares the emulated classes' times (x3 against x1): run alone, not beside other tests.
  set_tests_properties(bench_compare_quick PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120 RUN_SERIAL TRUE)
  # The cold bench (bench/cold.py --quick): one process per run, fresh StarPU and model folders.
  add_test(NAME bench_cold_quick
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_bench.sh cold ${PROJECT_SOURCE_DIR}/bench/cold.py
                   ${CMAKE_BINARY_DIR})
  # Its processes time themselves: run alone, not beside other tests.
  set_tests_properties(bench_cold_quick PROPERTIES TIMEOUT 300 RUN_SERIAL TRUE)
endif()
if(TARGET fnndtps)
  # StarPU's own programs under our policy and lws (bench/clients.py), built from StarPU's source.
  add_test(NAME bench_clients_quick
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_bench.sh clients ${PROJECT_SOURCE_DIR}/bench/clients.py
                   ${PROJECT_SOURCE_DIR} $<TARGET_FILE:fnndtps>)
  set_tests_properties(bench_clients_quick PROPERTIES TIMEOUT 300 RUN_SERIAL TRUE)
endif()
if(TARGET fnndtps AND FNNDTPS_BUILD_BENCH)  # bench_overhead
  # The mechanism suite (bench/mechanism.py), small, over our apps and StarPU's programs.
  add_test(NAME bench_mechanism_quick
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_bench.sh mechanism ${PROJECT_SOURCE_DIR}/bench/mechanism.py
                   ${PROJECT_SOURCE_DIR} ${CMAKE_BINARY_DIR} $<TARGET_FILE:fnndtps>)
  set_tests_properties(bench_mechanism_quick PROPERTIES TIMEOUT 400 RUN_SERIAL TRUE)
endif()
if(TARGET fnndtps AND FNNDTPS_BUILD_BENCH)
  # Every suite of the bench (bench/suites.py) in its --quick form: what the GPU machine runs;
  # the mpi suite with the MPI build where scripts/test.sh made it (built before these tests run).
  set(_mpi_build "$ENV{MPI_BUILD_DIR}")
  if(NOT _mpi_build)
    set(_mpi_build ${PROJECT_SOURCE_DIR}/build-mpi)
  endif()
  add_test(NAME bench_suites_quick
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_bench.sh suites ${PROJECT_SOURCE_DIR}/bench/suites.py
                   ${PROJECT_SOURCE_DIR} ${CMAKE_BINARY_DIR} ${_mpi_build})
  set_tests_properties(bench_suites_quick PROPERTIES TIMEOUT 900 RUN_SERIAL TRUE)
endif()
if(FNNDTPS_BUILD_BENCH)
  add_test(NAME perturb_cli COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_bench.sh perturb $<TARGET_FILE:perturb>)
  set_tests_properties(perturb_cli PROPERTIES TIMEOUT 60)
endif()
