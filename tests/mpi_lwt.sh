#!/usr/bin/env bash
# lwt2d-mpi across 1 to 4 ranks on this machine (DESIGN §11): the forward and inverse
# transforms equal one process's (`lwt2d forward`/`inverse` with the same units) bit for bit,
# also for a height the rank count does not divide, and whether each rank reads its own rows of
# the input or rank 0 sends them (a rank that cannot read the file); every rank runs tasks; a rank slowed 2x gets
# its share of the ranks' speeds (--shares model) or DTPS's from their times (dtps, over 2 and
# 3 ranks), well below half (a third over 3); R ranks on a surface too small for R units at the
# levels asked (seed 002 eq. 6.8) and other bad input end with one `lwt2d-mpi:` line and exit
# status 2.
#   bash tests/mpi_lwt.sh <lwt2d-mpi binary> <lwt2d binary> <mpiexec>
set -u
BIN=$1 LWT2D=$2 MPIEXEC=${3:-mpirun}
source "$(dirname "$0")/mpi_common.sh"

# expect_same NAME RANKS SURFACE LEVELS UNITS [ARGS...]: forward, then inverse of its output,
# each equal to one process's bytes, and every rank ran tasks.
expect_same() {
  local name=$1 np=$2 x=$3 levels=$4 units=$5 cmd; shift 5
  for cmd in forward inverse; do
    local in=$x; [[ $cmd == inverse ]] && in=$dir/one-forward.npy
    "$LWT2D" "$cmd" --in "$in" --out "$dir/one-$cmd.npy" --levels "$levels" --units "$units" >/dev/null 2>&1
    run "$np" "$BIN" "$cmd" --in "$in" --out "$dir/mpi-$cmd.npy" --levels "$levels" --units "$units" "$@"; local rc=$?
    local busy; busy=$(grep -c '^rank [0-9]*: [1-9][0-9]* of [0-9]* units, planned share [0-9.]*, [1-9][0-9]* tasks' "$dir/out.txt")
    if [[ $rc -eq 0 && $busy -eq $np ]] && cmp -s "$dir/one-$cmd.npy" "$dir/mpi-$cmd.npy"; then
      pass "$name, $cmd: $np ranks, equal to one process's bytes, $busy ranks ran tasks"
    else
      fail "$name, $cmd: $np ranks, exit $rc, $busy ranks ran tasks, outputs $(cmp "$dir/one-$cmd.npy" "$dir/mpi-$cmd.npy" 2>&1):"
      cat "$dir/out.txt" "$dir/err.txt"
    fi
  done
}

"$LWT2D" generate --size 300x200 --seed 2 --out "$dir/even.npy" >/dev/null 2>&1
"$LWT2D" generate --size 299x131 --seed 3 --out "$dir/odd.npy" >/dev/null 2>&1
for np in 1 2 3 4; do expect_same "300 x 200, 3 levels, 8 units" "$np" "$dir/even.npy" 3 8; done
expect_same "299 x 131 (odd), 3 levels, 7 units" 3 "$dir/odd.npy" 3 7
expect_same "299 x 131 (odd), 2 levels, 6 units" 4 "$dir/odd.npy" 2 6
# The runs above gathered on rank 0 (ranks on one host); --scatter: each rank writes its own
# rows (a forward's Mallat blocks) into the one file.
for np in 2 3 4; do expect_same "300 x 200, 3 levels, 8 units, --scatter" "$np" "$dir/even.npy" 3 8 --scatter; done
expect_same "299 x 131 (odd), 3 levels, 7 units, --scatter" 3 "$dir/odd.npy" 3 7 --scatter
# A rank that cannot open the file rank 0 makes (here: another working folder, the output named
# relatively) says so in one note, and rank 0 gathers: the same bytes.
mkdir -p "$dir/elsewhere"
timeout -k 5 120 "$MPIEXEC" -np 1 -wdir "$dir" "$BIN" forward --in "$dir/odd.npy" --out rel.npy --levels 3 --units 7 --scatter : \
  -np 1 -wdir "$dir/elsewhere" "$BIN" forward --in "$dir/odd.npy" --out rel.npy --levels 3 --units 7 --scatter \
  >"$dir/out.txt" 2>"$dir/err.txt"; rc=$?
