#!/usr/bin/env bash
# lwt2d's command-line contract: good files round-trip; every bad input gets exactly one
# line on stderr and exit status 2, and the input file is never overwritten; a signal during a
# write leaves neither the output nor a temporary.
#   bash tests/cli_lwt2d.sh <lwt2d binary> [libfnndtps.so]
set -u
LWT2D=$1
LIB=${2:-$(dirname "$LWT2D")/../lib/libfnndtps.so}
# Debian's interpreter, where scripts/setup.sh installed numpy (a pyenv python3 may shadow it).
PY=${PYTHON:-/usr/bin/python3}
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
export STARPU_SILENT=1 STARPU_NCPU=${STARPU_NCPU:-2}
fails=0; passed=0

$PY - "$dir" <<'PY'
import sys, numpy as np
d = sys.argv[1]
rng = np.random.default_rng(1)
np.save(f"{d}/x.npy", rng.standard_normal((67, 45)).astype('<f4'))
np.save(f"{d}/x3d.npy", np.zeros((4, 4, 4), '<f4'))
np.save(f"{d}/x64.npy", np.zeros((8, 8), '<f8'))
np.save(f"{d}/xi.npy", np.zeros((8, 8), '<i4'))
a = rng.standard_normal((16, 16)).astype('<f4'); a[3, 5] = np.nan
np.save(f"{d}/xnan.npy", a)
open(f"{d}/short.npy", "wb").write(open(f"{d}/x.npy", "rb").read()[:200])
open(f"{d}/text.npy", "w").write("not an array\n")
PY

# expect_fail NAME ARGS...: exit status 2, exactly one line on stderr (StarPU's own
# "[starpu]" notices, e.g. a GPU machine's hwloc warnings, are not ours and not counted), and
# that line has $WORDS where set.
# $ENV: VAR=value words for the run.
expect_fail() {
  local name=$1; shift
  env ${ENV:-} "$LWT2D" "$@" >"$dir/out.txt" 2>"$dir/err.all"; local rc=$?
  grep -v '^\[starpu\]' "$dir/err.all" >"$dir/err.txt"
  local lines; lines=$(wc -l <"$dir/err.txt")
  if [[ $rc -eq 2 && $lines -eq 1 ]] && grep -q -- "${WORDS:-}" "$dir/err.txt"; then
    passed=$((passed + 1)); echo "ok   $name: $(cat "$dir/err.txt")"
  else fails=$((fails + 1)); echo "FAIL $name: exit $rc, $lines stderr lines${WORDS:+, wanted '$WORDS'}:"; cat "$dir/err.txt"; fi
}
expect_ok() {
  local name=$1; shift
  if "$LWT2D" "$@" >"$dir/out.txt" 2>"$dir/err.txt"; then passed=$((passed + 1)); echo "ok   $name"
  else fails=$((fails + 1)); echo "FAIL $name:"; cat "$dir/err.txt"; fi
}

expect_ok forward forward --in "$dir/x.npy" --out "$dir/c.npy" --levels 3 --units 2 --check
expect_ok inverse inverse --in "$dir/c.npy" --out "$dir/y.npy" --levels 3 --units 2
$PY -c "
import numpy as np, sys
x = np.load('$dir/x.npy'); y = np.load('$dir/y.npy')
err = np.abs(x - y).max() / np.abs(x).max()
print('round trip through files: max relative error %.3g' % err)
sys.exit(0 if y.dtype == np.float32 and y.shape == x.shape and err < 1e-5 else 1)" \
  && passed=$((passed + 1)) || { fails=$((fails + 1)); echo "FAIL file round trip"; }
# Streamed (LWT2D_STREAM=1: the files beside the transform's tasks): the same bytes as with the
# files whole; a bad value found mid-stream gets its one line and exit 2, and leaves no output.
for c in forward:x:c inverse:c:y; do
  IFS=: read -r cmd src dst <<<"$c"
  if LWT2D_STREAM=1 "$LWT2D" $cmd --in "$dir/$src.npy" --out "$dir/$dst-s.npy" --levels 3 --units 2 --check \
       >"$dir/out.txt" 2>"$dir/err.txt" && cmp -s "$dir/$dst.npy" "$dir/$dst-s.npy"; then
    passed=$((passed + 1)); echo "ok   $cmd streamed: the same bytes"
  else fails=$((fails + 1)); echo "FAIL $cmd streamed:"; cat "$dir/err.txt"; fi
