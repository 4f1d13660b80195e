"""RNN, GRU and LSTM: every direction, both layouts, sequence lengths, initial states,
peepholes, clip, activations (any of ONNX's list, with their alpha / beta).

The state of one batch entry lives on the kernel's stack (hidden x gates floats), so a
kernel's stack use grows with hidden_size; the size report counts it.
"""

from ..cgen import c_float
from . import KernelCall, unsupported
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


def _activations(node, count, directions):
    """[[C function body of v per activation] per direction]."""
    names = node.attrs.get("activations") or CELLS[node.op][1] * directions
    alphas = list(node.attrs.get("activation_alpha", []))
    betas = list(node.attrs.get("activation_beta", []))
    bodies = []
    for name in names:
        params = PARAMETERS.get(name, ())
        alpha = alphas.pop(0) if "alpha" in params and alphas else None
        beta = betas.pop(0) if "beta" in params and betas else None
        if name in EXTRA_ACTIVATIONS:
            bodies.append(EXTRA_ACTIVATIONS[name]("v", alpha if alpha is not None else 1.0,
                                                  beta if beta is not None else 0.0))
        elif name in EXPRESSIONS:
            attrs = {k: v for k, v in (("alpha", alpha), ("beta", beta)) if v is not None}
            bodies.append(expression_code("v", [name, attrs]))
        else:
            raise unsupported(node, f"activation '{name}'")
    if len(bodies) == count:  # one list for every direction
        bodies = bodies * directions
    return [bodies[d * count:(d + 1) * count] for d in range(directions)]


def _optional(node, k):
    return node.inputs[k] if len(node.inputs) > k and node.inputs[k] else None


def lower_recurrent(node, graph):
    a = node.attrs
    gates, defaults = CELLS[node.op]
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
         "linear_before_reset": a.get("linear_before_reset", 0),
         "activations": _activations(node, len(defaults), directions)}
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
    return KernelCall("recurrent", f"{node.op.lower()}_{tag}", p, inputs, outputs)


LOWERINGS = {"RNN": lower_recurrent, "GRU": lower_recurrent, "LSTM": lower_recurrent}
TYPED_OPS = set(LOWERINGS)  # sequence_lens is int32; every other tensor float32 (checked)
