#!/usr/bin/env python3
"""Compare LeRobot's items (dump_lerobot_items.py, safetensors) with lrhost's (dump_lrhost_items.lua, JSON).

    compare_items.py LEROBOT.safetensors LRHOST.json [--camera-tolerance 0] [--max-report 20]

For every item index in the LeRobot dump (lrhost must have dumped the same indices):
  * same key set. The one key LeRobot adds that lrhost does not return as a tensor is `task` (a
    string): it is compared with lrhost's `ds:task(task_index)` (the JSON's "tasks" table);
  * numeric features, `index`/`frame_index`/`episode_index`/`task_index`/`timestamp` and
    `<key>_is_pad`: same dtype, same shape, bit-equal values (float32 compared as bits);
  * cameras (lrhost uint8 [.., C, H, W], LeRobot float32 = uint8/255): LeRobot's value times 255 must
    be an integer (checked), and lrhost's uint8 must equal round(x * 255), exactly by default
    (--camera-tolerance N allows |diff| <= N and reports the largest difference).
Also checks the frame counts agree.

    compare_items.py --stats ROOT LRHOST.json   (LRHOST.json from dump_lrhost_items.lua stats=true)
compares lrhost's ds:stats() with LeRobot's load_stats(ROOT): dtype, shape and bits of every stat.
Several such comparisons, separated by ';' (each starting with --stats), run in this one process
(LeRobot is imported once); the exit status is then the number of failing ones.

Exits 1 with a listing of every mismatch (up to --max-report
details per key), 0 when everything matches.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

DTYPES = {"float32": np.float32, "float64": np.float64, "int64": np.int64, "int32": np.int32,
          "int16": np.int16, "int8": np.int8, "uint8": np.uint8, "bool": np.bool_}
# Keys LeRobot returns that lrhost does not return as tensors, and how they are checked instead.
LEROBOT_ONLY = {"task": "string; compared with lrhost ds:task(task_index)"}


def load_lerobot(path: str) -> tuple[dict[int, dict[str, np.ndarray]], dict[str, str], dict]:
    from safetensors import safe_open

    items: dict[int, dict[str, np.ndarray]] = {}
    with safe_open(path, framework="np") as f:
        meta = f.metadata() or {}
        for name in f.keys():
            item, key = name.split("/", 1)
            items.setdefault(int(item.removeprefix("item")), {})[key] = f.get_tensor(name)
    info = json.loads(meta.get("lrhost", "{}"))
    for i in info.get("indices", []):
        items.setdefault(int(i), {})
    strings = {k: v for k, v in meta.items() if k != "lrhost"}
    return items, strings, info


def lrhost_array(entry: dict) -> np.ndarray:
    dtype = DTYPES[entry["dtype"]]
    values = np.asarray(entry["values"], dtype=np.float64 if dtype == np.float32 else None)
    return values.astype(dtype).reshape(entry["shape"])


def where(shape: tuple[int, ...], flat_positions: np.ndarray, limit: int) -> list[tuple[int, ...]]:
    return [tuple(int(x) for x in np.unravel_index(p, shape)) for p in flat_positions[:limit]]


def compare_numeric(want: np.ndarray, got: np.ndarray, limit: int) -> list[str]:
    if want.dtype.kind == "f":
        bad = np.flatnonzero(want.reshape(-1).view(np.uint32 if want.dtype == np.float32 else np.uint64)
                             != got.reshape(-1).view(np.uint32 if got.dtype == np.float32 else np.uint64))
    else:
        bad = np.flatnonzero(want.reshape(-1) != got.reshape(-1))
    if bad.size == 0:
        return []
    w, g = want.reshape(-1), got.reshape(-1)
    lines = [f"{bad.size} of {want.size} values differ"]
    for p, at in zip(bad[:limit], where(want.shape, bad, limit)):
        lines.append(f"  at {list(at)}: lerobot {w[p]!r} lrhost {g[p]!r}")
    return lines


def compare_camera(want_float: np.ndarray, got: np.ndarray, tolerance: int, limit: int, report: dict) -> list[str]:
    scaled = want_float.astype(np.float64) * 255.0
    want = np.rint(scaled)
    off = np.abs(scaled - want).max(initial=0.0)
    lines = []
    if off > 1e-3:
        lines.append(f"lerobot camera values are not k/255 (max distance {off:.4g}): not a uint8/255 frame")
    diff = np.abs(want - got.astype(np.float64))
    report["max_abs_diff"] = max(report.get("max_abs_diff", 0), int(diff.max(initial=0)))
    bad = np.flatnonzero(diff.reshape(-1) > tolerance)
    if bad.size:
        w, g = want.reshape(-1), got.reshape(-1)
        lines.append(f"{bad.size} of {want.size} pixels differ by more than {tolerance} (max {int(diff.max())}, "
                     f"mean abs {diff.mean():.4f})")
        for p, at in zip(bad[:limit], where(want.shape, bad, limit)):
            lines.append(f"  at {list(at)}: lerobot {int(w[p])} lrhost {int(g[p])}")
    return lines


def compare_stats(root: str, lrhost_json: str, max_report: int, label: str) -> int:
    """lrhost's ds:stats() (from dump_lrhost_items.lua stats=true) vs LeRobot's load_stats(root): the
    same features and stat names, each stat with the dtype LeRobot's cast_stats_to_numpy gives it
    (np.array of the JSON list: float64, or int64 for integers such as count) and equal values."""
    from lerobot.datasets.io_utils import load_stats  # 0.6.1 moved it from lerobot.datasets.utils

    want = load_stats(Path(root)) or {}
    with open(lrhost_json) as f:
        got = json.load(f).get("stats") or {}
    if isinstance(got, list):
        got = {}
    problems, compared = [], 0
    for key in sorted(set(want) | set(got)):
        if key not in want or key not in got:
            problems.append(f"{key}: only in {'lrhost' if key in got else 'LeRobot'}'s stats")
            continue
        for stat in sorted(set(want[key]) | set(got[key])):
            if stat not in want[key] or stat not in got[key]:
                problems.append(f"{key}.{stat}: only in {'lrhost' if stat in got[key] else 'LeRobot'}'s stats")
                continue
            w = np.asarray(want[key][stat])
            g = lrhost_array(got[key][stat])
            compared += w.size
            if w.dtype != g.dtype or w.shape != g.shape:
                problems.append(f"{key}.{stat}: LeRobot {w.dtype}{list(w.shape)} lrhost {g.dtype}{list(g.shape)}")
                continue
            lines = compare_numeric(w, g, max_report)
            if lines:
                problems.append(f"{key}.{stat}: " + "\n    ".join(lines))
    tag = f"[{label}] " if label else ""
    if not want:
        problems.append(f"LeRobot found no meta/stats.json under {root}")
    if problems:
        print(f"{tag}compare_stats: MISMATCH ({len(problems)}) between {root}/meta/stats.json and {lrhost_json}")
        for p in problems:
            print("  - " + p)
        return 1
    print(f"{tag}compare_stats: OK features={len(want)} values={compared} (dtype and bits equal)")
    return 0


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--stats":
        ap = argparse.ArgumentParser(description="compare_items.py --stats ROOT LRHOST.json [';' --stats ...]: "
                                     "lrhost's ds:stats() vs LeRobot's load_stats(ROOT)")
        ap.add_argument("--stats", dest="root", required=True)
        ap.add_argument("lrhost")
        ap.add_argument("--max-report", type=int, default=10)
        ap.add_argument("--label", default="")
        jobs, words = [], []
        for word in sys.argv[1:] + [";"]:
            if word != ";":
                words.append(word)
            elif words:
                jobs.append(ap.parse_args(words))
                words = []
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import _lerobot_compat  # noqa: F401  (offline env, before lerobot)
        return sum(compare_stats(args.root, args.lrhost, args.max_report, args.label) != 0 for args in jobs)
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("lerobot")
    ap.add_argument("lrhost")
    ap.add_argument("--camera-tolerance", type=int, default=0, help="allowed |uint8 difference| per pixel")
    ap.add_argument("--max-report", type=int, default=20)
    ap.add_argument("--label", default="")
    args = ap.parse_args()

    lerobot, strings, info = load_lerobot(args.lerobot)
    with open(args.lrhost) as f:
        lrhost = json.load(f)
    tasks = lrhost.get("tasks") or {}
    if isinstance(tasks, list):  # an empty Lua table encodes as []
        tasks = {}

    problems: list[str] = []
    camera_report: dict = {}
    checked = {"values": 0, "keys": 0, "camera_pixels": 0}

    if "num_frames" in info and info["num_frames"] != lrhost["num_frames"]:
        problems.append(f"frame count: lerobot {info['num_frames']} lrhost {lrhost['num_frames']}")
    want_idx = sorted(lerobot)
    got_idx = sorted(int(i) for i in lrhost["items"])
    if want_idx != got_idx:
        problems.append(f"item indices: lerobot {want_idx} lrhost {got_idx}")

    for i in want_idx:
        got_item = lrhost["items"].get(str(i))
        if got_item is None:
            continue
        want_item = lerobot[i]
        want_keys = set(want_item) | {k.split("/", 1)[1] for k in strings if k.startswith(f"item{i}/")}
        missing = sorted(want_keys - set(got_item) - set(LEROBOT_ONLY))
        extra = sorted(set(got_item) - want_keys)
        if missing:
            problems.append(f"item {i}: keys LeRobot returns but lrhost does not: {missing}")
        if extra:
            problems.append(f"item {i}: keys lrhost returns but LeRobot does not: {extra}")
        # task string through task_index
        if f"item{i}/task" in strings:
            checked["keys"] += 1
            if "task_index" not in got_item:
                problems.append(f"item {i}: no task_index to check task {strings[f'item{i}/task']!r}")
            else:
                k = str(int(got_item["task_index"]["values"][0]))
                if tasks.get(k) != strings[f"item{i}/task"]:
                    problems.append(f"item {i} task: lerobot {strings[f'item{i}/task']!r} "
                                    f"lrhost ds:task({k}) = {tasks.get(k)!r}")
        for key in sorted(set(want_item) & set(got_item)):
            want = want_item[key]
            entry = got_item[key]
            got = lrhost_array(entry)
            checked["keys"] += 1
            tag = f"item {i} {key}"
            if tuple(want.shape) != tuple(got.shape):
                problems.append(f"{tag}: shape lerobot {list(want.shape)} lrhost {list(got.shape)}")
                continue
            if entry["dtype"] == "uint8" and want.dtype == np.float32:
                lines = compare_camera(want, got, args.camera_tolerance, args.max_report, camera_report)
                checked["camera_pixels"] += want.size
            elif want.dtype != got.dtype:
                problems.append(f"{tag}: dtype lerobot {want.dtype} lrhost {entry['dtype']}")
                continue
            else:
                lines = compare_numeric(want, got, args.max_report)
                checked["values"] += want.size
            if lines:
                problems.append(f"{tag} (shape {list(want.shape)}): " + "\n    ".join(lines))

    label = f"[{args.label}] " if args.label else ""
    if problems:
        print(f"{label}compare_items: MISMATCH ({len(problems)} problems) between {args.lerobot} and {args.lrhost}")
        for p in problems:
            print("  - " + p)
        return 1
    print(f"{label}compare_items: OK items={len(want_idx)} keys={checked['keys']} values={checked['values']} "
          f"camera_pixels={checked['camera_pixels']} camera_max_abs_diff={camera_report.get('max_abs_diff', 0)} "
          f"lerobot_only_keys={sorted(LEROBOT_ONLY)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