"$LWT2D" forward --in "$dir/odd.npy" --out "$dir/one-rel.npy" --levels 3 --units 7 >/dev/null 2>&1
notes=$(grep -c '^lwt2d-mpi: note: rank 1 cannot write into the output' "$dir/err.txt")
if [[ $rc -eq 0 && $notes -eq 1 && ! -e $dir/elsewhere/rel.npy ]] && cmp -s "$dir/one-rel.npy" "$dir/rel.npy"; then
  pass "rank 1 cannot open the output: one note, rank 0 gathers, one process's bytes"
else fail "rank 1 cannot open the output: exit $rc, $notes notes:"; cat "$dir/out.txt" "$dir/err.txt"; fi
# A rank whose writes fail (files limited to 1 KiB on rank 1): one line, status 2, no file under
# the output's name and no temporary left. That rank keeps StarPU's files in a copy of the
# test's: StarPU saves its models at shutdown under the same limit, truncated, and a truncated
# model (or bus calibration, were it made there) aborts every later run that reads it.
mkdir -p "$dir/limited-home" && cp -r "$dir/.starpu" "$dir/limited-home/"
timeout -k 5 120 "$MPIEXEC" -np 1 "$BIN" forward --in "$dir/even.npy" --out "$dir/limited.npy" --levels 3 --units 8 \
  --scatter : -np 1 env STARPU_HOME="$dir/limited-home" bash -c "trap '' XFSZ; ulimit -f 1; exec \"\$0\" \"\$@\"" "$BIN" forward --in "$dir/even.npy" \
  --out "$dir/limited.npy" --levels 3 --units 8 --scatter >"$dir/out.txt" 2>"$dir/err.txt"; rc=$?
lines=$(grep -c '^lwt2d-mpi: ' "$dir/err.txt")
left=$(ls "$dir" | grep -c '^limited\.npy')
if [[ $rc -eq 2 && $lines -eq 1 && $left -eq 0 ]]; then pass "a rank's writes fail: exit 2, $(grep '^lwt2d-mpi: ' "$dir/err.txt")"
else fail "a rank's writes fail: exit $rc, $lines lwt2d-mpi lines, $left files named limited.npy*:"; cat "$dir/err.txt"; ls "$dir"; fi
# Each rank reads its own units' rows of the input (seed 002's layout: no strip crosses; the
# runs above, forward and inverse, did so); a rank that cannot read the file says so in one
# note, rank 0 sends it the strips, and the coefficients are the same.
note() { grep -c '^lwt2d-mpi: note: rank 1 cannot read the input' "$dir/err.txt"; }
"$LWT2D" forward --in "$dir/even.npy" --out "$dir/one-forward.npy" --levels 3 --units 8 >/dev/null 2>&1
run 2 "$BIN" forward --in "$dir/even.npy" --out "$dir/mpi-local.npy" --levels 3 --units 8; rc=$?
if [[ $rc -eq 0 && $(note) -eq 0 ]] && cmp -s "$dir/one-forward.npy" "$dir/mpi-local.npy"; then
  pass "2 ranks reading their own rows: no note, one process's bytes"
else fail "2 ranks reading their own rows: exit $rc, $(note) notes:"; cat "$dir/err.txt"; fi
# FNNDTPS_TRACE across ranks: each rank its own file (FILE.rank<r>.json), each with its tasks.
FNNDTPS_TRACE=$dir/t.json STARPU_SCHED=fnn-dtps run 2 -x FNNDTPS_TRACE -x STARPU_SCHED "$BIN" forward --in "$dir/even.npy" \
  --out "$dir/mpi-traced.npy" --levels 3 --units 8; rc=$?
if [[ $rc -eq 0 && ! -e $dir/t.json ]] && grep -q '"ph":"X"' "$dir/t.rank0.json" && grep -q '"ph":"X"' "$dir/t.rank1.json"; then
  pass "FNNDTPS_TRACE over 2 ranks: t.rank0.json and t.rank1.json, each with tasks"
else fail "FNNDTPS_TRACE over 2 ranks: exit $rc:"; ls "$dir"; cat "$dir/err.txt"; fi
timeout -k 5 120 "$MPIEXEC" -np 1 "$BIN" forward --in "$dir/even.npy" --out "$dir/mpi-sent.npy" --levels 3 --units 8 : \
  -np 1 "$BIN" forward --in "$dir/none.npy" --out "$dir/mpi-sent.npy" --levels 3 --units 8 >"$dir/out.txt" 2>"$dir/err.txt"
