#!/usr/bin/env bash
# gemm-mpi across 1 to 4 ranks on this machine (DESIGN §11): ragged products equal the
# reference (float within 1e-5, double within 1e-12, max|C - C_ref| / max|C_ref|, as
# tests/cli_gemm.sh) under our policies and a built-in; every rank reports its blocks and they
# add up to all of C; a rank whose worker is slowed 2x gets about a third of the blocks, by the
# model's speeds and by seed 001's DTPS between two ranks, and well below a third by DTPS over
# three; bad input ends with one `gemm-mpi:` line and exit status 2.
#   bash tests/mpi_gemm.sh <gemm-mpi binary> <mpiexec>
set -u
BIN=$1 MPIEXEC=${2:-mpirun}
source "$(dirname "$0")/mpi_common.sh"

# expect_check NAME RANKS TOL ARGS...
expect_check() {
  local name=$1 np=$2 tol=$3; shift 3
  run "$np" "$BIN" "$@" --check; local rc=$?
  local err; err=$(sed -n 's/^check: max relative error \([^ ]*\) .*/\1/p' "$dir/out.txt")
  local ranks; ranks=$(grep -c '^rank [0-9]*: [0-9]* of [0-9]* blocks' "$dir/out.txt")
  local sum; sum=$(awk '/^rank [0-9]*: [0-9]* of [0-9]* blocks/ { s += $3; t = $5 } END { print s "/" t }' "$dir/out.txt")
  if [[ $rc -eq 0 && -n $err && $ranks -eq $np && ${sum%/*} == "${sum#*/}" ]] && awk -v e="$err" -v t="$tol" 'BEGIN { exit !(e <= t) }' \
     && grep -q "^RESULT gemm-mpi .* ranks=$np " "$dir/out.txt"; then
    pass "$name: $np ranks, error $err <= $tol, blocks $sum"
  else
    fail "$name: $np ranks, exit $rc, error '$err' (tolerance $tol), $ranks rank lines, blocks $sum:"
    cat "$dir/out.txt" "$dir/err.txt"
  fi
}

for np in 1 2 3 4; do
  expect_check "float 300x250x170, tile 64" "$np" 1e-5 --m 300 --n 250 --k 170 --tile 64 --iter 2
done
expect_check "double 130x97x61, tile 25" 3 1e-12 --precision d --m 130 --n 97 --k 61 --tile 25 --iter 1
for policy in dtps boyer dmdas; do
  STARPU_SCHED=$policy expect_check "float under $policy" 2 1e-5 --m 200 --n 190 --k 90 --tile 48 --iter 2
done

# Node shares from the same model: rank 1's worker emulated 2x slower (FNNDTPS_SLOWDOWN on that
# rank only) gets about a third of C's blocks once the first products have measured it; with
# --shares cyclic, half.
# expect_share NAME LO HI ARGS...: over 2 ranks, rank 1 slowed (run_slowed); with
# runner=run_slowed3 slowed=2, over 3, rank 2 slowed; with attempts=N, up to N runs, the first in
# the band passing.
expect_share() {
  local name=$1 lo=$2 hi=$3 try; shift 3
  for ((try = 1; try <= ${attempts:-1}; try++)); do
    "${runner:-run_slowed}" "$BIN" "$@" --check; local rc=$?
    local share; share=$(slowed_share blocks "${slowed:-1}")
    if [[ $rc -eq 0 && -n $share ]] && grep -q '^check: .*: ok' "$dir/out.txt" && within "$share" "$lo" "$hi"; then
      pass "$name: the slowed rank's share of the blocks $share, within [$lo, $hi] (run $try)"; return
    fi
    echo "     $name, run $try: exit $rc, the slowed rank's share '$share' (want [$lo, $hi])"
  done
  fail "$name: exit $rc, the slowed rank's share '$share' (want [$lo, $hi]):"; cat "$dir/out.txt" "$dir/err.txt"
}
# Two ranks on 2 cores: now and then a run's times are the machine's noise more than the emulated
# slowdown (which sleeps): the dtps share fell to 0.06 in 1 of ~6 ctest runs, and stayed in
# [0.24, 0.37] in 38 runs alone; the model's to 0.19 under a build beside it. So up to two runs
# each, the first in the band passing; an even split fails both.
attempts=2 expect_share "model shares, rank 1 slowed 2x" 0.22 0.42 --size 768 --tile 64 --iter 5
expect_share "cyclic shares, rank 1 slowed 2x" 0.5 0.5 --size 768 --tile 64 --iter 2 --shares cyclic
# Seed 001's DTPS between the two ranks: the measured times, not the model, correct the split.
attempts=2 expect_share "dtps shares, rank 1 slowed 2x" 0.2 0.42 --size 768 --tile 64 --iter 8 --shares dtps
# Over 3 ranks, by halves (rank 0 against ranks 1-2, then rank 1 against rank 2): the slowed rank
# settles at half the others' share, 0.2: 0.14-0.26 of the blocks in 27 runs on this machine
# idle. A load beside it (another build) masks the emulated slowdown, which sleeps: with one core
# busy, 0.12-0.44 in 10 runs; so up to three runs, the first in [0.05, 0.32] passing. An even
# split (1/3) fails every run.
attempts=3 runner=run_slowed3 slowed=2 expect_share "dtps shares over 3 ranks, rank 2 slowed 2x" 0.05 0.32 \
  --size 768 --tile 64 --iter 8 --shares dtps
if grep -q '^dtps: rank 0 .* ranks 1-2 ' "$dir/out.txt" && grep -q '^dtps: ranks 1-2: rank 1 ' "$dir/out.txt"; then
  pass "dtps over 3 ranks: a line for rank 0 against ranks 1-2 and one for ranks 1-2"
else fail "dtps over 3 ranks: no line for each node:"; cat "$dir/out.txt"; fi

# A rank that dies (here before it even starts MPI) ends the job with a non-zero status, not a
# hang: the launcher aborts the others.
timeout -k 5 120 "$MPIEXEC" -np 1 "$BIN" --size 512 --tile 64 --iter 50 : -np 1 sh -c 'exit 3' \
  >"$dir/out.txt" 2>"$dir/err.txt"; rc=$?
if [[ $rc -ne 0 && $rc -ne 124 && $rc -ne 137 ]]; then pass "a rank dies: the job ends with status $rc"
else fail "a rank dies: status $rc (124/137: it hung)"; cat "$dir/err.txt"; fi

# MPI itself failing to start (here: no such point-to-point layer) ends the job with a non-zero
# status, not a hang. OpenMPI 4.1 aborts inside MPI_Init with its own message, before the
# program could say anything (an initial error handler that returns is MPI 4, OpenMPI 5); its
# words vary from run to run, so only the status is checked.
OMPI_MCA_pml=no-such-pml timeout -k 5 120 "$MPIEXEC" -np 2 "$BIN" --size 256 --tile 64 --iter 1 \
  >"$dir/out.txt" 2>"$dir/err.txt"; rc=$?
if [[ $rc -ne 0 && $rc -ne 124 && $rc -ne 137 ]]; then
  pass "MPI fails to start: the job ends with status $rc"
else fail "MPI fails to start: status $rc (124/137: it hung)"; cat "$dir/err.txt"; fi

# expect_fail NAME ARGS...: exit 2 and one `gemm-mpi:` line (mpirun may add its own).
expect_fail() {
  local name=$1; shift
  run 2 "$BIN" "$@"; local rc=$?
  local lines; lines=$(grep -c '^gemm-mpi: ' "$dir/err.txt")
  if [[ $rc -eq 2 && $lines -eq 1 ]]; then pass "$name: $(grep '^gemm-mpi: ' "$dir/err.txt")"
  else fail "$name: exit $rc, $lines gemm-mpi lines:"; cat "$dir/err.txt"; fi
}
expect_fail "tile 0" --tile 0
expect_fail "more blocks than StarPU can hold" --size 100000 --tile 1
expect_fail "unknown option" --split 2d
expect_fail "bad precision" --precision h
expect_fail "bad shares" --shares even
STARPU_SCHED=nosuch expect_fail "unknown policy"

echo "$passed passed, $fails failed"
[[ $fails -eq 0 ]]
