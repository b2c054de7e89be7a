#!/usr/bin/env bash
# A device call's command: scripts/gpu/run.sh with these arguments, its output folder packed into
# one archive $OUT/all.tgz (a call brings back at most a few files), then the log's tail.
#   bash scripts/gpu/call.sh [tests] [SUITE[=ARGS]]...
# CALL_LIMIT (s, default 530): run.sh's own limit, so that the archive is written before the
# device's; SUITES_LIMIT (s, default 400): the suites' (run.sh).
set -u
g=$(mktemp -d); trap 'rm -rf "$g"' EXIT
export SUITES_LIMIT=${SUITES_LIMIT:-400}
timeout -k 5 "${CALL_LIMIT:-530}" env OUT="$g" bash scripts/gpu/run.sh "$@" >"$g/run.log" 2>&1
echo "run.sh rc=$?" >>"$g/run.log"
tar czf "${OUT:?}/all.tgz" -C "$g" .
grep -v "^ok " "$g/run.log" | tail -c 9000
