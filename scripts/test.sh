#!/usr/bin/env bash
# The whole test suite from a fresh Debian 12 machine: set-up, build, ctest.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh" >/dev/null
"$root/scripts/build.sh"
source "$root/scripts/env.sh"
export STARPU_SILENT=1
ctest --test-dir "${BUILD_DIR:-$root/build}" --output-on-failure -j"${JOBS:-2}"
