"""Operator registry: the folder is the registry.

Each module here covers one family of ONNX operators. It exports
``LOWERINGS`` (op type -> function(node, graph) -> KernelCall) for ops that run a kernel,
and ``ALIASES`` (op types whose output is its first input, re-viewed: no code, no memory).
Kernels are float32 unless the module lists the op in ``TYPED_OPS`` (its lowering then
handles, or rejects, each element type itself).
A kernel call names the Mako template under ``templates/kernels/`` that implements it
and the compile-time parameters the template specializes on.
"""

import importlib
import pkgutil
from dataclasses import dataclass

from ..errors import OnnxccError


@dataclass
class KernelCall:
    template: str  # templates/kernels/<template>.c.mako
    tag: str  # readable summary of the parameters, part of the C symbol name
    params: dict  # everything the template specializes on (JSON-able)
    inputs: list  # [(role, tensor name)]: C parameter names and the tensors passed
    outputs: list


#: ops the optimizer removes before code generation (inference-time no-ops)
REMOVED = {"Identity", "Dropout"}
#: ops folded into their producer by the optimizer when it can, else lowered on their own
FOLDED = {"BatchNormalization"}


def supported_ops():
    return sorted(set(LOWERINGS) | ALIASES | REMOVED | FOLDED)


def lower(node, graph):
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


def unsupported(node, what, hint=None):
    return OnnxccError(f"node '{node.name}' (op {node.op}): {what} is not supported", hint=hint)


# the registry: filled from the modules of this folder (they import the names above)
LOWERINGS = {}
ALIASES = set()
TYPED_OPS = set()
for _mod in pkgutil.iter_modules(__path__):
    _m = importlib.import_module(f"{__name__}.{_mod.name}")
    LOWERINGS.update(getattr(_m, "LOWERINGS", {}))
    ALIASES.update(getattr(_m, "ALIASES", ()))
    TYPED_OPS.update(getattr(_m, "TYPED_OPS", ()))
