# LD_PRELOAD timing of the CUDA runtime's allocating, pinning and waiting calls (cuda_calls.c):
# what a cold process's StarPU spends in them, and which threads they stall.
if(FNNDTPS_BUILD_CUDA)
  add_library(cuda_calls SHARED ${CMAKE_CURRENT_LIST_DIR}/cuda_calls.c)
  target_link_libraries(cuda_calls PRIVATE ${CMAKE_DL_LIBS})
endif()
