#!/usr/bin/env bash
# StarPU's own microbenchmark tests/microbenchs/parallel_independent_heterogeneous_tasks_data.c
# (independent tasks, 10 ms on a CPU and 1 ms on the GPU, a vector each) in simulation on the
# GPU machine's calibrated platform (15 CPUs + 1 GPU), our policies loaded as any StarPU
# program loads them (STARPU_SCHED_LIB). The first process (an empty FNNDTPS_MODEL_DIR) must
# reach 90% of the expected speed-up under ours: with every task sent to the GPU alone they
# reached 38.66%. lws and dmdas are reported for reference, not gated.
# SKEWED, the same program whose tasks take 1.17x (GPU) and 1.012x (cores) what its model says
# (tests/skewed_sleep.h, as on the GPU machine): all its tasks are placed by that model before
# any ends, so only moving work when a core runs dry corrects it. Each of ours, a first
# process, within 2 points of lws's percentage (issue 27's bound); `even` is not gated.
#   sim_clients.sh PROGRAM LIBFNNDTPS REPO STARPU_LIBDIR SKEWED
set -uo pipefail
prog=$1 lib=$2 repo=$3 libdir=$4 skewed=$5
[[ -x $prog && -x $skewed && -f $lib ]] || { echo "FAIL: no program $prog or $skewed, or no library $lib"; exit 1; }
export LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
export STARPU_PERF_MODEL_DIR=$repo/bench/platforms/h200/sampling STARPU_HOSTNAME=h200 \
  STARPU_CALIBRATE_MINIMUM=2 STARPU_SILENT=1
fail=0
bad() { echo "FAIL: $*"; fail=1; }
# Its exit status says within StarPU's own 10% margin or not (lws fails it): read the line
# "percentage of expected speed up 96.64%" instead (no '=' in this _data variant).
# run NAME PROGRAM POLICY [VAR=V...]: its percentage in $pct, "" on failure (reported).
run() {
  local name=$1 program=$2 p=$3; shift 3
  # A fresh StarPU home and model directory each: every run is a first process.
  local home=$tmp/$name-$p; mkdir -p "$home/models"
  local with_lib=(STARPU_SCHED_LIB=$lib)
  [[ $p == lws || $p == dmdas ]] && with_lib=()
  local out gpus
  out=$(env STARPU_HOME=$home FNNDTPS_MODEL_DIR=$home/models "${with_lib[@]}" STARPU_SCHED=$p "$@" "$program" 2>&1)
  pct=$(sed -n 's/^percentage of expected speed up =\{0,1\} *\([0-9.]*\)%.*/\1/p' <<<"$out" | tail -1)
  gpus=$(sed -n 's/^number of workers CUDA = *\([0-9]*\).*/\1/p' <<<"$out")
  if [[ -z $pct ]]; then bad "$name $p: no percentage: $(tail -2 <<<"$out" | tr '\n' ' ')"; return; fi
  # Without the simulated GPU the expected speed-up is the CPUs' alone: nothing to guard.
  [[ $gpus == 1 ]] || { bad "$name $p: $gpus simulated CUDA workers, not 1"; pct=; }
}
for p in fnn-dtps fnn dtps boyer lws dmdas; do
  run model "$prog" "$p"; [[ -n $pct ]] || continue
  if [[ $p == lws || $p == dmdas ]]; then echo "ok $p: $pct% of the expected speed-up (reference)"
  elif awk -v x="$pct" 'BEGIN {exit !(x >= 90)}'; then echo "ok $p: $pct% of the expected speed-up"
  else bad "$p: $pct% of the expected speed-up, under 90%"; fi
done
skew=(SKEW_CUDA=1.17 SKEW_CPU=1.012)
run skewed "$skewed" lws "${skew[@]}"
lws=$pct
[[ -n $lws ]] && echo "ok skewed lws: $lws% of the expected speed-up (reference)"
run skewed "$skewed" dmdas "${skew[@]}"
[[ -n $pct ]] && echo "ok skewed dmdas: $pct% of the expected speed-up (reference)"
for p in fnn-dtps fnn dtps boyer; do
  run skewed "$skewed" "$p" "${skew[@]}"; [[ -n $pct && -n $lws ]] || continue
  if awk -v x="$pct" -v l="$lws" 'BEGIN {exit !(x >= l - 2)}'; then echo "ok skewed $p: $pct% (lws $lws%)"
  else bad "skewed $p: $pct% of the expected speed-up, more than 2 points under lws's $lws%"; fi
done
exit $fail
