# Emulated slowdowns: used by our codelets and reported by the policies.
add_library(fnndtps_emulation STATIC ${CMAKE_CURRENT_LIST_DIR}/emulation.cpp)
target_include_directories(fnndtps_emulation PUBLIC ${PROJECT_SOURCE_DIR})
target_link_libraries(fnndtps_emulation PRIVATE fnndtps_warnings PUBLIC PkgConfig::STARPU)

# The policies: a static library the bundled apps link, and libfnndtps.so for STARPU_SCHED_LIB.
add_library(fnndtps_sched STATIC
  ${CMAKE_CURRENT_LIST_DIR}/cost.cpp
  ${CMAKE_CURRENT_LIST_DIR}/task_costs.cpp
  ${CMAKE_CURRENT_LIST_DIR}/task_info.cpp
  ${CMAKE_CURRENT_LIST_DIR}/config.cpp
  ${CMAKE_CURRENT_LIST_DIR}/policy.cpp
  ${CMAKE_CURRENT_LIST_DIR}/batches.cpp
  ${CMAKE_CURRENT_LIST_DIR}/dtps_feedback.cpp
  ${CMAKE_CURRENT_LIST_DIR}/fnn_speeds.cpp
  ${CMAKE_CURRENT_LIST_DIR}/placement.cpp
  ${CMAKE_CURRENT_LIST_DIR}/report.cpp
  ${CMAKE_CURRENT_LIST_DIR}/trace.cpp
  ${CMAKE_CURRENT_LIST_DIR}/plugin.cpp)
target_include_directories(fnndtps_sched PUBLIC ${PROJECT_SOURCE_DIR})
target_link_libraries(fnndtps_sched PUBLIC PkgConfig::STARPU fnn sched_probe sched_dtps fnndtps_emulation
                      PRIVATE fnndtps_warnings)
if(FNNDTPS_SIMULATION)  # the simulated platform's description (fnn_speeds.cpp, probe_options)
  find_library(FNNDTPS_SIMGRID_LIB simgrid REQUIRED)
  target_link_libraries(fnndtps_sched PRIVATE ${FNNDTPS_SIMGRID_LIB})
endif()

add_library(fnndtps SHARED ${CMAKE_CURRENT_LIST_DIR}/plugin.cpp)
target_link_libraries(fnndtps PRIVATE fnndtps_sched fnndtps_warnings)
# StarPU closes and re-opens STARPU_SCHED_LIB at every policy lookup by name (one per context):
# the policies' code and data must stay mapped while a context still uses them.
target_link_options(fnndtps PRIVATE -Wl,-z,nodelete)
