"""Integer ops (int8 / uint8 activations), as the qdq_to_qlinear pass writes them.

Each takes only its data inputs; scales and zero points are on the tensors
(``TensorInfo.quant``). Every constant the kernel needs is computed here, at compile
time, with the arithmetic onnxruntime's CPU kernels use (see ``quant`` and docs/int8.md):

* ConvInteger, MatMulInteger: exact int32 accumulation, stored as is;
* QLinearConv, QGemm, QLinearGlobalAveragePool: exact int32 accumulation, then
  requantization with a 24-bit fixed-point multiplier and a shift, integer-only and
  rounded exactly as onnxruntime's float32 ``acc * scale`` is (a QLinearConv may carry
  the QLinearAdd after it: passes/fuse_residual_qadd.py);
* QLinearAdd, QLinearAveragePool, QLinearSoftmax, QuantizeLinear, DequantizeLinear:
  float32 arithmetic in onnxruntime's order (its kernels compute these in float);
* QLinearConcat and the table ops (QLinearSigmoid, QLinearLeakyRelu, QLinearRequantize,
  ...: TABLES): 256-entry tables (onnxruntime's float32 function of every input code,
  quantized).
"""

import numpy as np

from onnxcc.core.cgen import c_type
from onnxcc.core.quant import (F32, fixed_point, hard_sigmoid, hard_swish, int_range, leaky_relu,
                               logistic, lookup_table, output_scales, qlinear_add_constants,
                               qlinear_add_fixed, qlinear_mul_fixed, qlinear_mul_ratio, scalar,
                               softmax_exp_table, tanh)
from onnxcc.ops import KernelCall, unsupported
from onnxcc.ops.common.broadcast import broadcast_strides, merge_dims
from onnxcc.ops.common.spatial import window_2d, window_tag
from onnxcc.ops.normalize import softmax_span

SHORT = {"int8": "s8", "uint8": "u8"}
#: a QLinearConv's input that is the residual of a QLinearAdd fused after it (after the
#: optional bias and per-channel requantization tables; see passes/fuse_residual_qadd.py)
RESIDUAL_INPUT = 5


def _quant(graph, node, name):
    info = graph.info(name)
    if not info.quant:
        raise unsupported(node, f"tensor '{name}' without constant quantization parameters",
                          "onnxcc compiles statically quantized models: make scales and zero "
                          "points constants")
    if info.dtype not in SHORT:
        raise unsupported(node, f"{info.dtype} quantized tensors", "onnxcc runs int8 and uint8")
    return info.quant


def _per_tensor(graph, node, name):
    q = _quant(graph, node, name)
    return F32(scalar(q, "scale")), scalar(q, "zero_point")


def _output(graph, node, y):
    """(zero point, lo, hi): the output's clamp range (a fused Relu/Clip narrows it)."""
    _, zp = _per_tensor(graph, node, y)
    lo, hi = node.attrs.get("onnxcc_clamp", int_range(graph.info(y).dtype))
    return zp, lo, hi


def _requant(scales, where):
    pairs = [fixed_point(s, where) for s in scales]
    return [m for m, _ in pairs], [s for _, s in pairs]


def _channels(values, n):
    return list(values) * n if len(values) == 1 else list(values)


def _requant_inputs(node, scales):
    """(params, inputs) of the requantization: one multiplier and shift in the kernel, or
    per-channel tables the optimizer made into constants (inputs 3 and 4)."""
    if len(node.inputs) > 3 and node.inputs[3]:
        return {"mult": None, "shift": None}, [("mult", node.inputs[3]), ("shift", node.inputs[4])]
    (mult,), (shift,) = _requant(scales[:1], node.name)
    return {"mult": mult, "shift": shift}, []


#: a pointwise conv's output plane is one row of the kernel (its int32 sums live on the
#: stack) up to this many pixels
POINTWISE_ROW = 256


