#!/usr/bin/python3
"""Makes the small ONNX models shipped in assets/models/ and PyTorch's numbers for them, and the
small versions of the models students bring that tests/onnx/models/ holds for the tests.

Run with Debian's python3-torch and torchvision (random weights, nothing downloaded):

    /usr/bin/python3 tools/make_onnx_models.py [OUT_DIR]            # default: assets/models
    /usr/bin/python3 tools/make_onnx_models.py --tests [OUT_DIR]    # default: tests/onnx/models
    /usr/bin/python3 tools/make_onnx_models.py --nd-tests [OUT_DIR] # only the 1-D/3-D CNNs (no torchvision)
    /usr/bin/python3 tools/make_onnx_models.py --zoo OUT_DIR [--tiny]

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

--zoo writes real architectures at full size, as a student would bring them (opset 14, random
weights, no references): torchvision's ViT-B/16 at 224x224, ResNet-50 and DenseNet-121 at
64x64, and a GPT-2-small-shaped decoder (12 layers, d=768, 12 heads, T=64). They are hundreds of
MB, made when bench_models runs and never committed. --tiny makes the same architectures as
deep but narrow (a few hundred KB at most), for the tests: depth shapes the graph view, width
only the weights.
"""
import os
import sys

import numpy as np
import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F


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


# --- the models students bring, small (tests/onnx/models) -----------------------------------
# Each is exported at opset 14, as the issue that asked for them did, without constant folding
# (so the initializers are the PyTorch parameters), its intermediate values renamed short (the
# files stay small). Beside each, NAME.ref/ holds PyTorch's numbers computed in float64 from the
# same float32 weights: y.npy for x.npy, r.npy the weights of L = sum(y * r), grad.x.npy = dL/dx
# (for float inputs) and grad.<init>.npy = dL/d(initializer), stored rounded to float32 (a
# relative 6e-8, far below the tests' 1e-4, at half the bytes). keyword_spotter and video_cnn (the
# 1-D and 3-D convolutions and pools of issue 44) are exported in float64 and their references
# stored unrounded: the test holds them to 1e-6.


def small_mobilenet_v3():
    """torchvision's MobileNetV3 (hardswish, squeeze-excitation with hardsigmoid): the first
    blocks of mobilenet_v3_small's configuration at half width, a 10-class head."""
    from functools import partial
    from torchvision.models.mobilenetv3 import InvertedResidualConfig, MobileNetV3
    bneck = partial(InvertedResidualConfig, width_mult=0.25)
    setting = [bneck(16, 3, 16, 16, True, "RE", 2, 1), bneck(16, 3, 72, 24, False, "RE", 2, 1),
               bneck(24, 5, 96, 40, True, "HS", 2, 1), bneck(40, 5, 120, 48, True, "HS", 1, 1)]
    return MobileNetV3(setting, last_channel=32, num_classes=10)


def small_deeplabv3_mobilenet_v3():
    """torchvision's DeepLabV3 on a dilated mobilenet_v3_large backbone (its first blocks at a
    quarter width) with the ASPP head at 16 channels: dilated convolutions, global pooling
    upsampled by bilinear interpolate, and the output interpolated back to the input's size."""
    from torchvision.models._utils import IntermediateLayerGetter
    from torchvision.models.mobilenetv3 import MobileNetV3, _mobilenet_v3_conf
    from torchvision.models.segmentation.deeplabv3 import ASPP, DeepLabV3
    setting, _ = _mobilenet_v3_conf("mobilenet_v3_large", width_mult=0.25, dilated=True)
    features = MobileNetV3(setting[:7], last_channel=32).features[:-1]  # the blocks, not the 6x-wide last conv
    channels = features[-1].out_channels
    head = nn.Sequential(ASPP(channels, [12, 24, 36], out_channels=8), nn.Conv2d(8, 8, 3, padding=1, bias=False),
                         nn.BatchNorm2d(8), nn.ReLU(), nn.Conv2d(8, 3, 1))

    class Segmenter(nn.Module):  # DeepLabV3 returns {"out": ...}: the tensor alone is exported
        def __init__(self):
            super().__init__()
            self.net = DeepLabV3(IntermediateLayerGetter(features, {str(len(features) - 1): "out"}), head)

        def forward(self, x):
            return self.net(x)["out"]

    return Segmenter()


def small_swin_t():
    """torchvision's Swin Transformer (swin_t's blocks): shifted windows with their attention
    mask, relative position bias, patch merging; 8 features, windows of 2."""
    import torchvision
    return torchvision.models.SwinTransformer(patch_size=[4, 4], embed_dim=8, depths=[2, 1], num_heads=[1, 2],
                                              window_size=[2, 2], num_classes=5)


