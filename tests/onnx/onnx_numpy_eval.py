"""A tiny numpy interpreter for the ONNX ops torch.onnx writes for hf_llama.py, so each export
is checked against torch before kiln sees it (Debian has no onnxruntime, and onnx 1.12 has no
onnx.reference). Only the ops and attributes these graphs use; anything else is an error."""
import numpy as np
import onnx
from onnx import helper, numpy_helper


def _attrs(node):
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _slice(x, starts, ends, axes=None, steps=None):
    axes = range(len(starts)) if axes is None else axes
    steps = [1] * len(starts) if steps is None else steps
    idx = [slice(None)] * x.ndim
    for s, e, a, st in zip(starts, ends, axes, steps):
        idx[a] = slice(int(s), int(e), int(st))
    return x[tuple(idx)]


def _scatter_nd(data, indices, updates):
    out = data.copy()
    for idx in np.ndindex(indices.shape[:-1]):
        out[tuple(indices[idx])] = updates[idx]
    return out


def _softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _run(op, i, a):
    if op == "Constant":
        return numpy_helper.to_array(a["value"])
    if op == "Cast":
        return i[0].astype(onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[a["to"]])
    if op == "ConstantOfShape":
        v = numpy_helper.to_array(a["value"]) if "value" in a else np.zeros(1, np.float32)
        return np.full(tuple(i[0]), v.reshape(()), dtype=v.dtype)
    if op == "Shape":
        return np.array(i[0].shape, dtype=np.int64)
    if op == "Gather":
        return np.take(i[0], i[1], axis=a.get("axis", 0))
    if op == "Unsqueeze":  # opset 13+: axes is an input
        return np.expand_dims(i[0], tuple(int(x) % (i[0].ndim + len(i[1])) for x in i[1]))
    if op == "Concat":
        return np.concatenate(i, axis=a["axis"])
    if op == "Reshape":
        shape = [d if d != 0 else i[0].shape[k] for k, d in enumerate(i[1])]
        return i[0].reshape(shape)
    if op == "Transpose":
        return np.transpose(i[0], a.get("perm"))
    if op == "Slice":
        return _slice(i[0], *[x.tolist() for x in i[1:]])
    if op == "Expand":
        return i[0] * np.ones(tuple(i[1]), dtype=i[0].dtype)
    if op == "Range":
        return np.arange(i[0], i[1], i[2], dtype=i[0].dtype)
    if op == "Trilu":
        k = int(i[1]) if len(i) > 1 else 0
        return np.triu(i[0], k) if a.get("upper", 1) else np.tril(i[0], k)
    if op == "ReduceMean":
        return i[0].mean(axis=tuple(a["axes"]), keepdims=bool(a.get("keepdims", 1)))
    if op == "Softmax":
        return _softmax(i[0], a.get("axis", -1))
    if op == "ScatterND":
        return _scatter_nd(*i)
    if op == "Where":
        return np.where(*i)
    unary = {"Sqrt": np.sqrt, "Neg": np.negative, "Cos": np.cos, "Sin": np.sin,
             "Sigmoid": lambda x: 1 / (1 + np.exp(-x))}
    binary = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "MatMul": np.matmul,
              "Pow": np.power, "Equal": np.equal, "Greater": np.greater, "Less": np.less,
              "And": np.logical_and}
    if op in unary:
        return unary[op](i[0])
    if op in binary:
        return binary[op](i[0], i[1])
    if op == "Div":
        r = i[0] / i[1]
        return r.astype(i[0].dtype) if i[0].dtype.kind == "f" else (i[0] // i[1])
    raise NotImplementedError(f"onnx_numpy_eval: no {op}")


def run(model_path, feeds):
    """Runs the graph at model_path (external data loaded) on feeds {name: array}; returns
    {output name: array}. Float math in float32, as ONNX's types say."""
    m = onnx.load(model_path)
    env = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    env.update(feeds)
    for node in m.graph.node:
        ins = [env[x] for x in node.input if x]
        out = _run(node.op_type, ins, _attrs(node))
        if isinstance(out, np.ndarray) and out.dtype == np.float64:
            out = out.astype(np.float32)
        env[node.output[0]] = np.asarray(out)
    return {o.name: env[o.name] for o in m.graph.output}