def _pointwise_as_row(g):
    """A 1x1, stride-1, unpadded window sees its plane as one row: the kernel's inner loop
    then runs over every pixel."""
    plain = (g["kh"], g["kw"], g["sh"], g["sw"], g["dh"], g["dw"]) == (1, 1, 1, 1, 1, 1)
    if plain and not any(g[k] for k in ("pt", "pl", "pb", "pr")) and g["h"] * g["w"] <= POINTWISE_ROW:
        g.update(w=g["h"] * g["w"], h=1, ow=g["oh"] * g["ow"], oh=1)
    return g


def _residual_add(graph, node, conv_out, r, y):
    """The QLinearAdd fused after a QLinearConv (passes/fuse_residual_qadd): its constants,
    with the Conv's output code as the operand it was."""
    code = U8_OFFSET if node.attrs["onnxcc_residual"].get("u8_codes") else 0
    operands = [_shifted(conv_out, code), _shifted(_per_tensor(graph, node, r), code)]
    first = operands[0]
    if node.attrs["onnxcc_residual"]["operand"] == 1:
        operands.reverse()
    ra, rb, offset = qlinear_add_constants(*operands, _shifted(_per_tensor(graph, node, y), code))
    _, lo, hi = _output(graph, node, y)
    return {"conv_first": operands[0] is first, "ra": float(ra), "rb": float(rb),
            "offset": float(offset), "lo": lo + code, "hi": hi + code, "code": code,
            "fixed": _add_fixed(graph, y, code, ra, rb, offset)}


def _add_fixed(graph, y, code, ra, rb, offset):
    """A QLinearAdd's integer constants (quant.qlinear_add_fixed) for output ``y``'s codes,
    read ``code`` up (signed: int8 codes not moved to uint8's)."""
    return qlinear_add_fixed(ra, rb, offset, graph.info(y).dtype == "int8" and not code)


#: what onnxruntime's x86 QDQS8ToU8 transform adds to an int8 code and zero point
U8_OFFSET = 128


def _shifted(quant, code):
    """(scale, zero point) of codes moved by ``code``."""
    return quant[0], quant[1] + code


def lower_qconv(node, graph):
    x, w = node.inputs[0], node.inputs[1]
    b = node.inputs[2] if len(node.inputs) > 2 and node.inputs[2] else None
    r = node.inputs[RESIDUAL_INPUT] if len(node.inputs) > RESIDUAL_INPUT else None
    y = node.outputs[0]
    w_shape = graph.info(w).shape
    g = _pointwise_as_row(window_2d(node, graph.info(x).shape, graph.info(y).shape,
                                    node.attrs.get("kernel_shape", w_shape[2:])))
    _, x_zp = _per_tensor(graph, node, x)
    if r:  # the Conv's own output is a code in a register, quantized as the Add's operand
        fused = node.attrs["onnxcc_residual"]
        y_zp = fused["zero_point"]
        lo, hi = fused["clamp"]
        residual = _residual_add(graph, node, (F32(fused["scale"]), y_zp), r, y)
    else:
        y_zp, lo, hi = _output(graph, node, y)
        residual = None
    wq = _quant(graph, node, w)
    m = w_shape[0]
    requant, tables = _requant_inputs(node, _output_scales(node, graph)[:1])
    w_zp = _channels(wq["zero_point"], m)
    g.update(m=m, group=node.attrs.get("group", 1), bias=b is not None, x_zp=x_zp,
             w_zp=None if not any(w_zp) else w_zp, y_zp=y_zp, lo=lo, hi=hi, residual=residual,
             x_type=c_type(graph.info(x).dtype), y_type=c_type(graph.info(y).dtype), **requant)
    kind = "dw" if g["group"] == g["c"] and g["m"] == g["c"] and g["c"] > 1 else f"g{g['group']}"
    t = SHORT[graph.info(x).dtype]
    tag = f"{t}_{kind}_{window_tag(g)}_m{m}" + ("_add" if r else "")
    return KernelCall("qconv2d", tag, g,
                      [("x", x), ("w", w)] + ([("b", b)] if b else []) + tables
                      + ([("r", r)] if r else []), [("y", y)])


