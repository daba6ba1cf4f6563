"""Per-operator self times from Chrome traces of LibTorch's profiler (lrhost's lr.profile, or
torch.profiler's export_chrome_trace), side by side for up to two traces: where does one training
step spend its time, and which operators differ between lrhost and LeRobot.

Self time is an operator's duration minus that of the operators nested in it on the same thread, so
an aten::linear that calls aten::addmm counts only its own overhead. Only CPU operators are summed
(on a GPU run, their times are launch times, not kernel times).

    python tests/bench/trace_ops.py lrhost.json [lerobot.json] [--top 25]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict


def self_times(path: str) -> dict[str, tuple[float, int]]:
    with open(path) as f:
        trace = json.load(f)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    by_thread: dict[tuple, list] = defaultdict(list)
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "Operator", "user_annotation") and "dur" in e:
            by_thread[(e.get("pid"), e.get("tid"))].append((float(e["ts"]), float(e["dur"]), e["name"]))
    totals: dict[str, list] = defaultdict(lambda: [0.0, 0])
    for ops in by_thread.values():
        ops.sort(key=lambda o: (o[0], -o[1]))
        stack: list[list] = []  # [end, name, self time so far]

        def close_until(ts: float) -> None:
            while stack and stack[-1][0] <= ts:
                end, name, own = stack.pop()
                totals[name][0] += own

        for ts, dur, name in ops:
            close_until(ts)
            if stack:
                stack[-1][2] -= dur
            stack.append([ts + dur, name, dur])
            totals[name][1] += 1
        close_until(float("inf"))
    return {name: (t / 1000.0, n) for name, (t, n) in totals.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("traces", nargs="+", help="one or two Chrome trace JSON files")
    ap.add_argument("--top", type=int, default=25, help="operators to list (by the first trace's self time)")
    args = ap.parse_args()
    if len(args.traces) > 2:
        ap.error("at most two traces")
    tables = [self_times(p) for p in args.traces]
    names = sorted(set().union(*tables), key=lambda n: -max(t.get(n, (0.0, 0))[0] for t in tables))
    header = f"{'operator':<48}" + "".join(f"{'self ms':>10}{'calls':>7}" for _ in tables)
    print("traces: " + " | ".join(args.traces))
    print(header)
    for name in names[: args.top]:
        row = f"{name[:47]:<48}"
        for t in tables:
            ms, n = t.get(name, (0.0, 0))
            row += f"{ms:>10.1f}{n:>7}"
        print(row)
    print(f"{'total':<48}" + "".join(f"{sum(v[0] for v in t.values()):>10.1f}{'':>7}" for t in tables))
    return 0


if __name__ == "__main__":
    sys.exit(main())
