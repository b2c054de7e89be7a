#!/usr/bin/env bash
# Seed 001's three experiments (§2.2) over matrix sizes, on this machine, into one CSV:
#   1. cpu-openblas  the CPU functions alone: one OpenBLAS sgemm on every core (bench_blas cpu);
#   2. cublas        cuBLAS alone, no StarPU: one cublasSgemm on resident data (bench_blas cuda;
#                    the H2D and D2H copies timed apart, and a figure with them included);
#   3. DTPS          our gemm app on sub-tasks of different sizes (--tiles N/8,N/16,N/32,N/32: C
#                    blocks whose IA and DA differ, seed 001 §2.2.3) under our dtps and fnn-dtps,
#                    beside StarPU's dmdas and the GPU alone (dmdas, STARPU_NCPU=0) for reference.
# Then bench/seed001_plot.py makes the table and the Fig. 2-like plot from the CSV.
#   bench/seed001.sh [--bin DIR] [--lib SO] [--sizes 1024,2048,4096,8192,16384] [--reps R]
#                    [--iter I] [--split 2d|3d] [--policies "dtps fnn-dtps dmdas gpu-only"]
#                    [--budget S] [--timeout S] [--out DIR]
# Defaults: --bin ${BUILD_DIR:-build}/bin, reps 5 (bench_blas, after one warm-up), iter 6 (gemm:
# the median of iterations 1-5, iteration 0 calibrates), split 2d, budget 480 s (no run starts
# past it), timeout 150 s a process, out bench-seed001/. Writes OUT/seed001.csv (rewritten
# row by row, so a run cut short keeps what it measured) and OUT/seed001.log (every command and
# its output). What each figure measures:
# - cpu-openblas, cublas: 2 n^3 / median time of one call; cublas_with_copies adds the H2D of A
#   and B and the D2H of C (what seed 001's "CUBLAS call" pays on a discrete GPU);
# - gemm rows: 2 n^3 / median time of one product, host memory to host memory for C, A and B
#   registered once (after iteration 0 a GPU keeps its blocks of them; see gemm --help).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${BUILD_DIR:-$root/build}/bin lib= sizes=1024,2048,4096,8192,16384 reps=5 iter=6 split=2d
policies="dtps fnn-dtps dmdas gpu-only" budget=480 timeout=150 out=bench-seed001
while (($#)); do
  case $1 in
    --bin) bin=$2; shift 2 ;;
    --lib) lib=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --iter) iter=$2; shift 2 ;;
    --split) split=$2; shift 2 ;;
    --policies) policies=$2; shift 2 ;;
    --budget) budget=$2; shift 2 ;;
    --timeout) timeout=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -uo/{/^set -uo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
    *) echo "seed001.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ $sizes =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || { echo "seed001.sh: --sizes needs positive integers separated by commas" >&2; exit 2; }
for v in reps iter budget timeout; do
  [[ ${!v} =~ ^[1-9][0-9]*$ ]] || { echo "seed001.sh: --$v needs a positive integer, got '${!v}'" >&2; exit 2; }
done
[[ $split == 2d || $split == 3d ]] || { echo "seed001.sh: --split must be 2d or 3d" >&2; exit 2; }
for p in $policies; do
  [[ " dtps fnn-dtps fnn boyer even dmdas dmda dmdar heteroprio eager lws gpu-only " == *" $p "* ]] \
    || { echo "seed001.sh: unknown policy '$p' in --policies" >&2; exit 2; }
done
[[ -x $bin/gemm && -x $bin/bench_blas ]] || { echo "seed001.sh: no gemm or bench_blas in $bin (build them, or give --bin)" >&2; exit 2; }
mkdir -p "$out" || exit 2
csv=$out/seed001.csv log=$out/seed001.log
export STARPU_SILENT=1 OPENBLAS_NUM_THREADS=1
# dmda*'s history models count as calibrated after this many samples per worker and footprint
# (StarPU's default 10 would leave the mixed blocks' 16 footprints uncalibrated for minutes).
export STARPU_CALIBRATE_MINIMUM=${STARPU_CALIBRATE_MINIMUM:-2}
models=$(mktemp -d); trap 'rm -rf "$models"' EXIT
commit=$(cat "$root/.carry/commit" 2>/dev/null || git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
cpu=$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1)
machine="${cpu:-unknown CPU} x $(nproc) threads${gpu:+ + $gpu}"
date=$(date -u +%Y-%m-%dT%H:%MZ)
echo "date,commit,machine,size,mode,policy,tiles,split,cpu_workers,cuda_workers,median_ms,min_ms,max_ms,gflops,h2d_ms,d2h_ms,status,note" >"$csv"
: >"$log"
t0=$SECONDS

