#!/usr/bin/env bash
# Configures and builds the project into build/ (BUILD_DIR overrides) against the StarPU
# that scripts/setup.sh installed. CUDA parts are built where nvcc exists.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/scripts/env.sh"
[[ -n ${STARPU_PREFIX:-} ]] || { echo "build: StarPU is not set up; run scripts/setup.sh" >&2; exit 1; }
build=${BUILD_DIR:-$root/build}
# A build configured against another StarPU (CMake caches pkg-config's answer) starts afresh:
# mixing one StarPU's headers with another's library breaks structure layouts.
if [[ -f $build/CMakeCache.txt && "$(cat "$build/.starpu_prefix" 2>/dev/null)" != "$STARPU_PREFIX" ]]; then
  rm -rf "$build/CMakeCache.txt" "$build/CMakeFiles"
fi
mkdir -p "$build" && echo "$STARPU_PREFIX" >"$build/.starpu_prefix"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build "$build" -j"${JOBS:-$(nproc)}"
