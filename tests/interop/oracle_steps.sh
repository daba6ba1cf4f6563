# Shared steps of the policy interop drivers (run_policy_interop.sh, run_smolvla_interop.sh), sourced
# after they set case_name, work, py, here, start and oracle_script (the oracle .py in this folder).
# Consecutive oracle commands run in one python (`<oracle> batch`, commands separated by ';' or
# '&&'): importing torch and LeRobot costs ~8 s of CPU per process, the commands a few each.
# shellcheck shell=bash

# Lines the libraries print on every run, hidden from the step summaries (never from a failure).
noise='^WARNING:\|^Loading weights\|^Reducing the number'
failures=0

step() { printf '[interop %s +%ds] %s\n' "$case_name" $((SECONDS - start)) "$*"; }

quiet() { # run a command, showing its output only when it fails (last line otherwise)
  local log="$work/last.log"
  if ! "$@" >"$log" 2>&1; then
    grep -v '^WARNING:' "$log" | tail -n 60
    echo "command failed: $*" >&2
    return 1
  fi
  grep -v "$noise" "$log" | tail -n 1
}

oracle() { # oracle CMD ARGS... ['&&' CMD ARGS...]: oracle steps; each one's last line is shown
  local log="$work/last.log"
  if ! "$py" "$here/$oracle_script" batch "$@" >"$log" 2>&1; then
    grep -v '^WARNING:' "$log" | tail -n 60
    echo "command failed: $oracle_script batch $*" >&2
    return 1
  fi
  # The last line before each '>>> <oracle> CMD' line and before the end.
  grep -v "$noise" "$log" | awk '/^>>> /{if (last != "") print last; last=""; next} {last=$0}
    END {if (last != "") print last}'
}

checks() { # checks LABEL CMD ARGS... [SEP LABEL CMD ARGS...]: oracle comparisons (SEP ';' or '&&'),
  # run by one python; each one's output is shown in full under its step line, each failing one counts
  local labels=() cmds=() word label_next=1
  for word in "$@"; do
    if [ "$label_next" = 1 ]; then
      labels+=("$word")
      label_next=0
    else
      cmds+=("$word")
      if [ "$word" = ";" ] || [ "$word" = "&&" ]; then label_next=1; fi
    fi
  done
  [ "${#labels[@]}" -gt 0 ] || return 0
  local log="$work/check.log" rc=0 n=0 line
  "$py" "$here/$oracle_script" batch "${cmds[@]}" >"$log" 2>&1 || rc=$?
  while IFS= read -r line; do
    case "$line" in
      ">>> "*"(skipped"*) step "${labels[n]} (skipped: an earlier step failed)"; n=$((n + 1)) ;;
      ">>> "*) step "${labels[n]}"; n=$((n + 1)) ;;
      WARNING:* | 'Loading weights'* | 'Reducing the number'*) ;;
      *) printf '%s\n' "$line" ;;
    esac
  done <"$log"
  # rc counts the failed commands; more than there are when python itself died (a signal).
  failures=$((failures + (rc < ${#labels[@]} ? rc : ${#labels[@]})))
}
