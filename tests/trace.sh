#!/usr/bin/env bash
# Per-task traces (scheduler/trace.hpp) as users make them: lwt2d forward --trace under StarPU's
# default, eager, dmdas and fnn-dtps has exactly one event per task the app counts, each on a
# named worker inside the run, none overlapping on a worker; FNNDTPS_TRACE does the same for a
# program we did not write (tests/sched_clients.c) loading our policies through
# STARPU_SCHED_LIB; bench/gantt.py draws a trace and a sheet of two; a trace that cannot be
# written is bad input (one line, status 2); gemm and lwt2d demo --bound print StarPU's LP bound.
#   tests/trace.sh LWT2D GEMM SCHED_CLIENTS LIBFNNDTPS GANTT_PY CHECK_PY
set -u
LWT2D=$1 GEMM=$2 CLIENTS=$3 LIB=$4 GANTT=$5 CHECK=$6
PY=${PYTHON:-/usr/bin/python3}  # Debian's, with matplotlib and PIL (scripts/setup.sh)
"$PY" -c "import matplotlib, PIL" 2>/dev/null || { echo "skipped: $PY lacks matplotlib or PIL"; exit 77; }
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
export STARPU_SILENT=1 STARPU_NCPU=2 STARPU_HOME=$dir/home FNNDTPS_MODEL_DIR=$dir/models
fails=0 passed=0
pass() { passed=$((passed + 1)); echo "ok   $1"; }
fail() { fails=$((fails + 1)); echo "FAIL $1"; }
check() {  # check NAME trace_check.py ARGS...
  local name=$1; shift
  if "$PY" "$CHECK" "$@"; then pass "$name"; else fail "$name"; fi
}

"$LWT2D" generate --out "$dir/s.npy" --size 768x512 >/dev/null || { echo "FAIL generate"; exit 1; }
for policy in "" eager dmdas fnn-dtps; do
  name=${policy:-lws}
  if env ${policy:+STARPU_SCHED=$policy} "$LWT2D" forward --in "$dir/s.npy" --out "$dir/c.npy" --levels 3 \
       --trace "$dir/$name.json" >"$dir/out.txt" 2>"$dir/err.txt"; then
    # The app's per-worker lines: "CPU 0   29 tasks   8 units ..."
    tasks=$(awk '/ tasks .* units /{n += $(NF-6)} END{print n+0}' "$dir/out.txt")
    check "lwt2d forward --trace under $name: $tasks tasks, one event each, inside the run" \
      trace "$dir/$name.json" "$tasks" "$name" --run forward --lwt
  else
    fail "lwt2d forward --trace under $name"; cat "$dir/err.txt"
  fi
done

# A program we did not write, under our policy and under a built-in one, both through the library.
for policy in fnn-dtps dmdas; do
  if out=$(STARPU_NCPU=3 STARPU_SCHED=$policy STARPU_SCHED_LIB=$LIB FNNDTPS_TRACE=$dir/clients-$policy.json \
             "$CLIENTS" redux_cpy 2>"$dir/err.txt"); then
    # "fnn-dtps: redux_cpy: 3 phases, sum 1830, tasks per worker 31 34 31 -> ok"
    tasks=$(sed -n 's/.*tasks per worker \([0-9 ]*\) ->.*/\1/p' <<<"$out" | awk '{for (i = 1; i <= NF; ++i) n += $i} END{print n+0}')
    check "FNNDTPS_TRACE on sched_clients under $policy: $tasks tasks" trace "$dir/clients-$policy.json" "$tasks" "$policy"
  else
    rc=$?
    if ((rc == 77)); then echo "skip sched_clients: $out"; else fail "sched_clients redux_cpy under $policy (exit $rc)"; cat "$dir/err.txt"; fi
  fi
done

# Gantt charts: one trace, then a sheet of two on one time axis.
if "$PY" "$GANTT" "$dir/dmdas.json" --out "$dir/dmdas.png" >/dev/null; then
  check "gantt.py draws a trace" png "$dir/dmdas.png" 800 150
