"""pi0 / pi05 processor pipelines against LeRobot 0.6.1 (run by pi_processors_interop.sh).

LeRobot's own make_pi0_pre_post_processors / make_pi05_pre_post_processors (dataset stats with q01/q99,
an offline Gemma-style tokenizer folder from tokenizer_gemma_interop.make_gemma in place of the gated
google/paligemma-3b-pt-224) save their pipelines; lrhost_pi_processors_check loads them, saves them back
and preprocesses a batch; LeRobot's PolicyProcessorPipeline.from_pretrained loads lrhost's files; the
normalized state/action, the pi05 prompts, token ids and attention masks must be identical on both sides.
"""
import json
import random
import subprocess
import sys
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tokenizer_gemma_interop as tg  # noqa: E402

from lerobot.configs import FeatureType, PolicyFeature  # noqa: E402
from lerobot.policies.pi0 import processor_pi0  # noqa: E402
from lerobot.policies.pi0.configuration_pi0 import PI0Config  # noqa: E402
from lerobot.policies.pi05 import processor_pi05  # noqa: E402
from lerobot.policies.pi05.configuration_pi05 import PI05Config  # noqa: E402
from lerobot.processor import PolicyProcessorPipeline  # noqa: E402
from lerobot.processor.converters import policy_action_to_transition, transition_to_policy_action  # noqa: E402

TASKS = ["push the block 10 cm left", "  pick_up the red_cube\n", "stack\n", "put it\nin the box  ", "x", "café 日本語"]


def main():
    check, work = sys.argv[1], Path(sys.argv[2])
    work.mkdir(parents=True, exist_ok=True)
    tokenizer = work / "tokenizer"
    tg.make_gemma(tokenizer, tg.gemma_corpus(random.Random(7))[:800], 600, {"add_bos_token": True, "add_eos_token": False})
    # LeRobot hard-codes the gated hub id; the same step class on the local folder.
    for module in (processor_pi0, processor_pi05):
        original = module.TokenizerProcessorStep
        module.TokenizerProcessorStep = lambda *a, _o=original, **k: _o(*a, **{**k, "tokenizer_name": str(tokenizer)})
    gen = torch.Generator().manual_seed(0)
    dim = 5
    stats = {}
    for key in ("observation.state", "action"):
        q01 = torch.rand(dim, generator=gen) - 1.5
        stats[key] = {"mean": torch.randn(dim, generator=gen), "std": torch.rand(dim, generator=gen) + 0.5,
                      "min": q01 - 0.2, "max": q01 + 3.2, "q01": q01, "q99": q01 + torch.rand(dim, generator=gen) + 1.0}
    stats["observation.state"]["q99"][1] = stats["observation.state"]["q01"][1]  # d = 0 -> 1e-8
    # States around [q01, q99] (normalized to about [-1.4, 1.4]): every bin region, -1 and 255 included.
    spread = torch.rand(len(TASKS), dim, generator=gen) * 1.4 - 0.2
    state_q01, state_q99 = stats["observation.state"]["q01"], stats["observation.state"]["q99"]
    batch = {"observation.state": state_q01 + (state_q99 - state_q01) * spread,
             "action": torch.randn(len(TASKS), 50, dim, generator=gen)}
    batch["observation.state"][0, 2] = float("nan")
    save_file(batch, str(work / "batch.safetensors"))
    (work / "tasks.json").write_text(json.dumps(TASKS))
    failures = 0
    for config_class, module, name in ((PI0Config, processor_pi0, "pi0"), (PI05Config, processor_pi05, "pi05")):
        config = config_class(device="cpu")
        config.input_features = {"observation.state": PolicyFeature(FeatureType.STATE, (dim,))}
        config.output_features = {"action": PolicyFeature(FeatureType.ACTION, (dim,))}
        pre, post = getattr(module, f"make_{name}_pre_post_processors")(config, stats)
        lerobot_dir, lrhost_dir = work / f"lerobot_{name}", work / f"lrhost_{name}"
        pre.save_pretrained(lerobot_dir)
        post.save_pretrained(lerobot_dir)
        subprocess.run([check, str(lerobot_dir), str(lrhost_dir), str(work / "batch.safetensors"), str(work / "tasks.json"),
                        str(work / f"result_{name}")], check=True)
        ours = load_file(str(work / f"result_{name}.safetensors"))
        prompts = json.loads((work / f"result_{name}.json").read_text())
        # The files: lrhost's JSON equals LeRobot's, and LeRobot loads lrhost's folder.
        for file in ("policy_preprocessor.json", "policy_postprocessor.json"):
            if json.loads((lerobot_dir / file).read_text()) != json.loads((lrhost_dir / file).read_text()):
                print(f"FAIL {name}: {file} differs"); failures += 1
        for source, folder in (("LeRobot's files", lerobot_dir), ("lrhost's files", lrhost_dir)):
            pre2 = PolicyProcessorPipeline.from_pretrained(folder, config_filename="policy_preprocessor.json")
            post2 = PolicyProcessorPipeline.from_pretrained(folder, config_filename="policy_postprocessor.json",
                                                            to_transition=policy_action_to_transition,
                                                            to_output=transition_to_policy_action)
            # The prompts: LeRobot's own steps up to the tokenizer.
            out = pre2({**{k: v.clone() for k, v in batch.items()}, "task": list(TASKS)})
            checks = [("observation.state", out["observation.state"], ours["observation.state"]),
                      ("action", out["action"], ours["action"]),
                      ("tokens", out["observation.language.tokens"], ours["observation.language.tokens"]),
                      ("attention_mask", out["observation.language.attention_mask"].to(torch.uint8),
                       ours["observation.language.attention_mask"]),
                      ("unnormalized action", post2(out["action"]), ours["unnormalized_action"])]
            for what, theirs, mine in checks:
                if theirs.shape != mine.shape or not torch.equal(theirs.nan_to_num(7.0), mine.nan_to_num(7.0)):
                    diff = (theirs.float() - mine.float()).abs().nan_to_num(0).max().item() if theirs.shape == mine.shape else None
                    print(f"FAIL {name} ({source}): {what} differs (max |diff| {diff})"); failures += 1
            if name == "pi05":
                transition = pre2.to_transition({**{k: v.clone() for k, v in batch.items()}, "task": list(TASKS)})
                for step in pre2.steps:
                    transition = step(transition)
                    if type(step).__name__ == "Pi05PrepareStateTokenizerProcessorStep":
                        break
                theirs = transition["complementary_data"]["task"]
                if theirs != prompts:
                    print(f"FAIL pi05 ({source}): prompts differ\n  lerobot {theirs!r}\n  lrhost  {prompts!r}"); failures += 1
                elif not any(" -1 " in p or "State: -1" in p for p in prompts) or not any(" 255" in p for p in prompts):
                    print(f"FAIL pi05: the batch does not reach bins -1 and 255: {prompts!r}"); failures += 1
                elif source == "lrhost's files":
                    print(f"     pi05 prompt example: {prompts[0]!r}")
        print(f"ok   {name}: files, normalized state/action, tokens, masks{', prompts' if name == 'pi05' else ''} compared")
    print(f"pi processors interop: {failures} mismatches")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
