#!/usr/bin/env bash
# Seed 001's experiment programs at toy sizes (the measurements themselves are the GPU
# machine's, scripts/gpu/run.sh seed001): bench_blas's cpu product passes its spot check and
# prints its RESULT line, its cuda backend runs where a GPU is and is refused with one line
# where none is; bad arguments get one line and exit 2; bench/seed001.sh writes one CSV row
# per run, each ok, and bench/seed001_plot.py makes the table from it.
#   bash tests/seed001_bench.sh <bin dir> <repository root>
set -u
bin=$1 repo=$2
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
export STARPU_SILENT=1 STARPU_NCPU=${STARPU_NCPU:-2}
fails=0 passed=0
pass() { passed=$((passed + 1)); echo "ok   $*"; }
fail() { fails=$((fails + 1)); echo "FAIL $*"; }

"$bin/bench_blas" cpu --size 97 --reps 2 --threads 2 >"$dir/out" 2>&1
if grep -q '^RESULT blas backend=cpu precision=s size=97 threads=2 math=fp32 reps=2 median_ms=[0-9.]* .* check=ok$' "$dir/out"; then
  pass "bench_blas cpu, float"; else fail "bench_blas cpu, float"; cat "$dir/out"; fi
"$bin/bench_blas" cpu --size 61 --reps 1 --precision d >"$dir/out" 2>&1
if grep -q '^RESULT blas backend=cpu precision=d size=61 .* math=fp64 .* check=ok$' "$dir/out"; then
  pass "bench_blas cpu, double"; else fail "bench_blas cpu, double"; cat "$dir/out"; fi
"$bin/bench_blas" cuda --size 97 --reps 2 >"$dir/out" 2>"$dir/err"; rc=$?
if [[ $rc -eq 0 ]] && grep -q '^RESULT blas backend=cuda .* h2d_ms=[0-9.]* d2h_ms=[0-9.]* .* check=ok$' "$dir/out"; then
  pass "bench_blas cuda (a GPU is here)"
elif [[ $rc -eq 2 && $(wc -l <"$dir/err") -eq 1 ]]; then pass "bench_blas cuda refused: $(cat "$dir/err")"
else fail "bench_blas cuda: exit $rc"; cat "$dir/out" "$dir/err"; fi
for args in "" "gpu --size 4" "cpu" "cpu --size 0" "cpu --size x" "cpu --size 4 --reps" "cpu --size 4 --tf32" \
            "cuda --size 4 --threads 2" "cpu --size 4 --precision h" "cpu --size 4 --frob"; do
  "$bin/bench_blas" $args >"$dir/out" 2>"$dir/err"; rc=$?
  if [[ $rc -eq 2 && $(wc -l <"$dir/err") -eq 1 ]]; then pass "bench_blas $args: $(cat "$dir/err")"
  else fail "bench_blas $args: exit $rc"; cat "$dir/err"; fi
done

bash "$repo/bench/seed001.sh" --bin "$bin" --sizes 96,128 --reps 1 --iter 2 --policies "dtps fnn-dtps dmdas" \
  --out "$dir/s" 2>"$dir/err"; rc=$?
rows=$(tail -n +2 "$dir/s/seed001.csv" 2>/dev/null | wc -l)
bad=$(tail -n +2 "$dir/s/seed001.csv" 2>/dev/null | grep -vc ',ok,' )
# Per size: cpu-openblas and three gemm rows, and the two cublas rows where a GPU is.
if [[ $rc -eq 0 && ($rows -eq 8 || $rows -eq 12) && $bad -eq 0 ]] && grep -q ',128,gemm,dtps,"16,16,16,16",2d,' "$dir/s/seed001.csv"; then
  pass "seed001.sh: $rows rows, all ok"
else fail "seed001.sh: exit $rc, $rows rows, $bad not ok"; cat "$dir/err" "$dir/s/seed001.csv"; fi
if python3 "$repo/bench/seed001_plot.py" "$dir/s/seed001.csv" --command test >"$dir/out" 2>&1 \
   && grep -q '^| 128 | ' "$dir/s/seed001.md"; then pass "seed001_plot.py table"
else fail "seed001_plot.py"; cat "$dir/out"; fi
bash "$repo/bench/seed001.sh" --bin "$bin" --sizes 0 >/dev/null 2>"$dir/err"; rc=$?
if [[ $rc -eq 2 && $(wc -l <"$dir/err") -eq 1 ]]; then pass "seed001.sh --sizes 0 refused"; else fail "seed001.sh --sizes 0: exit $rc"; fi

echo "seed001-bench: $passed passed, $fails failed"
[[ $fails -eq 0 ]]
