"""One Fashion-MNIST epoch in PyTorch: the model, initialisation scheme, batch size and optimizer
of assets/examples/fashion_mnist_cnn.ops (conv16-bn-pool-conv32-bn-pool-linear, Adam lr 2e-3,
938 batches of 64), timed over the training loop alone, then the test accuracy.

Run by bench_train and bench_vs_torch with /usr/bin/python3 (Debian's python3-torch):
    fashion_epoch.py DATA_DIR [--threads N]
Prints one line: "epoch SECONDS accuracy A blas LIBRARIES torch VERSION".
"""
import argparse
import gzip
import time

import numpy as np
import torch


def idx(path, offset):
    with gzip.open(path) as f:
        return np.frombuffer(f.read(), np.uint8, offset=offset)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("data_dir")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    d = args.data_dir
    x_train = torch.tensor(idx(d + "/train-images-idx3-ubyte.gz", 16).reshape(-1, 1, 28, 28) / 255.0, dtype=torch.float32)
    y_train = torch.tensor(idx(d + "/train-labels-idx1-ubyte.gz", 8).astype(np.int64))
    x_test = torch.tensor(idx(d + "/t10k-images-idx3-ubyte.gz", 16).reshape(-1, 1, 28, 28) / 255.0, dtype=torch.float32)
    y_test = torch.tensor(idx(d + "/t10k-labels-idx1-ubyte.gz", 8).astype(np.int64))
    torch.manual_seed(0)
    conv1 = torch.nn.Conv2d(1, 16, 3, padding=1, bias=False)
    conv2 = torch.nn.Conv2d(16, 32, 3, padding=1, bias=False)
    bn1, bn2, fc = torch.nn.BatchNorm2d(16), torch.nn.BatchNorm2d(32), torch.nn.Linear(32 * 49, 10)
    with torch.no_grad():  # the example's initialisation: He normal for the convolutions, N(0, 1/1568), zero bias
        conv1.weight.normal_(0, (2 / 9) ** 0.5)
        conv2.weight.normal_(0, (2 / 144) ** 0.5)
        fc.weight.normal_(0, (1 / 1568) ** 0.5)
        fc.bias.zero_()
    pool = torch.nn.functional.max_pool2d

    def model(x):
        h = pool(torch.relu(bn1(conv1(x))), 2)
        h = pool(torch.relu(bn2(conv2(h))), 2)
        return fc(h.reshape(h.shape[0], -1))

    params = [p for m in (conv1, bn1, conv2, bn2, fc) for p in m.parameters()]
    opt = torch.optim.Adam(params, lr=2e-3)
    order = torch.randperm(60000, generator=torch.Generator().manual_seed(0))
    t0 = time.perf_counter()
    for i in range(0, 60000, 64):
        b = order[i:i + 64]
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x_train[b]), y_train[b]).backward()
        opt.step()
    epoch = time.perf_counter() - t0
    bn1.eval()
    bn2.eval()
    with torch.no_grad():
        acc = (model(x_test).argmax(1) == y_test).float().mean().item()
    blas = sorted({l.split()[-1].split("/")[-1] for l in open("/proc/self/maps") if "blas" in l.lower()})
    print("epoch %.3f accuracy %.4f blas %s torch %s" % (epoch, acc, ",".join(blas) or "none", torch.__version__))


if __name__ == "__main__":
    main()
