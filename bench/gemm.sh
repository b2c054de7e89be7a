#!/usr/bin/env bash
# Tiled GEMM under our policies and StarPU's built-ins: our `gemm` app and StarPU's own
# examples/mult/sgemm (scripts/build_starpu_examples.sh), side by side. Prints a table of
# GFLOP/s and writes CSV on request.
#   bench/gemm.sh [--build DIR] [--gemm BIN] [--example BIN] [--lib SO] [--precision s|d]
#                 [--size N] [--tile B] [--split 2d|3d] [--iter I] [--csv FILE] [--example-only] [CONFIG...]
# Defaults: --build ${BUILD_DIR:-build} (gemm = DIR/bin/gemm, lib = DIR/lib/libfnndtps.so,
# example = DIR/starpu-examples/sgemm or dgemm, skipped when not built), s, 2048, 512, 2d, 5.
# --split 2d: one task per C block over the whole k, in our app (--split 2d) and in StarPU's
# example (without -3d); 3d: one task per block product (--split 3d; the example's -3d).
# On the GPU machine: --size 16384 --tile 1024. --example-only runs StarPU's example alone (our
# app still answers which worker classes exist).
# A CONFIG is NAME:ENV, e.g. "eager:STARPU_SCHED=eager". The default set measures each worker
# class alone (gpu-only: dmdas with STARPU_NCPU=0, skipped without CUDA workers; cpu-only:
# dmdas with STARPU_NCUDA=0), then StarPU's dmdas, dmda, heteroprio and our five policies on
# every worker. Our app registers our policies itself; the example loads them through
# STARPU_SCHED_LIB. Each policy gets a fresh FNNDTPS_MODEL_DIR.
# What the columns mean:
# - gemm: our app, median over iterations 1..I-1 (iteration 0 calibrates), A and B registered
#   once (a GPU keeps its blocks of them after iteration 0), C back in host memory every time.
# - sgemm/dgemm (StarPU's example, -xyz N -nblocks ceil(N/B) [-3d] -iter I): its own figure,
#   the mean over its I iterations, with A, B and C registered once, so device copies of A and B
#   are reused after its first iteration; C is not waited home. Close to ours, not the same:
#   compare rows within a column. A warm-up run first calibrates its performance models (StarPU keeps them on disk).
# - %bound: ours against the divisible-load bound of DESIGN §8, the throughputs of the classes
#   measured alone in this run added up (GF_gpu-only + GF_cpu-only).
# - vs_best: GFLOP/s over the best of StarPU's dmdas, dmda, heteroprio (and eager, lws when
#   given) in that column; above 1 is faster.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
gemm= example= lib= precision=s size=2048 tile=512 iter=5 csv= app=1 split=2d
configs=()
while (($#)); do
  case $1 in
    --build) build=$2; shift 2 ;;
    --gemm) gemm=$2; shift 2 ;;
    --example) example=$2; shift 2 ;;
    --lib) lib=$2; shift 2 ;;
    --precision) precision=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --tile) tile=$2; shift 2 ;;
    --split) split=$2; shift 2 ;;
    --iter) iter=$2; shift 2 ;;
    --csv) csv=$2; shift 2 ;;
    --example-only) app=0; shift ;;
    -h|--help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
    --*) echo "gemm.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) configs+=("$1"); shift ;;
  esac
done
[[ $precision == s || $precision == d ]] || { echo "gemm.sh: --precision must be s or d" >&2; exit 2; }
[[ $split == 2d || $split == 3d ]] || { echo "gemm.sh: --split must be 2d or 3d" >&2; exit 2; }
for v in size tile iter; do
  [[ ${!v} =~ ^[1-9][0-9]*$ ]] || { echo "gemm.sh: --$v needs a positive integer, got '${!v}'" >&2; exit 2; }
done
xname=${precision}gemm
gemm=${gemm:-$build/bin/gemm}
lib=${lib:-$build/lib/libfnndtps.so}
example=${example:-$build/starpu-examples/$xname}
[[ -x $gemm ]] || { echo "gemm.sh: no gemm app at $gemm (build it, or give --gemm)" >&2; exit 2; }
if [[ ! -x $example ]]; then
  echo "gemm.sh: no StarPU example at $example (scripts/build_starpu_examples.sh); its column stays empty" >&2
  example=
fi
[[ -n $example && ! -f $lib ]] && echo "gemm.sh: no $lib: the example cannot load our policies" >&2
export STARPU_SILENT=1 OPENBLAS_NUM_THREADS=1
ours=" fnn-dtps fnn dtps boyer even "
builtins=" eager lws dmda dmdas heteroprio "