def _output_scales(node, graph):
    """The float32 multiplier of each output channel of a QLinearConv (to its fused
    residual Add's operand code when it has one) or QGemm, as onnxruntime computes it."""
    x_scale, _ = _per_tensor(graph, node, node.inputs[0])
    fused = node.attrs.get("onnxcc_residual")
    y_scale = F32(fused["scale"]) if fused else _per_tensor(graph, node, node.outputs[0])[0]
    alpha = node.attrs.get("alpha", 1.0) if node.op == "QGemm" else None
    return output_scales(x_scale, _quant(graph, node, node.inputs[1])["scale"], y_scale, alpha)


def requant_shifts(node, graph):
    """The requantization shifts of a QLinearConv's or QGemm's output channels (those of
    the multiplier tables, from the quantization parameters alone)."""
    return [fixed_point(s, node.name)[1] for s in _output_scales(node, graph)]


def _zero_points(graph, node, name, n):
    zps = _channels(_quant(graph, node, name)["zero_point"], n)
    return None if not any(zps) else zps


def lower_conv_integer(node, graph):
    """ConvInteger: the int32 sums of QLinearConv, stored as they are."""
    x, w, y = node.inputs[0], node.inputs[1], node.outputs[0]
    w_shape = graph.info(w).shape
    g = window_2d(node, graph.info(x).shape, graph.info(y).shape,
                  node.attrs.get("kernel_shape", w_shape[2:]))
    g.update(m=w_shape[0], group=node.attrs.get("group", 1), bias=False,
             x_zp=scalar(_quant(graph, node, x), "zero_point"),
             w_zp=_zero_points(graph, node, w, w_shape[0]), raw=True)
    kind = "dw" if g["group"] == g["c"] and g["m"] == g["c"] and g["c"] > 1 else f"g{g['group']}"
    tag = f"{SHORT[graph.info(x).dtype]}_{kind}_{window_tag(g)}_m{g['m']}_i32"
    return KernelCall("qconv2d", tag, g, [("x", x), ("w", w)], [("y", y)])


def lower_matmul_integer(node, graph):
    """MatMulInteger: the int32 sums of QGemm (weights [N, K]), stored as they are."""
    a, w, y = node.inputs[0], node.inputs[1], node.outputs[0]
    n, k = graph.info(w).shape
    m = graph.info(a).size // k
    p = {"m": m, "n": n, "k": k, "bias": False,
         "a_zp": scalar(_quant(graph, node, a), "zero_point"),
         "w_zp": _zero_points(graph, node, w, n), "raw": True}
    return KernelCall("qgemm", f"{SHORT[graph.info(a).dtype]}_{m}x{k}x{n}_i32", p,
                      [("a", a), ("w", w)], [("y", y)])


def lower_qgemm(node, graph):
    a, w = node.inputs[0], node.inputs[1]
    b = node.inputs[2] if len(node.inputs) > 2 and node.inputs[2] else None
    y = node.outputs[0]
    n, k = graph.info(w).shape
    m = graph.info(a).size // k
    _, a_zp = _per_tensor(graph, node, a)
    wq = _quant(graph, node, w)
    requant, tables = _requant_inputs(node, _output_scales(node, graph)[:1])
    w_zp = _channels(wq["zero_point"], n)
    y_zp, lo, hi = _output(graph, node, y)
    if b is not None and graph.info(b).size != n:
        raise unsupported(node, "a bias that is not one value per output column")
    p = {"m": m, "n": n, "k": k, "bias": b is not None, "a_zp": a_zp,
         "w_zp": None if not any(w_zp) else w_zp, "y_zp": y_zp, "lo": lo, "hi": hi, **requant}
    tag = f"{SHORT[graph.info(a).dtype]}_{m}x{k}x{n}"
    return KernelCall("qgemm", tag, p,
                      [("a", a), ("w", w)] + ([("b", b)] if b else []) + tables, [("y", y)])


