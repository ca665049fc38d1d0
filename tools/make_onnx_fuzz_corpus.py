#!/usr/bin/python3
"""Writes the seeds of the ONNX importer's fuzz corpus (tests/fuzz/onnx_corpus): tiny models
that reach each part of the importer (shape arithmetic to fold, negative slice steps, gathers,
pools with asymmetric pads, normalizations) and damaged ones (a cycle, a missing initializer,
a truncated file, short tensor data, an unknown opset). Needs Debian's python3-onnx:

    /usr/bin/python3 tools/make_onnx_fuzz_corpus.py [OUT_DIR]
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def model(nodes, inputs, outputs, inits=(), opset=17):
    graph = helper.make_graph(nodes, "seed", inputs, outputs, initializer=list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="opscope fuzz seeds")


def f32(name, dims):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, dims)


def const(name, values, dtype=np.int64):
    return numpy_helper.from_array(np.array(values, dtype=dtype), name)


def seeds():
    x4 = [f32("x", ["batch", 3, 8, 8])]
    y = [f32("y", None)]
    yield "shape_arith", model([
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
        helper.make_node("Unsqueeze", ["n", "zero1"], ["n1"]),
        helper.make_node("Concat", ["n1", "minus1"], ["shape"], axis=0),
        helper.make_node("Reshape", ["x", "shape"], ["y"]),
    ], x4, y, [const("zero", 0), const("zero1", [0]), const("minus1", [-1])])
    yield "slice_gather", model([
        helper.make_node("Slice", ["x", "st", "en", "ax", "sp"], ["a"]),
        helper.make_node("Gather", ["a", "idx"], ["y"], axis=1),
    ], x4, y, [const("st", [7, 0]), const("en", [-9, 8]), const("ax", [2, 3]), const("sp", [-2, 3]), const("idx", [[2, -1]])])
    yield "conv_pool", model([
        helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 0, 2, 1], strides=[2, 1], group=1),
        helper.make_node("AveragePool", ["c"], ["p"], kernel_shape=[2, 2], pads=[0, 1, 1, 0], ceil_mode=1),
        helper.make_node("MaxPool", ["p"], ["y"], kernel_shape=[3, 3], auto_pad="SAME_UPPER"),
    ], x4, y, [numpy_helper.from_array(np.ones((4, 3, 3, 3), np.float32) * 0.1, "w"),
               numpy_helper.from_array(np.zeros(4, np.float32), "b")])
    yield "norms", model([
        helper.make_node("BatchNormalization", ["x", "g", "b", "m", "v"], ["n"], epsilon=1e-3),
        helper.make_node("LayerNormalization", ["n", "lg"], ["l"], axis=-2),
        helper.make_node("Softmax", ["l"], ["s"], axis=1),
        helper.make_node("ReduceMean", ["s"], ["y"], axes=[2, 3], keepdims=0),
    ], x4, y, [numpy_helper.from_array(np.ones(3, np.float32), n) for n in ("g", "v")] +
       [numpy_helper.from_array(np.zeros(3, np.float32), n) for n in ("b", "m")] +
       [numpy_helper.from_array(np.ones((8, 8), np.float32), "lg")])
    yield "gemm_clip", model([
        helper.make_node("Flatten", ["x"], ["f"], axis=1),
        helper.make_node("Gemm", ["f", "w"], ["g"], transA=0, transB=1, alpha=0.5),
        helper.make_node("Clip", ["g", "lo", ""], ["y"]),
    ], x4, y, [numpy_helper.from_array(np.ones((5, 192), np.float32), "w"), numpy_helper.from_array(np.float32(-1), "lo")])
    yield "cycle", model([helper.make_node("Add", ["x", "b"], ["a"]), helper.make_node("Relu", ["a"], ["b"])], x4, [f32("b", None)])
    yield "missing_init", model([helper.make_node("MatMul", ["x", "w"], ["y"])], x4, y)
    yield "opset_99", model([helper.make_node("Relu", ["x"], ["y"])], x4, y, opset=99)
    short = numpy_helper.from_array(np.ones(4, np.float32), "w")
    short.raw_data = short.raw_data[:6]
    yield "short_data", model([helper.make_node("Add", ["x", "w"], ["y"])], x4, y, [short])


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "tests", "fuzz", "onnx_corpus")
    os.makedirs(out, exist_ok=True)
    for name, m in seeds():
        data = m.SerializeToString()
        with open(os.path.join(out, name + ".onnx"), "wb") as f:
            f.write(data)
        if name == "conv_pool":  # and the same cut short
            with open(os.path.join(out, "truncated.onnx"), "wb") as f:
                f.write(data[: len(data) // 3])
    print("wrote the seeds to", os.path.normpath(out))


if __name__ == "__main__":
    main()
