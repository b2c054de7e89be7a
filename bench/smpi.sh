#!/usr/bin/env bash
# StarPU-MPI in simulation (SimGrid's SMPI; DESIGN §8 and §11): lwt2d-mpi's ranks as simulated
# processes, each on a simulated node of its own platform (bench/platforms/make_platform.py),
# the nodes joined by simulated 100 Gb/s links (one per node, 2 us, to a switch).
#   bench/smpi.sh platform DIR HOST...   the platforms, DIR/net.xml and DIR/hosts for these nodes
#                                        (HOST: a platform name, h200 or seed2017; a name twice
#                                        gives two nodes of that platform)
#   bench/smpi.sh bench BUILD_SMPI [OUT] LWT 16384^2, 4 levels, 64 units, forward, 8 runs (the
#                                        median of runs 1-7): one node alone against two nodes,
#                                        alike and different, under the rank shares dtps (the
#                                        default), model and even; a table on stdout, each job's
#                                        output under OUT (default: a temporary folder)
#   bench/smpi.sh scaling BUILD_SMPI [OUT] [COUNTS] [APPS]
#                                        lwt2d-mpi forward on 1, 2, 4 and 8 h200 nodes (COUNTS,
#                                        comma-separated): strong scaling of 16384^2 and 32768^2,
#                                        weak scaling of 16384 rows x 16384 a node; per count the
#                                        median ms, speed-up and efficiency against one node, and
#                                        the network's bound: the bytes a node sends over its
#                                        link at 12.5 GB/s (each rank's input is local and its
#                                        outputs stay on it: the 4-row halos of every level to
#                                        each neighbouring rank); then gemm-mpi on the same counts:
#                                        strong, 32768, and weak, N^2 = 16384^2 a node, with their
#                                        GFLOP/s, efficiency by rate and the first product's bound
#                                        (APPS: lwt, gemm or lwt,gemm, the default); between the
#                                        two, both apps at 16384 on the h200 node alone and on
#                                        the h200 + seed2017 pair
# Simulated times: labelled so wherever they are quoted.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
die() { echo "smpi.sh: $*" >&2; exit 2; }

