# Command-line contracts of the apps, run as a user would.
if(TARGET lwt2d)
  add_test(NAME lwt2d_cli COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/cli_lwt2d.sh $<TARGET_FILE:lwt2d>)
endif()
