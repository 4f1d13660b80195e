"""Ops that move data without computing, for every element type.

The reshape family are free views. Transpose, Slice, Expand, Tile, DepthToSpace and
SpaceToDepth are each one strided walk over the input (``strided_copy``): which element
every output element reads is an affine function of its index, resolved here. Concat and
Split copy whole rows; Trilu copies a triangle of each matrix; BitCast copies the bytes.
"""

from onnxcc.ops.common.broadcast import broadcast_strides, merge_dims

from . import KernelCall, unsupported
from .unary import dtype_tag

#: outputs are their input re-viewed: the planner gives them the input's memory
ALIASES = {"Reshape", "Flatten", "Squeeze", "Unsqueeze"}


def row_major_strides(shape):
    strides, step = [], 1
    for d in reversed(shape):
        strides.append(step)
        step *= d
    return list(reversed(strides))


def _prod(dims):
    out = 1
    for d in dims:
        out *= d
    return out


def strided_copy(node, graph, out_shape, x_strides, offset=0):
    """y[i] = x[offset + sum(i_d * x_strides[d])] over ``out_shape`` (row-major y)."""
    x, y = node.inputs[0], node.outputs[0]
    shape, (sx, sy) = merge_dims(out_shape, x_strides, row_major_strides(out_shape))
    dtype = dtype_tag(graph.info(x).dtype)
    strides = "x".join(str(s).replace("-", "m") for s in sx)
    tag = f"{dtype}_{'x'.join(map(str, shape))}_o{offset}_s{strides}"
    return KernelCall("strided_copy", tag, {"shape": shape, "x_strides": sx, "y_strides": sy,
                                            "offset": offset}, [("x", x)], [("y", y)])


def lower_transpose(node, graph):
    in_shape = graph.info(node.inputs[0]).shape
    perm = node.attrs.get("perm", list(reversed(range(len(in_shape)))))
    strides = row_major_strides(in_shape)
    return strided_copy(node, graph, [in_shape[p] for p in perm], [strides[p] for p in perm])


def slice_start(start, end, step, n):
    """Where a Slice along a dimension of size n begins, as the ONNX specification clamps it."""
    if step == 0:
        raise ValueError("step 0")
    start = start + n if start < 0 else start
    return min(max(start, 0), n) if step > 0 else min(max(start, 0), n - 1)


def lower_slice(node, graph):
    a = node.attrs
    in_shape = graph.info(node.inputs[0]).shape
    rank = len(in_shape)
    axes = [ax % rank for ax in a.get("axes", range(len(a["starts"])))]
    steps = a.get("steps", [1] * len(axes))
    strides = row_major_strides(in_shape)
    offset, x_strides = 0, list(strides)
    for ax, start, end, step in zip(axes, a["starts"], a["ends"], steps):
        if step == 0:
            raise unsupported(node, "a step of 0")
        offset += slice_start(start, end, step, in_shape[ax]) * strides[ax]
        x_strides[ax] = strides[ax] * step
    return strided_copy(node, graph, graph.info(node.outputs[0]).shape, x_strides, offset)


def contiguous_parts(node, graph):
    """{output: element offset in the input} of a Slice or Split whose every output is one
    contiguous run of its input's elements (a slice along a leading axis, all axes before
    it of size 1, all after it whole), which memory forwarding places inside the input
    (no copy); else None."""
    x = node.inputs[0]
    shape = graph.info(x).shape
    if node.op == "Slice":
        y = node.outputs[0]
        a = node.attrs
        axes = [ax % len(shape) for ax in a.get("axes", range(len(a["starts"])))]
        steps = a.get("steps", [1] * len(axes))
        strides, offset, x_strides = row_major_strides(shape), 0, row_major_strides(shape)
        for ax, start, end, step in zip(axes, a["starts"], a["ends"], steps):
            if step == 0:
                return None
            offset += slice_start(start, end, step, shape[ax]) * strides[ax]
            x_strides[ax] = strides[ax] * step
        out = graph.info(y).shape
        dense = row_major_strides(out)
        if not _prod(out) or any(n > 1 and s != d for n, s, d in zip(out, x_strides, dense)):
            return None
        return {y: offset}
    if node.op == "Split":
        axis = node.attrs.get("axis", 0) % len(shape)
        if any(d != 1 for d in shape[:axis]):
            return None
        _, inner = _rows(shape, axis)
        parts, offset = {}, 0
        for y in node.outputs:
            if y:
                parts[y] = offset
            offset += graph.info(y).shape[axis] * inner if y else 0
        return parts
    return None


def lower_expand(node, graph):
    out_shape = graph.info(node.outputs[0]).shape
    return strided_copy(node, graph, out_shape,
                        broadcast_strides(graph.info(node.inputs[0]).shape, out_shape))