# platform DIR HOST...: node i is simulated with HOST's platform. Nodes of one platform only:
# hosts HOST-0, HOST-1, ... all with STARPU_HOSTNAME's models. Of different platforms: each
# platform once, its name the host's (starpu_smpirun -hostfile-platform takes each host's
# models by its name). Writes DIR/platforms, DIR/net.xml, DIR/hosts and DIR/env (the
# environment and starpu_smpirun's flag for them).
platform() {
  local dir=$1; shift
  (($# >= 1)) || die "platform needs a folder and at least one host"
  mkdir -p "$dir"
  local names n; names=$(printf '%s\n' "$@" | sort -u)
  local hosts=("$@") flag=-hostfile-platform
  if [[ $(wc -l <<<"$names") -eq 1 ]]; then
    hosts=(); for i in $(seq 0 $(($# - 1))); do hosts+=("$1-$i"); done; flag=
  elif [[ $(wc -l <<<"$names") -ne $# ]]; then
    die "nodes of different platforms must each be of its own platform: $*"
  fi
  for n in $names; do
    "${PYTHON:-python3}" "$repo/bench/platforms/make_platform.py" --from "$repo/bench/platforms/h200/sampling" --name "$n" \
      --out "$dir/platforms" >/dev/null || die "make_platform.py $n failed"
  done
  {
    echo "<?xml version='1.0'?>"
    echo '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">'
    echo '<platform version="4.1">'
    echo '<zone id="nodes" routing="Full">'
    local a b
    for a in "${hosts[@]}"; do echo "  <host id=\"$a\" speed=\"1Gf\"/>"; done
    for a in "${hosts[@]}"; do echo "  <link id=\"$a-link\" bandwidth=\"12.5GBps\" latency=\"2us\"/>"; done
    for a in "${hosts[@]}"; do
      for b in "${hosts[@]}"; do
        [[ $a < $b ]] && echo "  <route src=\"$a\" dst=\"$b\"><link_ctn id=\"$a-link\"/><link_ctn id=\"$b-link\"/></route>"
      done
    done
    echo '</zone>'
    echo '</platform>'
  } >"$dir/net.xml"
  printf '%s\n' "${hosts[@]}" >"$dir/hosts"
  echo "STARPU_PERF_MODEL_DIR=$dir/platforms/sampling STARPU_HOSTNAME=$1 STARPU_PERF_MODEL_HOMOGENEOUS_CUDA=1" \
       "STARPU_CALIBRATE_MINIMUM=2 STARPU_SILENT=1 FNNDTPS_SAVE=0 STARPU_HOME=$dir FNNDTPS_MODEL_DIR=$dir/models" \
       >"$dir/env"
  echo "$flag" >"$dir/flag"
}

# smpirun_of BUILD: starpu_smpirun of the StarPU that BUILD was made with.
smpirun_of() {
  local build=$1 prefix
  [[ -x $build/bin/lwt2d-mpi ]] || die "no $build/bin/lwt2d-mpi: build it with FNNDTPS_SMPI=1 scripts/build.sh"
  prefix=$(sed -n 's/^STARPU_PREFIX:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null | head -1)
  [[ -z $prefix ]] && prefix=$(cat "${FNNDTPS_CACHE:-$HOME/.cache/fnndtps}/current-smpi" 2>/dev/null || true)
  [[ -x $prefix/bin/starpu_smpirun ]] || die "no starpu_smpirun under '$prefix': run scripts/setup.sh"
  echo "$prefix/bin/starpu_smpirun"
}

bench() {
  local build=${1:-} out=${2:-}
  [[ -n $build ]] || die "bench needs the SMPI build's folder"
  local smpirun; smpirun=$(smpirun_of "$build")
  [[ -n $out ]] || { out=$(mktemp -d); trap "rm -rf '$out'" EXIT; }
  mkdir -p "$out"
  printf '%-22s %-7s %12s  %s\n' nodes shares median_ms "units per rank (last run)"
  local nodes shares
  for nodes in "h200" "h200 h200" "h200 seed2017"; do
    local dir=$out/${nodes// /+}
    platform "$dir" $nodes
    for shares in dtps model even; do
      [[ $nodes == h200 && $shares != dtps ]] && continue
      local log=$dir/$shares.txt
      rm -rf "$dir/models"
      env $(cat "$dir/env") timeout -k 5 600 "$smpirun" -platform "$dir/net.xml" -hostfile "$dir/hosts" $(cat "$dir/flag") \
        "$build/bin/lwt2d-mpi" forward --size 16384 --levels 4 --units 64 --repeat 8 --shares "$shares" \
        >"$log" 2>"$dir/$shares.err" || { printf '%-22s %-7s %12s\n' "$nodes" "$shares" failed; continue; }
      printf '%-22s %-7s %12s  %s\n' "$nodes" "$shares" \
        "$(sed -n 's/^RESULT .* median_ms=\([0-9.]*\).*/\1/p' "$log")" \
        "$(awk '/^rank [0-9]*: / { printf "%s%s", sep, $3; sep = " " }' "$log")"
    done
  done
  echo "(simulated: lwt2d-mpi forward --size 16384 --levels 4 --units 64 --repeat 8; each rank's input local, its outputs kept on it)"
}

# The mixed pair: an h200 node and seed 2017's (two GTX cards, 4 cores) under DTPS, against the
# h200 node alone, on the LWT 16384^2 and gemm 16384 (as APPS names them): the pair should be no
# slower, and faster where the seed's node takes a useful share.
pair() {
  local build=$1 out=$2 smpirun=$3 apps=$4 app nodes
  printf '%-12s %-14s %10s  %s\n' app nodes median_ms "shares (last run)"
  for app in lwt gemm; do
    [[ ,$apps, == *,$app,* ]] || continue
    for nodes in "h200" "h200 seed2017"; do
      local dir=$out/pair-${nodes// /+}
      [[ -f $dir/net.xml ]] || platform "$dir" $nodes
      local log=$dir/$app.txt cmd=("$build/bin/lwt2d-mpi" forward --size 16384 --levels 4 --units 64 --repeat 6)
      [[ $app == gemm ]] && cmd=("$build/bin/gemm-mpi" --size 16384 --tile 1024 --iter 5 --shares dtps)
      rm -rf "$dir/models"
      echo "smpi.sh: $app pair case on ${nodes// / + }" >&2
      if ! env $(cat "$dir/env") timeout -k 5 600 "$smpirun" -platform "$dir/net.xml" -hostfile "$dir/hosts" \
          $(cat "$dir/flag") "${cmd[@]}" >"$log" 2>"${log%.txt}.err"; then
        printf '%-12s %-14s %10s\n' "$app-16384" "${nodes// /+}" failed; continue
      fi
      printf '%-12s %-14s %10s  %s\n' "$app-16384" "${nodes// /+}" "$(sed -n 's/^RESULT .* median_ms=\([0-9.]*\).*/\1/p' "$log")" \
        "$(awk '/^rank [0-9]*: / { printf "%s%s", sep, $3 "/" $5; sep = " " }' "$log")"
    done
  done
  echo "(simulated: the same commands as above at 16384, rank shares by DTPS; each rank's units or blocks of the last run)"
  echo
}

scaling() {
  local build=${1:-} out=${2:-} counts=${3:-1,2,4,8} apps=${4:-lwt,gemm}
  [[ -n $build ]] || die "scaling needs the SMPI build's folder"
  [[ $apps =~ ^(lwt|gemm)(,(lwt|gemm))?$ ]] || die "APPS: lwt, gemm or both, not '$apps'"
  [[ ,$apps, != *,gemm,* || -x $build/bin/gemm-mpi ]] || die "no $build/bin/gemm-mpi: build it with FNNDTPS_SMPI=1 scripts/build.sh"
  local smpirun; smpirun=$(smpirun_of "$build")
  [[ $counts =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || die "COUNTS: comma-separated node counts, not '$counts'"
  [[ -n $out ]] || { out=$(mktemp -d); trap "rm -rf '$out'" EXIT; }
  mkdir -p "$out"
  # case, rows a node (weak) or of the image (strong), columns, units a node (weak) or in all
  local cases=("strong 16384 16384 64" "strong 32768 32768 256" "weak 16384 16384 64")
  [[ ,$apps, == *,lwt,* ]] || cases=()
  local c n
  ((${#cases[@]})) && printf '%-7s %-12s %5s %10s %8s %6s %9s\n' case size nodes median_ms speedup eff bound_ms
  for c in "${cases[@]+"${cases[@]}"}"; do
    read -r kind rows cols units <<<"$c"
    local t1=""
    for n in ${counts//,/ }; do
      local dir=$out/$n-nodes R=$rows U=$units
      [[ $kind == weak ]] && R=$((rows * n)) U=$((units * n))
      [[ -f $dir/net.xml ]] || platform "$dir" $(yes h200 | head -n "$n")
      local log=$dir/$kind-${R}x$cols.txt
      rm -rf "$dir/models"
      echo "smpi.sh: $kind ${R}x$cols on $n node(s)" >&2
      if ! env $(cat "$dir/env") timeout -k 5 600 "$smpirun" -platform "$dir/net.xml" -hostfile "$dir/hosts" \
          $(cat "$dir/flag") "$build/bin/lwt2d-mpi" forward --size "${R}x$cols" --levels 4 --units "$U" --repeat 6 \
          >"$log" 2>"${log%.txt}.err"; then
        printf '%-7s %-12s %5s %10s\n' "$kind" "${R}x$cols" "$n" failed; continue
      fi
      local ms; ms=$(sed -n 's/^RESULT .* median_ms=\([0-9.]*\).*/\1/p' "$log")
      [[ -z $t1 ]] && t1=$ms
      # Strong: speed-up T1/Tn, efficiency T1/(n Tn); weak: n times the work, efficiency T1/Tn.
      # The bound: a rank with two neighbours sends each, per level l < 4, 4 rows of cols / 2^l floats.
      awk -v k="$kind" -v s="${R}x$cols" -v n="$n" -v t="$ms" -v t1="$t1" -v cols="$cols" 'BEGIN {
        up = (k == "strong") ? t1 / t : n * t1 / t; eff = up / n
        halo = 0; for (l = 0; l < 4; ++l) halo += 4 * (cols / 2 ^ l) * 4
        neighbours = n > 2 ? 2 : n - 1
        printf "%-7s %-12s %5d %10.2f %8.2f %6.2f %9.3f\n", k, s, n, t, up, eff, neighbours * halo / 12.5e9 * 1e3 }'
    done
  done
  ((${#cases[@]})) && echo "(simulated: lwt2d-mpi forward --levels 4 --repeat 6, the median of runs 1-5, rank shares" \
       "by DTPS; h200 nodes, 100 Gb/s links; speed-up and efficiency against the first count's time)" && echo
  pair "$build" "$out" "$smpirun" "$apps"
  [[ ,$apps, == *,gemm,* ]] || return 0
  # gemm-mpi: strong, N = 32768 at every count; weak, N^2 a node's 16384^2 times the nodes (N a
  # multiple of the tile, 1024). The efficiency is by rate: GFLOP/s over n times the first count's.
  printf '%-11s %-7s %5s %10s %9s %6s %9s\n' case size nodes median_ms GFLOP/s eff bound_ms
  local t g1
  for kind in strong weak; do
    g1=""
    for n in ${counts//,/ }; do
      local dir=$out/$n-nodes N=32768
      [[ $kind == weak ]] && N=$(awk -v n="$n" 'BEGIN { printf "%d", 1024 * int(16 * sqrt(n) + 0.5) }')
      [[ -f $dir/net.xml ]] || platform "$dir" $(yes h200 | head -n "$n")
      local log=$dir/gemm-$kind-$N.txt
      rm -rf "$dir/models"
      echo "smpi.sh: gemm $kind $N on $n node(s)" >&2
      if ! env $(cat "$dir/env") timeout -k 5 600 "$smpirun" -platform "$dir/net.xml" -hostfile "$dir/hosts" \
          $(cat "$dir/flag") "$build/bin/gemm-mpi" --size "$N" --tile 1024 --iter 5 --shares dtps \
          >"$log" 2>"${log%.txt}.err"; then
        printf '%-11s %-7s %5s %10s\n' "gemm-$kind" "$N" "$n" failed; continue
      fi
      t=$(sed -n 's/^RESULT .* median_ms=\([0-9.]*\).*/\1/p' "$log")
      local g; g=$(sed -n 's/^RESULT .* gflops=\([0-9.]*\).*/\1/p' "$log")
      [[ -z $g1 ]] && g1=$g
      # The bound: the first product's (C 2D block-cyclic over a pr x pc grid, A's block row i on
      # rank i mod n, B's column j on j mod n) A and B blocks the busiest rank needs but does not
      # own, over its link; StarPU-MPI's cache keeps them for the later products of the same A, B.
      awk -v k="gemm-$kind" -v N="$N" -v n="$n" -v t="$t" -v g="$g" -v g1="$g1" 'BEGIN {
        pr = 1; for (d = 1; d * d <= n; ++d) if (n % d == 0) pr = d; pc = n / pr
        nb = int((N + 1023) / 1024); worst = 0
        for (r = 0; r < n; ++r) {
          need = 0
          for (i = 0; i < nb; ++i) { if (i % pr == int(r / pc) && i % n != r) need++; if (i % pc == r % pc && i % n != r) need++ }
          if (need > worst) worst = need }
        printf "%-11s %-7s %5d %10.2f %9.0f %6.2f %9.1f\n", k, N, n, t, g, g / (n * g1), worst * 1024 * N * 4 / 12.5e9 * 1e3 }'
    done
  done
  echo "(simulated: gemm-mpi --tile 1024 --iter 5, the median of products 1-4, rank shares by DTPS; a block lasts its" \
       "flops at the rate of the platform's calibrated 1024-tile codelet on its worker: an assumption)"
}

case ${1:-} in
  platform) shift; platform "$@" ;;
  bench) shift; bench "$@" ;;
  scaling) shift; scaling "$@" ;;
  *) die "usage: bench/smpi.sh platform DIR HOST... | bench BUILD_SMPI [OUT] | scaling BUILD_SMPI [OUT] [COUNTS] [APPS]" ;;
esac
