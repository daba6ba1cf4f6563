#!/usr/bin/env python3
"""Print EpisodeAwareSampler's epoch order as JSON (oracle for lrhost's C++ sampler).

    sampler_order.py --seed S --epoch E --n N
    sampler_order.py --seed S --epoch E --episode-ranges 0:23,23:54,54:71 [--drop-first A] [--drop-last B]
                     [--episodes-to-use 0,2] [--start K] [--no-shuffle]
    sampler_order.py --seed S --epoch E --dataset ROOT [...]   (ranges from meta/episodes/*.parquet)

Algorithm = LeRobot reference 0.6.2 (`src/lerobot/datasets/sampler.py`, lerobot.md section 2.4):
  used episodes: per episode [from + drop_first, to - drop_last); episodes left with <= 0 frames
                 are skipped; logical positions 0..N-1 walk the used episodes in order
  epoch_seed   = int(np.random.SeedSequence([seed, epoch]).generate_state(1, dtype=np.uint64)[0])
  order        = torch.randperm(N, generator=torch.Generator().manual_seed(epoch_seed))
  yields         frame(order[k]) for k in start..N-1  (frame() maps a position through the ranges)
With only --n, the ranges are the single range [0, N).

Output: one JSON object {"algorithm", "seed", "epoch", "epoch_seed", "n", "start", "order": [...]}
("order" holds frame indices, i.e. dataset `index` values; N - start entries).

Pure numpy + torch: LeRobot itself is not needed. LeRobot 0.6.1's own `EpisodeAwareSampler` uses
this algorithm too; `lerobot_sampler_order()` runs it (the interop test compares lrhost with it and
checks that this re-implementation agrees). LeRobot 0.4.4's sampler did not (global torch RNG, no
seed/epoch, no resume state), which is why the algorithm is written out here.
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np
import torch


def epoch_seed(seed: int, epoch: int) -> int:
    return int(np.random.SeedSequence([seed, epoch]).generate_state(1, dtype=np.uint64)[0])


def parse_ranges(text: str) -> list[tuple[int, int]]:
    text = text.strip()
    if text.startswith("["):
        return [(int(a), int(b)) for a, b in json.loads(text)]
    out = []
    for part in text.replace(" ", "").split(","):
        a, b = part.split(":")
        out.append((int(a), int(b)))
    return out


def ranges_from_dataset(root: str) -> list[tuple[int, int]]:
    import glob
    import os

    import pyarrow.parquet as pq

    files = sorted(glob.glob(os.path.join(root, "meta", "episodes", "*", "*.parquet")))
    rows = []
    for f in files:
        t = pq.read_table(f, columns=["episode_index", "dataset_from_index", "dataset_to_index"]).to_pylist()
        rows.extend(t)
    rows.sort(key=lambda r: r["episode_index"])
    return [(r["dataset_from_index"], r["dataset_to_index"]) for r in rows]


def lerobot_sampler_order(
    seed: int,
    epoch: int,
    ranges: list[tuple[int, int]],
    drop_first: int = 0,
    drop_last: int = 0,
    episodes_to_use: list[int] | None = None,
    start: int = 0,
) -> tuple[int, list[int]]:
    """(len, order) from LeRobot's own EpisodeAwareSampler (0.6.1), positioned like a resume."""
    from lerobot.datasets.sampler import EpisodeAwareSampler

    sampler = EpisodeAwareSampler(
        [a for a, _ in ranges], [b for _, b in ranges], episode_indices_to_use=episodes_to_use,
        drop_n_first_frames=drop_first, drop_n_last_frames=drop_last, shuffle=True, seed=seed,
    )
    sampler.load_state_dict({"epoch": epoch, "start_index": start})
    return len(sampler), [int(i) for i in sampler]


def sampler_order(
    seed: int,
    epoch: int,
    ranges: list[tuple[int, int]],
    drop_first: int = 0,
    drop_last: int = 0,
    episodes_to_use: list[int] | None = None,
    start: int = 0,
    shuffle: bool = True,
) -> tuple[int, list[int]]:
    if drop_first < 0 or drop_last < 0:
        raise ValueError("drop counts must be >= 0")
    from_idx = np.asarray([r[0] for r in ranges], dtype=np.int64)
    to_idx = np.asarray([r[1] for r in ranges], dtype=np.int64)
    used = np.ones(len(ranges), dtype=bool)
    if episodes_to_use is not None:
        used[:] = False
        used[np.asarray(episodes_to_use, dtype=np.int64)] = True
    starts = from_idx + drop_first
    lengths = to_idx - drop_last - starts
    used &= lengths > 0
    if not used.any():
        raise ValueError("no frames left after drops")
    starts = starts[used]
    cum = np.cumsum(lengths[used])
    n = int(cum[-1])

    def frame(pos: int) -> int:
        ep = int(np.searchsorted(cum, pos, side="right"))
        return int(starts[ep]) + pos - (int(cum[ep - 1]) if ep > 0 else 0)

    if shuffle:
        perm = torch.randperm(n, generator=torch.Generator().manual_seed(epoch_seed(seed, epoch))).tolist()
        return n, [frame(perm[k]) for k in range(start, n)]
    return n, [frame(k) for k in range(start, n)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--epoch", type=int, default=0)
    ap.add_argument("--n", type=int, default=None, help="frames (single range [0,N)) when no ranges are given")
    ap.add_argument("--episode-ranges", default=None, help="'0:23,23:54' or JSON [[0,23],[23,54]]")
    ap.add_argument("--dataset", default=None, help="read episode ranges from a LeRobot v3.0 dataset root")
    ap.add_argument("--drop-first", type=int, default=0)
    ap.add_argument("--drop-last", type=int, default=0)
    ap.add_argument("--episodes-to-use", default=None, help="comma separated episode positions")
    ap.add_argument("--start", type=int, default=0, help="start_index inside the epoch (resume)")
    ap.add_argument("--no-shuffle", action="store_true")
    args = ap.parse_args()

    if args.episode_ranges:
        ranges = parse_ranges(args.episode_ranges)
    elif args.dataset:
        ranges = ranges_from_dataset(args.dataset)
    elif args.n is not None:
        ranges = [(0, args.n)]
    else:
        ap.error("give --n, --episode-ranges or --dataset")
    use = [int(x) for x in args.episodes_to_use.split(",")] if args.episodes_to_use else None
    n, order = sampler_order(
        args.seed, args.epoch, ranges, args.drop_first, args.drop_last, use, args.start, not args.no_shuffle
    )
    if args.n is not None and (args.episode_ranges or args.dataset) and args.n != n:
        print(f"sampler_order: warning: --n {args.n} != {n} frames in the ranges", file=sys.stderr)
    json.dump(
        {
            "algorithm": "lerobot-0.6.2-EpisodeAwareSampler",
            "seed": args.seed,
            "epoch": args.epoch,
            "epoch_seed": epoch_seed(args.seed, args.epoch),
            "n": n,
            "start": args.start,
            "shuffle": not args.no_shuffle,
            "order": order,
        },
        sys.stdout,
    )
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
