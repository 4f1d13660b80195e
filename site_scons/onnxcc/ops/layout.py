"""Ops that move data without computing: the reshape family (free views), Transpose, Concat."""

from . import KernelCall
from .binary import merge_dims

#: outputs are their input re-viewed: the planner gives them the input's memory
ALIASES = {"Reshape", "Flatten", "Squeeze", "Unsqueeze"}


def _row_major_strides(shape):
    strides, step = [], 1
    for d in reversed(shape):
        strides.append(step)
        step *= d
    return list(reversed(strides))


def lower_transpose(node, graph):
    x, y = node.inputs[0], node.outputs[0]
    in_shape = graph.info(x).shape
    perm = node.attrs.get("perm", list(reversed(range(len(in_shape)))))
    in_strides = _row_major_strides(in_shape)
    out_shape = [in_shape[p] for p in perm]
    # walk the output in order, reading the input with permuted strides
    shape, (sx, sy) = merge_dims(out_shape, [in_strides[p] for p in perm],
                                 _row_major_strides(out_shape))
    tag = f"f32_{'x'.join(map(str, shape))}_s{'x'.join(map(str, sx))}"
    return KernelCall("transpose", tag, {"shape": shape, "x_strides": sx, "y_strides": sy},
                      [("x", x)], [("y", y)])


def lower_concat(node, graph):
    y = node.outputs[0]
    out_shape = graph.info(y).shape
    axis = node.attrs["axis"] % len(out_shape)
    outer = 1
    for d in out_shape[:axis]:
        outer *= d
    inner = 1
    for d in out_shape[axis + 1:]:
        inner *= d
    parts = [graph.info(x).shape[axis] * inner for x in node.inputs]
    tag = f"f32_{outer}x{'_'.join(map(str, parts))}"
    return KernelCall("concat", tag, {"outer": outer, "parts": parts},
                      [(f"x{i}", x) for i, x in enumerate(node.inputs)], [("y", y)])


LOWERINGS = {"Transpose": lower_transpose, "Concat": lower_concat}
