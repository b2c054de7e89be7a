#!/usr/bin/env bash
# The bench, run as a user would.
#   tests/test_bench.sh compare COMPARE_PY BUILD_DIR
#     bench/compare.py --quick on a tiny LWT with 2 policies (and one that does not exist),
#     stable and under the emulated slowdown: the CSV has every expected row (the classes
#     measured alone, each policy, the unknown policy as a failed row; under emulation, which
#     only our policies apply, the built-in and the unknown policy skipped with a note, the
#     classes run under `even` and slowed as asked), the bound and the ratios are filled in,
#     the table is printed, the PNG is written; a run past its timeout is a row
#     marked timeout; --from-csv draws it again; --class-reps applies to the classes alone;
#     --gpus is refused without a GPU, as are the counts 0 and x; --emu-gpus names the emulated
#     condition's GPU class, and only workers that exist. Exit 77 (skipped) without
#     Debian's matplotlib.
#   tests/test_bench.sh cold COLD_PY BUILD_DIR
#     bench/cold.py --quick on a 256 x 256 surface, fnn-dtps and dmdas (and gpu-alone, skipped
#     without a GPU), 2 processes each: two rows with numbers per command and configuration, one
#     log per process, the table printed and written, the floor (lwt2d-floor) per command run
#     under eager with 1 or 3 outputs; run 1 started from the calibrated bus
#     alone and run 2 from the model folder run 1 left; a process past its timeout is a row
#     marked timeout (exit 1); bad options are one line and exit 2, also through compare.py --cold.
#   tests/test_bench.sh clients CLIENTS_PY SOURCE_DIR LIBFNNDTPS
#     bench/clients.py on StarPU's stencil, pih and pih-data (built from StarPU's source by
#     scripts/build_starpu_examples.sh) under fnn-dtps and lws, small: a warm-up and two rounds
#     of rows with values per program and policy, the table's ratios to lws and points over it,
#     our policy loaded through STARPU_SCHED_LIB; a process past its timeout is a row marked so
#     (exit 1); bad options are one line and exit 2.
#   tests/test_bench.sh mechanism MECHANISM_PY SOURCE_DIR BUILD_DIR LIBFNNDTPS
#     bench/mechanism.py, small, on lwt2d, gemm, bench_overhead and StarPU's sgemm, LU and
#     tasks_overhead (2 CPU workers): each section's rows with values, the reference's ratio
#     1.00, the others' ratios, --only, a bad option.
#   tests/test_bench.sh suites SUITES_PY SOURCE_DIR BUILD_DIR [MPI_BUILD_DIR]
#     bench/suites.py --quick over every suite it lists: each one done, or skipped for the CUDA
#     device or the MPI build (MPI_BUILD_DIR/bin/lwt2d-mpi and mpirun) this machine lacks, and its files written (tables, CSVs, the
#     traces' charts, the sampling archive, the byte-for-byte comparisons); --limit kills what
#     runs past it and keeps the suite's files; a misspelt suite or bad ARGS: one line, exit 2.
#   tests/test_bench.sh perturb PERTURB
#     perturb's contract: one line saying what it does, a clean exit on SIGTERM and SIGINT and
#     after --seconds, and one line on stderr with exit 2 for each bad option.
set -u
mode=$1; shift
PY=${PYTHON:-/usr/bin/python3}
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
fails=0 passed=0
ok() { passed=$((passed + 1)); echo "ok   $*"; }
fail() { fails=$((fails + 1)); echo "FAIL $*"; }
check() { local what=$1; shift; if "$@"; then ok "$what"; else fail "$what"; fi; }

if [[ $mode == compare ]]; then
  compare=$1 build=$2
  if ! "$PY" -c 'import matplotlib' 2>/dev/null; then
    echo "skipped: $PY has no matplotlib (apt-get install python3-matplotlib)"
    exit 77
  fi
  "$PY" "$compare" --build "$build" --quick --apps lwt2d --lwt-sizes 512 --levels 2 --reps 2 --class-reps 4 --warmup 1 \
    --policies fnn-dtps,eager,nosuch --perturb none,emulated --emu-factors 1,3 --emu-gpus 0 --timeout 60 \
    --trace --out "$dir/out" >"$dir/stdout" 2>"$dir/stderr"
  rc=$?
  check "compare.py exits 0 (got $rc)" test $rc -eq 0
  check "table has StarPU's LP bound row" grep -q '^lwt2d .* bound LP ' "$dir/stdout"
  check "--trace: each measured configuration's median run as a trace and a chart" \
    test -s "$dir/out/traces/lwt2d_512_none_fnn-dtps.json" -a -s "$dir/out/traces/lwt2d_512_none_eager.png" \
         -a -s "$dir/out/traces/lwt2d_512_emulated_fnn-dtps.png"
  check "--trace: a sheet of our best above the best built-in" test -s "$dir/out/traces/lwt2d_512_none_sheet.png"
  check "progress lines on stderr" grep -q '^\[1/9\] lwt2d 512 1-worker stable' "$dir/stderr"
  check "table printed with the bound" grep -q 'bound T\*' "$dir/stdout"
  check "table.txt written" test -s "$dir/out/table.txt"
  check "PNG written" test -s "$dir/out/compare.png"
  check "PNG is a PNG" bash -c "head -c 8 '$dir/out/compare.png' | od -An -tx1 | grep -q '89 50 4e 47 0d 0a 1a 0a'"
  "$PY" - "$dir/out/results.csv" <<'PY' && ok "CSV rows" || fail "CSV rows"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