else fail "gantt.py TRACE"; fi
if "$PY" "$GANTT" --sheet "$dir/fnn-dtps.json" "$dir/dmdas.json" --out "$dir/sheet.png" --cut "$dir/cut.json" 2>&1 |
     grep -q "takes one trace" && "$PY" "$GANTT" --sheet "$dir/fnn-dtps.json" "$dir/dmdas.json" --out "$dir/sheet.png" >/dev/null; then
  check "gantt.py --sheet draws two charts" png "$dir/sheet.png" 800 300
else fail "gantt.py --sheet"; fi

# --stats: a row per worker that ran tasks, the rows' tasks adding up to the trace's, every task's
# push, ready and data times present (the policy's push and StarPU's profiling fill them).
if st=$("$PY" "$GANTT" --stats "$dir/fnn-dtps.json" --run all); then
  want=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["otherData"]["tasks"])' "$dir/fnn-dtps.json")
  got=$(awk 'NR > 2 { n += $(NF - 8) } END { print n + 0 }' <<<"$st")
  if [[ $got == "$want" && $(grep -c -- ' - ' <<<"$st") == 0 ]]; then pass "gantt.py --stats: $got of $want tasks, every wait known"
  else fail "gantt.py --stats: $got of $want tasks"; echo "$st"; fi
else fail "gantt.py --stats"; fi

# A trace that cannot be written: one line, status 2, before any work.
for bad in "--trace $dir/missing/t.json" "--trace $dir"; do
  "$LWT2D" forward --in "$dir/s.npy" --out "$dir/c2.npy" --levels 3 $bad >"$dir/out.txt" 2>"$dir/err.txt"
  rc=$?
  if ((rc == 2)) && [[ $(wc -l <"$dir/err.txt") == 1 && ! -e $dir/c2.npy ]]; then pass "refused: $bad ($(cat "$dir/err.txt"))"
  else fail "$bad: exit $rc, $(wc -l <"$dir/err.txt") lines on stderr"; cat "$dir/err.txt"; fi
done
STARPU_SCHED=fnn-dtps STARPU_SCHED_LIB=$LIB FNNDTPS_TRACE=$dir/missing/t.json "$CLIENTS" empty >/dev/null 2>"$dir/err.txt"
rc=$?
if ((rc == 2)) && grep -q "^fnndtps: FNNDTPS_TRACE=" "$dir/err.txt"; then pass "FNNDTPS_TRACE to a missing folder: status 2"
else fail "FNNDTPS_TRACE to a missing folder: exit $rc"; cat "$dir/err.txt"; fi

# StarPU's LP bound beside the run: gemm's tiles (one footprint, ms each) give it under dmda
# once calibrated; lwt2d's tiny tasks may leave a kind without a usable duration, said so.
nums='lp_ms=([0-9.]+) lp_deps_ms=none'
if out=$(STARPU_SCHED=dmda STARPU_CALIBRATE_MINIMUM=2 "$GEMM" --size 512 --tile 128 --iter 6 --bound 2>"$dir/err.txt"); then
  line=$(grep '^BOUND gemm ' <<<"$out")
  if [[ $line =~ $nums ]] || [[ $line == *"built without GLPK"* ]]; then pass "gemm --bound: ${line:0:60}"
  else fail "gemm --bound: '$line'"; fi
else fail "gemm --bound"; cat "$dir/err.txt"; fi
if out=$(STARPU_SCHED=dmdas "$LWT2D" demo --size 1024 --levels 3 --repeat 2 --warmup 2 --bound 2>"$dir/err.txt"); then
  line=$(grep '^BOUND forward ' <<<"$out")
  if [[ $line =~ $nums ]] || [[ $line == *"lp_ms=none (StarPU found no usable duration"* ]] ||
     [[ $line == *"built without GLPK"* ]]; then pass "lwt2d demo --bound: ${line:0:60}"
  else fail "lwt2d demo --bound: '$line'"; fi
else fail "lwt2d demo --bound"; cat "$dir/err.txt"; fi

echo "$passed passed, $fails failed"
((fails == 0))