def _global_pool(node, graph, x, y):
    shape = graph.info(x).shape
    size = int(np.prod(shape[2:]))
    x_scale, x_zp = _per_tensor(graph, node, x)
    y_scale, _ = _per_tensor(graph, node, y)
    scale = F32(x_scale / F32(y_scale * F32(size)))  # onnxruntime's order of operations
    (mult,), (shift,) = _requant([scale], node.name)
    y_zp, lo, hi = _output(graph, node, y)
    p = {"outer": shape[0] * shape[1], "inner": size, "bias": -x_zp * size, "mult": mult,
         "shift": shift, "y_zp": y_zp, "lo": lo, "hi": hi}
    tag = f"{SHORT[graph.info(x).dtype]}_{p['outer']}x{size}"
    return KernelCall("qglobal_avgpool", tag, p, [("x", x)], [("y", y)])


def lower_qglobal_avgpool(node, graph):
    if node.attrs.get("onnxcc_float_mean") or node.attrs.get("onnxcc_float_steps"):
        return _float_mean(node, graph, node.inputs[0], node.outputs[0],
                           "mlas" if node.attrs.get("onnxcc_float_steps") else "eigen")
    return _global_pool(node, graph, node.inputs[0], node.outputs[0])


def _float_mean(node, graph, x, y, order="eigen"):
    """A ReduceMean over H x W between DQ and Q (passes/qdq_to_qlinear): onnxruntime's
    float32 ReduceMean then QuantizeLinear, step by step (the integer sum rounds once,
    where its float sum rounds at every add: they differ near ties); ``order='mlas'``: a
    GlobalAveragePool group onnxruntime does not fuse, its float GlobalAveragePool's sum."""
    shape = graph.info(x).shape
    x_scale, x_zp = _per_tensor(graph, node, x)
    y_scale, _ = _per_tensor(graph, node, y)
    y_zp, lo, hi = _output(graph, node, y)
    p = {"outer": shape[0] * shape[1], "inner": int(np.prod(shape[2:])), "float_mean": True,
         "order": order,
         "x_scale": float(x_scale), "x_zp": x_zp, "y_scale": float(y_scale), "y_zp": y_zp,
         "lo": lo, "hi": hi, "x_type": c_type(graph.info(x).dtype)}
    tag = f"{SHORT[graph.info(x).dtype]}_{p['outer']}x{p['inner']}_{'mean' if order == 'eigen' else 'f32'}"
    return KernelCall("qglobal_avgpool", tag, p, [("x", x)], [("y", y)])


def lower_qavgpool(node, graph):
    x, y = node.inputs[0], node.outputs[0]
    g = window_2d(node, graph.info(x).shape, graph.info(y).shape, node.attrs["kernel_shape"])
    spatial = list(graph.info(x).shape[2:])
    if list(node.attrs["kernel_shape"]) == spatial and not any(g[k] for k in ("pt", "pl", "pb", "pr")):
        return _global_pool(node, graph, x, y)  # onnxruntime takes the global path here too
    if (g["dh"], g["dw"]) != (1, 1) or node.attrs.get("ceil_mode", 0):
        raise unsupported(node, "dilations or ceil_mode on a quantized AveragePool")
    x_scale, x_zp = _per_tensor(graph, node, x)
    y_scale, _ = _per_tensor(graph, node, y)
    y_zp, lo, hi = _output(graph, node, y)
    g.update(x_scale=float(x_scale), x_zp=x_zp, y_scale=float(y_scale), y_zp=y_zp, lo=lo, hi=hi,
             count_include_pad=int(node.attrs.get("count_include_pad", 0)),
             y_type=c_type(graph.info(y).dtype))
    tag = f"{SHORT[graph.info(x).dtype]}_{window_tag(g)}" + ("_incpad" if g["count_include_pad"] else "")
    return KernelCall("qavgpool2d", tag, g, [("x", x)], [("y", y)])


