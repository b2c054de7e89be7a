#!/usr/bin/env bash
# End-to-end LWT (host memory to host memory) under our policies and StarPU's built-ins.
#   bench/lwt_e2e.sh LWT2D [--size S] [--levels L] [--units U] [--reps R] [--warmup W] [--csv FILE] [CONFIG...]
# A CONFIG is NAME:ENV, e.g. "dmdas:STARPU_SCHED=dmdas". The default set measures each
# worker class alone (gpu-only, cpu-only: dmdas with the other class off), then every policy
# on CPUs + GPUs. Prints medians (min, max) over R timed runs after W warm-up runs in one
# process, the divisible-load bound T* = 1 / (1/T_gpu + 1/T_cpu) from the classes measured
# alone in this run (DESIGN §8), each row's % of that bound and its ratio to the best built-in.
set -euo pipefail
usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; }
[[ ${1:-} == -h || ${1:-} == --help ]] && { usage; exit 0; }
(($# >= 1)) || { echo "usage: bench/lwt_e2e.sh LWT2D [--size S] ... (see --help)" >&2; exit 2; }
lwt2d=$1; shift
[[ -x $lwt2d && ! -d $lwt2d ]] || { echo "lwt_e2e: no lwt2d program at '$lwt2d' (the first argument)" >&2; exit 2; }
size=16384 levels=4 units=0 reps=5 warmup=3 csv=
configs=()
while (($#)); do
  case $1 in
    --size) size=$2; shift 2 ;;
    --levels) levels=$2; shift 2 ;;
    --units) units=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --csv) csv=$2; shift 2 ;;
    --*) echo "lwt_e2e: unknown option $1" >&2; exit 2 ;;
    *) configs+=("$1"); shift ;;
  esac
done
if ((${#configs[@]} == 0)); then
  configs=("gpu-only:STARPU_SCHED=dmdas STARPU_NCPU=0" "cpu-only:STARPU_SCHED=dmdas STARPU_NCUDA=0")
  for p in eager lws dmda dmdas heteroprio fnn-dtps fnn dtps boyer even; do configs+=("$p:STARPU_SCHED=$p"); done
fi
models=$(mktemp -d); trap 'rm -rf "$models"' EXIT
unit_args=(); ((units > 0)) && unit_args=(--units "$units")
declare -A med mn mx ncpu ncuda nunits
names=()
i=0
for c in "${configs[@]}"; do
  i=$((i + 1))
  name=${c%%:*} envs=${c#*:}
  echo "[$i/${#configs[@]}] $name ($envs)" >&2
  line=$(env STARPU_SILENT=1 FNNDTPS_MODEL_DIR="$models/$name" $envs "$lwt2d" demo --size "$size" --levels "$levels" \
           "${unit_args[@]}" --repeat "$reps" --warmup "$warmup" 2>/dev/null | grep '^RESULT' || true)
  names+=("$name")
  if [[ -z $line ]]; then med[$name]=; continue; fi
  get() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$line"; }
  med[$name]=$(get median_ms) mn[$name]=$(get min_ms) mx[$name]=$(get max_ms)
  ncpu[$name]=$(get cpu) ncuda[$name]=$(get cuda) nunits[$name]=$(get units)
done
bound=
if [[ -n ${med[gpu-only]:-} && -n ${med[cpu-only]:-} ]]; then
  bound=$(awk -v g="${med[gpu-only]}" -v c="${med[cpu-only]}" 'BEGIN{printf "%.3f", 1/(1/g + 1/c)}')
fi
best=
for n in eager lws dmda dmdas heteroprio; do
  v=${med[$n]:-}; [[ -z $v ]] && continue
  if [[ -z $best ]] || awk -v a="$v" -v b="$best" 'BEGIN{exit !(a<b)}'; then best=$v; fi
done
echo "LWT ${size}x${size} float32, $levels levels, forward, host to host; median of $reps after $warmup warm-up runs"
[[ -n $bound ]] && echo "divisible-load bound T* = 1/(1/T_gpu + 1/T_cpu) = $bound ms (gpu-only ${med[gpu-only]} ms, cpu-only ${med[cpu-only]} ms)"
[[ -n $best ]] && echo "best built-in on CPUs + GPU: $best ms"
printf '%-12s %5s %5s %6s %10s %10s %10s %8s %9s %9s\n' config cpu cuda units median_ms min_ms max_ms GB/s %bound vs_best
[[ -n $csv ]] && echo "config,size,levels,units,cpu,cuda,median_ms,min_ms,max_ms,reps,gbs,pct_bound,vs_best_builtin" >"$csv"
for n in "${names[@]}"; do
  m=${med[$n]:-}
  if [[ -z $m ]]; then printf '%-12s failed\n' "$n"; continue; fi
  gbs=$(awk -v s="$size" -v m="$m" 'BEGIN{printf "%.2f", 2*s*s*4/(m*1e6)}')
  pct=$([[ -n $bound ]] && awk -v b="$bound" -v m="$m" 'BEGIN{printf "%.1f", 100*b/m}' || echo -)
  vs=$([[ -n $best ]] && awk -v b="$best" -v m="$m" 'BEGIN{printf "%.2f", m/b}' || echo -)
  printf '%-12s %5s %5s %6s %10s %10s %10s %8s %9s %9s\n' "$n" "${ncpu[$n]}" "${ncuda[$n]}" "${nunits[$n]}" "$m" "${mn[$n]}" "${mx[$n]}" "$gbs" "$pct" "$vs"
  [[ -n $csv ]] && echo "$n,$size,$levels,${nunits[$n]},${ncpu[$n]},${ncuda[$n]},$m,${mn[$n]},${mx[$n]},$reps,$gbs,$pct,$vs" >>"$csv"
done