got = {(r["perturbation"], r["policy"], r["kind"], r["status"]) for r in rows}
want = {("none", "1-worker", "class", "ok"), ("none", "fnn-dtps", "ours", "ok"),
        ("none", "eager", "builtin", "ok"), ("none", "nosuch", "builtin", "failed"),
        ("emulated", "1-worker-x1", "class", "ok"), ("emulated", "1-worker-x3", "class", "ok"),
        ("emulated", "fnn-dtps", "ours", "ok"), ("emulated", "eager", "builtin", "skipped"),
        ("emulated", "nosuch", "builtin", "skipped")}
problems = []
if len(rows) != len(want) or got != want:
    problems.append(f"rows {sorted(got)}, expected {sorted(want)}")
for r in rows:
    if r["app"] != "lwt2d" or r["size"] != "512":
        problems.append(f"row {r['policy']}: app {r['app']} size {r['size']}")
    if r["perturbation"] == "emulated" and "FNNDTPS_SLOWDOWN=0:1,1:3" not in r["perturbation_detail"]:
        problems.append(f"emulated row without its slowdown: {r['perturbation_detail']}")
    if r["perturbation"] == "emulated" and "FNNDTPS_EMULATED_GPUS=0" not in r["perturbation_detail"]:
        problems.append(f"emulated row without its GPU class: {r['perturbation_detail']}")
    if r["status"] == "ok":
        lo, med, hi = float(r["min_ms"]), float(r["median_ms"]), float(r["max_ms"])
        if not 0 < lo <= med <= hi:
            problems.append(f"{r['policy']}: min {lo} median {med} max {hi}")
        if r["kind"] != "class" and not (r["pct_bound"] and r["bound_ms"]):
            problems.append(f"{r['policy']} {r['perturbation']}: no bound or %bound")
        # vs_best needs a built-in measured: stable yes; emulated has none (skipped).
        if r["kind"] != "class" and bool(r["vs_best_builtin"]) != (r["perturbation"] == "none"):
            problems.append(f"{r['policy']} {r['perturbation']}: vs_best_builtin '{r['vs_best_builtin']}'")
        if r["kind"] != "class" and float(r["cpu_workers"]) != 2:
            problems.append(f"{r['policy']}: {r['cpu_workers']} CPU workers, expected 2")
    elif r["status"] == "failed" and not r["note"]:
        problems.append(f"{r['policy']}: failed without a note")
    elif r["status"] == "skipped" and "our policies only" not in r["note"]:
        problems.append(f"{r['policy']} {r['perturbation']}: skipped, note '{r['note']}'")
    if r["perturbation"] == "emulated" and "under even" not in r["bound_method"]:
        problems.append(f"emulated bound method does not name its policy: {r['bound_method']}")
# Each class ran under the policy that sees its condition: dmdas stable; under emulation our
# even, with the class's own slowdown and without the co-run's GPU class (one worker).
import os
out = os.path.dirname(sys.argv[1])
for pert, pol, sched, slow in (("none", "1-worker", "dmdas", None), ("emulated", "1-worker-x1", "even", "0:1"),
                               ("emulated", "1-worker-x3", "even", "0:3")):
    r = next(r for r in rows if r["perturbation"] == pert and r["policy"] == pol)
    cmd = open(os.path.join(out, r["log"])).readline()
    if f"STARPU_SCHED='{sched}'" not in cmd or "FNNDTPS_EMULATED_GPUS" in cmd or \
            (slow and f"FNNDTPS_SLOWDOWN='{slow}'" not in cmd) or (not slow and "FNNDTPS_SLOWDOWN" in cmd):
        problems.append(f"{pert} {pol} ran as: {cmd.strip()}")
# The bound from the classes alone: T* = 1/(1/T_x1 + 1/T_x3) under emulation, T_1/2 stable.
def med(pert, pol):
    return next(float(r["median_ms"]) for r in rows if r["perturbation"] == pert and r["policy"] == pol)
emu = next(float(r["bound_ms"]) for r in rows if r["perturbation"] == "emulated" and r["policy"] == "fnn-dtps")
if abs(emu - 1 / (1 / med("emulated", "1-worker-x1") + 1 / med("emulated", "1-worker-x3"))) > 0.01:
    problems.append(f"emulated bound {emu}")
stable = next(float(r["bound_ms"]) for r in rows if r["perturbation"] == "none" and r["policy"] == "eager")
if abs(stable - med("none", "1-worker") / 2) > 0.01:
    problems.append(f"stable bound {stable}")