rc=$?
if [[ $rc -eq 0 && $(note) -eq 1 ]] && cmp -s "$dir/one-forward.npy" "$dir/mpi-sent.npy"; then
  pass "rank 1 cannot read the input: $(grep '^lwt2d-mpi: note' "$dir/err.txt" | cut -c1-90)..., one process's bytes"
else fail "rank 1 cannot read the input: exit $rc, $(note) notes:"; cat "$dir/out.txt" "$dir/err.txt"; fi

# Node shares from the same model: rank 1's worker emulated 2x slower; once a transform has
# measured it, its units are its planned share (within the one unit that contiguous groups
# round by) and well below half; even: half. The output is still one process's. (Its
# measured speed comes out 0.27-0.36 of the other's here, not 1/2: on this 2-core machine each
# rank's worker, main and MPI progression threads share the cores.)
# expect_share NAME LO HI REPEAT ARGS...: over 2 ranks, rank 1 slowed (run_slowed); with
# runner=run_slowed3 slowed=2, over 3, rank 2 slowed.
expect_share() {
  local name=$1 lo=$2 hi=$3 repeat=$4 r=${slowed:-1}; shift 4
  "${runner:-run_slowed}" "$BIN" forward --in "$dir/wide.npy" --out "$dir/mpi-share.npy" --levels 3 --units 24 \
    --repeat "$repeat" "$@"
  local rc=$? share planned
  share=$(slowed_share units "$r")
  planned=$(awk -v r="$r:" '$1 == "rank" && $2 == r && / units, planned share / { sub(",", "", $9); print $9 }' \
    "$dir/out.txt")
  if [[ $rc -eq 0 && -n $share && -n $planned ]] && cmp -s "$dir/one-share.npy" "$dir/mpi-share.npy" \
     && within "$planned" "$lo" "$hi" && within "$share" "$(awk -v p="$planned" 'BEGIN { print p - 1 / 24 }')" \
          "$(awk -v p="$planned" 'BEGIN { print p + 1 / 24 }')"; then
    pass "$name: the slowed rank's share of the units $share, of the speeds $planned (within [$lo, $hi])"
  else
    fail "$name: exit $rc, the slowed rank's share of the units '$share', of the speeds '$planned' (want [$lo, $hi]):"
    cat "$dir/out.txt" "$dir/err.txt"
  fi
}
"$LWT2D" generate --size 1024x512 --seed 4 --out "$dir/wide.npy" >/dev/null 2>&1
"$LWT2D" forward --in "$dir/wide.npy" --out "$dir/one-share.npy" --levels 3 --units 24 >/dev/null 2>&1
expect_share "model shares, rank 1 slowed 2x" 0.1 0.45 5 --shares model
expect_share "even shares, rank 1 slowed 2x" 0.5 0.5 5 --shares even
# dtps (2 ranks' default): the model's split twice, then DTPS rounds from the ranks' measured
# times (when each one's results reached rank 0: MPI transfers count). The first round moves units
# away from the rank that finished later (|m| > 0.1) or keeps the split; later rounds let the
# makespan guard try rank 0 alone, which on this machine beats both ranks (a transform alone takes
# 5-8 ms, beside the slowed rank 25-60), so the slowed rank ends with few units or none. The model's
# first split is noisy here (the slowed rank got 0.125-0.625 of the units): one round from it is
# not enough, so the run has four.
expect_share "dtps shares, rank 1 slowed 2x" 0 0.45 7
round=$(grep -m1 '^dtps: ' "$dir/out.txt")
if awk '/^dtps: / { t0 = $4; t1 = $11; m = $16; before = $(NF - 2); after = $NF
       ok = (m > 0.1 || m < -0.1) ? ((t1 > t0) == (after > before) && after != before) : after == before
       exit !ok }' <<<"$round" && [[ -n $round ]]; then
  pass "dtps round follows the later rank: $round"
else fail "dtps round: '$round':"; cat "$dir/out.txt"; fi
# dtps over 3 ranks (the default), rank 2 slowed 2x: by halves, rank 0 against ranks 1-2, then
# rank 1 against rank 2, a line each a round. As with 2 ranks the guard may end with rank 0
# alone (rank 2 got 0-0.17 of the units in 20 runs here); an even split (1/3) fails.
runner=run_slowed3 slowed=2 expect_share "dtps shares over 3 ranks, rank 2 slowed 2x" 0 0.25 7
if grep -q '^dtps: rank 0 .* ranks 1-2 ' "$dir/out.txt" && grep -q '^dtps: ranks 1-2: ' "$dir/out.txt"; then
  pass "dtps over 3 ranks: a line for rank 0 against ranks 1-2 and one for ranks 1-2"
