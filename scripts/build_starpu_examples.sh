#!/usr/bin/env bash
# Builds StarPU's own GEMM example programs (examples/mult/sgemm.c and dgemm.c) from the StarPU
# source tree that scripts/setup.sh unpacked (its path is in $STARPU_PREFIX/.source), against
# the installed StarPU (pkg-config starpu-1.4) and OpenBLAS, without re-running StarPU's
# configure: the Debian tarball lacks some example sources, so `make` in examples/ fails, and
# these two need only their own files. CUDA tiles through cuBLAS where StarPU was built with
# CUDA (starpu_config.h's STARPU_USE_CUDA), as in the installed library.
#   scripts/build_starpu_examples.sh [OUT_DIR]     (default: ${BUILD_DIR:-build}/starpu-examples)
# Prints the binaries' paths. What the build needs (see the compile line below):
# - sgemm.c includes simple.h and xgemm.c from its own folder; xgemm.c includes
#   <common/blas.h>: -I<src>/examples.
# - common/blas.h takes cblas.h when starpu_config.h says STARPU_HAVE_CBLAS_H, and
#   common/blas.c wraps Fortran sgemm_/dgemm_ under STARPU_SYSTEM_BLAS (this StarPU's
#   configure found the system BLAS): compile blas.c with the example, link OpenBLAS
#   (which provides sgemm_, dgemm_ and cblas_*) instead of -lblas, whose alternatives link the
#   GPU machine's image lacks.
# - xgemm.c calls cublasSgemm itself under STARPU_USE_CUDA: -lcublas -lcudart.
# - STARPU_MATRIX_GET_PTR and friends are GNU statement expressions: gcc's default gnu17.
#
# Usage of the example (options from examples/mult/xgemm.c's parse_args):
#   OPENBLAS_NUM_THREADS=1 sgemm [-3d] [-nblocks n | -nblocksx x -nblocksy y -nblocksz z]
#       [-x x] [-y y] [-z z] [-xy n] [-xyz n] [-size n] [-iter i] [-check] [-bound] [-spmd]
#   C (y x x) = A (y x z) B (z x x), column-major, float; dgemm in double. -nblocks n cuts C
#   into n x n blocks (tile = size / n; sizes should be multiples); -3d also cuts z, as ours
#   does (one task per C_ij += A_ip B_pj; without -3d, one task per C block over the whole z).
#   Default 3840^3, 4 x 4 blocks, 10 iterations. It prints "x y z ms GFlop/s" for the whole
#   timed loop, A, B and C stay registered (and on the GPU) across its iterations. e.g.
#     sgemm -xyz 16384 -nblocks 16 -3d -iter 5        (tiles of 1024, as DESIGN §10)
#   OPENBLAS_NUM_THREADS=1 matters: without it every CPU worker's BLAS spawns a thread per core.
#   Our policies: STARPU_SCHED_LIB=<build>/lib/libfnndtps.so STARPU_SCHED=fnn-dtps sgemm ...
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/scripts/env.sh"
die() { echo "build_starpu_examples: $*" >&2; exit 1; }
[[ -n ${STARPU_PREFIX:-} ]] || die "StarPU is not set up; run scripts/setup.sh"
[[ -f $STARPU_PREFIX/.source ]] || die "$STARPU_PREFIX/.source is missing: StarPU was not installed by scripts/setup.sh"
src=$(cat "$STARPU_PREFIX/.source")
ex=$src/examples
[[ -f $ex/mult/xgemm.c && -f $ex/common/blas.c ]] \
  || die "StarPU's example sources are not in $src (re-run scripts/setup.sh after removing $STARPU_PREFIX)"
out=${1:-${BUILD_DIR:-$root/build}/starpu-examples}
mkdir -p "$out"

config=$STARPU_PREFIX/include/starpu/1.4/starpu_config.h
cuda_libs=()
if grep -q '^#define STARPU_USE_CUDA 1' "$config"; then
  cuda=${CUDA_HOME:-/usr/local/cuda}
  [[ -d $cuda/lib64 ]] || die "StarPU was built with CUDA but $cuda/lib64 does not exist (set CUDA_HOME)"
  cuda_libs=(-L"$cuda/lib64" -lcublas -lcudart)
fi
pkg-config --exists openblas || die "OpenBLAS not found by pkg-config (apt-get install libopenblas-dev)"

# StarPU's and CUDA's headers as system headers: starpu.h pulls cusparse.h, whose CUDA 13
# deprecation warnings would bury the build's output (DESIGN §3).
sys_includes=$(pkg-config --cflags starpu-1.4 openblas | sed 's/-I/-isystem /g')
CC=${CC:-gcc}
for prec in sgemm dgemm; do
  # -Wno-unused as StarPU's own examples/Makefile (APP_CFLAGS); -O3 as its CFLAGS.
  "$CC" -O3 -Wno-unused -D_GNU_SOURCE $sys_includes -I"$ex" \
    "$ex/mult/$prec.c" "$ex/common/blas.c" -o "$out/$prec" \
    $(pkg-config --libs starpu-1.4 openblas) "${cuda_libs[@]}" -lm \
    -Wl,-rpath,"$STARPU_PREFIX/lib"
  echo "$out/$prec"
done
