#!/usr/bin/env bash
# Runs on the GPU machine from the repository root, with .carry/ from scripts/gpu/pack.sh:
# the CUDA tests, then the benchmarks. Logs go to $OUT (the device tool brings them back).
#   bash scripts/gpu/run.sh [tests] [kernels] [overhead] [e2e] [e2e256] [gemm] [gemm2048] [example1024]
#                           [compare-lwt] [compare-gemm] [compare-sgemm] [scaling-lwt] [scaling-gemm] [diag]
#                           [units] [gpu-path] [recheck]
# (default: tests overhead e2e gemm). Each part takes a few minutes; a device call lasts at most
# 10, so split them over calls (notes/bench.md).
set -uo pipefail
root=$(pwd)
OUT=${OUT:-$root/gpu-out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$root/.carry/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PYTHON=${PYTHON:-python3}  # the image's python3 has numpy
export OPENBLAS_NUM_THREADS=1 STARPU_SILENT=1
export STARPU_HOME=${STARPU_HOME:-$root/.starpu-home}  # bus calibration and performance models
bin=$root/.carry/bin
export FNN_TOOL=$bin/fnn-tool
# Tests that name built files by their build path (fake NVML, fnn-tool) find them there.
if built=$(cat "$root/.carry/build_dir" 2>/dev/null) && [[ ! -e $built ]]; then
  mkdir -p "$built" && ln -s "$root/.carry/bin" "$built/bin" && ln -s "$root/.carry/lib" "$built/lib"
fi
# StarPU looks for its installed sampling models where it was built; give it that folder.
sampling=$(grep -aom1 '/[[:alnum:]/._-]*/share/starpu/perfmodels/sampling' "$root/.carry/lib/libstarpu-1.4.so.9")
[[ -n $sampling ]] && mkdir -p "$sampling"
# One CPU worker per logical CPU: StarPU otherwise takes one per core.
tpc=$(lscpu | awk -F: '/Thread\(s\) per core/{gsub(/ /,"",$2); print $2}')
export STARPU_NTHREADS_PER_CORE=${STARPU_NTHREADS_PER_CORE:-${tpc:-1}}
parts=${*:-tests overhead e2e gemm}
known=" tests kernels overhead e2e e2e256 gemm gemm2048 example1024 compare-lwt compare-gemm compare-sgemm scaling-lwt scaling-gemm diag units gpu-path recheck "
for part in $parts; do
  [[ $known == *" $part "* ]] || { echo "run.sh: unknown part '$part' (known:$known)" >&2; exit 2; }
done
has() { [[ " $parts " == *" $1 "* ]]; }
status=0
# At most 8 files come back from the device: the run's own log (machine, progress) goes to
# stdout; tests share tests.log; each benchmark writes its table and CSV.
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv
lscpu | grep -E "Model name|^CPU\(s\)|Thread|Core|Socket"
if has tests; then
  for t in "$bin"/test_*; do
    echo "== $(basename "$t")"
    { echo "== $(basename "$t")"; "$t" --gtest_brief=1 2>&1; } >"$OUT/one.log"
    if grep -q "PASSED" "$OUT/one.log" && ! grep -q "FAILED" "$OUT/one.log"; then echo "   passed: $(grep -m1 PASSED "$OUT/one.log")"
    else echo "   FAILED"; grep -A3 "Failure\|FAILED" "$OUT/one.log" | head -40; status=1; fi
    cat "$OUT/one.log" >>"$OUT/tests.log"
  done
  rm -f "$OUT/one.log"
  bash tests/sched_policies.sh "$bin/sched_invariants" "$root/.carry/lib/libfnndtps.so" >"$OUT/one.log" 2>&1 \
    && echo "== sched_policies passed" || { echo "== sched_policies FAILED"; tail -20 "$OUT/one.log"; status=1; }
  cat "$OUT/one.log" >>"$OUT/tests.log"
  STARPU_NCUDA=1 bash tests/cli_lwt2d.sh "$bin/lwt2d" >"$OUT/one.log" 2>&1 && echo "== cli passed" || { echo "== cli FAILED"; cat "$OUT/one.log"; status=1; }
  cat "$OUT/one.log" >>"$OUT/tests.log"; rm -f "$OUT/one.log"
  STARPU_NCUDA=1 bash tests/cli_gemm.sh "$bin/gemm" >"$OUT/one.log" 2>&1 && echo "== cli_gemm passed" || { echo "== cli_gemm FAILED"; tail -30 "$OUT/one.log"; status=1; }
  cat "$OUT/one.log" >>"$OUT/tests.log"; rm -f "$OUT/one.log"
fi
if has kernels; then
  echo "== fused CUDA passes, device-resident"
  "$bin/bench_lwt_cuda" --size 16384 --levels 4 --units 1 --reps 10 2>&1 | tee "$OUT/bench_kernels.txt"
  "$bin/bench_lwt_cuda" --size 16384 --levels 4 --units 16 --reps 10 2>&1 | grep RESULT | tee -a "$OUT/bench_kernels.txt"
fi
if has overhead; then
  echo "== per-task overhead"
  bash bench/overhead.sh "$bin/bench_overhead" "$root/.carry/lib/libfnndtps.so" 20000 7 2>&1 | tee "$OUT/overhead.txt"
fi
if has e2e; then
  echo "== end to end, host to host"
  bash bench/lwt_e2e.sh "$bin/lwt2d" --size 16384 --levels 4 --reps 5 --warmup 3 --csv "$OUT/lwt_e2e.csv" | tee "$OUT/lwt_e2e.txt"
fi
if has e2e256; then
  echo "== end to end, host to host, 256 units"
  bash bench/lwt_e2e.sh "$bin/lwt2d" --size 16384 --levels 4 --units 256 --reps 5 --warmup 3 --csv "$OUT/lwt_e2e_256.csv" | tee "$OUT/lwt_e2e_256.txt"
fi
if has gemm; then
  # DESIGN §10: sgemm 16384 on CPUs + GPU. Our app sends A and B again every iteration;
  # StarPU's example keeps them on the GPU (see bench/gemm.sh).
  for tile in 1024 2048; do
    echo "== sgemm 16384, tile $tile"
    bash bench/gemm.sh --gemm "$bin/gemm" --example "$bin/sgemm" --lib "$root/.carry/lib/libfnndtps.so" \
      --size 16384 --tile $tile --iter 6 --csv "$OUT/gemm_$tile.csv" \
      "gpu-only:STARPU_SCHED=dmdas STARPU_NCPU=0" "dmdas:STARPU_SCHED=dmdas" "dmda:STARPU_SCHED=dmda" \
      "heteroprio:STARPU_SCHED=heteroprio" "fnn-dtps:STARPU_SCHED=fnn-dtps" "dtps:STARPU_SCHED=dtps" \
      "fnn:STARPU_SCHED=fnn"
  done
  echo "== the CPU class alone (sgemm 4096, tile 1024), for the bound"
  STARPU_NCUDA=0 STARPU_SCHED=dmdas "$bin/gemm" --size 4096 --tile 1024 --iter 4 | grep RESULT
fi
stamp() { echo "-- $(date +%T) $*"; }
# The comparison bench (issue 6; notes/bench.md). Each part copies its table, CSV and plot to
# $OUT; compare.py rewrites its CSV after every run, so a part cut short keeps what it measured.
compare() {  # compare NAME ARGS...
  local name=$1; shift
  stamp "compare $name"
  local out=/tmp/bench-$name
  trap 'cp "$out"/results.csv "$OUT/$name.csv" 2>/dev/null' RETURN
  $PYTHON bench/compare.py --build "$root/.carry" --starpu-examples "$bin" --timeout 150 --out "$out" "$@" \
    2> >(tee "$OUT/$name.log" >&2) | tee "$OUT/$name.txt"
  cp "$out"/compare.png "$OUT/$name.png" 2>/dev/null
  stamp "compare $name done"
}
# The GEMMs leave out StarPU's eager and lws (on this machine one 16384 product under either
# takes over 40 s, DESIGN §10) and our even (equal shares by design: 15 cores get 15/16 of the
# tiles, ~27 s a product). Under gpu50 only the policies the FNN-vs-Boyer question needs,
# beside the best built-in: the device time of a session does not hold more.
gemm_policies=fnn-dtps,fnn,dtps,boyer,dmda,dmdas,heteroprio
if has compare-lwt; then
  compare lwt --apps lwt2d --lwt-sizes 8192,16384 --levels 4 --perturb none,gpu50 --reps 5 --warmup 2
fi
if has compare-gemm; then
  # The CPU class alone takes ~27 s a product: two timed products of it for the bound.
  compare gemm --apps gemm --gemm-sizes 16384 --tile 1024 --perturb none --reps 5 --warmup 1 \
    --class-reps 2 --policies $gemm_policies
  compare gemm-gpu50 --apps gemm --gemm-sizes 16384 --tile 1024 --perturb gpu50 --reps 5 --warmup 1 \
    --class-reps 2 --policies fnn-dtps,fnn,boyer,dmdas
fi
if has compare-sgemm; then
  # StarPU's own example, one process per run (its own mean over --sgemm-iter products).
  compare sgemm --apps starpu-sgemm --sgemm-sizes 16384 --tile 1024 --sgemm-iter 5 --perturb none \
    --reps 3 --warmup 1 --policies $gemm_policies
fi
if has scaling-lwt || has scaling-gemm; then
  # Multi-GPU runs: each condition at 1, 2, 4 and 8 GPUs (those this host has), the bound
  # measured at every count, so %bound is the efficiency at that count. One part per call.
  ngpu=$(nvidia-smi -L | grep -c '^GPU ')
  gpus=$(for k in 1 2 4 8; do ((k <= ngpu)) && echo $k; done | paste -sd,)
  scaling_policies=${SCALING_POLICIES:-fnn-dtps,fnn,dtps,boyer,dmdas,dmda,heteroprio}
  if [[ -z $gpus ]]; then
    echo "== scaling: nvidia-smi lists no GPU"; status=1
  fi
  if [[ -n $gpus ]] && has scaling-lwt; then
    compare scaling-lwt --apps lwt2d --lwt-sizes ${SCALING_LWT_SIZES:-16384,32768} --levels 4 \
      --perturb none,gpu50 --gpus "$gpus" --reps 3 --policies $scaling_policies
  fi
  if [[ -n $gpus ]] && has scaling-gemm; then
    # The CPUs alone take ~34 s a 16384 product (~5 min at 32768, past one call: give
    # SCALING_GEMM_SIZES=32768 a call of its own, with fewer SCALING_POLICIES).
    compare scaling-gemm --apps gemm --gemm-sizes ${SCALING_GEMM_SIZES:-16384} --tile 1024 \
      --perturb none,gpu50 --gpus "$gpus" --reps 3 --warmup 1 --class-reps 2 --policies $scaling_policies
  fi
fi
# Issue 5: sgemm 16384 under its seven configurations, 6 products a process (the first one
# calibrates): tile 2048 with our app and StarPU's example; tile 1024 with the example alone
# (compare-gemm measures our app there).
issue5_configs=("gpu-only:STARPU_SCHED=dmdas STARPU_NCPU=0" "dmdas:STARPU_SCHED=dmdas" "dmda:STARPU_SCHED=dmda"
  "heteroprio:STARPU_SCHED=heteroprio" "fnn-dtps:STARPU_SCHED=fnn-dtps" "dtps:STARPU_SCHED=dtps" "fnn:STARPU_SCHED=fnn")
if has gemm2048; then
  stamp "sgemm 16384, tile 2048"
  bash bench/gemm.sh --gemm "$bin/gemm" --example "$bin/sgemm" --lib "$root/.carry/lib/libfnndtps.so" \
    --size 16384 --tile 2048 --iter 6 --csv "$OUT/gemm_2048.csv" "${issue5_configs[@]}"
fi
if has example1024; then
  stamp "sgemm 16384, tile 1024, StarPU's example"
  bash bench/gemm.sh --gemm "$bin/gemm" --example-only --example "$bin/sgemm" --lib "$root/.carry/lib/libfnndtps.so" \
    --size 16384 --tile 1024 --iter 6 --csv "$OUT/example_1024.csv" "${issue5_configs[@]}"
  stamp done
fi
if has units; then
  # How the LWT's unit count changes the GPU's time and the co-runs' (lwt2d's default: 4 per worker).
  for u in 16 32 64; do
    stamp "units $u"
    bash bench/lwt_e2e.sh "$bin/lwt2d" --size 16384 --levels 4 --units $u --reps 5 --warmup 3 --csv "$OUT/units_$u.csv" \
      "gpu-only:STARPU_SCHED=dmdas STARPU_NCPU=0" "dmdas:STARPU_SCHED=dmdas" "fnn-dtps:STARPU_SCHED=fnn-dtps" \
      2>/dev/null | tail -4
  done
fi
if has gpu-path; then
  # Our policies with the GPU doing (nearly) everything: in a GPU-only context, without
  # re-balancing, and with fewer CPU workers beside it; eager and dmdas the same way.
  stamp "gpu-path"
  bash bench/lwt_e2e.sh "$bin/lwt2d" --size 16384 --levels 4 --units 64 --reps 5 --warmup 3 --csv "$OUT/gpu_path.csv" \
    "fnn-dtps-gpu-only:STARPU_SCHED=fnn-dtps STARPU_NCPU=0" "eager-gpu-only:STARPU_SCHED=eager STARPU_NCPU=0" \
    "fnn-dtps-no-rebalance:STARPU_SCHED=fnn-dtps FNNDTPS_REBALANCE=0" "fnn-dtps-4cpu:STARPU_SCHED=fnn-dtps STARPU_NCPU=4" \
    "dmdas-4cpu:STARPU_SCHED=dmdas STARPU_NCPU=4" "dmdas-15cpu:STARPU_SCHED=dmdas" 2>/dev/null | tail -7
fi
if has diag; then
  # What our policies decide on this machine: DTPS's per-batch split and each worker's units.
  for pol in ${DIAG_POLICIES:-fnn-dtps fnn dtps boyer}; do
    stamp "diag lwt2d 16384 $pol"
    FNNDTPS_VERBOSE=1 FNNDTPS_SUMMARY=1 FNNDTPS_MODEL_DIR=/tmp/diag-$pol STARPU_SCHED=$pol \
      "$bin/lwt2d" demo --size 16384 --levels 4 --repeat 5 --warmup 3 2>&1 | grep -v "^ *model\|^ *dtps:" | tee -a "$OUT/diag.txt"
  done
  stamp "diag gemm 16384 fnn-dtps"
  FNNDTPS_VERBOSE=1 FNNDTPS_SUMMARY=1 FNNDTPS_MODEL_DIR=/tmp/diag-gemm STARPU_SCHED=fnn-dtps \
    "$bin/gemm" --size 16384 --tile 1024 --iter 6 2>&1 | grep -v "^ *model" | tee -a "$OUT/diag.txt"
fi
if has recheck; then
  # A short re-measurement of our policies beside the best built-in and the GPU alone.
  echo "== recheck: LWT 16384, 4 levels"
  bash bench/lwt_e2e.sh "$bin/lwt2d" --size 16384 --levels 4 --reps 5 --warmup 3 --csv "$OUT/recheck_lwt.csv" \
    "gpu-only:STARPU_SCHED=dmdas STARPU_NCPU=0" "cpu-only:STARPU_SCHED=dmdas STARPU_NCUDA=0" \
    "dmdas:STARPU_SCHED=dmdas" "fnn-dtps:STARPU_SCHED=fnn-dtps" "fnn:STARPU_SCHED=fnn" "boyer:STARPU_SCHED=boyer"
  echo "== recheck: sgemm 16384, tile 1024 (our app)"
  bash bench/gemm.sh --gemm "$bin/gemm" --example /nonexistent --size 16384 --tile 1024 --iter 6 \
    --csv "$OUT/recheck_gemm.csv" "dmda:STARPU_SCHED=dmda" "fnn-dtps:STARPU_SCHED=fnn-dtps" "fnn:STARPU_SCHED=fnn"
fi
exit $status
