"""The graph as a list of steps: which kernel each node runs, with which C names.

Kernels are shared: every node with the same template and parameters calls one function,
named after what it computes (``kws_conv2d_f32_dw_3x3_s1x1_p1x1_64x25x5_m64_relu``).
Each node runs the tactic recorded on it (tactics.annotate, from tactics.json).
"""

import json
from dataclasses import dataclass

from onnxcc import ops
from onnxcc.core.cgen import c_type
from onnxcc.core.ctext import Namespace
from onnxcc.core.errors import OnnxccError
from onnxcc.ops.common import packing


@dataclass
class Kernel:
    name: str
    call: object  # the first KernelCall that needed it (all share template and params)
    node: object = None  # the node of that call

    def signature(self, graph):
        # an output written over an input shares its memory: neither may be restrict
        shared = set(self.call.overwrites) | set(self.call.overwrites.values())

        def param(role, t, const):
            restrict = "" if role in shared else "restrict "
            return f"{'const ' if const else ''}{c_type(graph.info(t).dtype)} *{restrict}{role}"
        args = [param(role, t, True) for role, t in self.call.inputs]
        args += [param(role, t, False) for role, t in self.call.outputs]
        if self.call.scratch_bytes:
            args.append("void *restrict scratch")
        return f"void {self.name}({', '.join(args)})"


@dataclass
class Step:
    plan: dict  # the step's entry in the plan's schedule
    node: object
    kernel: Kernel = None  # None: no code (the memory plan did its work) or a copy
    call: object = None  # this node's KernelCall: its own tensors for the shared kernel


#: longest kernel symbol after the model's prefix: readable, its start, then a digest
#: of the rest (ctext.Namespace)
MAX_NAME = 64


def lower_graph(graph, prefix, where, plan):
    """(steps, kernels): one step per node in the plan's order, one kernel per distinct
    (template, params, memory sharing)."""
    kernels, steps, names = {}, [], Namespace(f"{prefix}_")
    for entry in plan["schedule"]:
        node = graph.nodes[entry["index"]]
        if entry["code"] != "kernel":
            steps.append(Step(entry, node))
            continue
        try:
            call = ops.lower(node, graph, entry.get("overwrites"))
        except OnnxccError as e:
            raise OnnxccError(e.message, where=where, hint=e.hint) from None
        key = (call.template, json.dumps(call.params, sort_keys=True),
               tuple(graph.info(t).dtype for _, t in call.inputs + call.outputs),
               json.dumps(call.overwrites, sort_keys=True), call.scratch_bytes)
        if key not in kernels:
            kernels[key] = Kernel(names.ident(key, f"{call.template}_{call.tag}", MAX_NAME), call,
                                  node)
        steps.append(Step(entry, node, kernels[key], call))
    return steps, list(kernels.values())


def packed_key(tensor, spec):
    return (tensor, json.dumps(spec, sort_keys=True))


def _kernel_calls(graph):
    """Each node's kernel call by its tactic (never an in-place one: those are reference
    kernels, which read constants as they are), in graph order."""
    return [(node, ops.lower(node, graph)) for node in graph.nodes
            if node.op not in ops.ALIASES and node.op != "Identity"]


def weight_uses(graph):
    """(constants read as they are, [(tensor, spec)] read packed), in a stable order."""
    raw, packed = set(), {}
    for node in graph.nodes:
        if node.op in ops.ALIASES or node.op == "Identity":
            raw.update(t for t in node.inputs if graph.is_constant(t))
    for node, call in _kernel_calls(graph):
        for role, tensor in call.inputs:
            if not graph.is_constant(tensor):
                continue
            if role in call.packed:
                spec = call.packed[role]
                packed.setdefault(packed_key(tensor, spec), (tensor, spec))
            else:
                raw.add(tensor)
    raw.update(o for o in graph.outputs if graph.is_constant(o))
    return [t for t in graph.constants if t in raw], list(packed.values())


#: longest weight symbol after the model's prefix and "_w_"
MAX_WEIGHT_NAME = 56


def weight_symbols(graph, prefix):
    """The C arrays of the constants, in the graph's order: {tensor: symbol} for each as
    it is, and {packed_key(tensor, spec): symbol} for each packed layout a kernel reads."""
    names = Namespace(f"{prefix}_w_")
    symbols = {name: names.ident(name, name, MAX_WEIGHT_NAME) for name in graph.constants}
    packed = {}
    for tensor, spec in weight_uses(graph)[1]:
        key = packed_key(tensor, spec)
        tail = symbols[tensor][len(names.prefix):][:MAX_WEIGHT_NAME - 8]
        packed[key] = names.ident(key, f"{tail}_{packing.tag(spec)}", MAX_WEIGHT_NAME)
    return symbols, packed
