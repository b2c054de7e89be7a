#!/usr/bin/env bash
# gemm's command-line contract: ragged products, both splits and mixed block widths, agree
# with the reference (float within 1e-5, double within 1e-12, max|C - C_ref| / max|C_ref|: the
# unit roundoffs 6e-8 and 1.1e-16 times the growth of a k-term sum, with margin); the output
# has a header naming the decomposition, one line per iteration,
# the per-worker counts and the RESULT line; every bad input gets exactly one line on stderr
# and exit status 2.
#   bash tests/cli_gemm.sh <gemm binary> [libfnndtps.so]
set -u
GEMM=$1
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
export STARPU_SILENT=1 STARPU_NCPU=${STARPU_NCPU:-2}
fails=0; passed=0
pass() { passed=$((passed + 1)); echo "ok   $*"; }
fail() { fails=$((fails + 1)); echo "FAIL $*"; }

# expect_check NAME TOL ARGS...: exit 0, the check line's error <= TOL, the contract's lines.
expect_check() {
  local name=$1 tol=$2; shift 2
  "$GEMM" "$@" --check >"$dir/out.txt" 2>"$dir/err.txt"; local rc=$?
  local err; err=$(sed -n 's/^check: max relative error \([^ ]*\) .*/\1/p' "$dir/out.txt")
  local iters; iters=$(grep -c '^iter [0-9]*: [0-9.]* ms, [0-9.]* GFLOP/s' "$dir/out.txt")
  if [[ $rc -eq 0 && -n $err ]] && awk -v e="$err" -v t="$tol" 'BEGIN { exit !(e <= t) }' \
     && [[ $iters -ge 1 ]] && grep -q '^RESULT gemm precision=[sd] m=[0-9]* n=[0-9]* k=[0-9]* tile=[0-9]* split=[23]d tiles=[0-9,]* math=[a-z0-9]* policy=[^ ]* cpu=[0-9]* cuda=[0-9]* median_ms=[0-9.]* gflops=[0-9.]*' "$dir/out.txt" \
     && grep -q '^    .* tiles .* C tiles ' "$dir/out.txt"; then
    pass "$name: error $err <= $tol, $(grep '^RESULT' "$dir/out.txt" | grep -o 'gflops=[0-9.]*')"
  else
    fail "$name: exit $rc, error '$err' (tolerance $tol), $iters iteration lines:"; cat "$dir/out.txt" "$dir/err.txt"
  fi
}

# expect_fail NAME ARGS...: exit 2, exactly one line on stderr.
expect_fail() {
  local name=$1; shift
  "$GEMM" "$@" >"$dir/out.txt" 2>"$dir/err.txt"; local rc=$?
  local lines; lines=$(wc -l <"$dir/err.txt")
  if [[ $rc -eq 2 && $lines -eq 1 ]]; then pass "$name: $(cat "$dir/err.txt")"
  else fail "$name: exit $rc, $lines stderr lines:"; cat "$dir/err.txt"; fi
}

expect_check "float 1000x700x900 tile 256" 1e-5 --m 1000 --n 700 --k 900 --tile 256 --iter 2
expect_check "double 1000x700x900 tile 256" 1e-12 --precision d --m 1000 --n 700 --k 900 --tile 256 --iter 2
expect_check "float 2048x1999x2047 tile 512" 1e-5 --m 2048 --n 1999 --k 2047 --tile 512 --iter 1
expect_check "double 130x97x61 tile 32, one iteration" 1e-12 --precision d --m 130 --n 97 --k 61 --tile 32 --iter 1
expect_check "float, tile larger than the matrix" 1e-5 --size 37 --tile 100 --iter 2
STARPU_SCHED=dmdas expect_check "double under dmdas" 1e-12 --precision d --size 300 --tile 64 --iter 2
STARPU_SCHED=fnn-dtps expect_check "float under fnn-dtps" 1e-5 --m 300 --n 257 --k 129 --tile 64 --iter 3
# Both splits and mixed block widths (sub-tasks of different sizes, seed 001 §2.2.3), ragged.
expect_check "float 2d split, ragged" 1e-5 --split 2d --m 1000 --n 700 --k 900 --tile 256 --iter 3
expect_check "double 3d split, ragged" 1e-12 --precision d --split 3d --m 1000 --n 700 --k 900 --tile 256 --iter 2
expect_check "float 2d, mixed tiles" 1e-5 --split 2d --m 1000 --n 700 --k 900 --tiles 256,128,64,64 --iter 2
expect_check "double 3d, mixed tiles" 1e-12 --precision d --split 3d --m 531 --n 300 --k 257 --tiles 100,37,1 --iter 2
# TF32 on GPUs: inputs rounded to 10 mantissa bits (unit roundoff 2^-11), so 5e-3 (CPUs: FP32).
expect_check "float 2d, mixed tiles, --tf32" 5e-3 --m 700 --n 555 --k 1500 --tiles 256,128 --tf32 --iter 2
STARPU_SCHED=dtps expect_check "double 2d, mixed tiles, under dtps" 1e-12 --precision d --m 600 --n 333 --k 250 --tiles 128,64,32 --iter 3
STARPU_SCHED=fnn-dtps expect_check "float 2d, mixed tiles, under fnn-dtps" 1e-5 --m 600 --n 333 --k 250 --tiles 128,64,32 --iter 3
"$GEMM" --size 300 --tiles 128,64,32 --iter 1 >"$dir/out.txt" 2>&1
if grep -q '^gemm: sgemm .* split 2d, tiles 128,64,32: 4 x 4 C blocks over the whole k, 16 tasks; FP32 (no TF32); A and B registered once' "$dir/out.txt" \
   && grep -q '^sub-tasks: .* eq. (5) weight' "$dir/out.txt" && grep -q ' split=2d tiles=128,64,32 math=fp32 ' "$dir/out.txt"; then
  pass "header names the split, the tiles and the math"
