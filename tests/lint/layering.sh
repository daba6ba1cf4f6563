#!/usr/bin/env bash
# Layering check (DESIGN.md §2: no include points back up the layers; host/ never includes a Lua
# header). host/'s folders have one rank order, lowest first (LAYERS below); a folder may include its
# own files and any folder ranked below it, nothing else. Every #include "host/..." line of host/ is
# checked against that order, so any upward edge (and therefore any cycle) fails `ctest -L lint`,
# naming file:line, without a hand-kept list of forbidden pairs. A new folder must be ranked here.
#
#   tests/lint/layering.sh [SOURCE_ROOT]     (default: the clone this script is in)
set -euo pipefail
root="${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
cd "$root"

# Lowest first: util and io are the ground; nn knows torch modules, policy composes nn into LeRobot's
# policies, dist shards them, ckpt saves what dist and optim hold, accel runs steps, launch starts
# processes, cli is the command line. (optim sits below policy: a policy hands out ParamGroups.)
LAYERS=(util io config text metrics nn sim data optim policy dist ckpt accel launch cli)

failed=0
fail() {
  printf 'layering: %s\n' "$1" >&2
  failed=1
}

declare -A rank
for i in "${!LAYERS[@]}"; do rank[${LAYERS[$i]}]=$i; done

# host/ is plain C++: no Lua header, and nothing from the binding layer above it.
while IFS= read -r hit; do
  [ -n "$hit" ] && fail "host/ includes a Lua header or bindings/ (only bindings/ may): $hit"
done < <(grep -rnE --include='*.cpp' --include='*.hpp' --include='*.h' \
  '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"](bindings/|lua\.h|lualib\.h|lauxlib\.h|luajit\.h|lua\.hpp|luaconf\.h)' host || true)

for dir in host/*/; do
  folder=$(basename "$dir")
  [ -n "${rank[$folder]+x}" ] || fail "host/$folder has no rank: add it to LAYERS in tests/lint/layering.sh"
done

while IFS= read -r hit; do
  [ -n "$hit" ] || continue
  file=${hit%%:*}
  from=$(echo "$file" | sed -nE 's#^host/([a-z_]+)/.*#\1#p')
  [ -n "$from" ] || continue  # host/main.cpp and host/pch.hpp sit above every folder
  to=$(echo "$hit" | sed -nE 's#.*include[[:space:]]*"host/([a-z_]+)/.*#\1#p')
  [ -n "$to" ] && [ "$to" != "$from" ] || continue
  if [ -z "${rank[$to]+x}" ]; then
    fail "$hit: host/$to has no rank in LAYERS"
  elif [ "${rank[$to]}" -gt "${rank[$from]}" ]; then
    fail "$hit: host/$from includes host/$to, which sits above it"
  fi
done < <(grep -rnE --include='*.cpp' --include='*.hpp' --include='*.h' '^[[:space:]]*#[[:space:]]*include[[:space:]]*"host/' host || true)

if [ "$failed" -ne 0 ]; then
  echo "layering check failed: move the code down (see DESIGN.md §2) or, if the layers changed, LAYERS" >&2
  exit 1
fi
echo "layering check ok (${LAYERS[*]})"
