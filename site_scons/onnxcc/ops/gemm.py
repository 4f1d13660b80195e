"""Gemm and MatMul (batched, numpy broadcasting), one matrix-multiply kernel for both.

The kernel computes y = act(alpha * A' B' + beta * C) for each batch; transposes become
element strides, batch broadcasting becomes a table of per-batch offsets, and a MatMul
whose B is one matrix shared by every batch folds the batch into M. Two tactics:

  reference  the plain loop nest
  blocked    register tiles of rows x (vecs * lanes) outputs (tiling.py), the sum cut
             in chunks that keep a panel of B in the L1 cache; a constant B (the
             weights) is packed at compile time into panels of the tile's columns, a
             computed B must be row-major
"""

from onnxcc.ops.common.broadcast import broadcast_strides, merge_dims
from onnxcc.ops.common.epilogue import (bias_first, epilogue_tag, kernel_epilogue, own_inputs,
                                        residual_roles, tile_lanes)
from onnxcc.ops.common.tiling import (aliased_rows, best_tile, column_tails, epilogue_cost,
                                      l2_share, registers_needed, scalar_mac_cost, tall_tiles)

from . import KernelCall, Tactic, in_place
from .common import packing


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


def gemm_spans(node, graph):
    """Kernel coordinates over the output: (batch,) row, column -- a MatMul whose B is one
    matrix walks A's batch dimensions as rows."""
    r = len(graph.info(node.outputs[0]).shape)
    if node.op == "Gemm":
        return [(0, 1), (1, 2)]
    sa, sb = (graph.info(t).shape for t in own_inputs(node)[:2])
    j = (r, r) if len(sb) == 1 else (r - 1, r)
    i = (j[0], j[0]) if len(sa) == 1 else (j[0] - 1, j[0])
    if len(sb) <= 2 or all(d == 1 for d in sb[:-2]):
        return [(0, i[1]), j]
    return [(0, i[0]), i, j]


def _gemm(node, graph):
    """(params, inputs, outputs) of a Gemm node."""
    a, b = own_inputs(node)[:2]
    own = own_inputs(node)
    c = own[2] if len(own) > 2 and own[2] else None
    y = node.outputs[0]
    ta, tb = node.attrs.get("transA", 0), node.attrs.get("transB", 0)
    sa, sb = graph.info(a).shape, graph.info(b).shape
    m, k = (sa[1], sa[0]) if ta else sa
    n = sb[0] if tb else sb[1]
    chain, operands = kernel_epilogue(node, graph, gemm_spans(node, graph))
    p = _gemm_params(m, n, k, (1, m) if ta else (k, 1), (1, k) if tb else (n, 1), [[0, 0]], chain)
    p.update(alpha=float(node.attrs.get("alpha", 1.0)), beta=float(node.attrs.get("beta", 1.0)))
    inputs = [("a", a), ("b", b)]
    if c:
        p["c"] = _c_kind(graph.info(c).shape, m, n)
        inputs.append(("c", c))
    return p, inputs + operands, [("y", y)]


def _matmul(node, graph):
    """(params, inputs, outputs) of a MatMul node."""
    a, b = own_inputs(node)
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
    chain, operands = kernel_epilogue(node, graph, gemm_spans(node, graph))
    p = _gemm_params(m, n, k, (k, 1), (n, 1), batches, chain)
    return p, [("a", a), ("b", b)] + operands, [("y", y)]


def _problem(node, graph):
    return (_gemm if node.op == "Gemm" else _matmul)(node, graph)


# --- reference ------------------------------------------------------------------------

def lower_reference(node, graph, cpu=None):
    p, inputs, outputs = _problem(node, graph)
    return KernelCall("gemm", _tag(p), p, inputs, outputs)


def cost_reference(node, graph, cpu):
    p, _, _ = _problem(node, graph)
    outputs = len(p["batches"]) * p["m"] * p["n"]
    return outputs * (p["k"] * scalar_mac_cost(cpu) + 4) + epilogue_cost(outputs, p["epilogue"])


# --- blocked ----------------------------------------------------------------------------

def _packable(graph, b, p):
    """B is one constant matrix: pack it at compile time."""
    return graph.is_constant(b) and len(p["batches"]) == 1 and len(graph.info(b).shape) == 2


def _is_blockable(node, graph, cpu=None):
    p, inputs, _ = _problem(node, graph)
    scaled = p["alpha"] != 1.0 or (p["c"] is not None and p["beta"] != 1.0)
    return not scaled and (_packable(graph, dict(inputs)["b"], p) or p["b_cs"] == 1)


def _plan_blocked(node, graph, cpu):
    p, inputs, outputs = _problem(node, graph)
    packed = _packable(graph, dict(inputs)["b"], p)
    (rows, vecs), cycles = best_tile(p["m"], p["n"], p["k"], cpu, overhang=packed, tall=True,
                                     aliased=p["m"] > 1 and aliased_rows(4 * p["a_rs"]))
    return p, inputs, outputs, packed, rows, vecs, len(p["batches"]) * cycles


