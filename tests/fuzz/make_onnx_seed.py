"""Writes a small binary ONNX model (python3-onnx's helper): MatMul by an initializer, Add, a
Constant, Reshape and Gather on a constant index, so the loader and constant folding both
have work.  Usage: make_onnx_seed.py OUT"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

w = numpy_helper.from_array(np.arange(16, dtype=np.float32).reshape(4, 4), "w")
b = numpy_helper.from_array(np.ones(4, dtype=np.float32), "b")
shape = numpy_helper.from_array(np.array([2, 2], dtype=np.int64), "shape")
idx = numpy_helper.from_array(np.array([1], dtype=np.int64), "idx")
nodes = [
    helper.make_node("MatMul", ["x", "w"], ["xw"]),
    helper.make_node("Add", ["xw", "b"], ["y0"]),
    helper.make_node("Constant", [], ["c"], value_float=2.0),
    helper.make_node("Mul", ["y0", "c"], ["y1"]),
    helper.make_node("Reshape", ["b", "shape"], ["b2"]),
    helper.make_node("Gather", ["b2", "idx"], ["g"], axis=0),
    helper.make_node("Relu", ["y1"], ["y"]),
]
graph = helper.make_graph(nodes, "seed", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4]),
                           helper.make_tensor_value_info("g", TensorProto.FLOAT, [1, 2])],
                          [w, b, shape, idx])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
onnx.save(model, sys.argv[1])