def lower_qbinary(node, graph):
    """QLinearAdd and QLinearMul with numpy broadcasting, in onnxruntime's x86 arithmetic."""
    a, b = node.inputs
    y = node.outputs[0]
    out_shape = graph.info(y).shape
    shape, (sa, sb) = merge_dims(out_shape, broadcast_strides(graph.info(a).shape, out_shape),
                                 broadcast_strides(graph.info(b).shape, out_shape))
    code = U8_OFFSET if node.attrs.get("onnxcc_u8_codes") else 0  # (passes/qdq_to_qlinear)
    qa, qb, qy = (_shifted(_per_tensor(graph, node, t), code) for t in (a, b, y))
    _, lo, hi = _output(graph, node, y)
    p = {"shape": shape, "a_strides": sa, "b_strides": sb,
         "out_strides": broadcast_strides(shape, shape), "lo": lo + code, "hi": hi + code,
         "code": code}
    if node.attrs.get("onnxcc_float_steps"):  # the group's own float ops, as onnxruntime
        p.update(op=node.op[len("QLinear"):].lower(), steps="float", sa=float(qa[0]), za=qa[1],
                 sb=float(qb[0]), zb=qb[1], sy=float(qy[0]), zy=qy[1])
    elif node.op == "QLinearAdd":
        ra, rb, offset = qlinear_add_constants(qa, qb, qy)
        p.update(op="add", ra=float(ra), rb=float(rb), offset=float(offset),
                 fixed=_add_fixed(graph, y, code, ra, rb, offset))
    else:
        ratio = qlinear_mul_ratio(qa[0], qb[0], qy[0])
        if not 65536.0 * abs(float(ratio)) + abs(qy[1]) < 2.0 ** 30:
            raise unsupported(node, f"a product scale ratio of {float(ratio):g}",
                              "requantize its inputs or output to scales within 2^14 of each other")
        p.update(op="mul", ratio=float(ratio), za=qa[1], zb=qb[1], zy=qy[1],
                 fixed=qlinear_mul_fixed(ratio, qy[1]))
    dims = "x".join(map(str, shape))
    tag = (f"{p['op']}{'_f32' if p.get('steps') else ''}{'_u8' if code else ''}"
           f"_{SHORT[graph.info(y).dtype]}_{dims}"
           f"_a{'x'.join(map(str, sa))}"
           f"_b{'x'.join(map(str, sb))}")
    return KernelCall("qbinary", tag, p, [("a", a), ("b", b)], [("y", y)])


def lower_qsoftmax(node, graph):
    x, y = node.inputs[0], node.outputs[0]
    outer, n, inner = softmax_span(node, graph)
    x_scale, _ = _per_tensor(graph, node, x)
    y_scale, y_zp = _per_tensor(graph, node, y)
    signed = graph.info(x).dtype == "int8"
    if graph.info(y).dtype != graph.info(x).dtype:
        raise unsupported(node, "different input and output types")
    p = {"outer": outer, "n": n, "inner": inner, "signed": signed,
         "table": [float(v) for v in softmax_exp_table(x_scale, n, signed)],
         "y_scale": float(np.floor(F32(1.0) / F32(y_scale))), "y_zp": y_zp}
    return KernelCall("qsoftmax", f"{SHORT[graph.info(x).dtype]}_{outer}x{n}x{inner}", p,
                      [("x", x)], [("y", y)])


def _identity(v):
    return v


