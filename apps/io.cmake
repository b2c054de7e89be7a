# lwt_io: .npy / raw float32 / X3P files, PNG views and the synthetic surfaces (apps/io/).
find_package(Threads REQUIRED)
pkg_check_modules(LIBZIP REQUIRED IMPORTED_TARGET libzip)
pkg_check_modules(TINYXML2 REQUIRED IMPORTED_TARGET tinyxml2)
pkg_check_modules(LIBPNG REQUIRED IMPORTED_TARGET libpng)
pkg_check_modules(LIBCRYPTO REQUIRED IMPORTED_TARGET libcrypto)  # MD5 for X3P
# apps_cli: the programs' one command-line parser (apps/cli.hpp); no StarPU, so that fnn-tool and
# the bench's perturb link it too.
add_library(apps_cli STATIC ${CMAKE_CURRENT_LIST_DIR}/cli.cpp)
target_include_directories(apps_cli PUBLIC ${PROJECT_SOURCE_DIR})
target_link_libraries(apps_cli PUBLIC fnndtps_base PRIVATE fnndtps_warnings)  # run_main installs the signal handlers
# apps_output: output paths checked before work, temporaries removed on a signal, staged sets
# of files (apps/io/output.hpp): apart from lwt_io's file formats, so that fnn-tool links it too.
add_library(apps_output STATIC ${CMAKE_CURRENT_LIST_DIR}/io/output.cpp)
target_include_directories(apps_output PUBLIC ${PROJECT_SOURCE_DIR})
target_link_libraries(apps_output PUBLIC fnndtps_base PRIVATE fnndtps_warnings)
add_library(lwt_io STATIC
  ${CMAKE_CURRENT_LIST_DIR}/io/npy.cpp
  ${CMAKE_CURRENT_LIST_DIR}/io/surface.cpp
  ${CMAKE_CURRENT_LIST_DIR}/io/x3p.cpp
  ${CMAKE_CURRENT_LIST_DIR}/io/png.cpp)
target_include_directories(lwt_io PUBLIC ${PROJECT_SOURCE_DIR})
target_link_libraries(lwt_io PRIVATE fnndtps_warnings PkgConfig::LIBZIP PkgConfig::TINYXML2 PkgConfig::LIBPNG
  PkgConfig::LIBCRYPTO
  PUBLIC apps_output Threads::Threads)
