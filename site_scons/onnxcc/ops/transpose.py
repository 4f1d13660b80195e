"""Transpose's tactics: reference (layout.py's strided walk, any element type) and, for
float32 on SIMD CPUs, tiles -- where the output's rows read the input down a column (the
output's innermost dimension is not the input's): blocks of lanes x lanes floats moved
by vector loads, an in-register transpose and vector stores (transpose_tiles.c.mako).
A transformer's keys transposed for Q K^T ([0, 2, 3, 1]) took 8x a copy's time
walking the input column by column."""

from onnxcc.ops.common.broadcast import merge_dims

from . import KernelCall, Tactic
from .layout import lower_transpose, row_major_strides


def _walk(node, graph):
    """(shape, x strides, y strides) of the Transpose, merged where contiguous."""
    in_shape = graph.info(node.inputs[0]).shape
    perm = node.attrs.get("perm", list(reversed(range(len(in_shape)))))
    strides = row_major_strides(in_shape)
    out_shape = [in_shape[p] for p in perm]
    shape, (sx, sy) = merge_dims(out_shape, [strides[p] for p in perm], row_major_strides(out_shape))
    return shape, sx, sy


def _tiles(node, graph):
    """{batch, batch_x, batch_y (the other dimensions and their strides), rows, yr (y's
    stride of a row), cols, xc (x's of a column)} when y's innermost merged dimension (its
    columns) reads x at a stride other than 1 and another one (its rows) at stride 1,
    else None."""
    if graph.info(node.inputs[0]).dtype != "float32":
        return None
    shape, sx, sy = _walk(node, graph)
    if len(shape) < 2 or sx[-1] == 1 or 1 not in sx:
        return None
    k = sx.index(1)
    batch = [d for d in range(len(shape) - 1) if d != k]
    return {"batch": [shape[d] for d in batch], "batch_x": [sx[d] for d in batch],
            "batch_y": [sy[d] for d in batch], "rows": shape[k], "yr": sy[k],
            "cols": shape[-1], "xc": sx[-1]}


def lower_transpose_tiles(node, graph, cpu):
    p = dict(_tiles(node, graph), lanes=cpu.lanes())
    tag = (f"f32_{'x'.join(map(str, p['batch'])) or '1'}_{p['rows']}x{p['cols']}_r{p['yr']}"
           f"_c{p['xc']}_s{'x'.join(map(str, p['batch_x'] + p['batch_y']))}_{p['lanes']}")
    return KernelCall("transpose_tiles", tag, p, [("x", node.inputs[0])], [("y", node.outputs[0])])


def _applies(node, graph, cpu):
    found = cpu.lanes() > 1 and _tiles(node, graph)
    return bool(found) and min(found["rows"], found["cols"]) >= cpu.lanes()


def _cost(node, graph, cpu, lanes=None):
    """The strided walk: a cycle an element where it reads x in order, four where it reads
    down a column (a cache line per element); tiles: a load, a store and log2(lanes)
    shuffles per vector."""
    size = graph.info(node.inputs[0]).size
    if lanes is None:
        return size * (1 if _walk(node, graph)[1][-1] == 1 else 4)
    return size / lanes * (2 + lanes.bit_length() - 1)


TACTICS = {"Transpose": [
    Tactic("reference", lambda n, g, cpu: lower_transpose(n, g), cost=_cost),
    Tactic("tiles", lower_transpose_tiles, _applies, lambda n, g, cpu: _cost(n, g, cpu, cpu.lanes()))]}
