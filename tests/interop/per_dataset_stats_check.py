"""LeRobot's side of the per-dataset stats interop (run_mixture_merge_interop.sh).

per_dataset_stats_write.lua saved a policy trained-as-if on a mixture with dataset.stats = "per_dataset"
(OUT/policy) and a batch of every frame with lrhost's normalization of it (OUT/batch.safetensors). Here
LeRobot 0.6.1 loads, for each dataset of the mixture, the pipeline lrhost saved for it
(PolicyProcessorPipeline.from_pretrained(dir, config_filename="policy_preprocessor_<name>.json")),
checks that its normalizer holds exactly that dataset's meta/stats.json (as float32), normalizes that
dataset's samples of the batch with it, and compares with lrhost's per-sample result (bit-equal: the
same float32 formula on the same values). The default policy_preprocessor.json, which lerobot-eval
and lerobot-record read, must hold the first dataset's stats.

    python per_dataset_stats_check.py OUT ROOT_A ROOT_B ...
"""
import json
import os
import sys

import torch
from safetensors.torch import load_file
from lerobot.datasets.lerobot_dataset import LeRobotDatasetMetadata
from lerobot.processor import PolicyProcessorPipeline, TransitionKey
from lerobot.processor.normalize_processor import NormalizerProcessorStep


def normalizer_of(pipeline):
    steps = [s for s in pipeline.steps if isinstance(s, NormalizerProcessorStep)]
    assert len(steps) == 1, f"expected one normalizer step, got {[type(s).__name__ for s in pipeline.steps]}"
    return steps[0]


def check_stats(step, root, what):
    stats = LeRobotDatasetMetadata(repo_id="local/" + os.path.basename(root), root=root).stats
    for key in ("observation.state", "action"):
        for name in ("mean", "std", "min", "max"):
            want = torch.as_tensor(stats[key][name], dtype=torch.float32)
            got = step._tensor_stats[key][name]
            assert torch.equal(got, want), f"{what}: {key}.{name} is {got.tolist()}, dataset's {want.tolist()}"


def main():
    out, roots = sys.argv[1], sys.argv[2:]
    policy = os.path.join(out, "policy")
    names = json.load(open(os.path.join(policy, "per_dataset_stats.json")))["datasets"]
    assert names == [os.path.basename(r) for r in roots], f"per_dataset_stats.json lists {names}"
    batch = load_file(os.path.join(out, "batch.safetensors"))
    which = batch["raw.dataset_index"]
    default = PolicyProcessorPipeline.from_pretrained(policy, config_filename="policy_preprocessor.json")
    check_stats(normalizer_of(default), roots[0], "policy_preprocessor.json (the default)")
    for k, (name, root) in enumerate(zip(names, roots)):
        pipeline = PolicyProcessorPipeline.from_pretrained(policy, config_filename=f"policy_preprocessor_{name}.json")
        check_stats(normalizer_of(pipeline), root, f"policy_preprocessor_{name}.json")
        rows = (which == k).nonzero().flatten()
        assert len(rows) > 0, f"the batch has no sample of {name}"
        normalized = normalizer_of(pipeline)({
            TransitionKey.OBSERVATION: {"observation.state": batch["raw.observation.state"][rows]},
            TransitionKey.ACTION: batch["raw.action"][rows]})
        for key, got in (("observation.state", normalized[TransitionKey.OBSERVATION]["observation.state"]),
                         ("action", normalized[TransitionKey.ACTION])):
            mine = batch["normalized." + key][rows]
            assert torch.equal(got, mine), f"{name}: {key} normalized by LeRobot differs from lrhost's by " \
                                           f"{(got - mine).abs().max().item()}"
        print(f"ok: {name}: {len(rows)} samples normalized by LeRobot with policy_preprocessor_{name}.json "
              "equal lrhost's per-dataset normalization")
    print(f"per_dataset_stats_check: {len(names)} datasets")


if __name__ == "__main__":
    main()