# Which worker classes exist (a tiny run prints cpu= and cuda=).
probe=$("$gemm" --size 64 --iter 1 2>/dev/null | grep '^RESULT' || true)
have_cuda=$(sed -n 's/.* cuda=\([0-9]*\).*/\1/p' <<<"$probe")
if ((${#configs[@]} == 0)); then
  if [[ ${have_cuda:-0} -gt 0 ]]; then configs=("gpu-only:STARPU_SCHED=dmdas STARPU_NCPU=0"); fi
  configs+=("cpu-only:STARPU_SCHED=dmdas STARPU_NCUDA=0")
  for p in dmdas dmda heteroprio fnn-dtps fnn dtps boyer even; do configs+=("$p:STARPU_SCHED=$p"); done
fi
[[ ${have_cuda:-0} -gt 0 ]] || echo "gemm.sh: no CUDA worker here: gpu-only skipped" >&2

models=$(mktemp -d); trap 'rm -rf "$models"' EXIT
nblocks=$(((size + tile - 1) / tile))
xargs_=(-xyz "$size" -nblocks "$nblocks" -iter "$iter")
[[ $split == 3d ]] && xargs_+=(-3d)
flops=$(awk -v n="$size" 'BEGIN{printf "%.0f", 2*n*n*n}')
if [[ -n $example ]]; then
  echo "warm-up: $xname ${xargs_[*]} under dmdas (calibrates its performance models)" >&2
  STARPU_SCHED=dmdas "$example" "${xargs_[@]}" >/dev/null 2>&1 || echo "gemm.sh: the example's warm-up failed" >&2
fi

declare -A gms ggf xms xgf ncpu ncuda
names=()
i=0
for c in "${configs[@]}"; do
  i=$((i + 1))
  name=${c%%:*} envs=${c#*:}
  names+=("$name")
  echo "[$i/${#configs[@]}] $name ($envs)" >&2
  line=
  ((app)) && line=$(env FNNDTPS_MODEL_DIR="$models/$name-gemm" $envs "$gemm" --precision "$precision" \
           --size "$size" --tile "$tile" --split "$split" --iter "$iter" 2>/dev/null | grep '^RESULT' || true)
  if [[ -n $line ]]; then
    get() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$line"; }
    gms[$name]=$(get median_ms) ggf[$name]=$(get gflops) ncpu[$name]=$(get cpu) ncuda[$name]=$(get cuda)
  fi
  if [[ -n $example ]]; then
    pol=$(sed -n 's/.*STARPU_SCHED=\([^ ]*\).*/\1/p' <<<"$envs")
    extra=()
    [[ $ours == *" $pol "* ]] && extra=(STARPU_SCHED_LIB="$lib")
    out=$(env FNNDTPS_MODEL_DIR="$models/$name-example" "${extra[@]}" $envs "$example" "${xargs_[@]}" 2>/dev/null \
            | grep -v '^#' | tail -1 || true)
    read -r _ _ _ ms gf <<<"$out" || true
    if [[ ${gf:-} =~ ^[0-9.]+$ ]]; then xms[$name]=$ms xgf[$name]=$gf; fi
    unset ms gf
  fi
done

# Best built-in per column (higher GFLOP/s is better), the bound from the classes alone.
best() {  # best COLUMN_ARRAY_NAME
  local -n col=$1; local b= n
  for n in "${names[@]}"; do
    [[ $builtins == *" $n "* && -n ${col[$n]:-} ]] || continue
    if [[ -z $b ]] || awk -v a="${col[$n]}" -v c="$b" 'BEGIN{exit !(a>c)}'; then b=${col[$n]}; fi
  done
  echo "$b"
}
gbest=$(best ggf) xbest=$(best xgf)
bound=
# Only with both classes: with one, "alone" and "together" are the same run, up to noise.
if [[ -n ${ggf[gpu-only]:-} && -n ${ggf[cpu-only]:-} ]]; then
  bound=$(awk -v g="${ggf[gpu-only]}" -v c="${ggf[cpu-only]}" 'BEGIN{printf "%.2f", g + c}')
fi
ratio() { [[ -n $1 && -n $2 ]] && awk -v a="$1" -v b="$2" 'BEGIN{printf "%.2f", a/b}' || echo -; }

echo "GEMM ${xname} ${size}^3, split $split, tile $tile ($nblocks blocks a dimension), $iter iterations; GFLOP/s = 2 n^3 / time"
echo "gemm: our app, median of iterations 1..$((iter - 1)), A and B kept on the devices, C home each time.  $xname: StarPU's example, mean of its $iter iterations, A and B kept on the devices"
[[ -n $bound ]] && echo "divisible-load bound (classes alone added up): $bound GFLOP/s"
printf '%-12s %4s %4s %10s %10s %7s %8s %10s %10s %8s\n' config cpu cuda gemm_ms gemm_GF/s %bound vs_best \
  "${xname}_ms" "${xname}_GF/s" vs_best
[[ -n $csv ]] && echo "config,precision,size,tile,split,iter,cpu,cuda,gemm_median_ms,gemm_gflops,gemm_pct_bound,gemm_vs_best_builtin,example_ms,example_gflops,example_vs_best_builtin" >"$csv"
for n in "${names[@]}"; do
  g=${ggf[$n]:-} x=${xgf[$n]:-}
  pct=$([[ -n $bound && -n $g ]] && awk -v a="$g" -v b="$bound" 'BEGIN{printf "%.1f", 100*a/b}' || echo -)
  printf '%-12s %4s %4s %10s %10s %7s %8s %10s %10s %8s\n' "$n" "${ncpu[$n]:--}" "${ncuda[$n]:--}" \
    "${gms[$n]:-$( ((app)) && echo failed || echo -)}" "${g:--}" "$pct" "$(ratio "$g" "$gbest")" "${xms[$n]:--}" "${x:--}" "$(ratio "$x" "$xbest")"
  [[ -n $csv ]] && echo "$n,$precision,$size,$tile,$split,$iter,${ncpu[$n]:-},${ncuda[$n]:-},${gms[$n]:-},$g,$pct,$(ratio "$g" "$gbest"),${xms[$n]:-},$x,$(ratio "$x" "$xbest")" >>"$csv"
done
exit 0