# The slowdown reached the x3 class: a class run where nothing applies it (a built-in policy)
# takes as long as x1. Fastest of 4 runs compared (--class-reps 4), the least noisy on a shared
# machine: x1's fastest is 3-6 ms idle and x3's 13-28, but 2 runs once gave x1 20.6 ms.
def fastest(pert, pol):
    return next(float(r["min_ms"]) for r in rows if r["perturbation"] == pert and r["policy"] == pol)
if fastest("emulated", "1-worker-x3") < 1.5 * fastest("emulated", "1-worker-x1"):
    problems.append(f"1-worker-x3 {fastest('emulated', '1-worker-x3')} ms at best, not slowed against "
                    f"1-worker-x1 {fastest('emulated', '1-worker-x1')} ms")
if abs(float(next(r for r in rows if r["perturbation"] == "none" and r["policy"] == "eager")["vs_best_builtin"]) - 1) > 1e-6:
    problems.append("eager is the only built-in: its ratio to the best built-in is not 1")
print("\n".join(problems))
sys.exit(1 if problems else 0)
PY
  "$PY" "$compare" --from-csv "$dir/out/results.csv" --out "$dir/replot" >"$dir/replot.txt" 2>&1
  check "table: the emulated built-ins skipped in one line saying why" \
    grep -q '^lwt2d .* emulated .*(skipped) .*eager,nosuch: emulation is applied by our policies only' "$dir/out/table.txt"
  check "--from-csv draws it again" test -s "$dir/replot/compare.png"
  check "--from-csv prints the same table" diff <(grep '^lwt2d' "$dir/out/table.txt") <(grep '^lwt2d' "$dir/replot/table.txt")
  # One configuration past its timeout: a row marked timeout, and the bench goes on.
  "$PY" "$compare" --build "$build" --apps lwt2d --lwt-sizes 512 --levels 2 --reps 2 --warmup 1 \
    --policies eager --perturb none --emu-factors 1,3 --timeout 0.01 --out "$dir/t" >"$dir/t.txt" 2>&1
  check "timeouts are rows, not a crash (exit $?)" grep -q ',eager,builtin,timeout,' "$dir/t/results.csv"
  # --class-reps: the classes measured alone get their own count of timed runs.
  "$PY" "$compare" --build "$build" --apps lwt2d --lwt-sizes 512 --levels 2 --reps 2 --class-reps 3 --warmup 1 \
    --policies eager --perturb none --emu-factors 1,3 --out "$dir/cr" >"$dir/cr.txt" 2>&1
  check "--class-reps 3: classes 3 runs, policies 2" "$PY" -c '
import csv, sys
reps = {r["kind"]: r["reps"] for r in csv.DictReader(open(sys.argv[1]))}
sys.exit(reps != {"class": "3", "builtin": "2"})' "$dir/cr/results.csv"
  # Bad options: one line, exit 2.
  "$PY" "$compare" --build "$build" --perturb bogus --out "$dir/bad" >"$dir/bad.txt" 2>&1
  check "unknown perturbation: exit 2 (got $?), one line" test "$(wc -l <"$dir/bad.txt")" -eq 1
  # --gpus: GPU counts >= 1, and only on a machine with that many GPUs (this one has none).
  "$PY" "$compare" --build "$build" --gpus 2 --out "$dir/bad" >"$dir/bad.out" 2>"$dir/bad.txt"; rc=$?
  check "--gpus 2 without a GPU: exit 2 (got $rc), one line naming --gpus" \
    test $rc -eq 2 -a "$(wc -l <"$dir/bad.txt")" -eq 1 -a "$(grep -c -- --gpus "$dir/bad.txt")" -eq 1
  for bad in "--emu-gpus 2 --emu-factors 1,3" "--emu-gpus 0 --perturb none"; do
    "$PY" "$compare" --build "$build" $bad --out "$dir/bad" >"$dir/bad.txt" 2>&1; rc=$?
    check "$bad: exit 2 (got $rc), one line" test $rc -eq 2 -a "$(wc -l <"$dir/bad.txt")" -eq 1
  done
  for bad in 0 x; do
    "$PY" "$compare" --build "$build" --gpus $bad --out "$dir/bad" >"$dir/bad.txt" 2>&1; rc=$?
    check "--gpus $bad: exit 2 (got $rc), one line" test $rc -eq 2 -a "$(wc -l <"$dir/bad.txt")" -eq 1
  done
