# A StarPU-only program run under every policy through STARPU_SCHED_LIB.
if(TARGET fnndtps)
  add_executable(sched_invariants ${CMAKE_CURRENT_LIST_DIR}/sched_invariants.c)
  target_link_libraries(sched_invariants PRIVATE PkgConfig::STARPU)
  add_test(NAME sched_policies_plain_program
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/sched_policies.sh $<TARGET_FILE:sched_invariants>
                   $<TARGET_FILE:fnndtps>)
endif()