def lower_qconcat(node, graph):
    y = node.outputs[0]
    out_shape = graph.info(y).shape
    axis = node.attrs["axis"] % len(out_shape)
    outer = int(np.prod(out_shape[:axis]))
    inner = int(np.prod(out_shape[axis + 1:]))
    yq = _per_tensor(graph, node, y)
    parts = []
    for x in node.inputs:
        xq = _per_tensor(graph, node, x)
        same = xq == yq and graph.info(x).dtype == graph.info(y).dtype
        parts.append({"size": graph.info(x).shape[axis] * inner,
                      "table": None if same else lookup_table(_identity, xq, yq, graph.info(x).dtype,
                                                              graph.info(y).dtype)})
    tag = f"{SHORT[graph.info(y).dtype]}_{outer}x{'_'.join(str(p['size']) for p in parts)}"
    return KernelCall("qconcat", tag, {"outer": outer, "parts": parts},
                      [(f"x{i}", x) for i, x in enumerate(node.inputs)], [("y", y)])


#: op -> (attributes -> onnxruntime's float32 function) of the table ops
TABLES = {"QLinearSigmoid": lambda a: logistic,
          "QLinearLeakyRelu": lambda a: lambda v: leaky_relu(v, a.get("alpha", 0.01)),
          "QLinearRequantize": lambda a: _identity,
          "QLinearTanh": lambda a: tanh, "QLinearHardSwish": lambda a: hard_swish,
          "QLinearHardSigmoid": lambda a: lambda v: hard_sigmoid(v, a.get("alpha", 0.2),
                                                                 a.get("beta", 0.5))}


def lower_qlookup(node, graph):
    """QLinearSigmoid, QLinearLeakyRelu, ... (TABLES): one 256-entry table, computed here."""
    x, y = node.inputs[0], node.outputs[0]
    table = lookup_table(TABLES[node.op](node.attrs), _per_tensor(graph, node, x),
                         _per_tensor(graph, node, y), graph.info(x).dtype, graph.info(y).dtype,
                         node.attrs.get("onnxcc_clamp"))
    n = graph.info(y).size
    return KernelCall("qlookup", f"{node.op[7:].lower()}_{SHORT[graph.info(x).dtype]}_n{n}",
                      {"n": n, "table": table}, [("x", x)], [("y", y)])


def lower_quantize(node, graph):
    x, y = node.inputs[0], node.outputs[0]
    scale, zp = _per_tensor(graph, node, y)
    lo, hi = int_range(graph.info(y).dtype)
    n = graph.info(y).size
    p = {"n": n, "scale": float(scale), "zp": zp, "lo": lo, "hi": hi}
    return KernelCall("quantize", f"{SHORT[graph.info(y).dtype]}_n{n}", p, [("x", x)], [("y", y)])


def lower_dequantize(node, graph):
    x, y = node.inputs[0], node.outputs[0]
    scale, zp = _per_tensor(graph, node, x)
    n = graph.info(x).size
    p = {"n": n, "scale": float(scale), "zp": zp}
    return KernelCall("dequantize", f"{SHORT[graph.info(x).dtype]}_n{n}", p, [("x", x)], [("y", y)])


LOWERINGS = {"QLinearConv": lower_qconv, "QGemm": lower_qgemm,
             "QLinearGlobalAveragePool": lower_qglobal_avgpool,
             "QLinearAveragePool": lower_qavgpool, "QLinearAdd": lower_qbinary,
             "QLinearMul": lower_qbinary,
             "QLinearSoftmax": lower_qsoftmax, "QLinearConcat": lower_qconcat,
             **{op: lower_qlookup for op in TABLES},
             "QuantizeLinear": lower_quantize, "DequantizeLinear": lower_dequantize,
             "ConvInteger": lower_conv_integer, "MatMulInteger": lower_matmul_integer}
TYPED_OPS = set(LOWERINGS)  # integer tensors, each kernel for the types it takes
ELEMENTWISE = {"QLinearAdd", "QLinearMul", "QuantizeLinear", "DequantizeLinear", *TABLES}
