# perturb: the bench's perturbation injector (busy threads on chosen cores; with CUDA, a busy
# kernel on a GPU), switched on and off on a schedule. bench/compare.py starts and stops it.
find_package(Threads REQUIRED)
add_executable(perturb ${CMAKE_CURRENT_LIST_DIR}/perturb.cpp)
target_link_libraries(perturb PRIVATE apps_cli fnndtps_warnings Threads::Threads)
if(FNNDTPS_BUILD_CUDA)
  target_sources(perturb PRIVATE ${CMAKE_CURRENT_LIST_DIR}/perturb_gpu.cu)
  target_include_directories(perturb PRIVATE ${PROJECT_SOURCE_DIR})
  target_compile_definitions(perturb PRIVATE FNNDTPS_PERTURB_CUDA=1)
  target_link_libraries(perturb PRIVATE CUDA::cudart)
endif()
