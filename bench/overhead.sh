#!/usr/bin/env bash
# Per-task overhead of our policies against StarPU's eager (DESIGN §10: within 10%).
#   bench/overhead.sh BENCH_OVERHEAD LIBFNNDTPS [ntasks] [reps]
set -euo pipefail
(($# >= 2)) || { echo "usage: bench/overhead.sh BENCH_OVERHEAD LIBFNNDTPS [ntasks] [reps]" >&2; exit 2; }
prog=$1 lib=$2 n=${3:-20000} reps=${4:-7}
# CPU workers only: an empty task on a GPU worker costs the driver's launch and sync, which
# would measure where tasks went rather than what the scheduler costs.
# fnn-dtps+trace: fnn-dtps recording its per-task trace (FNNDTPS_TRACE), what tracing costs.
export STARPU_SILENT=1 FNNDTPS_SAVE=0 STARPU_NCUDA=0
trace_dir=$(mktemp -d)
trap 'rm -rf "$trace_dir"' EXIT
printf '%-15s %8s %14s %14s %10s\n' policy buffers us_per_task submit_us vs_eager
for nbuf in 0 1; do
  eager=
  for policy in eager fnn-dtps fnn-dtps+trace fnn dtps boyer even; do
    if [[ $policy == eager ]]; then line=$(STARPU_SCHED=$policy "$prog" "$n" "$reps" "$nbuf" | grep '^RESULT')
    elif [[ $policy == *+trace ]]; then
      line=$(FNNDTPS_TRACE=$trace_dir/trace.json STARPU_SCHED_LIB=$lib STARPU_SCHED=${policy%+trace} \
             "$prog" "$n" "$reps" "$nbuf" 2>/dev/null | grep '^RESULT')
    else line=$(STARPU_SCHED_LIB=$lib STARPU_SCHED=$policy "$prog" "$n" "$reps" "$nbuf" | grep '^RESULT'); fi
    us=$(sed -n 's/.* us_per_task=\([^ ]*\).*/\1/p' <<<"$line")
    sub=$(sed -n 's/.* submit_us=\([^ ]*\).*/\1/p' <<<"$line")
    [[ -z $eager ]] && eager=$us
    printf '%-15s %8s %14s %14s %9.2fx\n' "$policy" "$nbuf" "$us" "$sub" "$(awk -v a="$us" -v b="$eager" 'BEGIN{print a/b}')"
  done
done
