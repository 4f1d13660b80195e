"""Gemm and MatMul (batched, numpy broadcasting), one matrix-multiply kernel for both.

The kernel computes y = act(alpha * A' B' + beta * C) for each batch; transposes become
element strides, batch broadcasting becomes a table of per-batch offsets, and a MatMul
whose B is one matrix shared by every batch folds the batch into M.
"""

from . import KernelCall
from .binary import broadcast_strides, merge_dims
from .unary import epilogue_of, epilogue_tag


def _gemm_params(m, n, k, a_strides, b_strides, batches, epilogue):
    return {"m": m, "n": n, "k": k, "a_rs": a_strides[0], "a_cs": a_strides[1],
            "b_rs": b_strides[0], "b_cs": b_strides[1], "batches": batches,
            "alpha": 1.0, "beta": 1.0, "c": None, "epilogue": epilogue}


def _tag(p):
    t = "t" if p["b_cs"] != 1 else "n"
    batch = f"b{len(p['batches'])}_" if len(p["batches"]) > 1 else ""
    bias = {None: "", "n": "_biasn", "m": "_biasm", "mn": "_biasmn", "1": "_bias1"}[p["c"]]
    return f"f32_{batch}{p['m']}x{p['k']}x{p['n']}{t}{bias}{epilogue_tag(p['epilogue'])}"


def _c_kind(c_shape, m, n):
    """How the bias C broadcasts over [M, N]."""
    shape = (1,) * (2 - len(c_shape)) + tuple(c_shape)
    kinds = {(m, n): "mn", (m, 1): "m", (1, n): "n", (1, 1): "1"}  # later keys win ties
    return kinds[shape]


def lower_gemm(node, graph):
    a, b = node.inputs[:2]
    c = node.inputs[2] if len(node.inputs) > 2 and node.inputs[2] else None
    y = node.outputs[0]
    ta, tb = node.attrs.get("transA", 0), node.attrs.get("transB", 0)
    sa, sb = graph.info(a).shape, graph.info(b).shape
    m, k = (sa[1], sa[0]) if ta else sa
    n = sb[0] if tb else sb[1]
    p = _gemm_params(m, n, k, (1, m) if ta else (k, 1), (1, k) if tb else (n, 1), [[0, 0]],
                     epilogue_of(node))
    p.update(alpha=float(node.attrs.get("alpha", 1.0)), beta=float(node.attrs.get("beta", 1.0)))
    inputs = [("a", a), ("b", b)]
    if c:
        p["c"] = _c_kind(graph.info(c).shape, m, n)
        inputs.append(("c", c))
    return KernelCall("gemm", _tag(p), p, inputs, [("y", y)])


def lower_matmul(node, graph):
    a, b = node.inputs
    y = node.outputs[0]
    sa, sb = list(graph.info(a).shape), list(graph.info(b).shape)
    if len(sa) == 1:
        sa = [1] + sa
    if len(sb) == 1:
        sb = sb + [1]
    m, k, n = sa[-2], sa[-1], sb[-1]
    batch_a, batch_b = sa[:-2], sb[:-2]
    if all(d == 1 for d in batch_b):  # one B for every batch: fold A's batches into M
        m *= max(1, _prod(batch_a))
        batches = [[0, 0]]
    else:
        out_batch = _broadcast_shape(batch_a, batch_b)
        shape, (stra, strb) = merge_dims(out_batch, broadcast_strides(batch_a, out_batch),
                                         broadcast_strides(batch_b, out_batch))
        batches = [[ia * m * k, ib * k * n] for ia, ib in _batch_offsets(shape, stra, strb)]
    p = _gemm_params(m, n, k, (k, 1), (n, 1), batches, epilogue_of(node))
    return KernelCall("gemm", _tag(p), p, [("a", a), ("b", b)], [("y", y)])


def _prod(dims):
    out = 1
    for d in dims:
        out *= d
    return out


def _broadcast_shape(s1, s2):
    r = max(len(s1), len(s2))
    s1, s2 = [1] * (r - len(s1)) + list(s1), [1] * (r - len(s2)) + list(s2)
    return [max(x, y) for x, y in zip(s1, s2)]


def _batch_offsets(shape, stra, strb):
    """(A batch index, B batch index) of every output batch, in row-major order."""
    offsets = [(0, 0)]
    for d, sa_, sb_ in zip(shape, stra, strb):
        offsets = [(oa + i * sa_, ob + i * sb_) for oa, ob in offsets for i in range(d)]
    return offsets


LOWERINGS = {"Gemm": lower_gemm, "MatMul": lower_matmul}
