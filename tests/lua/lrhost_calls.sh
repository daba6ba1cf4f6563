# The lrhost calls the shell tests in this folder share (sourced; `exe` names the lrhost binary):
#   fail MESSAGE              prints FAIL: MESSAGE and exits 1
#   run LOG ARGS...           one lrhost call that must succeed, killed after 300 s; its log's tail on failure
#   refused LOG EXPECTED ARGS...  one lrhost call that must fail with EXPECTED in its output (120 s at most)
fail() { echo "FAIL: $*" >&2; exit 1; }
run() {
  local log=$1
  shift
  timeout 300 "$exe" "$@" > "$log" 2>&1 || { tail -n 30 "$log" >&2; fail "lrhost $*"; }
}
refused() {
  local log=$1 expected=$2
  shift 2
  if timeout 120 "$exe" "$@" > "$log" 2>&1; then fail "lrhost $* was not refused"; fi
  grep -qF -- "$expected" "$log" || fail "lrhost $*: expected '$expected' in: $(tail -3 "$log")"
}
