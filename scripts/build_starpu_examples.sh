#!/usr/bin/env bash
# Builds StarPU's own example programs from the StarPU source tree that scripts/setup.sh unpacked
# (its path is in $STARPU_PREFIX/.source), against the installed StarPU (pkg-config starpu-1.4)
# and OpenBLAS, without re-running StarPU's configure: the Debian tarball lacks some example
# sources, so `make` in examples/ fails, and these need only their own files:
#   sgemm, dgemm          examples/mult/{s,d}gemm.c (tiled GEMM)
#   lu_example_float      examples/lu: tiled LU in float (as examples/Makefile.am's
#                         lu_lu_example_float_SOURCES: lu_example_float.c slu.c slu_pivot.c
#                         slu_kernels.c common/blas.c; each s*.c includes lu-float.h then the
#                         x*.c body)
#   tasks_overhead        tests/microbenchs/tasks_overhead.c (per-task overhead of a chain of
#                         empty tasks)
#   stencil               examples/stencil: 3D stencil (a game of life) over z-blocks with halo
#                         exchange, as examples/stencil/Makefile.am's stencil_SOURCES: life.c
#                         stencil-kernels.c stencil-tasks.c stencil-blocks.c stencil.c, and
#                         life_cuda.cu shadow.cu (nvcc) under STARPU_USE_CUDA
#   parallel_independent_heterogeneous_tasks[_data]
#                         tests/microbenchs/parallel_independent_heterogeneous_tasks{,_data}.c
#                         (independent sleeping tasks, 10x faster on a GPU: the speed-up reached
#                         against the expected one)
# CUDA kernels through cuBLAS (and cuSOLVER for LU's getrf) where StarPU was built with CUDA
# (starpu_config.h's STARPU_USE_CUDA, STARPU_HAVE_LIBCUSOLVER), as in the installed library.
#   scripts/build_starpu_examples.sh [OUT_DIR]     (default: ${BUILD_DIR:-build}/starpu-examples)
# Prints the binaries' paths. What the build needs (see the compile lines below):
# - sgemm.c includes simple.h and xgemm.c from its own folder; xgemm.c includes
#   <common/blas.h>: -I<src>/examples.
# - common/blas.h takes cblas.h when starpu_config.h says STARPU_HAVE_CBLAS_H, and
#   common/blas.c wraps Fortran sgemm_/dgemm_/strsm_/... under STARPU_SYSTEM_BLAS (this
#   StarPU's configure found the system BLAS): compile blas.c with the example, link OpenBLAS
#   (which provides the Fortran symbols and cblas_*) instead of -lblas, whose alternatives link
#   the GPU machine's image lacks.
# - xgemm.c calls cublasSgemm itself under STARPU_USE_CUDA: -lcublas -lcudart. The LU kernels
#   call cuBLAS (gemm, trsm, scal, ger, swap, iamax) and, under STARPU_HAVE_LIBCUSOLVER,
#   cusolverDnSgetrf for the diagonal blocks: -lcusolver too (no MAGMA: STARPU_HAVE_MAGMA is
#   unset, and the LU example does not use it).
# - the stencil's CUDA kernels (life_cuda.cu, shadow.cu) are compiled by nvcc ($NVCC, default
#   $CUDA_HOME/bin/nvcc) for CUDA_ARCH (default 90, Hopper: SASS and PTX, as our CMake's
#   CMAKE_CUDA_ARCHITECTURES), with StarPU's headers, and linked with -lstdc++ (nvcc's host
#   code); the C files call cudaMemcpyAsync (-lcudart). Nothing of StarPU's MPI: this StarPU has no STARPU_USE_MPI, so the example runs
#   as one process ("on 1 MPI processes" in its output).
# - tasks_overhead.c includes "../helper.h" (tests/helper.h), which pulls StarPU's internal
#   common/config.h and common/utils.h from its build tree; the program only needs
#   STARPU_TEST_SKIPPED from it, so it is compiled from a copy beside a two-line helper.h. So
#   are parallel_independent_heterogeneous_tasks{,_data}.c (STARPU_TEST_SKIPPED only, too).
# - STARPU_MATRIX_GET_PTR and friends are GNU statement expressions: gcc's default gnu17.
#
# Usage of the GEMM example (options from examples/mult/xgemm.c's parse_args):
#   OPENBLAS_NUM_THREADS=1 sgemm [-3d] [-nblocks n | -nblocksx x -nblocksy y -nblocksz z]
#       [-x x] [-y y] [-z z] [-xy n] [-xyz n] [-size n] [-iter i] [-check] [-bound] [-spmd]
#   C (y x x) = A (y x z) B (z x x), column-major, float; dgemm in double. -nblocks n cuts C
#   into n x n blocks (tile = size / n; sizes should be multiples); -3d also cuts z, as ours
#   does (one task per C_ij += A_ip B_pj; without -3d, one task per C block over the whole z).
#   Default 3840^3, 4 x 4 blocks, 10 iterations. It prints "x y z ms GFlop/s" for the whole
#   timed loop, A, B and C stay registered (and on the GPU) across its iterations. e.g.
#     sgemm -xyz 16384 -nblocks 16 -3d -iter 5        (tiles of 1024, as DESIGN §10)
#     sgemm -xy 16384 -z 16384 -nblocks 16 -iter 3    (2D: 256 tasks of 1024 x 1024 x 16384)
#   OPENBLAS_NUM_THREADS=1 matters: without it every CPU worker's BLAS spawns a thread per core.
#   Our policies: STARPU_SCHED_LIB=<build>/lib/libfnndtps.so STARPU_SCHED=fnn-dtps sgemm ...
#
# Usage of the LU example (examples/lu/lu_example.c's parse_args):
#   OPENBLAS_NUM_THREADS=1 lu_example_float [-size n] [-nblocks b] [-check] [-piv [-no-stride]]
#       [-profile] [-bound] [-bounddeps] [-bounddepsprio] [-directory d]
#   Factorizes in place a random diagonally dominant n x n float matrix cut into b x b tiles
#   (tile n/b; n should be a multiple of b), without pivoting (xlu.c, tasks tied by tags) unless
#   -piv (xlu_pivot.c; -no-stride copies the tiles into separate buffers first). Default size:
#   p = CPU workers + 32 CUDA workers, c = max(1, floor(cbrt(p)) / 2), size 7680 c and nblocks
#   8 c: 7680 x 7680 in 8 x 8 tiles of 960 both on 2 CPU workers and on 15 CPU + 1 GPU. One
#   factorization per process; it prints on stdout
#     # size<TAB>ms<TAB>GFlop/s
#     7680<TAB>1234<TAB>245.6
#   (ms rounded to 1 ms, GFlop/s = (2/3) n^3 / time, to 0.1); with -piv (strided) the same two
#   lines, then a line "n<TAB>GFlop/s" of its own timing. -h prints the usage and the default
#   size for the workers at hand. Here (2 CPU workers, dmdas): 7680 in 8 x 8 tiles 1995 ms,
#   151.4 GFlop/s; -size 1920 -nblocks 4: 42 ms. -check (slow: a CPU TRMM of n x n) prints
#   "||A-LU|| / (||A||*N) : e" on stderr and exits -1 past 1e-4. Nothing is printed when
#   STARPU_SSILENT is set (two S: STARPU_SILENT only quiets StarPU itself).
#
# Usage of tasks_overhead (tests/microbenchs/tasks_overhead.c):
#   tasks_overhead [-i ntasks] [-b nbuffers] [-p policy] [-h]
#   ntasks (default 65536) empty tasks of a codelet with nbuffers (0-8, default 0) RW vector
#   handles of 16 floats, all tasks on the same handles: with -b 0 they are chained by tags, with
#   -b N by their data, so one task runs at a time (latency through the scheduler, not
#   throughput). conf.ncpus = 2 in the source, but STARPU_NCPU overrides it (StarPU's default
#   precedence: the environment wins). -p sets the policy as STARPU_SCHED does (STARPU_SCHED
#   wins). One measurement per process; it prints on stderr (2 CPU workers, eager, here):
#     #tasks : 20000
#     #buffers : 0
#     Total submit: 0.250233 secs
#     Per task submit: 12.511648 usecs
#     (empty line)
#     Total execution: 0.083346 secs
#     Per task execution: 4.167303 usecs
#     (empty line)
#     Total: 0.333579 secs
#     Per task: 16.678951 usecs          (submit + execution, over ntasks)
#   With -b N the chained tasks mostly run during the submission (execution ~0).
#
# Usage of stencil (examples/stencil/stencil.c's parse_args):
#   stencil [-nbz n] [-sizex x] [-sizey y] [-sizez z] [-niter i] [-b] [-ticks ms] [-h]
#   A 3D game of life on x * y * z cells (one byte each), cut along z into n blocks (default
#   128 x 128 x 8192, 64 blocks of 128 x 128 x 128, 32 iterations). Each iteration of a block
#   is one update task (6 handles: the block's two buffers RW, its neighbours' four boundary
#   layers R) and two save tasks (copy its top and bottom layers into boundary buffers),
#   chained by tags: n * i updates and 2 n * i saves in all, all codelets CPU and CUDA, with
#   history models (cl_update, save_cl_top, save_cl_bottom). -b binds each block to a worker
#   the example picks (workerid (bz / 21) % 3: leave it out). The blocks start all zero (the
#   life stays dead: a fixed amount of work a cell). On stderr: "Running on 1 nodes", the
#   memory allocated, "GO !", one "!!! DO update_func_{cpu,cuda} z 0 ..." line per update of
#   block 0, then the number of update/top/bottom tasks each worker ran ("\tCPU 0 -> 12
#   (37.50%)") and a map of who ran which block per tick (-ticks, default 1000 ms). On stdout:
#     Computation took: 1234.567890 ms on 1 MPI processes
#     \tMIN : ... ms    \tMAX : ... ms    \tAVG : ... ms       (the same, with one process)
#   (the time from the first task's release to the end of the last, initialization excluded).
#   STARPU_SSILENT quiets both.
#
# Usage of parallel_independent_heterogeneous_tasks and ..._data (no options):
#   (CPU workers + CUDA workers) x 100 independent tasks, each a starpu_sleep of 10 ms on a CPU
#   worker and 1 ms on a CUDA one (a per-arch cost function tells the models so: nothing to
#   calibrate); _data gives each task a RW vector of its own of 400000 floats (1.6 MB, pinned),
#   registered before the timing and marked wont_use after its submission. The expected
#   speed-up is CPUs + 10 x GPUs (25 on 15 CPU workers + 1 CUDA: 1600 tasks, 0.64 s at best).
#   It prints on stdout
#     measured time = 0.700000 seconds
#     sequential time = 16.000000 seconds          (tasks x 10 ms)
#     speed up = 22.857143
#     number of workers CPU = 15
#     number of workers CUDA = 1
#     number of workers OPENCL = 0
#     number of tasks = 1600
#     expected speed up = 25.000000
#     percentage of expected speed up = 91.43%     (_data: "...expected speed up 91.43%", no "=")
#   and exits 0 when the speed-up is within 10% of the expected one, 1 otherwise (StarPU's own
#   .sh runs it under every policy and lets lws, eager, heteroprio and others fail).
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
  if grep -q '^#define STARPU_HAVE_LIBCUSOLVER 1' "$config"; then
    [[ -e $cuda/lib64/libcusolver.so ]] || die "StarPU was built with cuSOLVER but $cuda/lib64/libcusolver.so does not exist"
    cuda_libs+=(-lcusolver)
  fi
