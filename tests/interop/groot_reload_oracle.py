"""LeRobot 0.6.1 loads the GR00T folder lrhost saved (OUT/lrhost_policy, written by
tests/interop/groot_folder_check.cpp from groot_oracle.py's OUT/policy) and computes what its own folder
computes: the same state dict (bit-equal), the same processed batch, eval loss, chunk and postprocessed chunk.
The backbone geometry is groot_oracle.py's one monkeypatch, here read back from the tiny Qwen3-VL config it
stored in the Hub-layout cache.

    python groot_reload_oracle.py OUT
"""
import contextlib
import io
import json
import os
import sys
from pathlib import Path

OUT = Path(sys.argv[1]).resolve()
os.environ["HF_HUB_CACHE"] = str(OUT / "hf_cache")
os.environ["HF_HUB_OFFLINE"] = "1"
sys.path.insert(0, str(Path(__file__).resolve().parent))
import _lerobot_compat  # noqa: E402,F401  (offline hub; before any lerobot import)

import torch  # noqa: E402
from safetensors.torch import load_file  # noqa: E402
from transformers import Qwen3VLConfig  # noqa: E402

torch.set_num_threads(1)
import lerobot.policies.groot.groot_n1_7 as g17  # noqa: E402
from lerobot.configs.policies import PreTrainedConfig  # noqa: E402
from lerobot.policies.factory import make_pre_post_processors  # noqa: E402
from lerobot.policies.groot.modeling_groot import GrootPolicy  # noqa: E402

LOSS_SEED, CHUNK_SEED = 123, 7  # groot_oracle.py's
snapshot = next((OUT / "hf_cache").glob("models--nvidia--Cosmos-Reason2-2B/snapshots/*"))
tiny = json.loads((snapshot / "config.json").read_text())
g17._cosmos_reason2_qwen3_vl_config = lambda: Qwen3VLConfig(**tiny)


def load(folder: Path):
    cfg = PreTrainedConfig.from_pretrained(str(folder))
    with contextlib.redirect_stdout(io.StringIO()):
        policy = GrootPolicy.from_pretrained(str(folder), config=cfg)
    pre, post = make_pre_post_processors(cfg, pretrained_path=str(folder))
    return policy, pre, post


def run(policy, pre, post, batch):
    proc = pre({k: (v.clone() if isinstance(v, torch.Tensor) else list(v)) for k, v in batch.items()})
    policy.eval()
    torch.manual_seed(LOSS_SEED)
    with torch.no_grad():
        loss = policy.forward(proc)[0]
    torch.manual_seed(CHUNK_SEED)
    chunk = policy.predict_action_chunk(proc)
    return proc, loss, chunk, post(chunk.clone())


batch = dict(load_file(str(OUT / "raw_batch.safetensors")))
batch["task"] = json.loads((OUT / "raw_batch.json").read_text())["task"]
theirs, ours = load(OUT / "policy"), load(OUT / "lrhost_policy")
failures = []
sd1, sd2 = theirs[0].state_dict(), ours[0].state_dict()
if list(sd1) != list(sd2) or any(not torch.equal(sd1[k], sd2[k]) for k in sd1):
    failures.append("state dict differs")
if [n for n, p in theirs[0].named_parameters() if p.requires_grad] != \
        [n for n, p in ours[0].named_parameters() if p.requires_grad]:
    failures.append("trainable set differs")
a, b = run(*theirs, batch), run(*ours, batch)
for key, value in a[0].items():
    if isinstance(value, torch.Tensor) and not torch.equal(value, b[0][key]):
        failures.append(f"processed {key} differs")
for name, x, y in (("eval loss", a[1], b[1]), ("chunk", a[2], b[2]), ("postprocessed chunk", a[3], b[3])):
    if not torch.equal(x, y):
        failures.append(f"{name} differs")
# lrhost's weight-decay groups (groot_folder_check.cpp wrote them) against get_optim_params: the decay group
# (the optimizer's weight decay) and the one with weight_decay 0.0, by parameter name and order.
names = {id(p): n for n, p in theirs[0].named_parameters()}
lerobot_groups = [[names[id(p)] for p in g["params"]] for g in theirs[0].get_optim_params()]
lrhost_groups = json.loads((OUT / "lrhost_param_groups.json").read_text())
if [g["params"] for g in lrhost_groups] != lerobot_groups or [g["weight_decay"] for g in lrhost_groups] != [None, 0.0]:
    failures.append(f"weight-decay groups differ: lrhost {[len(g['params']) for g in lrhost_groups]}, LeRobot "
                    f"{[len(g) for g in lerobot_groups]}")
if failures:
    print("[groot_reload_oracle] FAIL: " + "; ".join(failures))
    sys.exit(1)
print(f"[groot_reload_oracle] LeRobot loads lrhost's folder: {len(sd1)} state dict entries bit-equal, processed "
      f"batch, eval loss {b[1].item():.9f}, chunk and postprocessed chunk equal to its own folder's; weight-decay "
      f"groups of {[len(g) for g in lerobot_groups]} parameters as get_optim_params")
