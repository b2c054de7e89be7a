# Worker probe (scheduler/probe.hpp): parsing of fabricated /proc files, caches, normalisation,
# NVML absent / present / partial, the real machine. Needs sched_probe (built with StarPU found).
if(TARGET sched_probe)
  find_package(Threads REQUIRED)
  # Fake libnvidia-ml built from the test source itself: a full one and one lacking
  # nvmlDeviceGetUtilizationRates. Named so that they are never mistaken for the real library.
  foreach(_v full partial)
    add_library(fake_nvml_${_v} SHARED ${CMAKE_CURRENT_LIST_DIR}/test_probe.cpp)
    target_compile_definitions(fake_nvml_${_v} PRIVATE FNNDTPS_FAKE_NVML)
    target_link_libraries(fake_nvml_${_v} PRIVATE fnndtps_warnings)
  endforeach()
  target_compile_definitions(fake_nvml_partial PRIVATE FNNDTPS_FAKE_NVML_PARTIAL)

  add_executable(test_probe ${CMAKE_CURRENT_LIST_DIR}/test_probe.cpp)
  target_link_libraries(test_probe PRIVATE sched_probe GTest::gtest_main fnndtps_warnings
                        ${CMAKE_DL_LIBS} Threads::Threads)
  target_compile_definitions(test_probe PRIVATE
    FAKE_NVML_PATH="$<TARGET_FILE:fake_nvml_full>"
    FAKE_NVML_PARTIAL_PATH="$<TARGET_FILE:fake_nvml_partial>")
  add_dependencies(test_probe fake_nvml_full fake_nvml_partial)
  gtest_discover_tests(test_probe TEST_PREFIX "probe.")
endif()