done
ENV=LWT2D_STREAM=1 expect_fail "NaN in data, streamed" forward --in "$dir/xnan.npy" --out "$dir/o.npy"
[[ -z $(compgen -G "$dir/o.npy*") ]] && passed=$((passed + 1)) || { fails=$((fails + 1)); echo "FAIL streamed refusal left $(compgen -G "$dir/o.npy*")"; }
before=$(sha1sum "$dir/x.npy")
expect_fail "output over input" forward --in "$dir/x.npy" --out "$dir/x.npy"
[[ $(sha1sum "$dir/x.npy") == "$before" ]] && passed=$((passed + 1)) || { fails=$((fails + 1)); echo "FAIL input changed"; }
expect_fail "missing file" forward --in "$dir/none.npy" --out "$dir/o.npy"
expect_fail "not an npy" forward --in "$dir/text.npy" --out "$dir/o.npy"
expect_fail "truncated npy" forward --in "$dir/short.npy" --out "$dir/o.npy"
expect_fail "3-D array" forward --in "$dir/x3d.npy" --out "$dir/o.npy"
expect_fail "float64 array" forward --in "$dir/x64.npy" --out "$dir/o.npy"
expect_fail "int32 array" forward --in "$dir/xi.npy" --out "$dir/o.npy"
expect_fail "NaN in data" forward --in "$dir/xnan.npy" --out "$dir/o.npy"
expect_fail "zero levels" forward --in "$dir/x.npy" --out "$dir/o.npy" --levels 0
expect_fail "too many levels" forward --in "$dir/x.npy" --out "$dir/o.npy" --levels 9
expect_fail "levels not a number" forward --in "$dir/x.npy" --out "$dir/o.npy" --levels four
expect_fail "too many units" forward --in "$dir/x.npy" --out "$dir/o.npy" --levels 3 --units 40
expect_fail "unknown flag" forward --in "$dir/x.npy" --out "$dir/o.npy" --frobnicate
expect_fail "unknown command" sideways
expect_fail "unknown pipeline" demo --pipeline quick
expect_fail "zero size" demo --size 0
expect_fail "negative size" demo --size -5x10
expect_fail "no arguments"
STARPU_SCHED=nosuchpolicy expect_fail "unknown policy" demo --size 64
STARPU_NCUDA=99 expect_fail "more GPUs asked for than exist" demo --size 64
# STARPU_SCHED_LIB set: the name is checked against that library's list and StarPU's (StarPU
# itself would warn and run lws).
if [[ -f $LIB ]]; then
  for cmd in "demo --size 64" "forward --in $dir/x.npy --out $dir/o.npy --levels 3"; do
    STARPU_SCHED_LIB=$LIB STARPU_SCHED=nonexistent WORDS="fnn-dtps.*eager" \
      expect_fail "unknown policy with STARPU_SCHED_LIB (${cmd%% *})" $cmd
  done
  STARPU_SCHED_LIB=$dir/none.so STARPU_SCHED=nonexistent WORDS="cannot be loaded" \
    expect_fail "unknown policy, STARPU_SCHED_LIB not loadable" demo --size 64
  STARPU_SCHED_LIB=$LIB STARPU_SCHED=dtps expect_ok "one of the library's policies with STARPU_SCHED_LIB" demo --size 64
  STARPU_SCHED_LIB=$LIB STARPU_SCHED=eager expect_ok "a StarPU policy with STARPU_SCHED_LIB" demo --size 64
else
  echo "note: no $LIB; the STARPU_SCHED_LIB cases are not run"
fi
# Policy settings the policy refuses at its start: one line, exit 2.
for setting in FNNDTPS_SLOWDOWN=99:2 FNNDTPS_SLOWDOWN=0:nan FNNDTPS_HIDDEN=2.5; do
  ENV="$setting STARPU_SCHED=fnn-dtps" WORDS="^fnndtps: " expect_fail "$setting" demo --size 64
