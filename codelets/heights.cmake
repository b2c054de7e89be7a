# ISO 25178-2's height sums over a surface's row strips (heights.hpp): the plain kernels
# (cpu/), their CUDA backend (cuda/) and the StarPU tasks, in `heights_starpu`. Included from
# codelets/CMakeLists.txt.
add_library(heights_cpu STATIC ${CMAKE_CURRENT_LIST_DIR}/cpu/heights.cpp)
target_include_directories(heights_cpu PUBLIC ${PROJECT_SOURCE_DIR})
target_link_libraries(heights_cpu PRIVATE fnndtps_warnings)
target_compile_options(heights_cpu PRIVATE -O3 -ffp-contract=off)
if(FNNDTPS_BUILD_CUDA)
  add_library(heights_cuda STATIC ${CMAKE_CURRENT_LIST_DIR}/cuda/heights.cu)
  set_target_properties(heights_cuda PROPERTIES CUDA_SEPARABLE_COMPILATION OFF)
  target_include_directories(heights_cuda PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(heights_cuda PUBLIC CUDA::cudart PRIVATE fnndtps_warnings)
  # No fused multiply-adds: the moments round as the CPU's do (-ffp-contract=off above).
  target_compile_options(heights_cuda PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:--fmad=false>)
endif()
if(STARPU_FOUND)
  add_library(heights_starpu STATIC ${CMAKE_CURRENT_LIST_DIR}/height_tasks.cpp)
  target_include_directories(heights_starpu PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(heights_starpu PUBLIC heights_cpu codelets_simulated PkgConfig::STARPU PRIVATE fnndtps_warnings)
  if(FNNDTPS_BUILD_CUDA)
    target_compile_definitions(heights_starpu PRIVATE FNNDTPS_HAVE_CUDA)
    target_link_libraries(heights_starpu PUBLIC heights_cuda CUDA::cudart)
  endif()
endif()
