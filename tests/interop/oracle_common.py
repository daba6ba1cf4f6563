"""Parts shared by the VLA interop oracles (smolvla_oracle.py, pi_oracle.py): reading a pretrained
folder's normalizer statistics, the key/shape/dtype diff of model.safetensors against a built model,
and the comparison of two protocol output files (`compare REF OTHER`) with per-group tolerance tables.

Nothing here imports LeRobot; every function that prints takes the caller's `log`.

Tolerance tables map an output group (the name up to its first '.' for `grad.*` and `norm.*`, the whole
name otherwise) to either "exact" (same integer values; bool and uint8 masks compare equal) or a tuple
(tol, floor[, scale_tol]): a tensor passes when
    max|other - ref| <= tol * max(floor, max|ref|)        (floor None: tol is absolute)
                        + scale_tol * grad_scale           (grad_scale: the largest |gradient| of REF)
The third term is a noise floor for tensors whose reference is analytically ~0 (a gradient that is
exactly zero, or pure rounding noise) so that it is judged against the model's gradients as a whole.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

import torch
from safetensors import safe_open
from safetensors.torch import load_file

Log = Callable[[str], None]

SAFETENSORS_DTYPES = {"F32": torch.float32, "BF16": torch.bfloat16, "F16": torch.float16, "F64": torch.float64,
                      "I64": torch.int64, "BOOL": torch.bool}


def read_json(path: Path) -> dict:
    with open(path) as f:
        return json.load(f)


def normalizer_stats(policy_dir: Path) -> dict[str, torch.Tensor]:
    """The preprocessor's normalizer statistics (its state_file), or {} when there is none."""
    path = policy_dir / "policy_preprocessor.json"
    if not path.exists():
        return {}
    for step in read_json(path)["steps"]:
        if step.get("registry_name") == "normalizer_processor" and step.get("state_file"):
            return load_file(str(policy_dir / step["state_file"]))
    return {}


def key_diff(policy: torch.nn.Module, model_file: Path) -> list[str]:
    """Every state_dict entry of the built model against model.safetensors: same key set, shapes and
    dtypes (a writer that drops a key LeRobot saves, such as an unused lm_head, fails here)."""
    with safe_open(str(model_file), framework="pt") as f:
        file_keys = {k: (list(f.get_slice(k).get_shape()), f.get_slice(k).get_dtype()) for k in f.keys()}
    sd = policy.state_dict()
    problems = []
    missing = [k for k in sd if k not in file_keys]
    unexpected = [k for k in file_keys if k not in sd]
    if missing:
        problems.append(f"{len(missing)} keys missing in {model_file.name}: {missing[:20]}")
    if unexpected:
        problems.append(f"{len(unexpected)} unexpected keys in {model_file.name}: {unexpected[:20]}")
    for k, t in sd.items():
        if k in file_keys:
            shape, dtype = file_keys[k]
            if shape != list(t.shape) or SAFETENSORS_DTYPES.get(dtype) != t.dtype:
                problems.append(f"{k}: file {shape} {dtype}, LeRobot {list(t.shape)} {t.dtype}")
    return problems


# ------------------------------------------------------------------------------------------- compare
def group_of(name: str) -> str:
    if name.startswith(("grad.", "norm.")):
        return name.split(".", 1)[0]
    return name


def compare_tensor(name: str, ref: torch.Tensor, got: torch.Tensor, table: dict, grad_scale: float):
    """Returns (problem or None, max |diff|, bound)."""
    if tuple(ref.shape) != tuple(got.shape):
        return f"shape {tuple(got.shape)} vs LeRobot {tuple(ref.shape)}", None, None
    tol = table.get(group_of(name))
    if tol is None:
        return f"no tolerance for group {group_of(name)!r}", None, None
    if tol == "exact":
        if ref.is_floating_point() or got.is_floating_point():
            return f"dtype {got.dtype} vs LeRobot {ref.dtype} (integer values expected)", None, None
        ok = torch.equal(ref.to(torch.int64), got.to(torch.int64))
        d = (ref.to(torch.int64) - got.to(torch.int64)).abs().max().item() if ref.numel() else 0
        if ok:
            return None, d, 0
        bad = (ref.to(torch.int64) != got.to(torch.int64)).nonzero()[:4].tolist()
        row = bad[0][0] if ref.dim() > 1 else slice(None)
        return (f"values differ at {bad}; row {bad[0][0] if ref.dim() > 1 else 0}: other {got[row].tolist()} "
                f"vs LeRobot {ref[row].tolist()}"), d, 0
    if not got.is_floating_point():
        return f"dtype {got.dtype} vs LeRobot {ref.dtype}", None, None
    r, g = ref.double(), got.double()
    if not torch.isfinite(g).all():
        return "non-finite values", None, None
    rel, floor, *scale_tol = tol
    peak = r.abs().max().item() if r.numel() else 0.0
    bound = rel if floor is None else rel * max(floor, peak)
    if scale_tol:
        bound += scale_tol[0] * grad_scale
    err = (r - g).abs()
    d = err.max().item() if err.numel() else 0.0
    if d <= bound:
        return None, d, bound
    i = int(err.argmax())
    return (f"max |diff| {d:.3g} > {bound:.3g}; worst at flat index {i}: "
            f"other {g.flatten()[i].item():.8g} vs LeRobot {r.flatten()[i].item():.8g}"), d, bound