elif [[ $mode == cold ]]; then
  cold=$1 build=$2
  gpu=0
  if command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then gpu=1; fi
  "$PY" "$cold" --build "$build" --quick --sizes 256 --configs fnn-dtps,dmdas,gpu-alone --runs 2 \
    --out "$dir/out" >"$dir/stdout" 2>"$dir/stderr"
  rc=$?
  check "cold.py exits 0 (got $rc)" test $rc -eq 0
  total=$((gpu ? 18 : 12))
  check "progress lines on stderr, $total processes" \
    grep -q "^\[1/$total\] forward 256 fnn-dtps run 1\$" "$dir/stderr"
  check "the last progress line" grep -q "^\[$total/$total\] filter 256 $( ((gpu)) && echo gpu-alone || echo dmdas) run 2\$" "$dir/stderr"
  if ((gpu)); then
    check "no gpu-alone note with a GPU" bash -c "! grep -q 'gpu-alone skipped' '$dir/stderr'"
  else
    check "gpu-alone skipped in one note line" test "$(grep -c '^cold.py: gpu-alone skipped' "$dir/stderr")" -eq 1
  fi
  check "table printed and written to cold.txt" cmp -s "$dir/stdout" "$dir/out/cold.txt"
  check "table: the ratio columns" grep -Eq 'fnn-dtps/gpu-alone run1 +fnn-dtps/dmdas run1$' "$dir/stdout"
  # fnn-dtps's run 1 / run 2, dmdas's, gpu-alone's (skipped without a GPU), then two ratios each.
  check "table: the floor, and each run over it" \
    bash -c "grep -q '^floor wall ms' '$dir/stdout' && grep -q '^process wall over its floor, run 1 / run 2:' '$dir/stdout'"
  check "table: forward 256 row with both runs and the ratio to dmdas" \
    grep -Eq '^forward +256 +[0-9.]+ / [0-9.]+ +[0-9.]+ / [0-9.]+ +(skipped|[0-9.]+ / [0-9.]+) +(- / -|[0-9.]+ / [0-9.]+) +[0-9.]+ / [0-9.]+$' \
    "$dir/stdout"
  "$PY" - "$dir/out" $gpu <<'PY' && ok "CSV rows, logs and folders" || fail "CSV rows, logs and folders"
import csv, os, re, sys
out, gpu = sys.argv[1], sys.argv[2] == "1"
rows = list(csv.DictReader(open(os.path.join(out, "cold.csv"))))
problems = []
fields = ["command", "size", "config", "round", "run", "transform_ms", "process_ms", "peak_rss_kb", "status"]
if list(rows[0].keys()) != fields:
    problems.append(f"CSV columns {list(rows[0].keys())}")
ran = ["fnn-dtps", "dmdas"] + (["gpu-alone"] if gpu else [])
for cmd in ("forward", "inverse", "filter"):
    for cfg in ran:
        mine = [r for r in rows if r["command"] == cmd and r["config"] == cfg]
        if sorted(r["run"] for r in mine) != ["1", "2"]:
            problems.append(f"{cmd} {cfg}: runs {[r['run'] for r in mine]}, expected 1 and 2")
        for r in mine:
            try:
                t, p, rss = float(r["transform_ms"]), float(r["process_ms"]), int(r["peak_rss_kb"])
            except ValueError:
                problems.append(f"{cmd} {cfg} run {r['run']}: not numbers: {r}")
                continue
            # The process's wall time holds StarPU's start, the files and the transform.
            if r["status"] != "ok" or r["size"] != "256" or not 0 < t < p or rss < 1024:
                problems.append(f"{cmd} {cfg} run {r['run']}: {r}")
            if not os.path.getsize(os.path.join(out, "logs", f"{cmd}-256-{cfg}-run{r['run']}.log")):
                problems.append(f"{cmd} {cfg} run {r['run']}: empty log")
        name = f"{cmd}-256-{cfg}"
        logs = [open(os.path.join(out, "logs", f"{name}-run{k}.log")).read() for k in (1, 2)]
        before = [re.search(r"^# before: FNNDTPS_MODEL_DIR (\d+) files, STARPU_HOME codelet models (\d+) files, "
                            r"bus (\d+) files$", text, re.M) for text in logs]
        if not all(before):
            problems.append(f"{name}: no 'before:' line in its logs")
            continue
        models1, codelets1, bus1 = map(int, before[0].groups())
        models2, codelets2, bus2 = map(int, before[1].groups())
        # Run 1 starts cold: StarPU's bus calibrated, nothing else; run 2 finds what run 1 left.
        if models1 or codelets1 or not bus1 or bus2 != bus1:
            problems.append(f"{name} run 1 did not start cold: {before[0].group(0)}")
        if not codelets2:
            problems.append(f"{name} run 2 found no StarPU codelet models: {before[1].group(0)}")
        if cfg == "fnn-dtps":
            if not models2:
                problems.append(f"{name} run 2 found an empty model folder: {before[1].group(0)}")
            if not os.listdir(os.path.join(out, "models", name)):
                problems.append(f"{name}: OUT/models/{name} is empty after the runs")
        sched = "fnn-dtps" if cfg == "fnn-dtps" else "dmdas"
        if f"STARPU_SCHED='{sched}'" not in logs[0].splitlines()[0]:
            problems.append(f"{name} did not run under {sched}: {logs[0].splitlines()[0]}")
        if (cfg == "gpu-alone") != ("STARPU_NCPU='0'" in logs[0]):
            problems.append(f"{name}: STARPU_NCPU wrong in {logs[0].splitlines()[0]}")
        if f"STARPU_HOME='{os.path.join(out, 'homes', name)}'" not in logs[0].splitlines()[0]:
            problems.append(f"{name}: not its own STARPU_HOME: {logs[0].splitlines()[0]}")
