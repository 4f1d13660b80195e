"""Weights re-laid-out at compile time in the order a kernel reads them.

A kernel call names a packing spec per packed constant input (``KernelCall.packed``), a
small JSON-able dict. ``pack`` is a pure function of the weights and the spec, run when the
weights file is generated; ``packed_size`` needs only the spec, so the model code can
declare the packed array from the graph's structure alone.

  panels   a matrix cut into panels of ``width`` rows, each stored depth-major
           ([panel][depth][width]; the last panel zero-padded): a GEMM microkernel of
           ``width`` rows (or columns) then reads one contiguous run per step of the sum.
           The matrix is the constant viewed as [rows][depth] (``layout`` "rows") or as
           [depth][rows] ("cols"); with ``groups`` the rows are that many independent
           blocks, each cut on its own.
  winograd 3x3 kernels [rows][depth][3][3] transformed for Winograd F(m x m, 3 x 3)
           (ops/common/winograd.py): (m+2)^2 matrices [rows][depth], each cut into panels
           of ``width`` rows as above.
  lanes    a matrix [rows][depth] in blocks of ``width`` rows, each a run of ``lanes``
           taps of every row of the block in turn ([block][depth / lanes][width][lanes]),
           the rows padded to whole blocks and the depth to whole runs with 0: a kernel
           of ``width`` rows then reads one vector of each per step from one pointer.
  gates    a recurrent cell's weights ([directions][gates * hidden][depth]) with the rows
           of a block of hidden units side by side for every gate of a group (a GRU's
           z and r, then h), the units padded to whole blocks; then cut in panels as
           above: of ``width`` rows, or (width 0) one panel per block of a group.
  gate_bias  a recurrent cell's biases ([directions][2 * gates * hidden]) in the same row
           order, Wb + Rb folded into one vector; the Rb of gate ``apart`` (GRU's h gate,
           linear_before_reset) is not folded but follows, padded, on its own.
"""

import numpy as np

from onnxcc.core.errors import OnnxccError


def panels_spec(rows, depth, width, layout="rows", groups=1):
    return {"kind": "panels", "rows": rows, "depth": depth, "width": width, "layout": layout,
            "groups": groups}


def winograd_spec(rows, depth, width, m):
    return {"kind": "winograd", "rows": rows, "depth": depth, "width": width, "m": m}


def pairs_spec(rows, depth):
    return {"kind": "pairs", "rows": rows, "depth": depth}


def lanes_spec(rows, depth, width, lanes):
    return {"kind": "lanes", "rows": rows, "depth": depth, "width": width, "lanes": lanes}