fi
pkg-config --exists openblas || die "OpenBLAS not found by pkg-config (apt-get install libopenblas-dev)"

# StarPU's and CUDA's headers as system headers: starpu.h pulls cusparse.h, whose CUDA 13
# deprecation warnings would bury the build's output (DESIGN §3).
sys_includes=$(pkg-config --cflags starpu-1.4 openblas | sed 's/-I/-isystem /g')
CC=${CC:-gcc}
build() {  # build NAME SOURCES...: -Wno-unused as StarPU's own examples/Makefile (APP_CFLAGS); -O3 as its CFLAGS
  local name=$1; shift
  "$CC" -O3 -Wno-unused -D_GNU_SOURCE $sys_includes -I"$ex" "$@" -o "$out/$name" \
    $(pkg-config --libs starpu-1.4 openblas) "${cuda_libs[@]}" -lm \
    -Wl,-rpath,"$STARPU_PREFIX/lib"
  echo "$out/$name"
}
for prec in sgemm dgemm; do
  build $prec "$ex/mult/$prec.c" "$ex/common/blas.c"
done
lu=$ex/lu
for f in lu_example_float.c slu.c slu_pivot.c slu_kernels.c xlu.c xlu_pivot.c xlu_kernels.c lu_example.c lu-float.h; do
  [[ -f $lu/$f ]] || die "StarPU's LU example is incomplete in $src: no examples/lu/$f"
