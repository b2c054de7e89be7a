#!/usr/bin/env bash
# One-time set-up on Debian 12 as root: Debian packages, then StarPU 1.4 built four times from
# Debian's source package into a cache outside the repository: natively (with CUDA where nvcc
# exists), for simulation (--enable-simgrid against Debian's SimGrid, DESIGN §8), with
# StarPU-MPI (Debian's OpenMPI, DESIGN §11), and with StarPU-MPI in simulation (SimGrid's SMPI:
# simulated ranks on simulated nodes; static, as StarPU requires for SMPI). Re-running reuses
# the cached builds. Prints the native prefix on its last line; the others are in
# $CACHE_ROOT/current-simgrid, $CACHE_ROOT/current-mpi and $CACHE_ROOT/current-smpi.
set -euo pipefail

CACHE_ROOT=${FNNDTPS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/fnndtps}
JOBS=${JOBS:-$(nproc)}
CUDA_DIR=${CUDA_DIR:-/usr/local/cuda}
log() { echo "[setup] $*" >&2; }
die() { echo "setup: $*" >&2; exit 1; }

need_pkgs=(build-essential cmake pkg-config ccache libhwloc-dev libopenblas-dev libgtest-dev
           libnuma-dev libltdl-dev python3 python3-numpy python3-pywt python3-matplotlib python3-pil
           dpkg-dev ca-certificates libsimgrid-dev libzip-dev libtinyxml2-dev libpng-dev libssl-dev
           libopenmpi-dev openmpi-bin xsltproc libglpk-dev)

install_packages() {
  local missing=()
  for p in "${need_pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]})); then
    log "installing Debian packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
}

# Debian 12 ships StarPU 1.3 without CUDA; unstable's source package carries 1.4.x.
add_unstable_sources() {
  local f=/etc/apt/sources.list.d/fnndtps-unstable-src.sources
  if [[ ! -f $f ]]; then
    log "adding a deb-src entry for Debian unstable (source packages only)"
    cat >"$f" <<'SRC'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: unstable
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
    apt-get update -qq
  fi
}

have_cuda() { [[ -x $CUDA_DIR/bin/nvcc ]]; }

# starpu_flags native|simgrid|mpi|smpi: the same build but for CUDA, SimGrid, MPI and both
# (maxcpus and maxcudadev too: simulated platforms have up to 8 GPUs and 128 cores). The MPI
# build has CUDA where nvcc exists, so that a rank can drive a GPU. SMPI runs every simulated
# rank in one process and privatizes each rank's globals in the program, so StarPU links in
# statically there (StarPU's documentation, "MPI Applications" under SimGrid).
starpu_flags() {
  local f=(--enable-maxcudadev=8 --enable-maxcpus=128 --disable-opencl --disable-fortran --disable-socl --disable-starpupy
           --disable-build-doc --disable-openmp --disable-starpurm --disable-hdf5 --disable-starpufft
           --disable-build-examples --disable-build-tests)
  if [[ $1 == mpi || $1 == smpi ]]; then f+=(--enable-mpi --disable-mpi-minimal-tests); else f+=(--disable-mpi); fi
  if [[ $1 == smpi ]]; then f+=(--disable-cuda --enable-simgrid --disable-shared)
  elif [[ $1 == simgrid ]]; then f+=(--disable-cuda --enable-simgrid)
  elif have_cuda; then f+=(--enable-cuda "--with-cuda-dir=$CUDA_DIR"); else f+=(--disable-cuda); fi
  # GLPK gives starpu_bound_compute its LP solver (the bench's LP bound); configure finds it by
  # default, but naming it makes the cache key change, so a build made before it is redone.
  if [[ $1 == native ]]; then f+=(--enable-glpk); fi
  echo "${f[@]}"
}

build_starpu() {  # build_starpu native|simgrid|mpi|smpi
  local variant=$1 version flags key prefix src work
  add_unstable_sources
  version=$(apt-cache showsrc starpu 2>/dev/null | awk '/^Version:/{print $2}' | sort -V | tail -1)
  [[ -n $version ]] || die "no StarPU source package found in Debian's sources; check the network and 'apt-get update'"
  local upstream=${version%%-*}; upstream=${upstream#*:}; upstream=${upstream%%+*}
  [[ $upstream == 1.4.* ]] || die "Debian's StarPU source is $upstream, but this project needs StarPU 1.4.x"
  flags=$(starpu_flags "$variant")
  key=$(echo "$upstream $flags" | sha1sum | cut -c1-10)
  prefix=$CACHE_ROOT/starpu-$upstream-$key
  if [[ -f $prefix/.complete ]]; then log "reusing StarPU $upstream ($variant) at $prefix"; echo "$prefix"; return; fi

  work=$CACHE_ROOT/src-$upstream-$key
  rm -rf "$work"; mkdir -p "$work"
  log "fetching StarPU $upstream source"
  (cd "$work" && apt-get source -qq --download-only starpu >/dev/null 2>&1) || die "apt-get source starpu failed"
  local tarball; tarball=$(ls "$work"/starpu_*.orig.tar.* | head -1)
  mkdir -p "$work/src"; tar -xf "$tarball" -C "$work/src" --strip-components=1
  src=$work/src
  # CUDA 13 removed cudaDeviceProp::computeMode (upstream fixed it the same way after 1.4.12).
  if grep -q 'props\[devid\]\.computeMode' "$src/src/drivers/cuda/driver_cuda.c" 2>/dev/null; then
    log "patching driver_cuda.c for CUDA 13 (computeMode)"
    python3 - "$src/src/drivers/cuda/driver_cuda.c" <<'PY'
import re, sys
p = sys.argv[1]; s = open(p).read()
s2 = re.sub(r'props\[devid\]\.computeMode',
            '({ int mode_ = 0; cudaDeviceGetAttribute(&mode_, cudaDevAttrComputeMode, devid); mode_; })', s)
open(p, 'w').write(s2)
PY
  fi
  log "configuring StarPU $upstream, $variant ($flags)"
  mkdir -p "$work/build"
  (cd "$work/build" && CC="ccache gcc" CXX="ccache g++" "$src/configure" --prefix="$prefix" $flags \
      >"$work/configure.log" 2>&1) || { tail -30 "$work/configure.log" >&2; die "StarPU configure failed (log: $work/configure.log)"; }
  log "building StarPU ($variant) with $JOBS jobs (several minutes)"
  (cd "$work/build" && make -j"$JOBS" >"$work/make.log" 2>&1 && make install >>"$work/make.log" 2>&1) \
      || { tail -30 "$work/make.log" >&2; die "StarPU build failed (log: $work/make.log)"; }
  echo "$src" >"$prefix/.source"
  touch "$prefix/.complete"
  log "StarPU $upstream ($variant) installed at $prefix"
  echo "$prefix"
}

install_packages
mkdir -p "$CACHE_ROOT"
prefix=$(build_starpu native)
[[ -f $prefix/.complete ]] || die "StarPU set-up did not complete"
echo "$prefix" >"$CACHE_ROOT/current"
sim=$(build_starpu simgrid)
[[ -f $sim/.complete ]] || die "StarPU (simgrid) set-up did not complete"
echo "$sim" >"$CACHE_ROOT/current-simgrid"
mpi=$(build_starpu mpi)
[[ -f $mpi/.complete ]] || die "StarPU (mpi) set-up did not complete"
echo "$mpi" >"$CACHE_ROOT/current-mpi"
smpi=$(build_starpu smpi)
[[ -f $smpi/.complete ]] || die "StarPU (smpi) set-up did not complete"
echo "$smpi" >"$CACHE_ROOT/current-smpi"
echo "$prefix"
