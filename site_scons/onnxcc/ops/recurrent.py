"""RNN, GRU and LSTM: every direction, both layouts, sequence lengths, initial states,
peepholes, clip, activations (any of ONNX's list, with their alpha / beta). Two tactics:

  reference  per step and gate row, W x_t + R h as scalar dot products; the state of one
             batch entry lives on the kernel's stack (hidden x gates floats)
  blocked    per direction and batch entry, the input projection X W^T + Wb + Rb of
             ``chunk`` steps at a time as one register-tiled GEMM into scratch (W packed in
             panels of the tile's columns), then per step only h R^T: a one-row tile
             (GEMV) per block of hidden units, with the rows of every gate of a block side
             by side in its panel (ops/common/packing.py ``gates``), so that the gates of a unit meet
             in one tile and are combined right after it, in vectors. GRU's
             linear_before_reset=0 runs two such phases (z and r, then h over r * h).
             The states, the projection and the peepholes live in scratch (the arena).

The projection's scratch is ``chunk x gates x hidden`` floats: the whole sequence when
it fits a quarter of the level-2 cache, else chunks of it; on a CPU without a cache (a
microcontroller) one tile's rows of steps at a time, so the RAM stays near the
reference's stack.
"""

import math

from onnxcc.core.cgen import c_float
from onnxcc.core.errors import OnnxccError
from onnxcc.ops.common.tiling import (best_tile, epilogue_cost, l2_share, scalar_mac_cost,
                                      tile_shapes)

from . import KernelCall, Tactic, unsupported
from .common import packing
from .unary import EXPRESSIONS, expression_code

#: gates per cell, and the default activations (f, g, h)
CELLS = {"RNN": (1, ["Tanh"]), "GRU": (3, ["Sigmoid", "Tanh"]), "LSTM": (4, ["Sigmoid", "Tanh", "Tanh"])}
#: activations ONNX names that have no op of the same name (the others are unary ops)
EXTRA_ACTIVATIONS = {
    "Affine": lambda v, alpha, beta: f"({c_float(alpha)} * {v} + {c_float(beta)})",
    "ScaledTanh": lambda v, alpha, beta: f"({c_float(alpha)} * tanhf({c_float(beta)} * {v}))",
}
#: which activations take alpha and beta (in activation_alpha / activation_beta order)
PARAMETERS = {"LeakyRelu": ("alpha",), "ThresholdedRelu": ("alpha",), "Elu": ("alpha",),
              "HardSigmoid": ("alpha", "beta"), "Affine": ("alpha", "beta"),
              "ScaledTanh": ("alpha", "beta")}
#: activations whose omitted alpha or beta onnxruntime takes as 0, where the specification
#: takes the op's default (Affine's alpha 1, ThresholdedRelu's alpha 1; ScaledTanh names
#: none): refused without them, as no default would match both
UNSETTLED_DEFAULTS = ("Affine", "ScaledTanh", "ThresholdedRelu")


def _activations(node, count, directions):
    """[[C function body of v per activation] per direction]."""
    return [[a["scalar"] for a in per] for per in _activation_steps(node, count, directions)]


def _activation_steps(node, count, directions):
    """[[{"scalar": C expression of v, "op": its [op, attrs] chain step, or None} per
    activation] per direction]; a kernel may apply "op" to vectors (epilogue.py)."""
    names = node.attrs.get("activations") or CELLS[node.op][1] * directions
    alphas = list(node.attrs.get("activation_alpha", []))
    betas = list(node.attrs.get("activation_beta", []))
    bodies = []
    for name in names:
        params = PARAMETERS.get(name, ())
        alpha = alphas.pop(0) if "alpha" in params and alphas else None
        beta = betas.pop(0) if "beta" in params and betas else None
        missing = [k for k, v in (("alpha", alpha), ("beta", beta)) if k in params and v is None]
        if name in UNSETTLED_DEFAULTS and missing:
            raise OnnxccError(f"node '{node.name}' (op {node.op}): activation {name} without its "
                              f"{' and '.join(missing)}: onnxruntime takes 0, the ONNX specification "
                              "the op's default", hint="give activation_alpha (and activation_beta) for it")
        if name in EXTRA_ACTIVATIONS:
            bodies.append({"op": None, "scalar": EXTRA_ACTIVATIONS[name](
                "v", alpha if alpha is not None else 1.0, beta if beta is not None else 0.0)})
        elif name in EXPRESSIONS:
            attrs = {k: v for k, v in (("alpha", alpha), ("beta", beta)) if v is not None}
            bodies.append({"op": [name, attrs], "scalar": expression_code("v", [name, attrs])})
        else:
            raise unsupported(node, f"activation '{name}'")
    if len(bodies) == count:  # one list for every direction
        bodies = bodies * directions
    return [bodies[d * count:(d + 1) * count] for d in range(directions)]


