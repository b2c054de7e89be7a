#!/usr/bin/env bash
# lwt2d filter as a user runs it: on a layered surface of known parts each band matches its part,
# the bands sum to the input and the printed ISO 25178-2 parameters equal numpy's
# (filter_check.py); X3P in and out, raw input, a hand-made integer X3P with invalid points; every
# bad input gets one line on stderr, exit status 2 and no output.
set -u
LWT2D=$1
CHECK=$2
# Debian's interpreter, where scripts/setup.sh installed numpy (a pyenv python3 may shadow it).
PY=${PYTHON:-/usr/bin/python3}
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
export STARPU_SILENT=1 STARPU_NCPU=${STARPU_NCPU:-2}
fails=0; passed=0
pass() { passed=$((passed + 1)); echo "ok   $1"; }
fail() { fails=$((fails + 1)); echo "FAIL $1"; }
run_check() { if $PY "$CHECK" "$@"; then passed=$((passed + 1)); else fails=$((fails + 1)); fi; }

# The layered surface and its parts (apps/io/surface.hpp): waviness of 50 samples sits in
# levels 4-6 (2^5 <= 50 < 2^6, with a level of margin on each side).
gen="--size 1024 --model layered --seed 3 --wavelength 50"
for p in all form waviness roughness; do
  "$LWT2D" generate $gen --part $p --out "$dir/$p.npy" >/dev/null || fail "generate $p"
done
bands=roughness=1-3,waviness=4-6,form=rest
if FNNDTPS_MODEL_DIR="$dir/models" "$LWT2D" filter --in "$dir/all.npy" --levels 8 --bands $bands --out-dir "$dir/out" --png \
     >"$dir/out.txt" 2>"$dir/err.txt"; then pass "filter a 1024^2 layered surface"
else fail "filter a 1024^2 layered surface"; cat "$dir/err.txt"; fi
cat "$dir/out.txt"
# The sums' tasks are priced by the strip they read (their model's size_base), not by the few
# partial sums they write: counted as 9 KB, a band strip of 16 MB looked like microseconds on a
# core before any core had run one. Each strip here is 1024 columns of float32 by 8 rows or more.
works=$(awk '$1 == "size" { print $4 }' "$dir/models/height_moments.costs" "$dir/models/height_first.costs" 2>/dev/null)
if [ -n "$works" ] && ! echo "$works" | awk '$1 < 1024 * 4 * 8 || $1 % (1024 * 4) { bad = 1 } END { exit !bad }'; then
  pass "the height sums' work is their strip's bytes"
else fail "the height sums' work is not their strip's bytes: ${works:-no cost file}"; fi
run_check separation "$dir"
run_check png "$dir/out" 1024

# Raw float32 with --shape: the same bands as from the .npy. Bit for bit on CPU workers; with a
# GPU a unit may run on the other kind of worker in each run, whose float32 lifting rounds
# differently (FMA contraction): within 1e-5 of the band's largest value, as test_lwt_units
# bounds a transform's rounding, while a wrong shape or offset gives O(1) differences.
same_bands() {
  $PY -c "
import numpy as np, sys
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
sys.exit(not (a.shape == b.shape and np.abs(a - b).max() <= 1e-5 * np.abs(b).max()))" "$@"
}
$PY -c "import numpy as np; np.load('$dir/all.npy').astype('<f4').tofile('$dir/all.f32')"
"$LWT2D" filter --in "$dir/all.f32" --shape 1024x1024 --levels 8 --bands $bands --out-dir "$dir/raw" >/dev/null \
  && same_bands "$dir/raw/waviness.npy" "$dir/out/waviness.npy" && same_bands "$dir/raw/form.npy" "$dir/out/form.npy" \
  && pass "raw input gives the same bands" || fail "raw input gives other bands"

