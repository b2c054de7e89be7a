# lwt2d and the StarPU session helper shared by the apps.
if(STARPU_FOUND)
  add_library(apps_starpu STATIC ${CMAKE_CURRENT_LIST_DIR}/starpu_session.cpp)
  target_include_directories(apps_starpu PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(apps_starpu PUBLIC apps_cli PkgConfig::STARPU fnndtps_sched codelets_simulated ${CMAKE_DL_LIBS} PRIVATE fnndtps_warnings)

  # lwt2d filter's bands and ISO 25178-2 parameters: plain C++ (lwt_cpu for the unit layout),
  # tested without StarPU.
  add_library(lwt_filter STATIC
    ${CMAKE_CURRENT_LIST_DIR}/filter/bands.cpp
    ${CMAKE_CURRENT_LIST_DIR}/filter/surface_params.cpp)
  target_include_directories(lwt_filter PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(lwt_filter PUBLIC lwt_cpu fnndtps_base PRIVATE fnndtps_warnings)

  # A transform's files beside its tasks, unit by unit (lwt2d; lwt2d-mpi's own rows).
  add_library(apps_unit_files STATIC ${CMAKE_CURRENT_LIST_DIR}/unit_files.cpp)
  target_include_directories(apps_unit_files PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(apps_unit_files PUBLIC lwt_starpu lwt_io PkgConfig::STARPU PRIVATE fnndtps_warnings)

  add_executable(lwt2d ${CMAKE_CURRENT_LIST_DIR}/lwt2d.cpp)
  target_link_libraries(lwt2d PRIVATE lwt_starpu heights_starpu lwt_ref lwt_io lwt_filter apps_starpu apps_unit_files
                        fnndtps_warnings)
endif()
