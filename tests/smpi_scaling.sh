#!/usr/bin/env bash
# bench/smpi.sh scaling on 1 and 2 simulated h200 nodes: one row per case and count with a time,
# the first count the reference (speed-up and efficiency 1, no bytes sent), the second's bound
# the halos each node sends its neighbour (outputs stay on their ranks); gemm-mpi's rows alike,
# its bound the A blocks the first product sends; the h200 + seed2017 pair of both apps; bad
# COUNTS or APPS: one line, exit 2.
#   smpi_scaling.sh REPO BUILD_SMPI PYTHON
set -uo pipefail
repo=$1 build=$2 python=$3
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
fails=0; passed=0
check() { local what=$1; shift; if "$@"; then passed=$((passed + 1)); echo "ok   $what"; else fails=$((fails + 1)); echo "FAIL $what"; fi; }
PYTHON=$python bash "$repo/bench/smpi.sh" scaling "$build" "$dir/out" 1,2 >"$dir/table" 2>"$dir/err"; rc=$?
check "scaling 1,2 exits 0 (got $rc)" test $rc -eq 0
[[ $rc -eq 0 ]] || tail -5 "$dir/err"
rows() { awk -v n="$1" '$1 !~ /^gemm/ && $3 == n && $4 + 0 > 0' "$dir/table"; }
gemm_rows() { awk -v n="$1" '$1 ~ /^gemm-/ && $3 == n && $4 + 0 > 0 && $5 + 0 > 0' "$dir/table"; }
check "three cases on one node, each with a time" test "$(rows 1 | wc -l)" -eq 3
check "three cases on two nodes, each with a time" test "$(rows 2 | wc -l)" -eq 3
check "one node is the reference: speed-up and efficiency 1, nothing sent" \
  test "$(rows 1 | awk '$5 == "1.00" && $6 == "1.00" && $7 == "0.000"' | wc -l)" -eq 3
# 4 levels of 4-row halos, 16384 columns: 4 x (16384 + 8192 + 4096 + 2048) x 4 B over 12.5 GB/s,
# 0.039 ms; 32768 columns: 0.079.
check "two nodes' bound: the halos to the neighbour" \
  bash -c "awk '\$1 == \"strong\" && \$3 == 2 {print \$7}' '$dir/table' | tr '\n' ' ' | grep -qx '0.039 0.079 '"
check "weak scaling doubles the rows" grep -q "^weak    32768x16384      2" "$dir/table"
check "the table says it is simulated" grep -q "^(simulated:" "$dir/table"
check "gemm strong and weak on one and two nodes, each with a time and a rate" \
  test "$(gemm_rows 1 | wc -l)" -eq 2 -a "$(gemm_rows 2 | wc -l)" -eq 2
check "gemm on one node is the reference: efficiency 1, nothing sent" \
  test "$(gemm_rows 1 | awk '$6 == "1.00" && $7 == "0.0"' | wc -l)" -eq 2
# 2 ranks as 1 x 2: rank 0 needs all 32 block rows of A and owns 16; B's columns it needs are its own.
check "gemm's bound on two nodes: 16 A blocks of 1024 x 32768 floats" \
  bash -c "awk '\$1 == \"gemm-strong\" && \$3 == 2 {print \$7}' '$dir/table' | grep -qx 171.8"
check "gemm weak scaling: 23552 on two nodes (N^2 twice 16384^2, whole tiles)" grep -q "^gemm-weak   23552 *2 " "$dir/table"
check "gemm's table says it is simulated, and how blocks are timed" grep -q "^(simulated: gemm-mpi.*assumption" "$dir/table"
# The mixed pair, both apps: the h200 alone and with seed 2017's node, each with a time and the
# ranks' shares; the pair no slower than the h200 alone (RESULTS AV: faster in both).
pair() { awk -v a="$1" -v n="$2" '$1 == a && $2 == n && $3 + 0 > 0 {print $3}' "$dir/table"; }
for app in lwt-16384 gemm-16384; do
  alone=$(pair $app h200) both=$(pair $app h200+seed2017)
  check "$app on the h200 alone (${alone:-none}) and on the pair (${both:-none}), the pair no slower" \
    awk -v a="${alone:-0}" -v b="${both:-0}" 'BEGIN { exit !(a > 0 && b > 0 && b <= a * 1.001) }'
done
check "the pair's rows give each rank's share" bash -c "grep -Eq '^gemm-16384 +h200\+seed2017 +[0-9.]+ +[0-9]+/256 [0-9]+/256\$' '$dir/table'"
bash "$repo/bench/smpi.sh" scaling "$build" "$dir/bad" 1 lwt,fft >"$dir/bad.out" 2>"$dir/bad.err"; rc=$?
check "APPS 'lwt,fft': exit 2 (got $rc), one line" bash -c "[[ $rc -eq 2 && ! -s '$dir/bad.out' && \$(wc -l <'$dir/bad.err') -eq 1 ]]"
for bad in "0,2" "1,x" ""; do
  bash "$repo/bench/smpi.sh" scaling "$build" "$dir/bad" "${bad:-,}" >"$dir/bad.out" 2>"$dir/bad.err"; rc=$?
  check "COUNTS '${bad:-,}': exit 2 (got $rc), one line" bash -c "[[ $rc -eq 2 && ! -s '$dir/bad.out' && \$(wc -l <'$dir/bad.err') -eq 1 ]]"
done
echo "smpi-scaling: $passed passed, $fails failed"
((fails == 0))
