# fnn-tool: train, apply and show FNN models (fnn/).
add_executable(fnn-tool ${CMAKE_CURRENT_LIST_DIR}/fnn_tool.cpp)
target_link_libraries(fnn-tool PRIVATE fnn apps_cli apps_output fnndtps_warnings)