class UNet(nn.Module):
    """A U-Net-style module: stride-2 convolutions with GroupNorm down, ConvTranspose2d with
    InstanceNorm2d up, a bilinear interpolate, skip connections concatenated."""

    def __init__(self):
        super().__init__()
        self.inc = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.GroupNorm(2, 8), nn.SiLU())
        self.down = nn.Sequential(nn.Conv2d(8, 16, 3, stride=2, padding=1), nn.GroupNorm(4, 16), nn.ReLU())
        self.bottom = nn.Sequential(nn.Conv2d(16, 16, 3, stride=2, padding=1), nn.InstanceNorm2d(16, affine=True), nn.ReLU())
        self.up = nn.ConvTranspose2d(16, 16, 2, stride=2)
        self.mix = nn.Sequential(nn.Conv2d(32, 8, 3, padding=1), nn.InstanceNorm2d(8), nn.ReLU())
        self.out = nn.Conv2d(16, 2, 1)

    def forward(self, x):
        a = self.inc(x)
        b = self.down(a)
        c = self.mix(torch.cat([self.up(self.bottom(b)), b], dim=1))
        c = F.interpolate(c, scale_factor=2, mode="bilinear", align_corners=False)
        return self.out(torch.cat([c, a], dim=1))


class KeywordSpotter(nn.Module):
    """A keyword-spotting CNN over a waveform [N, 1, L]: a strided Conv1d front end with
    BatchNorm1d and MaxPool1d, a grouped and a dilated Conv1d, AdaptiveAvgPool1d, a Linear head."""

    def __init__(self, keywords=5):
        super().__init__()
        self.front = nn.Sequential(nn.Conv1d(1, 8, 9, stride=2, padding=4), nn.BatchNorm1d(8), nn.ReLU(),
                                   nn.MaxPool1d(3, stride=2, padding=1))
        self.grouped = nn.Sequential(nn.Conv1d(8, 8, 5, padding=2, groups=4), nn.BatchNorm1d(8), nn.ReLU())
        self.dilated = nn.Sequential(nn.Conv1d(8, 12, 3, padding=2, dilation=2), nn.ReLU(), nn.AdaptiveAvgPool1d(4))
        self.head = nn.Linear(12 * 4, keywords)

    def forward(self, x):
        return self.head(torch.flatten(self.dilated(self.grouped(self.front(x))), 1))


class VideoCNN(nn.Module):
    """A small video classifier over clips [N, 3, T, H, W]: Conv3d with BatchNorm3d, AvgPool3d
    over space, a strided Conv3d, a global average and a Linear head."""

    def __init__(self, classes=4):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv3d(3, 6, 3, padding=1), nn.BatchNorm3d(6), nn.ReLU(), nn.AvgPool3d((1, 2, 2)))
        self.block = nn.Sequential(nn.Conv3d(6, 8, 3, stride=(1, 2, 2), padding=1), nn.BatchNorm3d(8), nn.ReLU(),
                                   nn.AvgPool3d(2), nn.AdaptiveAvgPool3d(1))
        self.head = nn.Linear(8, classes)

    def forward(self, x):
        return self.head(torch.flatten(self.block(self.stem(x)), 1))


class LSTMLanguageModel(nn.Module):
    """Embedding -> a 2-layer LSTM -> Linear: next-token logits for [T, B] token ids."""

    def __init__(self, vocab=20):
        super().__init__()
        self.embed = nn.Embedding(vocab, 8)
        self.lstm = nn.LSTM(8, 12, num_layers=2)
        self.head = nn.Linear(12, vocab)

    def forward(self, tokens):
        y, _ = self.lstm(self.embed(tokens))
        return self.head(y)


class GRUTagger(nn.Module):
    """Embedding -> a bidirectional, batch_first GRU -> Linear: a tag per token of [B, T] ids."""

    def __init__(self, vocab=15, tags=4):
        super().__init__()
        self.embed = nn.Embedding(vocab, 6)
        self.gru = nn.GRU(6, 5, batch_first=True, bidirectional=True)
        self.head = nn.Linear(10, tags)

    def forward(self, tokens):
        y, _ = self.gru(self.embed(tokens))
        return self.head(y)


class TiedEncoder(nn.Module):
    """A TransformerEncoderLayer left at PyTorch's initialisation: its norm biases and the
    attention's output bias are all zeros, so the exporter merges them into one initializer."""

    def __init__(self):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16, dropout=0.0, batch_first=True)

    def forward(self, x):
        return self.layer(x)


def shorten_names(m):
    """Renames the values nodes make to t0, t1, ... (graph inputs, outputs and initializers keep
    their names; node names keep PyTorch's module scopes)."""
    keep = {v.name for v in m.graph.input} | {v.name for v in m.graph.output} | {i.name for i in m.graph.initializer}
    keep |= {n.output[0] for n in m.graph.node if n.op_type == "Identity" and n.input[0] in keep}  # merged initializers' names
    names = {}
    for n in m.graph.node:
        for i, o in enumerate(n.output):
            if o and o not in keep:
                names[o] = names.get(o) or "t%d" % len(names)
                n.output[i] = names[o]
    for n in m.graph.node:
        for i, v in enumerate(n.input):
            if v in names:
                n.input[i] = names[v]


