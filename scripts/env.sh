# Source me: `source scripts/env.sh`. Points pkg-config and the loader at the StarPU that
# scripts/setup.sh built (override with STARPU_PREFIX=/path).
_fnndtps_cache=${FNNDTPS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/fnndtps}
if [ -z "${STARPU_PREFIX:-}" ] && [ -f "$_fnndtps_cache/current" ]; then
  STARPU_PREFIX=$(cat "$_fnndtps_cache/current")
fi
if [ -z "${STARPU_PREFIX:-}" ] || [ ! -d "$STARPU_PREFIX/lib" ]; then
  echo "env.sh: no StarPU found; run scripts/setup.sh first" >&2
else
  export STARPU_PREFIX
  export PKG_CONFIG_PATH="$STARPU_PREFIX/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
  export LD_LIBRARY_PATH="$STARPU_PREFIX/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export PATH="$STARPU_PREFIX/bin:$PATH"
fi
unset _fnndtps_cache
