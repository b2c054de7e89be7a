# The CUDA backend of the lifting codelets (codelets/cuda/lifting.cu), included from
# codelets/CMakeLists.txt. Whole-program compilation: no device linking.
if(FNNDTPS_BUILD_CUDA)
  add_library(lwt_cuda STATIC ${CMAKE_CURRENT_LIST_DIR}/lifting.cu)
  set_target_properties(lwt_cuda PROPERTIES CUDA_SEPARABLE_COMPILATION OFF)
  target_include_directories(lwt_cuda PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(lwt_cuda PUBLIC CUDA::cudart PRIVATE fnndtps_warnings)
  # No fused multiply-adds: each output is then the CPU backend's bit for bit (test_lifting's
  # CudaMatchesCpu), so a transform's result does not depend on which worker ran a unit. The
  # passes are bound by memory traffic, not arithmetic.
  target_compile_options(lwt_cuda PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:--fmad=false>)
  # Report registers and spills of every kernel: FNNDTPS_CUDA_PTXAS_VERBOSE=ON.
  option(FNNDTPS_CUDA_PTXAS_VERBOSE "Print ptxas register/spill reports for lwt_cuda" OFF)
  if(FNNDTPS_CUDA_PTXAS_VERBOSE)
    target_compile_options(lwt_cuda PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-Xptxas=-v>)
  endif()
endif()
