#!/usr/bin/env bash
# Format check: every tracked C++ source is exactly what the pinned clang-format (scripts/versions.env:
# clang-format-14, installed by scripts/setup) makes of it under .clang-format. Fails naming the files
# that differ and the command that fixes them. A formatter of another version formats differently, so
# only the pinned one is used; without it the check fails and says what to install.
#
#   tests/lint/clang_format.sh [SOURCE_ROOT]     (default: the clone this script is in)
set -euo pipefail
root="${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
cd "$root"
formatter=clang-format-14
if ! command -v "$formatter" >/dev/null; then
  echo "clang-format check: $formatter not found (scripts/setup installs it: apt-get install $formatter)" >&2
  exit 1
fi
# A fresh clone is a git work tree; a source tree without .git is checked by its folders instead.
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t sources < <(git ls-files '*.cpp' '*.hpp' '*.h')
else
  mapfile -t sources < <(find host bindings tests -name '*.cpp' -o -name '*.hpp' -o -name '*.h')
fi
unformatted=()
for f in "${sources[@]}"; do
  [ -f "$f" ] || continue  # deleted in the work tree, not yet in the index
  if ! "$formatter" --dry-run --Werror "$f" >/dev/null 2>&1; then unformatted+=("$f"); fi
done
if [ "${#unformatted[@]}" -ne 0 ]; then
  printf 'clang-format check: %d file(s) differ from %s:\n' "${#unformatted[@]}" "$formatter" >&2
  printf '  %s\n' "${unformatted[@]}" >&2
  echo "fix: $formatter -i ${unformatted[*]}" >&2
  exit 1
fi
echo "clang-format check ok (${#sources[@]} files)"
