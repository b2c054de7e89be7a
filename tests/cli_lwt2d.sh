#!/usr/bin/env bash
# lwt2d's command-line contract: good files round-trip; every bad input gets exactly one
# line on stderr and a non-zero exit, and the input file is never overwritten.
set -u
LWT2D=$1
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

# expect_fail NAME ARGS...: non-zero exit, exactly one line on stderr (StarPU's own
# "[starpu]" notices, e.g. a GPU machine's hwloc warnings, are not ours and not counted).
expect_fail() {
  local name=$1; shift
  "$LWT2D" "$@" >"$dir/out.txt" 2>"$dir/err.all"; local rc=$?
  grep -v '^\[starpu\]' "$dir/err.all" >"$dir/err.txt"
  local lines; lines=$(wc -l <"$dir/err.txt")
  if [[ $rc -ne 0 && $lines -eq 1 ]]; then passed=$((passed + 1)); echo "ok   $name: $(cat "$dir/err.txt")"
  else fails=$((fails + 1)); echo "FAIL $name: exit $rc, $lines stderr lines:"; cat "$dir/err.txt"; fi
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
[[ ! -e "$dir/o.npy" ]] && passed=$((passed + 1)) || { fails=$((fails + 1)); echo "FAIL refused run wrote output"; }

echo "lwt2d-cli: $passed passed, $fails failed"
[[ $fails -eq 0 ]]
