# Worker state probe (DESIGN section 5): the FNN's features F, M, P, UF, UM per worker from
# /proc, /sys, the CUDA runtime and NVML (dlopen). No StarPU: the policies link it, tests alone.
add_library(sched_probe STATIC ${CMAKE_CURRENT_LIST_DIR}/probe.cpp)
target_include_directories(sched_probe PUBLIC ${PROJECT_SOURCE_DIR})
target_link_libraries(sched_probe PUBLIC fnn PRIVATE fnndtps_warnings ${CMAKE_DL_LIBS})
if(FNNDTPS_BUILD_CUDA)
  target_sources(sched_probe PRIVATE ${CMAKE_CURRENT_LIST_DIR}/probe_cuda.cpp)
  target_compile_definitions(sched_probe PRIVATE FNNDTPS_HAVE_CUDA)
  target_link_libraries(sched_probe PRIVATE CUDA::cudart)
endif()
