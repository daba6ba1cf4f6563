# The interop oracle's python for the interop drivers, sourced after they set `repo` (the clone):
# `require_oracle_python [IMPORTS]` sets `py` to LeRobot 0.6.1's venv python (scripts/setup-interop;
# LRHOST_INTEROP_PYTHON overrides it) or exits 77, ctest's skip code, saying why — when there is none,
# or when it cannot `import IMPORTS` (a comma-separated Python import list, e.g.
# "transformers, lerobot.policies.pi05.modeling_pi05").
# shellcheck shell=bash
require_oracle_python() {
  if [ -n "${LRHOST_INTEROP_PYTHON:-}" ]; then
    py="$LRHOST_INTEROP_PYTHON"
  elif ! py="$("$repo/scripts/setup-interop" --python 2>/dev/null)"; then
    echo "interop oracle unavailable (scripts/setup-interop --python failed); skipping"
    exit 77
  fi
  if [ -n "${1:-}" ] && ! "$py" -c "import $1" >/dev/null 2>&1; then
    echo "oracle python $py cannot import $1; skipping"
    exit 77
  fi
}
