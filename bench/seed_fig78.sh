#!/usr/bin/env bash
# Seed 000's Fig. 7-8 experiment on the simulated seed2017 node (GTX 750 Ti + GTX 1080, DESIGN §8):
# the forward LWT on each GPU alone, on both split evenly, and on both under our policies and
# dmdar, for each size. Every time is simulated (ms).
#   bench/seed_fig78.sh BUILD_SIM [SIZES]     (SIZES: comma-separated, default 10240,11264,12288,16384)
set -euo pipefail
(($# >= 1)) || { echo "usage: bench/seed_fig78.sh BUILD_SIM [SIZES]" >&2; exit 2; }
build=$1 sizes=${2:-10240,11264,12288,16384}
lwt2d=$build/bin/lwt2d
[[ -x $lwt2d ]] || { echo "seed_fig78.sh: no $lwt2d; build it with FNNDTPS_SIMULATION=1 scripts/build.sh" >&2; exit 2; }
[[ $sizes =~ ^[0-9]+(,[0-9]+)*$ ]] || { echo "seed_fig78.sh: SIZES '$sizes' is not a comma-separated list of sizes" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT
# The platform and the environment, as compare.py --simulate makes them.
python3 - "$here" "$out" <<'PY' || exit 2
import sys, types
sys.path.insert(0, sys.argv[1])
import simulate
simulate.prepare(types.SimpleNamespace(simulate="seed2017", sim_models=None, out=sys.argv[2]))
PY
source "$out/simulate.env"
export FNNDTPS_SAVE=0 FNNDTPS_MODEL_DIR=$out/models STARPU_SILENT=1
run() {  # run SIZE ENV...: the median forward time, or "-" with the run's last line on stderr
  local size=$1; shift
  local out
  out=$(env "$@" "$lwt2d" demo --size "$size" --levels 4 --units "$(python3 "$here/sim_units.py" "$size")" \
          --repeat 2 --warmup 1 2>&1) || { echo "seed_fig78.sh: size $size, $*: $(tail -1 <<<"$out")" >&2; echo -; return; }
  sed -n 's/^RESULT.*median_ms=\([0-9.]*\).*/\1/p' <<<"$out" | grep . || echo -
}
echo "seed 000 Fig. 7-8 on simulated seed2017 (GTX 750 Ti = CUDA 0, GTX 1080 = CUDA 1), LWT forward, 4 levels,"
echo "median of 2 after 1, ms simulated; the GPUs alone (STARPU_NCPU=0), one or both"
fmt="%-6s %12s %12s %12s %14s %12s %12s\n"
printf "$fmt" size 750Ti-alone 1080-alone both-even both-fnn-dtps both-dtps both-dmdar
for size in ${sizes//,/ }; do
  printf "$fmt" "$size" \
    "$(run "$size" STARPU_NCPU=0 STARPU_NCUDA=1 STARPU_WORKERS_CUDAID=0 STARPU_SCHED=dmdar)" \
    "$(run "$size" STARPU_NCPU=0 STARPU_NCUDA=1 STARPU_WORKERS_CUDAID=1 STARPU_SCHED=dmdar)" \
    "$(run "$size" STARPU_NCPU=0 STARPU_SCHED=even)" \
    "$(run "$size" STARPU_NCPU=0 STARPU_SCHED=fnn-dtps)" \
    "$(run "$size" STARPU_NCPU=0 STARPU_SCHED=dtps)" \
    "$(run "$size" STARPU_NCPU=0 STARPU_SCHED=dmdar)"
done