def compare_meta(ref_path: Path, other_path: Path, log: Log, keys=("trainable", "parameters")) -> list[str]:
    """The lists `keys` of two OUT.meta.json files (written by the oracle's `run`) must be equal."""
    if not ref_path.exists() or not other_path.exists():
        log(f"note: {other_path.name if ref_path.exists() else ref_path.name} absent; parameter lists not compared")
        return []
    a, b = read_json(ref_path), read_json(other_path)
    bad = []
    for key in keys:
        if a.get(key) != b.get(key):
            la, lb = a.get(key) or [], b.get(key) or []
            first = next((i for i, (x, y) in enumerate(zip(la, lb)) if x != y), min(len(la), len(lb)))
            bad.append(f"meta {key}: differs at #{first} (LeRobot {la[first] if first < len(la) else '<end>'}, "
                       f"other {lb[first] if first < len(lb) else '<end>'}); lengths {len(la)} vs {len(lb)}")
    log(f"meta: {len(a['parameters'])} parameters, {len(a['trainable'])} trainable: "
        f"{'same names, order, shapes and dtypes' if not bad else 'MISMATCH'}")
    return bad


def compare_outputs(ref_file: str, other_file: str, tables: dict[str, dict], log: Log,
                    meta_keys=("trainable", "parameters")) -> int:
    """`compare REF OTHER`: every tensor of REF (LeRobot's protocol output) against OTHER with the table
    tables[precision], precision from REF's metadata ("fp32" when absent); tensors only in OTHER (a
    gradient of a frozen parameter, say) fail too; then REF.meta.json against OTHER.meta.json when both
    exist. Logs one line per group and every mismatch; returns 1 on any problem, else 0."""
    ref, got = load_file(ref_file), load_file(other_file)
    with safe_open(ref_file, framework="pt") as f:
        precision = (f.metadata() or {}).get("precision", "fp32")
    table = tables[precision]
    grad_scale = max((t.abs().max().item() for k, t in ref.items() if k.startswith("grad.") and t.numel()),
                     default=0.0)
    bad, worst = [], {}
    for name, r in ref.items():
        if name not in got:
            bad.append(f"{name}: missing in {other_file}")
            continue
        msg, d, bound = compare_tensor(name, r, got[name], table, grad_scale)
        if msg:
            bad.append(f"{name}: {msg}")
        g = group_of(name)
        n, wd, wname = worst.get(g, (0, -1.0, ""))
        if d is not None and d > wd:
            wd, wname = d, name
        worst[g] = (n + 1, wd, wname)
    for group, (n, d, wname) in worst.items():
        shown = "n/a (see MISMATCH)" if d < 0 else f"{d:.3g}" + (f" ({wname})" if n > 1 else "")
        log(f"{group}: {n} tensor(s), max |diff| {shown}; tolerance {table.get(group)}")
    extra = sorted(set(got) - set(ref))
    if extra:
        bad.append(f"{len(extra)} outputs only in {other_file} (e.g. a gradient of a frozen parameter): {extra[:8]}")
    bad += compare_meta(Path(f"{ref_file}.meta.json"), Path(f"{other_file}.meta.json"), log, meta_keys)
    shown = [b for b in bad if not b.startswith("grad.")][:20] + [b for b in bad if b.startswith("grad.")][:10]
    for b in shown:
        log("MISMATCH " + b)
    if len(bad) > len(shown):
        log(f"... and {len(bad) - len(shown)} more mismatches")
    log(f"{'FAILED' if bad else 'OK'} ({precision} tolerances): {len(ref)} reference tensors, {len(bad)} problem(s) "
        f"({other_file} vs LeRobot {ref_file})")
    return 1 if bad else 0
