#!/usr/bin/env python3
"""Write a small LeRobotDataset v3.0 with LeRobot's OWN writer (the interop oracle for lrhost's reader).

    make_lerobot_dataset.py ROOT [--episodes N] [--fps F] [--vcodec CODEC] [--repo-id ID]
                            [--height H --width W] [--seed S]

ROOT must not exist yet (LeRobot refuses to create into an existing folder). Everything is
deterministic (seeded, pattern-based), so two runs produce the same parquet values and the same
frame content (encoded video bytes may differ between encoder builds).

Features
  observation.state         float32 [6]     value = f(episode, frame) + seeded noise
  action                    float32 [4]
  observation.extra         float32 [2, 3]  (2-D -> datasets.Array2D column)
  observation.images.front  video  [H,W,3]  (default 64x96) gradient background + 12x12 white square whose position
                                            encodes frame_index (see front_frame()), blue = episode tint
  observation.images.wrist  image  [H,W,3]  PNG bytes in the data parquet (lossless, see wrist_frame());
                                            omitted with --no-image
  (observation.extra is omitted with --no-extra: LeRobot 0.6.1's merge cannot rewrite 2-D columns,
   see merge_datasets.py)
Tasks: 3 strings; episode e uses TASKS[e % 3]; episode 2 switches to TASKS[0] halfway, so it has
two tasks. Episode lengths cycle through LENGTHS.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _lerobot_compat  # noqa: E402  (offline env, before lerobot)

import numpy as np  # noqa: E402

H, W = 64, 96
LENGTHS = [23, 31, 17, 26, 19, 28, 21, 24]
TASKS = ["pick up the red cube", "open the drawer", "push the block to the left"]
SQ = 12


def set_size(height: int, width: int) -> None:
    global H, W
    if height <= SQ or width <= SQ:
        raise ValueError(f"frame size must exceed {SQ}x{SQ}")
    H, W = height, width


def square_pos(frame_index: int) -> tuple[int, int]:
    """Top-left (y, x) of the white square in frame `frame_index` of the front camera."""
    return (3 * frame_index) % (H - SQ), (5 * frame_index) % (W - SQ)


def front_frame(episode: int, frame_index: int) -> np.ndarray:
    y = np.arange(H, dtype=np.float32)[:, None]
    x = np.arange(W, dtype=np.float32)[None, :]
    img = np.empty((H, W, 3), dtype=np.uint8)
    img[..., 0] = (x * 255.0 / (W - 1)).astype(np.uint8)
    img[..., 1] = (y * 255.0 / (H - 1)).astype(np.uint8)
    img[..., 2] = (40 * episode + 20) % 256
    sy, sx = square_pos(frame_index)
    img[sy : sy + SQ, sx : sx + SQ, :] = 255
    return img


def wrist_frame(episode: int, frame_index: int) -> np.ndarray:
    y = np.arange(H)[:, None]
    x = np.arange(W)[None, :]
    img = np.empty((H, W, 3), dtype=np.uint8)
    img[..., 0] = ((x + y + 7 * frame_index) % 256).astype(np.uint8)
    img[..., 1] = ((x * 3 + 11 * episode) % 256).astype(np.uint8)
    img[..., 2] = ((((x // 8) + (y // 8) + frame_index) % 2) * 200).astype(np.uint8)
    return img


def features(with_image: bool = True, with_extra: bool = True) -> dict:
    feats = {
        "observation.state": {"dtype": "float32", "shape": (6,), "names": [f"j{i}" for i in range(6)]},
        "action": {"dtype": "float32", "shape": (4,), "names": ["ax", "ay", "az", "grip"]},
        "observation.extra": {"dtype": "float32", "shape": (2, 3), "names": None},
        "observation.images.front": {
            "dtype": "video",
            "shape": (H, W, 3),
            "names": ["height", "width", "channels"],
        },
        "observation.images.wrist": {
            "dtype": "image",
            "shape": (H, W, 3),
            "names": ["height", "width", "channels"],
        },
    }
    if not with_image:
        del feats["observation.images.wrist"]
    if not with_extra:
        del feats["observation.extra"]
    return feats


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("root", type=Path)
    ap.add_argument("--episodes", type=int, default=5)
    ap.add_argument("--fps", type=int, default=30)
    ap.add_argument("--vcodec", default="libsvtav1", help="libsvtav1 (LeRobot default), h264, hevc, auto")
    ap.add_argument("--repo-id", default="lrhost/interop")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--no-image", action="store_true", help="omit observation.images.wrist (video-only, "
                    "like most real datasets; LeRobot + datasets 4.x decode every image column on each "
                    "delta_timestamps query, which dominates loader benchmarks)")
    ap.add_argument("--no-extra", action="store_true", help="omit observation.extra (the 2-D Array2D column)")
    ap.add_argument("--height", type=int, default=H)
    ap.add_argument("--width", type=int, default=W)
    args = ap.parse_args()
    set_size(args.height, args.width)

    from lerobot.configs.video import RGBEncoderConfig
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    t0 = time.time()
    ds = LeRobotDataset.create(
        repo_id=args.repo_id,
        root=args.root,
        fps=args.fps,
        features=features(not args.no_image, not args.no_extra),
        robot_type="lrhost_fake",
        use_videos=True,
        rgb_encoder=RGBEncoderConfig(vcodec=args.vcodec),  # 0.6.1: the codec lives in the encoder config
        video_backend="pyav",
    )
    rng = np.random.default_rng(args.seed)
    for ep in range(args.episodes):
        n = LENGTHS[ep % len(LENGTHS)]
        for f in range(n):
            task = TASKS[ep % len(TASKS)]
            if ep == 2 and f >= n // 2:
                task = TASKS[0]
            state = (np.arange(6, dtype=np.float32) * 0.1 + ep + f / 100.0 + rng.normal(0, 0.01, 6)).astype(np.float32)
            action = (np.sin(np.arange(4, dtype=np.float32) + f * 0.1 + ep) + rng.normal(0, 0.01, 4)).astype(np.float32)
            extra = (np.arange(6, dtype=np.float32).reshape(2, 3) * 1000.0 + ep * 100 + f).astype(np.float32)
            frame = {
                "observation.state": state,
                "action": action,
                "observation.extra": extra,
                "observation.images.front": front_frame(ep, f),
                "task": task,
            }
            if not args.no_image:
                frame["observation.images.wrist"] = wrist_frame(ep, f)
            if args.no_extra:
                del frame["observation.extra"]
            ds.add_frame(frame)
        ds.save_episode()
    if hasattr(ds, "finalize"):
        ds.finalize()
    info = json.loads((args.root / "meta" / "info.json").read_text())
    print(
        f"make_lerobot_dataset root={args.root} episodes={info['total_episodes']} frames={info['total_frames']} "
        f"tasks={info['total_tasks']} vcodec={args.vcodec} "
        f"stream_codec={info['features']['observation.images.front'].get('info', {}).get('video.codec')} "
        f"seconds={time.time() - t0:.1f} versions={json.dumps(_lerobot_compat.versions())}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