else fail "header line"; cat "$dir/out.txt"; fi
"$GEMM" --size 300 --split 3d --tile 128 --iter 1 --tf32 >"$dir/out.txt" 2>&1
if grep -q 'split 3d, tiles 128: 3 x 3 x 3 blocks, 27 tasks; TF32 tensor cores on GPUs' "$dir/out.txt" \
   && grep -q ' math=tf32 ' "$dir/out.txt"; then pass "--tf32 and 3d in the header"
else fail "--tf32 header"; cat "$dir/out.txt"; fi

if "$GEMM" --help >"$dir/out.txt" 2>&1 && grep -q '^usage: gemm' "$dir/out.txt"; then pass "--help"
else fail "--help"; cat "$dir/out.txt"; fi
"$GEMM" --size 64 --iter 3 >"$dir/out.txt" 2>&1
if [[ $(grep -c '^iter ' "$dir/out.txt") -eq 3 ]] && grep -q '^iter 0: .*(calibration)' "$dir/out.txt" \
   && grep -q 'iters=2' "$dir/out.txt"; then pass "three iterations, the first calibrates"
else fail "iteration lines"; cat "$dir/out.txt"; fi

expect_fail "zero size" --size 0
expect_fail "negative size" --size -5
expect_fail "negative m" --m -1 --n 4 --k 4
expect_fail "zero tile" --size 64 --tile 0
expect_fail "negative tile" --size 64 --tile -8
expect_fail "zero iterations" --size 64 --iter 0
expect_fail "size not a number" --size abc
expect_fail "size with trailing junk" --size 12x
expect_fail "size empty" --size ""
expect_fail "size in exponent form" --size 1e3
expect_fail "size past int" --m 2147483648 --n 2 --k 2
expect_fail "size past long" --size 99999999999999999999999
expect_fail "missing value" --size
expect_fail "unknown precision" --precision h
expect_fail "unknown flag" --frobnicate
expect_fail "stray argument" 64
expect_fail "--size with --m" --size 64 --m 32 --n 32 --k 32
expect_fail "--m without --n and --k" --m 32
expect_fail "too large for memory (m n overflows 32 bits)" --size 3000000
expect_fail "m n k overflow 64 bits in bytes" --m 2147483647 --n 2147483647 --k 2147483647
expect_fail "too many tile tasks" --size 20000 --tile 1
expect_fail "unknown split" --size 64 --split 4d
expect_fail "empty split" --size 64 --split ""
expect_fail "tiles empty" --size 64 --tiles ""
expect_fail "tiles with an empty width" --size 64 --tiles 32,,16
expect_fail "tiles with a trailing comma" --size 64 --tiles 32,16,
expect_fail "tiles zero width" --size 64 --tiles 32,0
expect_fail "tiles negative width" --size 64 --tiles 32,-16
expect_fail "tiles not numbers" --size 64 --tiles mix
expect_fail "tiles past int" --size 64 --tiles 32,4294967296
expect_fail "too many tile widths" --size 64 --tiles "$(seq -s, 1 65)"
expect_fail "--tile with --tiles" --size 64 --tile 32 --tiles 32,16
expect_fail "--tf32 in double" --size 64 --precision d --tf32
expect_fail "too many mixed-tile tasks" --size 2000 --split 3d --tiles 1,2
STARPU_SCHED=nosuchpolicy expect_fail "unknown policy" --size 64
# With STARPU_SCHED_LIB the name is checked against the library's list and StarPU's too.
LIB=${2:-$(dirname "$GEMM")/../lib/libfnndtps.so}
if [[ -f $LIB ]]; then
  STARPU_SCHED_LIB=$LIB STARPU_SCHED=nosuchpolicy expect_fail "unknown policy with STARPU_SCHED_LIB" --size 64
  grep -q "fnn-dtps.*eager" "$dir/err.txt" && pass "the line names the library's and StarPU's policies" \
    || fail "the line names no policies: $(cat "$dir/err.txt")"
else
  echo "note: no $LIB; the STARPU_SCHED_LIB case is not run"
fi
STARPU_NCUDA=99 expect_fail "more GPUs asked for than exist" --size 64

echo "gemm-cli: $passed passed, $fails failed"
[[ $fails -eq 0 ]]
