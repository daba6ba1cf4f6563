"""Shared environment for the LeRobot interop scripts (Python oracle only; the product never runs Python).

Import this module BEFORE anything from `lerobot`: it forces offline Hugging Face Hub access
(HF_HUB_OFFLINE=1, no telemetry) and keeps the Hugging Face caches inside lrhost's cache folder.
(LeRobot 0.4.4 also needed a torchvision `VideoReader` shim here; 0.6.1 decodes with PyAV directly.)
"""

from __future__ import annotations

import os

# Keep Hugging Face caches (datasets' Arrow cache of the parquet files) inside lrhost's cache folder.
os.environ.setdefault(
    "HF_HOME", os.path.join(os.environ.get("LRHOST_CACHE", os.path.expanduser("~/.cache/lrhost")), "hf")
)
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("TQDM_DISABLE", "1")
os.environ.setdefault("SVT_LOG", "1")  # SVT-AV1 encoder: errors only

def torchcodec_usable() -> bool:
    """True when torchcodec imports AND loads its FFmpeg core (LeRobot only checks find_spec)."""
    try:
        from torchcodec.decoders import VideoDecoder  # noqa: F401
    except Exception:
        return False
    return True


def versions() -> dict:
    import importlib.metadata as md

    out = {}
    for name in ("lerobot", "torch", "torchvision", "numpy", "pyarrow", "datasets", "av", "pandas", "huggingface-hub"):
        try:
            out[name] = md.version(name)
        except md.PackageNotFoundError:
            out[name] = None
    return out
