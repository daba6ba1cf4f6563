#!/usr/bin/env python3
"""Benchmark LeRobot's own training data path (peer for lrhost's C++ loader).

    lerobot_loader.py ROOT [--batch-size 64] [--num-workers 2] [--steps K] [--warmup W]
                      [--delta-timestamps JSON] [--video-backend pyav|torchcodec]
                      [--drop-n-last-frames D] [--prefetch-factor 4] [--no-persistent-workers]
                      [--mp-context spawn|fork] [--seed S]
                      [--smolvla-vlm DIR [--language tokenize|preprocess] [--max-length 48]
                       [--pad-language-to max_length|longest]]

Mirrors LeRobot 0.6.1 `lerobot_train.py` on CPU: LeRobotDataset(root, delta_timestamps,
video_backend) -> EpisodeAwareSampler(from/to indices, drop_n_last_frames, shuffle=True, seed,
absolute_to_relative_idx) -> torch DataLoader(batch_size, num_workers, shuffle=False, sampler,
pin_memory=False (CPU), drop_last=False, and 0.6.1's worker defaults: prefetch_factor=4,
persistent_workers=True, multiprocessing_context="spawn") -> `lerobot.utils.utils.cycle`.
Not included: accelerate's `prepare()` wrapper, preprocessor/normalisation, host->device copy.
With --smolvla-vlm DIR (a SmolVLM folder with tokenizer.json, e.g. recipes/assets/smolvla_tiny_vlm)
each timed batch also gets its language tokens in the main process, as lerobot-train's loop does
before the forward: --language tokenize (default) runs SmolVLA's two language steps on the batch's
`task` strings (NewLineTaskProcessorStep: append "\n"; then transformers AutoTokenizer(DIR)
with max_length, truncation, padding=--pad-language-to, padding_side="right", return_tensors="pt",
mask as bool), --language preprocess runs SmolVLA's whole preprocessor pipeline
(make_smolvla_pre_post_processors(SmolVLAConfig(features of the dataset, vlm_model_name=DIR),
dataset.meta.stats): rename, batch, newline, tokenizer, device cpu, normalizer).
torch threads = 1 in the main process and in every worker (fair comparison with lrhost).
Prints one line:
  lerobot_loader samples_per_s=... batch=64 workers=2 steps=K warmup=W seconds=... first_batch_s=...
                 peak_rss_main_mb=... peak_rss_total_mb=... frames=... backend=pyav lerobot=0.6.1
peak_rss_total_mb = peak over time of (main + all worker processes) RSS, sampled every 50 ms.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "interop"))
import _lerobot_compat  # noqa: E402  (offline env, before lerobot)

import torch  # noqa: E402


def _worker_init(_worker_id: int) -> None:
    torch.set_num_threads(1)


class RssSampler(threading.Thread):
    def __init__(self, period_s: float = 0.05) -> None:
        super().__init__(daemon=True)
        import psutil

        self.proc = psutil.Process()
        self.period_s = period_s
        self.peak_total = 0
        self._stop_evt = threading.Event()

    def run(self) -> None:
        import psutil

        while not self._stop_evt.is_set():
            total = 0
            try:
                total = self.proc.memory_info().rss
                for child in self.proc.children(recursive=True):
                    try:
                        total += child.memory_info().rss
                    except psutil.Error:
                        pass
            except psutil.Error:
                pass
            self.peak_total = max(self.peak_total, total)
            self._stop_evt.wait(self.period_s)

    def stop(self) -> None:
        self._stop_evt.set()
        self.join()


def make_language_step(args, dataset):
    """The per-batch language work of a SmolVLA training loop (see the module docstring)."""
    if args.language == "preprocess":
        from lerobot.utils.feature_utils import dataset_to_policy_features
        from lerobot.configs.types import FeatureType
        from lerobot.policies.smolvla.configuration_smolvla import SmolVLAConfig
        from lerobot.policies.smolvla.processor_smolvla import make_smolvla_pre_post_processors

        features = dataset_to_policy_features(dataset.meta.features)
        cfg = SmolVLAConfig(
            input_features={k: f for k, f in features.items() if f.type is not FeatureType.ACTION},
            output_features={k: f for k, f in features.items() if f.type is FeatureType.ACTION},
            device="cpu", vlm_model_name=str(args.smolvla_vlm.resolve()),
            tokenizer_max_length=args.max_length, pad_language_to=args.pad_language_to,
        )
        pre, _ = make_smolvla_pre_post_processors(cfg, dataset_stats=dataset.meta.stats)
        return pre

    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(args.smolvla_vlm))

    def tokenize(batch: dict) -> dict:
        tasks = [t if t.endswith("\n") else f"{t}\n" for t in batch["task"]]
        out = tokenizer(tasks, max_length=args.max_length, truncation=True, padding=args.pad_language_to,
                        padding_side="right", return_tensors="pt")
        batch["observation.language.tokens"] = out["input_ids"]
        batch["observation.language.attention_mask"] = out["attention_mask"].to(dtype=torch.bool)
        return batch

    return tokenize


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("root", type=Path)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--num-workers", type=int, default=2)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--delta-timestamps", default=None)
    ap.add_argument("--video-backend", default="pyav", choices=["pyav", "torchcodec"])
    ap.add_argument("--drop-n-last-frames", type=int, default=0)
    ap.add_argument("--prefetch-factor", type=int, default=4, help="lerobot-train's --prefetch_factor default")
    ap.add_argument("--no-persistent-workers", dest="persistent_workers", action="store_false")
    ap.add_argument("--mp-context", default="spawn", help="lerobot-train's --dataloader_multiprocessing_context")
    ap.add_argument("--seed", type=int, default=1000)
    ap.add_argument("--repo-id", default="lrhost/interop")
    ap.add_argument("--smolvla-vlm", type=Path, default=None,
                    help="tokenize each batch's tasks with this VLM folder's tokenizer (SmolVLA's way)")
    ap.add_argument("--language", default="tokenize", choices=["tokenize", "preprocess"])
    ap.add_argument("--max-length", type=int, default=48, help="SmolVLA's tokenizer_max_length")
    ap.add_argument("--pad-language-to", default="max_length", choices=["max_length", "longest"])
    args = ap.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(args.seed)  # lerobot-train's set_seed (the sampler itself is seeded below)

    from lerobot.datasets.lerobot_dataset import LeRobotDataset
    from lerobot.datasets.sampler import EpisodeAwareSampler
    from lerobot.utils.utils import cycle

    rss = RssSampler()
    rss.start()
    delta = json.loads(args.delta_timestamps) if args.delta_timestamps else None
    dataset = LeRobotDataset(
        args.repo_id, root=args.root, delta_timestamps=delta, video_backend=args.video_backend
    )
    sampler = EpisodeAwareSampler(
        dataset.meta.episodes["dataset_from_index"],
        dataset.meta.episodes["dataset_to_index"],
        episode_indices_to_use=dataset.episodes,
        drop_n_last_frames=args.drop_n_last_frames,
        shuffle=True,
        seed=args.seed,
        absolute_to_relative_idx=dataset.absolute_to_relative_idx,
    )
    loader = torch.utils.data.DataLoader(
        dataset,
        num_workers=args.num_workers,
        batch_size=args.batch_size,
        shuffle=False,
        sampler=sampler,
        pin_memory=False,
        drop_last=False,
        prefetch_factor=args.prefetch_factor if args.num_workers > 0 else None,
        persistent_workers=args.persistent_workers and args.num_workers > 0,
        multiprocessing_context=args.mp_context if args.num_workers > 0 else None,
        worker_init_fn=_worker_init if args.num_workers > 0 else None,
    )
    language = make_language_step(args, dataset) if args.smolvla_vlm else (lambda b: b)
    it = cycle(loader)
    t0 = time.perf_counter()
    batch = language(next(it))
    first_batch_s = time.perf_counter() - t0
    for _ in range(max(args.warmup - 1, 0)):
        batch = language(next(it))
    samples = 0
    t1 = time.perf_counter()
    for _ in range(args.steps):
        batch = language(next(it))
        samples += int(batch["index"].shape[0])
    seconds = time.perf_counter() - t1
    rss.stop()
    peak_main_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    shapes = {k: list(v.shape) for k, v in batch.items() if isinstance(v, torch.Tensor)}
    print(
        f"lerobot_loader samples_per_s={samples / seconds:.1f} batch={args.batch_size} "
        f"workers={args.num_workers} steps={args.steps} warmup={args.warmup} seconds={seconds:.2f} "
        f"first_batch_s={first_batch_s:.2f} peak_rss_main_mb={peak_main_mb:.0f} "
        f"peak_rss_total_mb={rss.peak_total / 2**20:.0f} frames={len(dataset)} "
        f"episodes={dataset.num_episodes} backend={args.video_backend} "
        f"persistent_workers={int(args.persistent_workers)} delta={int(delta is not None)} "
        f"cameras={len(dataset.meta.camera_keys)} "
        f"language={args.language if args.smolvla_vlm else 'none'} "
        f"lerobot={_lerobot_compat.versions()['lerobot']} torch={torch.__version__}"
    )
    print(f"lerobot_loader batch_shapes={json.dumps(shapes)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