# X3P: generated (micrometres written as metres, 1 um grid), filtered, bands written back.
"$LWT2D" generate --size 256 --model layered --seed 5 --wavelength 20 --out "$dir/s.x3p" >/dev/null
if "$LWT2D" filter --in "$dir/s.x3p" --levels 6 --bands roughness=1-2,waviness=3-5,form=rest \
     --out-dir "$dir/x" --out-x3p >"$dir/x.txt" 2>&1; then pass "filter an X3P file"; else fail "filter an X3P file"; cat "$dir/x.txt"; fi
grep -q "Sa..Sz in um; the band files in metres" "$dir/x.txt" && pass "X3P parameters and band files carry units" \
  || fail "no units for X3P input"
for b in form waviness roughness; do run_check x3p "$dir/x/$b.x3p" "$dir/x/$b.npy" "$dir/s.x3p"; done

# Hand-made X3Ps: int16, int32 and float32 heights with increment and offset, four invalid points.
for t in I L F; do
  $PY "$CHECK" make-int "$dir/int$t.x3p" $t
  "$LWT2D" filter --in "$dir/int$t.x3p" --levels 3 --bands roughness=1,waviness=2,form=rest --out-dir "$dir/i$t" \
    >"$dir/i.txt" 2>&1 || { fail "filter the $t X3P"; cat "$dir/i.txt"; }
  grep -q "4 invalid points" "$dir/i.txt" && pass "$t X3P: invalid points reported" || fail "$t X3P: invalid points not reported"
  run_check check-int "$dir/int$t.x3p" "$dir/i$t"
done
cp "$dir/intI.x3p" "$dir/int.x3p"

# Bad input: exit 2, one line on stderr (StarPU's "[starpu]" notices are not ours), no output.
$PY "$CHECK" make-bad "$dir" >/dev/null
expect_fail() {
  local name=$1; shift
  "$LWT2D" "$@" >"$dir/o.txt" 2>"$dir/e.all"; local rc=$?
  grep -v '^\[starpu\]' "$dir/e.all" >"$dir/e.txt"
  local lines; lines=$(wc -l <"$dir/e.txt")
  if [[ $rc -eq 2 && $lines -eq 1 && ! -e $dir/bad ]]; then pass "$name: $(cat "$dir/e.txt")"
  else fail "$name: exit $rc, $lines stderr lines, output ${dir}/bad $( [[ -e $dir/bad ]] && echo exists || echo absent)"
       cat "$dir/e.txt"; rm -rf "$dir/bad"; fi
}
f() { expect_fail "$1" filter --in "$2" --levels "${4:-3}" --bands "${3:-roughness=1,form=rest}" --out-dir "$dir/bad" "${@:5}"; }
f "corrupt zip" "$dir/corrupt.x3p"
f "main.xml without SizeX" "$dir/nosize.x3p"
f "data file shorter than the axes say" "$dir/short.x3p"
f "main.xml not XML" "$dir/badxml.x3p"
f "data file fails its MD5" "$dir/damaged.x3p"
f "data file fails its zip CRC (no MD5)" "$dir/crc.x3p"
f "a finite height beyond float32" "$dir/huge.x3p"
"$LWT2D" filter --in "$dir/checked.x3p" --levels 3 --bands roughness=1,form=rest --out-dir "$dir/c" >/dev/null 2>&1 \
  && pass "a data file that matches its MD5 is read" || fail "a matching MD5 was refused"
