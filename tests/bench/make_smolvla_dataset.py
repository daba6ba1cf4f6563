#!/usr/bin/env python3
"""Write the SmolVLA-style loader benchmark dataset with LeRobot's OWN writer (LeRobot 0.6.1).

    make_smolvla_dataset.py ROOT [--episodes 20] [--frames 80] [--fps 30] [--height 480 --width 640]
                            [--vcodec libsvtav1] [--seed 7]

A LeRobotDataset v3.0 shaped like a SO-100/SO-101 SmolVLA fine-tuning set: three cameras
(observation.images.top, .wrist, .side), each H x W (default 480x640) video encoded by LeRobot's
default RGB encoder (libsvtav1, yuv420p, g=2, crf=30), observation.state and action float32 [6],
and a language task per episode (6 distinct tasks in meta/tasks.parquet; episode e uses
TASKS[e % 6]). Written with LeRobotDataset.create / add_frame / save_episode / finalize, so both
loaders read a dataset LeRobot itself produced. ROOT must not exist yet.

Frame content is synthetic but not flat: each camera crops a seeded, smooth random texture at an
offset that drifts with the frame (camera-like global motion), draws a moving block (the "object")
and adds mild per-pixel noise (std 3), so the AV1 stream carries real residual and motion data.
Deterministic for a given seed (the encoded bytes may differ between encoder builds).
The benchmark caches it under ~/.cache/lrhost/bench/smolvla_3cam_480x640 (scripts/bench smolvla-data).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "interop"))
import _lerobot_compat  # noqa: E402  (offline env, before lerobot)

import numpy as np  # noqa: E402

CAMERAS = ["observation.images.top", "observation.images.wrist", "observation.images.side"]
TASKS = [
    "pick up the red cube and place it in the bowl",
    "open the top drawer",
    "push the blue block onto the green target on the left",
    "stack the yellow cup on the white plate",
    "put the marker into the pencil holder",
    "close the lid of the box",
]
BLOCK = 64


def texture(rng: np.random.Generator, h: int, w: int) -> np.ndarray:
    """A smooth random RGB texture (h, w, 3) uint8: coarse noise upsampled bilinearly-ish."""
    coarse = rng.uniform(30, 225, size=(h // 32 + 2, w // 32 + 2, 3)).astype(np.float32)
    ys = np.linspace(0, coarse.shape[0] - 1.001, h)
    xs = np.linspace(0, coarse.shape[1] - 1.001, w)
    y0, x0 = ys.astype(int), xs.astype(int)
    fy, fx = (ys - y0)[:, None, None], (xs - x0)[None, :, None]
    c = coarse
    top = c[y0][:, x0] * (1 - fx) + c[y0][:, x0 + 1] * fx
    bot = c[y0 + 1][:, x0] * (1 - fx) + c[y0 + 1][:, x0 + 1] * fx
    img = top * (1 - fy) + bot * fy
    # fine detail: a faint high-frequency pattern
    yy, xx = np.mgrid[0:h, 0:w]
    img += (12 * np.sin(xx * 0.37 + yy * 0.11))[..., None]
    return np.clip(img, 0, 255).astype(np.uint8)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("root", type=Path)
    ap.add_argument("--episodes", type=int, default=20)
    ap.add_argument("--frames", type=int, default=80, help="frames per episode")
    ap.add_argument("--fps", type=int, default=30)
    ap.add_argument("--height", type=int, default=480)
    ap.add_argument("--width", type=int, default=640)
    ap.add_argument("--vcodec", default="libsvtav1", help="LeRobot's default AV1 encoder")
    ap.add_argument("--repo-id", default="lrhost/bench_smolvla")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    H, W = args.height, args.width

    from lerobot.configs.video import RGBEncoderConfig
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    joints = ["shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_roll", "gripper"]
    features = {
        "observation.state": {"dtype": "float32", "shape": (6,), "names": joints},
        "action": {"dtype": "float32", "shape": (6,), "names": joints},
    }
    for cam in CAMERAS:
        features[cam] = {"dtype": "video", "shape": (H, W, 3), "names": ["height", "width", "channels"]}

    t0 = time.time()
    ds = LeRobotDataset.create(
        repo_id=args.repo_id,
        root=args.root,
        fps=args.fps,
        features=features,
        robot_type="so101_follower",
        use_videos=True,
        rgb_encoder=RGBEncoderConfig(vcodec=args.vcodec),
        video_backend="pyav",
    )
    rng = np.random.default_rng(args.seed)
    margin = 64  # the texture is larger than the frame; the crop drifts inside it
    for ep in range(args.episodes):
        textures = [texture(rng, H + margin, W + margin) for _ in CAMERAS]
        colours = rng.integers(0, 256, size=(len(CAMERAS), 3), dtype=np.uint8)
        task = TASKS[ep % len(TASKS)]
        for f in range(args.frames):
            t = f / max(args.frames - 1, 1)
            state = (np.sin(np.arange(6, dtype=np.float32) + 6.0 * t + ep) + rng.normal(0, 0.01, 6)).astype(np.float32)
            action = (np.sin(np.arange(6, dtype=np.float32) + 6.0 * t + ep + 0.2) + rng.normal(0, 0.01, 6)).astype(np.float32)
            frame = {"observation.state": state, "action": action, "task": task}
            for c, cam in enumerate(CAMERAS):
                oy = int((margin - 1) * (0.5 + 0.5 * np.sin(2.1 * t + c)))
                ox = int((margin - 1) * (0.5 + 0.5 * np.cos(1.7 * t + 2 * c)))
                img = textures[c][oy : oy + H, ox : ox + W].astype(np.int16)
                by = int((H - BLOCK) * (0.5 + 0.45 * np.sin(3.0 * t + ep + c)))
                bx = int((W - BLOCK) * (0.5 + 0.45 * np.cos(2.0 * t + ep)))
                img[by : by + BLOCK, bx : bx + BLOCK] = colours[c]
                img += rng.normal(0, 3, size=img.shape).astype(np.int16)
                frame[cam] = np.clip(img, 0, 255).astype(np.uint8)
            ds.add_frame(frame)
        ds.save_episode()
    ds.finalize()
    info = json.loads((args.root / "meta" / "info.json").read_text())
    print(
        f"make_smolvla_dataset root={args.root} episodes={info['total_episodes']} frames={info['total_frames']} "
        f"tasks={info['total_tasks']} cameras={len(CAMERAS)} size={H}x{W} vcodec={args.vcodec} "
        f"stream_codec={info['features'][CAMERAS[0]].get('info', {}).get('video.codec')} "
        f"seconds={time.time() - t0:.1f} lerobot={_lerobot_compat.versions()['lerobot']}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
