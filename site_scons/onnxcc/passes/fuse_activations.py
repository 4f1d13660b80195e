"""Recognize activations that exporters write as several elementwise nodes, and make each
one node (one vmath function in an epilogue, instead of a pass over memory per step):

    x * Sigmoid(x), x * Sigmoid(a x)           -> Swish (SiLU; alpha a)
    x * HardSigmoid(x) (alpha 1/6, beta 1/2)   -> HardSwish
    x * Tanh(Softplus(x))                      -> Mish
    x * 0.5 * (1 + Erf(x / sqrt 2)), the 0.5 on any factor, x / 1.4142.. or x * 0.7071..
                                               -> Gelu

Only float32 tensors, and only when every intermediate tensor is read by the pattern
alone and is no graph output (else it must still be computed).
"""

import math

_SQRT2 = math.sqrt(2.0)


class _Graph:
    """The graph's producer and consumer maps, and the questions the patterns ask."""

    def __init__(self, graph):
        self.graph = graph
        self.producers, self.consumers = graph.producers(), graph.consumers()
        self.removed = set()

    def float32(self, t):
        return self.graph.info(t).dtype == "float32"

    def private(self, t):
        """``t`` is read by one node and is no graph output: a fused pattern may drop it."""
        return len(self.consumers.get(t, [])) == 1 and t not in self.graph.outputs

    def made_by(self, t, op):
        """The node of type ``op`` that makes ``t`` (a private tensor), or None."""
        node = self.producers.get(t)
        if node is None or node.op != op or id(node) in self.removed or not self.private(t):
            return None
        return node

    def scalar(self, t):
        """The value of a one-element float constant, or None."""
        g = self.graph
        if not g.is_constant(t) or g.info(t).size != 1 or g.constants[t].dtype.kind != "f":
            return None
        return float(g.constants[t].reshape(()))

    def split(self, node, t):
        """The other input of binary ``node`` when one of its inputs is ``t``, else None."""
        a, b = node.inputs
        return b if a == t else a if b == t else None

    def constant_factor(self, node):
        """(other input, value) of a Mul by a one-element constant, else (None, None)."""
        for side in (0, 1):
            value = self.scalar(node.inputs[side])
            if value is not None:
                return node.inputs[1 - side], value
        return None, None


def _close(a, b):
    return abs(a - b) <= 1e-6 * abs(b)


def _times_itself(g, mul, op):
    """(x, the op's node) when ``mul`` is x * op(..) (either order), op's output private."""
    for side in (0, 1):
        node = g.made_by(mul.inputs[side], op)
        if node is not None:
            return mul.inputs[1 - side], node
    return None, None


def _swish(g, mul):
    x, sig = _times_itself(g, mul, "Sigmoid")
    if sig is None:
        return None
    if sig.inputs[0] == x:
        return [sig], {"alpha": 1.0}
    scale = g.made_by(sig.inputs[0], "Mul")
    if scale is not None:
        other, alpha = g.constant_factor(scale)
        if other == x:
            return [sig, scale], {"alpha": alpha}
    return None


def _hard_swish(g, mul):
    x, hs = _times_itself(g, mul, "HardSigmoid")
    if hs is None or hs.inputs[0] != x or not _close(hs.attrs.get("alpha", 0.2), 1 / 6) \
            or not _close(hs.attrs.get("beta", 0.5), 0.5):
        return None
    return [hs], {}


def _mish(g, mul):
    x, tanh = _times_itself(g, mul, "Tanh")
    if tanh is None:
        return None
    softplus = g.made_by(tanh.inputs[0], "Softplus")
    if softplus is None or softplus.inputs[0] != x:
        return None
    return [tanh, softplus], {}


def _gelu_inner(g, u):
    """(x, nodes) when private tensor ``u`` is 1 + Erf(x / sqrt 2)."""
    add = g.made_by(u, "Add")
    if add is None:
        return None, None
    for side in (0, 1):
        value = g.scalar(add.inputs[side])
        erf = g.made_by(add.inputs[1 - side], "Erf")
        if value is None or value != 1.0 or erf is None:
            continue
        scaled = g.producers.get(erf.inputs[0])
        if scaled is None or not g.private(erf.inputs[0]) or id(scaled) in g.removed:
            continue
        if scaled.op == "Div" and g.scalar(scaled.inputs[1]) is not None \
                and _close(g.scalar(scaled.inputs[1]), _SQRT2):
            return scaled.inputs[0], [add, erf, scaled]
        if scaled.op == "Mul":
            x, value = g.constant_factor(scaled)
            if x is not None and _close(value, 1 / _SQRT2):
                return x, [add, erf, scaled]
    return None, None


def _gelu(g, mul):
    """mul is the last of: (x * u) * 0.5, (x * 0.5) * u, or x * (u * 0.5)."""
    other, half = g.constant_factor(mul)
    if half == 0.5:  # (x * u) * 0.5
        inner = g.made_by(other, "Mul")
        for side in (0, 1):
            if inner is not None:
                x, nodes = _gelu_inner(g, inner.inputs[side])
                if x is not None and inner.inputs[1 - side] == x:
                    return x, nodes + [inner]
        return None
    for side in (0, 1):
        a, b = mul.inputs[side], mul.inputs[1 - side]
        x, nodes = _gelu_inner(g, b)
        halved = g.made_by(a, "Mul")
        if x is not None and halved is not None and g.constant_factor(halved) == (x, 0.5):
            return x, nodes + [halved]  # (x * 0.5) * u
        halved = g.made_by(b, "Mul")
        if halved is not None:
            u, value = g.constant_factor(halved)
            x, nodes = _gelu_inner(g, u) if value == 0.5 else (None, None)
            if x is not None and a == x:
                return x, nodes + [halved]  # x * (u * 0.5)
    return None


def _match(g, mul):
    """(op, x, attrs, nodes to remove) of the activation that ends with ``mul``."""
    for op, find in (("Swish", _swish), ("HardSwish", _hard_swish), ("Mish", _mish)):
        found = find(g, mul)
        if found is not None:
            x = g.split(mul, found[0][0].outputs[0])
            return op, x, found[1], found[0]
    found = _gelu(g, mul)
    if found is not None:
        return "Gelu", found[0], {}, found[1]
    return None


def fuse_activations(graph):
    g = _Graph(graph)
    for node in graph.nodes:
        if node.op != "Mul" or len(node.inputs) != 2 or id(node) in g.removed \
                or not all(g.float32(t) for t in node.inputs + node.outputs):
            continue
        found = _match(g, node)
        if found is None:
            continue
        op, x, attrs, nodes = found
        if graph.info(x).shape != graph.info(node.outputs[0]).shape or not g.float32(x):
            continue
        node.op, node.inputs, node.attrs = op, [x], attrs
        g.removed |= {id(n) for n in nodes}
    graph.nodes = [n for n in graph.nodes if id(n) not in g.removed]
    return graph
