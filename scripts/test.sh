#!/usr/bin/env bash
# The whole test suite from a fresh Debian 12 machine: set-up, build (native, for simulation,
# with StarPU-MPI, and with StarPU-MPI in simulation), ctest in each.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh" >/dev/null
"$root/scripts/build.sh"
FNNDTPS_SIMULATION=1 BUILD_DIR="${SIM_BUILD_DIR:-$root/build-sim}" "$root/scripts/build.sh"
FNNDTPS_MPI=1 BUILD_DIR="${MPI_BUILD_DIR:-$root/build-mpi}" "$root/scripts/build.sh"
FNNDTPS_SMPI=1 BUILD_DIR="${SMPI_BUILD_DIR:-$root/build-smpi}" "$root/scripts/build.sh"
source "$root/scripts/env.sh"
export STARPU_SILENT=1
ctest --test-dir "${BUILD_DIR:-$root/build}" --output-on-failure -j"${JOBS:-2}"
ctest --test-dir "${SIM_BUILD_DIR:-$root/build-sim}" --output-on-failure -j"${JOBS:-2}"
ctest --test-dir "${MPI_BUILD_DIR:-$root/build-mpi}" --output-on-failure -j1
ctest --test-dir "${SMPI_BUILD_DIR:-$root/build-smpi}" --output-on-failure -j1
