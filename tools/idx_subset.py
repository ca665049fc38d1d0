#!/usr/bin/env python3
"""Copies Fashion-MNIST's gzip-compressed IDX files for the browser build's site: the test set
whole, and the first N images (and labels) of the training set, rewritten as valid IDX files
with the smaller count, so that fashion_mnist("train") reads them as it reads Debian's."""
import argparse
import gzip
import os
import shutil
import struct


def subset(src, dst, count):
    with gzip.open(src, "rb") as f:
        data = f.read()
    magic, n = struct.unpack(">II", data[:8])
    rank = magic & 0xFF
    dims = struct.unpack(">" + "I" * rank, data[4:4 + 4 * rank])
    item = 1
    for d in dims[1:]:
        item *= d
    keep = min(count, n)
    header = data[:4] + struct.pack(">I", keep) + data[8:4 + 4 * rank]
    body = data[4 + 4 * rank:4 + 4 * rank + keep * item]
    with gzip.GzipFile(dst, "wb", mtime=0) as out:  # mtime 0: the same bytes every build
        out.write(header + body)


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("src", help="Debian's folder: /usr/share/datasets/fashion-mnist")
    p.add_argument("dst")
    p.add_argument("--train", type=int, default=10000, help="training images to keep")
    a = p.parse_args()
    os.makedirs(a.dst, exist_ok=True)
    for kind in ("images-idx3-ubyte", "labels-idx1-ubyte"):
        subset(os.path.join(a.src, f"train-{kind}.gz"), os.path.join(a.dst, f"train-{kind}.gz"), a.train)
        shutil.copyfile(os.path.join(a.src, f"t10k-{kind}.gz"), os.path.join(a.dst, f"t10k-{kind}.gz"))


if __name__ == "__main__":
    main()