skipped = [r for r in rows if r["config"] == "gpu-alone"]
if not gpu and (len(skipped) != 6 or any(r["status"] != "skipped" or r["transform_ms"] for r in skipped)):
    problems.append(f"gpu-alone without a GPU: {skipped}")
# The floor (lwt2d-floor): one per command, and gpu-alone's workers' own with a GPU.
floors = ["floor"] + (["floor+STARPU_NCPU=0"] if gpu else [])
for cmd in ("forward", "inverse", "filter"):
    for key in floors:
        mine = [r for r in rows if r["command"] == cmd and r["config"] == key]
        if len(mine) != 1 or mine[0]["status"] != "ok" or not float(mine[0]["process_ms"] or 0) > 0:
            problems.append(f"{cmd} {key}: {mine}")
            continue
        head = open(os.path.join(out, "logs", f"{cmd}-256-{key}.log")).read().splitlines()[0]
        want = 3 if cmd == "filter" else 1
        if "STARPU_SCHED='eager'" not in head or head.count(" --out ") != want:
            problems.append(f"{cmd} {key}: not eager with {want} output(s): {head}")
        if (key != "floor") != ("STARPU_NCPU='0'" in head):
            problems.append(f"{cmd} {key}: STARPU_NCPU wrong in {head}")
if len(rows) != 18 + 3 * len(floors):
    problems.append(f"{len(rows)} rows, expected {18 + 3 * len(floors)}")
print("\n".join(problems)) if problems else None
sys.exit(1 if problems else 0)
PY
  # A process past its timeout: a row marked timeout, its log kept, exit 1 at the end.
  "$PY" "$cold" --build "$build" --quick --sizes 256 --commands forward --configs dmdas --runs 1 --timeout 0.001 \
    --out "$dir/t" >"$dir/t.out" 2>"$dir/t.err"
  rc=$?
  check "timeout: exit 1 (got $rc)" test $rc -eq 1
  check "timeout: a row marked timeout" grep -qx 'forward,256,dmdas,1,1,,[0-9.]*,[0-9]*,timeout' "$dir/t/cold.csv"
  check "timeout: its log kept" grep -q 'timed_out=True' "$dir/t/logs/forward-256-dmdas-run1.log"
  # Rounds: each in folders of its own, a row each, the cell their median.
  "$PY" "$cold" --build "$build" --quick --sizes 256 --commands forward --configs dmdas --runs 1 --rounds 2 \
    --out "$dir/r" >"$dir/r.out" 2>"$dir/r.err"
  rc=$?
  check "rounds: exit 0 (got $rc)" test $rc -eq 0
  check "rounds: one row per round" test "$(grep -c '^forward,256,dmdas,[12],1,[0-9.]*,[0-9.]*,[0-9]*,ok$' "$dir/r/cold.csv")" -eq 2
  check "rounds: a log per round" test -s "$dir/r/logs/forward-256-dmdas-round2-run1.log"
  check "rounds: fresh folders per round" test -d "$dir/r/models/forward-256-dmdas-round1" -a -d "$dir/r/models/forward-256-dmdas-round2"
  median=$("$PY" -c "import csv,statistics,sys; print(f'{statistics.median(float(r[\"transform_ms\"]) for r in csv.DictReader(open(sys.argv[1])) if r[\"config\"] == \"dmdas\"):.2f}')" "$dir/r/cold.csv")
  check "rounds: the cell is the rounds' median ($median)" grep -Eq "^forward +256 +$median$" "$dir/r/cold.txt"
  check "rounds: the table says so" grep -q "each the median of 2 rounds" "$dir/r/cold.txt"
  # Bad options: one line on stderr, nothing on stdout, exit 2; through compare.py --cold too.
  compare=$(dirname "$cold")/compare.py
  for bad in "--runs 0" "--rounds 0" "--rounds x" "--configs fnn-dtps,nosuch" "--commands demo" "--sizes 256 --levels 9" \
             "--bands roughness=1-9,form=rest" "--sizes x" "--bogus"; do
    "$PY" "$cold" --build "$build" --quick $bad --out "$dir/bad" >"$dir/bad.out" 2>"$dir/bad.err"; rc=$?
    check "$bad: exit 2 (got $rc), one line" test $rc -eq 2 -a "$(wc -l <"$dir/bad.err")" -eq 1 -a ! -s "$dir/bad.out"
    "$PY" "$compare" --cold --build "$build" --quick $bad --out "$dir/bad" >"$dir/bad.out" 2>"$dir/bad.err"; rc=$?
    check "compare.py --cold $bad: exit 2 (got $rc), one line" \
      test $rc -eq 2 -a "$(wc -l <"$dir/bad.err")" -eq 1 -a ! -s "$dir/bad.out"
  done
  "$PY" "$cold" --build "$build" --quick --bands roughness=1-9,form=rest --out "$dir/bad" >/dev/null 2>"$dir/bad.err"
  check "--bands judged by lwt2d: the line says why" grep -q 'level 9 is outside 1-4' "$dir/bad.err"
