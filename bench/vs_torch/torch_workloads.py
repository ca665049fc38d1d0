"""The PyTorch side of bench_vs_torch: the same workloads as the .ops scripts beside this file,
timed the same way (median seconds of one training step after warm-up runs).

Run by bench_vs_torch with /usr/bin/python3 (Debian's python3-torch):
    torch_workloads.py --threads N --repeats R [--workloads mlp,cnn,...]
Prints one JSON object per line: first {"info": ...} (version, threads, ISA, BLAS), then
{"workload": name, "seconds": median} for each workload.
"""
import argparse
import json
import math
import os
import time

import torch
import torch.nn.functional as F


def sgd(params, lr):
    with torch.no_grad():
        for p in params:
            p -= lr * p.grad
            p.grad = None


def mlp():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(64, 784, generator=g)
    y = torch.randint(0, 10, (64,), generator=g)
    ps = [torch.randn(256, 784, generator=g) * 0.05, torch.zeros(256),
          torch.randn(256, 256, generator=g) * 0.05, torch.zeros(256),
          torch.randn(10, 256, generator=g) * 0.05, torch.zeros(10)]
    for p in ps:
        p.requires_grad_(True)
    w1, b1, w2, b2, w3, b3 = ps

    def step():
        h = F.relu(F.linear(x, w1, b1))
        h = F.relu(F.linear(h, w2, b2))
        loss = F.cross_entropy(F.linear(h, w3, b3), y)
        loss.backward()
        sgd(ps, 0.01)
    return step


def cnn():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(64, 1, 28, 28, generator=g)
    y = torch.randint(0, 10, (64,), generator=g)
    ps = [torch.randn(16, 1, 3, 3, generator=g) * 0.3, torch.zeros(16),
          torch.randn(32, 16, 3, 3, generator=g) * 0.08, torch.zeros(32),
          torch.randn(10, 32 * 7 * 7, generator=g) * 0.02, torch.zeros(10)]
    for p in ps:
        p.requires_grad_(True)
    c1, cb1, c2, cb2, w, b = ps

    def step():
        h = F.max_pool2d(F.relu(F.conv2d(x, c1, cb1, padding=1)), 2)
        h = F.max_pool2d(F.relu(F.conv2d(h, c2, cb2, padding=1)), 2)
        loss = F.cross_entropy(F.linear(h.reshape(64, 32 * 7 * 7), w, b), y)
        loss.backward()
        sgd(ps, 0.01)
    return step


def transformer():
    # One pre-norm block: x [8, 128, 256], 4 heads of 64, causal attention, MLP 256-1024-256.
    B, T, D, H = 8, 128, 256, 4
    g = torch.Generator().manual_seed(0)
    x = torch.randn(B, T, D, generator=g)
    target = torch.randn(B, T, D, generator=g)
    ps = [torch.ones(D), torch.zeros(D),
          torch.randn(3 * D, D, generator=g) * 0.05, torch.zeros(3 * D),
          torch.randn(D, D, generator=g) * 0.05, torch.zeros(D),
          torch.ones(D), torch.zeros(D),
          torch.randn(4 * D, D, generator=g) * 0.05, torch.zeros(4 * D),
          torch.randn(D, 4 * D, generator=g) * 0.05, torch.zeros(D)]
    for p in ps:
        p.requires_grad_(True)
    g1, be1, wqkv, bqkv, wo, bo, g2, be2, wf1, bf1, wf2, bf2 = ps
    hidden = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)

    def heads(t):
        return t.reshape(B, T, H, D // H).permute(0, 2, 1, 3)

    def step():
        h = F.layer_norm(x, (D,), g1, be1)
        qkv = F.linear(h, wqkv, bqkv)
        q, k, v = heads(qkv[:, :, :D]), heads(qkv[:, :, D:2 * D]), heads(qkv[:, :, 2 * D:])
        s = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(D // H))
        a = torch.softmax(s.masked_fill(hidden, float("-inf")), dim=-1) @ v
        x1 = x + F.linear(a.permute(0, 2, 1, 3).reshape(B, T, D), wo, bo)
        h2 = F.layer_norm(x1, (D,), g2, be2)
        y = x1 + F.linear(F.gelu(F.linear(h2, wf1, bf1)), wf2, bf2)
        loss = F.mse_loss(y, target)
        loss.backward()
        sgd(ps, 0.01)
    return step


def tiny_chain():
    # 100 ops on one element: 50 × (mul by a constant, tanh), then backward.
    x = torch.randn(1, requires_grad=True)
    c = torch.tensor(0.999)

    def step():
        y = x
        for _ in range(50):
            y = torch.tanh(y * c)
        y.backward()
        x.grad = None
    return step


def conv():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(8, 64, 56, 56, generator=g)
    w = torch.randn(64, 64, 3, 3, generator=g) * 0.05

    def step():
        with torch.no_grad():
            F.conv2d(x, w, padding=1)
    return step


WORKLOADS = {"mlp": mlp, "cnn": cnn, "transformer": transformer, "tiny_chain": tiny_chain, "conv": conv}


def median_seconds(fn, repeats, warmup):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    times.sort()
    return times[len(times) // 2]


def blas_info():
    """Which BLAS this torch runs: the library mapped for libblas.so.3, and OpenBLAS's kernels."""
    lib = "unknown"
    with open("/proc/self/maps") as maps:
        for line in maps:
            if "libblas" in line or "openblas" in line or "libmkl" in line:
                lib = line.split()[-1]
                break
    real = os.path.realpath(lib) if lib.startswith("/") else lib
    info = {"library": real}
    if "openblas" in real:
        try:
            import ctypes
            ob = ctypes.CDLL(real)
            ob.openblas_get_corename.restype = ctypes.c_char_p
            ob.openblas_get_config.restype = ctypes.c_char_p
            info["kernels"] = ob.openblas_get_corename().decode()
            info["config"] = " ".join(ob.openblas_get_config().decode().split()[:2])
        except OSError:
            pass
    return info


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    torch.ones(4, 4) @ torch.ones(4, 4)  # loads the BLAS
    cap = "unknown"
    for line in torch.__config__.show().splitlines():
        if "CPU capability usage" in line:
            cap = line.split(":", 1)[1].strip()
    print(json.dumps({"info": {"torch": torch.__version__, "threads": torch.get_num_threads(), "isa": cap,
                               "mkldnn": torch.backends.mkldnn.is_available(), "blas": blas_info()}}), flush=True)
    for name in args.workloads.split(","):
        step = WORKLOADS[name]()
        repeats = args.repeats * (10 if name == "tiny_chain" else 1)
        seconds = median_seconds(step, repeats, warmup=3)
        print(json.dumps({"workload": name, "seconds": seconds}), flush=True)


if __name__ == "__main__":
    main()
