#!/usr/bin/env bash
# A node that starts late joins the job: node 0 of --nnodes 2 says every second whom it waits for,
# node 1 starts 4 s later, both jobs succeed. Hard timeouts on both launchers.
# Usage: late_node.sh LRHOST WORK_DIR RECIPE
set -uo pipefail
exe="$1" work="$2" recipe="$3"
rm -rf "$work"
mkdir -p "$work"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' \
  2>/dev/null || echo $((20000 + RANDOM % 20000)))
node() {
  LRHOST_WAIT_REPORT_S=1 timeout -k 5 60 "$exe" --nproc 1 --device cpu --nnodes 2 --node-rank "$1" \
    --master-addr 127.0.0.1 --master-port "$port" --rendezvous-timeout 30 --run-dir "$work/run" "$recipe"
}
node 0 >"$work/node0.out" 2>&1 &
node0=$!
trap 'kill -KILL "$node0" 2>/dev/null' EXIT
sleep 4
node 1 >"$work/node1.out" 2>&1
code1=$?
wait "$node0"
code0=$?
fail() { echo "FAILED: $*" >&2; cat "$work/node0.out" "$work/node1.out" >&2; exit 1; }
[ "$code0" -eq 0 ] && [ "$code1" -eq 0 ] || fail "node exit codes $code0 and $code1, expected 0 and 0"
grep -Eq "rendezvous: waiting for node 1 \(rank 1\) for [0-9]+ s. 1 of 2 ranks arrived" "$work/node0.out" ||
  fail "node 0 did not say that it waits for node 1"
grep -q "rank 0 of 2 met every rank" "$work/node0.out" && grep -q "rank 1 of 2 met every rank" "$work/node1.out" ||
  fail "the ranks did not meet"
echo "ok: node 1 joined 4 s late on port $port"
