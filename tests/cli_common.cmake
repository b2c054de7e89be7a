# One --help and one bad-flag behaviour for every program (apps/cli.hpp): those this build makes
# (tests/mpi.cmake includes it in the MPI build).
# bench/ is added after tests/: perturb by the option, not the target.
set(_programs "")
foreach(_p lwt2d:forward gemm fnn-tool:train lwt2d-mpi:forward gemm-mpi)
  string(REPLACE ":" ";" _parts ${_p})
  list(GET _parts 0 _t)
  if(TARGET ${_t})
    string(REPLACE "${_t}" "${_t}=$<TARGET_FILE:${_t}>" _arg ${_p})
    list(APPEND _programs ${_arg})
  endif()
endforeach()
if(FNNDTPS_BUILD_BENCH)
  list(APPEND _programs "perturb=$<TARGET_FILE:perturb>")
endif()
add_test(NAME cli_common COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/cli_common.sh ${_programs})
if(FNNDTPS_MPI)  # the MPI build's programs load its libstarpu, not the native one (tests/mpi.cmake)
  set_tests_properties(cli_common PROPERTIES ENVIRONMENT "LD_LIBRARY_PATH=${STARPU_LIBRARY_DIRS}")
endif()