done
# The app's own switches take 0 or 1: anything else is one line, exit 2, before any work.
for cmd in "forward --in $dir/x.npy --out $dir/p.npy" "demo --size 64"; do
  ENV="LWT2D_PREALLOCATE=yes" WORDS="^lwt2d: LWT2D_PREALLOCATE='yes' must be 0 or 1" \
    expect_fail "LWT2D_PREALLOCATE=yes (${cmd%% *})" $cmd
done
ENV="LWT2D_STREAM=on" WORDS="^lwt2d: LWT2D_STREAM='on' must be 0 or 1" \
  expect_fail "LWT2D_STREAM=on" forward --in "$dir/x.npy" --out "$dir/p.npy"
ENV="FNNDTPS_PIN_TEMPS=2" WORDS="^lwt2d: FNNDTPS_PIN_TEMPS='2' must be 0 or 1" expect_fail "FNNDTPS_PIN_TEMPS=2" demo --size 64
[[ ! -e $dir/p.npy ]] || { fails=$((fails + 1)); echo "FAIL LWT2D_PREALLOCATE=yes left $dir/p.npy"; }
# StarPU's own files of this host cut short (a disk that filled as StarPU saved them): StarPU
# would abort in starpu_init; named first, one line, exit 2, the file left for the user.
sh=$dir/starpu-home
STARPU_HOME=$sh STARPU_CALIBRATE=1 "$LWT2D" demo --size 64 >/dev/null 2>&1
model=$(ls "$sh"/.starpu/sampling/codelets/*/lwt_h_fwd.* 2>/dev/null | head -1)
bus=$(ls "$sh"/.starpu/sampling/bus/*.latency 2>/dev/null | head -1)
if [[ -f $model && -f $bus ]]; then
  for f in "$model" "$bus"; do
    cp "$f" "$f.whole"; head -c 50 "$f.whole" >"$f"
    ENV="STARPU_HOME=$sh" WORDS="^lwt2d: StarPU's file $f is cut short" expect_fail "StarPU's $(basename "$f") cut short" \
      forward --in "$dir/x.npy" --out "$dir/p.npy"
    mv "$f.whole" "$f"
  done
  [[ ! -e $dir/p.npy ]] || { fails=$((fails + 1)); echo "FAIL a cut-short StarPU file left $dir/p.npy"; }
else
  fails=$((fails + 1)); echo "FAIL STARPU_CALIBRATE=1 demo left no lwt_h_fwd model or bus latency file in $sh"
fi
# Output paths that cannot be written: found before any work, exit 2.
mkdir -p "$dir/ro" "$dir/adir.npy"; chmod a-w "$dir/ro"
ro=$dir/ro; touch "$ro/probe" 2>/dev/null && { rm -f "$ro/probe"; ro=/sys; }  # root writes anywhere but there
for cmd in forward inverse generate; do
  in=(); [[ $cmd != generate ]] && in=(--in "$dir/x.npy")
  WORDS="does not exist" expect_fail "$cmd: --out in a missing folder" $cmd "${in[@]}" --out "$dir/none/o.npy"
  WORDS="is a directory" expect_fail "$cmd: --out names a folder" $cmd "${in[@]}" --out "$dir/adir.npy"
  WORDS="cannot write in" expect_fail "$cmd: --out in a read-only location" $cmd "${in[@]}" --out "$ro/o.npy"
done
chmod u+w "$dir/ro"
# More memory than the machine has: refused before any allocation (as gemm), with the sizes.
side=$($PY -c "import math, os; print(math.isqrt(os.sysconf('SC_PHYS_PAGES') * os.sysconf('SC_PAGE_SIZE')) + 1)")  # side^2 floats: 4x the memory
WORDS="needs .* GiB of host memory but this machine has" expect_fail "generate larger than memory" \
  generate --size 200000x200000 --out "$dir/o.npy"
WORDS="needs .* GiB" expect_fail "generate larger than memory ($side^2)" generate --size "$side" --out "$dir/o.npy"
WORDS="needs .* GiB" expect_fail "demo larger than memory" demo --size "$side"
# A sparse file whose header says side^2 floats (no disk used), as a 160 GB input would be.
$PY - "$dir/huge.npy" "$side" <<'PY'
import sys, numpy as np
path, side = sys.argv[1], int(sys.argv[2])
hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }" % (side, side)
hdr += ' ' * ((64 - (10 + len(hdr) + 1) % 64) % 64) + '\n'
with open(path, 'wb') as f:
    f.write(b'\x93NUMPY\x01\x00' + len(hdr).to_bytes(2, 'little') + hdr.encode())
    f.truncate(f.tell() + 4 * side * side)
PY
WORDS="needs .* GiB" expect_fail "forward of a sparse input larger than memory" forward --in "$dir/huge.npy" --out "$dir/o.npy"
rm -f "$dir/huge.npy"
[[ ! -e "$dir/o.npy" ]] && passed=$((passed + 1)) || { fails=$((fails + 1)); echo "FAIL refused run wrote output"; }

# SIGTERM or SIGINT while a large output is being written: the program ends by the signal and
# leaves no temporary and no output. Started with SIGINT at its default: a shell without job
# control starts background jobs with SIGINT ignored, which the program keeps.
for round in 1 2 3; do
  for sig in TERM INT; do
    for ext in npy x3p; do
      rm -rf "$dir/sig"; mkdir "$dir/sig"
      $PY -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])' \
        "$LWT2D" generate --size 6144 --out "$dir/sig/s.$ext" >/dev/null 2>&1 &
      pid=$!
      # The temporary (registered before it is created) appears: signal at once, mid-write.
      for _ in $(seq 1 5000); do
        compgen -G "$dir/sig/s.$ext.tmp-*" >/dev/null && break
        kill -0 $pid 2>/dev/null || break; sleep 0.002
      done
      kill -$sig $pid 2>/dev/null; wait $pid; rc=$?
      left=$(ls -A "$dir/sig")
      if [[ $rc -eq $((128 + $(kill -l $sig))) && -z $left ]]; then
        passed=$((passed + 1)); echo "ok   SIG$sig during a .$ext write (round $round): exit $rc, nothing left"
      else fails=$((fails + 1)); echo "FAIL SIG$sig during a .$ext write (round $round): exit $rc, left: ${left:-nothing}"; fi
    done
  done
done

# The same for forward, whose output is written after its transform (StarPU stopped): a signal
# while the result's temporary exists ends the run with nothing under the output's name.
"$LWT2D" generate --size 6144 --out "$dir/f-in.npy" >/dev/null 2>&1
# Streamed, the temporary exists from before StarPU's start and fills as the units end.
for run in TERM INT TERM:1 INT:1; do
  sig=${run%%:*}; stream=0; [[ $run == *:1 ]] && stream=1
  rm -rf "$dir/fsig"; mkdir "$dir/fsig"
  LWT2D_STREAM=$stream $PY -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])' \
    "$LWT2D" forward --in "$dir/f-in.npy" --out "$dir/fsig/c.npy" --levels 3 >/dev/null 2>&1 &
  pid=$!
  for _ in $(seq 1 20000); do
    compgen -G "$dir/fsig/c.npy.tmp-*" >/dev/null && break
    kill -0 $pid 2>/dev/null || break; sleep 0.002
  done
  kill -$sig $pid 2>/dev/null; wait $pid; rc=$?
  left=$(ls -A "$dir/fsig")
  # The signal may land after the rename (the write done, the process not yet gone): then the
  # output is whole. Never a temporary, never a part under the output's name.
  whole=$((128 + 6144 * 6144 * 4))
  if [[ $rc -eq $((128 + $(kill -l $sig))) && ( -z $left || ( $left == c.npy && $(stat -c %s "$dir/fsig/c.npy") -eq $whole ) ) ]]; then
    passed=$((passed + 1)); echo "ok   SIG$sig during forward's write (LWT2D_STREAM=$stream): exit $rc, ${left:-nothing} left"
  else fails=$((fails + 1)); echo "FAIL SIG$sig during forward's write (LWT2D_STREAM=$stream): exit $rc, left: ${left:-nothing}"; fi
done
rm -f "$dir/f-in.npy"

echo "lwt2d-cli: $passed passed, $fails failed"
[[ $fails -eq 0 ]]