def lanes_depth(depth, lanes):
    """A row's length in the ``lanes`` layout: the depth rounded up to whole runs."""
    return -(-depth // lanes) * lanes


def gates_spec(directions, gates, hidden, block, groups, depth, width=0):
    return {"kind": "gates", "directions": directions, "gates": gates, "hidden": hidden,
            "block": block, "groups": groups, "depth": depth, "width": width}


def gate_bias_spec(directions, gates, hidden, block, groups, apart=None):
    return {"kind": "gate_bias", "directions": directions, "gates": gates, "hidden": hidden,
            "block": block, "groups": groups, "apart": apart}


def padded_hidden(spec):
    """Hidden units rounded up to whole blocks."""
    return -(-spec["hidden"] // spec["block"]) * spec["block"]


def gate_rows(spec):
    """The source row (gate * hidden + unit) of each packed row of one direction, -1 for
    padding: group by group, block by block, gate by gate, ``block`` units each."""
    hidden, block = spec["hidden"], spec["block"]
    rows = []
    for group in spec["groups"]:
        for start in range(0, padded_hidden(spec), block):
            for gate in group:
                rows += [gate * hidden + j if j < hidden else -1
                         for j in range(start, start + block)]
    return np.array(rows)


def _gate_panels(spec):
    """(first packed row, panels spec) of each slice of one direction's rows (gate_rows)
    that is cut into panels: all of them, in panels of ``width``; or (width 0) each
    group's, in panels of one block of its gates."""
    if spec["width"]:
        return [(0, panels_spec(spec["gates"] * padded_hidden(spec), spec["depth"], spec["width"]))]
    slices, start = [], 0
    for group in spec["groups"]:
        rows = len(group) * padded_hidden(spec)
        slices.append((start, panels_spec(rows, spec["depth"], len(group) * spec["block"])))
        start += rows
    return slices


def _pack_gates(values, spec):
    order = gate_rows(spec)
    out = []
    for matrix in values.reshape(spec["directions"], -1, spec["depth"]):
        rows = np.zeros((len(order), spec["depth"]), matrix.dtype)
        rows[order >= 0] = matrix[order[order >= 0]]
        out += [pack(rows[start:start + panels["rows"]], panels)
                for start, panels in _gate_panels(spec)]
    return np.concatenate(out)


def _pack_gate_bias(values, spec):
    order, apart = gate_rows(spec), spec["apart"]
    out = []
    for wb, rb in values.reshape(spec["directions"], 2, -1):
        folded = wb + rb
        if apart is not None:
            folded[apart * spec["hidden"]:(apart + 1) * spec["hidden"]] = \
                wb[apart * spec["hidden"]:(apart + 1) * spec["hidden"]]
        out.append(np.where(order >= 0, folded[np.maximum(order, 0)], 0).astype(values.dtype))
        if apart is not None:
            tail = np.zeros(padded_hidden(spec), values.dtype)
            tail[:spec["hidden"]] = rb[apart * spec["hidden"]:(apart + 1) * spec["hidden"]]
            out.append(tail)
    return np.concatenate(out)


def pairs_depth(depth):
    """A row's length in the ``pairs`` layout: the depth rounded up to a multiple of 4."""
    return -(-depth // 4) * 4


def _panel_count(rows, width):
    return -(-rows // width)


def packed_size(spec):
    """Elements of the packed array."""
    if spec["kind"] == "pairs":
        return (spec["rows"] + spec["rows"] % 2) * pairs_depth(spec["depth"])
    if spec["kind"] == "lanes":
        rows = _panel_count(spec["rows"], spec["width"]) * spec["width"]
        return rows * lanes_depth(spec["depth"], spec["lanes"])
    if spec["kind"] == "winograd":
        return (spec["m"] + 2) ** 2 * packed_size(_winograd_panels(spec))
    if spec["kind"] == "panels":
        per_group = spec["rows"] // spec["groups"]
        return spec["groups"] * _panel_count(per_group, spec["width"]) * spec["width"] * spec["depth"]
    if spec["kind"] == "gates":
        return spec["directions"] * sum(packed_size(panels) for _, panels in _gate_panels(spec))
    if spec["kind"] == "gate_bias":
        apart = padded_hidden(spec) if spec["apart"] is not None else 0
        return spec["directions"] * (spec["gates"] * padded_hidden(spec) + apart)
    raise OnnxccError(f"unknown packing '{spec['kind']}'")


def pack(values, spec):
    """``values`` (a constant) laid out as ``spec`` says: a flat C-order array."""
    if spec["kind"] == "pairs":
        return _pack_pairs(np.asarray(values), spec)
    if spec["kind"] == "lanes":
        return _pack_lanes(np.asarray(values), spec)
    if spec["kind"] == "winograd":
        return _pack_winograd(np.asarray(values), spec)
    if spec["kind"] in ("gates", "gate_bias"):
        packed = (_pack_gates if spec["kind"] == "gates" else _pack_gate_bias)(np.asarray(values), spec)
        assert packed.size == packed_size(spec)
        return packed
    if spec["kind"] != "panels":
        raise OnnxccError(f"unknown packing '{spec['kind']}'")
    rows, depth, width, groups = spec["rows"], spec["depth"], spec["width"], spec["groups"]
    matrix = np.asarray(values).reshape((rows, depth) if spec["layout"] == "rows" else (depth, rows))
    if spec["layout"] == "cols":
        matrix = matrix.T
    out = []
    per_group = rows // groups
    count = _panel_count(per_group, width)
    for g in range(groups):
        block = np.zeros((count * width, depth), matrix.dtype)
        block[:per_group] = matrix[g * per_group:(g + 1) * per_group]
        out.append(block.reshape(count, width, depth).transpose(0, 2, 1).reshape(-1))
    packed = np.concatenate(out)
    assert packed.size == packed_size(spec)
    return packed


def _pack_winograd(values, spec):
    from .winograd import transform_weights  # here: ops imports this module
    u = transform_weights(values.reshape(spec["rows"], spec["depth"], 3, 3), spec["m"])
    packed = np.concatenate([pack(matrix, _winograd_panels(spec)) for matrix in u])
    assert packed.size == packed_size(spec)
    return packed


def _winograd_panels(spec):
    """The panels each of the (m+2)^2 transformed matrices is cut into."""
    return panels_spec(spec["rows"], spec["depth"], spec["width"])


def _pack_pairs(values, spec):
    rows, depth = spec["rows"], spec["depth"]
    block = np.zeros((rows + rows % 2, pairs_depth(depth)), values.dtype)
    block[:rows, :depth] = values.reshape(rows, depth)
    words = block.reshape(-1, 2, block.shape[1] // 4, 4)[:, :, :, [0, 2, 1, 3]]
    return words.transpose(0, 2, 1, 3).reshape(-1)  # [row pair][word][row][4]


def _pack_lanes(values, spec):
    rows, depth, width, lanes = spec["rows"], spec["depth"], spec["width"], spec["lanes"]
    block = np.zeros((_panel_count(rows, width) * width, lanes_depth(depth, lanes)), values.dtype)
    block[:rows, :depth] = values.reshape(rows, depth)
    # [block][row][run][lane] -> [block][run][row][lane]
    return block.reshape(-1, width, block.shape[1] // lanes, lanes).transpose(0, 2, 1, 3).reshape(-1)


def alignment(spec):
    """Bytes the packed array must be aligned to (1: its element type's)."""
    return 4 if spec["kind"] == "pairs" else 1


def tag(spec):
    """A short readable name of the layout, for the packed array's C symbol."""
    if spec["kind"] == "pairs":
        return "q15"
    if spec["kind"] == "lanes":
        return f"l{spec['width']}x{spec['lanes']}"
    if spec["kind"] == "winograd":
        return f"wino{spec['m']}p{spec['width']}"
    if spec["kind"] == "gates":
        return f"g{spec['block']}p{spec['width']}" if spec["width"] else f"g{spec['block']}"
    if spec["kind"] == "gate_bias":
        return f"g{spec['block']}b"
    return f"p{spec['width']}{'t' if spec['layout'] == 'cols' else ''}"
