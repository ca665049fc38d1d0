#!/usr/bin/env python3
"""PyTorch's results for the 1-D and 3-D convolutions, pools and norms (tests/test_ops_nd.cpp).

Run with Debian's python3-torch: /usr/bin/python3 tools/make_nd_op_fixtures.py [OUT_DIR]
Each case is a folder of .npy files in float64: its inputs (in0.npy, in1.npy, ...), y = op(inputs),
a random r, and the gradients of L = sum(y·r) with respect to every input (grad.in0.npy, ...).
The attributes are the folder's name's business: tests/test_ops_nd.cpp names each case's op and
attributes again, in opscope's spelling, next to the folder it reads.
"""
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

torch.manual_seed(44)
gen = torch.Generator().manual_seed(44)


def randn(*shape):
    return torch.randn(*shape, generator=gen, dtype=torch.float64)


# name: (function of the inputs, inputs)
CASES = {
    "conv1d": (lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=1, dilation=2, groups=2),
               [randn(2, 4, 11), randn(6, 2, 3), randn(6)]),
    "conv3d": (lambda x, w, b: F.conv3d(x, w, b, stride=(2, 1, 2), padding=(1, 0, 1), dilation=(1, 2, 1)),
               [randn(1, 2, 5, 6, 5), randn(4, 2, 3, 2, 3), randn(4)]),
    "conv3d_groups": (lambda x, w: F.conv3d(x, w, None, padding=1, groups=2),
                      [randn(2, 4, 3, 4, 3), randn(2, 2, 3, 3, 3)]),
    "conv_transpose1d": (lambda x, w, b: F.conv_transpose1d(x, w, b, stride=2, padding=1, output_padding=1, groups=2),
                         [randn(2, 4, 5), randn(4, 3, 3), randn(6)]),
    "conv_transpose3d": (lambda x, w, b: F.conv_transpose3d(x, w, b, stride=(2, 1, 2), padding=(0, 1, 1),
                                                            output_padding=(1, 0, 1), dilation=(1, 2, 1)),
                         [randn(1, 2, 3, 2, 3), randn(2, 3, 2, 3, 2), randn(3)]),
    "max_pool1d": (lambda x: F.max_pool1d(x, 3, stride=2, padding=1), [randn(2, 3, 10)]),
    "max_pool3d": (lambda x: F.max_pool3d(x, (2, 3, 3), stride=(1, 2, 2), padding=(1, 1, 1)), [randn(1, 2, 5, 6, 6)]),
    "avg_pool1d": (lambda x: F.avg_pool1d(x, 3, stride=2, padding=1), [randn(2, 3, 10)]),
    "avg_pool3d": (lambda x: F.avg_pool3d(x, (2, 3, 3), stride=(1, 2, 2), padding=(1, 1, 0)), [randn(1, 2, 5, 6, 6)]),
    "adaptive_avg_pool1d": (lambda x: F.adaptive_avg_pool1d(x, 4), [randn(2, 3, 10)]),
    "adaptive_avg_pool3d": (lambda x: F.adaptive_avg_pool3d(x, (2, 3, 4)), [randn(1, 2, 5, 6, 7)]),
    "batch_norm1d": (lambda x, w, b: F.batch_norm(x, torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64),
                                                  w, b, training=True),
                     [randn(4, 3, 7), randn(3), randn(3)]),
    "batch_norm3d": (lambda x, w, b: F.batch_norm(x, torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64),
                                                  w, b, training=True),
                     [randn(2, 3, 3, 4, 5), randn(3), randn(3)]),
    "instance_norm3d": (lambda x, w, b: F.instance_norm(x, weight=w, bias=b), [randn(2, 3, 3, 4, 5), randn(3), randn(3)]),
}

# ceil_mode and count_include_pad, from a generator of their own (the cases above keep their numbers).
modes_gen = torch.Generator().manual_seed(45)


def modes_randn(*shape):
    return torch.randn(*shape, generator=modes_gen, dtype=torch.float64)


MODE_CASES = {
    "max_pool2d_ceil": (lambda x: F.max_pool2d(x, 3, stride=2, padding=1, ceil_mode=True), [modes_randn(2, 3, 8, 7)]),
    "avg_pool2d_ceil_exclude": (lambda x: F.avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
                                [modes_randn(2, 3, 8, 7)]),
    "avg_pool2d_ceil_include": (lambda x: F.avg_pool2d(x, (3, 2), stride=2, padding=(1, 0), ceil_mode=True),
                                [modes_randn(1, 2, 6, 7)]),
    "avg_pool1d_exclude": (lambda x: F.avg_pool1d(x, 4, stride=3, padding=2, count_include_pad=False), [modes_randn(2, 3, 11)]),
    "max_pool3d_ceil": (lambda x: F.max_pool3d(x, 2, stride=2, ceil_mode=True), [modes_randn(1, 2, 3, 5, 4)]),
    "avg_pool3d_ceil_exclude": (lambda x: F.avg_pool3d(x, (2, 3, 3), stride=2, padding=(1, 1, 0), ceil_mode=True,
                                                       count_include_pad=False), [modes_randn(1, 2, 4, 6, 5)]),
}


def save_npy(path, t):
    np.save(path, t.detach().double().numpy())


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "tests", "ops_nd")
    for name, (fn, inputs), draw in [*((n, c, randn) for n, c in CASES.items()),
                                     *((n, c, modes_randn) for n, c in MODE_CASES.items())]:
        folder = os.path.join(out, name)
        os.makedirs(folder, exist_ok=True)
        inputs = [t.requires_grad_() for t in inputs]
        y = fn(*inputs)
        r = draw(*y.shape)
        (y * r).sum().backward()
        for i, t in enumerate(inputs):
            save_npy(os.path.join(folder, f"in{i}.npy"), t)
            save_npy(os.path.join(folder, f"grad.in{i}.npy"), t.grad)
        save_npy(os.path.join(folder, "y.npy"), y)
        save_npy(os.path.join(folder, "r.npy"), r)
        print(f"{os.path.normpath(folder)}: y {tuple(y.shape)}")


if __name__ == "__main__":
    main()
