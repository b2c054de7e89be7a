# DESIGN §2's one-way dependencies: codelets/ includes nothing from scheduler/ or apps/.
# A grep over the sources; needs no build.
add_test(NAME layering_codelets COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/layering.sh ${PROJECT_SOURCE_DIR})
set_tests_properties(layering_codelets PROPERTIES TIMEOUT 30)
