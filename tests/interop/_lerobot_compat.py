"""Shared helpers for the LeRobot interop scripts (Python oracle only; the product never runs Python).

Import this module BEFORE anything from `lerobot`:
  * forces offline Hugging Face Hub access (HF_HUB_OFFLINE=1, no telemetry);
  * restores `torchvision.io.VideoReader` for LeRobot 0.4.4's "pyav" video backend.

Why the shim: LeRobot 0.4.4's `decode_video_frames_torchvision` (backend "pyav") calls
`torchvision.set_video_backend("pyav")` and `torchvision.io.VideoReader(path, "video")`. torchvision
removed its video decoding API (VideoReader & co) before 0.26, and 0.26 is the only torchvision that
matches the pinned torch 2.11.0, so without the shim every video read fails with
`AttributeError: module 'torchvision.io' has no attribute 'VideoReader'`. The small adapter below
provides the behaviour LeRobot relies on, written against PyAV directly: iteration yields
{"data": RGB CHW uint8 (PyAV's to_rgb), "pts": frame time in seconds}, and seek(t) seeks backward to
the keyframe at or before t. LeRobot's own frame-selection code (nearest pts within tolerance_s,
/255 to float32) then runs unchanged.
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

import torch  # noqa: E402
import torchvision  # noqa: E402
import torchvision.io  # noqa: E402

VIDEOREADER_SHIMMED = False


class _PyAVVideoReader:
    """torchvision<=0.21 `VideoReader` with backend "pyav" (video streams only)."""

    def __init__(self, src: str, stream: str = "video", num_threads: int = 0) -> None:
        import av

        self._av = av
        self.container = av.open(src, metadata_errors="ignore")
        stream_type = stream.split(":")[0]
        stream_id = 0 if len(stream.split(":")) == 1 else int(stream.split(":")[1])
        if stream_type != "video":
            raise NotImplementedError("interop shim only decodes video streams")
        self.pyav_stream = {stream_type: stream_id}
        self._c = self.container.decode(**self.pyav_stream)

    def __iter__(self):
        return self

    def __next__(self) -> dict:
        try:
            frame = next(self._c)
        except self._av.error.EOFError:
            raise StopIteration from None
        pts = float(frame.pts * frame.time_base)
        data = torch.tensor(frame.to_rgb().to_ndarray()).permute(2, 0, 1)
        if data.numel() == 0:
            raise StopIteration
        return {"data": data, "pts": pts}

    def seek(self, time_s: float, keyframes_only: bool = False) -> "_PyAVVideoReader":
        if time_s < 0:
            time_s = 0
        stream = self.container.streams.get(**self.pyav_stream)[0]
        offset = int(round(time_s / stream.time_base))
        self.container.seek(offset, backward=True, any_frame=False, stream=stream)
        self._c = self.container.decode(**self.pyav_stream)
        return self


if not hasattr(torchvision.io, "VideoReader"):
    torchvision.io.VideoReader = _PyAVVideoReader
    VIDEOREADER_SHIMMED = True


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