def make_test_model(name, model, x, out_dir, gen, randomized=True, float64=False):
    """float64=True exports the model in float64 and stores the references unrounded, for tests
    that hold opscope to PyTorch within 1e-6 in float64."""
    if randomized:
        randomize(model, gen)
    model.eval()
    if float64:
        model, x = model.double(), x.double()
    stored = (lambda t: t.detach().numpy()) if float64 else (lambda t: t.detach().float().numpy())
    path = os.path.join(out_dir, name + ".onnx")
    torch.onnx.export(model, (x,), path, opset_version=14, do_constant_folding=False,
                      training=torch.onnx.TrainingMode.PRESERVE, input_names=["x"], output_names=["y"])
    m = onnx.load(path)
    shorten_names(m)
    onnx.checker.check_model(m)
    onnx.save(m, path)
    ref = os.path.join(out_dir, name + ".ref")
    os.makedirs(ref, exist_ok=True)
    for f in os.listdir(ref):
        os.remove(os.path.join(ref, f))
    # float64 from here: the float32 weights are exact in float64.
    model = model.double()
    xd = x.double().requires_grad_() if x.is_floating_point() else x
    y = model(xd)
    r = torch.randn(y.shape, generator=gen).double()  # float32 values: stored as float32, exactly
    (y * r).sum().backward()
    np.save(os.path.join(ref, "x.npy"), x.detach().numpy())  # (in float64, x is xd)
    np.save(os.path.join(ref, "y.npy"), stored(y))
    np.save(os.path.join(ref, "r.npy"), stored(r))
    if x.is_floating_point():
        np.save(os.path.join(ref, "grad.x.npy"), stored(xd.grad))
    params = dict(model.named_parameters())
    saved = 0
    for init in m.graph.initializer:
        if init.name in params:
            np.save(os.path.join(ref, "grad." + init.name + ".npy"), stored(params[init.name].grad))
            saved += 1
    for node in m.graph.node:  # a merged initializer's other names (Identity nodes): their own gradients
        if node.op_type == "Identity" and node.output[0] in params and node.input[0] in params:
            np.save(os.path.join(ref, "grad." + node.output[0] + ".npy"), stored(params[node.output[0]].grad))
            saved += 1
    if saved != len(params):
        raise SystemExit(f"{name}: {len(params)} parameters but {saved} gradients saved")
    size = os.path.getsize(path)
    print(f"{os.path.normpath(path)}: {len(m.graph.node)} nodes, {size // 1024} KiB, {saved} gradients in {os.path.normpath(ref)}/")


