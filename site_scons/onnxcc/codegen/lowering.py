"""The graph as a list of steps: which kernel each node runs, with which C names.

Kernels are shared: every node with the same template and parameters calls one function,
named after what it computes (``kws_conv2d_f32_dw_3x3_s1x1_p1x1_64x25x5_m64_relu``).
Each node runs the tactic its selection (tactics.json) names.
"""

import hashlib
import json
from dataclasses import dataclass

from .. import ops, packing
from ..cgen import c_ident, c_type
from ..errors import OnnxccError
from ..tactics import REFERENCE


@dataclass
class Kernel:
    name: str
    call: object  # the first KernelCall that needed it (all share template and params)

    def signature(self, graph):
        args = [f"const {c_type(graph.info(t).dtype)} *restrict {role}"
                for role, t in self.call.inputs]
        args += [f"{c_type(graph.info(t).dtype)} *restrict {role}" for role, t in self.call.outputs]
        if self.call.scratch_bytes:
            args.append("void *restrict scratch")
        return f"void {self.name}({', '.join(args)})"


@dataclass
class Step:
    node: object
    kernel: Kernel = None  # None: a view (no code) or a copy into a graph output
    call: object = None  # this node's KernelCall: its own tensors for the shared kernel


MAX_NAME = 72


def _kernel_name(prefix, call):
    name = c_ident(f"{prefix}_{call.template}_{call.tag}")
    if len(name) > MAX_NAME:  # keep symbols readable: the start, then a digest of the rest
        digest = hashlib.sha256(name.encode()).hexdigest()[:8]
        name = f"{name[:MAX_NAME - 9]}_{digest}"
    return name


def lower_graph(graph, prefix, where, selection=REFERENCE):
    """(steps, kernels): one step per node, one kernel per distinct (template, params)."""
    kernels, steps, names = {}, [], set()
    for node in graph.nodes:
        if node.op in ops.ALIASES or node.op == "Identity":
            steps.append(Step(node))
            continue
        try:
            call = ops.lower(node, graph, selection.tactic(node), selection.cpu)
        except OnnxccError as e:
            raise OnnxccError(e.message, where=where, hint=e.hint) from None
        key = (call.template, json.dumps(call.params, sort_keys=True),
               tuple(graph.info(t).dtype for _, t in call.inputs + call.outputs))
        if key not in kernels:
            name, k = _kernel_name(prefix, call), 2
            while name in names:
                name, k = f"{_kernel_name(prefix, call)}_{k}", k + 1
            names.add(name)
            kernels[key] = Kernel(name, call)
        steps.append(Step(node, kernels[key], call))
    return steps, list(kernels.values())


def scratch_needs(graph, selection):
    """node name -> bytes of scratch memory its kernel needs (nodes that need some)."""
    steps, _ = lower_graph(graph, "", graph.name, selection)
    return {s.node.name: s.call.scratch_bytes for s in steps if s.call and s.call.scratch_bytes}


def packed_key(tensor, spec):
    return (tensor, json.dumps(spec, sort_keys=True))


def weight_symbols(graph, prefix, steps=()):
    """The C arrays of the constants, in the graph's order: {tensor: symbol} for each as
    it is, and {packed_key(tensor, spec): symbol} for each packed layout ``steps`` read."""
    symbols, taken = {}, set()

    def fresh(base):
        base = c_ident(base)[:60]
        symbol, k = base, 2
        while symbol in taken:
            symbol, k = f"{base}_{k}", k + 1
        taken.add(symbol)
        return symbol
    for name in graph.constants:
        symbols[name] = fresh(f"{prefix}_w_{name}")
    packed = {}
    for step in steps:
        for role, spec in sorted(step.call.packed.items()) if step.call else ():
            tensor = dict(step.call.inputs)[role]
            key = packed_key(tensor, spec)
            if key not in packed:
                packed[key] = fresh(f"{symbols[tensor][:52]}_{packing.tag(spec)}")
    return symbols, packed


def weight_uses(graph, steps):
    """(constants read as they are, [(tensor, spec)] read packed), in a stable order."""
    raw, packed = set(), {}
    for step in steps:
        if step.call is None:
            raw.update(t for t in step.node.inputs if graph.is_constant(t))
            continue
        for role, tensor in step.call.inputs:
            if not graph.is_constant(tensor):
                continue
            if role in step.call.packed:
                spec = step.call.packed[role]
                packed.setdefault(packed_key(tensor, spec), (tensor, spec))
            else:
                raw.add(tensor)
    raw.update(o for o in graph.outputs if graph.is_constant(o))
    return [t for t in graph.constants if t in raw], list(packed.values())
