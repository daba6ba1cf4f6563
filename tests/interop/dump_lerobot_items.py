#!/usr/bin/env python3
"""Dump LeRobotDataset items, exactly as LeRobot returns them, into a safetensors file (the oracle that
lrhost's C++ reader is compared with).

    dump_lerobot_items.py ROOT OUT.safetensors [--delta-timestamps JSON] [--indices 0,5,22 | all]
                          [--episodes 0,2] [--video-backend pyav|torchcodec] [--repo-id ID]
                          [';' ROOT OUT.safetensors [OPTIONS] ...]

Several dumps separated by ';' run one after another in this process (torch and LeRobot are
imported once); every one is parsed before the first runs.

Tensors: `item<i>/<key>` for every tensor in `dataset[i]` (i = position passed to __getitem__, i.e.
relative to the selected episodes when --episodes is given), dtypes as returned:
  * camera keys (video AND image features) are float32 CHW in [0,1] -- LeRobot's default
    (return_uint8=False, what training sees); both decoders do `uint8 / 255` (images: ToTensor), so
    `round(x * 255)` recovers the decoded uint8 pixels exactly;
  * with delta_timestamps on a camera key: (T, C, H, W); on a vector key: (T, D);
    `<key>_is_pad` is bool (T,).
Safetensors metadata (all strings): `item<i>/task` (the task string), and `lrhost` = JSON
{indices, delta_timestamps, video_backend, versions, keys, frame_dtype_note}.
Runs offline (HF_HUB_OFFLINE=1); ROOT must be a local dataset.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _lerobot_compat  # noqa: E402  (offline env, before lerobot)

import torch  # noqa: E402


def parse_int_list(text: str | None) -> list[int] | None:
    if text is None or text == "all":
        return None
    return [int(x) for x in text.replace(",", " ").split()]


def parse(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("root", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--delta-timestamps", default=None, help='JSON, e.g. \'{"action": [0, 0.0333333]}\'')
    ap.add_argument("--indices", default=None, help="comma/space separated, or 'all' (default: boundary set)")
    ap.add_argument("--episodes", default=None, help="episode subset passed to LeRobotDataset(episodes=...)")
    ap.add_argument("--video-backend", default="pyav", choices=["pyav", "torchcodec"])
    ap.add_argument("--repo-id", default=None, help="default: read from nothing; any id works offline")
    ap.add_argument("--tolerance-s", type=float, default=1e-4)
    return ap.parse_args(argv)


def dump(args: argparse.Namespace) -> None:
    from safetensors.torch import save_file

    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    delta = json.loads(args.delta_timestamps) if args.delta_timestamps else None
    ds = LeRobotDataset(
        repo_id=args.repo_id or "lrhost/interop",
        root=args.root,
        episodes=parse_int_list(args.episodes),
        delta_timestamps=delta,
        tolerance_s=args.tolerance_s,
        video_backend=args.video_backend,
        download_videos=False,
    )
    n = len(ds)
    indices = parse_int_list(args.indices)
    if args.indices == "all":
        indices = list(range(n))
    elif indices is None:
        # episode boundaries of the selected episodes + first/last frames, deduplicated
        cand = {0, 1, n - 1, n // 2}
        pos = 0
        for ep in ds.meta.episodes:
            if ds.episodes is not None and ep["episode_index"] not in ds.episodes:
                continue
            length = ep["dataset_to_index"] - ep["dataset_from_index"]
            cand.update({pos, pos + length - 1})
            pos += length
        indices = sorted(i for i in cand if 0 <= i < n)

    tensors: dict[str, torch.Tensor] = {}
    meta: dict[str, str] = {}
    keys: dict[str, dict] = {}
    for i in indices:
        item = ds[i]
        for key, val in item.items():
            name = f"item{i}/{key}"
            if isinstance(val, torch.Tensor):
                tensors[name] = val.detach().cpu().contiguous()
                keys.setdefault(key, {"dtype": str(val.dtype).removeprefix("torch."), "shape": list(val.shape)})
            elif isinstance(val, str):
                meta[name] = val
                keys.setdefault(key, {"dtype": "string"})
            else:
                meta[name] = json.dumps(val)
                keys.setdefault(key, {"dtype": type(val).__name__})
    meta["lrhost"] = json.dumps(
        {
            "indices": indices,
            "episodes": ds.episodes,
            "num_frames": n,
            "delta_timestamps": delta,
            "video_backend": args.video_backend,
            "versions": _lerobot_compat.versions(),
            "keys": keys,
            "frame_dtype_note": "camera tensors are float32 = uint8/255 (LeRobot's default, return_uint8=False)",
        }
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(args.out), metadata=meta)
    print(
        f"dump_lerobot_items out={args.out} items={len(indices)} tensors={len(tensors)} "
        f"backend={args.video_backend} keys={json.dumps(keys)}"
    )


def main(argv: list[str]) -> int:
    jobs, words = [], []
    for word in argv + [";"]:
        if word != ";":
            words.append(word)
        elif words:
            jobs.append(parse(words))
            words = []
    for args in jobs:
        dump(args)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
