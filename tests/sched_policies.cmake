# A StarPU-only program run under every policy through STARPU_SCHED_LIB.
if(TARGET fnndtps)
  add_executable(sched_invariants ${CMAKE_CURRENT_LIST_DIR}/sched_invariants.c)
  target_link_libraries(sched_invariants PRIVATE PkgConfig::STARPU)
  add_test(NAME sched_policies_plain_program
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/sched_policies.sh $<TARGET_FILE:sched_invariants>
                   $<TARGET_FILE:fnndtps>)

  # The client scenarios (contexts, workerids/where, spreading, priorities, reductions and
  # copies, trivial programs) under every policy, one ctest per scenario so that a failure
  # names it. Serial: the spreading checks time real tasks on the few cores there are.
  add_executable(sched_clients ${CMAKE_CURRENT_LIST_DIR}/sched_clients.c)
  target_link_libraries(sched_clients PRIVATE PkgConfig::STARPU)
  foreach(_scenario context workerids shared_read nodata priorities redux_cpy empty nodata_tiny)
    add_test(NAME sched_clients_${_scenario}
             COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/sched_clients.sh $<TARGET_FILE:sched_clients>
                     $<TARGET_FILE:fnndtps> ${_scenario})
    set_tests_properties(sched_clients_${_scenario} PROPERTIES TIMEOUT 600 RUN_SERIAL TRUE)
  endforeach()
endif()