elif [[ $mode == clients ]]; then
  clients=$1 src=$2 lib=$3
  if ! bash "$src/scripts/build_starpu_examples.sh" "$dir/bin" >"$dir/examples.log" 2>&1; then
    fail "StarPU's examples built"; tail -20 "$dir/examples.log"
  else
    small=(--stencil-args "-sizex 32 -sizey 32 -sizez 256 -nbz 8 -niter 4" --env "STARPU_NCPU=2")
    "$PY" "$clients" --bin "$dir/bin" --lib "$lib" --policies fnn-dtps,lws --reps 2 "${small[@]}" \
      --out "$dir/out" >"$dir/stdout" 2>"$dir/stderr"
    rc=$?
    check "clients.py exits 0 (got $rc)" test $rc -eq 0
    check "table printed and written" cmp -s "$dir/stdout" "$dir/out/clients.txt"
    "$PY" - "$dir/out" <<'PY' && ok "CSV rows, table and log" || fail "CSV rows, table and log"
import csv, os, re, sys
out = sys.argv[1]
rows = list(csv.DictReader(open(os.path.join(out, "clients.csv"))))
problems = []
for prog, unit in (("stencil", "ms"), ("pih", "%"), ("pih-data", "%")):
    for pol in ("fnn-dtps", "lws"):
        mine = [r for r in rows if r["program"] == prog and r["policy"] == pol]
        if [r["run"] for r in mine] != ["w1", "1", "2"] or [r["status"] for r in mine] != ["warmup", "ok", "ok"]:
            problems.append(f"{prog} {pol}: {mine}")
        for r in mine:
            v = float(r["value"] or "nan")
            if r["unit"] != unit or not (v > 0 and (unit == "ms" or v <= 110)):
                problems.append(f"{prog} {pol} run {r['run']}: {r}")
text = open(os.path.join(out, "clients.txt")).read()
for prog in ("stencil", "pih", "pih-data"):
    if not re.search(rf"^{prog} +lws +2 .* 1\.000 ", text, re.M):
        problems.append(f"no lws row for {prog} with ratio 1.000")
if not re.search(r"^pih +fnn-dtps +2 .*[-+][0-9.]+ *$", text, re.M):
    problems.append("pih fnn-dtps: no points over lws")
log = open(os.path.join(out, "clients.log")).read()
if not re.search(r"STARPU_SCHED_LIB='[^']*libfnndtps\.so'", log) or "STARPU_SCHED='lws'" not in log:
    problems.append("the log does not show fnn-dtps through STARPU_SCHED_LIB and lws")
print("\n".join(problems)) if problems else None
sys.exit(1 if problems else 0)
PY
    "$PY" "$clients" --bin "$dir/bin" --lib "$lib" --programs pih --policies lws --reps 1 --timeout 0.001 \
      --budget 100 --out "$dir/t" >/dev/null 2>&1
    rc=$?
    check "timeout: exit 1 (got $rc), rows marked timeout" \
      bash -c "[[ $rc -eq 1 ]] && grep -qx 'pih,lws,1,,%,timeout' '$dir/t/clients.csv'"
    # A policy's own settings: its own row, passed to its processes only.
    "$PY" "$clients" --bin "$dir/bin" --lib "$lib" --programs pih --policies lws+STARPU_NCPU=1,lws --reps 1 \
      --env "STARPU_NCPU=2" --out "$dir/v" >/dev/null 2>&1
    rc=$?
    check "a variant: exit 0 (got $rc), its rows and its setting in the log" \
      bash -c "[[ $rc -eq 0 ]] && grep -q '^pih,lws+STARPU_NCPU=1,1,[0-9.]*,%,ok$' '$dir/v/clients.csv' &&
               grep -q '^pih,lws,1,[0-9.]*,%,ok$' '$dir/v/clients.csv' &&
               grep -q \"STARPU_NCPU='1'\" '$dir/v/clients.log' && grep -q 'number of workers CPU = 1$' '$dir/v/clients.log'"
    for bad in "--programs nosuch" "--policies nosuch" "--reps 0" "--env novar" "--policies lws+novar" "--policies lws+STARPU_SCHED=eager"; do
      "$PY" "$clients" --bin "$dir/bin" --lib "$lib" $bad --out "$dir/bad" >"$dir/bad.out" 2>"$dir/bad.err"; rc=$?
      check "$bad: exit 2 (got $rc), one line" bash -c "[[ $rc -eq 2 && ! -s '$dir/bad.out' ]] && [[ \$(wc -l <'$dir/bad.err') -eq 1 ]]"
    done
  fi
