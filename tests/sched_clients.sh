#!/usr/bin/env bash
# The client scenarios of tests/sched_clients.c under our five policies, loaded the way users
# load them (STARPU_SCHED_LIB + STARPU_SCHED), and under StarPU's eager and dmdas (and prio for
# the priority scenario, since eager is a plain FIFO by design).
#   tests/sched_clients.sh PROGRAM LIBFNNDTPS [SCENARIO...]   (default: all of them)
#   tests/sched_clients.sh PROGRAM LIBFNNDTPS bad_settings
# bad_settings: a policy setting the policies refuse (non-finite or huge factors, a worker
# StarPU does not have, a non-integer, a STARPU_SCHED neither the library nor StarPU offers)
# ends the program at the policy's start with one
# "fnndtps:" line and exit status 2; good ones of the same variables run.
# For our policies, redux_cpy also asks for the summary (FNNDTPS_SUMMARY=1) and checks that
# the policy counted at least one batch per phase the program reports: the phases are
# separated by idle time, so a batch that never ends (frozen) shows as 1.
set -u
prog=$1 lib=$2
shift 2
scenarios=("$@")
((${#scenarios[@]})) || scenarios=(context workerids shared_read nodata priorities redux_cpy empty nodata_tiny)
ours=(fnn-dtps fnn dtps boyer even)
[[ -x $prog && -f $lib ]] || { echo "sched_clients.sh: no program $prog or no library $lib" >&2; exit 1; }
export STARPU_SILENT=1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0 skipped=0

# run SCENARIO POLICY [LIB]: one line, ok / skip / FAIL.
run() {
  local scenario=$1 policy=$2 with_lib=${3:-} ncpu=3 out rc
  # The context takes two of four workers; the others need three (2/3 is the spread bound).
  [[ $scenario == context ]] && ncpu=4
  # A fresh model directory and StarPU home per run: no run learns from another.
  rm -rf "$tmp/run"; mkdir -p "$tmp/run/models"
  local env=(STARPU_NCPU=$ncpu STARPU_SCHED=$policy STARPU_HOME=$tmp/run FNNDTPS_MODEL_DIR=$tmp/run/models)
  [[ -n $with_lib ]] && env+=(STARPU_SCHED_LIB=$lib FNNDTPS_SUMMARY=1)
  out=$(env "${env[@]}" timeout 60 "$prog" "$scenario" 2>"$tmp/err")
  rc=$?
  local err
  err=$(grep -v '^\[starpu\]' "$tmp/err")
  # The program's own lines name the policy and the scenario.
  if ((rc == 77)); then
    skipped=$((skipped + 1)); echo "skip $out"; return
  fi
  if ((rc == 124 || rc == 137)); then
    failed=$((failed + 1)); echo "FAIL $policy: $scenario: killed by timeout after 60 s"; return
  fi
  if ((rc != 0)); then
    failed=$((failed + 1))
    local why
    why=$(grep -v '^fnndtps summary\|^  ' <<<"$err" | head -3 | tr '\n' ' ')
    why=${why% }
    echo "FAIL ${why:-$policy: $scenario: exit $rc, nothing on stderr} (exit $rc)"
    return
  fi
  if [[ -n $with_lib && $scenario == redux_cpy ]]; then
    local phases batches
    phases=$(sed -n 's/.* \([0-9][0-9]*\) phases,.*/\1/p' <<<"$out")
    # One summary per policy instance (one per context): the global context's is the last.
    batches=$(sed -n 's/^fnndtps summary: policy [^,]*, \([0-9][0-9]*\) batches,.*/\1/p' <<<"$err" | tail -1)
    if [[ -z $phases || -z $batches ]]; then
      failed=$((failed + 1)); echo "FAIL $policy: $scenario: no phase count in \"$out\" or no summary line on stderr"; return
    fi
    if ((batches < phases)); then
      failed=$((failed + 1)); echo "FAIL $policy: $scenario: $batches batches for $phases phases separated by idle time"; return
    fi
    out="$out; $batches batches"
  fi
  # StarPU falls back to lws, silently, when the policy is not found.
  if [[ $out != "$policy: "* ]]; then
    failed=$((failed + 1)); echo "FAIL $policy: $scenario: ran under another policy: $out"; return
  fi
  passed=$((passed + 1)); echo "ok   $out"
}

if [[ ${scenarios[0]} == bad_settings ]]; then
  # run_setting SETTING EXPECT: under fnn-dtps (which reads every setting) through the library.
  run_setting() {
    local setting=$1 expect=$2 rc err
    rm -rf "$tmp/run"; mkdir -p "$tmp/run/models"
    env STARPU_NCPU=3 STARPU_SCHED=fnn-dtps STARPU_SCHED_LIB="$lib" STARPU_HOME="$tmp/run" \
      FNNDTPS_MODEL_DIR="$tmp/run/models" $setting timeout 60 "$prog" nodata_tiny >"$tmp/out" 2>"$tmp/err"
    rc=$?
    err=$(grep -v '^\[starpu\]' "$tmp/err")
    if [[ $expect == refused && $rc -eq 2 && $(wc -l <<<"$err") -eq 1 && $err == "fnndtps: "* ]] ||
       [[ $expect == runs && $rc -eq 0 ]]; then
      passed=$((passed + 1)); echo "ok   $setting: ${err:-$(cat "$tmp/out")}"
    else
      failed=$((failed + 1)); echo "FAIL $setting: expected it $expect; exit $rc, stderr: $err"
    fi
  }
  for setting in FNNDTPS_SLOWDOWN=0:inf FNNDTPS_SLOWDOWN=0:nan FNNDTPS_SLOWDOWN=nan:2 FNNDTPS_SLOWDOWN=99:2 \
                 FNNDTPS_SLOWDOWN=3:2 FNNDTPS_SLOWDOWN=0:1e300 FNNDTPS_SLOWDOWN=1.5:2 \
                 "FNNDTPS_SLOWDOWN=0:2 FNNDTPS_SLOWDOWN_AFTER_TASKS=nan" \
                 "FNNDTPS_SLOWDOWN=0:2 FNNDTPS_SLOWDOWN_AFTER_TASKS=-1" \
                 "FNNDTPS_SLOWDOWN=0:2 FNNDTPS_SLOWDOWN_AFTER_MS=nan" FNNDTPS_SLOWDOWN_AFTER_TASKS=2.5 \
                 FNNDTPS_HIDDEN=2.5 FNNDTPS_HIDDEN=1e1 STARPU_SCHED=nonexistent; do
    run_setting "$setting" refused
  done
  # StarPU's own policies still load with the library set.
  for setting in "FNNDTPS_SLOWDOWN=0:1,2:2 FNNDTPS_SLOWDOWN_AFTER_TASKS=5" FNNDTPS_HIDDEN=8 STARPU_SCHED=eager; do
    run_setting "$setting" runs
  done
  echo "sched-clients: $passed passed, $failed failed"
  ((failed == 0))
  exit
fi

for scenario in "${scenarios[@]}"; do
  for policy in "${ours[@]}"; do run "$scenario" "$policy" lib; done
  builtins=(eager dmdas)
  [[ $scenario == priorities ]] && builtins+=(prio)
  for policy in "${builtins[@]}"; do run "$scenario" "$policy"; done
done
echo "sched-clients: $passed passed, $failed failed, $skipped skipped"
((failed == 0))
