#!/usr/bin/env bash
# Runs on the GPU machine from the repository root, with .carry/ from scripts/gpu/pack.sh: the
# CUDA tests, then the bench's suites (bench/suites.py --list names them).
#   bash scripts/gpu/run.sh [tests] [SUITE[=ARGS]]...      e.g.  tests 'cold=--rounds 3'
# (default: tests). A device call lasts at most 10 minutes: give each call the suites that fit
# (notes/bench.md). At most 8 files come back from a call: the run's log is its stdout, the tests
# share $OUT/tests.log, each suite leaves $OUT/NAME.txt (what it printed) and $OUT/NAME.tgz
# (its folder: tables, CSVs, plots, logs). SUITES_LIMIT=S: seconds for the suites together (a
# process still running then is killed and its suite's files come back).
set -uo pipefail
root=$(pwd)
OUT=${OUT:-$root/gpu-out}; mkdir -p "$OUT"
# pack.sh sends large libraries compressed (the device copies at most 64 MiB with the tree).
for z in "$root"/.carry/lib/*.gz; do [[ -f $z ]] && gunzip -f "$z"; done
export LD_LIBRARY_PATH=$root/.carry/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PYTHON=${PYTHON:-python3}  # the image's python3 has numpy
export OPENBLAS_NUM_THREADS=1 STARPU_SILENT=1
export STARPU_HOME=${STARPU_HOME:-$root/.starpu-home}  # bus calibration and performance models
# The machine's name in the models' file names (bench/platforms/h200, DESIGN §8): its card's.
card=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | grep -om1 '[HAB][0-9]\{2,3\}' | tr A-Z a-z)
export STARPU_HOSTNAME=${STARPU_HOSTNAME:-${card:-h200}}
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
status=0
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv
lscpu | grep -E "Model name|^CPU\(s\)|Thread|Core|Socket"
commit=$(cat "$root/.carry/commit" 2>/dev/null || git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
echo "commit $commit"
args=("${@:-tests}")
has() { [[ " ${args[*]} " == *" $1 "* ]]; }
suites=()
for a in "${args[@]}"; do [[ $a == tests ]] || suites+=("$a"); done
# A misspelt suite ends the call before the tests, not after them.
((${#suites[@]})) && { $PYTHON bench/suites.py --build "$root/.carry" --list "${suites[@]}" >/dev/null || exit 2; }
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
if ((${#suites[@]})); then
  mpi=(); [[ -d $root/.carry/mpi ]] && mpi=(--mpi "$root/.carry/mpi")
  sdir=/tmp/suites; rm -rf "$sdir"
  PYTHONUNBUFFERED=1 $PYTHON bench/suites.py --build "$root/.carry" --out "$sdir" --commit "$commit" ${SUITES_LIMIT:+--limit "$SUITES_LIMIT"} "${mpi[@]}" \
    "${suites[@]}" || status=1
  for d in "$sdir"/*/; do
    name=$(basename "$d")
    cp "$sdir/$name.txt" "$OUT/" 2>/dev/null
    tar -C "$sdir" -czf "$OUT/$name.tgz" "$name"
  done
  cp "$sdir/suites.log" "$OUT/" 2>/dev/null && gzip -f "$OUT/suites.log"
fi
exit $status
