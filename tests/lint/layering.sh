#!/usr/bin/env bash
# Layering check (DESIGN.md §2: no include points back up the layers; host/ never includes a Lua
# header). Greps the #include lines of host/ and fails, naming file:line, when one crosses a rule
# below. It is cheap (no compiler), so a move that undoes a layering fix fails `ctest -L lint` at
# once instead of surfacing as a cycle much later. Add a rule here when a layering fix lands.
#
#   tests/lint/layering.sh [SOURCE_ROOT]     (default: the clone this script is in)
set -euo pipefail
root="${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
cd "$root"

failed=0
# report DESCRIPTION GREP_OUTPUT: prints the offending lines under the rule that they break.
report() {
  if [ -n "$2" ]; then
    printf 'layering: %s\n%s\n' "$1" "$2" >&2
    failed=1
  fi
}
# includes FOLDER REGEX: the #include "..." lines of FOLDER's sources whose path matches REGEX.
includes() {
  grep -rnE --include='*.cpp' --include='*.hpp' --include='*.h' "^[[:space:]]*#[[:space:]]*include[[:space:]]*[<\"]($2)" "$1" || true
}

# host/ is plain C++: no Lua header, and nothing from the binding layer above it.
report "host/ includes a Lua header (only bindings/ may)" \
  "$(includes host 'lua\.h|lualib\.h|lauxlib\.h|luajit\.h|lua\.hpp|luaconf\.h')"
report "host/ includes bindings/ (bindings sit above host)" "$(includes host 'bindings/')"

# folder: the host folders it must not include (each sits above it).
rules=(
  "host/util:host/(accel|ckpt|cli|config|data|dist|io|launch|metrics|nn|optim|policy|sim|text)/"
  "host/io:host/(accel|ckpt|cli|config|data|dist|launch|metrics|nn|optim|policy|sim|text)/"
  "host/nn:host/(accel|ckpt|cli|data|dist|launch|metrics|optim|policy|sim)/"
  "host/policy:host/(accel|cli|launch|sim)/"
  "host/sim:host/(accel|ckpt|cli|data|dist|launch|nn|optim|policy)/"
  "host/ckpt:host/(accel|cli|data|launch|sim)/"
)
for rule in "${rules[@]}"; do
  folder="${rule%%:*}" forbidden="${rule#*:}"
  report "$folder includes a folder above it ($forbidden)" "$(includes "$folder" "$forbidden")"
done

if [ "$failed" -ne 0 ]; then
  echo "layering check failed: move the code down (see DESIGN.md §2) or, if the layers changed, the rule" >&2
  exit 1
fi
echo "layering check ok"
