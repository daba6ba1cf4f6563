"""Writes a random torchvision resnet18 state_dict with torch.save (the zip format torchvision's
resnet18-f37072fd.pth has) where the torch hub cache keeps it, for tests that cannot download the
real ImageNet weights: TORCH_HOME/hub/checkpoints/resnet18-f37072fd.pth.
Usage: python fake_resnet18_pth.py TORCH_HOME [--legacy]
--legacy writes the pre-1.6 non-zip format instead (lrhost must refuse it).
Uses torchvision when installed, else the same layout built by hand (torch only)."""
import os
import sys
from collections import OrderedDict

import torch
from torch import nn


def hand_made_resnet18():
    """torchvision.models.resnet18's modules under its names: conv1, bn1, layer1..4 of BasicBlocks
    (conv1, bn1, conv2, bn2, downsample.0/.1 where the shape changes), fc."""
    def block(cin, cout, stride):
        b = nn.Module()
        b.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        b.bn1 = nn.BatchNorm2d(cout)
        b.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        b.bn2 = nn.BatchNorm2d(cout)
        if stride != 1 or cin != cout:
            b.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
        return b

    net = nn.Module()
    net.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
    net.bn1 = nn.BatchNorm2d(64)
    for i, (cin, cout, stride) in enumerate([(64, 64, 1), (64, 128, 2), (128, 256, 2), (256, 512, 2)], 1):
        setattr(net, f"layer{i}", nn.Sequential(block(cin, cout, stride), block(cout, cout, 1)))
    net.fc = nn.Linear(512, 1000)
    return net


def main():
    torch_home, legacy = sys.argv[1], "--legacy" in sys.argv[2:]
    torch.manual_seed(0)
    try:
        import torchvision
        net = torchvision.models.resnet18()
    except ImportError:
        net = hand_made_resnet18()
    state = net.state_dict()
    # Statistics that differ from the defaults, so a buffer left unloaded shows.
    for key, value in state.items():
        if value.is_floating_point() and ("running" in key or key.endswith("bn1.bias")):
            value.uniform_(0.5, 1.5)
    assert isinstance(state, OrderedDict) and len(state) == 122, len(state)
    directory = os.path.join(torch_home, "hub", "checkpoints")
    os.makedirs(directory, exist_ok=True)
    torch.save(state, os.path.join(directory, "resnet18-f37072fd.pth"), _use_new_zipfile_serialization=not legacy)


if __name__ == "__main__":
    main()
