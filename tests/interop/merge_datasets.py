#!/usr/bin/env python3
"""Merge local LeRobotDataset v3.0 folders with LeRobot's OWN merge code (interop oracle for lrhost's
dataset mixtures: a mixture weighted by frames with pooled stats must equal LeRobot's merged dataset).

    merge_datasets.py OUT_ROOT ROOT_A ROOT_B [ROOT_C ...] [--repo-id ID] [--no-concatenate-videos]
                      [--no-concatenate-data]

Runs exactly what `lerobot-edit-dataset --operation.type=merge --operation.roots=[...]` runs
(scripts/lerobot_edit_dataset.py handle_merge): load each root as LeRobotDataset(repo_id, root=ROOT),
then lerobot.datasets.dataset_tools.merge_datasets(), a wrapper of
lerobot.datasets.aggregate.aggregate_datasets(). Fully offline: _lerobot_compat sets HF_HUB_OFFLINE=1,
HF_LEROBOT_HOME points at a throw-away temp folder, and every dataset (inputs and output) is given an
explicit root, so nothing is looked up on, or downloaded from, the Hub. Nothing is monkeypatched.
OUT_ROOT must not exist yet (LeRobotDatasetMetadata.create refuses an existing folder).

Semantics of the merged dataset (LeRobot 0.6.1, lerobot/datasets/aggregate.py):
  * Requirements: identical fps, robot_type and features (video encoder keys under info ignored;
    they are kept where all inputs agree, else set to null). Otherwise ValueError.
  * Episodes: inputs in command-line order; input k's episodes keep their order. episode_index and
    index (global frame index) are shifted by the episodes/frames of the inputs before it;
    frame_index and timestamp are unchanged (per episode).
  * Tasks: union of the inputs' task strings, deduplicated, in first-appearance order (input A's
    tasks in A's task_index order, then B's new ones, ...); task_index = position in that list and
    every frame's task_index is remapped through its task string.
  * meta/stats.json: aggregate_stats([each input's meta/stats.json]) (compute_stats.py), per feature:
    count = sum n_i; mean = sum n_i mean_i / N; std = sqrt(sum n_i (std_i^2 + (mean_i - mean)^2) / N)
    (pooled population std); min/max = elementwise min/max; q01..q99 = count-weighted mean of the
    inputs' quantiles (an approximation, not the quantile of the pooled data). Per-episode stats in
    meta/episodes are copied, with index/episode_index shifted and task_index recomputed.
  * Videos: stream-copied (no re-encode) by concatenating whole source mp4 files (PyAV concat
    demuxer) into the current destination file until video_files_size_in_mb; each episode's
    videos/<key>/from_timestamp/to_timestamp is shifted by the duration of what precedes it there.
  * Image (PNG-in-parquet) features are kept (re-written through HF datasets' Image feature).
  * meta/stats.json's index/episode_index/task_index entries are the inputs' stats pooled as they are
    (NOT shifted/remapped), so they do not describe the merged columns; the per-episode stats do.
Limitation (LeRobot 0.6.1 + datasets 4.8.5 + pandas 2.3 in the interop venv): a feature with a 2-D
shape (datasets.Array2D column, e.g. make_lerobot_dataset.py's observation.extra) makes the merge fail
when it rewrites the data parquet through pandas (aggregate.py:622 -> io_utils.py:333 ArrowTypeError,
or with images aggregate.py:620 -> AttributeError 'v' from datasets' PandasArrayExtensionDtype
._metadata being a str). Not patched here: make inputs with make_lerobot_dataset.py --no-extra.
On failure the partly written OUT_ROOT is removed.
Exit status: 0 on success; 1 with an "merge_datasets: error: ..." line on stderr on failure.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
# A private LeRobot home: nothing from a user's ~/.cache/huggingface/lerobot is read, nothing lands there.
# Must be set before `lerobot` is imported (lerobot.utils.constants reads it at import time).
_TMP_HOME = tempfile.TemporaryDirectory(prefix="lrhost-merge-home-")
os.environ["HF_LEROBOT_HOME"] = _TMP_HOME.name
import _lerobot_compat  # noqa: E402  (offline env, before lerobot)


def fail(msg: str) -> int:
    print(f"merge_datasets: error: {msg}", file=sys.stderr)
    return 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_root", type=Path)
    ap.add_argument("roots", type=Path, nargs="+", help="input dataset roots, merged in this order")
    ap.add_argument("--repo-id", default="lrhost/merged", help="repo_id of the merged dataset")
    ap.add_argument("--no-concatenate-videos", action="store_true",
                    help="keep one mp4 per source file (MergeConfig.concatenate_videos=False)")
    ap.add_argument("--no-concatenate-data", action="store_true",
                    help="keep one parquet per source file (MergeConfig.concatenate_data=False)")
    args = ap.parse_args()

    if len(args.roots) < 2:
        return fail("need at least two input roots (OUT_ROOT ROOT_A ROOT_B ...)")
    for r in args.roots:
        if not (r / "meta" / "info.json").is_file():
            return fail(f"{r} is not a LeRobot dataset folder (no meta/info.json)")
    if len({r.resolve() for r in args.roots}) != len(args.roots):
        return fail("the same input root is given twice")
    if args.out_root.exists():
        return fail(f"{args.out_root} already exists (LeRobot refuses to create into an existing folder)")

    try:
        from lerobot.datasets.dataset_tools import merge_datasets
        from lerobot.datasets.lerobot_dataset import LeRobotDataset
    except Exception as e:  # noqa: BLE001
        return fail(f"cannot import LeRobot ({type(e).__name__}: {e})")

    try:
        # Same as handle_merge: one LeRobotDataset per (repo_id, root). The input repo_ids are only
        # labels here (the data is read from root); make them distinct per input.
        datasets = [
            LeRobotDataset(repo_id=f"local/input{i}_{r.resolve().name}", root=r.resolve(), video_backend="pyav")
            for i, r in enumerate(args.roots)
        ]
        merged = merge_datasets(
            datasets,
            output_repo_id=args.repo_id,
            output_dir=args.out_root.resolve(),
            concatenate_videos=not args.no_concatenate_videos,
            concatenate_data=not args.no_concatenate_data,
        )
    except Exception as e:  # noqa: BLE001
        traceback.print_exc()
        shutil.rmtree(args.out_root, ignore_errors=True)  # did not exist before (checked above)
        hint = ""
        if any(len(ft.get("shape") or ()) == 2 and ft.get("dtype") not in ("image", "video")
               for ft in datasets[0].meta.features.values()):
            hint = " (inputs have a 2-D feature; LeRobot 0.6.1's merge cannot rewrite Array2D columns, see --help)"
        return fail(f"LeRobot merge failed: {type(e).__name__}: {str(e)[:300]}{hint}")

    info = json.loads((args.out_root / "meta" / "info.json").read_text())
    print(
        f"merge_datasets out={args.out_root} inputs={len(args.roots)} "
        f"episodes={merged.meta.total_episodes} frames={merged.meta.total_frames} tasks={info['total_tasks']} "
        f"versions={json.dumps(_lerobot_compat.versions())}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
