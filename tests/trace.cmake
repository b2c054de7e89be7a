# Per-task traces and Gantt charts (scheduler/trace.hpp, bench/gantt.py; DESIGN §8): lwt2d
# --trace under StarPU's policies and ours, FNNDTPS_TRACE on a program we did not write
# (sched_clients, from sched_policies.cmake), the charts, bad trace paths and the apps' --bound.
if(TARGET lwt2d AND TARGET gemm AND TARGET fnndtps)
  add_test(NAME trace_cli
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/trace.sh $<TARGET_FILE:lwt2d> $<TARGET_FILE:gemm> $<TARGET_FILE:sched_clients>
                   $<TARGET_FILE:fnndtps> ${PROJECT_SOURCE_DIR}/bench/gantt.py ${CMAKE_CURRENT_LIST_DIR}/trace_check.py)
  # sched_clients' spreading and the bound's calibration time real tasks: run alone.
  set_tests_properties(trace_cli PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300 RUN_SERIAL TRUE)
endif()