else fail "dtps over 3 ranks: no line for each node:"; cat "$dir/out.txt"; fi
# expect_fail NAME RANKS ARGS...: exit 2, one `lwt2d-mpi:` line (mpirun may add its own), no output.
expect_fail() {
  local name=$1 np=$2; shift 2
  rm -f "$dir/bad.npy"
  run "$np" "$BIN" "$@"; local rc=$?
  local lines; lines=$(grep -c '^lwt2d-mpi: ' "$dir/err.txt")
  if [[ $rc -eq 2 && $lines -eq 1 && ! -e $dir/bad.npy ]]; then pass "$name: $(grep '^lwt2d-mpi: ' "$dir/err.txt")"
  else fail "$name: exit $rc, $lines lwt2d-mpi lines:"; cat "$dir/err.txt"; fi
}
"$LWT2D" generate --size 64x64 --out "$dir/small.npy" >/dev/null 2>&1
expect_fail "4 ranks, 64 rows at 5 levels (eq. 6.8)" 4 forward --in "$dir/small.npy" --out "$dir/bad.npy" --levels 5
expect_fail "missing input" 2 forward --in "$dir/none.npy" --out "$dir/bad.npy"
expect_fail "unknown command" 2 transform --in "$dir/even.npy" --out "$dir/bad.npy"
expect_fail "output over the input" 2 forward --in "$dir/even.npy" --out "$dir/even.npy"
expect_fail "bad shares" 2 forward --in "$dir/even.npy" --out "$dir/bad.npy" --shares cyclic
expect_fail "--gather and --scatter" 2 forward --in "$dir/even.npy" --out "$dir/bad.npy" --gather --scatter

# No run left a temporary beside its output.
# A rank's batches are its own: rank 1 slowed 16x and half the units each, rank 0 waits on its
# halos and for the job's end; its policy's batches (FNNDTPS_VERBOSE on rank 0) end when its own
# units' results were complete and leave out its waits with nothing in flight. After the first
# transform the program ends each batch (one a transform): the last two, transforms 1 and 2,
# each last under 0.6 of the transforms' median (rank 1's part alone takes most of it; counted
# up to the job's end they took 0.74-0.84 of it).
timeout -k 5 120 "$MPIEXEC" -np 1 env FNNDTPS_VERBOSE=1 STARPU_SCHED=dtps "$BIN" forward --in "$dir/wide.npy" \
  --out "$dir/mpi-wait.npy" --levels 3 --units 24 --shares even --repeat 3 : -np 1 env FNNDTPS_SLOWDOWN=0:16 \
  STARPU_SCHED=dtps "$BIN" forward --in "$dir/wide.npy" --out "$dir/mpi-wait.npy" --levels 3 --units 24 --shares even \
  --repeat 3 >"$dir/out.txt" 2>&1; rc=$?
median=$(sed -n 's/^RESULT .* median_ms=\([0-9.]*\).*/\1/p' "$dir/out.txt")
ratios=$(grep '^fnndtps: batch [0-9]* .*makespan' "$dir/out.txt" | tail -2 |
         awk -v t="$median" '{ for (i = 1; i <= NF; i++) if ($i == "makespan") printf "%.3f ", $(i + 1) / t }')
if [[ $rc -eq 0 && -n $median && $(wc -w <<<"$ratios") -eq 2 ]] &&
   awk -v r="$ratios" 'BEGIN { n = split(r, a, " "); for (i = 1; i <= n; i++) if (a[i] >= 0.6) exit 1 }'; then
  pass "rank 0 beside a rank slowed 16x: its last two batches last $ratios of the transform's median (its own part)"
else
  fail "rank 0 beside a rank slowed 16x: exit $rc, its last two batches over the median $median ms: '$ratios' (each under 0.6):"
  grep -E "makespan|^forward|^RESULT" "$dir/out.txt"
fi
tmps=$(ls "$dir" "$dir/elsewhere" | grep -c '\.tmp-')
if [[ $tmps -eq 0 ]]; then pass "no temporary left by any run"; else fail "$tmps temporaries left:"; ls "$dir"; fi

echo "$passed passed, $fails failed"
[[ $fails -eq 0 ]]
