#!/usr/bin/env bash
# The main job from a fresh Debian 12 machine: set-up, build, then a 2D wavelet transform
# of a synthetic surface under StarPU. Extra arguments go to `lwt2d demo`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh" >/dev/null
"$root/scripts/build.sh" >&2
source "$root/scripts/env.sh"
export STARPU_SILENT=${STARPU_SILENT:-1}
exec "${BUILD_DIR:-$root/build}/bin/lwt2d" demo --size 4096 --levels 4 --check "$@"