done
build lu_example_float "$lu/lu_example_float.c" "$lu/slu.c" "$lu/slu_pivot.c" "$lu/slu_kernels.c" "$ex/common/blas.c"
micro=$src/tests/microbenchs/tasks_overhead.c
[[ -f $micro ]] || die "no $micro in StarPU's source tree"
shim=$(mktemp -d); trap 'rm -rf "$shim"' EXIT
mkdir -p "$shim/microbenchs"
cp "$micro" "$shim/microbenchs/"
printf '#include <errno.h>\n#define STARPU_TEST_SKIPPED 77\n' >"$shim/helper.h"
build tasks_overhead "$shim/microbenchs/tasks_overhead.c"
for t in parallel_independent_heterogeneous_tasks parallel_independent_heterogeneous_tasks_data; do
  [[ -f $src/tests/microbenchs/$t.c ]] || die "no tests/microbenchs/$t.c in StarPU's source tree"
  cp "$src/tests/microbenchs/$t.c" "$shim/microbenchs/"
  build $t "$shim/microbenchs/$t.c"
done
st=$ex/stencil st_sources=()
for f in life.c stencil-kernels.c stencil-tasks.c stencil-blocks.c stencil.c stencil.h shadow.h life_cuda.cu shadow.cu; do
  [[ -f $st/$f ]] || die "StarPU's stencil example is incomplete in $src: no examples/stencil/$f"
  [[ $f == *.c ]] && st_sources+=("$st/$f")
done
# With STARPU_USE_MPI, stencil.h would take MPI and starpu_mpi.h: this script links neither.
grep -q '^#define STARPU_USE_MPI 1' "$config" && die "this StarPU has MPI (STARPU_USE_MPI): the stencil would need mpicc and libstarpumpi"
if ((${#cuda_libs[@]})); then
  for f in life_cuda shadow; do
    "${NVCC:-$cuda/bin/nvcc}" -O3 -gencode "arch=compute_${CUDA_ARCH:-90},code=[sm_${CUDA_ARCH:-90},compute_${CUDA_ARCH:-90}]" \
      $sys_includes -c "$st/$f.cu" -o "$shim/$f.o"
    st_sources+=("$shim/$f.o")
  done
  st_sources+=(-lstdc++)  # nvcc's host code (static guards, personality), as StarPU's STARPU_CUDA_LDFLAGS
fi
build stencil "${st_sources[@]}"
