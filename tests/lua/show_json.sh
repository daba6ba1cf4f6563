#!/usr/bin/env bash
# `lrhost show --json`: stdout must be exactly one JSON document, {"config": ..., "memory_plan": ...},
# whatever else the run prints (logs, the built-in dataset's encoder on first use go to stderr).
# Parsed with Python's json module, which rejects any text before or after the document.
# Usage: show_json.sh LRHOST WORK_DIR STRATEGY_PREFIX RECIPE [show arguments...]
set -euo pipefail
exe=$1 work=$2 strategy=$3
shift 3
rm -rf "$work"
mkdir -p "$work"
if ! timeout 120 "$exe" show --json "$@" > "$work/stdout.json" 2> "$work/stderr.txt"; then
  cat "$work/stderr.txt" >&2
  echo "FAIL: lrhost show --json $* failed" >&2
  exit 1
fi
python3 - "$work/stdout.json" "$strategy" <<'PY'
import json, sys
text = open(sys.argv[1]).read()
try:
    document = json.loads(text)
except json.JSONDecodeError as error:
    sys.exit(f"FAIL: stdout is not one JSON document ({error}):\n{text[:2000]}")
if sorted(document) != ["config", "memory_plan"]:
    sys.exit(f"FAIL: top-level keys are {sorted(document)}, expected config and memory_plan")
if not isinstance(document["config"].get("steps"), int):
    sys.exit("FAIL: config.steps is missing")
plan = document["memory_plan"]
if not plan or not plan["strategy"].startswith(sys.argv[2]):
    sys.exit(f"FAIL: memory_plan strategy {plan and plan['strategy']!r} does not start with {sys.argv[2]!r}")
print(f"ok: one JSON document, strategy {plan['strategy']}, {plan['parameters']} parameters")
PY