def lower_blocked(node, graph, cpu):
    p, inputs, outputs, packed, rows, vecs, _ = _plan_blocked(node, graph, cpu)
    lanes = cpu.lanes()
    p.update(rows=rows, vecs=vecs, lanes=lanes, packed=packed)
    full = p["n"] // (vecs * lanes) * vecs * lanes
    rest = p["n"] - full  # a packed B is padded: one last tile reads past; else split
    p["tails"] = ([[full, -(-rest // lanes), lanes]] if packed and rest else
                  [[full + s, v, l] for s, v, l in column_tails(rest, lanes)])
    p["k_chunk"] = k_chunk(p["m"], p["k"], rows, vecs * lanes, cpu)
    if p["c"] is not None:  # the bias is the epilogue's first op, C its operand
        strides = {"n": [0, 1], "m": [1, 0], "mn": [p["n"], 1], "1": [0, 0]}[p["c"]]
        strides = ([0] if len(p["batches"]) > 1 else []) + strides
        p["epilogue"] = bias_first(p["epilogue"], "c", strides)
    p["launder"] = _laundering_tiles(p, cpu)
    p["ahead"] = _prefetches(p, cpu)
    specs = {}
    if packed:
        layout = "rows" if p["b_cs"] != 1 else "cols"  # transB: B is [N][K]
        specs["b"] = packing.panels_spec(p["n"], p["k"], vecs * lanes, layout)
    tag = f"t{rows}x{vecs * lanes}{'p' if packed else ''}_{_tag(p)}"
    return KernelCall("gemm_blocked", tag, p, inputs, outputs, packed=specs)


def _prefetches(p, cpu):
    """A packed B summed whole, of several panels re-read by several row blocks, and too
    big to stay in the level 2 between runs (half of it): the row blocks of a panel
    prefetch the next (gemm_blocked.c.mako's ``ahead``)."""
    width = p["vecs"] * p["lanes"]
    return (p["packed"] and cpu.simd_bytes >= 32 and p["k_chunk"] == p["k"] and p["m"] // p["rows"] > 1
            and p["n"] > width and 8 * p["k"] * p["n"] > l2_share(cpu))


def _laundering_tiles(p, cpu):
    """[rows, vecs] of the tiles that launder their epilogue operands (tile.mako's
    ``opaque``): on SIMD CPUs, only where the accumulators, B vectors, broadcast and the
    operands' vectors outgrow the registers: there GCC spills an accumulator without it,
    elsewhere it only costs reloads (the numbers: docs/speed.md, "Transformer MatMuls")."""
    operands = len({attrs["operand"] for _, attrs in p["epilogue"] if attrs.get("operand")})
    heights = sorted({p["rows"], p["m"] % p["rows"]} - {0})
    return [[r, v] for r in heights for v in range(1, p["vecs"] + 1)
            if operands and p["lanes"] > 1 and registers_needed(r, v, operands) > cpu.registers]


def k_chunk(m, k, rows, width, cpu):
    """Steps of the sum per chunk: all of them, unless several row blocks reuse a column
    panel (k x width floats) too big for half the L1 cache; then pieces that fit. Tall
    tiles sum whole (their narrow panels stream well from the level 2), and so do AVX2's
    (a whole sum's panel is prefetched instead). (The numbers: docs/speed.md,
    "Transformer MatMuls" and
    "On Zen 4: A's rows in one L1 set, and the next panel's prefetch".)"""
    if tall_tiles(cpu) or cpu.simd_bytes >= 32:
        return k
    fits = (cpu.l1d_bytes // 2) // (4 * width) if cpu.l1d_bytes else k
    return k if m <= rows or k <= fits else max(16, fits)


def cost_blocked(node, graph, cpu):
    p, _, _, _, _, _, cycles = _plan_blocked(node, graph, cpu)
    outputs = len(p["batches"]) * p["m"] * p["n"]
    bias = [["Add", {}]] if p["c"] is not None else []
    return cycles + epilogue_cost(outputs, bias + p["epilogue"], tile_lanes(p["epilogue"], cpu))


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


def blocked_in_place(node, graph, cpu, tensor):
    """y over a fused residual, when the sum is not cut in chunks (those keep partial sums
    in y): each tile reads the residual's elements right before storing the same ones.
    Never over A, B or C (the planner asks about each input: no need to lower for those)."""
    if tensor in own_inputs(node):
        return None
    call = lower_blocked(node, graph, cpu)
    if call.params["k_chunk"] < call.params["k"]:
        return None
    return in_place(call, tensor, residual_roles(call, graph))


_TACTICS = [Tactic("reference", lower_reference, cost=cost_reference),
            Tactic("blocked", lower_blocked, _is_blockable, cost_blocked, blocked_in_place)]
TACTICS = {"Gemm": _TACTICS, "MatMul": _TACTICS}
EPILOGUE_SPANS = {"Gemm": gemm_spans, "MatMul": gemm_spans}