def make_test_models(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    gen = torch.Generator().manual_seed(32)
    torch.manual_seed(32)
    make_test_model("mobilenet_v3_small", small_mobilenet_v3(), torch.randn(2, 3, 16, 16, generator=gen), out_dir, gen)
    make_test_model("deeplabv3_mobilenet_v3", small_deeplabv3_mobilenet_v3(), torch.randn(1, 3, 16, 16, generator=gen), out_dir, gen)
    make_test_model("swin_t", small_swin_t(), torch.randn(1, 3, 16, 16, generator=gen), out_dir, gen)
    make_test_model("unet", UNet(), torch.randn(2, 3, 16, 16, generator=gen), out_dir, gen)
    make_test_model("lstm_lm", LSTMLanguageModel(), torch.randint(0, 20, (7, 2), generator=gen), out_dir, gen)
    make_test_model("gru_tagger", GRUTagger(), torch.randint(0, 15, (2, 6), generator=gen), out_dir, gen)
    make_test_model("tied_encoder", TiedEncoder(), torch.randn(2, 5, 8, generator=gen), out_dir, gen, randomized=False)
    make_nd_test_models(out_dir)


def make_nd_test_models(out_dir):
    """The 1-D and 3-D CNNs of issue 44, from a generator of their own (so they are made alike with
    or without the others, which need torchvision)."""
    os.makedirs(out_dir, exist_ok=True)
    gen = torch.Generator().manual_seed(44)
    make_test_model("keyword_spotter", KeywordSpotter(), torch.randn(2, 1, 64, generator=gen), out_dir, gen, float64=True)
    make_test_model("video_cnn", VideoCNN(), torch.randn(1, 3, 4, 8, 8, generator=gen), out_dir, gen, float64=True)



class GptBlock(nn.Module):
    """GPT-2's pre-norm block: causal self-attention and a GELU MLP, each added to its input."""

    def __init__(self, d, heads, t):
        super().__init__()
        self.heads = heads
        self.ln_1 = nn.LayerNorm(d)
        self.c_attn = nn.Linear(d, 3 * d)
        self.attn_proj = nn.Linear(d, d)
        self.ln_2 = nn.LayerNorm(d)
        self.c_fc = nn.Linear(d, 4 * d)
        self.mlp_proj = nn.Linear(4 * d, d)
        # -1e9 above the diagonal: added to the scores, as the causal mask (no Where in the file).
        self.register_buffer("mask", torch.triu(torch.full((t, t), -1e9), diagonal=1))

    def attention(self, x):
        n, t, d = x.shape
        q, k, v = self.c_attn(x).split(d, dim=2)
        heads = lambda z: z.reshape(n, t, self.heads, d // self.heads).transpose(1, 2)
        q, k, v = heads(q), heads(k), heads(v)
        scores = q @ k.transpose(2, 3) / (d // self.heads) ** 0.5 + self.mask[:t, :t]
        y = torch.softmax(scores, dim=-1) @ v
        return self.attn_proj(y.transpose(1, 2).reshape(n, t, d))

    def forward(self, x):
        x = x + self.attention(self.ln_1(x))
        return x + self.mlp_proj(torch.nn.functional.gelu(self.c_fc(self.ln_2(x))))


class Gpt(nn.Module):
    """A GPT-2-shaped decoder: token and position embeddings, `layers` blocks, the final norm and
    the head (tied to the token embedding, as GPT-2's). Token ids [N, T] -> logits [N, T, vocab]."""

    def __init__(self, vocab=50257, t=64, d=768, heads=12, layers=12):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(t, d)
        self.h = nn.ModuleList([GptBlock(d, heads, t) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(d)

    def forward(self, idx):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))
        for block in self.h:
            x = block(x)
        return self.ln_f(x) @ self.wte.weight.t()


def zoo(out_dir, tiny, gen):
    """The real architectures (see the module's doc), full size or tiny."""
    import torchvision
    if tiny:
        models = {
            "vit_b_16": (torchvision.models.VisionTransformer(image_size=32, patch_size=8, num_layers=12, num_heads=2,
                                                              hidden_dim=16, mlp_dim=32, num_classes=10), (1, 3, 32, 32)),
            "densenet121": (torchvision.models.DenseNet(growth_rate=4, num_init_features=8, bn_size=2, num_classes=10), (1, 3, 32, 32)),
            "gpt2_small": (Gpt(vocab=64, t=16, d=16, heads=2, layers=12), (1, 16)),
        }
    else:
        models = {
            "vit_b_16": (torchvision.models.vit_b_16(), (1, 3, 224, 224)),
            "resnet50": (torchvision.models.resnet50(), (1, 3, 64, 64)),
            "densenet121": (torchvision.models.densenet121(), (1, 3, 64, 64)),
            "gpt2_small": (Gpt(), (1, 64)),
        }
    os.makedirs(out_dir, exist_ok=True)
    for name, (model, shape) in models.items():
        randomize(model, gen)
        model.eval()
        x = torch.randint(0, 64, shape, generator=gen) if name.startswith("gpt") else torch.randn(shape, generator=gen)
        path = os.path.join(out_dir, name + ("_tiny" if tiny else "") + ".onnx")
        # (With gradients on: under no_grad nn.MultiheadAttention takes a fused path ONNX lacks.)
        torch.onnx.export(model, (x,), path, opset_version=14, do_constant_folding=False, input_names=["x"], output_names=["y"])
        m = onnx.load(path)
        print(f"{os.path.normpath(path)}: {len(m.graph.node)} nodes, {os.path.getsize(path) / 2**20:.1f} MiB")


def main():
    if len(sys.argv) > 1 and sys.argv[1] in ("--tests", "--nd-tests"):
        make = make_test_models if sys.argv[1] == "--tests" else make_nd_test_models
        make(sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(__file__), "..", "tests", "onnx", "models"))
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--zoo":
        if len(sys.argv) < 3:
            raise SystemExit("usage: make_onnx_models.py --zoo OUT_DIR [--tiny]")
        torch.manual_seed(16)
        zoo(sys.argv[2], "--tiny" in sys.argv[3:], torch.Generator().manual_seed(16))
        return
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "assets", "models")
    os.makedirs(out_dir, exist_ok=True)
    gen = torch.Generator().manual_seed(16)
    torch.manual_seed(16)
    make("fashion_cnn", FashionCNN(), torch.randn(2, 1, 28, 28, generator=gen), out_dir, gen)
    make("resnet_block", ResNetBlock(), torch.randn(2, 8, 8, 8, generator=gen), out_dir, gen)
    make("encoder", Encoder(), torch.randn(2, 6, 32, generator=gen), out_dir, gen)


if __name__ == "__main__":
    main()
