#!/usr/bin/env bash
# Runs one launcher case and checks its outcome. Usage:
#   expect_launch.sh LRHOST RUN_DIR [options] -- lrhost-arguments...
#     --exit success|failure|N   expected exit code (default success)
#     --match REGEX              the output (stdout+stderr) must match (grep -E, per line; repeatable)
#     --no-match REGEX           the output must not match (repeatable)
#     --max-seconds S            the launcher must finish within S seconds
#     --file PATH=REGEX          PATH (relative to RUN_DIR) must exist and match REGEX (repeatable)
# RUN_DIR (the case's --run-dir, given again among the arguments) is emptied first. A hard timeout
# (60 s, then SIGKILL) makes the case unable to hang even if the launcher's own stop logic broke.
# @PORT@ in the arguments becomes a TCP port that was free a moment ago (multi-node cases need a
# fixed --master-port; a fixed number would collide with other test runs on the same machine).
set -uo pipefail
exe="$1" run_dir="$2"
shift 2
expect=success max_seconds="" matches=() no_matches=() files=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  case "$1" in
    --exit) expect="$2"; shift 2 ;;
    --match) matches+=("$2"); shift 2 ;;
    --no-match) no_matches+=("$2"); shift 2 ;;
    --max-seconds) max_seconds="$2"; shift 2 ;;
    --file) files+=("$2"); shift 2 ;;
    *) echo "expect_launch.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
shift  # --
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null ||
    echo $((20000 + RANDOM % 20000))
}
port="" arguments=()
for argument in "$@"; do
  if [[ "$argument" == *@PORT@* ]]; then
    port=${port:-$(free_port)}
    argument=${argument//@PORT@/$port}
  fi
  arguments+=("$argument")
done
set -- "${arguments[@]}"
rm -rf "$run_dir"
mkdir -p "$(dirname "$run_dir")"

hard_limit=60
start_ms=$(($(date +%s%N) / 1000000))
output=$(timeout -k 5 "$hard_limit" "$exe" "$@" 2>&1)
code=$?
elapsed_ms=$(($(date +%s%N) / 1000000 - start_ms))
elapsed=$(printf '%d.%03d' $((elapsed_ms / 1000)) $((elapsed_ms % 1000)))
fail() {
  printf '%s\n' "----- output (exit code $code, ${elapsed} s) -----" "$output" "-----" >&2
  echo "FAILED: $*" >&2
  exit 1
}

case "$expect" in
  success) [ "$code" -eq 0 ] || fail "expected exit code 0, got $code" ;;
  failure) [ "$code" -ne 0 ] || fail "expected a non-zero exit code, got 0" ;;
  *) [ "$code" -eq "$expect" ] || fail "expected exit code $expect, got $code" ;;
esac
[ "$elapsed_ms" -lt $((hard_limit * 1000)) ] || fail "the launcher hit the test's hard timeout of $hard_limit s"
for re in ${matches[@]+"${matches[@]}"}; do
  grep -Eq -- "$re" <<<"$output" || fail "output does not match '$re'"
done
for re in ${no_matches[@]+"${no_matches[@]}"}; do
  grep -Eq -- "$re" <<<"$output" && fail "output matches '$re' but must not"
done
if [ -n "$max_seconds" ] && [ "$elapsed_ms" -gt $((max_seconds * 1000)) ]; then
  fail "took ${elapsed} s, more than $max_seconds s"
fi
for spec in ${files[@]+"${files[@]}"}; do
  path="$run_dir/${spec%%=*}" re="${spec#*=}"
  [ -f "$path" ] || fail "expected file $path"
  grep -Eq -- "$re" "$path" || fail "$path does not match '$re'. It holds:
$(cat "$path")"
done
echo "ok: exit $code in ${elapsed} s"
