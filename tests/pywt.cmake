# The reference lifting against PyWavelets (DESIGN §4.1); tests/pywt_check.py does the comparison.
add_executable(test_pywt ${CMAKE_CURRENT_LIST_DIR}/test_pywt.cpp)
if(TARGET lwt_ref)
  target_link_libraries(test_pywt PRIVATE lwt_ref)
else()
  target_sources(test_pywt PRIVATE ${PROJECT_SOURCE_DIR}/codelets/reference/lifting.cpp)
  target_include_directories(test_pywt PRIVATE ${PROJECT_SOURCE_DIR})
endif()
target_link_libraries(test_pywt PRIVATE lwt_io GTest::gtest_main fnndtps_warnings)
target_compile_definitions(test_pywt PRIVATE
  FNNDTPS_PYWT_CHECK="${PROJECT_SOURCE_DIR}/tests/pywt_check.py")
gtest_discover_tests(test_pywt)
