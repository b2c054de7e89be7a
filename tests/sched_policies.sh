#!/usr/bin/env bash
# Our policies in a StarPU program that does not link our code, loaded the way users load
# them (STARPU_SCHED_LIB + STARPU_SCHED), beside StarPU's own eager, lws and dmda on the
# same task set; and STARPU_SCHED=help lists ours.
#   tests/sched_policies.sh PROGRAM LIBFNNDTPS
set -u
prog=$1 lib=$2
export STARPU_SILENT=1 STARPU_NCPU=${STARPU_NCPU:-4}
export FNNDTPS_MODEL_DIR=$(mktemp -d); trap 'rm -rf "$FNNDTPS_MODEL_DIR"' EXIT
passed=0 failed=0
for policy in fnn-dtps fnn dtps boyer even; do
  if out=$(STARPU_SCHED_LIB=$lib STARPU_SCHED=$policy "$prog" 2>&1) && [[ $out == "$policy: "* ]]; then
    passed=$((passed + 1)); echo "ok   $out"
  else
    failed=$((failed + 1)); echo "FAIL $policy: $out"
  fi
done
for policy in eager lws dmda; do
  if out=$(STARPU_SCHED=$policy "$prog" 2>&1) && [[ $out == "$policy: "* ]]; then
    passed=$((passed + 1)); echo "ok   $out"
  else
    failed=$((failed + 1)); echo "FAIL $policy: $out"
  fi
done
help=$(STARPU_SCHED_LIB=$lib STARPU_SCHED=help "$prog" 2>&1)
for policy in fnn-dtps fnn dtps boyer even; do
  if grep -q "^$policy[[:space:]]" <<<"$help"; then passed=$((passed + 1))
  else failed=$((failed + 1)); echo "FAIL STARPU_SCHED=help does not list $policy"; fi
done
# A bad emulation or batch setting ends the program with one line (DESIGN §9), before any task runs.
for setting in FNNDTPS_EMULATED_GPUS=9 FNNDTPS_EMULATED_GPUS=x FNNDTPS_SLOWDOWN=0:0.5 FNNDTPS_BATCH_GAP_MS=x \
               FNNDTPS_BATCH_GAP_MS=-1 FNNDTPS_CORUN_SLOWDOWN=x FNNDTPS_CORUN_SLOWDOWN=0.5; do
  env "$setting" STARPU_SCHED_LIB="$lib" STARPU_SCHED=dtps "$prog" >/dev/null 2>"$FNNDTPS_MODEL_DIR/err"
  rc=$?
  err=$(grep -v '^\[starpu\]' "$FNNDTPS_MODEL_DIR/err")
  if [[ $rc -ne 0 && $(wc -l <<<"$err") -eq 1 && $err == "fnndtps: "* ]]; then
    passed=$((passed + 1)); echo "ok   $setting: $err"
  else
    failed=$((failed + 1)); echo "FAIL $setting: exit $rc, stderr: $err"
  fi
done
echo "sched-policies: $passed passed, $failed failed"
((failed == 0))