def _optional(node, k):
    return node.inputs[k] if len(node.inputs) > k and node.inputs[k] else None


def _problem(node, graph):
    """(params every tactic shares, inputs, outputs, tag)."""
    a = node.attrs
    gates = CELLS[node.op][0]
    x, w, r = node.inputs[:3]
    direction = a.get("direction", "forward")
    directions = 2 if direction == "bidirectional" else 1
    layout = a.get("layout", 0)
    x_shape = graph.info(x).shape
    seq, batch = (x_shape[1], x_shape[0]) if layout else (x_shape[0], x_shape[1])
    p = {"cell": node.op, "gates": gates, "hidden": a["hidden_size"], "input": x_shape[2],
         "seq": seq, "batch": batch, "directions": directions, "layout": layout,
         "reverse": [direction == "reverse" or (direction == "bidirectional" and d == 1)
                     for d in range(directions)],
         "clip": a.get("clip"), "input_forget": a.get("input_forget", 0),
         "linear_before_reset": a.get("linear_before_reset", 0)}
    roles = ["x", "w", "r", "b", "sequence_lens", "initial_h", "initial_c", "p"]
    inputs = [("x", x), ("w", w), ("r", r)]
    for k in range(3, len(node.inputs)):
        if _optional(node, k):
            inputs.append((roles[k], node.inputs[k]))
    p["has"] = sorted(role for role, _ in inputs)
    outputs = [(role, t) for role, t in zip(("y", "y_h", "y_c"), node.outputs) if t]
    p["has"] += sorted(role for role, _ in outputs)
    tag = (f"f32_{direction}_h{p['hidden']}_i{p['input']}_s{seq}_b{batch}"
           + ("_batchwise" if layout else ""))
    for role, t in inputs + outputs:
        if role != "sequence_lens" and graph.info(t).dtype != "float32":
            raise unsupported(node, f"element type {graph.info(t).dtype} of '{t}'")
    _check_lengths(node, graph, seq)
    return p, inputs, outputs, tag


def _check_lengths(node, graph, seq):
    """Constant sequence lengths must lie in 0 .. seq_length (the kernels clamp lengths
    given at run time; onnxruntime refuses them)."""
    lens = _optional(node, 4)
    values = graph.constants.get(lens) if lens else None
    if values is not None and values.size and (values.min() < 0 or values.max() > seq):
        raise OnnxccError(f"node '{node.name}' (op {node.op}): sequence_lens {values.tolist()} "
                          f"lie outside 0 .. {seq} (the sequence length)",
                          hint="a batch entry's length counts its steps of X")


# --- reference ------------------------------------------------------------------------

def lower_recurrent(node, graph, cpu=None):
    p, inputs, outputs, tag = _problem(node, graph)
    p["activations"] = _activations(node, len(CELLS[node.op][1]), p["directions"])
    return KernelCall("recurrent", f"{node.op.lower()}_{tag}", p, inputs, outputs)


def _activation_cost(node, p, lanes=None):
    """Per step and hidden unit of one direction: the cost of its activations (``lanes``:
    as ``tiling.epilogue_cost``; the blocked kernel's run on vectors, libm-free, on a SIMD
    CPU, and call libm on a scalar one)."""
    names = [a["op"][0] if a["op"] else "Tanh"
             for a in _activation_steps(node, len(CELLS[node.op][1]), p["directions"])[0]]
    per = {"RNN": [0], "GRU": [0, 0, 1], "LSTM": [0, 0, 0, 1, 2]}[node.op]
    if node.op == "LSTM" and p["input_forget"]:
        per = per[1:]
    return epilogue_cost(1, [[names[k], {}] for k in per], lanes)


def cost_reference(node, graph, cpu):
    p, _, _, _ = _problem(node, graph)
    steps = p["directions"] * p["batch"] * p["seq"]
    rows = p["gates"] * p["hidden"]
    return steps * (rows * ((p["input"] + p["hidden"]) * scalar_mac_cost(cpu) + 4)
                    + p["hidden"] * _activation_cost(node, p))


# --- blocked ----------------------------------------------------------------------------

def _groups(p):
    """The gates whose rows a step's tile computes together (ONNX order: LSTM i o f c,
    GRU z r h): GRU's h gate apart when the reset multiplies h before its product."""
    if p["cell"] == "GRU" and not p["linear_before_reset"]:
        return [[0, 1], [2]]
    return [list(range(p["gates"]))]


def _gemv_cost(vecs, depth, cpu):
    """A one-row tile of ``vecs`` accumulators summing over ``depth``: on a SIMD core two
    multiply-adds a cycle, but each accumulator waits for its last one (about 4 cycles),
    so fewer than 8 accumulators leave the core idle; on a scalar one, instructions (the
    loads of R and of h, the multiply-adds, the loop)."""
    if cpu.lanes() > 1:
        return depth * max(vecs / 2, 4) + 2 * vecs + 8
    return depth * (2 * vecs + 3) + 2 * vecs + 8


