#!/usr/bin/env bash
# Builds here (Debian 12, CUDA 13 toolkit, no GPU) and packs what the GPU machine needs into
# .carry/ (git-ignored): our binaries, StarPU's shared library (stripped) and the Debian
# libraries the GPU machine's image lacks. The device call then names .carry in `carry`
# and runs scripts/gpu/run.sh.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
export BUILD_DIR=${BUILD_DIR:-$root/build-gpu}
"$root/scripts/build.sh" -DFNNDTPS_BUILD_CUDA=ON
source "$root/scripts/env.sh"
# StarPU's own sgemm, dgemm, lu_example_float, tasks_overhead, stencil and
# parallel_independent_heterogeneous_tasks{,_data}, carried with our binaries
"$root/scripts/build_starpu_examples.sh" "$BUILD_DIR/bin"
carry=$root/.carry
rm -rf "$carry"; mkdir -p "$carry/bin" "$carry/lib"
for f in "$BUILD_DIR"/bin/* "$BUILD_DIR"/lib/*.so; do
  [[ -f $f && -x $f ]] && cp "$f" "$carry/${f#"$BUILD_DIR"/}"
done
cp -L "$STARPU_PREFIX"/lib/libstarpu-1.4.so.9 "$carry/lib/"
# The programs lose their symbol tables too (their dynamic symbols stay): the device copies at
# most 64 MiB with the working tree.
strip --strip-debug "$carry"/lib/libstarpu-1.4.so.9 2>/dev/null || true
strip --strip-all "$carry"/bin/* 2>/dev/null || true
# libzip, tinyxml2 and libpng: lwt2d's X3P and PNG files (lwt_io). libcrypto.so.3 (X3P's MD5,
# and libzip's), libbz2 and zlib come with the GPU machine's Ubuntu 24.04 and its Python.
# GLPK and what it links (SuiteSparse's AMD and COLAMD, GMP): StarPU's LP bound (--bound).
for lib in libhwloc.so.15 libopenblas.so.0 libgfortran.so.5 libquadmath.so.0 libnuma.so.1 libltdl.so.7 \
           libzip.so.4 libtinyxml2.so.9 libpng16.so.16 \
           libglpk.so.40 libamd.so.2 libcolamd.so.2 libsuitesparseconfig.so.5 libgmp.so.10; do
  src=$(readlink -f "/usr/lib/x86_64-linux-gnu/$lib")
  cp "$src" "$carry/lib/$lib"
done
# The test list and scripts travel with the tree; ctest's files name build paths, so the
# device runs the binaries directly (scripts/gpu/run.sh).
echo "$BUILD_DIR" >"$carry/build_dir"  # tests name some files by their build path
# The commit packed (the device's copy of the tree has no .git): "+dirty" when tracked files
# differ from it, since the build is of the working tree. run.sh's parts print it.
commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
git -C "$root" diff --quiet HEAD -- 2>/dev/null || commit+="+dirty"
echo "$commit" >"$carry/commit"
for x in sgemm dgemm lu_example_float tasks_overhead stencil parallel_independent_heterogeneous_tasks \
         parallel_independent_heterogeneous_tasks_data; do
  [[ -x $carry/bin/$x ]] || { echo "pack: StarPU's $x was not built into $carry/bin" >&2; exit 1; }
done
# FNNDTPS_PACK_MPI=1: also the MPI apps, built against StarPU's MPI build (with CUDA), and that
# StarPU's libraries, in .carry/mpi (run.sh's mpi part puts its lib/ first on the library path).
if [[ ${FNNDTPS_PACK_MPI:-0} == 1 ]]; then
  mpi_build=${MPI_BUILD_DIR:-$root/build-mpi}
  FNNDTPS_MPI=1 BUILD_DIR=$mpi_build "$root/scripts/build.sh"
  mpi_prefix=$(cat "$(dirname "$STARPU_PREFIX")/current-mpi")
  mkdir -p "$carry/mpi/bin" "$carry/mpi/lib"
  cp "$mpi_build"/bin/lwt2d-mpi "$mpi_build"/bin/gemm-mpi "$carry/mpi/bin/"
  cp -L "$mpi_prefix"/lib/libstarpu-1.4.so.9 "$mpi_prefix"/lib/libstarpumpi-1.4.so.3 "$carry/mpi/lib/"
  strip --strip-debug "$carry"/mpi/lib/* "$carry"/mpi/bin/* 2>/dev/null || true
fi
# OpenBLAS's library (36 MB) is most of the carry, and the device copies at most 64 MiB with the
# tree: it travels compressed (11 MB), and run.sh unpacks every .gz under .carry/lib first.
gzip -9 "$carry/lib/libopenblas.so.0"
du -sh "$carry"
