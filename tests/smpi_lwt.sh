#!/usr/bin/env bash
# lwt2d-mpi in simulation (SimGrid's SMPI; DESIGN §8 and §11): StarPU-MPI's ranks as simulated
# processes on simulated nodes of different platforms, the GPU machine (h200: 1 H200 + 16 cores)
# and seed 000's node (seed2017: GTX 750 Ti + GTX 1080 + 4 cores), both made from the calibrated
# models (bench/smpi.sh platform) and joined by simulated 100 Gb/s links. Each rank's
# StarPU simulates its own node, so its workers are its platform's; node shares come from the
# ranks' speeds (--shares model: the H200 node, the faster, plans most of the units and runs
# about its planned share), DTPS's first round judged moves units away from the later rank, and
# simulated time is deterministic (the same run twice, the same times), bad input ends the
# job with one line and status 2, and two alike nodes (h200 twice) start DTPS from even shares.
#   smpi_lwt.sh LWT2D_MPI STARPU_SMPIRUN REPO PYTHON
set -uo pipefail
bin=$1 smpirun=$2 repo=$3 python=$4
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
fails=0; passed=0
pass() { passed=$((passed + 1)); echo "ok   $*"; }
fail() { fails=$((fails + 1)); echo "FAIL $*"; }
PYTHON=$python bash "$repo/bench/smpi.sh" platform "$dir" h200 seed2017 || { echo "FAIL bench/smpi.sh platform"; exit 1; }
# run ARGS...: one simulated job on the nodes of $nodes (default: $dir's, rank 0 on h200 and rank 1
# on seed2017; -hostfile-platform: each host's models); its output in $dir/out.txt, SimGrid's and
# StarPU's messages in $dir/err.txt.
run() {
  local p=${nodes:-$dir}
  env $(cat "$p/env") timeout -k 5 300 "$smpirun" -platform "$p/net.xml" -hostfile "$p/hosts" $(cat "$p/flag") \
    "$bin" forward --size 16384 --levels 4 --units 64 "$@" >"$dir/out.txt" 2>"$dir/err.txt"
}
# field RANK N: the Nth field of rank RANK's line "rank R: U of 64 units, planned share S, ...".
field() { awk -v r="rank $1:" -v n="$2" 'index($0, r) == 1 { gsub(",", ""); print $n }' "$dir/out.txt"; }

run --repeat 3 --shares model; rc=$?
cuda0=$(grep -o '^rank 0: .* \([0-9]*\) CUDA workers' "$dir/out.txt" | awk '{print $(NF - 2)}')
cuda1=$(grep -o '^rank 1: .* \([0-9]*\) CUDA workers' "$dir/out.txt" | awk '{print $(NF - 2)}')
if [[ $rc -eq 0 && $cuda0 == 1 && $cuda1 == 2 ]]; then pass "each rank simulates its node: rank 0 (h200) $cuda0 CUDA worker, rank 1 (seed2017) $cuda1"
else fail "each rank's node: exit $rc, CUDA workers '$cuda0' and '$cuda1' (want 1 and 2):"; cat "$dir/out.txt"; tail -5 "$dir/err.txt"; fi
units0=$(field 0 3) planned0=$(field 0 9)
if [[ -n $units0 && -n $planned0 ]] && awk -v u="$units0" -v p="$planned0" 'BEGIN { exit !(p + 0 >= 0.6 && u + 0 >= 32) }'; then
  pass "model shares: the H200 node plans $planned0 of the work and runs $units0 of 64 units"
else fail "model shares: rank 0 planned '$planned0', ran '$units0' units (want >= 0.6 and >= 32):"; cat "$dir/out.txt"; fi

# A round in which a rank's policy warmed up a co-run is not judged (the H200's, in the second
# transform here): the first round judged follows the later rank.
run --repeat 5; rc=$?
first=$(grep -m1 '^RESULT' "$dir/out.txt")
round=$(grep -m1 '^dtps: rank 0 [0-9]' "$dir/out.txt")
if [[ $rc -eq 0 && -n $round ]] && awk '{ t0 = $4; t1 = $11; m = $16; before = $(NF - 2); after = $NF
       ok = (m > 0.1 || m < -0.1) ? ((t1 > t0) == (after > before) && after != before) : after == before
       exit !ok }' <<<"$round"; then pass "dtps round follows the later rank: $round"
else fail "dtps round: exit $rc, '$round':"; cat "$dir/out.txt"; tail -5 "$dir/err.txt"; fi
run --repeat 5
again=$(grep -m1 '^RESULT' "$dir/out.txt")
if [[ -n $first && $first == "$again" ]]; then pass "deterministic: $first"
else fail "the same run twice: '$first' then '$again'"; fi
# Bad input: one line of ours and status 2 for the whole simulated job (smpirun adds a line of
# its own), whether found before MPI starts (an unknown option) or after (the plan's limit).
for bad in "--bogus" "--levels 40"; do
  run $bad; rc=$?
  lines=$(grep -c '^lwt2d-mpi: ' "$dir/err.txt")
  if [[ $rc -eq 2 && $lines -eq 1 ]]; then pass "bad input $bad: exit 2, $(grep '^lwt2d-mpi: ' "$dir/err.txt")"
  else fail "bad input $bad: exit $rc, $lines lwt2d-mpi lines (want 2 and 1):"; cat "$dir/err.txt"; fi
done
# Two alike nodes (h200 twice: the same workers, each on a host of its own): under dtps the
# shares start even, not from the live speeds of the first transform, and DTPS's first round
# (after the second transform) judges that split.
PYTHON=$python bash "$repo/bench/smpi.sh" platform "$dir/alike" h200 h200 >/dev/null || fail "bench/smpi.sh platform h200 h200"
nodes=$dir/alike run --repeat 3; rc=$?
round=$(grep -m1 '^dtps: ' "$dir/out.txt")
if [[ $rc -eq 0 && $round == "dtps: rank 0 "*" for 32 units, rank 1 "*" for 32,"* ]]; then pass "alike nodes start even: $round"
else fail "alike nodes: exit $rc, first round '$round' (want 32 units each):"; cat "$dir/out.txt"; tail -5 "$dir/err.txt"; fi

echo "$passed passed, $fails failed"
[[ $fails -eq 0 ]]
