#!/usr/bin/env bash
# The command-line contract every program shares (apps/cli.hpp), run as a user would:
#   tests/cli_common.sh NAME=PROGRAM[:COMMAND] ...
# For each: "--help" and "-h" (alone, and after COMMAND where the program has commands) exit 0
# with the usage on stdout and nothing on stderr; an unknown flag exits 2 with nothing on
# stdout and exactly one line on stderr, "NAME: ..." naming the flag and --help.
# Exit 0 when every case holds, else 1.
set -u
(($# >= 1)) || { echo "usage: tests/cli_common.sh NAME=PROGRAM[:COMMAND] ..." >&2; exit 2; }
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
passed=0 fails=0
ok() { passed=$((passed + 1)); echo "ok   $1"; }
bad() { fails=$((fails + 1)); echo "FAIL $1"; sed 's/^/    /' "$dir/out" "$dir/err"; }

for spec in "$@"; do
  name=${spec%%=*} rest=${spec#*=}
  prog=${rest%%:*} cmd=
  [[ $rest == *:* ]] && cmd=${rest#*:}
  for args in "--help" "-h" ${cmd:+"$cmd --help" "$cmd -h"}; do
    # shellcheck disable=SC2086  # the words of $args are the arguments
    "$prog" $args >"$dir/out" 2>"$dir/err"; rc=$?
    if [[ $rc -eq 0 ]] && head -n1 "$dir/out" | grep -q '^usage: ' && [[ ! -s $dir/err ]]; then ok "$name $args"
    else bad "$name $args: exit $rc, want 0, usage on stdout, empty stderr"; fi
  done
  "$prog" ${cmd:+"$cmd"} --no-such-flag >"$dir/out" 2>"$dir/err"; rc=$?
  lines=$(wc -l <"$dir/err")
  if [[ $rc -eq 2 && $lines -eq 1 && ! -s $dir/out ]] && grep -q "^$name: .*'--no-such-flag'.*--help" "$dir/err"; then
    ok "$name ${cmd:+$cmd }--no-such-flag: $(cat "$dir/err")"
  else bad "$name ${cmd:+$cmd }--no-such-flag: exit $rc, $lines stderr lines, want 2 and one line naming the flag and --help"; fi
done
echo "cli_common: $passed passed, $fails failed"
((fails == 0))
