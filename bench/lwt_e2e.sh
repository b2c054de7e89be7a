#!/usr/bin/env bash
# End-to-end LWT (host memory to host memory) under StarPU's built-in schedulers.
#   bench/lwt_e2e.sh LWT2D [--size S] [--levels L] [--reps R] [--warmup W] [--csv FILE] [CONFIG...]
# A CONFIG is NAME:ENV, e.g. "dmdas-cpu+gpu:STARPU_SCHED=dmdas". Prints a table of medians
# (with min and max) and, with --csv, writes one row per configuration.
set -euo pipefail
lwt2d=$1; shift
size=16384 levels=4 reps=5 warmup=2 csv=
configs=()
while (($#)); do
  case $1 in
    --size) size=$2; shift 2 ;;
    --levels) levels=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --csv) csv=$2; shift 2 ;;
    --*) echo "lwt_e2e: unknown option $1" >&2; exit 2 ;;
    *) configs+=("$1"); shift ;;
  esac
done
if ((${#configs[@]} == 0)); then
  configs=("dmdas-cpu+gpu:STARPU_SCHED=dmdas"
           "dmdas-gpu-only:STARPU_SCHED=dmdas STARPU_NCPU=0"
           "dmdas-cpu-only:STARPU_SCHED=dmdas STARPU_NCUDA=0"
           "lws-cpu+gpu:STARPU_SCHED=lws"
           "heteroprio-cpu+gpu:STARPU_SCHED=heteroprio")
fi
[[ -n $csv ]] && echo "config,env,size,levels,units,cpu,cuda,median_ms,min_ms,max_ms,reps,gbs" >"$csv"
printf '%-22s %6s %5s %10s %10s %10s %8s\n' config cpu cuda median_ms min_ms max_ms GB/s
i=0
for c in "${configs[@]}"; do
  i=$((i + 1))
  name=${c%%:*} envs=${c#*:}
  echo "[$i/${#configs[@]}] $name ($envs)" >&2
  line=$(env STARPU_SILENT=1 $envs "$lwt2d" demo --size "$size" --levels "$levels" --repeat "$reps" \
           --warmup "$warmup" 2>/dev/null | grep '^RESULT' || true)
  if [[ -z $line ]]; then printf '%-22s failed\n' "$name"; continue; fi
  get() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$line"; }
  med=$(get median_ms)
  gbs=$(awk -v s="$size" -v m="$med" 'BEGIN{printf "%.2f", 2*s*s*4/(m*1e6)}')
  printf '%-22s %6s %5s %10s %10s %10s %8s\n' "$name" "$(get cpu)" "$(get cuda)" "$med" "$(get min_ms)" "$(get max_ms)" "$gbs"
  [[ -n $csv ]] && echo "$name,\"$envs\",$size,$levels,$(get units),$(get cpu),$(get cuda),$med,$(get min_ms),$(get max_ms),$reps,$gbs" >>"$csv"
done
