# lwt_io: .npy / raw float32 files and the synthetic surface generator (apps/io/).
find_package(Threads REQUIRED)
add_library(lwt_io STATIC
  ${CMAKE_CURRENT_LIST_DIR}/io/npy.cpp
  ${CMAKE_CURRENT_LIST_DIR}/io/surface.cpp)
target_include_directories(lwt_io PUBLIC ${PROJECT_SOURCE_DIR})
target_link_libraries(lwt_io PRIVATE fnndtps_warnings PUBLIC Threads::Threads)
