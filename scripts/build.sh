#!/usr/bin/env bash
# Configures and builds the project into build/ (BUILD_DIR overrides) against the StarPU
# that scripts/setup.sh installed. CUDA parts are built where nvcc exists. With
# FNNDTPS_SIMULATION=1: against the SimGrid build of StarPU, into build-sim/ (DESIGN §8); with
# FNNDTPS_MPI=1: against its MPI build, into build-mpi/ (DESIGN §11); with FNNDTPS_SMPI=1:
# against its SMPI build (StarPU-MPI in simulation), into build-smpi/, lwt2d-mpi and gemm-mpi only.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${FNNDTPS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/fnndtps}
if [[ ${FNNDTPS_SIMULATION:-0} == 1 ]]; then
  export STARPU_PREFIX=${STARPU_SIMGRID_PREFIX:-$(cat "$cache/current-simgrid" 2>/dev/null)}
  [[ -d ${STARPU_PREFIX:-/nonexistent}/lib ]] || { echo "build: StarPU's SimGrid build is not set up; run scripts/setup.sh" >&2; exit 1; }
  default_build=$root/build-sim
elif [[ ${FNNDTPS_MPI:-0} == 1 ]]; then
  export STARPU_PREFIX=${STARPU_MPI_PREFIX:-$(cat "$cache/current-mpi" 2>/dev/null)}
  [[ -d ${STARPU_PREFIX:-/nonexistent}/lib ]] || { echo "build: StarPU's MPI build is not set up; run scripts/setup.sh" >&2; exit 1; }
  default_build=$root/build-mpi
elif [[ ${FNNDTPS_SMPI:-0} == 1 ]]; then
  export STARPU_PREFIX=${STARPU_SMPI_PREFIX:-$(cat "$cache/current-smpi" 2>/dev/null)}
  [[ -d ${STARPU_PREFIX:-/nonexistent}/lib ]] || { echo "build: StarPU's SMPI build is not set up; run scripts/setup.sh" >&2; exit 1; }
  default_build=$root/build-smpi
  # SimGrid's compilers give the program SMPI's MPI (one process, ranks as simulated actors).
  # They rename malloc and its kin, which some of our other programs' headers do not survive:
  # only the MPI apps are built (gemm-mpi's blocks take their simulated time from the tile codelet's model).
  smpi=(-DCMAKE_C_COMPILER=smpicc -DCMAKE_CXX_COMPILER=smpicxx)
  targets=(--target lwt2d-mpi gemm-mpi)
else
  default_build=$root/build
fi
source "$root/scripts/env.sh"
[[ -n ${STARPU_PREFIX:-} ]] || { echo "build: StarPU is not set up; run scripts/setup.sh" >&2; exit 1; }
build=${BUILD_DIR:-$default_build}
# A build configured against another StarPU (CMake caches pkg-config's answer) starts afresh:
# mixing one StarPU's headers with another's library breaks structure layouts.
if [[ -f $build/CMakeCache.txt && "$(cat "$build/.starpu_prefix" 2>/dev/null)" != "$STARPU_PREFIX" ]]; then
  rm -rf "$build/CMakeCache.txt" "$build/CMakeFiles"
fi
mkdir -p "$build" && echo "$STARPU_PREFIX" >"$build/.starpu_prefix"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release ${smpi[@]+"${smpi[@]}"} "$@" >/dev/null
cmake --build "$build" -j"${JOBS:-$(nproc)}" ${targets[@]+"${targets[@]}"}
