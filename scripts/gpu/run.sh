#!/usr/bin/env bash
# Runs on the GPU machine from the repository root, with .carry/ from scripts/gpu/pack.sh:
# the CUDA tests, then the benchmarks. Logs go to $OUT (the device tool brings them back).
#   bash scripts/gpu/run.sh [tests] [kernels] [overhead] [e2e] [e2e256] [gemm] [gemm2048] [example1024]
#                           [compare-lwt] [compare-gemm] [compare-sgemm] [scaling-lwt] [scaling-gemm] [diag]
#                           [units] [gpu-path] [recheck] [calibrate] [mechanism] [clients] [filter] [gemm2d]
#                           [seed001] [mpi] [sgemm-gpu50] [bits] [cold] [warm] [trace]
# (default: tests overhead e2e gemm). Each part takes a few minutes; a device call lasts at most
# 10, so split them over calls (notes/bench.md).
set -uo pipefail
root=$(pwd)
OUT=${OUT:-$root/gpu-out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH=$root/.carry/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PYTHON=${PYTHON:-python3}  # the image's python3 has numpy
export OPENBLAS_NUM_THREADS=1 STARPU_SILENT=1
export STARPU_HOME=${STARPU_HOME:-$root/.starpu-home}  # bus calibration and performance models
# The machine's name in the models' file names (bench/platforms/h200, DESIGN §8).
export STARPU_HOSTNAME=${STARPU_HOSTNAME:-h200}
bin=$root/.carry/bin
# A part cut short by an outer timeout leaves its programs running (each runs under a timeout of
# its own, in a process group of its own), and they would load the next part's measurements:
# whatever way this script ends, what it started ends with it. By id, never by name: every
# descendant of this script (by parent pid, while it lives), and each one's process group
# where it is not this script's own (timeout and setsid give a program a group of its own).
reap() {
  local own pid pg
  own=$(ps -o pgid= -p $$ | tr -d ' ')
  while read -r pid pg; do
    [[ -n $pg && $pg != "$own" ]] && kill -9 -- "-$pg" 2>/dev/null
    kill -9 "$pid" 2>/dev/null
  done < <(ps -eo pid=,ppid=,pgid= | awk -v root=$$ '
    { parent[$1] = $2; group[$1] = $3 }
    END { for (p in parent) { q = parent[p]; while (q != root && q in parent && q > 1) q = parent[q]
                              if (q == root) print p, group[p] } }')
  true
}
trap reap EXIT
trap 'exit 143' TERM INT
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
known=" tests kernels overhead e2e e2e256 gemm gemm2048 example1024 compare-lwt compare-gemm compare-sgemm scaling-lwt scaling-gemm diag units gpu-path recheck calibrate mechanism clients filter gemm2d seed001 mpi sgemm-gpu50 bits cold warm trace "
for part in $parts; do
  [[ $known == *" $part "* ]] || { echo "run.sh: unknown part '$part' (known:$known)" >&2; exit 2; }
done
has() { [[ " $parts " == *" $1 "* ]]; }
status=0
# At most 8 files come back from the device: the run's own log (machine, progress) goes to
# stdout; tests share tests.log; each benchmark writes its table and CSV.
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv
lscpu | grep -E "Model name|^CPU\(s\)|Thread|Core|Socket"
echo "commit $(cat "$root/.carry/commit" 2>/dev/null || git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
if has tests; then
  # test_policies is CPU emulation with timed sleeps (minutes): CI runs it; GPU_TESTS_SKIP names more.
  skip=" ${GPU_TESTS_SKIP:-test_policies} "
  for t in "$bin"/test_*; do
    [[ $skip == *" $(basename "$t") "* ]] && { echo "== $(basename "$t") skipped here (CI runs it)"; continue; }
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
  # The client programs with the GPU's worker among the CPUs (`where` is tested only here).
  timeout 300 bash tests/sched_clients.sh "$bin/sched_clients" "$root/.carry/lib/libfnndtps.so" >"$OUT/one.log" 2>&1 \
    && echo "== sched_clients passed" || { echo "== sched_clients FAILED"; grep -v "^ok" "$OUT/one.log" | tail -20; status=1; }
  cat "$OUT/one.log" >>"$OUT/tests.log"
  STARPU_NCUDA=1 bash tests/cli_lwt2d.sh "$bin/lwt2d" >"$OUT/one.log" 2>&1 && echo "== cli passed" || { echo "== cli FAILED"; cat "$OUT/one.log"; status=1; }
  cat "$OUT/one.log" >>"$OUT/tests.log"; rm -f "$OUT/one.log"
  STARPU_NCUDA=1 bash tests/cli_filter.sh "$bin/lwt2d" tests/filter_check.py >"$OUT/one.log" 2>&1 && echo "== cli_filter passed" || { echo "== cli_filter FAILED"; grep -v "^ok" "$OUT/one.log" | tail -30; status=1; }
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
  # DESIGN §10: sgemm 16384 on CPUs + GPU, split 2d (bench/gemm.sh's default); our app and
  # StarPU's example both keep A and B on the GPU across iterations (see bench/gemm.sh).
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
if has filter; then
  # lwt2d filter on a 16384^2 surface (1 GiB): the forward transform and one inverse per band,
  # all StarPU tasks on the CPU and CUDA workers. The first run calibrates StarPU's models for
  # the filter's shapes; the second is the measurement.
  echo "== lwt2d filter, 16384^2, 8 levels, three bands, fnn-dtps"
  ldd "$bin/lwt2d" | grep "not found" && status=1
  "$bin/lwt2d" generate --size 16384 --seed 1 --out /tmp/filter16k.npy
  for run in calibration measured; do
    echo "-- $run"
    t0=$(date +%s.%N)
    STARPU_SCHED=fnn-dtps "$bin/lwt2d" filter --in /tmp/filter16k.npy --levels 8 \
      --bands roughness=1-3,waviness=4-6,form=rest --out-dir /tmp/filter16k 2>&1 | tee "$OUT/filter_$run.txt"
    echo "whole command (reading, filtering, writing three 1 GiB bands): $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }') s" \
      | tee -a "$OUT/filter_$run.txt"
  done
  rm -rf /tmp/filter16k /tmp/filter16k.npy
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
  # COMPARE_LWT_ARGS adds compare.py options: `--period-ms 20` for a perturbation period shorter
  # than one transform (~27 ms at 16384), so that every timed run sees the duty cycle, not the
  # on or the off phase by luck.
  compare lwt --apps lwt2d --lwt-sizes ${COMPARE_LWT_SIZES:-8192,16384} --levels 4 \
    --perturb ${COMPARE_LWT_PERTURB:-none,gpu50} --reps 5 --warmup 2 ${COMPARE_LWT_ARGS:-}
fi
if has trace; then
  # What a policy did (DESIGN §8): LWT 16384^2 stable and under gpu50, fnn-dtps and dmdas, each
  # median run's trace (Perfetto) and Gantt chart, the sheets of both on one time axis per
  # condition, StarPU's LP bound row. The traces travel as one archive (at most 8 files a call).
  compare trace --apps lwt2d --lwt-sizes ${TRACE_LWT_SIZE:-16384} --levels 4 --perturb ${TRACE_PERTURB:-none,gpu50} \
    --reps 5 --warmup 2 --policies ${TRACE_POLICIES:-fnn-dtps,dmdas} --trace --timeout 60
  cp /tmp/bench-trace/traces/*_sheet.png "$OUT/" 2>/dev/null
  tar -C /tmp/bench-trace -czf "$OUT/traces.tgz" traces 2>/dev/null
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
if has calibrate; then
  # The performance models simulation runs on (bench/platforms/README.md): every codelet on
  # every kind of worker at every footprint the simulated bench uses (LWT units by
  # bench/sim_units.py's rule; gemm tiles of 1024), each class alone and both together,
  # dmdas with STARPU_CALIBRATE=1 into $STARPU_HOME. The folder comes back as
  # $OUT/sampling-h200.tgz, to unpack into bench/platforms/h200 (its README).
  stamp "calibrate"
  cal_t0=$SECONDS
  # CAL_SEED=DIR: go on from a sampling folder (bench/platforms/h200/sampling) instead of from
  # nothing: its bus calibration and models are kept and the runs below add to them (to fill
  # footprints a calibration missed, with CAL_LWT_SIZES and CAL_GEMM=0).
  if [[ -n ${CAL_SEED:-} ]]; then
    mkdir -p "$STARPU_HOME/.starpu" && rm -rf "$STARPU_HOME/.starpu/sampling" && cp -r "$CAL_SEED" "$STARPU_HOME/.starpu/sampling" \
      || { echo "   CAL_SEED=$CAL_SEED: cannot copy it into $STARPU_HOME"; status=1; }
  fi
  calibrate_run() {  # calibrate_run ENV CMD...; none starts past CAL_BUDGET_S (240) seconds
    local envs=$1; shift
    if ((SECONDS - cal_t0 > ${CAL_BUDGET_S:-240})); then echo "   skipped (past the budget): $envs $*"; return; fi
    echo "### $envs $*" >>"$OUT/calibrate.log"
    # A timing over 4x a footprint's mean (a cold start) stays out of it; StarPU's default of
    # 1.5x flushed footprints whose co-run and lone timings differ. CUDA modules load at
    # start-up, not at a footprint's first kernel.
    env $envs STARPU_SILENT=0 STARPU_SCHED=dmdas STARPU_CALIBRATE=1 STARPU_HISTORY_MAX_ERROR=300 CUDA_MODULE_LOADING=EAGER \
      timeout -k 5 120 "$@" >>"$OUT/calibrate.log" 2>&1 \
      || echo "   failed ($?): $envs $*"
  }
  # The CPUs alone at a smaller size: the same tile footprint, ~27 s less a product.
  gsize=${CAL_GEMM_SIZE:-16384} gcpu=${CAL_GEMM_CPU_SIZE:-4096} gtile=${CAL_GEMM_TILE:-1024}
  for r in $( ((${CAL_GEMM:-1})) && echo 1 2); do
    # 3d tiles: what the simulated bench runs (bench/sim_gate.py, compare.py --simulate).
    calibrate_run "STARPU_NCPU=0" "$bin/gemm" --size "$gsize" --split 3d --tile "$gtile" --iter 3
    calibrate_run "STARPU_NCUDA=0" "$bin/gemm" --size "$gcpu" --split 3d --tile "$gtile" --iter 3
    calibrate_run "" "$bin/gemm" --size "$gsize" --split 3d --tile "$gtile" --iter 2
  done
  echo "   gemm: $((SECONDS - cal_t0)) s"
  for size in ${CAL_LWT_SIZES:-8192 10240 11264 12288 16384 32768}; do
    units=$($PYTHON bench/sim_units.py "$size")
    # Three processes a class: StarPU drops a footprint's first timing, and the image's edge
    # units run once a process in the inverse (simulation runs with STARPU_CALIBRATE_MINIMUM=2).
    for envs in "STARPU_NCPU=0" "STARPU_NCUDA=0" $( ((size == 16384)) && echo co); do
      [[ $envs == co ]] && envs=
      for r in $(seq "${CAL_LWT_PROCS:-3}"); do
        calibrate_run "$envs" "$bin/lwt2d" demo --size "$size" --levels 4 --units "$units" --repeat 3 --warmup 0
      done
    done
    echo "   lwt $size ($units units): $((SECONDS - cal_t0)) s"
  done
  tar czf "$OUT/sampling-h200.tgz" -C "$STARPU_HOME/.starpu" sampling
  grep -c "^###" "$OUT/calibrate.log" | sed 's/^/   processes: /'
  grep -h "not calibrated\|flushing" "$OUT/calibrate.log" | sort | uniq -c | head -5
  gzip -f "$OUT/calibrate.log"
  stamp "calibrate done ($((SECONDS - cal_t0)) s)"
fi
if has mechanism; then
  # Issue 11's acceptance, every comparison in one call (notes/bench.md, "The mechanism part"):
  #  lwt-gpu      LWT S^2, 4 levels, 64 units, the GPU alone: our five policies, dmdar, dmdas, eager (ref dmdar)
  #  lwt-co       the same LWT on CPUs + GPU: fnn-dtps fnn boyer dtps even vs dmdas, dmdar, eager (ref dmdas)
  #  lwt-co-cold  the same, each process from empty performance models (a user's first run)
  #  gemm-co      our gemm S, split MECH_GEMM_SPLIT (2d), tile 1024, CPUs + GPU: fnn-dtps fnn boyer dtps vs dmdas
  #  gemm-gpu     our gemm S, split MECH_GEMM_SPLIT (2d), tile 1024, the GPU alone: fnn-dtps, dmdar, dmdas, eager (ref dmdar)
  #  sgemm2d      StarPU's sgemm -xy S -z S -nblocks S/1024 (2D: one task per C tile over all of
  #               z), CPUs + GPU, our policy through STARPU_SCHED_LIB: fnn-dtps vs dmdas
  #  lu-default   StarPU's lu_example_float at its default size (7680, 8 x 8 tiles of 960 there)
  #  lu-S         ... at S in tiles of 1024: fnn-dtps vs dmdas
  #  ovh-*        per-task overhead, 16 CPU workers: our bench_overhead (buffers 0, 1) and
  #               StarPU's tasks_overhead (-b 0, -b 1) under eager and our five (ref eager)
  # lwt2d and gemm time their repetitions in one process (--repeat after --warmup; iterations
  # 1.. after the first): one process per policy, its median. StarPU's programs time one run a
  # process: MECH_REPS processes per policy, interleaved across policies, after warm-up
  # processes (dmda* calibrate their history models in STARPU_HOME; ours learn in a
  # FNNDTPS_MODEL_DIR of their own per section and policy, kept across its processes). Every
  # process has a timeout, and none starts past MECH_BUDGET_S seconds of the part.
  # Writes mechanism.log (every command and its whole output), mechanism.csv (one row per
  # process) and mechanism.txt (medians and ratios to the reference, rewritten after every
  # section, so a call cut short keeps what it measured).
  # MECH_ONLY="calibration lu-*" runs only the sections named (patterns); MECH_BUDGET_S (400),
  # MECH_REPS (3), MECH_LWT_GPU_POLICIES, MECH_LWT_CO_POLICIES, MECH_GEMM_POLICIES,
  # MECH_GEMM_GPU_POLICIES, MECH_EX_POLICIES (StarPU's sgemm and LU) change the rest.
  # Dry run on a CPU machine (sizes, workers and programs overridable):
  #   MECH_GEMM_SIZE=512 MECH_SGEMM_SIZE=512 MECH_LU_SIZE=512 MECH_TILE=128
  #   MECH_LU_DEFAULT_ARGS="-size 960 -nblocks 4" MECH_GPU_ENV="STARPU_NCPU=1 STARPU_NCUDA=0"
  #   MECH_CO_ENV="STARPU_NCPU=2 STARPU_NCUDA=0" MECH_OVH_ENV="STARPU_NCPU=2 STARPU_NCUDA=0"
  #   MECH_LWT_SIZE=2048 MECH_OVH_TASKS=2000 bash scripts/gpu/run.sh mechanism
  stamp "mechanism"
  mech_t0=$SECONDS mech_budget=${MECH_BUDGET_S:-400}
  mlog=$OUT/mechanism.log mcsv=$OUT/mechanism.csv mtxt=$OUT/mechanism.txt
  msec=/tmp/mech-sections.tsv mout=/tmp/mech-out.txt mmodels=/tmp/mech-models
  rm -rf "$mmodels"; mkdir -p "$mmodels"; : >"$mlog"; : >"$msec"; mskip=0
  echo "section,config,run,value,min,max,unit,cpu,cuda,status,note" >"$mcsv"
  lib=$root/.carry/lib/libfnndtps.so
  commit=$(cat "$root/.carry/commit" 2>/dev/null || git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
  # dmda*'s history models count as calibrated after this many samples per worker and size
  # (StarPU's default 10): the LU's 16 getrf a run could never calibrate 16 workers otherwise.
  export STARPU_CALIBRATE_MINIMUM=${MECH_CALIBRATE_MINIMUM:-2}
  mreps=${MECH_REPS:-3} tile=${MECH_TILE:-1024}
  lwt_size=${MECH_LWT_SIZE:-16384} lwt_units=${MECH_LWT_UNITS:-64}
  lwt_repeat=${MECH_LWT_REPEAT:-5} lwt_warmup=${MECH_LWT_WARMUP:-2}
  gemm_size=${MECH_GEMM_SIZE:-16384} gemm_iter=${MECH_GEMM_ITER:-6} gemm_split=${MECH_GEMM_SPLIT:-2d}
  sgemm_size=${MECH_SGEMM_SIZE:-16384} sgemm_iter=${MECH_SGEMM_ITER:-3}
  lu_size=${MECH_LU_SIZE:-16384} lu_default_args=${MECH_LU_DEFAULT_ARGS:-}
  ovh_tasks=${MECH_OVH_TASKS:-10000} ovh_reps=${MECH_OVH_REPS:-5}
  gpu_env=${MECH_GPU_ENV:-STARPU_NCPU=0 STARPU_NCUDA=1}
  co_env=${MECH_CO_ENV:-}  # StarPU's defaults: 15 CPU workers + 1 CUDA worker on the H200 machine
  ovh_env=${MECH_OVH_ENV:-STARPU_NCPU=16 STARPU_NCUDA=0}
  ours="fnn-dtps fnn dtps boyer even"
  msection() {  # msection NAME REFERENCE DESCRIPTION; 1 when MECH_ONLY leaves it out
    local w ws
    if [[ -n ${MECH_ONLY:-} ]]; then
      read -ra ws <<<"$MECH_ONLY"  # patterns, unexpanded: "lu-* ovh-*"
      for w in "${ws[@]}"; do [[ $1 == $w ]] && break; w=; done
      [[ -n $w ]] || return 1
    fi
    printf '%s\t%s\t%s\n' "$1" "$2" "$3" >>"$msec"
    stamp "mechanism $1: $3"
  }
  mrun() {  # mrun TIMEOUT "ENV" CMD...: one process; output in $mout and mechanism.log
    local t=$1 envs=$2; shift 2
    local left=$((mech_budget - (SECONDS - mech_t0))) t1=$SECONDS rc
    mskip=0
    if ((left < 10)); then
      mskip=1; echo "skipped: past the part's budget of $mech_budget s" >"$mout"
      echo "### skipped (past the budget): $envs $*" >>"$mlog"; return 1
    fi
    ((t > left)) && t=$left
    echo "### $(date +%T) $envs $*" >>"$mlog"
    env $envs timeout -k 5 "$t" "$@" >"$mout" 2>&1; rc=$?
    cat "$mout" >>"$mlog"
    echo "# rc=$rc wall=$((SECONDS - t1))s timeout=${t}s" >>"$mlog"
    return $rc
  }
  mrecord() {  # mrecord SECTION CONFIG RUN RC VALUE MIN MAX UNIT CPU CUDA: one CSV row
    local status=ok note=
    if ((mskip)); then status=skipped note="past the budget"
    elif [[ $3 == w* ]]; then status=warmup note="rc $4"
    elif (($4 == 124 || $4 == 137)); then status=timeout note="killed by timeout"
    elif (($4 != 0)) || [[ -z $5 ]]; then
      status=failed note="exit $4: $(grep -v '^\s*$' "$mout" | tail -1 | tr -d ',' | cut -c1-120)"
    fi
    [[ $status == ok || $status == warmup ]] || set -- "$1" "$2" "$3" "$4" "" "" "" "$8" "" ""
    echo "$1,$2,$3,$5,$6,$7,$8,$9,${10},$status,$note" >>"$mcsv"
    echo "   $1 $2 run $3: ${5:-$status} ${5:+$8} ${note:+($note)}" >&2
  }
  rget() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"; }
  mresult() {  # mresult SECTION CONFIG RUN RC TAG MED MIN MAX UNIT: from the last "RESULT TAG" line
    local line; line=$(grep "^RESULT $5 " "$mout" | tail -1)
    mrecord "$1" "$2" "$3" "$4" "$(rget "$6" "$line")" "$(rget "$7" "$line")" "$(rget "$8" "$line")" "$9" \
      "$(rget cpu "$line")$(rget workers "$line")" "$(rget cuda "$line")"
  }
  # A POLICY is a policy name, or LABEL:POLICY,ENV=V,... (a variant, e.g.
  # fnn-dtps-norb:fnn-dtps,FNNDTPS_REBALANCE=0). Ours print their summary into mechanism.log.
  mpolicy() {  # mpolicy TOKEN: sets mlabel and menv
    local t=$1 rest
    if [[ $t == *:* ]]; then mlabel=${t%%:*} rest=${t#*:}; else mlabel=$t rest=$t; fi
    menv="STARPU_SCHED=${rest%%,*} FNNDTPS_SUMMARY=1"
    [[ $rest == *,* ]] && menv+=" $(tr ',' ' ' <<<"${rest#*,}")"
  }
  mlwt() {  # mlwt SECTION POLICY ENV [RUN]
    local mlabel menv; mpolicy "$2"
    mrun 60 "$3 $menv FNNDTPS_MODEL_DIR=$mmodels/$1-$mlabel" "$bin/lwt2d" demo --size "$lwt_size" \
      --levels 4 --units "$lwt_units" --repeat "$lwt_repeat" --warmup "$lwt_warmup"
    mresult "$1" "$mlabel" "${4:-1}" $? forward median_ms min_ms max_ms ms
  }
  # MECH_LWT_PROCS (1) processes a policy, interleaved across policies: one process's median
  # of 5 transforms moves by ~5% from process to process on the GPU alone (RESULTS.md M).
  mlwts() {  # mlwts SECTION ENV POLICY...
    local sec=$1 envs=$2 r p; shift 2
    for r in $(seq "${MECH_LWT_PROCS:-1}"); do for p in "$@"; do mlwt "$sec" "$p" "$envs" "$r"; done; done
  }
  mgemm() {  # mgemm SECTION POLICY ENV [RUN]
    local mlabel menv; mpolicy "$2"
    mrun 90 "$3 $menv FNNDTPS_MODEL_DIR=$mmodels/$1-$mlabel" "$bin/gemm" --size "$gemm_size" --split "$gemm_split" \
      --tile "$tile" --iter "$gemm_iter"
    mresult "$1" "$mlabel" "${4:-1}" $? gemm median_ms min_ms max_ms ms
  }
  mexample() {  # mexample SECTION POLICY RUN KIND ARGS...: one process of StarPU's sgemm or LU example
    local sec=$1 pol=$2 run=$3 kind=$4; shift 4
    local envs="$co_env STARPU_SCHED=$pol FNNDTPS_MODEL_DIR=$mmodels/$sec-$pol"
    [[ " $ours " == *" $pol "* ]] && envs+=" STARPU_SCHED_LIB=$lib"
    mrun 120 "$envs" "$bin/$kind" "$@"; local rc=$? ms=
    # ms per product (sgemm: "x y z ms GFlop/s"; LU: "n ms GFlop/s"): the printed ms (to 1 ms) or
    # the time from the GFlop/s (to 0.1), whichever is the more precise.
    local pick='function pick(ms, gf, flop) { return (gf > 0 && (ms <= 0 || 0.05 / gf < 0.5 / ms)) ? flop / (gf * 1e6) : ms }'
    if [[ $kind == sgemm ]]; then
      ms=$(awk "$pick"' !/^#/ && NF >= 5 && $4 + $5 > 0 {v = pick($4, $5, 2 * $1 * $2 * $3)} END {if (v) printf "%.3f", v}' "$mout")
    else
      ms=$(awk "$pick"' h && NF >= 3 && $2 + $3 > 0 {v = pick($2, $3, 2 * $1 * $1 * $1 / 3); h = 0} /^# size/ {h = 1} END {if (v) printf "%.3f", v}' "$mout")
    fi
    mrecord "$sec" "$pol" "$run" "$rc" "$ms" "" "" ms "" ""
  }
  # mexamples SECTION KIND ARGS...: MECH_EX_CAL (2) warm-up processes of dmdas, MECH_EX_WARMUP
  # (1) of each of ours, then MECH_REPS rounds, under dmdas and MECH_EX_POLICIES (fnn-dtps).
  mexamples() {
    local sec=$1 kind=$2 pol r; shift 2
    for pol in dmdas ${MECH_EX_POLICIES:-fnn-dtps}; do
      for r in $(seq "$([[ $pol == dmda* ]] && echo "${MECH_EX_CAL:-2}" || echo "${MECH_EX_WARMUP:-1}")"); do
        mexample "$sec" "$pol" "w$r" "$kind" "$@"
      done
    done
    for r in $(seq "$mreps"); do
      for pol in dmdas ${MECH_EX_POLICIES:-fnn-dtps}; do mexample "$sec" "$pol" "$r" "$kind" "$@"; done
    done
  }
  msummary() {
    $PYTHON - "$mcsv" "$msec" "$mtxt" "$commit" "$((SECONDS - mech_t0))" "$mech_budget" \
      "$STARPU_CALIBRATE_MINIMUM" "$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)" <<'PY'
import csv, statistics, sys
path, secpath, out, commit, elapsed, budget, calmin, gpu = sys.argv[1:9]
rows = list(csv.DictReader(open(path)))
secs = [l.rstrip("\n").split("\t") for l in open(secpath) if l.strip()]
lines = [f"mechanism (issue 11): commit {commit}; {gpu or 'no GPU'}; {elapsed} s of the part (budget {budget} s)",
         f"STARPU_CALIBRATE_MINIMUM={calmin}; value: ms (lwt2d: a forward transform, host to host; gemm, sgemm:"
         " a product; LU: the factorization), us per task for ovh-*",
         "one-process rows (lwt2d, gemm, bench_overhead): n = 1, median/min/max of the timed repetitions in it;",
         "  others: median/min/max over n processes. ratio = median / the reference's median (below 1: faster)", ""]
fmt = "{:<12} {:<10} {:>3} {:>11} {:>11} {:>11} {:>5} {:>6} {:>8}  {}"
lines.append(fmt.format("section", "config", "n", "median", "min", "max", "unit", "wrk", "ratio", "note"))
for name, ref, desc in secs:
    lines.append(f"-- {name}: {desc}; reference {ref}")
    here = [r for r in rows if r["section"] == name]
    meds = {}
    for cfg in dict.fromkeys(r["config"] for r in here):
        runs = [r for r in here if r["config"] == cfg]
        ok = [r for r in runs if r["status"] == "ok"]
        vals = [float(r["value"]) for r in ok]
        if len(ok) == 1 and ok[0]["min"]:
            mn, mx = float(ok[0]["min"]), float(ok[0]["max"])
        else:
            mn, mx = (min(vals), max(vals)) if vals else (None, None)
        meds[cfg] = (statistics.median(vals) if vals else None, mn, mx, len(ok), runs)
    refmed = meds.get(ref, (None,))[0]
    for cfg, (med, mn, mx, n, runs) in meds.items():
        bad = [f"{r['status']} {r['note']}".strip() for r in runs if r["status"] not in ("ok", "warmup")]
        wrk = next((f"{r['cpu']}+{r['cuda']}" if r["cuda"] else r["cpu"] for r in runs if r["cpu"]), "")
        unit = runs[0]["unit"]
        num = lambda v: "-" if v is None else f"{v:.3f}" if unit == "us" else f"{v:.2f}"
        ratio = "-" if med is None or not refmed else f"{med / refmed:.2f}"
        lines.append(fmt.format(name, cfg + ("*" if cfg == ref else ""), n, num(med), num(mn), num(mx), unit, wrk,
                                ratio, "; ".join(dict.fromkeys(bad))[:100]))
text = "\n".join(lines) + "\n"
open(out, "w").write(text)
PY
  }
  # Calibration: dmdas on CPUs + GPU, the LWT's and the gemm's codelets at the sizes below (and
  # StarPU's bus calibration on a fresh STARPU_HOME).
  if msection calibration - "dmdas on CPUs + GPU, lwt2d and gemm, not timed"; then
    mrun 90 "$co_env STARPU_SCHED=dmdas FNNDTPS_MODEL_DIR=$mmodels/cal" "$bin/lwt2d" demo --size "$lwt_size" --levels 4 \
      --units "$lwt_units" --repeat 2 --warmup 1
    mresult calibration lwt2d-dmdas 1 $? forward median_ms min_ms max_ms ms
    mrun 90 "$co_env STARPU_SCHED=dmdas FNNDTPS_MODEL_DIR=$mmodels/cal" "$bin/gemm" --size "$gemm_size" --split "$gemm_split" --tile "$tile" --iter 2
    mresult calibration gemm-dmdas 1 $? gemm median_ms min_ms max_ms ms
  fi
  lwt_procs="median of $lwt_repeat after $lwt_warmup in each of ${MECH_LWT_PROCS:-1} process(es)"
  if msection lwt-gpu dmdar "LWT ${lwt_size}^2, 4 levels, $lwt_units units, the GPU alone ($gpu_env), $lwt_procs"; then
    mlwts lwt-gpu "$gpu_env" ${MECH_LWT_GPU_POLICIES:-$ours dmdar dmdas eager}
    msummary
  fi
  co_text=${co_env:-StarPU\'s default workers}
  if msection lwt-co dmdas "the same LWT on CPUs + GPU ($co_text), $lwt_procs"; then
    mlwts lwt-co "$co_env" ${MECH_LWT_CO_POLICIES:-fnn-dtps fnn boyer dtps even dmdas dmdar eager}
    msummary
  fi
  # A user's first run: StarPU's performance models empty (a STARPU_HOME holding only the bus
  # calibration, new for each process), so every policy learns the codelets' times as it goes.
  if msection lwt-co-cold dmdas "the same LWT on CPUs + GPU, each process from empty performance models"; then
    for p in ${MECH_LWT_COLD_POLICIES:-fnn-dtps fnn boyer dmdas}; do
      cold=/tmp/mech-cold-$p; rm -rf "$cold"; mkdir -p "$cold/.starpu/sampling"
      cp -r "$STARPU_HOME/.starpu/sampling/bus" "$cold/.starpu/sampling/" 2>/dev/null
      mlwt lwt-co-cold "$p" "$co_env STARPU_HOME=$cold"
    done
    msummary
  fi
  if msection gemm-gpu dmdar "our gemm ${gemm_size}^3 float, split $gemm_split, tile $tile, the GPU alone ($gpu_env), median of iterations 1-$((gemm_iter - 1))"; then
    for p in ${MECH_GEMM_GPU_POLICIES:-fnn-dtps dmdar dmdas eager}; do mgemm gemm-gpu "$p" "$gpu_env"; done
    msummary
  fi
  # MECH_GEMM_PROCS (1) processes a policy, interleaved: a process's median is close to its
  # iterations, but processes differ (some run a product ~15% slower throughout).
  if msection gemm-co dmdas "our gemm ${gemm_size}^3 float, split $gemm_split, tile $tile, CPUs + GPU, median of iterations 1-$((gemm_iter - 1)) (0 calibrates) in each of ${MECH_GEMM_PROCS:-1} process(es)"; then
    for r in $(seq "${MECH_GEMM_PROCS:-1}"); do
      for p in ${MECH_GEMM_POLICIES:-fnn-dtps fnn boyer dtps dmdas dmdar}; do mgemm gemm-co "$p" "$co_env" "$r"; done
    done
    msummary
  fi
  if msection sgemm2d dmdas "StarPU's sgemm -xy $sgemm_size -z $sgemm_size -nblocks $((sgemm_size / tile)) -iter $sgemm_iter (2D), CPUs + GPU, ms per product"; then
    mexamples sgemm2d sgemm -xy "$sgemm_size" -z "$sgemm_size" -nblocks $((sgemm_size / tile)) -iter "$sgemm_iter"
    msummary
  fi
  if msection lu-default dmdas "StarPU's lu_example_float ${lu_default_args:-at its default size}, CPUs + GPU"; then
    mexamples lu-default lu_example_float $lu_default_args
    msummary
  fi
  if msection lu-$lu_size dmdas "StarPU's lu_example_float -size $lu_size -nblocks $((lu_size / tile)), CPUs + GPU"; then
    mexamples lu-$lu_size lu_example_float -size "$lu_size" -nblocks $((lu_size / tile))
    msummary
  fi
  for b in 0 1; do
    msection ovh-bench-b$b eager "our bench_overhead $ovh_tasks tasks x $ovh_reps reps, $b buffer(s) a task, $ovh_env; median over $mreps processes of each one's median" || continue
    for r in $(seq "$mreps"); do
      for p in eager $ours; do
        mrun 60 "$ovh_env FNNDTPS_SAVE=0 STARPU_SCHED=$p $([[ $p != eager ]] && echo "STARPU_SCHED_LIB=$lib")" \
          "$bin/bench_overhead" "$ovh_tasks" "$ovh_reps" $b
        mresult ovh-bench-b$b "$p" "$r" $? overhead us_per_task min_us max_us us
      done
    done
    msummary
  done
  for b in 0 1; do
    msection ovh-starpu-b$b eager "StarPU's tasks_overhead -i $ovh_tasks -b $b (one chain of tasks), $ovh_env, 'Per task' (submit + execution)" || continue
    for r in $(seq "$mreps"); do
      for p in eager $ours; do
        mrun 60 "$ovh_env FNNDTPS_SAVE=0 STARPU_SCHED=$p $([[ $p != eager ]] && echo "STARPU_SCHED_LIB=$lib")" \
          "$bin/tasks_overhead" -i "$ovh_tasks" -b $b
        mrecord ovh-starpu-b$b "$p" "$r" $? "$(sed -n 's/^Per task: \([0-9.]*\) usecs.*/\1/p' "$mout" | tail -1)" "" "" us "" ""
      done
    done
    msummary
  done
  stamp "mechanism done ($((SECONDS - mech_t0)) s)"
  cat "$mtxt"
fi
if has clients; then
  # StarPU's own programs as clients of the policies (bench/clients.py says what it runs and
  # writes: clients.csv, clients.txt, clients.log), with StarPU's default workers (CLIENTS_ENV;
  # 15 CPU + 1 CUDA here). CLIENTS_PROGRAMS, CLIENTS_POLICIES, CLIENTS_REPS (3), CLIENTS_BUDGET_S
  # (240), CLIENTS_STENCIL_ARGS override its defaults. On the H200 machine a process takes ~2.6 s
  # (stencil: ~0.4 s of computation under lws, the rest its start and allocations), ~1.1 s (pih)
  # and ~5.5 s (pih-data: 1600 pinned vectors).
  stamp "clients"
  cargs=(--bin "$bin" --lib "$root/.carry/lib/libfnndtps.so" --out "$OUT" --models /tmp/clients-models --env "${CLIENTS_ENV:-}"
         --reps "${CLIENTS_REPS:-3}" --budget "${CLIENTS_BUDGET_S:-240}"
         --commit "$(cat "$root/.carry/commit" 2>/dev/null || git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)")
  [[ -n ${CLIENTS_PROGRAMS:-} ]] && cargs+=(--programs "$(tr ' ' ',' <<<"$CLIENTS_PROGRAMS")")
  [[ -n ${CLIENTS_POLICIES:-} ]] && cargs+=(--policies "$(tr ' ' ',' <<<"$CLIENTS_POLICIES")")
  [[ -n ${CLIENTS_STENCIL_ARGS:-} ]] && cargs+=(--stencil-args "$CLIENTS_STENCIL_ARGS")
  $PYTHON bench/clients.py "${cargs[@]}" || status=1
  # The history models StarPU's policies calibrated for the stencil's codelets on this machine:
  # what simulating the stencil elsewhere needs (bench/platforms/h200's README).
  smodels=$STARPU_HOME/.starpu/sampling/codelets
  ls "$smodels"/*/cl_update* "$smodels"/*/save_cl_* >/dev/null 2>&1 && tar -C "$STARPU_HOME/.starpu/sampling" -czf \
    "$OUT/clients-models.tgz" $(cd "$STARPU_HOME/.starpu/sampling" && ls -d codelets/*/cl_update* codelets/*/save_cl_* 2>/dev/null)
  stamp "clients done"
fi
if has gemm2d; then
  # Issue 14's acceptance, our gemm and StarPU's sgemm example side by side, split 2d (one task
  # per C block over the whole k; the example without -3d, our policies through
  # STARPU_SCHED_LIB), sgemm 16384, tiles of GEMM2D_TILES (1024 2048): the GPU alone (dmdas,
  # STARPU_NCPU=0: >= 45 TFLOP/s wanted, the median of iterations 1-5 after iteration 0
  # calibrates) and CPUs + GPU under dmdas, fnn-dtps and dtps (within 2% of dmdas wanted).
  # One dmdas process per tile first calibrates the 2d blocks' models (not timed). ~2.5 min a
  # tile. GEMM2D_SIZE (16384) for dry runs elsewhere.
  export STARPU_CALIBRATE_MINIMUM=${STARPU_CALIBRATE_MINIMUM:-2}
  g2size=${GEMM2D_SIZE:-16384}
  for tile in ${GEMM2D_TILES:-1024 2048}; do
    stamp "gemm2d: calibration, tile $tile"
    STARPU_SCHED=dmdas timeout -k 5 120 "$bin/gemm" --size "$g2size" --split 2d --tile "$tile" --iter 3 | grep RESULT
    stamp "gemm2d: sgemm $g2size, split 2d, tile $tile"
    bash bench/gemm.sh --gemm "$bin/gemm" --example "$bin/sgemm" --lib "$root/.carry/lib/libfnndtps.so" \
      --split 2d --size "$g2size" --tile "$tile" --iter 6 --csv "$OUT/gemm2d_$tile.csv" \
      "gpu-only:STARPU_SCHED=dmdas STARPU_NCPU=0" "dmdas:STARPU_SCHED=dmdas" "fnn-dtps:STARPU_SCHED=fnn-dtps" \
      "dtps:STARPU_SCHED=dtps" 2>&1 | tee "$OUT/gemm2d_$tile.txt"
  done
  stamp "gemm2d done"
fi
if has seed001; then
  # Seed 001's three experiments (bench/seed001.sh): OpenBLAS alone on every core, cuBLAS alone
  # on resident data, and our gemm on mixed blocks (--tiles N/8,N/16,N/32,N/32) under dtps,
  # fnn-dtps, dmdas and the GPU alone, sizes SEED_SIZES (1024..16384); no run starts past
  # SEED_BUDGET_S (480) seconds. Writes seed001.csv, seed001.md (the table, with date, machine,
  # commit and command), seed001.png (where matplotlib is; else run bench/seed001_plot.py on the
  # CSV elsewhere) and seed001.log.gz.
  stamp "seed001"
  seed_cmd="bench/seed001.sh --bin $bin --sizes ${SEED_SIZES:-1024,2048,4096,8192,16384} --budget ${SEED_BUDGET_S:-480} ${SEED_ARGS:-}"
  rm -rf /tmp/seed001
  bash $seed_cmd --out /tmp/seed001 || status=1
  $PYTHON bench/seed001_plot.py /tmp/seed001/seed001.csv --out "$OUT" --command "$seed_cmd (scripts/gpu/run.sh seed001)"
  cp /tmp/seed001/seed001.csv "$OUT/" && gzip -c /tmp/seed001/seed001.log >"$OUT/seed001.log.gz"
  stamp "seed001 done"
fi
if has sgemm-gpu50; then
  # StarPU's 2D sgemm example (-xy 16384 -z 16384 -nblocks 16 -iter 3) under dmdas and fnn-dtps
  # (ours through STARPU_SCHED_LIB), one process each, stable and then with `perturb --gpu 0
  # --duty 0.5 --period-ms 200` beside (gpu50) under SGEMM_GPU50_POLICIES ("dmdas fnn-dtps");
  # ~40 s a process, most of it the example's own matrix filling (eager and lws take minutes a
  # product here: leave them out). Models from the STARPU_HOME of earlier parts (run `mechanism` or seed it from
  # bench/platforms/h200/sampling first). Writes sgemm-gpu50.txt.
  stamp "sgemm-gpu50"
  (
    export STARPU_CALIBRATE_MINIMUM=${STARPU_CALIBRATE_MINIMUM:-2}
    sg() { echo "-- $(date +%T) $*"; timeout -k 5 75 env "$@" "$bin/sgemm" -xy 16384 -z 16384 -nblocks 16 -iter 3 2>&1 | tail -2; }
    lib=$root/.carry/lib/libfnndtps.so
    pol() { case $1 in fnn-dtps|fnn|dtps|boyer|even) echo "STARPU_SCHED=$1 STARPU_SCHED_LIB=$lib";; *) echo "STARPU_SCHED=$1";; esac; }
    echo "== stable"; sg STARPU_SCHED=dmdas; sg $(pol fnn-dtps)
    echo "== gpu50"
    gpu50=${SGEMM_GPU50_POLICIES:-dmdas fnn-dtps}
    "$bin/perturb" --gpu 0 --duty 0.5 --period-ms 200 --seconds $((85 * $(wc -w <<<"$gpu50"))) >/dev/null 2>&1 & load=$!
    for p in $gpu50; do sg $(pol "$p"); done
    kill "$load" 2>/dev/null; wait "$load" 2>/dev/null
  ) | tee "$OUT/sgemm-gpu50.txt"
  stamp "sgemm-gpu50 done"