def _step_cost(p, units, cpu):
    """One step of one direction and batch entry: every group's tiles over R."""
    block = units * cpu.lanes()
    blocks = -(-p["hidden"] // block)
    return sum(blocks * _gemv_cost(len(g) * units, p["hidden"], cpu) for g in _groups(p))


def _units(p, cpu):
    """Vectors of hidden units per block: every group's tile fits the registers, fewest
    estimated cycles (padding the units to whole blocks counts); one on a core too small
    for any (its tile spills, but sums right)."""
    widest = max(len(g) for g in _groups(p))
    fits = [u for u in range(1, 9) if (1, widest * u) in tile_shapes(cpu)] or [1]
    return min(fits, key=lambda u: (_step_cost(p, u, cpu), u))


def _chunk(p, rows, padded, cpu):
    """Steps projected at a time: all of them when their scratch fits half the level 2's
    share (tiling.l2_share), else a whole number of row tiles that does; without a cache,
    one row tile."""
    budget = l2_share(cpu) // 2
    per_step = 4 * p["gates"] * padded
    if per_step * p["seq"] <= budget:
        return p["seq"]
    return max(rows, budget // per_step // rows * rows)


def _plan_blocked(node, graph, cpu):
    p, inputs, outputs, tag = _problem(node, graph)
    lanes = cpu.lanes()
    units = _units(p, cpu)
    block = units * lanes
    padded = -(-p["hidden"] // block) * block
    columns = p["gates"] * padded
    (rows, vecs), _ = best_tile(p["seq"], columns, p["input"], cpu)
    chunk = _chunk(p, rows, padded, cpu)
    p.update(activations=_activation_steps(node, len(CELLS[node.op][1]), p["directions"]),
             lanes=lanes, units=units, padded=padded, groups=_groups(p), rows=rows,
             vecs=vecs, chunk=chunk)
    return p, inputs, outputs, tag


def _scratch_floats(p):
    """Projection, one tile's gate sums, two hidden states, then the cell state and the
    peepholes (LSTM) or z and r * h (GRU's two phases)."""
    padded = p["padded"]
    extra = {"LSTM": padded + (3 * padded if "p" in p["has"] else 0),
             "GRU": 0 if p["linear_before_reset"] else 2 * padded, "RNN": 0}[p["cell"]]
    return p["chunk"] * p["gates"] * padded + p["gates"] * p["units"] * p["lanes"] \
        + 2 * padded + extra


def lower_blocked(node, graph, cpu):
    p, inputs, outputs, tag = _plan_blocked(node, graph, cpu)
    block = p["units"] * p["lanes"]
    shape = (p["directions"], p["gates"], p["hidden"], block, p["groups"])
    packed = {"w": packing.gates_spec(*shape, p["input"], p["vecs"] * p["lanes"]),
              "r": packing.gates_spec(*shape, p["hidden"])}
    if "b" in p["has"]:
        apart = 2 if p["cell"] == "GRU" and p["linear_before_reset"] else None
        packed["b"] = packing.gate_bias_spec(*shape, apart)
    p["direction_floats"] = {role: packing.packed_size(spec) // p["directions"]
                             for role, spec in packed.items()}
    tile = f"u{p['units']}x{p['lanes']}_t{p['rows']}x{p['vecs'] * p['lanes']}_c{p['chunk']}"
    return KernelCall("recurrent_blocked", f"{node.op.lower()}_{tile}_{tag}", p, inputs, outputs,
                      scratch_bytes=4 * _scratch_floats(p), packed=packed)


def cost_blocked(node, graph, cpu):
    p, _, _, _ = _plan_blocked(node, graph, cpu)
    columns = p["gates"] * p["padded"]
    (_, _), projection = best_tile(p["chunk"], columns, p["input"], cpu)
    chunks = math.ceil(p["seq"] / p["chunk"])
    lanes = p["lanes"] if p["lanes"] > 1 else None
    per_step = (_step_cost(p, p["units"], cpu)
                + p["padded"] * (_activation_cost(node, p, lanes) + 2 * p["gates"]))
    return p["directions"] * p["batch"] * (chunks * projection + p["seq"] * per_step)


_TACTICS = [Tactic("reference", lower_recurrent, cost=cost_reference),
            Tactic("blocked", lower_blocked, cost=cost_blocked)]
TACTICS = {"RNN": _TACTICS, "GRU": _TACTICS, "LSTM": _TACTICS}
TYPED_OPS = set(TACTICS)  # sequence_lens is int32; every other tensor float32 (checked)
