# gemm: the tiled matrix multiplication app (DESIGN §7), on gemm_starpu (codelets/gemm.cmake)
# and apps_starpu (apps/lwt2d.cmake, defined later in this folder: linked by name).
if(TARGET gemm_starpu)
  add_executable(gemm ${CMAKE_CURRENT_LIST_DIR}/gemm.cpp)
  target_link_libraries(gemm PRIVATE gemm_starpu apps_starpu fnndtps_warnings)
endif()
