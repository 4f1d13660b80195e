"""Operator registry: the folder is the registry.

Each module here covers one family of ONNX operators. It exports
``LOWERINGS`` (op type -> function(node, graph) -> KernelCall) for ops that run a kernel,
``ALIASES`` (op types whose output is its first input, re-viewed: no code, no memory),
and ``INPLACE`` (op type -> function(node, graph, tensor) -> KernelCall that writes the
node's output over its input ``tensor``, or None where it cannot).
Kernels are float32 unless the module lists the op in ``TYPED_OPS`` (its lowering then
handles, or rejects, each element type itself).
A kernel call names the Mako template under ``templates/kernels/`` that implements it
and the compile-time parameters the template specializes on.
"""

import importlib
import pkgutil
from dataclasses import dataclass, field, replace

from ..errors import OnnxccError


@dataclass
class KernelCall:
    template: str  # templates/kernels/<template>.c.mako
    tag: str  # readable summary of the parameters, part of the C symbol name
    params: dict  # everything the template specializes on (JSON-able)
    inputs: list  # [(role, tensor name)]: C parameter names and the tensors passed
    outputs: list
    #: bytes of workspace the kernel needs during the call, passed as ``void *scratch``;
    #: the memory planner places it in the arena with everything else
    scratch_bytes: int = 0
    #: output role -> input role: that output is written over that input (same address)
    overwrites: dict = field(default_factory=dict)


#: ops the optimizer removes before code generation (inference-time no-ops)
REMOVED = {"Identity", "Dropout"}
#: ops folded into their producer by the optimizer when it can, else lowered on their own
FOLDED = {"BatchNormalization"}


def supported_ops():
    return sorted(set(LOWERINGS) | ALIASES | REMOVED | FOLDED)


def lower(node, graph, overwrite=None):
    """The node's kernel call; with ``overwrite``, the one that writes the node's output
    over that input tensor (the memory plan chose it; see ``can_overwrite``)."""
    if overwrite is not None:
        call = can_overwrite(node, graph, overwrite)
        if call is None:
            raise OnnxccError(f"node '{node.name}' (op {node.op}) cannot write its output over "
                              f"'{overwrite}'", hint="re-run the plan stage")
        return call
    try:
        fn = LOWERINGS[node.op]
    except KeyError:
        raise OnnxccError(f"node '{node.name}' (op {node.op}) has no kernel",
                          hint=f"supported ops: {', '.join(supported_ops())}") from None
    if node.op not in TYPED_OPS:
        for name in node.inputs + node.outputs:
            if name and graph.info(name).dtype != "float32":
                raise unsupported(node, f"element type {graph.info(name).dtype} of '{name}'",
                                  hint=f"onnxcc compiles {node.op} for float32")
    return fn(node, graph)


def can_overwrite(node, graph, tensor):
    """A kernel call writing the node's output over its input ``tensor``, or None."""
    fn = INPLACE.get(node.op)
    return fn(node, graph, tensor) if fn else None


def possible_templates(node, graph):
    """Every template the node's kernel may come from, whichever the memory plan picks."""
    calls = [lower(node, graph)] + [can_overwrite(node, graph, t) for t in set(node.inputs) if t]
    return {c.template for c in calls if c is not None}


def in_place(call, tensor, roles, **changes):
    """``call`` made to write its one output over input ``tensor``, when the kernel reads
    that tensor once, as one of ``roles`` (those it may share memory with); else None."""
    matching = [role for role, t in call.inputs if t == tensor]
    if len(matching) != 1 or matching[0] not in roles or len(call.outputs) != 1:
        return None
    changes.setdefault("tag", f"{call.tag}_inplace")
    return replace(call, overwrites={call.outputs[0][0]: matching[0]}, **changes)


def unsupported(node, what, hint=None):
    return OnnxccError(f"node '{node.name}' (op {node.op}): {what} is not supported", hint=hint)


# the registry: filled from the modules of this folder (they import the names above)
LOWERINGS = {}
ALIASES = set()
INPLACE = {}
TYPED_OPS = set()
for _mod in pkgutil.iter_modules(__path__):
    _m = importlib.import_module(f"{__name__}.{_mod.name}")
    LOWERINGS.update(getattr(_m, "LOWERINGS", {}))
    ALIASES.update(getattr(_m, "ALIASES", ()))
    INPLACE.update(getattr(_m, "INPLACE", {}))
    TYPED_OPS.update(getattr(_m, "TYPED_OPS", ()))