def lower_tile(node, graph):
    """Output [r0 * n0, r1 * n1, ...] is, row-major, [r0, n0, r1, n1, ...] with the
    repeat dimensions read at stride 0."""
    in_shape = graph.info(node.inputs[0]).shape
    shape, strides = [], []
    for r, n, s in zip(node.attrs["repeats"], in_shape, row_major_strides(in_shape)):
        shape += [r, n]
        strides += [0, s]
    return strided_copy(node, graph, shape, strides)


def _view_transpose(node, graph, view, perm):
    """Transpose of the input seen as ``view`` (same elements, another shape)."""
    strides = row_major_strides(view)
    return strided_copy(node, graph, [view[p] for p in perm], [strides[p] for p in perm])


def lower_depth_to_space(node, graph):
    n, c, h, w = graph.info(node.inputs[0]).shape
    b = node.attrs["blocksize"]
    if node.attrs.get("mode", "DCR") == "DCR":
        return _view_transpose(node, graph, [n, b, b, c // (b * b), h, w], [0, 3, 4, 1, 5, 2])
    return _view_transpose(node, graph, [n, c // (b * b), b, b, h, w], [0, 1, 4, 2, 5, 3])


def lower_space_to_depth(node, graph):
    n, c, h, w = graph.info(node.inputs[0]).shape
    b = node.attrs["blocksize"]
    perm = [0, 3, 5, 1, 2, 4] if node.attrs.get("mode", "DCR") == "DCR" else [0, 1, 3, 5, 2, 4]
    return _view_transpose(node, graph, [n, c, h // b, b, w // b, b], perm)


def _rows(shape, axis):
    """(outer, inner): elements before ``axis`` and from it on."""
    return _prod(shape[:axis]), _prod(shape[axis + 1:])


def lower_concat(node, graph):
    y = node.outputs[0]
    out_shape = graph.info(y).shape
    axis = node.attrs["axis"] % len(out_shape)
    outer, inner = _rows(out_shape, axis)
    xs = [x for x in node.inputs if graph.info(x).size]  # empty inputs add nothing
    parts = [graph.info(x).shape[axis] * inner for x in xs]
    tag = f"{dtype_tag(graph.info(y).dtype)}_{outer}x{'_'.join(map(str, parts))}"
    return KernelCall("concat", tag, {"outer": outer, "parts": parts},
                      [(f"x{i}", x) for i, x in enumerate(xs)], [("y", y)])


def lower_split(node, graph):
    x = node.inputs[0]
    in_shape = graph.info(x).shape
    axis = node.attrs.get("axis", 0) % len(in_shape)
    outer, inner = _rows(in_shape, axis)
    parts, outputs, offset = [], [], 0
    for y in node.outputs:  # every output takes its rows, even when it is not used
        size = graph.info(y).shape[axis] * inner if y else 0
        if y and size:
            parts.append([offset, size, len(outputs)])
            outputs.append((f"y{len(outputs)}", y))
        offset += size
    tag = f"{dtype_tag(graph.info(x).dtype)}_{outer}x{'_'.join(str(p[1]) for p in parts)}"
    return KernelCall("split", tag, {"outer": outer, "total": offset, "parts": parts},
                      [("x", x)], outputs)


def lower_trilu(node, graph):
    x, y = node.inputs[0], node.outputs[0]
    shape = graph.info(x).shape
    p = {"count": _prod(shape[:-2]), "rows": shape[-2], "cols": shape[-1],
         "upper": bool(node.attrs.get("upper", 1)), "k": int(node.attrs.get("k", 0))}
    tag = (f"{'upper' if p['upper'] else 'lower'}_{dtype_tag(graph.info(x).dtype)}_{p['count']}x"
           f"{p['rows']}x{p['cols']}_k{p['k']}")
    return KernelCall("trilu", tag, p, [("x", x)], [("y", y)])


def lower_bit_cast(node, graph):
    x, y = node.inputs[0], node.outputs[0]
    n = graph.info(y).nbytes
    if graph.info(x).nbytes != n:
        raise unsupported(node, "a cast between element types of different sizes")
    tag = f"{dtype_tag(graph.info(x).dtype)}_to_{dtype_tag(graph.info(y).dtype)}_{n}"
    return KernelCall("copy_bytes", tag, {"bytes": n}, [("x", x)], [("y", y)])


LOWERINGS = {"Transpose": lower_transpose, "Trilu": lower_trilu, "BitCast": lower_bit_cast, "Slice": lower_slice, "Expand": lower_expand,
             "Tile": lower_tile, "DepthToSpace": lower_depth_to_space,
             "SpaceToDepth": lower_space_to_depth, "Concat": lower_concat, "Split": lower_split}
TYPED_OPS = set(LOWERINGS)
