# Command-line contracts of the apps, run as a user would.
if(TARGET lwt2d)
  set(_lib "")
  if(TARGET fnndtps)
    set(_lib $<TARGET_FILE:fnndtps>)  # for the STARPU_SCHED_LIB cases
  endif()
  add_test(NAME lwt2d_cli COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/cli_lwt2d.sh $<TARGET_FILE:lwt2d> ${_lib})
endif()
# Bad policy settings in a StarPU program that loads our policies through STARPU_SCHED_LIB
# (sched_clients, from sched_policies.cmake): one line, exit status 2.
if(TARGET fnndtps)
  add_test(NAME sched_clients_bad_settings
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/sched_clients.sh $<TARGET_FILE:sched_clients> $<TARGET_FILE:fnndtps>
                   bad_settings)
endif()
