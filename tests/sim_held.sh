#!/usr/bin/env bash
# tests/sim_held.c in simulation on the GPU machine's platform (15 CPUs + 1 GPU), our policies
# loaded through STARPU_SCHED_LIB: a short task that the CPU class would run alone stays on the
# GPU where its input is valid on the GPU only (a core would copy the 4 MiB block from it
# first), and runs on the cores where the input is in main memory. StarPU's lws and dmdas are
# printed for reference, not gated.
#   sim_held.sh PROGRAM LIBFNNDTPS REPO STARPU_LIBDIR
set -uo pipefail
prog=$1 lib=$2 repo=$3 libdir=$4
[[ -x $prog && -f $lib ]] || { echo "FAIL: no program $prog or no library $lib"; exit 1; }
export LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
export STARPU_PERF_MODEL_DIR=$repo/bench/platforms/h200/sampling STARPU_HOSTNAME=h200 STARPU_SILENT=1
fail=0
for p in fnn-dtps fnn dtps boyer lws dmdas; do
  home=$tmp/$p; mkdir -p "$home/models"
  with_lib=(STARPU_SCHED_LIB=$lib)
  [[ $p == lws || $p == dmdas ]] && with_lib=()
  out=$(env STARPU_HOME=$home FNNDTPS_MODEL_DIR=$home/models "${with_lib[@]}" STARPU_SCHED=$p "$prog" 2>&1)
  line=$(grep -m1 '^HELD ' <<<"$out")
  if [[ -z $line ]]; then echo "FAIL: $p: no result: $(tail -2 <<<"$out" | tr '\n' ' ')"; fail=1; continue; fi
  read -r hg hn rg rn < <(sed 's/HELD gpu=\([0-9]*\) of=\([0-9]*\) *RAM gpu=\([0-9]*\) of=\([0-9]*\)/\1 \2 \3 \4/' <<<"$line")
  if [[ $p == lws || $p == dmdas ]]; then echo "ok $p: $line (reference)"
  elif ((hn >= 16 && hg == hn && rg == 0)); then echo "ok $p: $line"
  else echo "FAIL: $p: $line (want every held face on the GPU, of at least 16 the GPU updated, and none of the others)"; fail=1; fi
done
exit $fail