row() {  # row SIZE MODE POLICY TILES CPU CUDA MED MIN MAX GFLOPS H2D D2H STATUS NOTE
  echo "$date,$commit,\"$machine\",$1,$2,$3,\"$4\",$split,$5,$6,$7,$8,$9,${10},${11},${12},${13},\"${14}\"" >>"$csv"
  printf '%6s %-20s %-9s %10s ms %10s GFLOP/s %s\n' "$1" "$2" "$3" "${7:--}" "${10:--}" "${13}${14:+ (${14})}" >&2
}
# run TIMEOUT "ENV" CMD...: one process, output in $last; 1 (not run) past the budget.
last=$out/.last
run() {
  local t=$1 envs=$2; shift 2
  if ((SECONDS - t0 > budget)); then echo "skipped: past the budget of $budget s" >"$last"; return 124; fi
  echo "### $(date +%T) $envs $*" >>"$log"
  env $envs timeout -k 5 "$t" "$@" >"$last" 2>&1; local rc=$?
  cat "$last" >>"$log"; echo "# rc=$rc" >>"$log"
  return $rc
}
get() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"; }
status_of() {  # status_of RC
  if grep -q "^skipped: past the budget" "$last"; then echo skipped
  elif (($1 == 124 || $1 == 137)); then echo timeout
  elif (($1 != 0)); then echo failed
  else echo ok; fi
}
note_of() { grep -v '^\s*$' "$last" | tail -1 | tr -d ',"' | cut -c1-100; }

have_cuda=0
"$bin/bench_blas" cuda --size 32 --reps 1 >/dev/null 2>&1 && have_cuda=1
((have_cuda)) || echo "seed001.sh: no CUDA device here: the cublas and GPU rows are skipped" >&2

IFS=, read -ra ns <<<"$sizes"
for n in "${ns[@]}"; do
  # Blocks of N/8, N/16, N/32, N/32 in turn (at least 16 wide): 16 x 16 C blocks of 16 shapes.
  w() { local x=$((n / $1)); ((x < 16)) && x=16; echo $x; }
  tiles="$(w 8),$(w 16),$(w 32),$(w 32)"
  # OpenBLAS sizes its thread pool from OPENBLAS_NUM_THREADS when it loads: every core here.
  run "$timeout" "OPENBLAS_NUM_THREADS=$(nproc)" "$bin/bench_blas" cpu --size "$n" --reps "$reps"; rc=$?
  line=$(grep '^RESULT blas' "$last" | tail -1)
  row "$n" cpu-openblas - - "$(get threads "$line")" 0 "$(get median_ms "$line")" "$(get min_ms "$line")" \
    "$(get max_ms "$line")" "$(get gflops "$line")" "" "" "$(status_of $rc)" "$( ((rc)) && note_of)"
  if ((have_cuda)); then
    run "$timeout" "" "$bin/bench_blas" cuda --size "$n" --reps "$reps"; rc=$?
    line=$(grep '^RESULT blas' "$last" | tail -1)
    st=$(status_of $rc) note=$( ((rc)) && note_of)
    row "$n" cublas - - 0 1 "$(get median_ms "$line")" "$(get min_ms "$line")" "$(get max_ms "$line")" \
      "$(get gflops "$line")" "$(get h2d_ms "$line")" "$(get d2h_ms "$line")" "$st" "$note"
    med=$(get median_ms "$line") h2d=$(get h2d_ms "$line") d2h=$(get d2h_ms "$line")
    withc=$(awk -v m="$med" -v a="$h2d" -v b="$d2h" 'BEGIN{ if (m + a + b > 0) printf "%.3f", m + a + b }')
    row "$n" cublas_with_copies - - 0 1 "$withc" "" "" "$(get gflops_with_copies "$line")" "$h2d" "$d2h" "$st" "$note"
  fi
  for p in $policies; do
    envs="STARPU_SCHED=$p FNNDTPS_MODEL_DIR=$models/$n-$p"
    if [[ $p == gpu-only ]]; then
      ((have_cuda)) || continue
      envs="STARPU_SCHED=dmdas STARPU_NCPU=0 FNNDTPS_MODEL_DIR=$models/$n-$p"
    fi
    [[ -n $lib && " dtps fnn-dtps fnn boyer even " == *" $p "* ]] && envs+=" STARPU_SCHED_LIB=$lib"
    run "$timeout" "$envs" "$bin/gemm" --size "$n" --split "$split" --tiles "$tiles" --iter "$iter"; rc=$?
    line=$(grep '^RESULT gemm' "$last" | tail -1)
    row "$n" gemm "$p" "$tiles" "$(get cpu "$line")" "$(get cuda "$line")" "$(get median_ms "$line")" \
      "$(get min_ms "$line")" "$(get max_ms "$line")" "$(get gflops "$line")" "" "" "$(status_of $rc)" \
      "$( ((rc)) && note_of)"
  done
done
rm -f "$last"
echo "seed001.sh: $((SECONDS - t0)) s; $csv" >&2
