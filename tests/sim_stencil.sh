#!/usr/bin/env bash
# tests/sim_stencil.c (StarPU's stencil's task graph) in simulation on the GPU machine's platform
# (15 CPUs + 1 GPU), our policies loaded through STARPU_SCHED_LIB against StarPU's lws and
# dmdas: each of fnn-dtps, fnn, dtps and boyer within 1/0.95 of the best built-in's time (issue
# 27's bar for the real program on the GPU machine). `even` divides by work alone: printed only.
#   sim_stencil.sh PROGRAM LIBFNNDTPS REPO STARPU_LIBDIR
set -uo pipefail
prog=$1 lib=$2 repo=$3 libdir=$4
[[ -x $prog && -f $lib ]] || { echo "FAIL: no program $prog or no library $lib"; exit 1; }
export LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
export STARPU_PERF_MODEL_DIR=$repo/bench/platforms/h200/sampling STARPU_HOSTNAME=h200 STARPU_SILENT=1
declare -A ms line
for p in lws dmdas fnn-dtps fnn dtps boyer even; do
  home=$tmp/$p; mkdir -p "$home/models"
  with_lib=(STARPU_SCHED_LIB=$lib)
  [[ $p == lws || $p == dmdas ]] && with_lib=()
  out=$(env STARPU_HOME=$home FNNDTPS_MODEL_DIR=$home/models "${with_lib[@]}" STARPU_SCHED=$p "$prog" 2>&1)
  line[$p]=$(grep -m1 '^STENCIL ' <<<"$out")
  if [[ -z ${line[$p]} ]]; then echo "FAIL: $p: no result: $(tail -2 <<<"$out" | tr '\n' ' ')"; exit 1; fi
  ms[$p]=$(sed 's/.*ms=\([0-9.]*\).*/\1/' <<<"${line[$p]}")
done
best=$(awk -v a="${ms[lws]}" -v b="${ms[dmdas]}" 'BEGIN { print (a < b ? a : b) }')
fail=0
for p in lws dmdas fnn-dtps fnn dtps boyer even; do
  ratio=$(awk -v t="${ms[$p]}" -v b="$best" 'BEGIN { printf "%.3f", t / b }')
  case $p in
    lws|dmdas|even) echo "ok $p: ${line[$p]} (${ratio}x the best built-in; reference)" ;;
    *) if awk -v r="$ratio" 'BEGIN { exit !(r <= 1 / 0.95) }'; then echo "ok $p: ${line[$p]} (${ratio}x the best built-in)"
       else echo "FAIL: $p: ${line[$p]}: ${ratio}x the best built-in's ${best} ms (want at most $(awk 'BEGIN{printf "%.3f", 1/0.95}'))"; fail=1; fi ;;
  esac
done
exit $fail
