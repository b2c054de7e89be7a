# The simulated platforms derived from the calibrated models (bench/platforms/make_platform.py).
find_package(Python3 REQUIRED COMPONENTS Interpreter)
add_test(NAME make_platform COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_make_platform.py)
set_tests_properties(make_platform PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE 77)
