#!/usr/bin/env python3
"""The LeRobot half of the quantile_stats interop case (run_interop.sh quantile_stats).

    quantile_stats_check.py ORIGINAL AUGMENTED NORM_QUANTILES.json NORM_QUANTILE10.json

ORIGINAL: a LeRobot-written dataset with its own stats.json. AUGMENTED: a copy whose quantiles were
removed and then added back by `lrhost dataset stats`. Checks, with LeRobot 0.6.1 as the oracle:
  1. the quantiles lrhost wrote equal LeRobot's compute_quantile_stats_for_dataset (the code of
     augment_dataset_quantile_stats.py) on the same dataset, within 1e-6 relative;
  2. every other stat of AUGMENTED is the one of ORIGINAL, and the key order is kept;
  3. LeRobot's NormalizerProcessorStep (QUANTILES, QUANTILE10) with AUGMENTED's stats gives exactly
     lrhost's normalized values (NORM_*.json from quantile_norm.lua), and its unnormalizer the inverse.
Exits with the number of failed checks.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _lerobot_compat  # noqa: E402,F401  (offline env, before lerobot)

import numpy as np  # noqa: E402
import torch  # noqa: E402

QUANTILES = ["q01", "q10", "q50", "q90", "q99"]


def main() -> int:
    original, augmented, norm_q, norm_q10 = sys.argv[1:5]
    from lerobot.configs.types import FeatureType, NormalizationMode, PolicyFeature
    from lerobot.datasets import LeRobotDataset
    from lerobot.datasets.io_utils import load_stats
    from lerobot.processor import NormalizerProcessorStep, UnnormalizerProcessorStep
    from lerobot.scripts.augment_dataset_quantile_stats import compute_quantile_stats_for_dataset

    failures = 0
    want = compute_quantile_stats_for_dataset(LeRobotDataset(repo_id="lrhost/interop", root=original, download_videos=False))
    got = load_stats(Path(augmented))
    worst = 0.0
    compared = 0
    for key, stats in want.items():
        for q in QUANTILES:
            if key not in got or q not in got[key]:
                print(f"MISSING {key}.{q} in lrhost's stats.json"); failures += 1; continue
            w, g = np.asarray(stats[q], np.float64), np.asarray(got[key][q], np.float64)
            if w.shape != g.shape:
                print(f"SHAPE {key}.{q}: LeRobot {w.shape} lrhost {g.shape}"); failures += 1; continue
            rel = float(np.max(np.abs(w - g) / np.maximum(np.abs(w), 1e-12)))
            worst = max(worst, rel)
            compared += w.size
            if rel > 1e-6:
                print(f"MISMATCH {key}.{q}: relative error {rel:.3g}\n  LeRobot {w.ravel()[:6]}\n  lrhost  {g.ravel()[:6]}")
                failures += 1
    print(f"quantiles: {compared} values over {len(want)} features, worst relative error {worst:.3g}")

    before = json.loads((Path(original) / "meta" / "stats.json").read_text())
    after = json.loads((Path(augmented) / "meta" / "stats.json").read_text())
    if list(after)[: len(before)] != list(before):
        print("ORDER: the features of stats.json changed order"); failures += 1
    for key, stats in before.items():
        kept = [k for k in after.get(key, {}) if k not in QUANTILES]
        if kept != [k for k in stats if k not in QUANTILES]:
            print(f"ORDER/KEYS {key}: {list(stats)} -> {list(after.get(key, {}))}"); failures += 1
        for name, value in stats.items():
            if name not in QUANTILES and after.get(key, {}).get(name) != value:
                print(f"CHANGED {key}.{name}"); failures += 1
    print(f"other stats: {len(before)} features kept")

    ds = LeRobotDataset(repo_id="lrhost/interop", root=augmented, download_videos=False)
    state = torch.stack(list(ds.hf_dataset["observation.state"])).float()
    action = torch.stack(list(ds.hf_dataset["action"])).float()
    features = {"observation.state": PolicyFeature(FeatureType.STATE, tuple(state.shape[1:])),
                "action": PolicyFeature(FeatureType.ACTION, tuple(action.shape[1:]))}
    for mode, path in ((NormalizationMode.QUANTILES, norm_q), (NormalizationMode.QUANTILE10, norm_q10)):
        norm_map = {FeatureType.STATE: mode, FeatureType.ACTION: mode}
        step = NormalizerProcessorStep(features=features, norm_map=norm_map, stats=got)
        unstep = UnnormalizerProcessorStep(features=features, norm_map=norm_map, stats=got)
        lr = json.loads(Path(path).read_text())
        for key, x in (("observation.state", state), ("action", action)):
            ftype = features[key].type
            y = step._apply_transform(x, key, ftype)
            back = unstep._apply_transform(y, key, ftype, inverse=True)
            g = torch.tensor(lr[key]["values"], dtype=torch.float32).reshape(y.shape)
            gi = torch.tensor(lr[key]["inverse"], dtype=torch.float32).reshape(y.shape)
            same, same_inv = torch.equal(y, g), torch.equal(back, gi)
            print(f"{mode.value} {key}: normalized {'equal' if same else 'DIFFERENT'}, inverse "
                  f"{'equal' if same_inv else 'DIFFERENT'} ({y.numel()} values, range "
                  f"[{float(y.min()):.3f}, {float(y.max()):.3f}])")
            if not same:
                print(f"  max |diff| {float((y - g).abs().max()):.3g}"); failures += 1
            if not same_inv:
                print(f"  inverse max |diff| {float((back - gi).abs().max()):.3g}"); failures += 1
    return failures


if __name__ == "__main__":
    sys.exit(main())
