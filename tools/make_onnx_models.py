#!/usr/bin/python3
"""Makes the small ONNX models shipped in assets/models/ and PyTorch's numbers for them.

Run with Debian's python3-torch (random weights, nothing downloaded):

    /usr/bin/python3 tools/make_onnx_models.py [OUT_DIR]     # default: assets/models

For each model NAME it writes NAME.onnx (opset 17, the batch dimension symbolic) and, in
NAME.ref/, what opscope's tests compare against:
    x.npy           an input batch (float32)
    y.npy           PyTorch's output for x
    r.npy           the weights of the loss L = sum(y * r)
    grad.<init>.npy dL/d(initializer) for every initializer that is a PyTorch parameter
Every parameter and buffer is drawn at random (so that no two initializers are equal and the
exporter keeps them all), and the models are exported without constant folding, so the
initializers are exactly the PyTorch state_dict entries and PyTorch's shape arithmetic
(Shape, Gather, Unsqueeze, Concat) stays in the file for the importer to fold.
"""
import os
import sys

import numpy as np
import onnx
import torch
import torch.nn as nn


class FashionCNN(nn.Module):
    """A Fashion-MNIST-sized CNN with BatchNorm: [N, 1, 28, 28] -> 10 logits."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(16)
        self.fc = nn.Linear(16 * 7 * 7, 10)

    def forward(self, x):
        x = torch.max_pool2d(torch.relu(self.bn1(self.conv1(x))), 2)
        x = torch.max_pool2d(torch.relu(self.bn2(self.conv2(x))), 2)
        return self.fc(torch.flatten(x, 1))


class ResNetBlock(nn.Module):
    """ResNet's basic block with a stride-2 downsampling shortcut (as torchvision's BasicBlock)."""

    def __init__(self, inplanes=8, planes=16):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride=2, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = nn.Sequential(nn.Conv2d(inplanes, planes, 1, stride=2, bias=False), nn.BatchNorm2d(planes))

    def forward(self, x):
        out = torch.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return torch.relu(out + self.downsample(x))


class Encoder(nn.Module):
    """One nn.TransformerEncoderLayer, batch_first: [N, T, 32] -> [N, T, 32]."""

    def __init__(self):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, dropout=0.0, batch_first=True)

    def forward(self, x):
        return self.layer(x)


def randomize(model, gen):
    """Every parameter and buffer at random: weights ~ N(0, 1/fan_in), norm scales near 1,
    biases and running means small, running variances in [0.5, 1.5)."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() > 1:
                p.copy_(torch.randn(p.shape, generator=gen) / p[0].numel() ** 0.5)
            elif name.endswith("weight"):  # BatchNorm and LayerNorm scales
                p.copy_(1 + 0.2 * torch.randn(p.shape, generator=gen))
            else:
                p.copy_(0.2 * torch.randn(p.shape, generator=gen))
        for name, b in model.named_buffers():
            if name.endswith("running_mean"):
                b.copy_(0.1 * torch.randn(b.shape, generator=gen))
            elif name.endswith("running_var"):
                b.copy_(torch.rand(b.shape, generator=gen) + 0.5)


def make(name, model, x, out_dir, gen):
    randomize(model, gen)
    model.eval()
    path = os.path.join(out_dir, name + ".onnx")
    torch.onnx.export(model, (x,), path, opset_version=17, do_constant_folding=False,
                      training=torch.onnx.TrainingMode.PRESERVE, input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
    onnx_model = onnx.load(path)
    onnx.checker.check_model(onnx_model)
    ref = os.path.join(out_dir, name + ".ref")
    os.makedirs(ref, exist_ok=True)
    for f in os.listdir(ref):
        os.remove(os.path.join(ref, f))
    y = model(x)
    r = torch.randn(y.shape, generator=gen)
    (y * r).sum().backward()
    np.save(os.path.join(ref, "x.npy"), x.numpy())
    np.save(os.path.join(ref, "y.npy"), y.detach().numpy())
    np.save(os.path.join(ref, "r.npy"), r.numpy())
    params = dict(model.named_parameters())
    buffers = dict(model.named_buffers())
    saved = 0
    for init in onnx_model.graph.initializer:
        if init.name in params:
            np.save(os.path.join(ref, "grad." + init.name + ".npy"), params[init.name].grad.numpy())
            saved += 1
        elif init.name not in buffers:
            raise SystemExit(f"{name}: initializer {init.name} is neither a parameter nor a buffer")
    if saved != len(params):
        raise SystemExit(f"{name}: {len(params)} parameters but {saved} of them are initializers")
    nodes = len(onnx_model.graph.node)
    print(f"{os.path.normpath(path)}: {nodes} nodes, {len(onnx_model.graph.initializer)} initializers, {saved} gradients in {os.path.normpath(ref)}/")


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "assets", "models")
    os.makedirs(out_dir, exist_ok=True)
    gen = torch.Generator().manual_seed(16)
    torch.manual_seed(16)
    make("fashion_cnn", FashionCNN(), torch.randn(2, 1, 28, 28, generator=gen), out_dir, gen)
    make("resnet_block", ResNetBlock(), torch.randn(2, 8, 8, 8, generator=gen), out_dir, gen)
    make("encoder", Encoder(), torch.randn(2, 6, 32, generator=gen), out_dir, gen)


if __name__ == "__main__":
    main()
