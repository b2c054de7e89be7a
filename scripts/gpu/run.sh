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
  # Issue 11's acceptance, every comparison in one call: bench/mechanism.py (its --help lists the
  # sections and what it writes: mechanism.csv, mechanism.txt, mechanism.log). MECH_ONLY names
  # sections (patterns); MECH_BUDGET_S (400), MECH_REPS (3) and MECH_<OPTION> for each of its
  # size, worker and policy options (MECH_LWT_SIZE=2048 for --lwt-size 2048,
  # MECH_CO_ENV="STARPU_NCPU=2" for --co-env ...) change the rest.
  stamp "mechanism"
  margs=(--bin "$bin" --lib "$root/.carry/lib/libfnndtps.so" --out "$OUT" --models /tmp/mech-models
         --budget "${MECH_BUDGET_S:-400}" --reps "${MECH_REPS:-3}" --only "${MECH_ONLY:-}"
         --commit "$(cat "$root/.carry/commit" 2>/dev/null || git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
         --gpu-name "$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)")
  for opt in tile lwt-size lwt-units lwt-repeat lwt-warmup lwt-procs gemm-size gemm-iter gemm-split gemm-procs \
             sgemm-size sgemm-iter lu-size lu-default-args ovh-tasks ovh-reps gpu-env co-env ovh-env \
             lwt-gpu-policies lwt-co-policies lwt-cold-policies gemm-policies gemm-gpu-policies ex-policies \
             ex-cal ex-warmup calibrate-minimum; do
    var=MECH_$(tr 'a-z-' 'A-Z_' <<<"$opt")
    [[ -n ${!var+set} ]] && margs+=("--$opt" "${!var}")
  done
  $PYTHON bench/mechanism.py "${margs[@]}" || status=1
  stamp "mechanism done"
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