f "missing input" "$dir/none.x3p"
f "unknown band name" "$dir/int.x3p" roughness=1,texture=2,form=rest
f "overlapping levels" "$dir/int.x3p" roughness=1-2,waviness=2-3,form=rest
f "empty level range" "$dir/int.x3p" roughness=3-2,form=rest
f "level beyond --levels" "$dir/int.x3p" roughness=1-4,form=rest
f "no rest band" "$dir/int.x3p" roughness=1-2
f "more levels than the surface allows (40 x 48: 6)" "$dir/int.x3p" roughness=1,form=rest 7
f "raw without --shape" "$dir/all.f32"
f "raw shorter than --shape" "$dir/all.f32" roughness=1,form=rest 3 --shape 2048x1024
f "--out-x3p from .npy" "$dir/all.npy" roughness=1,form=rest 3 --out-x3p
touch "$dir/afile"
expect_fail "--out-dir is a file" filter --in "$dir/all.npy" --levels 3 --bands roughness=1,form=rest --out-dir "$dir/afile"
expect_fail "no --bands" filter --in "$dir/all.npy" --out-dir "$dir/bad"
mkdir -p "$dir/p"; cp "$dir/roughness.npy" "$dir/p/roughness.npy"; before=$(sha1sum <"$dir/p/roughness.npy")
expect_fail "output over the input" filter --in "$dir/p/roughness.npy" --levels 3 --bands roughness=1,form=rest --out-dir "$dir/p"
[[ $(sha1sum <"$dir/p/roughness.npy") == "$before" ]] && pass "input untouched" || fail "input changed"
expect_fail "generate: unknown part" generate --out "$dir/bad.npy" --part texture
# Output locations that cannot be written: found before any work, exit 2, nothing written.
mkdir -p "$dir/ro"; chmod a-w "$dir/ro"
ro=$dir/ro; touch "$ro/probe" 2>/dev/null && { rm -f "$ro/probe"; ro=/sys; }  # root writes anywhere but there
g=(filter --in "$dir/all.npy" --levels 3 --bands roughness=1,form=rest)
expect_fail "--out-dir in a read-only location" "${g[@]}" --out-dir "$ro/bands"
expect_fail "--out-dir under a file" "${g[@]}" --out-dir "$dir/afile/bands"
chmod u+w "$dir/ro"
[[ -z $(ls -A "$dir/ro") ]] && pass "nothing written in the read-only location" || fail "files left in $dir/ro"
# All bands or none: form.npy cannot be written (a folder holds its name), so roughness.npy and
# waviness.npy, which come before it, are not written either, and an older roughness.npy stays.
mkdir -p "$dir/d/form.npy"; echo old >"$dir/d/roughness.npy"
"$LWT2D" filter --in "$dir/all.npy" --levels 6 --bands roughness=1-2,waviness=3-4,form=rest --out-dir "$dir/d" \
  >"$dir/o.txt" 2>"$dir/e.all"; rc=$?
left=$(cd "$dir/d" && ls -A | tr '\n' ' ')
if [[ $rc -eq 2 && $(grep -vc '^\[starpu\]' "$dir/e.all") -eq 1 && $left == "form.npy roughness.npy " &&
      $(cat "$dir/d/roughness.npy") == old ]]; then pass "a band that cannot be written: no band written: $(grep -v '^\[starpu\]' "$dir/e.all")"
else fail "a band that cannot be written: exit $rc, left in the folder: $left"; cat "$dir/e.all"; fi

# A signal while the bands are written (each band written as soon as its inverse ends, StarPU
# paused): the run ends by the signal and the folder keeps none of them, nor the staging.
"$LWT2D" generate --size 3072 --out "$dir/sig-in.npy" >/dev/null 2>&1
for sig in TERM INT; do
  rm -rf "$dir/sig"; mkdir "$dir/sig"
  $PY -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])' \
    "$LWT2D" filter --in "$dir/sig-in.npy" --levels 5 --bands roughness=1-2,waviness=3-4,form=rest \
    --out-dir "$dir/sig" >/dev/null 2>&1 &
  pid=$!
  for _ in $(seq 1 20000); do  # the first band's file in the staging folder
    compgen -G "$dir/sig/.staging-*/*.npy*" >/dev/null && break
    kill -0 $pid 2>/dev/null || break; sleep 0.002
  done
  kill -$sig $pid 2>/dev/null; wait $pid; rc=$?
  left=$(ls -A "$dir/sig")
  if [[ $rc -eq $((128 + $(kill -l $sig))) && -z $left ]]; then pass "SIG$sig while the bands are written: exit $rc, nothing left"
  else fail "SIG$sig while the bands are written: exit $rc, left: ${left:-nothing}"; fi
done
rm -f "$dir/sig-in.npy"

echo "lwt2d-filter-cli: $passed passed, $fails failed"
[[ $fails -eq 0 ]]