fi
if has mpi; then
  # Issue 16 on one node: lwt2d-mpi (LWT MPI_LWT_SIZE^2, 4 levels, 64 units) and gemm-mpi (MPI_GEMM_SIZE,
  # tile 1024) as one process (15 CPU workers + the GPU) and as 2 ranks splitting the node (rank
  # 0: the GPU + 8 CPU workers on cores 0-8; rank 1: 7 CPU workers on cores 9-15) and as 3
  # (the GPU + 5 workers, 5, 5; DTPS by halves, gemm-mpi under --shares dtps), each under
  # our policy, the LWT with its default shares (DTPS between the 2 ranks) and with the model's
  # alone (MPI_LWT_REPEAT runs, 10); the 2 ranks' coefficients against the one process's, and
  # gemm-mpi --check with a GPU rank. Needs .carry/mpi from `FNNDTPS_PACK_MPI=1
  # scripts/gpu/pack.sh` and an MPI launcher (MPIRUN, default mpirun). Writes mpi.txt, and the
  # 2-rank dtps LWT whole with rank 0 verbose to mpi-2ranks-verbose.txt.
  stamp "mpi"
  mtxt=$OUT/mpi.txt
  mpirun=${MPIRUN:-mpirun}
  if [[ ! -x $root/.carry/mpi/bin/lwt2d-mpi ]] || ! command -v "$mpirun" >/dev/null; then
    echo "mpi: no .carry/mpi or no MPI launcher ($mpirun) here" | tee "$mtxt"; status=1
  else
    (
      export LD_LIBRARY_PATH=$root/.carry/mpi/lib:$LD_LIBRARY_PATH
      export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
      mb=$root/.carry/mpi/bin d=/tmp/mpi-run; rm -rf "$d"; mkdir -p "$d"
      lsize=${MPI_LWT_SIZE:-16384} gsize=${MPI_GEMM_SIZE:-16384}
      one=(-np 1 --bind-to none)
      two=(-np 1 --bind-to none -x STARPU_NCPU=8 -x STARPU_NCUDA=1 -x STARPU_WORKERS_CPUID=0-8)
      two2=(-np 1 --bind-to none -x STARPU_NCPU=7 -x STARPU_NCUDA=0 -x STARPU_WORKERS_CPUID=9-15)
      pick() { grep -E "RESULT|^rank|^dtps|check|rror" | sed "s/^/   /"; }
      lwt=(forward --in "$d/x.npy" --levels 4 --units 64 --repeat ${MPI_LWT_REPEAT:-10})
      "$bin/lwt2d" generate --out "$d/x.npy" --size "$lsize" >/dev/null
      echo "## lwt2d-mpi forward $lsize^2, 4 levels, one process"
      timeout -k 5 150 "$mpirun" "${one[@]}" "$mb/lwt2d-mpi" "${lwt[@]}" --out "$d/c1.npy" 2>&1 | pick
      echo "## the same, 2 ranks (shares: dtps, the default for 2)"
      # Rank 0's policy verbose, whole in mpi-2ranks-verbose.txt: what it decided for its own
      # workers within the job (notes/bench.md, "StarPU-MPI in simulation").
      timeout -k 5 150 "$mpirun" "${two[@]}" -x FNNDTPS_VERBOSE=1 "$mb/lwt2d-mpi" "${lwt[@]}" --out "$d/c2.npy" : \
        "${two2[@]}" "$mb/lwt2d-mpi" "${lwt[@]}" --out "$d/c2.npy" 2>&1 | grep -v '^\[starpu\]' \
        | tee "$OUT/mpi-2ranks-verbose.txt" | pick
      echo "## the same, 2 ranks, --shares model (the workers' speeds alone)"
      timeout -k 5 150 "$mpirun" "${two[@]}" "$mb/lwt2d-mpi" "${lwt[@]}" --shares model --out "$d/c3.npy" : \
        "${two2[@]}" "$mb/lwt2d-mpi" "${lwt[@]}" --shares model --out "$d/c3.npy" 2>&1 | pick
      # 3 ranks (DTPS by halves, apps/rank_dtps.hpp): the GPU + 5 CPU workers, then 5 and 5.
      three=(-np 1 --bind-to none -x STARPU_NCPU=5 -x STARPU_NCUDA=1 -x STARPU_WORKERS_CPUID=0-5)
      three2=(-np 1 --bind-to none -x STARPU_NCPU=5 -x STARPU_NCUDA=0 -x STARPU_WORKERS_CPUID=6-10)
      three3=(-np 1 --bind-to none -x STARPU_NCPU=5 -x STARPU_NCUDA=0 -x STARPU_WORKERS_CPUID=11-15)
      echo "## the same, 3 ranks (shares: dtps by halves)"
      timeout -k 5 150 "$mpirun" "${three[@]}" "$mb/lwt2d-mpi" "${lwt[@]}" --out "$d/c4.npy" : \
        "${three2[@]}" "$mb/lwt2d-mpi" "${lwt[@]}" --out "$d/c4.npy" : \
        "${three3[@]}" "$mb/lwt2d-mpi" "${lwt[@]}" --out "$d/c4.npy" 2>&1 | pick
      $PYTHON -c "
import numpy as np, sys
a = np.load(sys.argv[1])
for n, f in (('2', sys.argv[2]), ('3', sys.argv[3])):
    b = np.load(f)
    print('   %s ranks against one process: %s' % (n, 'identical' if np.array_equal(a, b) else
          'DIFFERS, max |c - c1| / max |c1| = %.3g' % (np.abs(b - a).max() / np.abs(a).max())))" \
        "$d/c1.npy" "$d/c2.npy" "$d/c4.npy" 2>&1
      rm -f "$d"/*.npy
      mrun2() {  # mrun2 LABEL PROG ARGS...: one process, then the 2 ranks
        local label=$1; shift
        echo "## $label, one process"
        timeout -k 5 150 "$mpirun" "${one[@]}" "$@" 2>&1 | pick
        echo "## $label, 2 ranks"
        timeout -k 5 150 "$mpirun" "${two[@]}" "$@" : "${two2[@]}" "$@" 2>&1 | pick
      }
      mrun2 "gemm-mpi $gsize, tile 1024" "$mb/gemm-mpi" --size "$gsize" --tile 1024 --iter 6
      echo "## gemm-mpi $gsize, tile 1024, 3 ranks, --shares dtps (by halves)"
      g3=(--size "$gsize" --tile 1024 --iter 6 --shares dtps)
      timeout -k 5 150 "$mpirun" "${three[@]}" "$mb/gemm-mpi" "${g3[@]}" : "${three2[@]}" "$mb/gemm-mpi" "${g3[@]}" : \
        "${three3[@]}" "$mb/gemm-mpi" "${g3[@]}" 2>&1 | pick
      echo "## gemm-mpi --check, 2 ranks (the GPU on rank 0), 2000, tile 512 (ragged)"
      timeout -k 5 150 "$mpirun" "${two[@]}" "$mb/gemm-mpi" --size 2000 --tile 512 --iter 2 --check : \
        "${two2[@]}" "$mb/gemm-mpi" --size 2000 --tile 512 --iter 2 --check 2>&1 | pick
      rm -rf "$d"
    ) 2>&1 | tee "$mtxt"
  fi
  stamp "mpi done"
fi
if has bits; then
  # The LWT's output does not depend on where its units ran (bench/RESULTS.md V): a forward
  # (BITS_SIZE^2, 4 levels, 64 units) and the inverse of the GPU's coefficients on the GPU
  # alone, the CPUs alone, eager and fnn-dtps, each output compared byte for byte with the
  # GPU alone's. Writes bits.txt.
  stamp "bits"
  d=/tmp/bits; rm -rf "$d"; mkdir -p "$d"
  (
    "$bin/lwt2d" generate --out "$d/x.npy" --size "${BITS_SIZE:-8192}" >/dev/null || echo "generate failed"
    for cfg in "gpu:STARPU_NCPU=0" "cpu:STARPU_NCUDA=0" "eager:STARPU_SCHED=eager" "fnn-dtps:STARPU_SCHED=fnn-dtps"; do
      n=${cfg%%:*}
      env ${cfg#*:} timeout -k 5 60 "$bin/lwt2d" forward --in "$d/x.npy" --out "$d/c-$n.npy" --levels 4 --units 64 \
        >/dev/null 2>"$d/err" || { echo "forward $n failed: $(tail -1 "$d/err")"; continue; }
      env ${cfg#*:} timeout -k 5 60 "$bin/lwt2d" inverse --in "$d/c-gpu.npy" --out "$d/y-$n.npy" --levels 4 --units 64 \
        >/dev/null 2>"$d/err" || echo "inverse $n failed: $(tail -1 "$d/err")"
    done
    for n in cpu eager fnn-dtps; do
      for f in c y; do
        what=$([[ $f == c ]] && echo forward || echo inverse)
        if cmp -s "$d/$f-gpu.npy" "$d/$f-$n.npy"; then echo "$what, $n against the GPU alone: identical"
        else echo "$what, $n against the GPU alone: DIFFERS (or missing)"; fi
      done
    done
  ) 2>&1 | tee "$OUT/bits.txt"
  grep -q "DIFFERS\|failed" "$OUT/bits.txt" && status=1
  rm -rf "$d"
fi
if has cold; then
  # The apps as users run them (bench/cold.py): each command its own process, fresh StarPU
  # and model folders per configuration (StarPU's bus calibrated once), COLD_RUNS processes
  # sharing them, COLD_ROUNDS times over (each cell the rounds' median). Writes cold.txt and
  # cold.csv, and cold-logs.tgz (every process's output).
  stamp "cold"
  d=/tmp/cold; rm -rf "$d"
  timeout -k 10 "${COLD_BUDGET_S:-300}" "$PYTHON" bench/cold.py --build "$root/.carry" --out "$d" \
    --sizes "${COLD_SIZES:-8192,16384}" --configs "${COLD_CONFIGS:-fnn-dtps,dmdas,gpu-alone}" \
    --runs "${COLD_RUNS:-2}" --rounds "${COLD_ROUNDS:-1}" --commands "${COLD_COMMANDS:-forward,inverse,filter}" --timeout 60 \
    || { echo "cold: bench/cold.py failed or was cut short"; status=1; }
  cp "$d/cold.txt" "$d/cold.csv" "$OUT/" 2>/dev/null
  tar -C "$d" -czf "$OUT/cold-logs.tgz" logs 2>/dev/null
  cat "$d/cold.txt" 2>/dev/null
fi
if has warm; then
  # The warmed-up figures beside the cold ones (DESIGN §10): one process each, LWT WARM_SIZE^2
  # (4 levels, 64 units, median of 5 after 2 warm-ups) and gemm WARM_SIZE (tile 1024, median of
  # iterations 1-4), under fnn-dtps, dmdas and the GPU alone (dmdas, STARPU_NCPU=0), in fresh
  # model folders and the STARPU_HOME of the run. Writes warm.txt (the RESULT lines).
  stamp "warm"
  n=${WARM_SIZE:-16384}
  for cfg in "fnn-dtps:STARPU_SCHED=fnn-dtps" "dmdas:STARPU_SCHED=dmdas" "gpu-alone:STARPU_SCHED=dmdas STARPU_NCPU=0"; do
    rm -rf /tmp/warm-models
    env ${cfg#*:} FNNDTPS_MODEL_DIR=/tmp/warm-models timeout -k 5 90 "$bin/lwt2d" demo --size "$n" --levels 4 --units 64 \
      --repeat 5 --warmup 2 2>/dev/null | grep "^RESULT" | sed "s/^/${cfg%%:*}: /"
    env ${cfg#*:} FNNDTPS_MODEL_DIR=/tmp/warm-models timeout -k 5 90 "$bin/gemm" --size "$n" --tile 1024 --iter 5 \
      2>/dev/null | grep "^RESULT" | sed "s/^/${cfg%%:*}: /"
  done 2>&1 | tee "$OUT/warm.txt"
fi
exit $status
