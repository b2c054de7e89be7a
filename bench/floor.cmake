# lwt2d-floor: a command's floor (read, StarPU's start and stop, write), for bench/cold.py.
if(STARPU_FOUND)
  add_executable(lwt2d-floor ${CMAKE_CURRENT_LIST_DIR}/floor.cpp)
  target_link_libraries(lwt2d-floor PRIVATE lwt_io apps_starpu fnndtps_warnings)
endif()
