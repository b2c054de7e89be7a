# ns per FNN prediction, the scheduler's hot path.
add_executable(bench_fnn_predict ${CMAKE_CURRENT_LIST_DIR}/bench_fnn_predict.cpp)
target_link_libraries(bench_fnn_predict PRIVATE fnn fnndtps_warnings)
