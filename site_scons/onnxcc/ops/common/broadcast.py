"""Numpy broadcasting resolved at compile time: element strides over an output's
dimensions (0 where an operand repeats), and the merge of neighbouring dimensions that
every operand walks contiguously, so the common cases (equal shapes, a scalar, a
per-channel vector) become one or two loops. Shared by every kernel that broadcasts
(elementwise, fused epilogues, batched MatMul, reductions, layout copies, int8 Add)."""

from onnxcc.core.errors import OnnxccError


def broadcast_strides(shape, out_shape):
    """Element strides of a row-major tensor of ``shape`` read over ``out_shape``; a shape
    that does not broadcast to it is refused (a kernel would read past it)."""
    shape = (1,) * (len(out_shape) - len(shape)) + tuple(shape)
    if len(shape) != len(out_shape) or any(d not in (1, o) for d, o in zip(shape, out_shape)):
        raise OnnxccError(f"a tensor of shape {list(shape)} does not broadcast to {list(out_shape)}")
    strides, step = [], 1
    for d in reversed(shape):
        strides.append(0 if d == 1 else step)
        step *= d
    return list(reversed(strides))


def merge_dims(out_shape, *stride_lists):
    """Drop size-1 dimensions and merge neighbours that every operand walks contiguously."""
    dims = [(d, [s[i] for s in stride_lists]) for i, d in enumerate(out_shape) if d != 1]
    merged = []
    for d, strides in dims:
        if merged:
            pd, pstrides = merged[-1]
            if all(ps == s * d for ps, s in zip(pstrides, strides)):
                merged[-1] = (pd * d, strides)
                continue
        merged.append((d, strides))
    if not merged:
        merged = [(1, [0] * len(stride_lists))]
    shape = [d for d, _ in merged]
    return shape, [[s[k] for _, s in merged] for k in range(len(stride_lists))]