elif [[ $mode == suites ]]; then
  suites=$1 src=$2 build=$3 mpi_build=${4:-}
  mpi=()
  [[ -x $mpi_build/bin/lwt2d-mpi ]] && command -v mpirun >/dev/null && mpi=(--mpi "$mpi_build")
  b=$dir/build
  if ! bash "$src/scripts/build_starpu_examples.sh" "$b/bin" >"$dir/examples.log" 2>&1; then
    fail "StarPU's examples built"; tail -20 "$dir/examples.log"
  else
    for f in "$build"/bin/*; do [[ -e $b/bin/${f##*/} ]] || ln -s "$f" "$b/bin/"; done
    ln -s "$build/lib" "$b/lib"
    mapfile -t all < <("$PY" "$suites" --list | awk '{print $1}')
    STARPU_SILENT=1 "$PY" "$suites" --build "$b" --out "$dir/out" --quick "${mpi[@]}" "${all[@]}" >"$dir/stdout" 2>"$dir/stderr"
    rc=$?
    check "suites.py --quick over ${#all[@]} suites exits 0 (got $rc)" test $rc -eq 0
    [[ $rc -eq 0 ]] || { tail -30 "$dir/stdout"; cat "$dir/stderr"; }
    for s in "${all[@]}"; do
      needs=$("$PY" "$suites" --list | awk -v s="$s" '$1 == s && /\[needs/ {print $NF}' | tr -d ']')
      if [[ $needs == cuda ]] && ! nvidia-smi -L >/dev/null 2>&1; then
        check "$s: skipped without a CUDA device" grep -q "^== $s: skipped, it needs a CUDA device" "$dir/out/$s.txt"
      elif [[ $needs == mpi && ${#mpi[@]} -eq 0 ]]; then
        check "$s: skipped without --mpi" grep -q "^== $s: skipped, it needs the MPI build" "$dir/out/$s.txt"
      else
        check "$s: done" grep -q "^== [0-9:]* $s done" "$dir/out/$s.txt"
      fi
    done
    o=$dir/out
    for f in compare-lwt/results.csv compare-gemm/results.csv compare-sgemm/results.csv gemm/tile-128/results.csv \
             mechanism/mechanism.csv overhead/mechanism.csv clients/clients.csv cold/cold.csv filter/cold.csv \
             seed001/seed001.csv calibrate/sampling.tgz; do
      check "$f written" test -s "$o/$f"
    done
    check "trace: Gantt charts" compgen -G "$o/trace/traces/*.png" >/dev/null
    check "bits: 4 outputs identical to the CPUs alone'" test "$(grep -c 'against cpu: identical' "$o/bits.txt")" -eq 4
    check "calibrate: models of the LWT's codelets" bash -c "tar tzf '$o/calibrate/sampling.tgz' | grep -q 'codelets/.*lwt'"
    check "diag: the policy's summary" grep -q "fnn-dtps" "$o/diag.txt"
    if ((${#mpi[@]})); then
      check "mpi: 2 ranks' coefficients identical to one process's" grep -q "2 ranks against one process: identical" "$o/mpi.txt"
      check "mpi: gemm-mpi's check over 2 ranks" grep -q "check: max relative error .*: ok" "$o/mpi.txt"
    fi
    check "the text is what was printed" bash -c "cat $(printf "'$o/%s.txt' " "${all[@]}") | cmp -s - '$dir/stdout'"
    "$PY" "$suites" --build "$b" --out "$dir/lim" --limit 3 cold=--quick >/dev/null 2>&1; rc=$?
    check "--limit 3: exit 1 (got $rc), the suite cut and its folder kept" \
      bash -c "[[ $rc -eq 1 ]] && grep -q 'cut at its 3 s limit' '$dir/lim/cold.txt' && test -d '$dir/lim/cold'"
    for bad in nosuch "cold=--x 'a" ""; do
      "$PY" "$suites" --build "$b" --out "$dir/bad" ${bad:+"$bad"} >"$dir/bad.out" 2>"$dir/bad.err"; rc=$?
      check "'$bad': exit 2 (got $rc), one line" bash -c "[[ $rc -eq 2 && ! -s '$dir/bad.out' ]] && [[ \$(wc -l <'$dir/bad.err') -eq 1 ]]"
    done
  fi
elif [[ $mode == mechanism ]]; then
  mech=$1 src=$2 build=$3 lib=$4
  if ! bash "$src/scripts/build_starpu_examples.sh" "$dir/bin" >"$dir/examples.log" 2>&1; then
    fail "StarPU's examples built"; tail -20 "$dir/examples.log"
  else
    for f in lwt2d gemm bench_overhead; do ln -s "$build/bin/$f" "$dir/bin/$f"; done
    two="STARPU_NCPU=2 STARPU_NCUDA=0"
    STARPU_SILENT=1 "$PY" "$mech" --bin "$dir/bin" --lib "$lib" --out "$dir/out" --reps 2 --tile 128 \
      --only "lwt-co gemm-co sgemm2d lu-default ovh-bench-b1 ovh-starpu-b0" --lwt-size 1024 --lwt-units 8 \
      --lwt-repeat 2 --lwt-warmup 1 --lwt-co-policies "fnn-dtps dmdas" --gemm-size 512 --gemm-policies "dtps dmdas" \
      --sgemm-size 512 --sgemm-iter 2 --lu-default-args "-size 512 -nblocks 4" --ovh-tasks 500 --ovh-reps 2 \
      --co-env "$two" --ovh-env "$two" >"$dir/stdout" 2>"$dir/stderr"
    rc=$?
    check "mechanism.py exits 0 (got $rc)" test $rc -eq 0
    check "table printed and written" cmp -s "$dir/stdout" "$dir/out/mechanism.txt"
    "$PY" - "$dir/out" <<'PY' && ok "every section's rows, values and ratios" || fail "every section's rows, values and ratios"
import csv, os, re, sys
out = sys.argv[1]
rows = list(csv.DictReader(open(os.path.join(out, "mechanism.csv"))))
text = open(os.path.join(out, "mechanism.txt")).read()
problems = []
want = {"lwt-co": ("dmdas", ["fnn-dtps", "dmdas"], "ms"), "gemm-co": ("dmdas", ["dtps", "dmdas"], "ms"),
        "sgemm2d": ("dmdas", ["dmdas", "fnn-dtps"], "ms"), "lu-default": ("dmdas", ["dmdas", "fnn-dtps"], "ms"),
        "ovh-bench-b1": ("eager", ["eager", "fnn-dtps", "fnn", "dtps", "boyer", "even"], "us"),
        "ovh-starpu-b0": ("eager", ["eager", "fnn-dtps", "fnn", "dtps", "boyer", "even"], "us")}
for sec, (ref, cfgs, unit) in want.items():
    here = [r for r in rows if r["section"] == sec]
    if sorted({r["config"] for r in here}) != sorted(cfgs):
        problems.append(f"{sec}: configs {sorted({r['config'] for r in here})}")
    ok = [r for r in here if r["status"] == "ok"]
    if any(not float(r["value"]) > 0 or r["unit"] != unit for r in ok) or len(ok) < len(cfgs):
        problems.append(f"{sec}: {here}")
    if not re.search(rf"^{re.escape(sec)} +{ref}\* .* 1\.00 ", text, re.M):
        problems.append(f"{sec}: no reference row {ref}* with ratio 1.00")
for sec in ("sgemm2d", "lu-default", "ovh-starpu-b0"):
    if sum(r["section"] == sec and r["status"] == "ok" and r["config"] == cfg for r in rows for cfg in [want[sec][1][1]]) != 2:
        problems.append(f"{sec}: not 2 timed processes of {want[sec][1][1]}")
if any(r["section"] not in want for r in rows):
    problems.append("--only ran other sections")
print("\n".join(problems)) if problems else None
sys.exit(1 if problems else 0)
PY
    "$PY" "$mech" --bin "$dir/bin" --lib "$lib" --gemm-split 4d --out "$dir/bad" >"$dir/bad.out" 2>"$dir/bad.err"; rc=$?
    check "bad option: exit 2 (got $rc), one line" bash -c "[[ $rc -eq 2 && \$(wc -l <'$dir/bad.err') -eq 1 ]]"
  fi
elif [[ $mode == perturb ]]; then
  perturb=$1
  for args in "" "--bogus" "--cpu-cores 0 --duty 0" "--cpu-cores 0 --duty 1.5" "--cpu-cores 0 --period-ms -1" \
              "--cpu-cores x" "--cpu-cores 3-1" "--cpu-cores 100000" "--cpu-cores 0 --seconds" "--gpu -1"; do
    "$perturb" $args >"$dir/out" 2>"$dir/err"; rc=$?
    check "perturb $args: exit 2 (got $rc), one line on stderr" \
      test $rc -eq 2 -a "$(wc -l <"$dir/err")" -eq 1 -a ! -s "$dir/out"
  done
  start=$(date +%s.%N)
  "$perturb" --cpu-cores 0 --duty 0.5 --period-ms 50 --seconds 0.3 >"$dir/out" 2>"$dir/err"; rc=$?
  took=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN{printf "%.2f", b - a}')
  check "--seconds 0.3: exit 0 (got $rc) after about 0.3 s ($took s)" \
    awk -v t="$took" -v rc=$rc 'BEGIN{exit !(rc == 0 && t > 0.25 && t < 2)}'
  check "one line saying what it does" grep -qx 'perturb: a busy thread on core 0, on 50% of every 50 ms, for 0.3 s' "$dir/out"
  for sig in TERM INT; do
    "$perturb" --cpu-cores 0 --duty 1 --period-ms 100 >"$dir/out" 2>"$dir/err" &
    pid=$!
    for _ in $(seq 50); do [[ -s $dir/out ]] && break; sleep 0.1; done
    kill -s $sig $pid
    for _ in $(seq 30); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
    if kill -0 $pid 2>/dev/null; then
      kill -KILL $pid; wait $pid 2>/dev/null
      fail "SIG$sig: still running after 3 s"
    else
      wait $pid; rc=$?
      check "SIG$sig: clean exit (got $rc), nothing on stderr" test $rc -eq 0 -a ! -s "$dir/err"
    fi
  done
else
  echo "usage: tests/test_bench.sh compare COMPARE_PY BUILD_DIR | cold COLD_PY BUILD_DIR | clients CLIENTS_PY SOURCE_DIR LIB | mechanism MECHANISM_PY SOURCE_DIR BUILD_DIR LIB | perturb PERTURB" >&2
  exit 2
fi
echo "bench: $passed passed, $fails failed"
((fails == 0))
